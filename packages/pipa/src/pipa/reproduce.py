"""Side-by-side reproduction of PIPA's claims on the tiny-LM test bed, every method tuned alike.

One prior p⁰ (tiny Llama trained on noisy scratchpad additions, stopped early so its samples mix right and wrong
answers). Per seed: K completions per prompt sampled from p⁰, labelled by answer and by step; then every method
starts from a fresh copy of p⁰ with the same steps, batch size, data and seed, in the paper's four data settings:

=================  ============================  =========================================================
data setting       baselines (trl)               ours (PIPA-M, PIPA-N)
=================  ============================  =========================================================
paired             DPO, IPO                      each pair = (x, y_w, c=1) + (x, y_l, c=0) (the default)
unpaired           KTO                           unpaired answer-level loss
step-paired        Step-DPO                      Step-DPO's pairs (prompt = x + right prefix), as above
step-unpaired      Step-KTO                      step-level loss over every labelled step
=================  ============================  =========================================================

Tuned alike (:func:`icml25.tuning.tune_alike`, one grid size for all): each trl baseline on ``lr × β`` with
``β ∈ {0.03, 0.1, 0.3, 1, 3}``, each PIPA variant on a log-spaced ``lr`` list with as many points; chosen by greedy
accuracy on *validation* prompts (:func:`pipa.data.heldout_prompts`) with the training data of the first seed and
the full step budget; a choice at a grid edge is extended once (``extend=1``) and flagged if still at the edge. To
fit the time budget, tuning runs in the two answer-level settings only and the step-level methods reuse the choice
of their answer-level counterpart (Step-DPO ← DPO, Step-KTO ← KTO, PIPA step-paired ← PIPA paired, PIPA
step-unpaired ← PIPA unpaired). Then the chosen settings run on every seed and are scored on the disjoint *test*
prompts.

Measured: held-out greedy accuracy (operands never seen in training), the value head's AUC (g) and the posterior's
AUC as predictors of correctness on held-out samples of p⁰, and wall time per optimizer step, whole and inside
``compute_loss`` (forward passes + loss; every trainer with gradient checkpointing and bf16 off, the same batch).
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import numpy as np
import torch
from icml25.claims import Claim, Report, mean_sd
from icml25.experiment import Section, run_experiments
from icml25.plots import grouped_bars
from icml25.seeding import seed_everything
from icml25.tuning import Selection, grid_size, selections_table, tune_alike

from pipa.baselines import quiet, run_timed, silence_libraries, train_dpo, train_kto
from pipa.config import BETAS, BUDGETS, Budget, budget  # noqa: F401  (re-exported)
from pipa.data import (
    heldout_prompts,
    label_samples,
    noisy_prior,
    noisy_samples,
    paired_rows,
    sample_completions,
    step_paired_rows,
    step_rows,
    step_unpaired_rows,
    unpaired_rows,
)
from pipa.evaluate import greedy_accuracy, value_auc
from pipa.trainer import PIPAConfig, PIPATrainer

PAPER = "+3–10% over DPO/IPO/KTO/Step-DPO/Step-KTO on GSM8K and MATH (abstract; 7B math models)"


METHODS = (
    # name, setting, kind
    ("DPO", "paired", "dpo"),
    ("IPO", "paired", "ipo"),
    ("PIPA-M (paired)", "paired", "pipa-M"),
    ("PIPA-N (paired)", "paired", "pipa-N"),
    ("KTO", "unpaired", "kto"),
    ("PIPA-M (unpaired)", "unpaired", "pipa-M"),
    ("PIPA-N (unpaired)", "unpaired", "pipa-N"),
    ("Step-DPO", "step-paired", "step-dpo"),
    ("PIPA-M (step-paired)", "step-paired", "pipa-M"),
    ("PIPA-N (step-paired)", "step-paired", "pipa-N"),
    ("Step-KTO", "step-unpaired", "step-kto"),
    ("PIPA-M (step)", "step-unpaired", "pipa-M"),
    ("PIPA-N (step)", "step-unpaired", "pipa-N"),
)
SETTINGS = ("paired", "unpaired", "step-paired", "step-unpaired")
# which data list each method trains on
_ROWS = {("dpo", "paired"): "paired", ("ipo", "paired"): "paired", ("kto", "unpaired"): "unpaired",
         ("step-dpo", "step-paired"): "step-paired", ("step-kto", "step-unpaired"): "step-unpaired",
         ("pipa", "paired"): "paired", ("pipa", "unpaired"): "unpaired", ("pipa", "step-paired"): "step-paired",
         ("pipa", "step-unpaired"): "step"}
# step-level methods reuse the hyper-parameters tuned for their answer-level counterpart
REUSE = {"Step-DPO": "DPO", "Step-KTO": "KTO", "PIPA-M (step-paired)": "PIPA-M (paired)",
         "PIPA-N (step-paired)": "PIPA-N (paired)", "PIPA-M (step)": "PIPA-M (unpaired)",
         "PIPA-N (step)": "PIPA-N (unpaired)"}


def rows_key(kind: str, setting: str) -> str:
    return _ROWS[("pipa" if kind.startswith("pipa") else kind, setting)]


def grids(b: Budget) -> dict[str, dict[str, list[float]]]:
    """The tuning grid of every method: ``lr × β`` for the trl baselines, an ``lr`` list of the same size for PIPA."""
    base = {"lr": list(b.baseline_lrs), "beta": list(b.betas)}
    return {name: ({"lr": list(b.pipa_lrs)} if kind.startswith("pipa") else base) for name, _, kind in METHODS}


def _train_pipa(prior: Any, tok: Any, rows: list[dict[str, Any]], *, variant: str, lr: float, b: Budget, seed: int,
                tmp: Path) -> tuple[Any, dict[str, Any]]:
    policy = copy.deepcopy(prior).train()
    ref = copy.deepcopy(prior).eval()
    args = PIPAConfig(output_dir=str(tmp), variant=variant, max_steps=b.steps, learning_rate=lr,
                      per_device_train_batch_size=b.batch_size, seed=seed, data_seed=seed, use_cpu=True,
                      logging_steps=10**9, lr_scheduler_type="constant", warmup_steps=0, weight_decay=0.0,
                      disable_tqdm=True, dataloader_num_workers=0, gradient_checkpointing=False, bf16=False,
                      fp16=False)
    trainer = quiet(PIPATrainer(model=policy, ref_model=ref, args=args, train_dataset=rows, processing_class=tok))
    info = run_timed(trainer, b.steps)
    return trainer.model, {**info, "ref": ref}


def _subsample(rows: list[dict[str, Any]], n: int, seed: int) -> list[dict[str, Any]]:
    """At most ``n`` rows (what ``steps × batch`` can use), drawn with ``seed``; the same rule for every method."""
    if len(rows) <= n:
        return rows
    idx = np.sort(np.random.default_rng(seed).choice(len(rows), size=n, replace=False))
    return [rows[i] for i in idx]


def train_method(kind: str, setting: str, params: dict[str, float], *, prior: Any, tok: Any,
                 data: dict[str, list[dict[str, Any]]], b: Budget, seed: int, tmp: Path) -> tuple[Any, Any, dict]:
    """Train one method from a fresh copy of p⁰; returns ``(policy LM, PIPA model or None, info)``."""
    seed_everything(seed)
    rows = _subsample(data[rows_key(kind, setting)], b.steps * b.batch_size, seed)
    if kind.startswith("pipa"):
        model, info = _train_pipa(prior, tok, rows, variant=kind[-1], lr=params["lr"], b=b, seed=seed, tmp=tmp)
        return model.lm, model, info
    policy = copy.deepcopy(prior).train()
    ref = copy.deepcopy(prior).eval()
    kw = dict(steps=b.steps, lr=params["lr"], beta=params["beta"], batch_size=b.batch_size, seed=seed)
    if kind in ("dpo", "ipo", "step-dpo"):
        info = train_dpo(policy, ref, tok, rows, loss_type="ipo" if kind == "ipo" else "sigmoid", **kw)
    else:
        info = train_kto(policy, ref, tok, rows, **kw)
    return policy, None, info


def make_data(prior: Any, tok: Any, prompts: list[str], *, b: Budget, seed: int) -> tuple[dict, dict]:
    if b.synthetic_samples:  # smoke: the 20-step prior cannot answer; draw labelled samples from the generator
        samples = noisy_samples(prompts, k=b.k, seed=seed)
    else:
        samples = label_samples(prompts, sample_completions(prior, tok, prompts, k=b.k, seed=seed))
    data = {
        "paired": paired_rows(samples, seed=seed),
        "unpaired": unpaired_rows(samples),
        "step": step_rows(samples),
        "step-paired": step_paired_rows(samples, seed=seed),
        "step-unpaired": step_unpaired_rows(samples),
    }
    flat = [x for row in samples for x in row]
    stats = {"seed": seed, "samples": len(flat), "sample_accuracy": float(np.mean([x.label for x in flat])),
             **{k: len(v) for k, v in data.items()}}
    return data, stats


def run(*, b: Budget, seed: int, out: Path, progress: bool = False) -> dict[str, Any]:
    """Tune every method on the validation prompts, then run the chosen settings on every seed."""
    import warnings

    from icml25.testbeds import lm
    from tqdm.auto import tqdm

    torch.set_num_threads(min(2, torch.get_num_threads()))
    silence_libraries()
    warnings.filterwarnings("ignore", category=FutureWarning)  # transformers' renaming notices, once per trainer
    prior, tok = noisy_prior(steps=b.prior_steps, seed=0)
    prior.eval()
    train_prompts_all = [e.prompt for e in lm.make_examples("add_scratchpad", 4 * b.n_prompts, seed=10_000, split="train")]
    val_prompts = heldout_prompts(b.val_prompts, part="validation", seed=40_000)
    eval_prompts = heldout_prompts(b.eval_prompts, part="test", seed=20_000)
    auc_prompts = heldout_prompts(b.auc_prompts, part="test", seed=30_000)
    if b.synthetic_samples:
        auc_samples_rows = noisy_samples(auc_prompts, k=4, seed=31_337)
    else:
        auc_samples_rows = label_samples(auc_prompts, sample_completions(prior, tok, auc_prompts, k=4, seed=31_337))
    auc_samples = [s for row in auc_samples_rows for s in row]
    tmp = out / "_tmp"
    tmp.mkdir(exist_ok=True)
    seeds = list(range(seed, seed + b.seeds))

    def seed_data(s: int) -> tuple[dict, dict]:
        rng = np.random.default_rng(s)
        prompts = list(rng.choice(train_prompts_all, size=b.n_prompts, replace=False))
        return make_data(prior, tok, prompts, b=b, seed=s)

    data_by_seed = {seeds[0]: seed_data(seeds[0])}
    G = grids(b)
    tuned = [m for m in METHODS if m[0] not in REUSE]
    n_trials = sum(grid_size(G[m[0]]) for m in tuned if grid_size(G[m[0]]) > 1)
    bar = tqdm(total=n_trials + b.seeds * len(METHODS), desc="pipa reproduce", disable=not progress or None)

    # ---- tuning: first seed's training data, validation prompts, the full step budget
    # every tuning run is kept: the chosen one *is* the first seed's test run (same data, seed and settings), so it
    # is scored on the test prompts instead of being trained a second time
    trained: dict[tuple[str, str], tuple[Any, Any, dict]] = {}

    def evaluator(name: str, kind: str, setting: str, points: int):
        def evaluate(params: dict[str, float]) -> float:
            if points == 1:  # a one-point grid (smoke) has nothing to choose: no validation run
                return 0.0
            out = train_method(kind, setting, params, prior=prior, tok=tok, data=data_by_seed[seeds[0]][0],
                               b=b, seed=seeds[0], tmp=tmp)
            trained[(name, repr(sorted(params.items())))] = out
            bar.update(1)
            return greedy_accuracy(out[0], tok, val_prompts)
        return evaluate

    selections: dict[str, Selection] = tune_alike(
        {name: (evaluator(name, kind, setting, grid_size(G[name])), G[name]) for name, setting, kind in tuned},
        extend=b.extend)
    for name, src in REUSE.items():
        selections[name] = selections[src]
    chosen = {(name, repr(sorted(sel.params.items()))) for name, sel in selections.items()}
    trained = {k: v for k, v in trained.items() if k in chosen}

    # ---- test: chosen settings on every seed, scored on the test prompts
    results: dict[str, dict[str, list[float]]] = {m[0]: {} for m in METHODS}
    prior_acc = greedy_accuracy(prior, tok, eval_prompts)
    data_stats = []
    for s in seeds:
        if s not in data_by_seed:
            data_by_seed = {s: seed_data(s)}  # keep one seed's data in memory
        data, stats = data_by_seed[s]
        data_stats.append(stats)
        for name, setting, kind in METHODS:
            key = (name, repr(sorted(selections[name].params.items())))
            if s == seeds[0] and key in trained:
                policy, model, info = trained.pop(key)
            else:
                policy, model, info = train_method(kind, setting, selections[name].params, prior=prior, tok=tok,
                                                   data=data, b=b, seed=s, tmp=tmp)
            if model is not None:
                level = "step" if setting.startswith("step") else "answer"
                va = value_auc(model, info["ref"], tok, auc_samples, level=level, variant=kind[-1])
                results[name].setdefault("g_auc", []).append(va["g_auc"])
                results[name].setdefault("posterior_auc", []).append(va["posterior_auc"])
            results[name].setdefault("accuracy", []).append(greedy_accuracy(policy, tok, eval_prompts))
            results[name].setdefault("seconds_per_step", []).append(info["seconds_per_step"])
            results[name].setdefault("loss_seconds_per_step", []).append(info["loss_seconds_per_step"])
            bar.update(1)
    bar.close()
    return {"results": results, "prior_accuracy": prior_acc, "data": data_stats, "selections": selections,
            "n_val": len(val_prompts), "n_test": len(eval_prompts)}


def _short(x: float) -> str:
    return f"{x:.3g}"


# the three sections share one training run (tuning + every seed): it is computed once per (budget, seeds, out)
_RUNS: dict[tuple[Budget, tuple[int, ...], str], dict[str, Any]] = {}


def _run(b: Budget, seeds: list[int], out: Path) -> dict[str, Any]:
    key = (b, tuple(seeds), str(out))
    if key not in _RUNS:
        _RUNS.clear()
        assert seeds == list(range(seeds[0], seeds[0] + b.seeds)), seeds
        _RUNS[key] = run(b=b, seed=seeds[0], out=Path(out), progress=True)
    return _RUNS[key]


def _snote(sel: dict[str, Selection], name: str) -> str:
    src = REUSE.get(name)
    return f"{name} reuses {src}'s choice ({sel[name].note()})" if src else sel[name].note()


def accuracy(b: Budget, seeds: list[int], out: Path) -> Section:
    """PIPA-M/N vs the tuned baselines in the four settings, and vs the prior they start from."""
    res = _run(b, seeds, out)
    R, sel, prior = res["results"], res["selections"], res["prior_accuracy"]
    sec = Section("accuracy")
    acc = lambda m: R[m]["accuracy"]  # noqa: E731
    pairs = [
        ("PIPA-M (paired)", "DPO", "paired answer-level"),
        ("PIPA-N (paired)", "DPO", "paired answer-level"),
        ("PIPA-M (paired)", "IPO", "paired answer-level"),
        ("PIPA-N (paired)", "IPO", "paired answer-level"),
        ("PIPA-M (unpaired)", "KTO", "unpaired answer-level"),
        ("PIPA-N (unpaired)", "KTO", "unpaired answer-level"),
        ("PIPA-M (step-paired)", "Step-DPO", "paired step-level"),
        ("PIPA-N (step-paired)", "Step-DPO", "paired step-level"),
        ("PIPA-M (step)", "Step-KTO", "unpaired step-level"),
        ("PIPA-N (step)", "Step-KTO", "unpaired step-level"),
    ]
    for ours, base, setting in pairs:
        sec.add(Claim.compare(
            claim=f"{ours} beats tuned {base} ({setting})", metric="held-out greedy accuracy (test prompts)",
            ours=acc(ours), baseline=acc(base), baseline_name=base, paper=PAPER, kind="paper", paired=True,
            note=f"{_snote(sel, ours)}; {_snote(sel, base)}; same seeds and data (paired t-test)"))
    for name, _, kind in METHODS:
        if not kind.startswith("pipa"):
            continue
        sec.add(Claim.threshold(
            claim=f"{name} improves on the prior p⁰ it starts from", metric="held-out greedy accuracy (test prompts)",
            ours=acc(name), threshold=prior, kind="paper",
            paper="alignment improves the SFT model (GSM8K/MATH)",
            note=f"threshold = p⁰'s accuracy on the same test prompts (p⁰ is deterministic for its seed); "
                 f"{_snote(sel, name)}"))
    cols, rows = selections_table(sel)
    rows = [[f"{r[0]} (reuses {REUSE[r[0]]})" if r[0] in REUSE else r[0], *r[1:]] for r in rows]
    sec.table("hyper-parameters chosen on the validation prompts", cols, rows)
    rows = [["prior p⁰ (no alignment)", "—", "—", round(prior, 4), 0.0, None, None, None, None]]
    for name, setting, _ in METHODS:
        m, sd = mean_sd(R[name]["accuracy"])
        sp, _ = mean_sd(R[name]["seconds_per_step"])
        lsp, _ = mean_sd(R[name]["loss_seconds_per_step"])
        g = round(mean_sd(R[name]["g_auc"])[0], 4) if "g_auc" in R[name] else None
        post = round(mean_sd(R[name]["posterior_auc"])[0], 4) if "posterior_auc" in R[name] else None
        chosen = ", ".join(f"{k}={_short(v)}" for k, v in sel[name].params.items())
        rows.append([name, setting, chosen, round(m, 4), round(sd, 4), round(sp * 1000, 1), round(lsp * 1000, 1),
                     g, post])
    sec.table("all methods (test prompts, mean over seeds)",
              ["method", "data", "chosen", "accuracy", "sd", "ms/step", "ms/step in compute_loss", "g AUC",
               "posterior AUC"], rows)
    sec.table("data", list(res["data"][0].keys()), [list(d.values()) for d in res["data"]])
    fig = grouped_bars(
        {setting: {name: R[name]["accuracy"] for name, st, _ in METHODS if st == setting}
         for setting in SETTINGS},
        Path(out) / "accuracy.png", ylabel="held-out greedy accuracy", title="PIPA vs tuned trl baselines (tiny LM)")
    sec.figures.append(fig.name)
    sec.notes.append(f"prior p⁰ held-out greedy accuracy (test prompts): {prior:.3f}")
    sec.notes.append(
        f"tuning: every method on a grid of {sel['DPO'].grid_size} points "
        f"(baselines lr {list(b.baseline_lrs)} × β {list(b.betas)}; PIPA lr {list(b.pipa_lrs)}; extend={b.extend}), "
        f"first seed's training data, {b.steps} steps, scored on {res['n_val']} validation prompts disjoint from the "
        f"{res['n_test']} test prompts; tuned in the answer-level settings, reused at step level "
        f"({', '.join(f'{k} ← {v}' for k, v in REUSE.items())})")
    sec.notes.append(f"budget: {b}")
    return sec


def value_heads(b: Budget, seeds: list[int], out: Path) -> Section:
    """The value head g and the posterior p(c=1|x,y) as correctness predictors (AUC vs chance)."""
    R = _run(b, seeds, out)["results"]
    sec = Section("value heads")
    for name in ("PIPA-N (step)", "PIPA-M (step)", "PIPA-N (unpaired)", "PIPA-N (paired)"):
        sec.add(Claim.threshold(
            claim=f"{name}: value head g predicts correctness better than chance",
            metric="ROC-AUC of g on held-out p⁰ samples", ours=R[name]["g_auc"], threshold=0.5, kind="paper",
            paper="token-level credit assignment from the value head (introduction)",
            note="step-level: g read before each step; answer-level: g read at the last prompt token"))
        sec.add(Claim.threshold(
            claim=f"{name}: posterior p(c=1|x,y) predicts correctness better than chance",
            metric="ROC-AUC of the posterior on held-out p⁰ samples", ours=R[name]["posterior_auc"], threshold=0.5,
            kind="paper", paper="PIPA estimates p(c=1|x,y) by MLE (method)"))
    return sec


def cost(b: Budget, seeds: list[int], out: Path) -> Section:
    """Time per step (whole trainer step and inside compute_loss) vs trl's DPO and KTO, paired by seed."""
    R = _run(b, seeds, out)["results"]
    sec = Section("cost")
    opts = ("gradient checkpointing and bf16 off in every trainer; same batch size and data; timed alone under the "
            "CPU lock")
    for ours, base in (("PIPA-N (paired)", "DPO"), ("PIPA-M (paired)", "DPO"), ("PIPA-N (unpaired)", "KTO")):
        for key, what in (("seconds_per_step", "whole trainer step (data collation, forward of policy and prior, "
                                               "loss, backward, optimizer)"),
                          ("loss_seconds_per_step", "inside compute_loss only (forward of policy and prior + loss)")):
            o, bb = R[ours][key], R[base][key]
            label = "time per step" if key == "seconds_per_step" else "loss-computation time per step"
            sec.add(Claim.compare(
                claim=f"{ours}: {label} no more than trl's {base} (within 5%)", metric=f"seconds ({what.split(' (')[0]})",
                ours=o, baseline=bb, baseline_name=f"{base} (trl)", higher_is_better=False,
                margin=-0.05 * float(np.mean(bb)), kind="target", paired=True,
                paper="no additional training or computational cost (abstract)", note=f"{what}; {opts}"))
    return sec


EXPERIMENTS = [accuracy, value_heads, cost]


def reproduce(*, quick: bool, smoke: bool, out: Path, seed: int) -> Report:
    import shutil

    try:
        return run_experiments("pipa", EXPERIMENTS, BUDGETS, quick=quick, smoke=smoke, out=Path(out), seed=seed)
    finally:
        _RUNS.clear()
        shutil.rmtree(Path(out) / "_tmp", ignore_errors=True)
