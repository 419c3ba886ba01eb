"""Any local HF causal LM + tokenizer: a tiny LlamaConfig model with a BPE tokenizer built offline (not the test
bed's), in-context step tokenization, and `pipa train` on it. Also: the prior's pretraining is deterministic."""

import json

import pytest
import torch
from pipa.losses import PIPAError
from pipa.model import encode_batch

TEXTS = ["say hello there", "say hello world", "hello there world", "Q: 12+34= 46", "Q: 51+20= 71", "Q: 9+9= 18"]


def bpe_tokenizer(bos=True):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tk = Tokenizer(models.BPE())
    tk.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tk.decoder = decoders.ByteLevel()
    specials = ["<s>", "</s>", "<pad>"]
    tk.train_from_iterator(TEXTS * 50, trainers.BpeTrainer(vocab_size=300, special_tokens=specials,
                                                           initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    kw = dict(bos_token="<s>", eos_token="</s>", pad_token="<pad>") if bos else dict(eos_token="</s>")
    return PreTrainedTokenizerFast(tokenizer_object=tk, **kw)


@pytest.fixture(scope="module")
def llama_dir(tmp_path_factory):
    from transformers import LlamaConfig, LlamaForCausalLM

    tok = bpe_tokenizer()
    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=len(tok), hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                      num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=64,
                      bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id)
    path = tmp_path_factory.mktemp("llama")
    LlamaForCausalLM(cfg).save_pretrained(path)
    tok.save_pretrained(path)
    return path


def test_steps_are_tokenized_in_context():
    tok = bpe_tokenizer()
    prompt, steps = "Q: 12", ["+34= 4", "6"]  # " 46" is one token: it straddles the step boundary
    enc = encode_batch(tok, [prompt], [steps], [[1, 0]], max_length=32)
    n = int(enc["attention_mask"].sum())
    body = enc["input_ids"][0, 1:n - 1].tolist()
    whole = tok("Q: 12+34= 46", add_special_tokens=False)["input_ids"]
    assert body == whole  # the ids generation would produce
    piecewise = sum((tok(t, add_special_tokens=False)["input_ids"] for t in [prompt, *steps]), [])
    assert piecewise != whole  # negative control: tokenizing each step on its own gives other ids
    assert enc["input_ids"][0, 0] == tok.bos_token_id and enc["input_ids"][0, n - 1] == tok.eos_token_id
    seg = enc["segments"][0, :n].tolist()
    assert seg[0] == -1 and seg[-1] == 1 and set(seg) == {-1, 0, 1}
    # the value head for each step reads the token just before the step's first token
    for k in (0, 1):
        assert enc["value_pos"][0, k] == seg.index(k) - 1
    # a step that lies wholly inside a token of the next step cannot get its own log-prob: a clear error
    with pytest.raises(PIPAError, match="no token of its own"):
        encode_batch(tok, ["say"], [[" hel", "lo there"]], max_length=32)


def test_tokenizer_without_bos_or_pad():
    tok = bpe_tokenizer(bos=False)
    assert tok.bos_token_id is None and tok.pad_token_id is None
    enc = encode_batch(tok, ["say", "Q: 9+9="], [[" hello"], [" 18"]], max_length=32)
    assert enc["input_ids"][0, 0] == tok("say", add_special_tokens=False)["input_ids"][0]
    assert (enc["value_pos"][:, 0] >= 0).all()
    with pytest.raises(PIPAError, match="BOS"):
        encode_batch(tok, [""], [["say hello"]], max_length=32)


def test_pipa_train_on_a_local_llama_with_its_own_bpe_tokenizer(llama_dir, tmp_path):
    from pipa.cli import main
    from pipa.model import ValueHeadModel

    data = tmp_path / "d.jsonl"
    rows = [{"prompt": "Q: 12", "steps": ["+34=", " 46"], "step_labels": [1, 1]},
            {"prompt": "Q: 51", "steps": ["+20=", " 72"], "step_labels": [1, 0]},
            {"prompt": "Q: 9", "steps": ["+9=", " 19"], "step_labels": [1, 0]},
            {"prompt": "say", "steps": [" hello", " there"], "step_labels": [1, 1]}]
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "run"
    assert main(["train", "--prior", str(llama_dir), "--data", str(data), "--steps", "2", "--batch-size", "2",
                 "--lr", "1e-2", "--variant", "M", "--out", str(out), "--quiet"]) == 0
    model = ValueHeadModel.load(out / "model")
    assert type(model.lm).__name__ == "LlamaForCausalLM"
    assert model.value_head.weight.abs().sum() > 0  # trained from its zero init


def test_prior_pretraining_is_deterministic_for_a_seed(tmp_path):
    from pipa.data import noisy_prior

    kw = dict(steps=3, n_examples=64, batch_size=8)
    a, _ = noisy_prior(seed=5, cache_dir=tmp_path / "a", **kw)
    b, _ = noisy_prior(seed=5, cache_dir=tmp_path / "b", **kw)
    c, _ = noisy_prior(seed=6, cache_dir=tmp_path / "c", **kw)
    sa, sb, sc = a.state_dict(), b.state_dict(), c.state_dict()
    assert all(torch.equal(sa[k], sb[k]) for k in sa)  # rebuilt from scratch: bit-identical weights
    assert not all(torch.equal(sa[k], sc[k]) for k in sa)  # negative control: another seed differs


@pytest.mark.slow
def test_ddp_two_cpu_processes_match_one_process_with_the_same_global_batch(llama_dir, tmp_path):
    """`accelerate launch` with 2 CPU processes (gloo), per-device batch 2, against one process with batch 4. The data
    are exactly one global batch, so each step sees the same rows in both runs; DDP averages the two shards'
    gradients, which equals the gradient of the 4-row mean."""
    import os
    import subprocess
    import sys

    from pipa.cli import main
    from pipa.model import ValueHeadModel

    data = tmp_path / "d.jsonl"
    rows = [{"prompt": "say", "completion": " hello there", "label": True},
            {"prompt": "say", "completion": " hello world", "label": False},
            {"prompt": "Q: 12+34=", "completion": " 46", "label": True},
            {"prompt": "Q: 51+20=", "completion": " 72", "label": False}]
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    common = ["--prior", str(llama_dir), "--data", str(data), "--steps", "3", "--lr", "1e-2", "--variant", "N",
              "--log-every", "1", "--quiet"]
    assert main(["train", *common, "--batch-size", "4", "--out", str(tmp_path / "one")]) == 0
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29533",
           "ACCELERATE_USE_CPU": "true"}
    cmd = [sys.executable, "-m", "accelerate.commands.launch", "--multi_gpu", "--num_processes", "2",
           "--num_machines", "1", "--mixed_precision", "no", "--dynamo_backend", "no", "-m", "pipa", "train",
           *common, "--batch-size", "2", "--out", str(tmp_path / "two")]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]

    def losses(run):
        recs = [json.loads(x) for x in (tmp_path / run / "metrics.jsonl").read_text().splitlines()]
        return [r["loss"] for r in recs if "loss" in r]

    one, two = losses("one"), losses("two")
    assert len(one) == len(two) == 3
    assert one[0] != one[-1]  # it trained
    assert one == pytest.approx(two, rel=1e-4, abs=1e-5)
    a = ValueHeadModel.load(tmp_path / "one" / "model").value_head.state_dict()
    b = ValueHeadModel.load(tmp_path / "two" / "model").value_head.state_dict()
    for k in a:
        torch.testing.assert_close(a[k], b[k], rtol=1e-4, atol=1e-5)
