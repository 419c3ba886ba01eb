"""`pipa evaluate --model DIR --data FILE.jsonl` on a user's own causal LM: a tiny GPT-2 built from a config with a
BPE tokenizer that has **no BOS token**, saved with save_pretrained (no downloads), scored on every JSONL format."""

import json

import pytest
import torch

TEXTS = ["Q: 12+34= 46", "Q: 51+20= 71", "Q: 9+9= 18", "Q: 3+4= 7", "say hello there"]


def _tokenizer():
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tk = Tokenizer(models.BPE())
    tk.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tk.decoder = decoders.ByteLevel()
    tk.train_from_iterator(TEXTS * 50, trainers.BpeTrainer(vocab_size=280, special_tokens=["<|end|>"],
                                                           initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    return PreTrainedTokenizerFast(tokenizer_object=tk, eos_token="<|end|>")  # no BOS, no pad


@pytest.fixture(scope="module")
def gpt2_dirs(tmp_path_factory):
    from transformers import GPT2Config, GPT2LMHeadModel

    tok = _tokenizer()
    assert tok.bos_token_id is None and tok.pad_token_id is None
    dirs = []
    for seed in (0, 1):  # a "policy" and a different "reference"
        torch.manual_seed(seed)
        cfg = GPT2Config(vocab_size=len(tok), n_embd=32, n_layer=1, n_head=2, n_positions=64,
                         bos_token_id=tok.eos_token_id, eos_token_id=tok.eos_token_id)
        path = tmp_path_factory.mktemp(f"gpt2_{seed}")
        GPT2LMHeadModel(cfg).save_pretrained(path)
        tok.save_pretrained(path)
        dirs.append(path)
    return dirs


def _write(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _run(argv):
    from pipa.cli import main

    return main(argv)


def test_evaluate_paired_unpaired_step_and_answer_rows(gpt2_dirs, tmp_path):
    from pipa.evaluate import evaluate_rows, load_causal_lm

    model, ref = gpt2_dirs
    pol_lm, tok, vh = load_causal_lm(model)
    ref_lm, _, _ = load_causal_lm(ref)
    assert vh is None and tok.bos_token_id is None
    paired = [{"prompt": "Q: 12+34=", "chosen": " 46", "rejected": " 47"},
              {"prompt": "Q: 9+9=", "chosen": " 18", "rejected": " 17"},
              {"prompt": "Q: 3+4=", "chosen": " 7", "rejected": " 8"}]
    d = _write(tmp_path / "paired.jsonl", paired)
    assert _run(["evaluate", "--model", str(model), "--data", str(d), "--prior", str(ref), "--out",
                 str(tmp_path / "ev"), "--quiet"]) == 0
    res = json.loads((tmp_path / "ev" / "evaluation.json").read_text())
    assert res["format"] == "paired" and res["n_rows"] == 3
    # the implicit reward, recomputed by hand: log π(y|x) − log p⁰(y|x) summed over the completion (+ EOS) tokens,
    # with no BOS in front (the tokenizer has none)
    def logp(lm_, prompt, completion):
        p = tok(prompt, add_special_tokens=False)["input_ids"]
        ids = tok(prompt + completion, add_special_tokens=False)["input_ids"] + [tok.eos_token_id]
        with torch.no_grad():
            lp = torch.log_softmax(lm_(torch.tensor([ids])).logits[0, :-1].double(), -1)
        return float(sum(lp[t - 1, ids[t]] for t in range(len(p), len(ids))))

    r = [(logp(pol_lm, x["prompt"], x["chosen"]) - logp(ref_lm, x["prompt"], x["chosen"]),
          logp(pol_lm, x["prompt"], x["rejected"]) - logp(ref_lm, x["prompt"], x["rejected"])) for x in paired]
    assert res["preference_accuracy"] == pytest.approx(sum(a > b for a, b in r) / 3)
    assert res["reward_margin"] == pytest.approx(sum(a - b for a, b in r) / 3, rel=1e-4, abs=1e-5)
    # the policy as its own reference: every implicit reward is 0 (negative control of the log-ratio)
    own = evaluate_rows(pol_lm, tok, paired, ref=pol_lm)
    assert own["reward_margin"] == pytest.approx(0.0, abs=1e-6) and own["preference_accuracy"] == 0.0

    unpaired = [{"prompt": x["prompt"], "completion": x[k], "label": k == "chosen"} for x in paired
                for k in ("chosen", "rejected")]
    res_u = evaluate_rows(pol_lm, tok, unpaired, ref=ref_lm)
    assert res_u["format"] == "unpaired" and res_u["positive_rate"] == 0.5 and 0 <= res_u["reward_auc"] <= 1
    steps = [{"prompt": "Q:", "steps": [" 12+34=", " 46"], "step_labels": [1, 1]},
             {"prompt": "Q:", "steps": [" 9+9=", " 17"], "step_labels": [1, 0]}]
    res_s = evaluate_rows(pol_lm, tok, steps, ref=None)
    assert res_s["format"] == "step" and res_s["reference"].startswith("none")

    answers = _write(tmp_path / "answers.jsonl", [{"prompt": "Q: 12+34=", "answer": "46"},
                                                   {"prompt": "Q: 9+9=", "answer": "18"}])
    assert _run(["evaluate", "--model", str(model), "--data", str(answers), "--prior", "none", "--max-new-tokens",
                 "4", "--out", str(tmp_path / "ev2"), "--quiet"]) == 0
    res_a = json.loads((tmp_path / "ev2" / "evaluation.json").read_text())
    assert res_a["format"] == "answer" and res_a["n_rows"] == 2 and res_a["accuracy"] in (0.0, 0.5, 1.0)


def test_greedy_generation_has_no_hard_coded_bos_and_final_answer_rule(gpt2_dirs):
    from pipa.evaluate import final_answer, greedy_generate, load_causal_lm

    lm_, tok, _ = load_causal_lm(gpt2_dirs[0])
    lm_ = lm_.double()  # float64: no argmax tie of the random tiny model can flip between batch and single
    prompts = ["Q: 12+34=", "Q: 9+9= 1"]
    batch = greedy_generate(lm_, tok, prompts, max_new_tokens=5)
    # left padding and batching do not change a greedy completion: each prompt alone gives the same text
    assert batch == [greedy_generate(lm_, tok, [p], max_new_tokens=5)[0] for p in prompts]
    assert final_answer("2+4+0=6c0|1+3+0=4c0|640") == "640" and final_answer("so #### 42\n") == "42"
    assert final_answer("") == ""


def test_evaluate_refuses_bad_data_and_mismatched_prior(gpt2_dirs, tmp_path, capsys):
    from transformers import GPT2Config, GPT2LMHeadModel

    model, _ = gpt2_dirs
    mixed = _write(tmp_path / "mixed.jsonl", [{"prompt": "a", "answer": "1"},
                                              {"prompt": "b", "chosen": "x", "rejected": "y"}])
    ok = _write(tmp_path / "ok.jsonl", [{"prompt": "a", "answer": "1"}])
    other = tmp_path / "other"
    GPT2LMHeadModel(GPT2Config(vocab_size=50, n_embd=16, n_layer=1, n_head=2, n_positions=32)).save_pretrained(other)
    _tokenizer().save_pretrained(other)
    cases = [
        (["--data", str(mixed), "--prior", "none"], "one format per file"),
        (["--data", str(ok), "--prior", str(other)], "vocab_size"),  # a prior with another vocabulary
        (["--data", str(ok), "--prior", "none", "--batch-size", "0"], "--batch-size"),
    ]
    for extra, want in cases:
        assert _run(["evaluate", "--model", str(model), *extra, "--out", str(tmp_path / "never")]) == 2
        assert want in capsys.readouterr().err
    assert _run(["evaluate", "--model", str(tmp_path / "mixed.jsonl").replace("mixed.jsonl", "no-model"), "--data",
                 str(ok), "--prior", "none", "--out", str(tmp_path / "never")]) == 2
    assert "does not exist" in capsys.readouterr().err
    (tmp_path / "empty").mkdir()
    assert _run(["evaluate", "--model", str(tmp_path / "empty"), "--data", str(ok), "--prior", "none", "--out",
                 str(tmp_path / "never")]) == 2
    assert "neither a PIPA checkpoint" in capsys.readouterr().err
    assert not (tmp_path / "never").exists()
