"""Shared pieces of the reproduction: data splits, the pretrained model (to a validation plateau), tuning alike,
the inference phase, diagnostics and formatting."""

from __future__ import annotations

import time
from dataclasses import astuple, replace
from pathlib import Path

import numpy as np
import torch

from safediffcon.config import Config

PAPER = ("paper (abstract, Burgers and the other tasks): SafeDiffCon is the only method that satisfies all safety "
         "constraints; the classical and deep-learning baselines violate them. No Burgers table values are quoted "
         "here (the note gives none).")
PAPER_J = ("paper (abstract): while satisfying the safety constraints, SafeDiffCon achieves the best control "
           "performance (lowest J) among the methods; no table values quoted")
PAPER_INFFT = ("paper (abstract, method): during inference the model 'dynamically adjusts both its generation process "
               "and parameters through iterative guidance and fine-tuning' (InfFT, Q re-calibrated after each step) "
               "to satisfy the safety constraint; the official script runs 2 effective updates; no Burgers table "
               "values quoted")
VARIANTS = ["(d) released chaining: InfFT from the pretrained model at Q=0",
            "(d) official quantile (weighted scores) in InfFT",
            "(d) InfFT weights with lambda = lambda_g (released)",
            "(d) re-simulated from the generated row 0 (released)",
            "(d) InfFT evaluated on the released EMA",
            "(d) s_hat = max u_hat^2 of the generated state (ours, not the paper's)",
            "(d) released chaining + released safety-row mask (own pretraining)"]
STATE_ARM = "SafeDiffCon, s_hat = max u^2"
METHODS = ["(a) diffusion, no safety", "(b) guidance, Q=0", "(c) post-training alone", "(c') post-training, no guidance",
           "(d) SafeDiffCon", "zero control", "(f) proportional feedback (tuned K)"]
PENALISED = "J + R_s (re-simulated; each unsafe test instance adds 1/n, so a safe control wins over an unsafe one)"


def _splits(cfg: Config, seed: int) -> dict:
    from safediffcon.data import make_split

    kw = dict(nu=cfg.nu, dt=cfg.dt, amp=cfg.eval_amp, safe_only=True, u_bound=cfg.u_bound)
    return {name: make_split(n, cfg.nx, seed=1000 * seed + k, **kw)
            for k, (name, n) in enumerate([("cal", cfg.n_cal), ("holdout", cfg.n_holdout), ("val", cfg.n_val),
                                           ("test", cfg.n_test)], start=1)}


_CACHE: dict = {}


def _pretrained(cfg: Config, seed: int, *, row_mask: bool | None = None):
    """The run's training set and pretrained model (cached: ``speed`` and a second call reuse it);
    ``row_mask`` overrides ``cfg.official_safety_row_mask`` (same data, initialisation and steps)."""
    if row_mask is not None:
        cfg = replace(cfg, official_safety_row_mask=row_mask)
    key = (astuple(cfg), seed)
    if key not in _CACHE:
        from safediffcon.data import make_split
        from safediffcon.method import SafeDiffCon

        train = make_split(cfg.n_train, cfg.nx, nu=cfg.nu, dt=cfg.dt, amp=cfg.train_amp, seed=1000 * seed)
        from safediffcon.diffusion import to_image

        val = make_split(cfg.n_pretrain_val, cfg.nx, nu=cfg.nu, dt=cfg.dt, amp=cfg.train_amp, seed=1000 * seed + 9)
        model = SafeDiffCon(**cfg.model_kwargs(seed))
        x_val = to_image(val.u, val.f, scaler=model.scaler, s_rows=model.diffusion.s_rows)

        def validate(m) -> float:  # the denoising loss on held-out trajectories, the same t and noise every time
            g = torch.Generator().manual_seed(70_000)
            with torch.no_grad():
                return float(np.mean([m.diffusion.loss(x_val, generator=g).item() for _ in range(4)]))

        t0 = time.perf_counter()
        model.pretrain(train, steps=cfg.pretrain_steps, batch_size=cfg.batch_size, lr=cfg.pretrain_lr,
                       evaluate=validate, eval_every=cfg.pretrain_eval_every, patience=cfg.pretrain_patience,
                       ema=cfg.pretrain_ema, min_delta=cfg.pretrain_min_delta)
        while len(_CACHE) >= 2:
            _CACHE.pop(next(iter(_CACHE)))
        _CACHE[key] = (train, model, time.perf_counter() - t0)
    return _CACHE[key]


def _score(metrics: dict) -> float:
    """Validation score of a controller (lower is better): J + R_s, so any unsafe instance outweighs J."""
    return metrics["J"] + metrics["R_s"]


def _run_infft(cfg: Config, start, tt: tuple, cal, *, lam_g: float, q_carry: float, released_chain: bool,
               tie: bool, gen_seed: int, qmethod: str | None = None, ema: bool = False, on_iter=None):
    """SafeDiffCon's inference phase on the conditions ``tt = (u0, u_target)``: a copy of ``start`` with guidance
    ``lam_g``, InfFT for ``cfg.infft_iters`` iterations (Q carried from ``q_carry`` unless ``released_chain``: then
    from 0, as the released pipeline), ready to sample. ``on_iter(k, model)`` sees the model after 0, 1, ...,
    ``cfg.infft_iters`` iterations (the InfFT curve, from this one fine-tuning run)."""
    m = start.clone()
    m._gen.manual_seed(gen_seed)
    m.guidance_lambda = lam_g
    if qmethod is not None:
        m.quantile_method = qmethod
    if released_chain:
        m.Q = 0.0
    if on_iter is not None:
        on_iter(0, m)
    if cfg.infft_iters > 0:
        m.fine_tune(*tt, cal, iters=cfg.infft_iters, lr=cfg.infft_lr, extra_Q=None if released_chain else q_carry,
                    weight_lambda=m.guidance_lambda if tie else None, ema=ema, ema_beta=cfg.ema_beta,
                    ema_update_every=cfg.ema_update_every, on_iter=on_iter)
    return m


def _tune(cfg: Config, post, q_post: float, val, cal, s: int, state=None) -> tuple[dict, tuple, list, list]:
    """lambda_g of SafeDiffCon (and of its ``state`` arm, ``(model, Q)``, when given) and mu of the adjoint, tuned
    alike (same grid size, each choice at a grid edge extended by up to ``cfg.tune_extend`` steps) on ``val``.

    Each lambda_g trial runs SafeDiffCon's whole inference phase as on the test set: InfFT on the validation
    conditions (``cfg.infft_iters`` iterations, re-calibrated on ``cal``) and guided sampling; the adjoint's trial
    is its whole optimisation at that mu."""
    from icml25.tuning import selections_table, tune_alike

    from safediffcon.adjoint import adjoint_control
    from safediffcon.feedback import proportional_control
    from safediffcon.metrics import evaluate_control

    ev = dict(nu=cfg.nu, dt=cfg.dt, u_bound=cfg.u_bound)
    adj_val = adjoint_control(val.u0, val.u_target, mus=cfg.mu_grid, iters=cfg.adjoint_iters, lr=cfg.adjoint_lr,
                              **ev)

    def guided(model, q: float):
        def ev_guided(p: dict) -> float:
            if p["guidance_lambda"] < 0:
                return float("nan")
            m = _run_infft(cfg, model, (val.u0, val.u_target), cal, lam_g=float(p["guidance_lambda"]), q_carry=q,
                           released_chain=cfg.infft_from_pretrained, tie=cfg.infft_tie_lambda, ema=cfg.infft_ema,
                           gen_seed=30_000 + s)
            f = m.control(val.u0, val.u_target)
            return _score(evaluate_control(val.u0, f, val.u_target, **ev))
        return ev_guided

    def eval_adj(p: dict) -> float:
        mu = float(p["mu"])
        if mu < 0:
            return float("nan")
        if mu not in adj_val:  # a value added by the grid extension
            adj_val.update(adjoint_control(val.u0, val.u_target, mus=[mu], iters=cfg.adjoint_iters,
                                           lr=cfg.adjoint_lr, **ev))
        return _score(evaluate_control(val.u0, adj_val[mu], val.u_target, **ev))

    arms = {"SafeDiffCon": (guided(post, q_post), {"guidance_lambda": list(cfg.guidance_grid)})}
    if state is not None:
        arms[STATE_ARM] = (guided(*state), {"guidance_lambda": list(cfg.state_guidance_grid)})
    arms["adjoint"] = (eval_adj, {"mu": list(cfg.mu_grid)})

    def eval_fb(p: dict) -> float:
        k = float(p["gain"])
        if k < 0:
            return float("nan")
        f = proportional_control(val.u0, val.u_target, gain=k, nu=cfg.nu, dt=cfg.dt)
        if not torch.isfinite(f).all():  # a gain beyond the explicit loop's stability (K > 20): diverged
            return float("inf")
        return _score(evaluate_control(val.u0, f, val.u_target, **ev))

    arms["proportional feedback"] = (eval_fb, {"gain": list(cfg.feedback_grid)})
    sels = tune_alike(arms, higher_is_better=False, extend=cfg.tune_extend)
    chosen = {"guidance_lambda": sels["SafeDiffCon"].params["guidance_lambda"],
              "mu": float(sels["adjoint"].params["mu"]),
              "gain": float(sels["proportional feedback"].params["gain"])}
    if state is not None:
        chosen["state_guidance_lambda"] = sels[STATE_ARM].params["guidance_lambda"]
    notes = [f"tuning {n}: {sl.note()}" for n, sl in sels.items()]
    trials = [[n, ", ".join(f"{k}={v:g}" for k, v in t["params"].items()), t["score"]]
              for n, sl in sels.items() for t in sl.trials]
    return chosen, selections_table(sels), notes, trials


def _score_diagnostic(model, cal, cfg: Config, seed: int) -> dict[str, float]:
    """Calibration-setting samples of ``cal`` (true f inpainted): the error ``|s_hat - s|`` of the safety channel
    (the paper's estimate) and of ``max u_hat^2`` of the generated state, the uniform-weight quantile Q of each, and
    the effective calibration size of the weights at ``Q_prev = Q`` (below ``1/(1 - alpha)`` the textbook weighted
    quantile is +inf)."""
    from safediffcon.conformal import quantile, relative_safety_weights
    from safediffcon.diffusion import s_hat

    model._gen.manual_seed(seed)
    with torch.no_grad():
        x = model.diffusion.sample(cal.u0, cal.u_target, steps=model.ddim_steps, eta=model.eta, f_cond=cal.f,
                                   generator=model._gen)
    st = cal.s.double().numpy()
    out = {}
    for est in ("channel", "state"):
        err = np.abs(s_hat(x, scaler=model.scaler, estimate=est).double().numpy() - st)
        q = quantile(err, None, alpha=cfg.alpha)
        w = relative_safety_weights(st, Qs=(q,), s0=model.s0, lam=model.weight_lambda)
        out[f"{est}: median |s_hat - s|"] = float(np.median(err))
        out[f"{est}: Q at Q_prev = 0 (uniform weights)"] = q
        out[f"{est}: effective calibration size at Q_prev = Q"] = float(w.sum() ** 2 / (w**2).sum())
    return out


def _fmt(v: list[float]) -> str:
    if len(v) == 0:
        return "-"
    return f"{np.mean(v):.4f} ± {np.std(v, ddof=1) if len(v) > 1 else 0.0:.4f}"


def _curve_plot(curve: dict, seeds: list[int], ks: list[int], path: Path) -> None:
    """J and R_s of SafeDiffCon against the number of InfFT iterations: one thin line per seed, the mean thick."""
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt
    from icml25.plots import save_figure

    fig, axes = plt.subplots(1, 2, figsize=(7, 2.8))
    for ax, key, label in ((axes[0], "J", "J (re-simulated)"), (axes[1], "R_s", "R_s (unsafe test instances)")):
        arr = np.array([curve[key][s] for s in seeds], dtype=float)
        for row in arr:
            ax.plot(ks, row, color="0.7", lw=0.8, marker=".")
        ax.plot(ks, arr.mean(axis=0), color="C0", lw=2, marker="o", label=f"mean over {len(seeds)} seeds")
        ax.set_xlabel("InfFT iterations")
        ax.set_ylabel(label)
        ax.set_xticks(ks)
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=7)
    fig.suptitle("SafeDiffCon: inference-time fine-tuning curve", fontsize=9)
    save_figure(fig, path, dpi=90)
