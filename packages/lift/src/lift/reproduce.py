"""Side-by-side reproduction of LIFT's claims on the offline tiny LM (CPU scale), as a list of experiments.

Source ("pre-training") task: 2-digit addition; the tiny Llama of ``icml25.testbeds.lm`` is trained on it once and
cached. Target task (small-data reasoning SFT): 2-digit subtraction (the full ``lift reproduce``) or 2-digit x
1-digit multiplication (``--quick``, ``--smoke`` and the ``lift reproduce --task mul`` sub-run), held-out operands for
testing.

Experiments (:data:`EXPERIMENTS`, run by :func:`icml25.experiment.run_experiments` on
:data:`lift.config.TASK_BUDGETS`; ``cfg.experiments`` names the ones a task runs):

* :func:`compare` -- every method of ``cfg.methods`` tuned alike (the same number of grid points: lr x LoRA alpha,
  lr x mask interval, or a wider lr grid; validation split, bracketed), then run on every seed: target exact match,
  source retention, retention at matched target accuracy (along each method's lr curve), exact counts, time per
  step.
* :func:`rank_sweep` -- LIFT's filter rank r_f in ``cfg.sweep_ranks`` (0 = full rank = magnitude) at fixed k.
* :func:`memory` -- weights / gradients / optimizer state and the allocation-trace peak in-process, and the peak
  RSS in fresh processes on random-weight models (hidden 512 and a >= 50 M-parameter one), Full FT vs LoRA vs LIFT
  (sparse gradients) vs LIFT with dense gradients (the official code's path).
"""

from __future__ import annotations

import copy
import itertools
import statistics
import time
import zlib
from pathlib import Path
from typing import Any

from icml25.claims import Claim, Report, mean_sd
from icml25.experiment import Section, run_experiments

from lift.config import SOURCE_TASK, TARGET_TASK, TIE_BREAK, Config

PAPER = "Liu et al., LIFT, ICML 2025 (arXiv 2506.00772)"

LR_CENTRES = {"full_ft": 1e-3, "lora": 3e-3, "lift": 9e-3, "lift_static": 9e-3, "lift_smallest": 2.7e-2,
              "magnitude": 9e-3, "random": 2.7e-2, "gradient": 9e-3, "momentum": 9e-3, "movement": 9e-3}
"""Centre of each method's lr grid (``cfg.lr_grid`` / ``cfg.lr_grid_wide`` multiply it), on the 3^k lattice near
the optimum of the previous full run (200 steps, batch 32: Full FT 1.7e-3, LoRA 3e-3, LIFT 9e-3, LIFT-smallest
8.1e-2, LIFT-static 1.6e-2, magnitude 9e-3, random 4.7e-2; LoRA, LIFT, LIFT-smallest and random had chosen an edge
of their grid then), so that the grids are likely to bracket the optimum; ``extend`` handles the rest. The grids
keep the same multipliers and number of points for every method."""

_CACHE: dict[str, Any] = {}

def is_validation_prompt(prompt: str) -> bool:
    """About 10% of the test bed's *train-split* prompts are held out for lr selection (never trained on)."""
    return zlib.crc32(("lift-val|" + prompt).encode("utf-8")) % 10 == 0


def target_splits(n_train: int, n_val: int, *, seed: int, task: str = TARGET_TASK) -> tuple[list[Any], list[Any]]:
    """``(train, val)`` examples of the target ``task``: disjoint operands, both from the test bed's train split
    (the test split stays the held-out evaluation)."""
    from icml25.testbeds.lm import make_examples

    pool = make_examples(task, int(1.3 * n_train) + 16, seed=seed, split="train")
    train = [e for e in pool if not is_validation_prompt(e.prompt)][:n_train]
    pool = make_examples(task, 15 * n_val + 64, seed=10_003, split="train")
    val = [e for e in pool if is_validation_prompt(e.prompt)][:n_val]
    return train, val


def time_mask(dim: int, *, filter_rank: int = 128, budget_rank: int = 128, svd: str = "randomized",
              repeats: int = 1) -> float:
    """Seconds to compute one principal-weight mask of a random ``dim x dim`` matrix (best of ``repeats``).

    Measured on one CPU thread: LAPACK (QR/SVD inside ``torch.svd_lowrank``) with several threads on an
    oversubscribed machine was measured 20x slower than single-threaded, so one thread gives a stable number.
    """
    import torch

    from lift.masks import principal_mask

    w = torch.randn(dim, dim, generator=torch.Generator().manual_seed(0))
    rf, rb = min(filter_rank, dim), min(budget_rank, max(1, dim // 4))
    best = float("inf")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        for _ in range(repeats):
            t0 = time.perf_counter()
            principal_mask(w, filter_rank=rf, budget_rank=rb, svd=svd)
            best = min(best, time.perf_counter() - t0)
    finally:
        torch.set_num_threads(threads)
    return best



def _setup(cfg: Config) -> dict[str, Any]:
    """The pretrained base model, tokenizer, evaluation sets and accuracies before fine-tuning (cached per run)."""
    key = (cfg.hidden_size, cfg.num_layers, cfg.pretrain_steps, cfg.n_eval, cfg.target_task)
    if _CACHE.get("key") == key:
        return _CACHE["env"]
    import torch
    from icml25.testbeds.lm import exact_match, make_examples

    from lift.finetune import answer_scores
    from lift.models import TinySpec, load_model

    torch.set_num_threads(min(2, torch.get_num_threads()))
    base, tok = load_model("tiny", tiny=TinySpec(source_task=SOURCE_TASK, pretrain_steps=cfg.pretrain_steps, seed=0,
                                                hidden_size=cfg.hidden_size, num_layers=cfg.num_layers))
    evals = {"source": make_examples(SOURCE_TASK, cfg.n_eval, seed=10_001, split="test"),
             "target": make_examples(cfg.target_task, cfg.n_eval, seed=10_002, split="test")}
    src = answer_scores(base, tok, evals["source"])
    befores = {"source": src["exact"], "source_token": src["token"],
               "target": answer_scores(base, tok, evals["target"])["exact"],
               # the test bed's generation-based exact match, once, as a check of the teacher-forced one
               "source_generated": exact_match(base, tok, evals["source"])}
    env = {"base": base, "tok": tok, "evals": evals, "befores": befores}
    _CACHE.clear()
    _CACHE.update(key=key, env=env)
    return env


def _one_run(method: str, params: dict[str, Any], seed: int, cfg: Config, env: dict[str, Any], *, with_val: bool,
             progress: bool, filter_rank: int | None = None) -> dict[str, Any]:
    """Fine-tune a fresh copy of the base model with ``method`` and its knobs ``params`` (``lr``; ``lora_alpha``
    for LoRA, ``update_interval`` for the dynamic sparse masks) on ``seed``'s training split; measure."""
    import torch

    from lift.finetune import (
        MethodConfig,
        answer_scores,
        finetune,
        setup_method,
        state_floats,
        trainable_count,
    )

    tok, evals, befores = env["tok"], env["evals"], env["befores"]
    lr = float(params["lr"])
    torch.manual_seed(seed)
    train, val = target_splits(cfg.n_train, cfg.n_val, seed=seed, task=cfg.target_task)
    mcfg = MethodConfig(budget_rank=cfg.budget_rank, filter_rank=filter_rank or cfg.filter_rank,
                        update_interval=int(round(params.get("update_interval", cfg.update_interval))), eps=cfg.eps,
                        seed=seed, lrs={method: lr}, lora_alpha=params.get("lora_alpha"))
    su = setup_method(method, copy.deepcopy(env["base"]), mcfg)
    # the validation curve (exact match on the validation split every cfg.curve_every steps): the gates' evidence
    val_curve = (lambda: answer_scores(su.model, tok, val)["exact"]) if cfg.curve_every > 0 and val else None
    res = finetune(su.model, tok, train, optimizer=su.optimizer, steps=cfg.steps, batch_size=cfg.batch_size,
                   warmup_ratio=cfg.warmup_ratio, seed=seed, progress=progress, desc=f"{method} lr {lr:.2g} seed {seed}",
                   eval_fn=val_curve, eval_every=cfg.curve_every if val_curve is not None else 0)
    src = answer_scores(su.model, tok, evals["source"])
    rec = {
        "lr": lr, "params": dict(params), "seed": seed, "filter_rank": mcfg.filter_rank,
        "target": answer_scores(su.model, tok, evals["target"])["exact"],
        "source": src["exact"], "source_token": src["token"],
        # retention is undefined when the source accuracy before is 0 (only the untrained smoke model): 0.0
        "retention": src["exact"] / befores["source"] if befores["source"] > 0 else 0.0,
        "retention_token": src["token"] / befores["source_token"] if befores["source_token"] > 0 else 0.0,
        "state_floats": state_floats(su.optimizer), "trainable": trainable_count(su),
        "bytes": res["memory"]["total"], "step_s": res["step_seconds"], "losses": res["losses"],
        "mask_updates": len(getattr(su.optimizer, "mask_update_steps", [])), "curve": res["curve"],
    }
    if with_val:
        v = answer_scores(su.model, tok, val)
        rec["val"], rec["val_token"] = v["exact"], v["token"]
    return rec


def _job(job: dict[str, Any]) -> dict[str, Any]:
    """One fine-tuning run of :func:`run_many` (in a forked worker or in this process); a diverged run (non-finite
    loss) comes back as ``{"diverged": True}``."""
    cfg, env = _CACHE["job_cfg"], _CACHE["job_env"]
    try:
        return _one_run(job["method"], job["params"], job["seed"], cfg, env, with_val=job.get("with_val", False),
                        progress=False, filter_rank=job.get("filter_rank"))
    except FloatingPointError:
        return {"diverged": True}


def run_many(jobs: list[dict[str, Any]], cfg: Config) -> list[dict[str, Any]]:
    """Run independent fine-tuning ``jobs`` (``method``, ``params``, ``seed``, ``with_val``, ``filter_rank``), in
    ``cfg.workers`` forked processes with one torch thread each when there is more than one job, else here.

    Every run seeds itself (``torch.manual_seed(seed)``, its own data and masks), so the numbers do not depend on
    which worker ran it. The workers are forked after :func:`_setup`, so they share the pretrained base model."""
    import torch
    from icml25.parallel import fork_map

    _CACHE["job_env"] = _setup(cfg)
    _CACHE["job_cfg"] = cfg
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # one thread per run everywhere (same numbers here and in a worker); no multi-thread
    try:                      # OpenMP pool alive across the fork
        return fork_map(_job, jobs, cfg.workers)
    finally:
        torch.set_num_threads(threads)


RF_METHODS = ("lift", "lift_smallest")
"""Methods whose filter rank r_f is chosen on validation (first seed, at their tuned lr and mask interval)."""

CURVE_METHODS = ("full_ft", "lora", "lift")
"""Methods whose lr curve is run on every seed (retention at matched target accuracy, per seed)."""

KNOBS = {"lora": "lora_alpha", "lift": "update_interval", "magnitude": "update_interval",
         "lift_smallest": "update_interval"}
"""The second tuned knob of a method (with the lr); the other methods have the lr only, on a grid of as many
points (``cfg.lr_grid_wide``)."""


def tuning_grid(method: str, cfg: Config) -> dict[str, list[Any]]:
    """The tuning grid of ``method``: lr x its second knob (:data:`KNOBS`), or a wider lr grid of the same size."""
    centre = LR_CENTRES[method]
    knob = KNOBS.get(method)
    if knob is None:
        return {"lr": [centre * m for m in cfg.lr_grid_wide]}
    values = ([float(a * cfg.budget_rank) for a in cfg.lora_alphas] if knob == "lora_alpha"
              else [int(t) for t in cfg.update_intervals])
    return {"lr": [centre * m for m in cfg.lr_grid], knob: values}


def lr_grid(method: str, cfg: Config) -> list[float]:
    """The lr values of ``method``'s tuning grid (see :func:`tuning_grid`)."""
    return tuning_grid(method, cfg)["lr"]


class _Missing(Exception):
    """A tuning point not computed yet (raised by the cache-backed evaluator to collect the next batch)."""


def _key(method: str, params: dict[str, Any]) -> tuple[Any, ...]:
    return (method,) + tuple(sorted((k, round(float(v), 12)) for k, v in params.items()))


def run_methods(cfg: Config, seeds: list[int], *, progress: bool = True) -> dict[str, Any]:
    """Tune every method alike on the first seed (validation target accuracy, :func:`icml25.tuning.tune_alike`, the
    same number of grid points for every method), run every seed at the chosen knobs; return per-method lists of
    per-seed measurements, selections and the grid runs.

    The grid points are independent runs, computed in parallel (:func:`run_many`); :func:`icml25.tuning.select` is
    then replayed on the cached scores, and the points its edge extension asks for are computed in the next batch."""
    from icml25.tuning import select, tune_alike

    env = _setup(cfg)
    befores = env["befores"]
    out: dict[str, Any] = {"source_before": befores["source"], "source_token_before": befores["source_token"],
                           "source_generated_before": befores["source_generated"],
                           "target_before": befores["target"], "methods": {}, "grid": {}, "selections": {}}
    keys = ("target", "source", "source_token", "retention", "retention_token", "state_floats", "trainable",
            "bytes", "step_s", "losses", "mask_updates", "lr", "params", "seed", "filter_rank", "curve")
    first, rest = seeds[0], seeds[1:]
    grids = {m: tuning_grid(m, cfg) for m in cfg.methods}
    done: dict[tuple[Any, ...], dict[str, Any]] = {}
    # LIFT's filter rank once chosen (None = cfg.filter_rank, the r_f its lr and interval are tuned at)
    rf: dict[str, int | None] = {m: None for m in cfg.methods}

    def store(m: str, p: dict[str, Any], r: int | None = None) -> tuple[Any, ...]:
        """Cache key of a first-seed run: the knobs, plus the filter rank where it is not the preset."""
        return _key(m, p) if r in (None, cfg.filter_rank) else _key(m, p) + (("filter_rank", int(r)),)

    def compute(points: list[tuple[Any, ...]]) -> None:
        """First-seed runs (with validation scores) of ``(method, params)`` or ``(method, params, filter_rank)``."""
        pts = [(t[0], t[1], t[2] if len(t) > 2 else None) for t in points]
        recs = run_many([{"method": m, "params": p, "seed": first, "with_val": True, "filter_rank": r}
                         for m, p, r in pts], cfg)
        for (m, p, r), rec in zip(pts, recs):
            if rec.get("diverged"):  # this point diverged: a non-finite score is never chosen
                out.setdefault("diverged", []).append({"method": m, "lr": float(p["lr"]), "params": dict(p),
                                                       "filter_rank": r})
            done[store(m, p, r)] = rec

    def evaluator(method: str):
        def evaluate(params: dict[str, Any]) -> float:
            rec = done.get(_key(method, params))
            if rec is None:
                raise _Missing((method, dict(params)))
            return float("nan") if rec.get("diverged") else rec["val"] + TIE_BREAK * rec["val_token"]
        return evaluate

    compute([(m, dict(zip(g, combo))) for m, g in grids.items() for combo in itertools.product(*g.values())])
    for _ in range(8):  # the edge extensions: replay the selection on the cache, compute what it asks for
        missing = []
        for m, g in grids.items():
            try:
                select(evaluator(m), g, name=m, extend=cfg.extend)
            except _Missing as e:
                missing.append(e.args[0])
        if not missing:
            break
        compute(missing)
    sels = tune_alike({m: (evaluator(m), g) for m, g in grids.items()}, extend=cfg.extend)
    out["selections"] = sels
    chosen = {m: dict(sels[m].params) for m in cfg.methods}
    from lift.optim import select_linear_weights

    shapes = [tuple(w.shape) for _, w in select_linear_weights(env["base"])]
    # LIFT's filter rank: chosen on the validation split (first seed) at LIFT's tuned lr and mask interval, from
    # cfg.filter_ranks below min(m, n) (r_f >= min(m, n) is the magnitude mask, a baseline of its own)
    # (the same for LIFT-smallest, the released selection, so that largest and smallest are tuned alike)
    out["filter_rank"] = cfg.filter_rank
    out["filter_ranks"] = {}
    rf_methods = [m for m in RF_METHODS if m in cfg.methods] if cfg.filter_ranks else []
    min_dim = min(min(sh) for sh in shapes)
    cands = sorted({int(r) for r in cfg.filter_ranks if 1 <= r < min_dim} | {cfg.filter_rank})
    compute([(m, chosen[m], r) for m in rf_methods for r in cands if r != cfg.filter_rank])
    for m in rf_methods:
        rf_recs = {r: done[store(m, chosen[m], r)] for r in cands}

        def rf_score(rec: dict[str, Any]) -> float:
            return float("-inf") if rec.get("diverged") else rec["val"] + TIE_BREAK * rec["val_token"]

        # ties: the preset r_f, then the smaller r_f
        rf[m] = max(cands, key=lambda r, recs_=rf_recs: (rf_score(recs_[r]), r == cfg.filter_rank, -r))
        out["filter_ranks"][m] = rf[m]
        sel = [{"filter_rank": r, **{k: v for k, v in rec.items() if k != "losses"}} for r, rec in rf_recs.items()]
        if m == "lift":
            out["filter_rank"], out["rf_select"] = rf[m], sel
        else:
            out.setdefault("rf_select_other", {})[m] = sel
    recs = run_many([{"method": m, "params": chosen[m], "seed": s, "filter_rank": rf[m]}
                     for m in cfg.methods for s in rest], cfg)
    # per-seed lr curves (chosen lr x cfg.curve_lrs, at the chosen second knob) for the matched-retention claims
    curve_methods = [m for m in CURVE_METHODS if m in cfg.methods] if len(cfg.curve_lrs) > 1 else []
    cjobs = [{"method": m, "params": {**chosen[m], "lr": chosen[m]["lr"] * f}, "seed": s, "filter_rank": rf[m]}
             for m in curve_methods for s in rest for f in cfg.curve_lrs if f != 1.0]
    missing0 = [(m, {**chosen[m], "lr": chosen[m]["lr"] * f}, rf[m]) for m in curve_methods for f in cfg.curve_lrs
                if f != 1.0 and store(m, {**chosen[m], "lr": chosen[m]["lr"] * f}, rf[m]) not in done]
    if missing0:
        compute(missing0)
    crecs = run_many(cjobs, cfg) if cjobs else []
    out["curves"] = {}
    for m in curve_methods:
        per_seed = []
        for s in seeds:
            pts = []
            for f in cfg.curve_lrs:
                p = {**chosen[m], "lr": chosen[m]["lr"] * f}
                if s == first:
                    r = done[store(m, p, rf[m])]
                elif f == 1.0:
                    r = recs[cfg.methods.index(m) * len(rest) + rest.index(s)]
                else:
                    r = crecs[next(i for i, j in enumerate(cjobs) if j["method"] == m and j["seed"] == s
                                   and _key(m, j["params"]) == _key(m, p))]
                if not r.get("diverged"):
                    pts.append({k: r[k] for k in ("lr", "target", "retention", "retention_token")})
            per_seed.append(pts)
        out["curves"][m] = per_seed
    for i, method in enumerate(cfg.methods):
        best = done[store(method, chosen[method], rf[method])]
        # the tuning grid (and the first seed's curve points) at the preset filter rank
        mine = [r for key, r in done.items() if key[0] == method and not r.get("diverged")
                and all(kv[0] != "filter_rank" for kv in key[1:])]
        out["grid"][method] = sorted(({k: v for k, v in r.items() if k != "losses"} for r in mine),
                                     key=lambda r: (r["lr"], str(r["params"])))
        runs = [best] + recs[i * len(rest): (i + 1) * len(rest)]
        if any(r.get("diverged") for r in runs):
            raise FloatingPointError(f"{method} diverged on a seed at its chosen knobs {chosen[method]}"
                                     + (f", r_f={rf[method]}" if rf[method] else ""))
        out["methods"][method] = {k: [r[k] for r in runs] for k in keys}
    out["expected_k"] = sum(min((m + n) * cfg.budget_rank, m * n) for m, n in shapes)
    out["dense_linear"] = sum(m * n for m, n in shapes)
    out["all_params"] = sum(p.numel() for p in env["base"].parameters())
    out["shapes"] = shapes
    return out


def retention_at(runs: list[dict[str, Any]], level: float, *, key: str = "retention_token") -> float | None:
    """Source retention where the method's target accuracy first reaches ``level`` along its lr curve (runs sorted
    by lr), linearly interpolated between the two grid points around the crossing; ``None`` if never reached."""
    pts = sorted(runs, key=lambda r: r["lr"])
    for a, b in zip([None] + pts[:-1], pts):
        if b["target"] >= level:
            if a is None or b["target"] == a["target"]:
                return float(b[key])
            w = (level - a["target"]) / (b["target"] - a["target"])
            return float(a[key] + w * (b[key] - a[key]))
    return None


def matched_retention(curves: dict[str, list[list[dict[str, Any]]]], *, key: str = "retention_token"
                      ) -> tuple[list[float], dict[str, list[float | None]]]:
    """Per-seed retention at matched target accuracy: ``curves[method][seed]`` is that seed's lr curve (runs with
    ``lr``, ``target`` and ``key``). On each seed the level is the highest target accuracy *every* method reaches
    on its curve; each method's retention is :func:`retention_at` that level. Returns ``(levels, {method:
    [retention per seed]})``."""
    n = len(next(iter(curves.values())))
    levels = [min(max(p["target"] for p in curves[m][i]) for m in curves) for i in range(n)]
    return levels, {m: [retention_at(curves[m][i], levels[i], key=key) for i in range(n)] for m in curves}


def _tradeoff_plot(grid: dict[str, list[dict[str, Any]]], level: float | None, path: Path) -> None:
    """Target accuracy vs graded source retention over each method's lr grid (first seed): forgetting trade-off."""
    from icml25.plots import save_figure
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6.5, 4.5))
    ax = fig.add_subplot()
    for name, runs in grid.items():
        runs = sorted(runs, key=lambda r: r["lr"])
        ax.plot([r["retention_token"] for r in runs], [r["target"] for r in runs], marker="o",
                lw=2.5 if name == "lift" else 1.0, label=name)
    if level is not None:
        ax.axhline(level, color="grey", ls=":", lw=1, label="matched target accuracy")
    ax.set_xlabel("source retention (answer-token accuracy after / before)")
    ax.set_ylabel("target exact match (held-out)")
    ax.set_title("one point per lr of the grid (first seed)")
    ax.legend(fontsize=7)
    save_figure(fig, path)


_PAPERS = {
    "full_ft": "LIFT beats Full FT on reasoning SFT (paper Tab. 1-2: higher average accuracy than Full FT on "
               "arithmetic and commonsense reasoning with LLaMA/Mistral models)",
    "lora": "LIFT beats LoRA and other PEFT at equal budget (paper Tab. 1-2)",
    "magnitude": "magnitude-based sparse FT is poor before rank reduction, strong after (paper Sec. 3)",
    "random": "principal weights beat random sparse weights at equal budget (paper ablations)",
    "lift_static": "dynamic mask updates help vs. a static principal mask (paper Sec. 3, update interval)",
    "lift_smallest": "paper defines principal weights as the LARGEST entries of the low-rank approximation; "
                     "the released scripts select the smallest",
    "gradient": "official code's training-statistics masks (grad_mag / momentum / movement_v2); the paper "
                "reports principal weights as the best selection criterion (Sec. 3)",
}


def val_curves(runs: list[dict[str, Any]], cfg: Config) -> list[Any]:
    """The validation curves (:class:`icml25.train.Curve`, one per seed) of ``runs``; ``[]`` without curves. The
    metric is an exact-match rate, so its ceiling is 1: a curve that reaches it (within the plateau threshold) has
    no room left to improve and counts as plateaued even when it got there inside the last window."""
    from icml25.train import Curve

    return [Curve(steps=list(r["curve"]["steps"]), values=list(r["curve"]["values"]), min_delta=cfg.plateau_delta,
                  ceiling=1.0)
            for r in runs if r.get("curve") and r["curve"]["steps"]]


def gate_name(method: str, task: str) -> str:
    """The claim text of ``method``'s competence gate on ``task``."""
    return f"{method} learned the target task ({task}): validation plateaued, beats the prior model"


def method_gates(sec: Section, M: dict[str, dict[str, list[Any]]], cfg: Config, target_before: float, *,
                 scale: str = "") -> dict[str, str]:
    """One gate claim per method of ``M`` (per-seed lists with ``target`` and ``curve``): its validation curves
    plateaued (:func:`icml25.train.plateau_check`, last 3 evaluations) and its held-out exact match beats the
    prior model's (no fine-tuning) by more than ``cfg.gate_margin``. Returns ``{method: gate claim text}``."""
    out = {}
    for name, r in M.items():
        runs = [{"curve": cv} for cv in r.get("curve", [])]
        curves = val_curves(runs, cfg)
        g = sec.add(Claim.gate(
            claim=gate_name(name, cfg.target_task),
            metric=f"{cfg.target_task} exact match (held-out operands); validation exact match every "
                   f"{cfg.curve_every} steps",
            ours=[float(v) for v in r["target"]], controls={"prior model (no fine-tuning)": float(target_before)},
            curves=curves or None, margin=cfg.gate_margin,
            note=f"margin {cfg.gate_margin:g} over the prior model; plateau: best validation exact match rose by at "
                 f"most max({cfg.plateau_delta:g}, seed sd of the bests) over the last 3 evaluations"
                 + (f"; {scale}" if scale else "")))
        out[name] = g.claim
    return out


def retention_gate(sec: Section, M: dict[str, dict[str, list[Any]]], cfg: Config, source_before: float) -> str:
    """The gate of the retention claims: on each seed some method keeps source exact match above
    ``cfg.retention_floor`` after fine-tuning (if every method erases the source skill, comparing what is left
    says nothing about retention). Returns the gate's claim text."""
    names = list(M)
    n = len(M[names[0]]["source"])
    best = [max(float(M[m]["source"][i]) for m in names) for i in range(n)]
    who = [max(names, key=lambda m: float(M[m]["source"][i])) for i in range(n)]
    g = sec.add(Claim.gate(
        claim=f"the source skill ({SOURCE_TASK}) survives fine-tuning in at least one method",
        metric=f"{SOURCE_TASK} exact match after fine-tuning, best method on each seed",
        ours=best, controls={"source skill erased": 0.0}, margin=cfg.retention_floor,
        note=f"source exact match before fine-tuning {source_before:.3f}; best method per seed: "
             + ", ".join(who) + f"; floor {cfg.retention_floor:g}"))
    return g.claim


def compare(cfg: Config, seeds: list[int], out: Path) -> Section:
    """Every method tuned alike, then every seed: target accuracy, retention (also at matched accuracy), counts."""
    sec = Section("compare")
    t0 = time.perf_counter()
    res = run_methods(cfg, seeds, progress=False)
    _CACHE["compare"] = res
    M = res["methods"]
    sels = res["selections"]

    def c(name: str, key: str) -> list[float]:
        return [float(v) for v in M[name][key]]

    k = res["expected_k"]
    task = cfg.target_task
    tuning = len(cfg.lr_grid) * len(cfg.update_intervals) > 1 or len(cfg.lr_grid_wide) > 1
    tuned = (f"every method tuned with icml25.tuning.tune_alike on {len(cfg.lr_grid) * len(cfg.update_intervals)} "
             "grid points (lr x {" + ", ".join(f"{m:.3g}" for m in cfg.lr_grid) + "} x its grid centre, times "
             "LoRA alpha/r_b in {" + ", ".join(f"{a:g}" for a in cfg.lora_alphas) + "} or the mask interval T in {"
             + ", ".join(str(t) for t in cfg.update_intervals) + "} for LIFT and magnitude; Full FT and random: "
             "lr x {" + ", ".join(f"{m:.3g}" for m in cfg.lr_grid_wide) + "}), extend=" + str(cfg.extend) +
             ", by validation target exact match on the first seed") if tuning else \
        "no tuning: every method at its grid centre lr (LoRA alpha = 2 r_b, T = " + str(cfg.update_intervals[0]) + ")"
    chosen = {m: dict(sels[m].params) for m in M}
    rf = int(res["filter_rank"])
    rf_how = (f"r_f={rf} chosen on validation from {{" + ", ".join(str(x["filter_rank"]) for x in res["rf_select"])
              + f"}} at LIFT's lr and T tuned at r_f={cfg.filter_rank}"
              + "".join(f" (likewise {m_}: r_f={v_})" for m_, v_ in res["filter_ranks"].items() if m_ != "lift")
              ) if res.get("rf_select") else f"r_f={cfg.filter_rank} (preset)"

    def knobs(m: str) -> str:
        kn = {**chosen[m], **({"filter_rank": res["filter_ranks"].get(m, cfg.filter_rank)}
                              if m in RF_METHODS else {})}
        return ", ".join(f"{k_}={v:.3g}" if isinstance(v, float) else f"{k_}={v}" for k_, v in kn.items())

    scale = (f"tiny Llama (hidden {cfg.hidden_size}, {cfg.num_layers} layers), {cfg.steps} steps batch "
             f"{cfg.batch_size} for every method (linear lr decay, {cfg.warmup_ratio:.0%} warm-up), "
             f"r_b={cfg.budget_rank}, LIFT {rf_how}, eps={cfg.eps:g}; {len(seeds)} seeds, paired by seed; {tuned}")

    def tuning_note(*names: str) -> str:
        return "; ".join(sels[n].note() for n in names if n in sels)

    # --- competence gates: every method learned the target (validation plateaued, beats the prior model), and
    # the source skill survives in at least one method before retention is compared
    gates = method_gates(sec, M, cfg, res["target_before"], scale=scale)
    ret_gate = retention_gate(sec, M, cfg, res["source_before"])
    _CACHE["gates"] = {**gates, "_retention": ret_gate}
    for other in (m for m in M if m != "lift"):
        sec.add(Claim.compare(
            claim=f"LIFT beats {other} on target accuracy", metric=f"{task} exact match (held-out operands)",
            ours=c("lift", "target"), baseline=c(other, "target"), baseline_name=other, kind="paper",
            paired=True, paper=_PAPERS.get(other, _PAPERS["gradient"]), gates=[gates["lift"], gates[other]],
            note=f"{scale}; {tuning_note('lift', other)}"))
    for key, metric, extra in (
        ("retention", f"{SOURCE_TASK} exact match after / before fine-tuning",
         f"source exact match before fine-tuning {res['source_before']:.3f}"),
        ("retention_token", f"{SOURCE_TASK} answer-token accuracy (teacher-forced) after / before",
         f"graded retention: source answer-token accuracy before {res['source_token_before']:.3f}; measurable "
         "even when exact match is erased; each method at its own tuned knobs"),
    ):
        for other in ("full_ft", "lora"):
            if other not in M:
                continue
            sec.add(Claim.compare(
                claim=f"LIFT retains more source knowledge than {other}" + (" (token level)" if "token" in key
                                                                            else ""),
                metric=metric, ours=c("lift", key), baseline=c(other, key), baseline_name=other, kind="paper",
                paired=True, paper="up to 20% more source-domain knowledge retained than Full FT and LoRA (paper "
                                   "abstract, Sec. 5)", gates=[gates["lift"], gates[other], ret_gate],
                note=f"{extra}; {scale}; {tuning_note('lift', other)}"))
    # --- retention at matched target accuracy (along each method's lr curve, first seed)
    grid = res["grid"]
    # each method's lr curve at its chosen second knob (LoRA alpha / mask interval)
    curves = {m: [r for r in runs if all(r["params"].get(k_) == v for k_, v in chosen[m].items() if k_ != "lr")]
              for m, runs in grid.items()}
    level = None
    if tuning:
        level = min(max(r["target"] for r in runs) for runs in curves.values())
        at = {m: retention_at(runs, level) for m, runs in curves.items()}
        sec.table("retention at matched target accuracy (first seed, interpolated along each lr curve)",
                  ["method", "matched target acc", "retention (answer tokens) at it", "lr points"],
                  [[m, round(level, 3), "-" if v is None else round(v, 3), len(curves[m])] for m, v in at.items()])
        pcurves = res.get("curves", {})
        if "lift" in pcurves and all(len(c_) == len(seeds) for c_ in pcurves.values()):
            # per seed: the highest target accuracy every curve method reaches on that seed's lr curve
            levels, per = matched_retention(pcurves)
            sec.table("retention at matched target accuracy, per seed (lr curve = chosen lr x {"
                      + ", ".join(f"{f:.3g}" for f in cfg.curve_lrs) + "} at the chosen second knob)",
                      ["seed", "matched target acc"] + [f"{m} retention (tokens)" for m in pcurves],
                      [[seeds[i], round(levels[i], 3)] + ["-" if per[m][i] is None else round(per[m][i], 3)
                                                          for m in pcurves] for i in range(len(seeds))])
            for other in ("full_ft", "lora"):
                if other not in per:
                    continue
                ok = [i for i in range(len(seeds)) if per["lift"][i] is not None and per[other][i] is not None]
                sec.add(Claim.compare(
                    claim=f"LIFT retains more source knowledge than {other} at matched target accuracy",
                    metric=f"{SOURCE_TASK} answer-token retention where, on each seed, the target acc reaches the "
                           "highest level all methods reach (interpolated along the per-seed lr curve)",
                    ours=[per["lift"][i] for i in ok], baseline=[per[other][i] for i in ok], baseline_name=other,
                    kind="paper", paired=True,
                    paper="LIFT keeps more source knowledge at the same target accuracy (paper Sec. 5, trade-off "
                          "figure)", gates=[gates["lift"], gates[other], ret_gate],
                    note="per-seed lr curves (chosen lr x {" + ", ".join(f"{f:.3g}" for f in cfg.curve_lrs) +
                         "}); matched levels per seed: " + ", ".join(f"{v:.3f}" for v in levels) + f"; {scale}"))
        else:
            for other in ("full_ft", "lora"):
                if other in at and at.get("lift") is not None and at[other] is not None:
                    sec.add(Claim.compare(
                        claim=f"LIFT retains more source knowledge than {other} at matched target accuracy",
                        metric=f"{SOURCE_TASK} answer-token retention where the target acc reaches {level:.3f} "
                               "(interpolated along the lr curve)",
                        ours=[at["lift"]], baseline=[at[other]], baseline_name=other, kind="paper",
                        paper="LIFT keeps more source knowledge at the same target accuracy (paper Sec. 5, "
                              "trade-off figure)", gates=[gates["lift"], gates[other], ret_gate],
                        note="one value per method (lr curves on the first seed only): no statistical verdict; "
                             "level = the highest target accuracy every method reaches on its lr curve (at its "
                             f"chosen second knob); {scale}"))
    # --- exact counts (properties)
    lift_state = c("lift", "state_floats")
    full_state = c("full_ft", "state_floats")
    sec.add(Claim.threshold(
        claim="LIFT optimizer state is exactly 2k floats (k = sum over matrices of (m+n) r_b)",
        metric="|optimizer-state floats - 2k| (counted from the optimizer's tensors)",
        ours=[abs(v - 2 * k) for v in lift_state], threshold=0.5, higher_is_better=False, kind="property",
        deterministic=True, paper="sparse Adam state for the principal weights only (paper Sec. 3-4)",
        note=f"LIFT state {int(lift_state[0])} floats, 2k = {2 * k}; dense linear weights {res['dense_linear']}"))
    sec.add(Claim.compare(
        claim="LIFT optimizer state smaller than Full FT's (2 x all params)",
        metric="optimizer-state floats (counted from the optimizer's tensors)", ours=lift_state,
        baseline=full_state, baseline_name="full_ft", higher_is_better=False, kind="property", deterministic=True,
        paper="memory on par with PEFT: sparse Adam state for the top-5% principal weights only (paper Sec. 4)",
        note=f"Full FT: 2 x {res['all_params']} params"))
    if "lora" in M:
        lift_train, lora_train = c("lift", "trainable"), c("lora", "trainable")
        sec.add(Claim.threshold(
            claim="LIFT trains exactly as many entries as LoRA at rank r_b (on the linear layers)",
            metric="|LIFT trainable entries - LoRA's| (counted)",
            ours=[abs(a - b_) for a, b_ in zip(lift_train, lora_train)], threshold=0.5, higher_is_better=False,
            kind="property", deterministic=True, paper="k = (m+n) r_b, LoRA's parameter count (paper Sec. 3)",
            note=f"LIFT {int(lift_train[0])}, LoRA {int(lora_train[0])}, k = {k}"))
    full_step = statistics.median(c("full_ft", "step_s"))
    sec.add(Claim.threshold(
        claim="LIFT time per optimizer step within 1.5x of Full FT", metric="median step time / Full FT's (per seed)",
        ours=[a / f for a, f in zip(c("lift", "step_s"), c("full_ft", "step_s"))], threshold=1.5,
        higher_is_better=False, kind="target",
        paper="LIFT's per-step cost is close to Full FT's (mask refresh every T steps amortised)",
        note=f"Full FT median step {1e3 * full_step:.1f} ms; includes the SVD mask refreshes and the sparse-gradient "
             "hooks; measured while nothing else ran under the CPU lock"))
    # --- tables
    rows = []
    for name, r in M.items():
        tm, tsd = mean_sd(r["target"])
        sm, ssd = mean_sd(r["source"])
        rm, rsd = mean_sd(r["retention"])
        km, ksd = mean_sd(r["retention_token"])
        rows.append([name, knobs(name), f"{tm:.3f} ± {tsd:.3f}", f"{sm:.3f} ± {ssd:.3f}",
                     f"{rm:.3f} ± {rsd:.3f}", f"{km:.3f} ± {ksd:.3f}",
                     round(1e3 * statistics.median(r["step_s"]), 2),
                     round(statistics.median(r["step_s"]) / full_step, 3), int(r["mask_updates"][0]),
                     int(r["trainable"][0]), int(r["state_floats"][0])])
    sec.table("methods", ["method", "chosen knobs", "target acc", "source acc after", "retention (exact match)",
                          "retention (answer tokens)", "step ms", "step / full_ft", "mask updates",
                          "trainable entries", "optimizer-state floats"], rows)
    from icml25.tuning import selections_table

    sec.table("tuned alike (icml25.tuning, validation split, first seed)", *selections_table(sels))
    for m, sel_rf in ([("lift", res["rf_select"])] if res.get("rf_select") else []) + list(
            res.get("rf_select_other", {}).items()):
        m_rf = res["filter_ranks"][m]
        m_knobs = ", ".join(f"{k_}={v:.3g}" if isinstance(v, float) else f"{k_}={v}" for k_, v in chosen[m].items())
        sec.table(f"{m}: filter rank r_f chosen on validation (first seed, at its {m_knobs}, tuned at "
                  f"r_f={cfg.filter_rank}; the test column is for reading, not for choosing)",
                  ["r_f", "val acc", "val token acc", "test acc", "retention (tokens)", "chosen"],
                  [[x["filter_rank"]] + (["diverged"] * 4 if x.get("diverged") else
                                         [round(x["val"], 3), round(x["val_token"], 3), round(x["target"], 3),
                                          round(x["retention_token"], 3)]) + ["yes" if x["filter_rank"] == m_rf
                                                                              else ""]
                   for x in sel_rf])
    if tuning:
        grows = []
        for name, runs in grid.items():
            for r in runs:
                other_knobs = ", ".join(f"{k_}={v:g}" for k_, v in r["params"].items() if k_ != "lr") or "-"
                grows.append([name, f"{r['lr']:.2g}", other_knobs, round(r["val"], 3), round(r["val_token"], 3),
                              round(r["target"], 3), round(r["retention"], 3), round(r["retention_token"], 3),
                              "yes" if _key(name, r["params"]) == _key(name, chosen[name]) else ""])
        sec.table("every grid point tried (first seed; the test column is for reading, not for choosing)",
                  ["method", "lr", "second knob", "val acc", "val token acc", "test acc", "retention", "retention (tokens)",
                   "chosen"], grows)
    sec.table("before fine-tuning", ["source acc", "source acc (generated, icml25 exact_match)",
                                     "source answer-token acc", "target acc"],
              [[round(res["source_before"], 4), round(res["source_generated_before"], 4),
                round(res["source_token_before"], 4), round(res["target_before"], 4)]])
    import numpy as np
    from icml25.plots import grouped_bars, learning_curves

    learning_curves({name: np.asarray(r["losses"]) for name, r in M.items()}, out / "loss_curves.png",
                    xlabel="optimizer step", ylabel="train loss", title=f"SFT on {task}", logy=True)
    grouped_bars({"target acc": {n: r["target"] for n, r in M.items()},
                  "source retention": {n: r["retention"] for n, r in M.items()},
                  "source retention (tokens)": {n: r["retention_token"] for n, r in M.items()}},
                 out / "accuracy.png", ylabel="fraction", title="target accuracy and source retention")
    sec.figures += ["loss_curves.png", "accuracy.png"]
    if tuning:
        _tradeoff_plot(curves, level, out / "tradeoff.png")
        sec.figures.append("tradeoff.png")
    for d in res.get("diverged", []):
        sec.notes.append(f"{d['method']} diverged (non-finite loss) at {d['params']}; not selectable")
    sec.notes += [
        f"Source task {SOURCE_TASK!r} (pretraining, cached), target task {task!r}; held-out operands.",
        f"Methods tuned and trained in {time.perf_counter() - t0:.1f} s.",
        f"LIFT: {rf_how}" + (f" (the first-seed trade-off figure and table show LIFT's lr grid at r_f="
                             f"{cfg.filter_rank})." if tuning and res.get("rf_select") else "."),
        f"Runs in {cfg.workers} forked worker process(es), one torch thread each.",
        f"Tuning: {tuned}; validation = about 10% of the test bed's train-split operands held out by a hash "
        "(never trained on, disjoint from the test split); validation score = exact match + "
        f"{TIE_BREAK:g} x answer-token accuracy (the token term only breaks exact ties).",
    ]
    sec.notes += [s.note() for s in sels.values() if s.at_edge]
    return sec


def rank_sweep(cfg: Config, seeds: list[int], out: Path) -> Section:
    """LIFT's filter rank r_f swept at fixed k (budget r_b) on every seed, at LIFT's tuned knobs (lr, mask interval)."""
    sec = Section("rank sweep")
    env = _setup(cfg)
    comp = _CACHE.get("compare")
    tuned = comp is not None and "lift" in comp["methods"]
    lift_params = dict(comp["methods"]["lift"]["params"][0]) if tuned else {"lr": LR_CENTRES["lift"]}
    min_dim = min(min(s) for s in (comp["shapes"] if comp else [(cfg.hidden_size, cfg.hidden_size)]))
    chosen_rf = int(comp.get("filter_rank", cfg.filter_rank)) if tuned else cfg.filter_rank
    # first-seed runs at LIFT's knobs from the comparison's r_f choice (same runs: reused, not rerun)
    seed0 = {int(x["filter_rank"]): x for x in comp.get("rf_select", [])} if tuned else {}
    runs: dict[str, list[dict[str, Any]]] = {}
    todo: list[tuple[str, int]] = []
    ranks = sorted({int(r) for r in cfg.sweep_ranks if r} | {chosen_rf}) + [0] * (0 in cfg.sweep_ranks)
    for r in ranks:
        label = "full" if r == 0 or r >= min_dim else str(r)
        if label in runs or label in dict(todo):
            continue
        if tuned and r == chosen_rf:  # the comparison's LIFT runs (same knobs)
            M = comp["methods"]["lift"]
            runs[label] = [{k: M[k][i] for k in ("target", "retention_token", "retention", "curve")}
                           for i in range(len(seeds))]
            continue
        todo.append((label, r))
    # full rank: W' = W, the |W| mask (tested), run as the magnitude method with LIFT's knobs
    jobs: list[dict[str, Any]] = []
    spans = []
    for label, r in todo:
        have = seed0.get(r) if label != "full" else None
        todo_seeds = seeds[1:] if have is not None else seeds
        spans.append((label, have, len(jobs), len(todo_seeds)))
        jobs += [{"method": "magnitude" if label == "full" else "lift", "params": lift_params, "seed": s,
                  "filter_rank": None if label == "full" else r} for s in todo_seeds]
    recs = run_many(jobs, cfg)
    for label, have, start, n in spans:
        got = ([have] if have is not None else []) + recs[start: start + n]
        if any(x.get("diverged") for x in got):
            raise FloatingPointError(f"rank sweep r_f={label} diverged at LIFT's tuned knobs {lift_params}")
        runs[label] = got
    order = {str(r) if r else "full": i for i, r in enumerate(ranks)}
    runs = dict(sorted(runs.items(), key=lambda kv: order.get(kv[0], len(order))))
    labels = list(runs)
    rows = []
    for lab in labels:
        tm, tsd = mean_sd([x["target"] for x in runs[lab]])
        km, ksd = mean_sd([x["retention_token"] for x in runs[lab]])
        rows.append([lab, f"{tm:.3f} ± {tsd:.3f}", f"{km:.3f} ± {ksd:.3f}", len(runs[lab])])
    knob_s = ", ".join(f"{k}={v:.3g}" if isinstance(v, float) else f"{k}={v}" for k, v in lift_params.items())
    sec.table(f"rank sweep (r_b={cfg.budget_rank}, {knob_s} = LIFT's tuned knobs)",
              ["r_f", "target acc", "retention (answer tokens)", "seeds"], rows)
    small = str(chosen_rf)
    how = (f"r_f={small} is the comparison's r_f, chosen on the validation split (first seed) from "
           "{" + ", ".join(str(r) for r in sorted(seed0)) + "}" if seed0 else
           f"r_f={small} is the comparison's pre-set r_f (not picked from the sweep)")
    if small in runs and "full" in runs:
        # gates: the small-r_f runs are the comparison's LIFT runs (its gate); full rank is run here at LIFT's knobs
        cg = _CACHE.get("gates", {})
        full_gate = method_gates(sec, {"full rank (magnitude mask at LIFT's knobs)": {
            "target": [x["target"] for x in runs["full"]], "curve": [x.get("curve") for x in runs["full"]]}},
            cfg, env["befores"]["target"])
        acc_gates = [g for g in (cg.get("lift"),) if g] + list(full_gate.values())
        ret_gates = acc_gates + [g for g in (cg.get("_retention"),) if g]
        sec.add(Claim.compare(
            claim=f"a small filter rank (r_f={small}) beats full rank (magnitude) on target accuracy",
            metric=f"{cfg.target_task} exact match (held-out operands)",
            ours=[x["target"] for x in runs[small]], baseline=[x["target"] for x in runs["full"]],
            baseline_name="r_f = full rank", kind="paper", paired=True,
            paper="principal weights emerge after rank reduction: the top-k of a low-rank approximation beat the "
                  "top-k of W itself (paper title, Sec. 3)", gates=acc_gates,
            note=f"{how}; every r_f at LIFT's tuned "
                 f"knobs {knob_s} (one setting for the sweep, not tuned per r_f), {cfg.steps} steps, "
                 f"{len(seeds)} seeds paired"))
        sec.add(Claim.compare(
            claim=f"a small filter rank (r_f={small}) retains more source knowledge than full rank",
            metric=f"{SOURCE_TASK} answer-token retention", ours=[x["retention_token"] for x in runs[small]],
            baseline=[x["retention_token"] for x in runs["full"]], baseline_name="r_f = full rank", kind="paper",
            paired=True, paper="rank reduction is what makes principal weights good (paper Sec. 3)", gates=ret_gates,
            note=f"same runs as the accuracy claim; {knob_s}"))
    from icml25.plots import save_figure
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6.5, 4.0))
    ax = fig.add_subplot()
    xs = list(range(len(labels)))
    for key, name in (("target", "target exact match"), ("retention_token", "source retention (tokens)")):
        means = [mean_sd([x[key] for x in runs[lab]]) for lab in labels]
        ax.errorbar(xs, [m for m, _ in means], yerr=[s for _, s in means], marker="o", capsize=3, label=name)
    ax.set_xticks(xs, labels)
    ax.set_xlabel("filter rank r_f (full = magnitude)")
    ax.set_ylabel("fraction")
    ax.set_title(f"LIFT rank sweep at fixed k (r_b={cfg.budget_rank}), mean ± sd over {len(seeds)} seeds")
    ax.legend(fontsize=8)
    save_figure(fig, out / "rank_sweep.png")
    sec.figures.append("rank_sweep.png")
    return sec


def _balance(specs: list[Any], n: int) -> list[list[Any]]:
    """Split RSS specs into ``n`` fork servers of about equal work (largest first onto the lightest server); the
    work of a child grows with the model's weights, LIFT's (SVD refreshes) and Full FT's steps cost more."""
    cost = {"lift": 3.0, "full_ft": 2.0}
    order = sorted(specs, key=lambda s: -(s.hidden_size**2 * s.num_layers * cost.get(s.method, 1.0)))
    bins: list[list[Any]] = [[] for _ in range(n)]
    load = [0.0] * n
    for s in order:
        i = load.index(min(load))
        bins[i].append(s)
        load[i] += s.hidden_size**2 * s.num_layers * cost.get(s.method, 1.0)
    return bins


def memory(cfg: Config, seeds: list[int], out: Path) -> Section:
    """Weights / gradients / optimizer state and peaks: allocation trace in-process, peak RSS in fresh processes."""
    from lift.finetune import MethodConfig
    from lift.memory import MemorySpec, measure_training_memory, rss_peak_batch

    sec = Section("memory")
    env = _setup(cfg)
    comp = _CACHE.get("compare", {}).get("methods", {})
    mib = 2.0**20
    t0 = time.perf_counter()
    t_mask = time_mask(cfg.mask_timing_dim)  # alone: a timing
    t1 = time.perf_counter()
    # the peak-RSS fork servers start now and run beside the in-process allocation trace (bytes, not times)
    specs = [MemorySpec(method="lift" if m == "lift_dense" else m, hidden_size=h, num_layers=L,
                        budget_rank=cfg.budget_rank, filter_rank=cfg.filter_rank, sparse_grads=m != "lift_dense",
                        seed=seeds[i % len(seeds)])
             for h, L in cfg.rss_models for m in cfg.rss_methods
             for i in range(cfg.rss_repeats if m in ("lora", "lift") else 1)]
    bins = _balance(specs, 2)
    from concurrent.futures import ThreadPoolExecutor

    rss_pool = ThreadPoolExecutor(max_workers=2)
    futures = [rss_pool.submit(rss_peak_batch, b) for b in bins if b]
    trace: dict[str, list[dict[str, Any]]] = {}
    for label in ("full_ft", "lora", "lift", "lift_dense"):
        method = "lift" if label == "lift_dense" else label
        lr = comp[method]["lr"][0] if method in comp else LR_CENTRES[method]
        for s in seeds[:3] if label in ("lora", "lift") else seeds[:1]:
            mcfg = MethodConfig(budget_rank=cfg.budget_rank, filter_rank=cfg.filter_rank, update_interval=2,
                                eps=cfg.eps, seed=s, lrs={method: lr}, sparse_grads=label != "lift_dense")
            trace.setdefault(label, []).append(measure_training_memory(
                method, env["base"], env["tok"], target_splits(cfg.n_train, cfg.n_val, seed=s)[0], cfg=mcfg,
                steps=cfg.memory_steps, batch_size=cfg.batch_size, seed=s))
    rows = []
    for label, ms in trace.items():
        live = ms[0]["live"]
        rows.append([label, round(live["params"] / mib, 3), round(live["grads"] / mib, 4),
                     round(live["optimizer"] / mib, 4), round(statistics.mean(m["peak_bytes"] for m in ms) / mib, 3)])
    sec.table(f"memory, tiny LM (hidden {cfg.hidden_size} x {cfg.num_layers}), batch {cfg.batch_size}",
              ["method", "weights MiB (live)", "gradients MiB (live, after backward)",
               "optimizer state MiB (live)", "peak MiB (allocation trace)"], rows)
    if "lift" in trace and "lift_dense" in trace:
        from lift.optim import select_linear_weights

        k = sum(min((m + n) * cfg.budget_rank, m * n)
                for m, n in (tuple(w.shape) for _, w in select_linear_weights(env["base"])))
        sec.add(Claim.threshold(
            claim="LIFT with sparse gradients keeps exactly k gradient floats after backward",
            metric="|gradient bytes alive after backward - 4k| (counted from the live tensors)",
            ours=[abs(m["live"]["grads"] - 4 * k) for m in trace["lift"]], threshold=0.5, higher_is_better=False,
            kind="property", deterministic=True, paper="PEFT-level memory (paper Sec. 4)",
            note=f"k = {k}; dense gradients (lift_dense, the official code's path): "
                 f"{trace['lift_dense'][0]['live']['grads']} bytes"))
    if "lift" in trace and "lora" in trace:
        sec.add(Claim.threshold(
            claim="LIFT allocation-trace peak within 1.3x of LoRA's (tiny LM)",
            metric="peak bytes of live torch tensors, LIFT / LoRA (per seed)",
            ours=[a["peak_bytes"] / b["peak_bytes"] for a, b in zip(trace["lift"], trace["lora"])], threshold=1.3,
            higher_is_better=False, kind="target", paper="memory on par with PEFT methods (paper Sec. 4)",
            note=f"torch profiler allocation trace over model copy + set-up + {cfg.memory_steps} steps (batch "
                 f"{cfg.batch_size}, a mask refresh included); includes the weights, which dominate here"))
    t_trace = time.perf_counter() - t1
    # --- peak RSS in fresh processes
    try:
        got_lists = [f.result() for f in futures]
    finally:
        rss_pool.shutdown(wait=True)
    t_rss = time.perf_counter() - t1
    if specs:
        specs = [s for b in bins if b for s in b]
        got = [r for lst in got_lists for r in lst]
        by: dict[tuple[int, int], dict[str, list[dict[str, Any]]]] = {}
        for spec, r in zip(specs, got):
            label = "lift_dense" if spec.method == "lift" and not spec.sparse_grads else spec.method
            by.setdefault((spec.hidden_size, spec.num_layers), {}).setdefault(label, []).append(r)
        rrows = []
        for (h, L), per in sorted(by.items()):
            per = {m: per[m] for m in cfg.rss_methods if m in per}
            for label, rs in per.items():
                live = rs[0]["live"]
                rrows.append([f"{h} x {L} ({rs[0]['n_params'] / 1e6:.1f} M)", label,
                              round(live["params"] / mib, 1), round(live["grads"] / mib, 2),
                              round(live["optimizer"] / mib, 2),
                              round(statistics.mean(x["peak_increase_bytes"] for x in rs) / mib, 1),
                              round(statistics.mean(x["step_s"] for x in rs), 3), len(rs)])
            if "lift" in per and "lora" in per:
                ratios = [a["peak_increase_bytes"] / b["peak_increase_bytes"]
                          for a, b in zip(per["lift"], per["lora"])]
                sec.add(Claim.threshold(
                    claim=f"LIFT peak RSS increase within 1.3x of LoRA's (random-weight Llama {h} x {L}, "
                          f"{per['lift'][0]['n_params'] / 1e6:.0f} M params)",
                    metric="peak RSS increase over the RSS after model build, LIFT / LoRA (per fresh process pair)",
                    ours=ratios, threshold=1.3, higher_is_better=False, kind="target",
                    paper="memory on par with PEFT methods (paper Sec. 4)",
                    note=f"{cfg.rss_repeats} fresh (forked) processes per method, 2 steps batch 16 with a mask "
                         "refresh (randomized SVD), one thread, MALLOC_MMAP_THRESHOLD_=64 KiB; LIFT with sparse "
                         "gradients; "
                         + (f"LIFT with dense gradients (official path): "
                            f"{statistics.mean(x['peak_increase_bytes'] for x in per['lift_dense']) / mib:.1f} MiB"
                            if "lift_dense" in per else "")))
            if "lift" in per and "full_ft" in per:
                sec.add(Claim.compare(
                    claim=f"LIFT peak RSS increase below Full FT's (Llama {h} x {L})",
                    metric="peak RSS increase (bytes)",
                    ours=[x["peak_increase_bytes"] for x in per["lift"]],
                    baseline=[x["peak_increase_bytes"] for x in per["full_ft"]], baseline_name="full_ft",
                    higher_is_better=False, kind="target", paper="LIFT memory far below Full FT (paper Sec. 4)",
                    note="fresh processes; random weights (memory and timing only)"))
        sec.table("peak RSS in fresh processes (random-weight models; timing and memory only)",
                  ["model (params)", "method", "weights MiB", "gradients MiB (live after backward)",
                   "optimizer state MiB", "peak RSS increase MiB", "step s (1 thread; 2 servers + the trace on 2 cores)", "processes"], rrows)
    sec.notes.append(f"memory: mask timing {t1 - t0:.1f} s, allocation trace {t_trace:.1f} s (beside the RSS fork "
                     f"servers), peak-RSS fork servers {t_rss:.1f} s ({len(specs)} children in {len(futures)} "
                     "servers)")
    sec.table("mask computation", ["matrix", "svd", "filter_rank", "budget_rank", "CPU threads", "seconds"],
              [[f"{cfg.mask_timing_dim}x{cfg.mask_timing_dim}", "randomized", min(128, cfg.mask_timing_dim),
                min(128, max(1, cfg.mask_timing_dim // 4)), 1, round(t_mask, 3)]])
    return sec


EXPERIMENTS = [compare, rank_sweep, memory]


def reproduce(*, quick: bool, smoke: bool, out: Path, seed: int, task: str = "main") -> Report:
    """Run the experiment list of ``task`` (:data:`lift.config.TASK_BUDGETS`; ``main`` = :data:`BUDGETS`) on the
    picked budget."""
    from lift.config import TASK_BUDGETS
    from lift.errors import LiftConfigError

    if task not in TASK_BUDGETS:
        raise LiftConfigError(f"task must be one of {', '.join(TASK_BUDGETS)}; got {task!r}")
    budgets = TASK_BUDGETS[task]
    cfg = budgets.pick(quick=quick, smoke=smoke)
    experiments = [e for e in EXPERIMENTS if e.__name__ in cfg.experiments]
    try:
        rep = run_experiments("lift", experiments, budgets, quick=quick, smoke=smoke, out=Path(out), seed=seed,
                              progress=not smoke)
    finally:
        _CACHE.clear()
    rep.notes.append(f"Task {task!r}. Sizes: {cfg}.")
    return rep
