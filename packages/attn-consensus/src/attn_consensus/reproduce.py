"""Side-by-side reproduction of the paper's claims at CPU scale (``attn-consensus reproduce [--quick|--smoke]``).

1. :func:`ode_consensus`: every scenario of :data:`~attn_consensus.scenarios.SCENARIOS` (the paper's assumption
   sets and their broken controls: causal vs full, V = I vs random / negative-definite V, hemisphere vs uniform
   start, constant vs time-varying Q, K) on the same seeds, for every d in ``cfg.dims`` and QK scale in
   ``cfg.scales``; one run per (seed, d, scale), all seeds batched into one RK4 integration. Claims: causal V = I
   → diagnostic < 1e-6 and x_1 unmoved; full V = I from a hemisphere → diameter → 0; the share of runs reaching
   consensus at the largest scale, from a uniform start, and with broken assumptions; decay rates per scenario.
2. :func:`gpt2_consensus`: the consensus loop over a tiny GPT-2 (random init, trained on the tiny-LM tasks, or
   re-drawn every pass; MLPs on/off; causal vs bidirectional mask) on random prompts, same prompts per seed.
3. :func:`performance`: 256 batched simulations vs a Python loop; the loop's overhead over plain passes.

Nothing is tuned: the method and its controls have no hyper-parameter fitted to data (the scenarios are the
comparisons), so there is no validation split to tune on.
"""

from __future__ import annotations

import math
import time
from pathlib import Path

import numpy as np
import torch
from icml25.claims import Claim, Report
from icml25.experiment import Section, run_experiments

from attn_consensus.config import BUDGETS, Config
from attn_consensus.diagnostics import (
    consensus_gap,
    cross_cluster_attention,
    decay_rate,
    first_token_drift,
    geodesic_diameter,
)
from attn_consensus.flow import AttentionFlow, integrate
from attn_consensus.scenarios import SCENARIOS, build_scenario

PAPER_QUAL = ("the paper reports plots, not numbers: all tokens converge to each other (Section 5 simulations; "
              "no simulation settings published)")


def _fmt(x: float) -> str:
    return "nan" if not np.isfinite(x) else f"{x:.3g}"


def _batched_scenario(name: str, cfg: Config, d: int, seeds: list[int]) -> tuple[AttentionFlow, torch.Tensor]:
    """One flow holding every seed's runs: batch ``[seed, scale]`` flattened (seed-major)."""
    parts = [build_scenario(name, n=cfg.n, d=d, scales=cfg.scales, runs=1, layers=cfg.layers,
                            layer_time=cfg.layer_time, seed=s) for s in seeds]
    q = torch.cat([p[0].q for p in parts])  # [S*C, L, H, d, d]
    k = torch.cat([p[0].k for p in parts])
    v = torch.cat([p[0].v for p in parts])
    x0 = torch.cat([p[1] for p in parts])  # [S*C, n, d]
    return AttentionFlow(dim=d, mask=parts[0][0].mask, q=q, k=k, v=v, layer_time=cfg.layer_time), x0


def _floor(dtype: torch.dtype) -> float:
    """Below this the diagnostic of a simulation in ``dtype`` is rounding noise (rate fits stop there)."""
    return 1e-9 if dtype == torch.float32 else 1e-13


def ode_consensus(cfg: Config, seeds: list[int], out: Path) -> Section:
    sec = Section("ode")
    dtype = torch.float32 if cfg.sim_dtype == "float32" else torch.float64
    n_s, n_c = len(seeds), len(cfg.scales)
    save_every = max(1, cfg.steps // 100)
    res: dict[tuple[str, int], dict[str, np.ndarray]] = {}
    curves: dict[str, np.ndarray] = {}
    for name in SCENARIOS:
        for d in cfg.dims:
            flow, x0 = _batched_scenario(name, cfg, d, seeds)
            tr = integrate(flow, x0.to(dtype), dt=cfg.dt, steps=cfg.steps, save_every=save_every)
            gap = consensus_gap(tr.x).numpy()  # [S_t, S*C]
            diam = geodesic_diameter(tr.final).numpy()  # [S*C]
            rates = np.array([decay_rate(gap[:, b], tr.t, floor=_floor(dtype)) for b in range(gap.shape[1])])
            drift = np.array([first_token_drift(tr.x[:, b]) for b in range(gap.shape[1])])
            # the pull left between separate clusters at T (what a merge would need; module docstring)
            coupling = cross_cluster_attention(flow.attention(tr.final, float(tr.t[-1])), tr.final).numpy()  # [S*C]
            # trend over the last fifth of the horizon: diagnostic at T over its value at 0.8 T (1 = plateau)
            i80 = int(round(0.8 * (len(tr.t) - 1)))
            with np.errstate(divide="ignore", invalid="ignore"):
                tail = np.where(gap[i80] > 0, gap[-1] / gap[i80], 1.0)
            res[name, d] = {"gap": gap[-1].reshape(n_s, n_c), "diam": diam.reshape(n_s, n_c),
                            "tail": tail.reshape(n_s, n_c), "gap80": gap[i80].reshape(n_s, n_c),
                            "rate": rates.reshape(n_s, n_c), "drift": drift.reshape(n_s, n_c),
                            "coupling": coupling.reshape(n_s, n_c)}
            if d == cfg.dims[-1]:
                curves[name] = gap.reshape(len(tr.t), n_s, n_c)
    times = tr.t
    small = [i for i, s in enumerate(cfg.scales) if s < max(cfg.scales)] or list(range(n_c))
    big = [i for i, s in enumerate(cfg.scales) if s == max(cfg.scales)]
    scale_txt = ", ".join(_fmt(cfg.scales[i]) for i in small)
    dims_txt = ", ".join(map(str, cfg.dims))

    def per_seed(name: str, key: str, cols: list[int], how) -> list[float]:
        return [float(how(np.concatenate([res[name, d][key][s, cols] for d in cfg.dims]))) for s in range(n_s)]

    setting = f"n = {cfg.n}, d ∈ {{{dims_txt}}}, QK scale ∈ {{{scale_txt}}}, RK4 dt = {cfg.dt}, T = {cfg.horizon}"
    for name, label in (("causal", "constant Q, K"), ("causal-tv", f"piecewise-constant Q(t), K(t), {cfg.layers} "
                                                                    "layers")):
        sec.add(Claim.threshold(
            claim=f"Causal attention, V = I, {label}: every token converges to x_1 (diagnostic 1 − mean_j cos(x_1, "
                  f"x_j) < {cfg.gap_tol:g} at T, worst run per seed)",
            metric="max diagnostic at T", ours=per_seed(name, "gap", small, np.max), threshold=cfg.gap_tol,
            higher_is_better=False, kind="paper", paper=PAPER_QUAL + "; causal theorem: convergence to x_1 for "
            "bounded time-varying Q, K and V = I", note=setting))
    # the theorem's hard case: two nearly antipodal clusters start near the unstable equilibrium; convergence is
    # judged by the fitted exponential decay rate of the diagnostic (a rate, not a finite-T threshold)
    anti_rate = [float(np.nanmin(np.concatenate([res["causal-antipodal", d]["rate"][s, small] for d in cfg.dims])))
                 for s in range(n_s)]
    anti_share = float(np.mean([np.mean(res["causal-antipodal", d]["gap"][:, small] < cfg.gap_tol)
                                for d in cfg.dims]))
    sec.add(Claim.threshold(
        claim=f"Causal attention, V = I, two nearly antipodal clusters (the theorem's hard case): the diagnostic "
              f"decays exponentially in every run (fitted rate λ ≥ {cfg.min_rate:g}, worst run per seed)",
        metric="min fitted decay rate λ of the diagnostic (y ≈ C e^{−λt}, last half above the float floor)",
        ours=anti_rate, threshold=cfg.min_rate, higher_is_better=True, kind="paper",
        paper=PAPER_QUAL + "; causal theorem: convergence to x_1 for almost every start, antipodal starts included "
                           "(slowly: near the unstable equilibrium)",
        note=f"{setting}; share of runs with diagnostic < {cfg.gap_tol:g} at T: {_fmt(anti_share)}; the rate fit "
             "is what separates slow convergence from none (for two tokens with Q = K = 0 the closed form gives "
             "λ = 1)"))
    sec.add(Claim.threshold(
        claim="Causal attention, V = I: the first token x_1 never moves (max |x_1(t) − x_1(0)| over all runs and "
              "scales, constant and time-varying Q, K)",
        metric="max leader drift", ours=[max(a, b) for a, b in zip(per_seed("causal", "drift", list(range(n_c)),
                                                                             np.max),
                                                                    per_seed("causal-tv", "drift",
                                                                             list(range(n_c)), np.max))],
        threshold=1e-15, higher_is_better=False, kind="property", deterministic=True,
        paper="ẋ_1 = P_{x_1} x_1 = 0 (derived in the note)", note="bit-exact with one head"))
    for name, label in (("hemisphere", "constant Q, K"), ("hemisphere-tv", "piecewise-constant Q(t), K(t)")):
        sec.add(Claim.threshold(
            claim=f"Full attention, V = I, open-hemisphere start, {label}: consensus (geodesic diameter at T < "
                  f"{cfg.consensus_tol:g} rad for every sampled Q, K)",
            metric="max diameter at T (rad)", ours=per_seed(name, "diam", small, np.max),
            threshold=cfg.consensus_tol, higher_is_better=False, kind="paper",
            paper=PAPER_QUAL + "; full-attention theorem: consensus from an open hemisphere for bounded Q(t), K(t)",
            note=setting))
    theorem = ("causal", "causal-tv", "hemisphere", "hemisphere-tv")
    if big and big != small:
        share_big = [float(np.mean([np.mean(res[nm, d]["diam"][s, big] < cfg.consensus_tol)
                                    for nm in theorem for d in cfg.dims])) for s in range(n_s)]
        missed = np.concatenate([res[nm, d]["coupling"][:, big][res[nm, d]["diam"][:, big] >= cfg.consensus_tol]
                                 for nm in theorem for d in cfg.dims])
        total = len(theorem) * len(cfg.dims) * n_s * len(big)
        tails = np.concatenate([res[nm, d]["tail"][:, big][res[nm, d]["diam"][:, big] >= cfg.consensus_tol]
                                for nm in theorem for d in cfg.dims])
        miss_rows = []
        for nm in theorem:
            for d in cfg.dims:
                r = res[nm, d]
                for s_i in range(n_s):
                    for c in big:
                        if r["diam"][s_i, c] >= cfg.consensus_tol:
                            miss_rows.append([nm, d, seeds[s_i], _fmt(float(r["gap80"][s_i, c])),
                                              _fmt(float(r["gap"][s_i, c])), _fmt(float(r["tail"][s_i, c])),
                                              _fmt(float(r["diam"][s_i, c])), _fmt(float(r["coupling"][s_i, c]))])
        if miss_rows:
            sec.table(f"Runs under the theorems' assumptions at QK scale {_fmt(max(cfg.scales))} that missed consensus "
                      f"by T = {cfg.horizon:g}: the diagnostic at 0.8 T and at T, their ratio (< 1: still decreasing; "
                      "≈ 1: plateau over the last fifth of the horizon), the diameter and the cross-cluster attention "
                      "at T",
                      ["scenario", "d", "seed", "diagnostic at 0.8 T", "diagnostic at T", "T / 0.8 T",
                       "diameter at T", "cross-cluster attention at T"], miss_rows)
            n_dec = int(np.sum(tails < 0.99))
            sec.notes.append(f"ode: of the {tails.size} runs that missed consensus at the largest QK scale, {n_dec} "
                             f"were still decreasing over the last fifth of the horizon (diagnostic ratio T / 0.8 T "
                             f"< 0.99; median ratio {_fmt(float(np.median(tails)))}), {tails.size - n_dec} were not (ratio ≥ 0.99: flat or rising)")
        why = (f"{missed.size} of {total} runs missed consensus; at T their largest attention weight between tokens "
               f"more than 0.1 rad apart is median {_fmt(float(np.median(missed)))}, max {_fmt(float(missed.max()))}"
               " (with V = I clusters merge at a speed bounded by that weight, i.e. on a time scale of order its "
               f"inverse: {_fmt(1.0 / max(float(missed.max()), 1e-300))} or more, against T = {cfg.horizon:g})"
               if missed.size else "every run reached consensus")
        sec.add(Claim.threshold(
            claim=f"Under the theorems' assumptions at the largest QK scale ({_fmt(max(cfg.scales))}): every run "
                  f"reaches consensus by T = {cfg.horizon:g} (share ≥ 0.9)",
            metric="share of runs with diameter < tol", ours=share_big, threshold=0.9, kind="paper",
            paper=PAPER_QUAL + "; the theorems are asymptotic (no rate)",
            note="large QK scales give long-lived metastable clusters; a finite horizon can miss the asymptote; "
                 + why))
    share = {nm: [float(np.mean([np.mean(res[nm, d]["diam"][s, small] < cfg.consensus_tol) for d in cfg.dims]))
                  for s in range(n_s)] for nm in SCENARIOS}
    sec.add(Claim.threshold(
        claim="Full attention, V = I, uniform start on the whole sphere (not covered by the theorems): consensus in "
              "≥ 90% of runs",
        metric="share of runs with diameter < tol", ours=share["uniform"], threshold=0.9, kind="paper",
        paper=PAPER_QUAL + "; observational (Geshkovski et al. prove it for Q = K = V = I, d ≥ 3)", note=setting))
    sec.add(Claim.compare(
        claim="The assumption V = I matters: a negative-definite V (repulsive) reaches consensus less often than "
              "V = I from the same hemisphere starts",
        metric="share of runs with diameter < tol", ours=share["hemisphere"], baseline=share["negdef-v"],
        baseline_name="negative-definite V", paired=True, kind="property",
        paper="not in the paper: a control of the assumption set", note=setting))
    sec.add(Claim.compare(
        claim="Random (indefinite) V: consensus as often as with V = I from the same hemisphere starts (within 0.2)",
        metric="share of runs with diameter < tol", ours=share["random-v"], baseline=share["hemisphere"],
        baseline_name="V = I", paired=True, margin=-0.2, kind="property",
        paper="not covered by the theorems (assumption broken); reported either way", note=setting))
    # tables: shares and rates per scenario, d and scale
    rows = []
    for nm in SCENARIOS:
        for d in cfg.dims:
            r = res[nm, d]
            for c, s in enumerate(cfg.scales):
                rows.append([nm, d, _fmt(s), _fmt(float(np.mean(r["diam"][:, c] < cfg.consensus_tol))),
                             _fmt(float(np.median(r["gap"][:, c]))), _fmt(float(np.median(r["diam"][:, c]))),
                             _fmt(float(np.nanmedian(r["rate"][:, c])) if np.isfinite(r["rate"][:, c]).any()
                                  else float("nan")),
                             _fmt(float(np.median(r["coupling"][:, c])))])
    sec.table("ODE scenarios: consensus share, median diagnostic and diameter at T, median decay rate λ of the "
              "diagnostic (y ≈ C e^{−λ t}) over seeds; cross-cluster attention: the median over seeds of the largest "
              "attention weight between tokens more than 0.1 rad apart at T (0 at consensus)",
              ["scenario", "d", "QK scale", "share diam < tol", "diagnostic at T", "diameter at T", "rate λ",
               "cross-cluster attention at T"], rows)
    sec.table("ODE scenarios: what each one is", ["scenario", "theorem covers it", "setting"],
              [[nm, "yes" if sc.assumptions_hold else "no", sc.description] for nm, sc in SCENARIOS.items()])
    if out is not None and curves:
        sec.figures.append(_plot_ode(curves, times, cfg, out))
    sec.notes.append("ODE: nothing is tuned (no method has a hyper-parameter fitted to data); each seed draws its "
                     "own Q, K, V and tokens, identical across the compared scenarios' roles")
    return sec


def _plot_ode(curves: dict[str, np.ndarray], t: np.ndarray, cfg: Config, out: Path) -> str:
    from icml25.plots import _plt, save_figure

    plt = _plt()
    fig, axes = plt.subplots(1, len(cfg.scales), figsize=(4 * len(cfg.scales), 3.2), sharey=True, squeeze=False)
    for c, s in enumerate(cfg.scales):
        ax = axes[0, c]
        for nm, arr in curves.items():
            y = np.median(arr[:, :, c], axis=1)
            ax.semilogy(t, np.maximum(y, 1e-16), label=nm, lw=1.2)
        ax.set_title(f"d = {cfg.dims[-1]}, QK scale {_fmt(s)}")
        ax.set_xlabel("t")
    axes[0, 0].set_ylabel("1 − mean_j cos(x_1, x_j) (median)")
    axes[0, -1].legend(fontsize=6)
    name = "ode_diagnostic.png"
    save_figure(fig, Path(out) / name, dpi=80)
    return name


GPT_SETTINGS = (
    # name, weights, drop_mlp, mask
    ("random, causal, no MLP", "random", True, "causal"),
    ("random, causal, MLP", "random", False, "causal"),
    ("random, bidirectional, no MLP", "random", True, "full"),
    ("re-drawn each pass, causal, no MLP", "redrawn", True, "causal"),
    ("trained, causal, no MLP", "trained", True, "causal"),
    ("trained, causal, MLP", "trained", False, "causal"),
)


def gpt2_consensus(cfg: Config, seeds: list[int], out: Path) -> Section:
    from attn_consensus.hf_loop import hf_consensus_loop
    from attn_consensus.models import random_prompts, tiny_gpt2, trained_tiny_gpt2

    sec = Section("gpt2")
    ratio: dict[str, list[float]] = {s[0]: [] for s in GPT_SETTINGS}
    final: dict[str, list[float]] = {s[0]: [] for s in GPT_SETTINGS}
    rates: dict[str, list[float]] = {s[0]: [] for s in GPT_SETTINGS}
    half: dict[str, list[float]] = {s[0]: [] for s in GPT_SETTINGS}
    tail: dict[str, list[float]] = {s[0]: [] for s in GPT_SETTINGS}
    curves: dict[str, list[np.ndarray]] = {s[0]: [] for s in GPT_SETTINGS}
    losses = []
    for seed in seeds:
        rnd = tiny_gpt2(n_layer=cfg.gpt_n_layer, n_embd=cfg.gpt_n_embd, n_head=cfg.gpt_n_head,
                        vocab_size=cfg.gpt_vocab, n_positions=max(64, cfg.gpt_length), seed=seed)
        trained, loss = trained_tiny_gpt2(n_layer=cfg.gpt_n_layer, n_embd=cfg.gpt_n_embd, n_head=cfg.gpt_n_head,
                                          steps=cfg.train_steps, batch_size=cfg.train_batch, seed=seed)
        losses.append((loss[0], loss[-1]))
        for name, weights, drop, mask in GPT_SETTINGS:
            model = trained if weights == "trained" else rnd
            ids = random_prompts(cfg.gpt_batch, cfg.gpt_length, vocab_size=model.config.vocab_size,
                                 seed=10_000 + seed)
            c = hf_consensus_loop(model, ids, iterations=cfg.gpt_passes, mask=mask, drop_mlp=drop,
                                  reinit="every_pass" if weights == "redrawn" else "none", seed=seed)
            pp = c.per_pass()
            ratio[name].append(c.ratio)
            half[name].append(float(pp[len(pp) // 2] / pp[0]))
            i80 = int(round(0.8 * (len(pp) - 1)))
            tail[name].append(float(pp[-1] / pp[i80]) if pp[i80] > 0 else 1.0)
            final[name].append(float(c.gap[-1]))
            rates[name].append(decay_rate(pp, np.arange(len(pp)), floor=1e-10))
            curves[name].append(pp)
    paper = ("qualitative (GPT-2-XL / GPT-Neo-2.7B, random prompts, up to 1000 passes): the diagnostic goes to 0, "
             "'even with MLPs and trained weights'; the released runs are causal")
    setting = (f"tiny GPT-2 ({cfg.gpt_n_layer} layers, width {cfg.gpt_n_embd}), {cfg.gpt_batch} random prompts × "
               f"{cfg.gpt_length} tokens, {cfg.gpt_passes} passes, ln_f between passes, explicit mask, fp32")
    for name, weights, _drop, mask in GPT_SETTINGS:
        if mask != "causal":
            continue
        sec.add(Claim.threshold(
            claim=f"GPT-2 consensus loop, {name}: final diagnostic < 0.1 × its value at the embeddings",
            metric="final / initial diagnostic", ours=ratio[name], threshold=0.1, higher_is_better=False,
            kind="paper", paper=paper, note=setting + ("; the trained model saw the tiny-LM tasks for "
                                                        f"{cfg.train_steps} steps" if weights == "trained" else "")))
    sec.table("GPT-2 consensus loop per setting (mean over seeds): diagnostic at the end, final/initial ratio, "
              f"worst seed, the ratio after half the passes ({cfg.gpt_passes // 2}), decay rate per pass of the "
              "per-pass diagnostic",
              ["setting", "final diagnostic", "final / initial", "worst seed", "half-way / initial", "rate per pass"],
              [[nm, _fmt(float(np.mean(final[nm]))), _fmt(float(np.mean(ratio[nm]))), _fmt(float(np.max(ratio[nm]))),
                _fmt(float(np.mean(half[nm]))),
                _fmt(float(np.nanmean(rates[nm])) if np.isfinite(rates[nm]).any() else float("nan"))]
               for nm in ratio])
    sec.table("GPT-2 consensus loop per seed (causal settings): final / initial diagnostic, and the trend over the "
              f"last fifth of the passes (diagnostic after pass {cfg.gpt_passes} over its value after pass "
              f"{int(round(0.8 * cfg.gpt_passes))}: < 1 still decreasing, ≈ 1 plateau)",
              ["setting", "seed", "final / initial", "last / 0.8·passes"],
              [[nm, seeds[i], _fmt(ratio[nm][i]), _fmt(tail[nm][i])]
               for nm, _w, _d, m in GPT_SETTINGS if m == "causal" for i in range(len(seeds))])
    sec.notes.append(f"gpt2: trained-weights model, loss first → last step (mean over seeds): "
                     f"{np.mean([a for a, _ in losses]):.3f} → {np.mean([b for _, b in losses]):.3f}")
    if out is not None:
        sec.figures.append(_plot_gpt(curves, out))
    return sec


def _plot_gpt(curves: dict[str, list[np.ndarray]], out: Path) -> str:
    from icml25.plots import _plt, save_figure

    plt = _plt()
    fig, ax = plt.subplots(figsize=(6.5, 3.8))
    for nm, cs in curves.items():
        arr = np.stack(cs)
        ax.semilogy(np.arange(arr.shape[1]), np.maximum(arr.mean(0), 1e-16), label=nm, lw=1.2)
    ax.set_xlabel("pass")
    ax.set_ylabel("1 − mean_j cos(h_1, h_j)")
    ax.legend(fontsize=6)
    name = "gpt2_diagnostic.png"
    save_figure(fig, Path(out) / name, dpi=80)
    return name


def performance(cfg: Config, seeds: list[int], out: Path) -> Section:
    from attn_consensus.hf_loop import hf_consensus_loop, plain_passes
    from attn_consensus.models import random_prompts, tiny_gpt2

    sec = Section("performance")
    d = 16
    flow, x0, _ = build_scenario("hemisphere", n=cfg.n, d=d, scales=(2.0,), seed=seeds[0])
    one = AttentionFlow(dim=d, mask="full", q=flow.q[0], k=flow.k[0])
    xs = torch.cat([build_scenario("hemisphere", n=cfg.n, d=d, scales=(2.0,), seed=seeds[0] + 1000 + i)[1]
                    for i in range(cfg.bench_batch)])  # [B, n, d]
    speedups = []
    for _ in range(cfg.bench_repeats):
        t0 = time.perf_counter()
        integrate(one, xs, dt=cfg.dt, steps=cfg.bench_steps, save_every=cfg.bench_steps)
        t_batch = time.perf_counter() - t0
        t0 = time.perf_counter()
        for i in range(cfg.bench_batch):
            integrate(one, xs[i], dt=cfg.dt, steps=cfg.bench_steps, save_every=cfg.bench_steps)
        t_loop = time.perf_counter() - t0
        speedups.append(t_loop / t_batch)
    sec.add(Claim.threshold(
        claim=f"{cfg.bench_batch} simulations batched in one integration vs a Python loop over them: ≥ 20× faster",
        metric="loop time / batched time", ours=speedups, threshold=20.0, kind="target",
        paper="engineering target of the issue (no paper number)",
        note=f"n = {cfg.n}, d = {d}, {cfg.bench_steps} RK4 steps, float64, timed alone under the CPU lock"))
    model = tiny_gpt2(n_layer=cfg.gpt_n_layer, n_embd=cfg.gpt_n_embd, n_head=cfg.gpt_n_head,
                      vocab_size=cfg.gpt_vocab, n_positions=max(64, cfg.gpt_length), seed=seeds[0])
    ids = random_prompts(cfg.gpt_batch, cfg.gpt_length, vocab_size=cfg.gpt_vocab, seed=seeds[0])
    overheads = []
    plain_passes(model, ids, iterations=2)  # warm-up of both paths
    hf_consensus_loop(model, ids, iterations=2)

    def timed(fn) -> float:
        t0 = time.perf_counter()
        fn(model, ids, iterations=cfg.bench_passes)
        return time.perf_counter() - t0

    for r in range(cfg.bench_rounds):  # interleaved rounds, the order alternating: one ratio of minima per round
        first, second = (plain_passes, hf_consensus_loop) if r % 2 == 0 else (hf_consensus_loop, plain_passes)
        best = {plain_passes: math.inf, hf_consensus_loop: math.inf}
        for _ in range(cfg.bench_inner):  # the minimum of a few back-to-back timings drops outside interference
            for fn in (first, second):
                best[fn] = min(best[fn], timed(fn))
        overheads.append(100.0 * (best[hf_consensus_loop] / best[plain_passes] - 1.0))
    sec.add(Claim.threshold(
        claim="The consensus loop (fused diagnostic after every block) costs ≤ 10% more than plain passes of "
              "the same blocks",
        metric="overhead (%)", ours=overheads, threshold=10.0, higher_is_better=False, kind="target",
        paper="engineering target of the issue (no paper number)",
        note=f"tiny GPT-2 with MLPs, {cfg.gpt_batch} × {cfg.gpt_length} tokens, {cfg.bench_passes} passes; "
             f"{cfg.bench_rounds} interleaved rounds (order alternating), each the ratio of the minima of "
             f"{cfg.bench_inner} timings per path; timed under the CPU lock"))
    return sec


EXPERIMENTS = [ode_consensus, gpt2_consensus, performance]


def reproduce(*, quick: bool, smoke: bool, out: Path, seed: int) -> Report:
    return run_experiments("attn-consensus", EXPERIMENTS, BUDGETS, quick=quick, smoke=smoke, out=out, seed=seed)
