"""`attn-consensus loop --model DIR --prompts FILE` on a local GPT-2 checkpoint saved with its tokenizer (issue 67)."""

import json

import pytest
import torch
from attn_consensus.cli import main
from attn_consensus.errors import AttnConsensusError

TEXT = ["the cat sat on the mat", "a dog ran in the park today", "tokens reach consensus", "", "attention is all"]


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """A tiny GPT-2 and a byte-level BPE tokenizer trained on a few sentences, saved with save_pretrained."""
    from attn_consensus.models import tiny_gpt2
    from tokenizers import ByteLevelBPETokenizer
    from transformers import GPT2TokenizerFast

    d = tmp_path_factory.mktemp("gpt2")
    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator([t for t in TEXT if t] * 3, vocab_size=300, min_frequency=1, show_progress=False)
    tok = GPT2TokenizerFast(tokenizer_object=bpe._tokenizer)
    assert len(tok) <= 320
    tiny_gpt2(n_layer=1, n_embd=16, vocab_size=320, n_positions=64, seed=0).save_pretrained(d)
    tok.save_pretrained(d)
    prompts = d.parent / "prompts.txt"
    prompts.write_text("\n".join(TEXT) + "\n", encoding="utf-8")
    return d, prompts, tok


def test_text_prompts_are_tokenised_and_cut_to_the_shortest(saved):
    from attn_consensus.models import text_prompts

    d, prompts, tok = saved
    ids, texts = text_prompts(prompts, str(d), max_length=32)
    assert texts == [t for t in TEXT if t]  # blank lines skipped
    lens = [len(tok(t, add_special_tokens=False)["input_ids"]) for t in texts]
    assert ids.shape == (4, min(lens)) and ids.dtype == torch.long
    for row, t in zip(ids.tolist(), texts, strict=True):
        assert row == tok(t, add_special_tokens=False)["input_ids"][:min(lens)]
    assert text_prompts(prompts, str(d), max_length=2)[0].shape == (4, 2)


def test_loop_command_runs_on_the_saved_model_and_prompts(saved, tmp_path):
    d, prompts, _ = saved
    out = tmp_path / "run"
    rc = main(["loop", "--model", str(d), "--prompts", str(prompts), "--iterations", "3", "--drop-mlp", "--quiet",
               "--out", str(out)])
    assert rc == 0
    s = json.loads((out / "summary.json").read_text())
    assert s["prompts"] == 4 and s["prompt_source"] == str(prompts) and s["layers_per_pass"] == 1
    assert s["tokens_per_prompt"] >= 2 and all(isinstance(s[k], float) for k in ("initial_diagnostic", "ratio"))
    assert len((out / "metrics.jsonl").read_text().splitlines()) == 4  # the embeddings + 3 passes


def test_prompts_bad_input(saved, tmp_path, capsys):
    from attn_consensus.models import text_prompts

    d, prompts, _ = saved
    empty = tmp_path / "empty.txt"
    empty.write_text("\n\n", encoding="utf-8")
    with pytest.raises(AttnConsensusError, match="no prompt"):
        text_prompts(empty, str(d), max_length=8)
    binary = tmp_path / "b.txt"
    binary.write_bytes(b"\xff\xfe\x00\x81")
    with pytest.raises(AttnConsensusError, match="UTF-8"):
        text_prompts(binary, str(d), max_length=8)
    no_tok = tmp_path / "notok"
    no_tok.mkdir()
    with pytest.raises(AttnConsensusError, match="tokenizer"):
        text_prompts(prompts, str(no_tok), max_length=8)
    for args, needle in ((["--model", "tiny", "--prompts", str(prompts)], "local model folder"),
                         (["--model", str(d), "--prompts", str(tmp_path / "missing.txt")], "no such file")):
        out = tmp_path / "x"
        assert main(["loop", *args, "--quiet", "--out", str(out)]) == 2
        assert needle in capsys.readouterr().err and not out.exists()
