"""Running the fine-tuning jobs of ``lift reproduce``: the cached pretrained base, one run per (method, knobs,
seed), forked workers, the tuning grids and the alike tuning of every method (:func:`run_methods`)."""

from __future__ import annotations

import copy
import itertools
import time
import zlib
from typing import Any

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
