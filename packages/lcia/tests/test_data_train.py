"""Instruction data in the Alpaca / CoIN shape, the lr schedule, a user's checkpoint folder, and data-parallel
training under ``accelerate launch`` (engine test)."""

import json
import math
import os
import subprocess
import sys

import numpy as np
import pytest
import torch
from lcia.config import Config
from lcia.errors import LciaError


def _rows(tmp_path, rows, name="data.jsonl"):
    p = tmp_path / name
    p.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return p


def test_jsonl_instruction_shape_round_trips_and_groups_by_instruction(tmp_path):
    from lcia.data import default_stream, load_jsonl_stream, template_of, write_jsonl_stream

    tasks = default_stream(30, seed=0, n_eval=4, tasks=["reverse", "count", "flip"])
    loaded = load_jsonl_stream(write_jsonl_stream(tasks, tmp_path / "s.jsonl"))
    assert [t.name for t in loaded] == ["reverse", "count", "flip"]
    for a, b in zip(tasks, loaded):
        assert a.templates == b.templates
        for split in ("train", "val", "test"):  # prompts and answers come back exactly
            assert [(e.prompt, e.answer) for e in getattr(a, split)] == [(e.prompt, e.answer)
                                                                        for e in getattr(b, split)]
    # Alpaca lines without task/split: the instruction names the task, the split follows the input's hash
    rows = [{"instruction": "reverse the word", "input": w, "output": w[::-1]} for w in
            ("abcd", "bcde", "cdef", "defg", "efgh", "fghi", "ghij", "hijk", "ijkl", "jklm", "klmn", "lmno",
             "mnop", "nopq", "opqr", "pqrs", "qrst", "rstu", "stuv", "tuvw", "uvwx", "vwxy", "wxyz", "xyza")]
    rows.append({"instruction": "reverse the word", "input": "zzzz", "output": "zzzz", "split": "test"})
    (t,) = load_jsonl_stream(_rows(tmp_path, rows))
    assert t.name == "reverse the word" and t.templates == ["reverse the word"]
    assert template_of(t.train[0].prompt) == "reverse the word" and t.train[0].prompt.endswith("=")
    assert len(t.train) + len(t.val) + len(t.test) == len(rows)


@pytest.mark.parametrize("row, match", [
    ({"input": "abcd", "output": "dcba"}, "missing field.*instruction"),
    ({"instruction": "reverse the word", "input": "abcd"}, "missing field.*output"),
    ({"instruction": 3, "output": "x"}, "'instruction' must be a string"),
    ({"instruction": "the of", "output": "x"}, "stop words"),
    ({"instruction": "reverse: now", "output": "x"}, "must not contain ':'"),
    ({"instruction": "reverse the word", "input": "ab", "output": "ba", "split": "dev"}, "split.*one of"),
    ({"task": "x", "prompt": "p: q="}, "needs the string fields task, prompt and answer"),
])
def test_bad_jsonl_lines_name_the_field(tmp_path, row, match):
    from lcia.data import load_jsonl_stream

    with pytest.raises(LciaError, match=match):
        load_jsonl_stream(_rows(tmp_path, [row]))


def test_stream_without_test_examples_refused_before_the_model_is_built(tmp_path, monkeypatch):
    import lcia.cli as cli

    rows = [{"instruction": "reverse the word", "input": "abcd", "output": "dcba", "split": "train"}]
    p = _rows(tmp_path, rows)

    def boom(*a, **k):  # negative control: building the model would be the slow path
        raise AssertionError("the model was built before the data was checked")

    monkeypatch.setattr(cli, "_base", boom)
    assert cli.main(["train", "--tasks", str(p), "--out", str(tmp_path / "run"), "--quiet"]) == 2
    assert not (tmp_path / "run").exists()


def test_cosine_schedule_with_warmup_closed_form():
    from lcia.continual import lr_lambda

    f = lr_lambda(100, 0.03, "cosine")  # 3 warm-up steps
    assert [f(k) for k in range(3)] == pytest.approx([1 / 4, 2 / 4, 3 / 4])  # never lr 0 on a step
    assert f(3) == pytest.approx(1.0)
    assert f(3 + 97 // 2) == pytest.approx(0.5 * (1 + math.cos(math.pi * (97 // 2) / 97)))
    assert f(99) == pytest.approx(0.5 * (1 + math.cos(math.pi * 96 / 97))) and f(99) < 0.01
    g = lr_lambda(100, 0.03, "constant")
    assert all(g(k) == 1.0 for k in range(100))
    # the trainer applies it: after k steps the optimizer's lr is lr * f(k)
    from icml25.testbeds.lm import build_tiny_lm, build_tokenizer
    from lcia.continual import ContinualLearner, TaskTrainer
    from lcia.data import make_task

    tok = build_tokenizer()
    base = build_tiny_lm(tok, hidden_size=16, num_layers=1, num_heads=2, seed=0)
    learner = ContinualLearner(base, tok, Config(), "sequential")
    learner._new_adapter("default", 0)
    tr = TaskTrainer(learner.model, tok, make_task("reverse", 16, seed=0, n_eval=2).train, steps=10, lr=1e-3,
                     batch_size=4, seed=0, warmup=0.2)
    h = lr_lambda(10, 0.2, "cosine")
    for k in range(10):
        assert tr.opt.param_groups[0]["lr"] == pytest.approx(1e-3 * h(k))
        tr.step(k)


def test_user_checkpoint_folder_trains_and_evaluates(tmp_path):
    from icml25.testbeds.lm import build_tiny_lm, build_tokenizer
    from lcia.cli import main
    from lcia.data import default_stream, write_jsonl_stream

    tok = build_tokenizer()
    model = build_tiny_lm(tok, hidden_size=16, num_layers=1, num_heads=2, seed=0)
    folder = tmp_path / "my-model"
    model.save_pretrained(folder)
    tok.save_pretrained(folder)
    data = write_jsonl_stream(default_stream(24, seed=0, n_eval=4, tasks=["reverse", "flip"]), tmp_path / "d.jsonl")
    run = tmp_path / "run"
    assert main(["train", "--model", str(folder), "--tasks", str(data), "--config.steps", "2",
                 "--config.batch-size", "4", "--out", str(run), "--quiet"]) == 0
    res = json.loads((run / "results.json").read_text())
    assert res["tasks"] == ["reverse", "flip"] and res["adapters"] == ["group1"] and res["world_size"] == 1
    assert [s["decision"] for s in res["stages"]] == ["expand", "retrain"]
    assert main(["evaluate", "--run", str(run), "--out", str(tmp_path / "ev"), "--quiet"]) == 0
    assert set(json.loads((tmp_path / "ev" / "evaluate.json").read_text())["accuracy"]) == {"reverse", "flip"}


def test_dema_terms_decide_the_fallback():
    from lcia.dema import dema_alpha_reason, dema_terms

    g = torch.Generator().manual_seed(0)
    for _ in range(50):
        th, te, gr, gp = (torch.randn(6, generator=g, dtype=torch.float64) * s for s in (0.3, 0.3, 2.0, 2.0))
        a, b, c = dema_terms(th, te, gr, gp)
        alpha, why = dema_alpha_reason(th, te, gr, gp, fallback=0.01)
        assert (why == "out_of_range") == (a * c <= 2 * (1 + b))  # α ≥ 1 exactly when a·c ≤ 2(1 + b)
        if why == "formula":
            assert alpha == pytest.approx(2 * (1 + b) / (a * c))


def test_majority_answer_control():
    from lcia.reproduce.jobs import majority_accuracy

    assert majority_accuracy(["1", "1", "2"], ["1", "2", "3", "1"]) == 0.5
    assert majority_accuracy(["x"], ["y"]) == 0.0


@pytest.mark.engine
def test_accelerate_launch_trains_on_two_cpu_processes_with_synchronised_weights(tmp_path):
    pytest.importorskip("accelerate")
    run = tmp_path / "run"
    env = {**os.environ, "ICML25_THREADS": "1", "OMP_NUM_THREADS": "1"}
    cmd = [sys.executable, "-m", "accelerate.commands.launch", "--multi_gpu", "--num_processes", "2",
           "--num_machines", "1", "--mixed_precision", "no", "--dynamo_backend", "no", "--main_process_port", "29517",
           "-m", "lcia", "train", "--device", "cpu",
           "--config.steps", "3", "--config.batch-size", "8", "--config.pretrain-steps", "20",
           "--config.hidden-size", "32", "--config.num-layers", "1", "--config.n-train", "32", "--config.n-eval", "4",
           "--config.tasks", "reverse", "flip", "--out", str(run), "--quiet"]
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    res = json.loads((run / "results.json").read_text())
    assert res["world_size"] == 2
    assert res["max_weight_difference_across_processes"] == 0.0  # both processes stepped on the same mean gradient
    assert np.isfinite(res["avg"])
