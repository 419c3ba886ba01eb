"""Text columns through a local sentence-transformers model (RelBench's text_embedded stype), built offline here from
a bag-of-words module: the embedding columns replace the categorical encoding, standardised on the fitting rows."""

from __future__ import annotations

import numpy as np
import pytest
from relgnn.errors import ConfigError, SchemaError
from relgnn.graph import build_graph

WORDS = ["red", "blue", "shoe", "hat", "big"]


@pytest.fixture(scope="module")
def bow_model(tmp_path_factory):
    # the optional extra relgnn[text]; the workspace's default sync does not install it
    pytest.importorskip("sentence_transformers", reason="needs relgnn[text] (sentence-transformers)")
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.models import BoW

    path = tmp_path_factory.mktemp("bow-model")
    SentenceTransformer(modules=[BoW(vocab=WORDS)], device="cpu").save(str(path))
    return path


@pytest.fixture
def titled(fake_db):
    return lambda: _db_with_titles(fake_db)


def _db_with_titles(fake_dataset_db):
    db = fake_dataset_db(0)
    df = db.table_dict["product"].df
    df["title"] = [f"{c} {w}" for c, w in zip(["red", "blue", "big red", "blue", "hat"], ["shoe", "hat", "shoe",
                                                                                          "shoe", "big"])][:len(df)]
    return db


@pytest.mark.slow  # sentence-transformers' import alone takes ~8 s
def test_text_column_becomes_standardised_embedding_columns(bow_model, titled, tmp_path):
    from relgnn.text import sentence_transformer_embedder

    embed = sentence_transformer_embedder(bow_model)
    counts = embed(["red shoe", "big blue hat", ""])
    np.testing.assert_array_equal(counts, [[1, 0, 1, 0, 0], [0, 1, 0, 1, 1], [0, 0, 0, 0, 0]])
    db = titled()
    g = build_graph(db, text_columns={"product": ["title"]}, text_embedder=embed)
    spec = g.specs["product"]
    assert [c for c in spec.num_cols if c.startswith("title[")] == [f"title[{j}]" for j in range(len(WORDS))]
    assert "title" not in spec.cat_cols
    cols = [spec.num_cols.index(f"title[{j}]") for j in range(len(WORDS))]
    x = g.data["product"].x_num[:, cols].double().numpy()
    raw = embed(list(db.table_dict["product"].df["title"]))
    sd = raw.std(0)
    expect = (raw - raw.mean(0)) / np.where(sd > 1e-12, sd, 1.0)
    np.testing.assert_allclose(x, expect, atol=1e-6)
    # negative control: without text_columns the same column is a category
    assert "title" in build_graph(titled()).specs["product"].cat_cols
    (tmp_path / "empty").mkdir()
    with pytest.raises(ConfigError, match="could not be loaded"):
        sentence_transformer_embedder(tmp_path / "empty")


def test_text_input_errors(tmp_path, titled):
    from relgnn.text import sentence_transformer_embedder

    db = titled()
    with pytest.raises(SchemaError, match="text_embedder"):
        build_graph(db, text_columns={"product": ["title"]})
    with pytest.raises(SchemaError, match="no table"):
        build_graph(db, text_columns={"nope": ["title"]}, text_embedder=lambda t: np.zeros((len(t), 2)))
    with pytest.raises(SchemaError, match="not feature columns"):
        build_graph(db, text_columns={"product": ["product_id"]}, text_embedder=lambda t: np.zeros((len(t), 2)))
    with pytest.raises(SchemaError, match="finite"):
        build_graph(db, text_columns={"product": ["title"]}, text_embedder=lambda t: np.zeros((len(t) + 1, 2)))
    with pytest.raises(ConfigError, match="not a local folder"):
        sentence_transformer_embedder(tmp_path / "missing")


def test_missing_extra_is_a_clear_error(tmp_path, monkeypatch):
    import sys

    from relgnn.text import sentence_transformer_embedder

    monkeypatch.setitem(sys.modules, "sentence_transformers", None)  # import fails as if not installed
    with pytest.raises(ConfigError, match=r"pip install 'relgnn\[text\]'"):
        sentence_transformer_embedder(tmp_path)


@pytest.mark.slow
def test_cli_train_and_evaluate_with_a_text_model(bow_model, tmp_path):
    import json

    from icml25.testing import run_cli
    from relgnn.cli import main

    out = tmp_path / "run"
    res = run_cli(main, ["train", "--text-model", str(bow_model), "--text-columns", "items.category", "users.region",
                         "--epochs", "1", "--num-users", "40", "--num-items", "15", "--num-windows", "9",
                         "--num-neighbors", "8", "4", "--quiet", "--out", str(out)])
    assert res.returncode == 0, res.stderr
    conf = json.loads((out / "model_config.json").read_text())
    assert conf["text_columns"] == ["items.category", "users.region"]
    ev = run_cli(main, ["evaluate", "--run", str(out), "--split", "val", "--out", str(tmp_path / "eval")])
    assert ev.returncode == 0, ev.stderr
    assert 0.0 <= json.loads(ev.stdout.splitlines()[0])["value"] <= 1.0
