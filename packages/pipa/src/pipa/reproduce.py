"""Side-by-side reproduction of PIPA's claims on the tiny-LM test bed.

One prior p⁰ (tiny Llama trained on noisy scratchpad additions, stopped early so its samples mix right and wrong
answers). Per seed: K completions per prompt sampled from p⁰, labelled by answer and by step; then every method
starts from a fresh copy of p⁰ with the same steps, learning rate, batch size and seed:

==============  ====================  =======================================
data setting    baseline (trl)        ours
==============  ====================  =======================================
paired          DPO (β = 0.1)         PIPA-M, PIPA-N (paired forms)
unpaired        KTO (β = 0.1)         PIPA-M, PIPA-N
step-level      Step-DPO, Step-KTO    PIPA-M, PIPA-N (step-level)
==============  ====================  =======================================

Measured: held-out greedy accuracy (operands never seen in training), the value head's AUC (g) and the posterior's
AUC as predictors of correctness on held-out samples of p⁰, and wall time per optimizer step.
"""

from __future__ import annotations

import copy
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from icml25.claims import Claim, Report, mean_sd
from icml25.plots import grouped_bars
from icml25.seeding import seed_everything

from pipa.baselines import quiet, silence_libraries, train_dpo, train_kto
from pipa.data import (
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

PAPER = "+3–10% over DPO/KTO/Step-DPO/Step-KTO on GSM8K and MATH (abstract; Qwen/DeepSeek 7B scale)"


@dataclass(frozen=True)
class Budget:
    prior_steps: int
    n_prompts: int
    k: int
    steps: int
    batch_size: int
    lr: float
    eval_prompts: int
    auc_prompts: int
    seeds: int
    synthetic_samples: bool = False


def budget(*, quick: bool, smoke: bool) -> Budget:
    if smoke:
        return Budget(prior_steps=20, n_prompts=12, k=4, steps=2, batch_size=4, lr=1e-4, eval_prompts=16,
                      auc_prompts=8, seeds=1, synthetic_samples=True)
    if quick:
        return Budget(prior_steps=200, n_prompts=200, k=4, steps=40, batch_size=16, lr=2e-5, eval_prompts=200,
                      auc_prompts=100, seeds=1)
    return Budget(prior_steps=200, n_prompts=400, k=4, steps=80, batch_size=16, lr=2e-5, eval_prompts=400,
                  auc_prompts=150, seeds=3)


METHODS = (
    # name, setting, kind
    ("DPO", "paired", "dpo"),
    ("PIPA-M (paired)", "paired", "pipa-M"),
    ("PIPA-N (paired)", "paired", "pipa-N"),
    ("KTO", "unpaired", "kto"),
    ("PIPA-M (unpaired)", "unpaired", "pipa-M"),
    ("PIPA-N (unpaired)", "unpaired", "pipa-N"),
    ("Step-DPO", "step", "step-dpo"),
    ("Step-KTO", "step", "step-kto"),
    ("PIPA-M (step)", "step", "pipa-M"),
    ("PIPA-N (step)", "step", "pipa-N"),
)


def _train_pipa(prior: Any, tok: Any, rows: list[dict[str, Any]], *, variant: str, b: Budget, seed: int,
                tmp: Path) -> tuple[Any, dict[str, float]]:
    policy = copy.deepcopy(prior).train()
    ref = copy.deepcopy(prior).eval()
    args = PIPAConfig(output_dir=str(tmp), variant=variant, max_steps=b.steps, learning_rate=b.lr,
                      per_device_train_batch_size=b.batch_size, seed=seed, data_seed=seed, use_cpu=True,
                      logging_steps=10**9, lr_scheduler_type="constant", warmup_steps=0, weight_decay=0.0,
                      disable_tqdm=True, dataloader_num_workers=0)
    trainer = quiet(PIPATrainer(model=policy, ref_model=ref, args=args, train_dataset=rows, processing_class=tok))
    t0 = time.perf_counter()
    trainer.train()
    sec = time.perf_counter() - t0
    return trainer.model, {"seconds_per_step": sec / max(b.steps, 1), "ref": ref}


def run(*, b: Budget, seed: int, out: Path, progress: bool = False) -> dict[str, Any]:
    """Every method on every seed; returns per-method lists of metrics."""
    from icml25.testbeds import lm

    torch.set_num_threads(min(2, torch.get_num_threads()))
    silence_libraries()
    prior, tok = noisy_prior(steps=b.prior_steps, seed=0)
    prior.eval()
    train_prompts_all = [e.prompt for e in lm.make_examples("add_scratchpad", 4 * b.n_prompts, seed=10_000, split="train")]
    eval_prompts = [e.prompt for e in lm.make_examples("add_scratchpad", b.eval_prompts, seed=20_000, split="test")]
    auc_prompts = [e.prompt for e in lm.make_examples("add_scratchpad", b.auc_prompts, seed=30_000, split="test")]
    if b.synthetic_samples:
        auc_samples_rows = noisy_samples(auc_prompts, k=4, seed=31_337)
    else:
        auc_samples_rows = label_samples(auc_prompts, sample_completions(prior, tok, auc_prompts, k=4, seed=31_337))
    auc_samples = [s for row in auc_samples_rows for s in row]
    results: dict[str, dict[str, list[float]]] = {m[0]: {} for m in METHODS}
    prior_acc = greedy_accuracy(prior, tok, eval_prompts)
    data_stats = []
    tmp = out / "_tmp"
    tmp.mkdir(exist_ok=True)
    from tqdm.auto import tqdm

    bar = tqdm(total=b.seeds * len(METHODS), desc="pipa reproduce", disable=not progress or None)
    for s in range(seed, seed + b.seeds):
        seed_everything(s)
        rng = np.random.default_rng(s)
        prompts = list(rng.choice(train_prompts_all, size=b.n_prompts, replace=False))
        if b.synthetic_samples:  # smoke: the 20-step prior cannot answer; draw labelled samples from the generator
            samples = noisy_samples(prompts, k=b.k, seed=s)
        else:
            samples = label_samples(prompts, sample_completions(prior, tok, prompts, k=b.k, seed=s))
        data = {
            "paired": paired_rows(samples, seed=s),
            "unpaired": unpaired_rows(samples),
            "step": step_rows(samples),
            "step-paired": step_paired_rows(samples, seed=s),
            "step-unpaired": step_unpaired_rows(samples),
        }
        flat = [x for row in samples for x in row]
        data_stats.append({"seed": s, "samples": len(flat), "sample_accuracy": float(np.mean([x.label for x in flat])),
                           **{k: len(v) for k, v in data.items()}})
        for name, setting, kind in METHODS:
            seed_everything(s)
            ref = None
            if kind.startswith("pipa"):
                rows = data[setting]
                model, info = _train_pipa(prior, tok, rows, variant=kind[-1], b=b, seed=s, tmp=tmp)
                ref = info["ref"]
                policy = model.lm
                level = "step" if setting == "step" else "answer"
                va = value_auc(model, ref, tok, auc_samples, level=level, variant=kind[-1])
                results[name].setdefault("g_auc", []).append(va["g_auc"])
                results[name].setdefault("posterior_auc", []).append(va["posterior_auc"])
            else:
                policy = copy.deepcopy(prior).train()
                ref = copy.deepcopy(prior).eval()
                rows = {"dpo": data["paired"], "kto": data["unpaired"], "step-dpo": data["step-paired"],
                        "step-kto": data["step-unpaired"]}[kind]
                fn = train_dpo if kind in ("dpo", "step-dpo") else train_kto
                info = fn(policy, ref, tok, rows, steps=b.steps, lr=b.lr, batch_size=b.batch_size, seed=s)
            results[name].setdefault("accuracy", []).append(greedy_accuracy(policy, tok, eval_prompts))
            results[name].setdefault("seconds_per_step", []).append(info["seconds_per_step"])
            bar.update(1)
    bar.close()
    return {"results": results, "prior_accuracy": prior_acc, "data": data_stats}


def reproduce(*, quick: bool, smoke: bool, out: Path, seed: int) -> Report:
    b = budget(quick=quick, smoke=smoke)
    res = run(b=b, seed=seed, out=Path(out), progress=True)
    import shutil

    shutil.rmtree(Path(out) / "_tmp", ignore_errors=True)
    R = res["results"]
    seeds = list(range(seed, seed + b.seeds))
    report = Report(method="pipa", seeds=seeds)
    acc = lambda m: R[m]["accuracy"]  # noqa: E731
    pairs = [
        ("PIPA-M (paired)", "DPO", "paired answer-level"),
        ("PIPA-N (paired)", "DPO", "paired answer-level"),
        ("PIPA-M (unpaired)", "KTO", "unpaired answer-level"),
        ("PIPA-N (unpaired)", "KTO", "unpaired answer-level"),
        ("PIPA-M (step)", "Step-DPO", "step-level"),
        ("PIPA-N (step)", "Step-DPO", "step-level"),
        ("PIPA-M (step)", "Step-KTO", "step-level"),
        ("PIPA-N (step)", "Step-KTO", "step-level"),
    ]
    for ours, base, setting in pairs:
        report.add(Claim.compare(
            claim=f"{ours} beats {base} ({setting})", metric="held-out greedy accuracy", ours=acc(ours),
            baseline=acc(base), baseline_name=base, paper=PAPER,
            note=f"prior p⁰ accuracy {res['prior_accuracy']:.3f}"))
    prior = res["prior_accuracy"]
    for name in ("PIPA-N (paired)", "PIPA-N (unpaired)", "PIPA-M (step)"):
        report.add(Claim.compare(
            claim=f"{name} improves on the prior p⁰ it starts from", metric="held-out greedy accuracy",
            ours=acc(name), baseline=[prior] * len(acc(name)), baseline_name="prior p⁰ (no alignment)",
            paper="alignment improves the SFT model (GSM8K/MATH)"))
    for name in ("PIPA-N (step)", "PIPA-M (step)", "PIPA-N (unpaired)"):
        report.add(Claim.compare(
            claim=f"{name}: value head g predicts correctness (AUC > 0.55)", metric="ROC-AUC of g on held-out p⁰ samples",
            ours=R[name]["g_auc"], baseline=[0.5] * len(R[name]["g_auc"]), baseline_name="chance", margin=0.05,
            paper="token-level credit assignment from the value head (introduction)"))
        report.add(Claim.compare(
            claim=f"{name}: posterior p(c=1|x,y) predicts correctness (AUC > 0.55)",
            metric="ROC-AUC of the posterior on held-out p⁰ samples", ours=R[name]["posterior_auc"],
            baseline=[0.5] * len(R[name]["posterior_auc"]), baseline_name="chance", margin=0.05,
            paper="PIPA estimates p(c=1|x,y) by MLE (method)"))
    for ours, base in (("PIPA-N (paired)", "DPO"), ("PIPA-N (unpaired)", "KTO")):
        o, bb = R[ours]["seconds_per_step"], R[base]["seconds_per_step"]
        report.add(Claim.compare(
            claim=f"{ours} costs no more per step than {base} (within 5%)", metric="seconds per optimizer step",
            ours=o, baseline=bb, baseline_name=f"{base} (trl)", higher_is_better=False, margin=-0.05 * float(np.mean(bb)),
            paper="no additional training or computational cost (abstract)"))
    rows = [["prior p⁰ (no alignment)", "—", round(prior, 4), 0.0, None, None, None]]
    for name, setting, _ in METHODS:
        m, sd = mean_sd(R[name]["accuracy"])
        sp, _ = mean_sd(R[name]["seconds_per_step"])
        g = mean_sd(R[name]["g_auc"])[0] if "g_auc" in R[name] else None
        post = mean_sd(R[name]["posterior_auc"])[0] if "posterior_auc" in R[name] else None
        rows.append([name, setting, round(m, 4), round(sd, 4), round(sp * 1000, 1), g, post])
    report.add_table("all methods", ["method", "data", "accuracy", "sd", "ms/step", "g AUC", "posterior AUC"], rows)
    report.add_table("data", list(res["data"][0].keys()), [list(d.values()) for d in res["data"]])
    fig = grouped_bars(
        {setting: {name: R[name]["accuracy"] for name, st, _ in METHODS if st == setting}
         for setting in ("paired", "unpaired", "step")},
        Path(out) / "accuracy.png", ylabel="held-out greedy accuracy", title="PIPA vs trl baselines (tiny LM)")
    report.figures.append(fig.name)
    report.notes.append(f"prior p⁰ held-out greedy accuracy: {res['prior_accuracy']:.3f}; budget: {b}")
    return report
