"""Tests of the tiny-LM test bed (icml25.testbeds.lm) and the test-bed cache (icml25.testbeds.cache)."""

from __future__ import annotations

import copy
import os
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from icml25.testbeds import cache as tb_cache  # noqa: E402
from icml25.testbeds import lm  # noqa: E402

SMALL = dict(hidden_size=32, num_layers=1, num_heads=2)


@pytest.fixture(scope="module", autouse=True)
def _one_thread():
    # tiny models gain nothing from more threads, and oversubscribed threads are very slow on a shared machine
    old = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(old)


@pytest.fixture(scope="session")
def tok():
    return lm.build_tokenizer()


@pytest.fixture(scope="session")
def memorised(tok):
    """A small model trained to memorise 12 additions (exact match must reach 1.0)."""
    model = lm.build_tiny_lm(tok, seed=0, **SMALL)
    examples = lm.make_examples("add", 12, seed=3)
    losses = lm.train_lm(model, tok, examples, steps=150, lr=1e-2, batch_size=12, seed=0)
    return model, examples, losses


# ------------------------------------------------------------------------------------------------- import cost
def test_import_is_light():
    code = "import sys, icml25, icml25.testbeds, icml25.testbeds.lm, icml25.testbeds.cache; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# --------------------------------------------------------------------------------------------------- tokenizer
def test_tokenizer_round_trip_and_specials(tok):
    from transformers import PreTrainedTokenizerFast

    assert isinstance(tok, PreTrainedTokenizerFast)
    assert [tok.pad_token_id, tok.bos_token_id, tok.eos_token_id, tok.unk_token_id] == [0, 1, 2, 3]
    assert len(tok) == 4 + len(lm.CHARS)
    rng = np.random.default_rng(0)
    chars = list(lm.CHARS)
    for _ in range(50):
        s = "".join(rng.choice(chars, size=int(rng.integers(0, 40))))
        ids = tok(s, add_special_tokens=False)["input_ids"]
        assert len(ids) == len(s)  # one token per character
        assert tok.decode(ids) == s
    ids = tok(lm.BOS + "12+3", add_special_tokens=False)["input_ids"]
    assert ids[0] == tok.bos_token_id and tok.decode(ids, skip_special_tokens=True) == "12+3"


@pytest.mark.parametrize("bad", ["héllo", "1+1=2€", ["ok", "tab\there"]])
def test_tokenizer_rejects_out_of_vocabulary(tok, bad):
    with pytest.raises(lm.OutOfVocabularyError, match="outside the tiny-LM vocabulary"):
        tok(bad, add_special_tokens=False)


# ------------------------------------------------------------------------------------------------------- tasks
def test_task_answers_are_exact():
    for ex in lm.make_examples("add", 200, seed=1, digits=3):
        a, b = (int(x) for x in ex.prompt[:-1].split("+"))
        assert lm.parse_number(ex.answer) == a + b and len(ex.answer) == 4
    for ex in lm.make_examples("sub", 200, seed=1):
        a, b = (int(x) for x in ex.prompt[:-1].split("-"))
        assert a >= b and lm.parse_number(ex.answer) == a - b
    for ex in lm.make_examples("mul", 200, seed=1):
        a, b = (int(x) for x in ex.prompt[:-1].split("*"))
        assert b < 10 and lm.parse_number(ex.answer) == a * b
    for ex in lm.make_examples("reverse", 50, seed=1, length=7):
        s = ex.prompt[len("reverse ") : -1]
        assert len(s) == 7 and ex.answer == s[::-1]
    for ex in lm.make_examples("sort", 50, seed=1):
        s = ex.prompt[len("sort ") : -1]
        assert ex.answer == "".join(sorted(s))
    for ex in lm.make_examples("count", 50, seed=1):
        c, s = ex.prompt[len("count ") : -1].split(" in ")
        assert lm.parse_number(ex.answer) == s.count(c)
    assert lm.format_number(52, 3) == "250" and lm.parse_number("250") == 52 and lm.parse_number("2x") is None


def test_scratchpad_steps_recompute():
    for ex in lm.make_examples("add_scratchpad", 200, seed=2, digits=3):
        assert ex.prompt.endswith("=|")
        a, b = (int(x) for x in ex.prompt[:-2].split("+"))
        assert ex.answer == "|".join(ex.steps) + "|" + lm.format_number(a + b, 4)
        carry = 0
        for k, step in enumerate(ex.steps):  # "a+b+c=sCc'"
            lhs, rhs = step.split("=")
            x, y, c = (int(v) for v in lhs.split("+"))
            assert (x, y) == ((a // 10**k) % 10, (b // 10**k) % 10) and c == carry
            s, carry = (int(v) for v in rhs.split("c"))
            assert s == (x + y + c) % 10 and carry == (x + y + c) // 10
        assert carry == (a + b) // 10**3
        assert lm.check_scratchpad(ex.prompt, ex.answer) == [True] * 4


def test_check_scratchpad_labels_each_step():
    ex = lm.make_examples("add_scratchpad", 1, seed=0)[0]
    prompt = "37+48=|"
    assert lm.check_scratchpad(prompt, "7+8+0=5c1|3+4+1=8c0|580") == [True, True, True]
    assert lm.check_scratchpad("37+48=", "7+8+0=5c1|3+4+1=8c0|580") == [True, True, True]
    assert lm.check_scratchpad(prompt, "7+8+0=5c0|3+4+0=7c0|570") == [False, False, False]
    assert lm.check_scratchpad(prompt, "7+8+0=5c1|3+4+1=9c0|580") == [True, False, True]
    assert lm.check_scratchpad(prompt, "7+8+0=5c1") == [True, False, False]
    assert lm.check_scratchpad(prompt, "7+8+0=5c1|3+4+1=8c0|580|1") == [True, True, False]
    assert lm.check_scratchpad(ex.prompt, ex.answer) == [True, True, True]
    with pytest.raises(ValueError, match="add_scratchpad prompt"):
        lm.check_scratchpad("37*4=", "x")


def test_splits_are_disjoint_and_deterministic():
    train = lm.make_examples("add", 2000, seed=0, split="train")
    test = lm.make_examples("add", 300, seed=0, split="test")
    assert not {e.prompt for e in train} & {e.prompt for e in test}
    # add and add_scratchpad prompts differ, so a mix of both is not ambiguous
    assert (
        lm.make_examples("add", 1, seed=0)[0].prompt
        != lm.make_examples("add_scratchpad", 1, seed=0)[0].prompt
    )
    assert lm.make_examples("add", 50, seed=5) == lm.make_examples("add", 50, seed=5)
    assert lm.make_examples("add", 50, seed=5) != lm.make_examples("add", 50, seed=6)
    mix = lm.make_mix({"add": 3, "reverse": 1}, 400, seed=0)
    assert len(mix) == 400 and sum(e.prompt.startswith("reverse") for e in mix) == 100


def test_task_bad_inputs():
    with pytest.raises(ValueError, match="task must be one of"):
        lm.make_examples("divide", 3, seed=0)
    with pytest.raises(ValueError, match="max_length"):
        lm.make_examples("add_scratchpad", 3, seed=0, digits=6)  # 6 columns of scratchpad > 64 positions
    with pytest.raises(ValueError, match="split"):
        lm.make_examples("add", 3, seed=0, split="val")
    with pytest.raises(ValueError, match="task_mix"):
        lm.make_mix(["add", "nope"], 10, seed=0)


# ------------------------------------------------------------------------------------------------------- model
def test_model_is_llama_with_linear_projections(tok):
    model = lm.build_tiny_lm(tok, **SMALL)
    assert type(model).__name__ == "LlamaForCausalLM"
    assert model.config._attn_implementation == "sdpa"
    names = {n.split(".")[-1] for n, m in model.named_modules() if isinstance(m, torch.nn.Linear)}
    assert {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj", "lm_head"} <= names
    assert model.config.vocab_size == len(tok)
    a, b = lm.build_tiny_lm(tok, seed=1, **SMALL), lm.build_tiny_lm(tok, seed=1, **SMALL)
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters()))
    # default size as in the note: hidden 96, 3 layers, intermediate 384 -> about 0.45 M parameters
    assert 0.4e6 < sum(p.numel() for p in lm.build_tiny_lm(tok).parameters()) < 0.5e6


def test_model_bad_config(tok):
    with pytest.raises(ValueError, match="must divide hidden_size"):
        lm.build_tiny_lm(tok, hidden_size=30, num_heads=4)
    other = copy.deepcopy(tok)
    other.add_tokens(["<extra>"])
    model = lm.build_tiny_lm(tok, **SMALL)
    with pytest.raises(ValueError, match="does not match the tokenizer"):
        lm.generate(model, other, ["1+1="], max_new_tokens=2)
    with pytest.raises(ValueError, match="does not match the tokenizer"):
        lm.train_lm(model, other, lm.make_examples("add", 4, seed=0), steps=1)


def test_labels_cover_answer_only(tok):
    ex = [lm.Example("12+3=", "51"), lm.Example("reverse ab=", "ba")]
    data = lm.encode_examples(tok, ex)
    ids, lab = data["input_ids"], data["labels"]
    assert ids[0, 0] == tok.bos_token_id
    first = lab[0][lab[0] != -100].tolist()
    assert tok.decode(first[:-1]) == "51" and first[-1] == tok.eos_token_id
    second = lab[1][lab[1] != -100].tolist()
    assert tok.decode(second[:-1]) == "ba"
    assert (lab[data["attention_mask"] == 0] == -100).all()


# ------------------------------------------------------------------------------------------ training and eval
def test_memorised_exact_match(tok, memorised):
    model, examples, losses = memorised
    assert losses[-1] < 0.1 * losses[0]
    assert lm.exact_match(model, tok, examples) == 1.0
    preds = lm.generate(model, tok, [e.prompt for e in examples], max_new_tokens=5)
    assert preds == [e.answer for e in examples]
    wrong = [
        lm.Example(e.prompt, lm.format_number((lm.parse_number(e.answer) + 1) % 200, 3)) for e in examples
    ]
    assert lm.exact_match(model, tok, wrong) == 0.0
    # batch size must not change greedy answers (left padding is masked)
    assert lm.generate(model, tok, [e.prompt for e in examples], max_new_tokens=5, batch_size=5) == preds


def test_train_lm_external_optimizer_and_determinism(tok):
    ex = lm.make_examples("add", 64, seed=0)
    m1, m2 = lm.build_tiny_lm(tok, seed=2, **SMALL), lm.build_tiny_lm(tok, seed=2, **SMALL)
    l1 = lm.train_lm(m1, tok, ex, steps=3, batch_size=16, seed=4)
    l2 = lm.train_lm(m2, tok, ex, steps=3, batch_size=16, seed=4)
    assert l1 == l2
    m3 = lm.build_tiny_lm(tok, seed=2, **SMALL)
    before = {n: p.detach().clone() for n, p in m3.named_parameters()}
    only = m3.model.layers[0].self_attn.q_proj.weight
    lm.train_lm(m3, tok, ex, steps=2, batch_size=16, optimizer=torch.optim.SGD([only], lr=0.1))
    changed = {n for n, p in m3.named_parameters() if not torch.equal(p, before[n])}
    assert changed == {"model.layers.0.self_attn.q_proj.weight"}
    with pytest.raises(ValueError, match="max_position_embeddings"):
        lm.generate(m3, tok, ["1" * 60], max_new_tokens=10)


# ------------------------------------------------------------------------------------------------------- cache
def test_pretrained_cache_hit_corruption_and_key(tmp_path, tok):
    kw = dict(steps=3, seed=0, cache_dir=tmp_path, n_examples=64, batch_size=16, **SMALL)
    m1, tok1 = lm.pretrained_tiny_lm(["add", "reverse"], **kw)
    info1 = m1.icml25_cache
    assert not info1.hit and (info1.path / "model.safetensors").exists()
    t0 = time.perf_counter()
    m2, _ = lm.pretrained_tiny_lm(["reverse", "add"], **kw)  # same mix in another order: same entry
    load_s = time.perf_counter() - t0
    assert m2.icml25_cache.hit and m2.icml25_cache.path == info1.path and load_s < 5
    assert all(torch.equal(p, q) for p, q in zip(m1.state_dict().values(), m2.state_dict().values()))
    assert len(m2.icml25_train["losses"]) == 3
    # a flipped byte in the weights is detected and the entry rebuilt (training is deterministic)
    f = info1.path / "model.safetensors"
    raw = bytearray(f.read_bytes())
    raw[-5] ^= 0xFF
    f.write_bytes(bytes(raw))
    with pytest.warns(UserWarning, match="corrupted"):
        m3, _ = lm.pretrained_tiny_lm(["add", "reverse"], **kw)
    assert not m3.icml25_cache.hit
    assert all(torch.equal(p, q) for p, q in zip(m1.state_dict().values(), m3.state_dict().values()))
    # anything that determines the model changes the key
    other = {**kw, "steps": 4}
    m4, _ = lm.pretrained_tiny_lm(["add", "reverse"], **other)
    assert m4.icml25_cache.path != info1.path
    m5, _ = lm.pretrained_tiny_lm(["add", "reverse"], **{**kw, "seed": 1})
    assert m5.icml25_cache.path not in (info1.path, m4.icml25_cache.path)
    with pytest.raises(ValueError, match="task_mix"):
        lm.pretrained_tiny_lm(["nope"], **kw)


def test_cache_env_var_and_truncated_entry(tmp_path, monkeypatch):
    monkeypatch.setenv("ICML25_CACHE", str(tmp_path / "envcache"))
    assert tb_cache.cache_root() == tmp_path / "envcache"
    builds = []

    def build(folder):
        builds.append(1)
        (folder / "w.bin").write_bytes(b"x" * 100)

    def load(folder):
        data = (folder / "w.bin").read_bytes()
        if len(data) != 100:
            raise ValueError("short")
        return data

    v, info = tb_cache.load_or_build("toy", {"a": 1}, build=build, load=load)
    assert v == b"x" * 100 and not info.hit and str(info.path).startswith(str(tmp_path / "envcache"))
    (info.path / "w.bin").write_bytes(b"x" * 10)  # truncated
    with pytest.warns(UserWarning):
        v, info2 = tb_cache.load_or_build("toy", {"a": 1}, build=build, load=load)
    assert v == b"x" * 100 and not info2.hit and len(builds) == 2
    (info.path / tb_cache.MANIFEST).unlink()  # an entry without a manifest is incomplete
    v, info3 = tb_cache.load_or_build("toy", {"a": 1}, build=build, load=load)
    assert not info3.hit and len(builds) == 3
    assert tb_cache.cache_key({"a": 1, "b": [1, 2]}) == tb_cache.cache_key({"b": [1, 2], "a": 1})
    assert tb_cache.cache_key({"a": 1}) != tb_cache.cache_key({"a": 2})


def test_cache_concurrent_callers_build_once(tmp_path):
    builds = []

    def build(folder):
        builds.append(threading.get_ident())
        time.sleep(0.3)
        (folder / "w.bin").write_bytes(os.urandom(64))

    results, errors = [], []

    def worker():
        try:
            results.append(
                tb_cache.load_or_build(
                    "toy",
                    {"k": 1},
                    build=build,
                    load=lambda f: (f / "w.bin").read_bytes(),
                    cache_dir=tmp_path,
                )[0]
            )
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len(builds) == 1 and len(set(results)) == 1 and len(results) == 4
    assert not [p for p in (tmp_path / "toy").iterdir() if p.name.startswith(".tmp")]


# --------------------------------------------------------------------------------------------- trl and peft
def test_trl_dpo_step_offline(tmp_path, tok, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("WANDB_DISABLED", "true")
    datasets = pytest.importorskip("datasets")
    trl = pytest.importorskip("trl")
    model = lm.build_tiny_lm(tok, seed=0, **SMALL)
    ex = lm.make_examples("add", 8, seed=0)
    data = datasets.Dataset.from_dict(
        {
            "prompt": [lm.BOS + e.prompt for e in ex],  # the test bed's format starts with <s>
            "chosen": [e.answer for e in ex],
            "rejected": [lm.format_number((lm.parse_number(e.answer) + 1) % 200, 3) for e in ex],
        }
    )
    args = trl.DPOConfig(
        output_dir=str(tmp_path / "dpo"),
        report_to="none",
        save_strategy="no",
        use_cpu=True,
        max_length=32,
        per_device_train_batch_size=8,
        max_steps=1,
        learning_rate=1e-2,
        logging_steps=1,
        disable_tqdm=True,
    )
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    trainer = trl.DPOTrainer(
        model=model, ref_model=copy.deepcopy(model), args=args, train_dataset=data, processing_class=tok
    )
    out = trainer.train()
    assert out.global_step == 1 and np.isfinite(out.training_loss)
    changed = [n for n, p in model.named_parameters() if not torch.equal(p.detach().cpu(), before[n])]
    assert len(changed) == len(before)


def test_peft_lora_step(tok):
    peft = pytest.importorskip("peft")
    model = lm.build_tiny_lm(tok, seed=0, **SMALL)
    base = {n: p.detach().clone() for n, p in model.named_parameters()}
    cfg = peft.LoraConfig(
        r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"], lora_dropout=0.0, task_type="CAUSAL_LM"
    )
    pm = peft.get_peft_model(model, cfg)
    trainable = [n for n, p in pm.named_parameters() if p.requires_grad]
    assert trainable and all("lora_" in n for n in trainable)
    lora_b = {n: p.detach().clone() for n, p in pm.named_parameters() if "lora_B" in n}
    opt = torch.optim.AdamW([p for p in pm.parameters() if p.requires_grad], lr=1e-2)
    losses = lm.train_lm(pm, tok, lm.make_examples("add", 32, seed=0), steps=1, batch_size=16, optimizer=opt)
    assert np.isfinite(losses[0])
    assert all(not torch.equal(p, lora_b[n]) for n, p in pm.named_parameters() if "lora_B" in n)
    assert lm.generate(pm, tok, ["12+3="], max_new_tokens=3)  # generation works through the wrapper
    merged = pm.merge_and_unload()
    for n, p in merged.named_parameters():
        if "q_proj" not in n and "v_proj" not in n:
            assert torch.equal(p, base[n]), n
