"""LIFT on a transformers causal LM: plain loop, transformers.Trainer, save/load, CLI, peft baselines."""

from __future__ import annotations

import pytest
import torch
from icml25.testbeds.lm import build_tiny_lm, build_tokenizer, encode_examples, make_examples
from icml25.testing import run_cli
from lift.cli import main
from lift.finetune import METHODS, MethodConfig, finetune, setup_method, state_floats, trainable_count
from lift.models import ModelLoadError, load_model, save_model
from lift.optim import SparseAdamW


@pytest.fixture(scope="module")
def tok():
    return build_tokenizer()


def _tiny(tok, seed=0):
    return build_tiny_lm(tok, hidden_size=32, num_layers=1, seed=seed)


def test_only_attention_and_mlp_linears_are_trained(tok):
    model = _tiny(tok)
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    opt = SparseAdamW(model, lr=1e-2, filter_rank=2, budget_rank=1, update_interval=2)
    names = set(opt.param_names.values())
    assert all(n.split(".")[-2] in {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"}
               for n in names) and len(names) == 7
    finetune(model, tok, make_examples("add", 32, seed=0), optimizer=opt, steps=3, batch_size=8)
    changed = {n for n, p in model.named_parameters() if not torch.equal(p, before[n])}
    assert changed == names  # embeddings, lm_head and norms untouched


def test_trainer_with_gradient_accumulation_updates_masks_on_schedule(tok, tmp_path):
    from transformers import Trainer, TrainingArguments

    model = _tiny(tok)
    emb0 = model.get_input_embeddings().weight.detach().clone()
    opt = SparseAdamW(model, lr=1e-2, filter_rank=2, budget_rank=1, update_interval=3)
    enc = encode_examples(tok, make_examples("add", 48, seed=1))
    rows = [{k: v[i] for k, v in enc.items()} for i in range(48)]
    args = TrainingArguments(output_dir=str(tmp_path), max_steps=7, per_device_train_batch_size=4,
                             gradient_accumulation_steps=3, use_cpu=True, report_to="none", save_strategy="no",
                             logging_strategy="no", disable_tqdm=True, dataloader_num_workers=0)
    Trainer(model=model, args=args, train_dataset=rows, optimizers=(opt, None)).train()
    assert opt.mask_update_steps == [3, 6]  # optimizer steps, not the 21 micro-batches
    assert all(opt.state[p]["step"] == 7 for p in opt.param_groups[0]["params"])
    assert torch.equal(model.get_input_embeddings().weight, emb0)


def _replay(tok, batches, kw, *, keep_buffers=False):
    """The plain loop on the batches a Trainer saw: backward, step, ``opt.zero_grad()`` per optimizer step.
    ``keep_buffers`` emulates the old bug: the sparse gradient buffers were cleared only by ``opt.zero_grad`` or a
    mask refresh, so under a Trainer (``model.zero_grad()``) each step used the sum of every gradient since then."""
    model = _tiny(tok)
    opt = SparseAdamW(model, **kw)
    carried: dict = {}
    for batch in batches:
        model(**batch).loss.backward()
        if keep_buffers:
            for p in opt.param_groups[0]["params"]:
                if p in carried:
                    opt.sparse_grad(p).add_(carried[p])
            carried = {p: opt.sparse_grad(p).clone() for p in opt.param_groups[0]["params"]}
        refreshes = len(opt.mask_update_steps)
        opt.step()
        if len(opt.mask_update_steps) > refreshes:
            carried = {}  # the old code dropped the buffers at a refresh (gathered with the old mask)
        opt.zero_grad()
    return model


def test_trainer_with_sparse_gradients_equals_the_plain_loop_step_for_step(tok, tmp_path):
    """transformers.Trainer clears gradients with ``model.zero_grad()``, which never reaches SparseAdamW's sparse
    buffers: ``step()`` must consume them, or every step adds the gradients of the steps before it."""
    from transformers import Trainer, TrainingArguments

    batches = []

    class Recording(Trainer):
        def compute_loss(self, model, inputs, *args, **kwargs):
            batches.append({k: v.detach().clone() for k, v in inputs.items()})
            return super().compute_loss(model, inputs, *args, **kwargs)

    kw = dict(lr=1e-2, filter_rank=2, budget_rank=1, update_interval=4)  # sparse_grads=True (the default)
    model = _tiny(tok)
    w0 = {n: p.detach().clone() for n, p in model.named_parameters()}
    opt = SparseAdamW(model, **kw)
    enc = encode_examples(tok, make_examples("add", 48, seed=2))
    rows = [{k: v[i] for k, v in enc.items()} for i in range(48)]
    args = TrainingArguments(output_dir=str(tmp_path), max_steps=6, per_device_train_batch_size=8,
                             lr_scheduler_type="constant", max_grad_norm=0.0, use_cpu=True, report_to="none",
                             save_strategy="no", logging_strategy="no", disable_tqdm=True, dataloader_num_workers=0)
    Recording(model=model, args=args, train_dataset=rows, optimizers=(opt, None)).train()
    assert len(batches) == 6 and opt.mask_update_steps == [4]
    assert opt.grad_buffer_bytes() == 0  # nothing outlives a step
    ref = _replay(tok, batches, kw)
    moved = 0.0
    for (n, p), (_, q) in zip(model.named_parameters(), ref.named_parameters()):
        torch.testing.assert_close(p, q, atol=1e-6, rtol=0.0, msg=n)
        moved = max(moved, float((p - w0[n]).abs().max()))
    assert moved > 1e-3  # the weights did train
    # negative control: buffers kept across steps (the old behaviour) give different weights
    old = _replay(tok, batches, kw, keep_buffers=True)
    gap = max(float((p - q).abs().max()) for p, q in zip(ref.parameters(), old.parameters()))
    assert gap > 1e-3, gap


def test_save_and_load_round_trip(tok, tmp_path):
    model = _tiny(tok)
    opt = SparseAdamW(model, lr=1e-2, filter_rank=2, budget_rank=1, update_interval=2)
    finetune(model, tok, make_examples("add", 16, seed=0), optimizer=opt, steps=2, batch_size=8)
    save_model(tmp_path / "m", model, tok)
    loaded, tok2 = load_model(str(tmp_path / "m"))
    assert type(tok2).__name__ == "CharTokenizerFast"
    for (n, p), (_, q) in zip(model.state_dict().items(), loaded.state_dict().items()):
        assert torch.equal(p, q), n


def test_missing_model_folder_is_a_clear_error():
    with pytest.raises(ModelLoadError, match="does not exist"):
        load_model("./no/such/model")


def test_baselines_share_the_budget(tok):
    cfg = MethodConfig(budget_rank=2, filter_rank=2, update_interval=2)
    counts, states = {}, {}
    for name in METHODS:
        su = setup_method(name, _tiny(tok), cfg)
        finetune(su.model, tok, make_examples("add", 16, seed=0), optimizer=su.optimizer, steps=1, batch_size=8)
        counts[name], states[name] = trainable_count(su), state_floats(su.optimizer)
    k = counts["lift"]
    assert counts["lift_static"] == counts["random"] == counts["magnitude"] == counts["lift_smallest"] == k
    assert counts["lora"] == k  # LoRA: r (m + n) per linear layer
    assert states["lift"] == 2 * k and states["full_ft"] == 2 * counts["full_ft"]


def test_static_shira_mask_is_the_principal_mask(tok):
    from lift.masks import principal_mask

    model = _tiny(tok)
    w = model.model.layers[0].self_attn.q_proj.weight.detach().clone()
    su = setup_method("lift_static", model, MethodConfig(budget_rank=2, filter_rank=3))
    layer = su.model.base_model.model.model.layers[0].self_attn.q_proj
    idx = layer.shira_indices["default"]
    got = torch.zeros_like(w, dtype=torch.bool)
    got[idx[0].long(), idx[1].long()] = True
    assert torch.equal(got, principal_mask(w, filter_rank=3, budget_rank=2))


def test_cli_help_and_bad_input(capsys):
    assert run_cli(main, ["--help"]).returncode == 0
    r = run_cli(main, ["train", "--update-interval", "0", "--model", "./nope"])
    assert r.returncode == 2 and "--update-interval" in r.stderr
    r = run_cli(main, ["train", "--model", "./nope"])
    assert r.returncode == 2 and "does not exist" in r.stderr


_BAD_ARGS = [
    (["train", "--lr", "inf"], "--lr"), (["train", "--lr", "nan"], "--lr"), (["train", "--lr", "-1"], "--lr"),
    (["train", "--betas", "0.9", "1.0"], "--betas"), (["train", "--eps", "inf"], "--eps"),
    (["train", "--weight-decay", "-0.1"], "--weight-decay"), (["train", "--density", "0"], "--density"),
    (["train", "--budget-rank", "0"], "--budget-rank"), (["train", "--filter-rank", "0"], "--filter-rank"),
    (["train", "--steps", "0"], "--steps"), (["train", "--grad-accum", "0"], "--grad-accum"),
    (["train", "--task", "nope"], "--task"), (["train", "--data", "no/such.jsonl"], "--data"),
    (["evaluate", "--n-eval", "0"], "--n-eval"), (["evaluate", "--task", "nope"], "--task"),
]


def test_cli_refuses_bad_arguments_before_importing_torch(tmp_path):
    """Every bad argument: exit 2, one ``lift: error:`` line naming the flag, nothing written, torch never imported
    (checked in a fresh interpreter: the arguments are validated before the ~4 s import)."""
    from icml25.testing import run_cli_fresh

    outs = [tmp_path / f"run{i}" for i in range(len(_BAD_ARGS))]
    argvs = [[*argv, "--out", str(o)] for (argv, _), o in zip(_BAD_ARGS, outs)]
    results, imported = run_cli_fresh("lift.cli", argvs)
    assert "torch" not in imported
    for (argv, name), r, o in zip(_BAD_ARGS, results, outs):
        lines = r.stderr.strip().splitlines()
        assert r.returncode == 2 and len(lines) == 1 and lines[0].startswith("lift: error: " + name), (argv, r.stderr)
        assert not o.exists()


def test_cli_train_then_evaluate_a_saved_model(tok, tmp_path):
    import json

    save_model(tmp_path / "base", _tiny(tok), tok)
    out = tmp_path / "run"
    r = run_cli(main, ["train", "--model", str(tmp_path / "base"), "--task", "add", "--steps", "3", "--batch-size", "8",
                       "--n-train", "16", "--update-interval", "2", "--filter-rank", "2", "--budget-rank", "1",
                       "--out", str(out), "--quiet", "--device", "cpu"])
    assert r.returncode == 0, r.stderr
    summary = json.loads((out / "train_summary.json").read_text())
    assert summary["mask_update_steps"] == [2] and summary["optimizer_state_floats"] == 2 * summary["trainable_entries"]
    assert (out / "model" / "config.json").exists() and (out / "metrics.jsonl").exists()
    r = run_cli(main, ["evaluate", "--model", str(out), "--task", "add", "--n-eval", "8", "--out", str(tmp_path / "ev"),
                       "--quiet", "--device", "cpu"])
    assert r.returncode == 0, r.stderr
    assert 0.0 <= json.loads((tmp_path / "ev" / "eval.json").read_text())["exact_match"] <= 1.0
