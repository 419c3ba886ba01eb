"""The one training run every section of ``pipa reproduce`` reads: tuning, then every method on every seed.

Per seed: K completions per training prompt sampled from p⁰ and labelled; every method starts from a fresh copy of
p⁰ and trains over **all** the rows of its setting (at least one epoch; :mod:`pipa.plateau`) until its own objective
plateaus on validation rows (sampled from p⁰ on the validation prompts), with the best validation checkpoint kept.
Its own objective is then read on test rows (sampled from p⁰ on test prompts) for the chosen checkpoint and for the
prior (step 0): the competence gate. Greedy accuracy is measured on held-out test prompts; AUCs on held-out samples.
"""

from __future__ import annotations

import copy
import math
from pathlib import Path
from typing import Any

import numpy as np
import torch
from icml25.seeding import seed_everything
from icml25.tuning import Selection, grid_size, tune_alike

from pipa.baselines import quiet, silence_libraries, train_dpo, train_kto
from pipa.config import Budget
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
from pipa.evaluate import greedy_accuracy, implicit_reward_auc, value_auc
from pipa.plateau import PlateauPlan, fit_to_plateau, plan_for
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
PIPA_RUNS = tuple(m[0] for m in METHODS if m[2].startswith("pipa"))
# which data list each method trains on
_ROWS = {("dpo", "paired"): "paired", ("ipo", "paired"): "paired", ("kto", "unpaired"): "unpaired",
         ("step-dpo", "step-paired"): "step-paired", ("step-kto", "step-unpaired"): "step-unpaired",
         ("pipa", "paired"): "paired", ("pipa", "unpaired"): "unpaired", ("pipa", "step-paired"): "step-paired",
         ("pipa", "step-unpaired"): "step"}
# step-level methods reuse the hyper-parameters tuned for their answer-level counterpart
REUSE = {"Step-DPO": "DPO", "Step-KTO": "KTO", "PIPA-M (step-paired)": "PIPA-M (paired)",
         "PIPA-N (step-paired)": "PIPA-N (paired)", "PIPA-M (step)": "PIPA-M (unpaired)",
         "PIPA-N (step)": "PIPA-N (unpaired)"}


def reuse(b: Budget) -> dict[str, str]:
    """Which method reuses which counterpart's tuned choice under ``b`` (none when ``b.tune_step_levels``)."""
    return {} if b.tune_step_levels else dict(REUSE)


def tuned_methods(b: Budget) -> list[tuple[str, str, str]]:
    """The methods ``b`` tunes on their own grid (the rest take their counterpart's choice, :func:`reuse`)."""
    reused = reuse(b)
    return [m for m in METHODS if m[0] not in reused]


OBJECTIVE = {"dpo": "DPO sigmoid loss", "ipo": "IPO loss", "kto": "KTO loss", "step-dpo": "DPO sigmoid loss",
             "step-kto": "KTO loss", "pipa-M": "PIPA-M loss", "pipa-N": "PIPA-N loss"}


def rows_key(kind: str, setting: str) -> str:
    return _ROWS[("pipa" if kind.startswith("pipa") else kind, setting)]


def kind_of(name: str) -> str:
    return next(k for n, _, k in METHODS if n == name)


def gate_name(name: str) -> str:
    """The claim text of ``name``'s competence gate."""
    return (f"Gate: {name} trains over all its rows (≥ 1 epoch) to a validation plateau and beats the prior p⁰ "
            "on its own objective")


def grids(b: Budget) -> dict[str, dict[str, list[float]]]:
    """The tuning grid of every method: ``lr × β`` for the trl baselines, an ``lr`` list of the same size for PIPA."""
    base = {"lr": list(b.baseline_lrs), "beta": list(b.betas)}
    return {name: ({"lr": list(b.pipa_lrs)} if kind.startswith("pipa") else base) for name, _, kind in METHODS}


def _subsample(rows: list[dict[str, Any]], n: int, seed: int) -> list[dict[str, Any]]:
    """At most ``n`` rows drawn with ``seed`` (validation and test rows only; training uses every row)."""
    if len(rows) <= n:
        return rows
    idx = np.sort(np.random.default_rng(seed).choice(len(rows), size=n, replace=False))
    return [rows[i] for i in idx]


def setting_rows(samples: list[list[Any]], *, seed: int) -> dict[str, list[dict[str, Any]]]:
    """Every setting's rows from labelled samples (see :mod:`pipa.data`)."""
    return {
        "paired": paired_rows(samples, seed=seed),
        "unpaired": unpaired_rows(samples),
        "step": step_rows(samples),
        "step-paired": step_paired_rows(samples, seed=seed),
        "step-unpaired": step_unpaired_rows(samples),
    }


def plan(b: Budget, n_rows: int) -> PlateauPlan:
    return plan_for(n_rows, batch_size=b.batch_size, max_epochs=b.max_epochs, evals_per_epoch=b.evals_per_epoch,
                    patience=b.patience, rel_delta=b.rel_delta, max_steps_cap=b.max_steps)


def _train_pipa(prior: Any, tok: Any, rows: list[dict[str, Any]], evals: dict[str, list], *, variant: str,
                lr: float, b: Budget, seed: int, tmp: Path, p: PlateauPlan) -> tuple[Any, dict[str, Any]]:
    policy = copy.deepcopy(prior).train()
    ref = copy.deepcopy(prior).eval()
    args = PIPAConfig(output_dir=str(tmp), variant=variant, max_steps=p.max_steps, learning_rate=lr,
                      per_device_train_batch_size=b.batch_size, per_device_eval_batch_size=64, seed=seed,
                      data_seed=seed, use_cpu=True, logging_steps=10**9, lr_scheduler_type="constant",
                      warmup_steps=0, weight_decay=0.0, disable_tqdm=True, dataloader_num_workers=0,
                      gradient_checkpointing=False, bf16=False, fp16=False, eval_strategy="steps",
                      eval_steps=p.eval_every)
    trainer = quiet(PIPATrainer(model=policy, ref_model=ref, args=args, train_dataset=rows, eval_dataset=evals,
                                processing_class=tok))
    info = fit_to_plateau(trainer, p)
    return trainer.model, {**info, "ref": ref}


def train_method(kind: str, setting: str, params: dict[str, float], *, prior: Any, tok: Any, data: dict[str, list],
                 evals: dict[str, dict[str, list]], b: Budget, seed: int, tmp: Path) -> tuple[Any, Any, dict]:
    """Train one method from a fresh copy of p⁰ over all its rows to a plateau; ``(policy LM, PIPA model or None,
    info)`` with the best validation checkpoint loaded."""
    seed_everything(seed)
    key = rows_key(kind, setting)
    rows, ev = data[key], evals[key]
    p = plan(b, len(rows))
    if kind.startswith("pipa"):
        model, info = _train_pipa(prior, tok, rows, ev, variant=kind[-1], lr=params["lr"], b=b, seed=seed, tmp=tmp,
                                  p=p)
        return model.lm, model, info
    policy = copy.deepcopy(prior).train()
    ref = copy.deepcopy(prior).eval()
    kw = dict(steps=p.max_steps, lr=params["lr"], beta=params["beta"], batch_size=b.batch_size, seed=seed,
              eval_rows=ev, plan=p)
    if kind in ("dpo", "ipo", "step-dpo"):
        info = train_dpo(policy, ref, tok, rows, loss_type="ipo" if kind == "ipo" else "sigmoid", **kw)
    else:
        info = train_kto(policy, ref, tok, rows, **kw)
    policy.eval()
    return policy, None, {**info, "ref": ref}


def _samples(prior: Any, tok: Any, prompts: list[str], *, b: Budget, seed: int) -> list[list[Any]]:
    if b.synthetic_samples:  # smoke: the 20-step prior cannot answer; draw labelled samples from the generator
        return noisy_samples(prompts, k=b.k, seed=seed)
    return label_samples(prompts, sample_completions(prior, tok, prompts, k=b.k, seed=seed))


def run(*, b: Budget, seed: int, out: Path, progress: bool = False) -> dict[str, Any]:
    """Tune every method on the validation prompts, then run the chosen settings on every seed."""
    import warnings

    from icml25.testbeds import lm
    from tqdm.auto import tqdm

    torch.set_num_threads(min(2, torch.get_num_threads()))
    silence_libraries()
    warnings.filterwarnings("ignore", category=FutureWarning)  # transformers' renaming notices, once per trainer
    warnings.filterwarnings("ignore", category=UserWarning)
    prior, tok = noisy_prior(steps=b.prior_steps, seed=0)
    prior.eval()
    train_prompts_all = [e.prompt for e in lm.make_examples("add_scratchpad", 4 * b.n_prompts, seed=10_000, split="train")]
    val_prompts = heldout_prompts(b.val_prompts, part="validation", seed=40_000)
    eval_prompts = heldout_prompts(b.eval_prompts, part="test", seed=20_000)
    auc_prompts = heldout_prompts(b.auc_prompts, part="test", seed=30_000)
    auc_rows = _samples(prior, tok, auc_prompts, b=b, seed=31_337)
    auc_samples = [s for row in auc_rows for s in row]
    # the rows every method's own objective is scored on: validation (plateau, early stopping) and test (gate)
    val_sets = setting_rows(_samples(prior, tok, val_prompts, b=b, seed=41_000), seed=41_000)
    test_sets = setting_rows(auc_rows, seed=31_337)
    evals = {k: {"val": _subsample(val_sets[k], b.val_rows, 1), "test": _subsample(test_sets[k], b.val_rows, 2)}
             for k in val_sets}
    tmp = out / "_tmp"
    tmp.mkdir(exist_ok=True)
    seeds = list(range(seed, seed + b.seeds))

    def seed_data(s: int) -> tuple[dict, dict]:
        rng = np.random.default_rng(s)
        prompts = list(rng.choice(train_prompts_all, size=b.n_prompts, replace=False))
        samples = _samples(prior, tok, prompts, b=b, seed=s)
        data = setting_rows(samples, seed=s)
        flat = [x for row in samples for x in row]
        stats = {"seed": s, "samples": len(flat), "sample_accuracy": float(np.mean([x.label for x in flat])),
                 **{k: len(v) for k, v in data.items()}}
        return data, stats

    data_by_seed = {seeds[0]: seed_data(seeds[0])}
    G = grids(b)
    reused, tuned = reuse(b), tuned_methods(b)
    n_trials = sum(grid_size(G[m[0]]) for m in tuned if grid_size(G[m[0]]) > 1)
    bar = tqdm(total=n_trials + b.seeds * len(METHODS), desc="pipa reproduce", disable=not progress or None)

    # ---- tuning: first seed's training data, validation prompts; each trial trains to its plateau
    # every tuning run is kept: the chosen one *is* the first seed's test run (same data, seed and settings)
    trained: dict[tuple[str, str], tuple[Any, Any, dict]] = {}

    def evaluator(name: str, kind: str, setting: str, points: int):
        def evaluate(params: dict[str, float]) -> float:
            if points == 1:  # a one-point grid has nothing to choose: no validation run
                return 0.0
            res = train_method(kind, setting, params, prior=prior, tok=tok, data=data_by_seed[seeds[0]][0],
                               evals=evals, b=b, seed=seeds[0], tmp=tmp)
            trained[(name, repr(sorted(params.items())))] = res
            bar.update(1)
            return greedy_accuracy(res[0], tok, val_prompts)
        return evaluate

    selections: dict[str, Selection] = tune_alike(
        {name: (evaluator(name, kind, setting, grid_size(G[name])), G[name]) for name, setting, kind in tuned},
        extend=b.extend)
    for name, src in reused.items():
        selections[name] = selections[src]
    chosen = {(name, repr(sorted(sel.params.items()))) for name, sel in selections.items()}
    trained = {k: v for k, v in trained.items() if k in chosen}

    # ---- test: chosen settings on every seed
    R: dict[str, dict[str, list]] = {m[0]: {} for m in METHODS}
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
                                                   data=data, evals=evals, b=b, seed=s, tmp=tmp)
            r = R[name]
            level = "step" if setting.startswith("step") else "answer"
            if model is not None:
                va = value_auc(model, info["ref"], tok, auc_samples, level=level, variant=kind[-1])
                r.setdefault("g_auc", []).append(va["g_auc"])
                r.setdefault("posterior_auc", []).append(va["posterior_auc"])
            elif kind in ("dpo", "step-dpo"):  # DPO's implicit reward β·(log π − log p⁰) as a correctness score
                r.setdefault("reward_auc", []).append(
                    implicit_reward_auc(policy, info["ref"], tok, auc_samples, level=level))
            r.setdefault("accuracy", []).append(greedy_accuracy(policy, tok, eval_prompts))
            for k in ("seconds_per_step", "loss_seconds_per_step", "test_best", "test_prior", "val_best",
                      "val_prior", "steps", "epochs", "best_step"):
                r.setdefault(k, []).append(float(info[k]))
            r.setdefault("stopped_by", []).append(info["stopped_by"])
            r.setdefault("curves", []).append(info["curve"])
            r.setdefault("rows", []).append(len(data[rows_key(kind, setting)]))
            bar.update(1)
    bar.close()
    return {"results": R, "prior_accuracy": prior_acc, "data": data_stats, "selections": selections,
            "n_val": len(val_prompts), "n_test": len(eval_prompts), "n_auc": len(auc_samples),
            "eval_rows": {k: {kk: len(vv) for kk, vv in v.items()} for k, v in evals.items()}}


# the sections share one training run (tuning + every seed): computed once per (budget, seeds, out)
_RUNS: dict[tuple[Budget, tuple[int, ...], str], dict[str, Any]] = {}


def shared_run(b: Budget, seeds: list[int], out: Path) -> dict[str, Any]:
    key = (b, tuple(seeds), str(out))
    if key not in _RUNS:
        _RUNS.clear()
        assert seeds == list(range(seeds[0], seeds[0] + b.seeds)), seeds
        _RUNS[key] = run(b=b, seed=seeds[0], out=Path(out), progress=True)
    return _RUNS[key]


def snote(sel: dict[str, Selection], name: str, reused: dict[str, str]) -> str:
    src = reused.get(name)
    return f"{name} reuses {src}'s choice ({sel[name].note()})" if src else sel[name].note()


def short(x: float) -> str:
    return f"{x:.3g}" if isinstance(x, float) and math.isfinite(x) else str(x)
