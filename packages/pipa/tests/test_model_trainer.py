"""Masking, encoding, the value head, PIPATrainer (against trl's DPO formula) and bad input."""

import copy

import pytest
import torch
import torch.nn.functional as F
from icml25.testbeds import lm
from pipa.data import answer_correct, noisy_scratchpad_examples, split_steps, step_labels
from pipa.losses import PIPAError, posterior_logit
from pipa.model import ValueHeadModel, encode_batch, segment_logps, token_logps, value_logits_at
from pipa.trainer import PIPAConfig, PIPATrainer


@pytest.fixture(scope="module")
def tiny():
    tok = lm.build_tokenizer()
    model = lm.build_tiny_lm(tok, hidden_size=32, num_layers=1, num_heads=2, seed=0)
    return model.eval(), tok


def _seq_logp(model, tok, prompt, completion):
    ids = [tok.bos_token_id] + tok(prompt, add_special_tokens=False)["input_ids"]
    comp = tok(completion, add_special_tokens=False)["input_ids"] + [tok.eos_token_id]
    x = torch.tensor([ids + comp])
    with torch.no_grad():
        lp = torch.log_softmax(model(input_ids=x).logits[0, :-1].double(), -1)
    return float(sum(lp[len(ids) - 1 + j, t] for j, t in enumerate(comp)))


def test_logps_ignore_prompt_and_padding(tiny):
    model, tok = tiny
    prompts, comps = ["12+34=|", "5+7=|"], ["6+4+0=0c1|1+3+1=5c0|640", "21"]
    enc = encode_batch(tok, prompts, [[c] for c in comps], max_length=64)
    assert enc["input_ids"].shape[0] == 2 and (enc["attention_mask"][1] == 0).any()  # row 2 is padded
    with torch.no_grad():
        logits = model(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"]).logits
    got = segment_logps(token_logps(logits, enc["input_ids"]), enc["segments"], 1)[:, 0]
    want = torch.tensor([_seq_logp(model, tok, p, c) for p, c in zip(prompts, comps)])
    torch.testing.assert_close(got.double(), want.double(), rtol=1e-5, atol=1e-4)


def test_step_segments_sum_to_answer_logp_and_value_positions(tiny):
    model, tok = tiny
    p, c = "37+48=|", "7+8+0=5c1|3+4+1=8c0|580"
    steps = split_steps(c)
    assert "".join(steps) == c and len(steps) == 3
    a = encode_batch(tok, [p], [[c]], max_length=64)
    s = encode_batch(tok, [p], [steps], max_length=64)
    assert torch.equal(a["input_ids"], s["input_ids"])
    with torch.no_grad():
        logits = model(input_ids=a["input_ids"]).logits
    tl = token_logps(logits, a["input_ids"])
    torch.testing.assert_close(segment_logps(tl, s["segments"], 3).sum(1), segment_logps(tl, a["segments"], 1)[:, 0])
    # value read at the last prompt token (answer level) and at the last token before each step
    assert a["value_pos"].tolist() == [[len(p)]]
    assert s["value_pos"].tolist() == [[len(p), len(p) + len(steps[0]), len(p) + len(steps[0]) + len(steps[1])]]
    v = torch.arange(40.0)[None].expand(1, 40)
    want = [float(len(p)), float(len(p) + len(steps[0])), float(len(p) + len(steps[0]) + len(steps[1]))]
    assert value_logits_at(v[:, : s["input_ids"].shape[1]], s["value_pos"]).tolist() == [want]


def test_value_head_init_and_save_load(tiny, tmp_path):
    model, tok = tiny
    vh = ValueHeadModel(copy.deepcopy(model), prior_rate=0.3)
    enc = encode_batch(tok, ["1+2=|"], [["3"]], max_length=64)
    _, values = vh(enc["input_ids"], enc["attention_mask"])
    torch.testing.assert_close(torch.sigmoid(values), torch.full_like(values, 0.3))
    vh.save(tmp_path / "m")
    back = ValueHeadModel.load(tmp_path / "m")
    for (k, a), (k2, b) in zip(vh.state_dict().items(), back.state_dict().items()):
        assert k == k2 and torch.equal(a, b)


def _args(tmp_path, **kw):
    base = dict(output_dir=str(tmp_path), max_steps=1, learning_rate=1e-2, per_device_train_batch_size=4,
                use_cpu=True, disable_tqdm=True, logging_steps=100, seed=0)
    base.update(kw)
    return PIPAConfig(**base)


PAIRED = [{"prompt": "12+34=|", "chosen": "2+4+0=6c0|1+3+0=4c0|640", "rejected": "2+4+0=7c0|1+3+0=4c0|740"},
          {"prompt": "55+55=|", "chosen": "5+5+0=0c1|5+5+1=1c1|011", "rejected": "5+5+0=0c1|5+5+1=2c1|021"}]
UNPAIRED = [{"prompt": "12+34=|", "completion": "2+4+0=6c0|1+3+0=4c0|640", "label": True},
            {"prompt": "55+55=|", "completion": "5+5+0=0c1|5+5+1=2c1|021", "label": False}]
STEP = [{"prompt": "12+34=|", "steps": split_steps("2+4+0=7c0|1+3+0=4c0|740"), "step_labels": [0, 1, 0]}]


def test_paired_pipa_n_trainer_loss_is_dpo_beta1(tiny, tmp_path):
    model, tok = tiny
    policy = copy.deepcopy(model)
    # perturb the policy so that it differs from the prior
    with torch.no_grad():
        for p in policy.parameters():
            p.add_(0.05 * torch.randn_like(p))
    tr = PIPATrainer(model=policy, ref_model=copy.deepcopy(model),
                     args=_args(tmp_path, variant="N", pairing="one-positive"), train_dataset=PAIRED,
                     processing_class=tok)
    batch = tr._collate(PAIRED)
    with torch.no_grad():
        loss = tr.compute_loss(tr.model, batch)
    lw = [_seq_logp(policy, tok, r["prompt"], r["chosen"]) for r in PAIRED]
    ll = [_seq_logp(policy, tok, r["prompt"], r["rejected"]) for r in PAIRED]
    rw = [_seq_logp(model, tok, r["prompt"], r["chosen"]) for r in PAIRED]
    rl = [_seq_logp(model, tok, r["prompt"], r["rejected"]) for r in PAIRED]
    dpo = torch.stack([-F.logsigmoid(torch.tensor((a - b) - (c - d))) for a, b, c, d in zip(lw, rw, ll, rl)]).mean()
    torch.testing.assert_close(loss.double(), dpo.double(), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("rows", [UNPAIRED, STEP, PAIRED])
@pytest.mark.parametrize("variant", ["M", "N"])
def test_one_step_changes_every_parameter_and_init_identity(tiny, tmp_path, rows, variant):
    model, tok = tiny
    # prior_rate 0.3 differs from the data's positive rate, so that the value-head bias has a gradient
    tr = PIPATrainer(model=copy.deepcopy(model), ref_model=copy.deepcopy(model),
                     args=_args(tmp_path, variant=variant, prior_rate=0.3), train_dataset=rows, processing_class=tok)
    batch = tr._collate(rows)
    with torch.no_grad():
        pol, ref, v = tr.pipa_terms(tr.model, batch)
    # at initialisation the policy is the prior, so p(c=1|x,y) = g
    m = batch["step_mask"]
    post = posterior_logit(pol[m], ref[m], v[m], variant=variant)
    torch.testing.assert_close(post, v[m], rtol=1e-5, atol=1e-5)
    before = {k: p.detach().clone() for k, p in tr.model.named_parameters()}
    tr.train()
    changed = {k for k, p in tr.model.named_parameters() if not torch.equal(before[k], p.detach())}
    # paired rows with the default pairing='independent' are two labelled rows, so the value head learns too
    assert changed == set(before)


@pytest.mark.parametrize("variant", ["M", "N"])
def test_independent_pairing_is_the_unpaired_loss_of_both_completions(tiny, tmp_path, variant):
    model, tok = tiny
    policy = copy.deepcopy(model)
    with torch.no_grad():
        for p in policy.parameters():
            p.add_(0.05 * torch.randn_like(p))
    split = [{"prompt": r["prompt"], "completion": r["chosen"], "label": 1} for r in PAIRED] + \
            [{"prompt": r["prompt"], "completion": r["rejected"], "label": 0} for r in PAIRED]

    def loss_of(rows, **kw):
        tr = PIPATrainer(model=copy.deepcopy(policy), ref_model=copy.deepcopy(model),
                         args=_args(tmp_path, variant=variant, prior_rate=0.3, **kw), train_dataset=rows,
                         processing_class=tok)
        with torch.no_grad():
            return tr.compute_loss(tr.model, tr._collate(rows))

    paired = loss_of(PAIRED)
    torch.testing.assert_close(paired, loss_of(split), rtol=1e-5, atol=1e-6)
    assert not torch.allclose(paired, loss_of(PAIRED, pairing="one-positive"))
    with pytest.raises(PIPAError, match="pairing"):
        _args(tmp_path, pairing="both")


def test_bad_inputs(tiny, tmp_path):
    model, tok = tiny
    mk = lambda rows, **kw: PIPATrainer(model=copy.deepcopy(model), ref_model=copy.deepcopy(model),  # noqa: E731
                                        args=_args(tmp_path, **kw), train_dataset=rows, processing_class=tok)
    with pytest.raises(PIPAError, match="label must be 0/1"):
        mk([{**UNPAIRED[0], "label": 2}])
    with pytest.raises(PIPAError, match="identical"):
        mk([{**PAIRED[0], "rejected": PAIRED[0]["chosen"]}])
    with pytest.raises(PIPAError, match="empty completion"):
        mk([{**UNPAIRED[0], "completion": ""}])
    with pytest.raises(PIPAError, match="3 step labels for 2 steps"):
        mk([{"prompt": "1+1=|", "steps": ["a|", "b"], "step_labels": [1, 0, 1]}])
    with pytest.raises(PIPAError, match="max_length"):
        mk(UNPAIRED, max_length=10)
    with pytest.raises(PIPAError, match="variant"):
        _args(tmp_path, variant="X")
    with pytest.raises(PIPAError, match="match no format"):
        mk([{"prompt": "x", "answer": "y"}])
    other = lm.build_tiny_lm(tok, hidden_size=32, num_layers=1, num_heads=2)
    other.resize_token_embeddings(other.config.vocab_size + 3)
    with pytest.raises(PIPAError, match="vocab_size"):
        PIPATrainer(model=copy.deepcopy(model), ref_model=other, args=_args(tmp_path), train_dataset=UNPAIRED,
                    processing_class=tok)


def test_noisy_data_is_consistent_and_labelled():
    exs = noisy_scratchpad_examples(300, seed=0, step_error=0.3)
    n_wrong = 0
    for ex in exs:
        labs = step_labels(ex.prompt, ex.answer)
        steps = ex.answer.split("|")[:-1]
        digits = "".join(s.split("=")[1][0] for s in steps)
        carry = steps[-1][-1]
        assert ex.answer.split("|")[-1] == digits + carry  # the answer follows the written steps
        assert answer_correct(ex.prompt, ex.answer) == (all(labs[:-1]))
        n_wrong += not all(labs)
    assert 0.3 < n_wrong / len(exs) < 0.7  # 1 - 0.7**2 = 0.51
    clean = lm.make_examples("add_scratchpad", 50, seed=1)
    assert all(all(step_labels(e.prompt, e.answer)) and answer_correct(e.prompt, e.answer) for e in clean)


def test_sampling_is_seeded_and_leaves_global_rng(tiny):
    from pipa.data import label_samples, noisy_samples, sample_completions

    model, tok = tiny
    prompts = ["12+34=|", "5+7=|"]
    torch.manual_seed(123)
    state = torch.get_rng_state()
    a = sample_completions(model, tok, prompts, k=3, seed=5, max_new_tokens=8)
    assert torch.equal(state, torch.get_rng_state())
    assert a == sample_completions(model, tok, prompts, k=3, seed=5, max_new_tokens=8)
    assert a != sample_completions(model, tok, prompts, k=3, seed=6, max_new_tokens=8)
    assert [len(r) for r in a] == [3, 3]
    rows = noisy_samples(["12+34=|", "99+99=|"], k=8, seed=0)
    labs = [s.label for r in rows for s in r]
    assert 0 < sum(labs) < len(labs)
    for r in rows:
        for s in r:
            assert s.label == answer_correct(s.prompt, s.completion)
    assert label_samples(["1+2=|"], [["", "3"]])[0][0].completion == "3"  # empty completions dropped
