"""What the experiments share: the paper texts quoted in the claims, the compared methods, labels and helpers."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np
from icml25.claims import fmt_seeds

from pes.algorithms import PES, SLPG, fixed_sigma
from pes.config import Config
from pes.envs import LQR

PAPER_HEADLINE = ("paper (abstract, Thm. on PES): PES converges in last iterate to the optimal deterministic policy "
                  "(Õ(ε^-5) samples); fixed σ leaves a deployment gap ∝ σ, small σ learns slowly; Sec. 9 shows "
                  "Swimmer curves only, no numbers")
PAPER_SLPG = ("paper (abstract): SL-PG is faster (Õ(ε^-3)) but converges only to the optimal stochastic "
              "(hyper)policy, not the deterministic one; no numbers")
PAPER_ABPB = ("Montenegro et al. 2024 (the framework this paper builds on): AB estimator variance grows with the "
              "horizon T, PB variance does not depend on T; no numbers")
PAPER_RATES = ("paper (abstract): PES reaches an ε-optimal deterministic policy in Õ(ε^-5) samples, SL-PG its "
               "stochastic optimum in Õ(ε^-3); no measured rates in the paper")
PAPER_EARLIER = ("earlier MagicRL release (2025-01-10, 'PES v2.0'): a fresh PG subroutine (fresh Adam) per phase, "
                 "warm-started from the previous phase's best-batch θ; the camera-ready code carries Adam across "
                 "phases from 2025-01-25; the paper gives no numbers")
EARLIER = "PES earlier release"
"""PES with a fresh Adam per phase and each phase warm-started from the previous phase's best-batch θ."""
RATE_EPS = (0.3, 0.1, 0.03, 0.01, 0.003)
"""Gap levels ε of the rate measurement, as fractions of |J*|."""
VAL_SEED_OFFSET = 10_000
"""Validation runs use seeds ``VAL_SEED_OFFSET + i``: never a test seed."""
EXPLORATIONS = {"action": "AB", "parameter": "PB"}
EXPLORATIONS_INV = {v: k for k, v in EXPLORATIONS.items()}


_fmt = partial(fmt_seeds, spec=".4g", sd_spec=".2g")  # mean ± sd over seeds, one table cell


def method_specs(cfg: Config) -> dict[str, Callable[..., Any]]:
    """Name -> ``make(env, exploration, lr, seed, batch, iterations)`` for every compared method."""
    P = cfg.phases

    def fixed(sig: float):
        return lambda env, x, lr, seed, it, **kw: fixed_sigma(env, exploration=x, sigma=sig, iterations=it, lr=lr,
                                                              seed=seed, **kw)

    specs: dict[str, Callable[..., Any]] = {f"fixed σ={s:g}": fixed(s) for s in cfg.static_sigmas}
    specs["PES"] = lambda env, x, lr, seed, it, **kw: PES(env, exploration=x, phases=P, iters_per_phase=it // P,
                                                           sigma0=1.0, sigma_exponent=1.0, lr=lr, seed=seed, **kw)
    # ablations of PES (same schedule, same grid, same seeds): the released code carries Adam's moments across
    # phases; "reset Adam" starts each phase with a fresh Adam, "ζ∝σ²" scales the step by (σ_p/σ_0)² (the theory's ζ_p)
    specs["PES reset Adam"] = lambda env, x, lr, seed, it, **kw: PES(
        env, exploration=x, phases=P, iters_per_phase=it // P, sigma0=1.0, sigma_exponent=1.0, lr=lr, seed=seed,
        reset_optimizer=True, **kw)
    # the earlier MagicRL release (before 2025-01-25): fresh Adam per phase, warm start from the phase's best batch
    specs[EARLIER] = lambda env, x, lr, seed, it, **kw: PES.earlier_release(
        env, exploration=x, phases=P, iters_per_phase=it // P, sigma0=1.0, sigma_exponent=1.0, lr=lr, seed=seed, **kw)
    specs["PES ζ∝σ²"] = lambda env, x, lr, seed, it, **kw: PES(
        env, exploration=x, phases=P, iters_per_phase=it // P, sigma0=1.0, sigma_exponent=1.0, lr=lr, seed=seed,
        lr_schedule="sigma2", **kw)
    specs["PES dynamic"] = lambda env, x, lr, seed, it, **kw: PES(env, exploration=x, phases=it, iters_per_phase=1,
                                                                   sigma0=1.0, sigma_exponent=0.5, lr=lr, seed=seed,
                                                                   **kw)
    def slpg(par: str):
        return lambda env, x, lr, seed, it, **kw: SLPG(env, exploration=x, parameterization=par, phases=it,
                                                       iters_per_phase=1, sigma0=1.0, lr=lr, sigma_lr=cfg.sigma_lr,
                                                       seed=seed, **kw)

    for par in ("exp", "hyper"):
        specs[f"SL-PG {par}"] = slpg(par)
    return specs


def final_sigma(learner: Any) -> float:
    """The σ a learner ends with: PES's last σ_P, SL-PG's learned σ."""
    return float(learner.sigma) if isinstance(learner, SLPG) else float(learner.sigmas[-1])


def _label(name: str, exploration: str) -> str:
    if name.startswith("fixed"):
        return ("GPOMDP " if exploration == "action" else "PGPE ") + name.split(" ", 1)[1]
    return f"{name} ({EXPLORATIONS[exploration]})"


ABLATIONS = ("PES reset Adam", EARLIER, "PES ζ∝σ²")
"""PES variants measured beside the released PES (options ``reset_optimizer=True``; ``reset_optimizer=True,
warm_start="best"`` = the earlier release; ``lr_schedule="sigma2"``)."""


def ablation_rows(gaps: dict[str, list[float]], sel: dict[str, Any], pes: str) -> list[list[Any]]:
    """One row per PES variant: chosen lr, gap, paired difference to ``pes`` and a two-sided paired t-test p."""
    from scipy import stats

    xs = pes.rsplit("(", 1)[1].rstrip(")")
    base = np.asarray(gaps[pes])
    rows: list[list[Any]] = [[pes + " (released: state carried)", sel[pes].params["lr"], _fmt(base), "—", "—"]]
    for name in ABLATIONS:
        lab = f"{name} ({xs})"
        d = np.asarray(gaps[lab]) - base
        p = float(stats.ttest_rel(gaps[lab], base).pvalue) if d.size >= 3 and np.ptp(d) > 0 else float("nan")
        rows.append([lab, sel[lab].params["lr"], _fmt(gaps[lab]), _fmt(d), p])
    return rows


def lqr_env(cfg: Config) -> LQR:
    return LQR.official(horizon=cfg.horizon, gamma=cfg.gamma)
