"""Update cost: the per-seed timing job (:func:`speed_job`), the ``speed`` experiment (engineering targets) and
``--task speed-width`` (:func:`speed_width`)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np
from icml25.claims import Claim
from icml25.experiment import Section

from sold.config import Config
from sold.reproduce.common import _build_ae, _data, _env, _fmt
from sold.reproduce.results import _results


def count_update(agent) -> dict[str, float]:
    """The arithmetic and the operator count of one ``agent._update()``: ``gflop`` (torch's flop counter: matrix
    products, attention and convolutions, forward and backward), ``conv_gflop`` (its convolution share: the
    autoencoder's encoder and decoder) and ``ops`` (aten operators dispatched, forward, backward and optimiser)."""
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils.flop_counter import FlopCounterMode

    class _Ops(TorchDispatchMode):
        n = 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            self.n += 1
            return func(*args, **(kwargs or {}))

    flops, ops = FlopCounterMode(display=False), _Ops()
    with flops, ops:
        agent._update()
    by_op = flops.get_flop_counts().get("Global", {})
    conv = sum(v for k, v in by_op.items() if "convolution" in str(k))
    return {"gflop": flops.get_total_flops() / 1e9, "conv_gflop": conv / 1e9, "ops": float(ops.n)}


def _timing_agent(cfg: Config, seed: int, kind: str, state: dict[str, np.ndarray] | None):
    """An agent whose buffer holds four of the seed's training episodes, after one warm-up update."""
    from sold.agent import SOLD

    split = _data(cfg, seed)["split"]["train"]
    agent = SOLD(_env(cfg), config=cfg.agent, ae_config=cfg.ae, autoencoder=_build_ae(cfg, kind, state),
                 representation=kind, seed=seed)
    for e in range(min(4, len(split))):
        agent.buffer.start(split.frames[e, 0], 2)
        for t in range(1, split.frames.shape[1]):
            agent.buffer.add(split.frames[e, t], split.actions[e, t], split.rewards[e, t])
    agent._update()  # warm-up
    return agent


def speed_job(cfg: Config, seed: int, kind: str, state: dict[str, np.ndarray], n: int = 3) -> dict[str, Any]:
    """Seconds per agent update (world model + imagination, as in ``SOLD.learn``), where they go, and the counted
    arithmetic and operators of one more update (:func:`count_update`, not timed)."""
    import torch

    torch.set_num_threads(1)
    agent = _timing_agent(cfg, seed, kind, state)
    parts: dict[str, float] = {}
    t0 = time.perf_counter()
    for _ in range(n):
        agent._update(parts)
    sec = (time.perf_counter() - t0) / n
    return {"update_seconds": sec, "parts": {k: v / n for k, v in parts.items()}, "counts": count_update(agent)}



def speed(cfg: Config, seeds: list[int], out: Path) -> Section:
    """Engineering targets: environment steps per model update, and SOLD's update cost vs the holistic agent's."""
    sec = Section("speed")
    res = _results(cfg, seeds)
    env_sps = [r["env_steps_per_s"] for r in res]
    upd = {k: [r["update_seconds"][k] for r in res] for k in ("slots", "holistic")}
    sec.add(Claim.threshold(
        claim="The environment is at least 20× faster than a SOLD update (env steps/s ÷ updates/s)",
        metric="env steps per second × seconds per SOLD update", ours=[e * u for e, u in zip(env_sps, upd["slots"])],
        threshold=20.0, paper="engineering target of the issue", kind="target",
        note="one torch thread per worker, two workers, alone under the CPU lock"))
    sec.add(Claim.threshold(
        claim="A SOLD update costs at most 3× a holistic-agent update",
        metric="seconds per update (world model + imagination), SOLD ÷ holistic",
        ours=[a / b for a, b in zip(upd["slots"], upd["holistic"])], threshold=3.0,
        paper="engineering target of the issue", kind="target", higher_is_better=False,
        note=f"batch {cfg.agent.batch}×{cfg.agent.max_context + cfg.agent.dyn_horizon} steps, imagination horizon "
             f"{cfg.agent.imag_horizon}; SOLD re-encodes each window with SAVi and decodes K slots per frame"))
    sec.table("Speed per seed", ["seed", "env steps/s", "SOLD s/update", "holistic s/update"],
              [[r["seed"], r["env_steps_per_s"], r["update_seconds"]["slots"], r["update_seconds"]["holistic"]]
               for r in res])
    parts = ("encode", "world_model", "imagination")
    sec.table("Where an update's time goes (seconds per update, mean ± sd over seeds; one torch thread, the other "
              "worker busy; encode = sample + re-encode the window with the frozen autoencoder)",
              ["agent", *parts, "total"],
              [[name, *[_fmt([r["update_parts"][k][p] for r in res]) for p in parts],
                _fmt([r["update_seconds"][k] for r in res])]
               for k, name in (("slots", "SOLD (SAVi + OCVP + slot aggregation)"), ("holistic", "holistic (CNN-AE + GRU + MLP)"))])
    cnt = {k: {q: [r["update_counts"][k][q] for r in res] for q in ("gflop", "conv_gflop", "ops")}
           for k in ("slots", "holistic")}
    ratio = {q: [a / b for a, b in zip(cnt["slots"][q], cnt["holistic"][q])] for q in ("gflop", "ops")}
    sec.table("What an update computes (one counted update per seed, mean ± sd; GFLOP from torch's flop counter, "
              "forward + backward; conv = the autoencoders' convolutions; ops = aten operators dispatched)",
              ["agent", "GFLOP", "of which conv", "aten ops", "seconds"],
              [[name, _fmt(cnt[k]["gflop"]), _fmt(cnt[k]["conv_gflop"]), _fmt(cnt[k]["ops"]), _fmt(upd[k])]
               for k, name in (("slots", "SOLD"), ("holistic", "holistic"))]
              + [["SOLD ÷ holistic", _fmt(ratio["gflop"]), "", _fmt(ratio["ops"]),
                  _fmt([a / b for a, b in zip(upd["slots"], upd["holistic"])])]])
    return sec


SPEED_WIDTHS = ((64, 128, 128), (32, 64, 64), (16, 32, 32))
"""``--task speed-width``: (token_dim, ff_dim, head_hidden) of SOLD's transformers, the default first."""


def speed_width(cfg: Config, seeds: list[int], out: Path) -> Section:
    """``--task speed-width``: SOLD's update cost against the holistic agent's as its dynamics, reward, actor and
    critic transformers shrink (:data:`SPEED_WIDTHS`), the autoencoders unchanged. Timing only: untrained
    autoencoders (seeded), one worker, one torch thread, the best of ``3`` repeats of 5 updates per point."""
    import dataclasses

    import torch

    sec = Section("update cost vs the slot transformers' width")
    torch.set_num_threads(1)

    def measure(c: Config, seed: int, kind: str) -> dict[str, float]:
        torch.manual_seed(seed)
        agent = _timing_agent(c, seed, kind, None)
        best = float("inf")
        for _ in range(3):
            t0 = time.perf_counter()
            for _ in range(5):
                agent._update()
            best = min(best, (time.perf_counter() - t0) / 5)
        params = sum(p.numel() for m in (agent.world.dynamics, agent.world.reward, agent.learner.actor,
                                         agent.learner.critic) for p in m.parameters())
        return {"seconds": best, "params": float(params), **count_update(agent)}

    hol = {s: measure(cfg, s, "holistic") for s in seeds}
    rows, ratios = [], {}
    for width in SPEED_WIDTHS:
        td, ff, hh = width
        c = dataclasses.replace(cfg, agent=dataclasses.replace(cfg.agent, token_dim=td, ff_dim=ff, head_hidden=hh))
        sol = {s: measure(c, s, "slots") for s in seeds}
        ratios[width] = [sol[s]["seconds"] / hol[s]["seconds"] for s in seeds]
        rows.append([f"SOLD, width {td} (ff {ff}, heads' MLP {hh})" + (" — default" if width == SPEED_WIDTHS[0]
                                                                        else ""),
                     f"{np.mean([sol[s]['params'] for s in seeds]):.3g}", _fmt([sol[s]["gflop"] for s in seeds]),
                     _fmt([sol[s]["ops"] for s in seeds]), _fmt([sol[s]["seconds"] for s in seeds]),
                     _fmt(ratios[width]), _fmt([sol[s]["gflop"] / hol[s]["gflop"] for s in seeds])])
    rows.append(["holistic (GRU + MLPs)", f"{np.mean([hol[s]['params'] for s in seeds]):.3g}",
                 _fmt([hol[s]["gflop"] for s in seeds]), _fmt([hol[s]["ops"] for s in seeds]),
                 _fmt([hol[s]["seconds"] for s in seeds]), "1", "1"])
    sec.table(f"Seconds per update as SOLD's transformers shrink (seeds {seeds}, mean ± sd; parameters of dynamics, "
              "reward, actor and critic; the autoencoders are the same in every row)",
              ["agent", "parameters", "GFLOP", "aten ops", "s/update", "÷ holistic (time)", "÷ holistic (GFLOP)"],
              rows)
    small = SPEED_WIDTHS[-1]
    sec.notes.append(f"smallest width {small[0]}: {np.mean(ratios[small]):.2f}× the holistic update "
                     f"(default width: {np.mean(ratios[SPEED_WIDTHS[0]]):.2f}×)")
    return sec
