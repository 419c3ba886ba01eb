"""MuJoCo Swimmer-v5 (the paper's task, T = 200): every method on ``swimmer_seeds`` seeds, scored on its
deterministic return.

Competence before comparison: a gate per method (its final deterministic return beats the zero policy θ = 0). Without
MuJoCo nothing can be simulated: an availability gate fails (0 episodes) and the paper claims are ``untested``, their
note saying what running them would take.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from icml25.claims import Claim
from icml25.experiment import Section

from pes.algorithms import PES, SLPG, evaluate, fixed_sigma
from pes.config import Config
from pes.errors import PesError
from pes.reproduce.common import EXPLORATIONS, PAPER_HEADLINE, _fmt, _label, final_sigma

PAPER_SWIMMER = PAPER_HEADLINE + " (Swimmer: curves only, no numbers)"
SWIMMER_METHODS = ("fixed σ=1", "fixed σ=0.1", "PES", "PES dynamic", "SL-PG exp", "SL-PG hyper")


def _learners(env: Any, x: str, it: int, P: int, kw: dict) -> dict[str, Any]:
    return {
        _label("fixed σ=1", x): fixed_sigma(env, exploration=x, sigma=1.0, iterations=it, **kw),
        _label("fixed σ=0.1", x): fixed_sigma(env, exploration=x, sigma=0.1, iterations=it, **kw),
        _label("PES", x): PES(env, exploration=x, phases=P, iters_per_phase=it // P, **kw),
        _label("PES dynamic", x): PES(env, exploration=x, phases=it, iters_per_phase=1, sigma_exponent=0.5, **kw),
        _label("SL-PG exp", x): SLPG(env, exploration=x, parameterization="exp", phases=it, iters_per_phase=1, **kw),
        _label("SL-PG hyper", x): SLPG(env, exploration=x, parameterization="hyper", phases=it, iters_per_phase=1,
                                       **kw),
    }


def _claim_text(xs: str, base: str, env_id: str) -> str:
    return f"{env_id}, {xs}: PES ends with a higher deterministic return than fixed σ ({base})"


def _untested(sec: Section, cfg: Config, seeds: list[int], why: str) -> None:
    """The availability gate fails (nothing simulated) and every Swimmer paper claim waits on it."""
    it = cfg.swimmer_iterations
    steps = len(seeds) * len(SWIMMER_METHODS) * len(EXPLORATIONS) * it * cfg.swimmer_batch * cfg.swimmer_horizon
    gate = Claim.threshold(
        claim=f"{cfg.swimmer_env} can be simulated here (MuJoCo installed)", metric="episodes simulated",
        ours=[0.0], threshold=1.0, higher_is_better=True, deterministic=True, kind="gate",
        paper="competence gate: the task must run before any method is compared on it", note=why)
    sec.add(gate)
    need = (f"not run: {why}; it would take `pip install 'pes[mujoco]'` (gymnasium[mujoco] >= 1.0) and "
            f"{len(seeds)} seeds x {len(SWIMMER_METHODS)} methods x 2 explorations x {it} iterations x "
            f"N={cfg.swimmer_batch} x T={cfg.swimmer_horizon} = {steps:,} simulator steps")
    for x, xs in EXPLORATIONS.items():
        for sig in (1.0, 0.1):
            base = _label(f"fixed σ={sig:g}", x)
            sec.add(Claim(claim=_claim_text(xs, base, cfg.swimmer_env),
                          metric="final deterministic return (not measured: 0 episodes, the value shown is a "
                                 "placeholder)", ours=0.0, baseline=None, baseline_name=f"{base} (not run)",
                          holds=False, verdict="inconclusive", test="not run", seeds=0, paper=PAPER_SWIMMER,
                          note=need, kind="paper", gates=[gate.claim]))
    sec.notes.append(f"swimmer: {need}")


def swimmer(cfg: Config, seeds: list[int], out: Path) -> Section:
    """Swimmer-v5, linear policy, T = 200: every method on ``swimmer_seeds`` seeds, deterministic return curves."""
    from icml25.plots import learning_curves

    from pes.envs import GymTask

    sec = Section("swimmer")
    if not cfg.swimmer:
        sec.notes.append("swimmer: skipped in this budget")
        return sec
    seeds = list(seeds[:cfg.swimmer_seeds]) if len(seeds) >= cfg.swimmer_seeds else \
        list(seeds) + [seeds[-1] + 1 + i for i in range(cfg.swimmer_seeds - len(seeds))]
    try:
        env = GymTask(cfg.swimmer_env, horizon=cfg.swimmer_horizon, gamma=1.0)
    except PesError as exc:  # MuJoCo missing: measure nothing, say what it would take
        _untested(sec, cfg, seeds, str(exc))
        return sec
    it, P = cfg.swimmer_iterations, max(1, min(cfg.phases, cfg.swimmer_iterations))
    it -= it % P
    rows = []
    for x, xs in EXPLORATIONS.items():
        finals: dict[str, list[float]] = {}
        curves: dict[str, list[np.ndarray]] = {}
        smp = None
        zero = [evaluate(env, np.zeros(env.theta_dim), episodes=3, seed=s)["J_D"] for s in seeds]
        for s in seeds:
            kw = dict(batch=cfg.swimmer_batch, eval_every=max(1, it // 5), eval_episodes=3, lr=0.01, seed=s)
            for lab, ln in _learners(env, x, it, P, kw).items():
                ln.learn()
                smp, jd = ln.curve("J_D")
                finals.setdefault(lab, []).append(float(jd[-1]))
                curves.setdefault(lab, []).append(jd)
                if s == seeds[0]:
                    rows.append([lab, float(jd[0]), None, final_sigma(ln)])
        gates = {lab: Claim.gate(claim=f"{cfg.swimmer_env} {xs}: {lab} beats the zero policy θ = 0",
                                 metric="final deterministic return (3 episodes)", ours=v,
                                 controls={"zero policy θ = 0": zero}, paired=True)
                 for lab, v in finals.items()}
        for g in gates.values():
            sec.add(g)
        pes = _label("PES", x)
        for sig in (1.0, 0.1):
            base = _label(f"fixed σ={sig:g}", x)
            sec.add(Claim.compare(
                claim=_claim_text(xs, base, cfg.swimmer_env), metric="final deterministic return (3 episodes)",
                ours=finals[pes], baseline=finals[base], baseline_name=base, paired=True, kind="paper",
                paper=PAPER_SWIMMER, gates=[gates[pes].claim, gates[base].claim],
                note=f"{len(seeds)} seeds per method: {it} iterations x N={cfg.swimmer_batch} x "
                     f"T={cfg.swimmer_horizon}; Adam lr 0.01 (the paper's), not tuned"))
        for r in rows:
            if r[2] is None and r[0] in finals:
                r[2] = _fmt(finals[r[0]])
        learning_curves({k: np.stack(v) for k, v in curves.items()}, out / f"swimmer_{xs}.png", x=smp,
                        xlabel="samples", ylabel="deterministic return J_D", title=f"{cfg.swimmer_env}, {xs}")
        sec.figures.append(f"swimmer_{xs}.png")
    env.close()
    sec.table(f"{cfg.swimmer_env}: deterministic return (J_D at start for seed {seeds[0]}; final: mean ± sd over "
              f"{len(seeds)} seeds)", ["method", "J_D at start", "J_D final", "final σ (first seed)"], rows)
    return sec
