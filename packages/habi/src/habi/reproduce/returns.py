"""The ``returns`` experiment: Habi against its planner, BC and Distill-MSE on one offline data set.

1. Offline data from our own SAC policy (:mod:`habi.datagen`, cached); ``Config.dataset`` picks 'medium' or
   'medium-replay'.
2. One Diffusion-QL teacher (official protocol: one teacher shared by all Habi seeds; its seed is recorded),
   **trained to the plateau of its validation return** (:func:`habi.reproduce.teacher.fit_planner`), and a diagnostic
   of its labels. Meanwhile the workers train BC (it needs no teacher).
3. Goal-directed behaviour: 50 candidates per data-set state, first 10 stored with Q, plus a*.
4. Tuning alike (:func:`icml25.tuning.tune_alike`): Habi (the paper's KL setting: eta_KL from 1e-6, dual step
   3e-4, target 1), BC and Distill-MSE each pick the Adam lr from the same grid (extended past an edge choice),
   every trial trained to the plateau of its validation return (early stopping) on the first seed.
5. Per seed at the chosen lr: Habi, BC and Distill-MSE to their plateaus; on the first ``kl_seeds`` seeds the KL
   ablation (the fast dual step, same lr). Every policy and two trivial controls (random and zero actions) play the
   same test episodes (reset seeds depend on the seed; disjoint from validation), so comparisons are paired.
6. Claims: competence gates first (planner plateaued and beats the controls; the planner reaches BC's return within
   ``bc_margin``; Habi, BC and Distill-MSE plateaued and beat the controls), then the paper's claims gated on them.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import torch
from icml25.claims import Claim, mean_sd
from icml25.experiment import Section
from icml25.train import Curve

from habi.baselines import MLPActor, RegressConfig
from habi.config import Config
from habi.data import GaussianNormalizer, load_offline, qlearning_dataset
from habi.datagen import make_offline_data
from habi.envs import env_dims
from habi.habitize import HabitizeConfig, log10_gap
from habi.model import HabiConfig, Synergy
from habi.nets import MLPPolicy
from habi.planner import DiffusionPlanner, PlannerConfig
from habi.policy import HabitualPolicy
from habi.reproduce.common import (
    KL_TOL_DECADES,
    METHODS,
    PAPER_KL,
    PAPER_LATENT,
    PAPER_PLANNER,
    PAPER_RETURN,
    STORED,
    RandomActions,
    Trainer,
    ZeroAction,
    episode_seeds,
    score,
)
from habi.reproduce.teacher import fit_planner, label_diagnostic
from habi.teacher import generate_goal_directed_behavior

# the policies of the returns table
HABI = "Habi (Habi critic, N_c=5)"
H1, H50, HPL, HMEAN = ("Habi (N_c=1, no critic)", "Habi (Habi critic, N_c=50)", "Habi (planner critic, N_c=5)",
                       "Habi (z = mu_p(s), no critic)")
PLANNER, PSOFT, PONE = "Planner (argmax of 50)", "Planner (softmax, target critic)", "Planner (1 sample, no critic)"
RANDOM, ZERO = "random actions (control)", "zero action (control)"
ABL, ABL1 = "Habi, KL ablation: fast dual step (N_c=5)", "Habi, KL ablation: fast dual step (N_c=1)"


def _kl_name(kl_lr: float) -> str:
    what = "the paper's dual step" if kl_lr == 3e-4 else "a faster dual step"
    return f"eta_KL from 1e-6, {what} kl_lr {kl_lr:g}"


class DataSection:
    """One data set's teacher rows and the Habi/BC/Distill-MSE models trained on it to their plateaus (jobs keyed
    by method, KL setting, lr and seed)."""

    def __init__(self, cfg: Config, trainer: Trainer, *, env_id: str, meta: dict, data: dict,
                 norm: GaussianNormalizer, hcfg: HabiConfig) -> None:
        self.cfg, self.trainer, self.env_id, self.meta, self.norm, self.hcfg = cfg, trainer, env_id, meta, norm, hcfg
        q = qlearning_dataset(data)
        self.regress_data: dict[str, tuple[np.ndarray, np.ndarray]] = {"BC": (norm(q["observations"]),
                                                                              q["actions"])}
        self.teacher: dict | None = None
        self.kl_lr = {"main": cfg.main_kl_lr, "ablation": cfg.ablation_kl_lr}

    def set_teacher(self, teacher: dict) -> None:
        self.teacher = teacher
        uniq = slice(0, None, STORED)  # one row per state (rows n·k .. n·k+k-1 share the state)
        self.regress_data["Distill-MSE"] = (teacher["states"][uniq], teacher["best_actions"][uniq])

    def job(self, method: str, lr: float, seed: int, setting: str = "main"):
        cfg = self.cfg
        common = {"env_id": self.env_id, "meta": self.meta, "norm": self.norm, "seed": seed,
                  "val_start": episode_seeds("validation", seed, cfg.val_episodes).start,
                  "val_episodes": cfg.val_episodes, "max_steps": cfg.max_steps, "eval_every": cfg.eval_every,
                  "patience": cfg.patience, "min_delta": cfg.min_delta}
        if method == "Habi":
            def spec() -> dict[str, Any]:
                hc = HabitizeConfig(steps=cfg.max_steps, batch_size=cfg.batch, lr=lr, kl_lr=self.kl_lr[setting])
                return {"kind": "habi_plateau", "teacher": self.teacher, "hcfg": self.hcfg, "config": hc, **common}
        else:
            def spec() -> dict[str, Any]:
                states, targets = self.regress_data[method]
                rc = RegressConfig(steps=cfg.max_steps, batch_size=cfg.batch, lr=lr, hidden=cfg.regress_hidden)
                return {"kind": "regress_plateau", "states": states, "targets": targets, "config": rc, **common}
        return self.trainer.get((method, setting, float(lr), seed), spec)

    def habi_model(self, res: dict[str, Any]) -> Synergy:
        model = Synergy(cfg=self.hcfg)
        model.load_state_dict(res["state"])
        return model.eval()

    def regress_actor(self, res: dict[str, Any]) -> MLPActor:
        net = MLPPolicy(obs_dim=self.hcfg.obs_dim, act_dim=self.hcfg.act_dim, hidden=self.cfg.regress_hidden)
        net.load_state_dict(res["state"])
        return MLPActor(net=net, normalizer=self.norm)


@dataclass
class _Run:
    cfg: Config
    seeds: list[int]
    out: Path
    rd: Any
    env_id: str
    gen: dict
    meta: dict
    data: dict
    planner: DiffusionPlanner | None = None
    pcurve: Curve | None = None
    pinfo: dict = field(default_factory=dict)
    diag: dict = field(default_factory=dict)
    sec: DataSection | None = None
    trainer: Trainer | None = None
    times: dict = field(default_factory=dict)

    @property
    def seed(self) -> int:
        return self.seeds[0]


def _setup(cfg: Config, seeds: list[int], out: Path) -> _Run:
    """Data, the trainer pool (BC's grid starts at once), the planner to its plateau and its labels."""
    from icml25.rundir import RunDir

    t0 = time.perf_counter()
    env_id = cfg.data.env_id
    obs_dim, act_dim = env_dims(env_id)
    gen = make_offline_data(cfg.data, progress=cfg.seeds > 1)
    data = load_offline(gen[cfg.dataset], obs_dim=obs_dim, act_dim=act_dim)
    r = _Run(cfg=cfg, seeds=seeds, out=out, rd=RunDir(out, resume=True), env_id=env_id, gen=gen, meta=gen["meta"],
             data=data)
    for s in seeds:  # fail fast: the episode seeds must keep test and validation apart
        episode_seeds("test", s, cfg.episodes), episode_seeds("validation", s, max(cfg.val_episodes,
                                                                                  cfg.planner_val_episodes))
    r.times["data"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    pcfg = PlannerConfig(obs_dim=obs_dim, act_dim=act_dim, hidden=cfg.planner_hidden, time_dim=cfg.planner_time_dim)
    norm = GaussianNormalizer.fit(qlearning_dataset(data)["observations"])  # the planner fits the same one
    hcfg = HabiConfig(obs_dim=obs_dim, act_dim=act_dim, latent_dim=cfg.latent_dim, hidden=cfg.habi_hidden,
                      critic_hidden=cfg.habi_hidden)
    r.trainer = Trainer(cfg.workers)
    r.sec = DataSection(cfg, r.trainer, env_id=env_id, meta=r.meta, data=data, norm=norm, hcfg=hcfg)
    for lr in cfg.lr_grid:  # BC needs no teacher: the workers train its grid while the planner trains here
        r.sec.job("BC", lr, r.seed)
    r.planner, r.pcurve, r.pinfo = fit_planner(
        data, config=pcfg, train=cfg.planner_train, seed=r.seed, env_id=env_id, meta=r.meta,
        val_start=episode_seeds("validation", r.seed, cfg.planner_val_episodes).start,
        val_episodes=cfg.planner_val_episodes, eval_every=cfg.planner_eval_every, patience=cfg.planner_patience,
        min_delta=cfg.planner_min_delta, log=r.rd.log, threads=cfg.planner_threads)
    np.testing.assert_allclose(r.planner.normalizer.mean, norm.mean)  # one normaliser for teacher and students
    r.planner.save(out / "planner")
    r.times["planner"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    teacher = generate_goal_directed_behavior(r.planner, data, max_states=cfg.teacher_states, stored=STORED,
                                              seed=r.seed, progress=False)
    r.sec.set_teacher(teacher)
    r.diag = label_diagnostic(r.planner, data, states=min(1000, cfg.teacher_states), seed=r.seed + 1)
    r.times["labels"] = time.perf_counter() - t0
    return r


def _tune(r: _Run) -> tuple[dict, dict]:
    """Tuning alike on the first seed: each method's lr from the same grid, every trial trained to its plateau and
    scored by its best validation return."""
    from icml25.tuning import tune_alike

    cfg, seed = r.cfg, r.seed
    t0 = time.perf_counter()
    for lr in cfg.lr_grid:
        for m in ("Habi", "Distill-MSE"):
            r.sec.job(m, lr, seed)

    def validation(method: str):
        def evaluate(p: dict) -> float:
            res = r.sec.job(method, p["lr"], seed).result()
            r.rd.log(None, stage="tune", method=method, lr=p["lr"], validation_score=res["best"],
                     best_step=res["best_step"])
            return res["best"]
        return evaluate

    sel = tune_alike({m: (validation(m), {"lr": list(cfg.lr_grid)}) for m in METHODS}, extend=cfg.extend)
    ch = {m: float(sel[m].params["lr"]) for m in sel}
    r.times["tune"] = time.perf_counter() - t0
    return sel, ch


def _policies(r: _Run, ch: dict, s: int, res: dict) -> dict[str, Any]:
    """Every policy evaluated on seed ``s``: Habi's inference variants, the planners, the baselines, the controls."""
    cfg, planner, sec = r.cfg, r.planner, r.sec
    norm, act_dim = sec.norm, sec.hcfg.act_dim
    model = sec.habi_model(res[("Habi", "main")])
    test_start = episode_seeds("test", s, cfg.episodes).start
    kw = {"normalizer": norm, "seed": test_start}
    pol: dict[str, Any] = {
        HABI: HabitualPolicy(model=model, num_candidates=5, scorer="habi", **kw),
        H1: HabitualPolicy(model=model, num_candidates=1, scorer="none", **kw),
        H50: HabitualPolicy(model=model, num_candidates=50, scorer="habi", **kw),
        HPL: HabitualPolicy(model=model, num_candidates=5, scorer="planner", planner=planner, **kw),
        HMEAN: HabitualPolicy(model=model, num_candidates=1, scorer="none", latent="mean", **kw),
        PLANNER: planner,
        PONE: DiffusionPlanner(config=replace(planner.config, num_candidates=1), nets=planner.nets, normalizer=norm),
        "BC": sec.regress_actor(res[("BC", "main")]),
        "Distill-MSE": sec.regress_actor(res[("Distill-MSE", "main")]),
        RANDOM: RandomActions(act_dim, test_start),
        ZERO: ZeroAction(act_dim),
    }
    if s in r.seeds[: cfg.softmax_seeds]:
        pol[PSOFT] = DiffusionPlanner(config=replace(planner.config, decision="softmax"), nets=planner.nets,
                                      normalizer=norm)
    if ("Habi", "ablation") in res:
        abl = sec.habi_model(res[("Habi", "ablation")])
        pol[ABL] = HabitualPolicy(model=abl, num_candidates=5, scorer="habi", **kw)
        pol[ABL1] = HabitualPolicy(model=abl, num_candidates=1, scorer="none", **kw)
    return pol


def _train_evaluate(r: _Run, ch: dict) -> dict[str, Any]:
    """Per-seed training at the chosen lr (the first seed's models are the tuning runs), then test episodes."""
    cfg, seeds, rd = r.cfg, r.seeds, r.rd
    t0 = time.perf_counter()
    kl_seeds = seeds[: cfg.kl_seeds]
    for s in seeds:
        for m in METHODS:
            r.sec.job(m, ch[m], s)
    for s in kl_seeds:
        r.sec.job("Habi", ch["Habi"], s, setting="ablation")
    ev: dict[str, Any] = {"scores": {}, "curves": {m: [] for m in METHODS}, "best_step": {m: [] for m in METHODS},
                          "kl": {"main": [], "ablation": []}, "kl_hist": {"main": [], "ablation": []},
                          "kl_seeds": kl_seeds, "spread": []}
    t_eval = 0.0
    spread_states = r.sec.norm(qlearning_dataset(r.data)["observations"][:: max(1, len(r.data["observations"])
                                                                                   // 500)])
    for s in seeds:
        res = {(m, "main"): r.sec.job(m, ch[m], s).result() for m in METHODS}
        if s in kl_seeds:
            res[("Habi", "ablation")] = r.sec.job("Habi", ch["Habi"], s, setting="ablation").result()
        for m in METHODS:
            ev["curves"][m].append(Curve.from_dict(res[(m, "main")]["curve"]))
            ev["best_step"][m].append(res[(m, "main")]["best_step"])
        for key in ("main", "ablation"):
            if ("Habi", key) in res:
                h = res[("Habi", key)]
                ev["kl"][key].append(h["hist"][-1])  # KL, eta_KL at the kept (best) step
                ev["kl_hist"][key].append(h["full_hist"])
                for row in h["full_hist"]:
                    rd.log(row["step"], stage="habitize", setting=key, seed=s,
                           **{k: v for k, v in row.items() if k != "step"})
        model = r.sec.habi_model(res[("Habi", "main")])
        with torch.no_grad():  # spread of decoded prior samples (the latent's effect on the candidates)
            S = torch.from_numpy(spread_states)
            mu, sig = model.encode_prior(S)
            z = mu[:, None] + sig[:, None] * torch.randn(len(S), 50, mu.shape[-1])
            a = model.decode(z.reshape(-1, mu.shape[-1]), S.repeat_interleave(50, 0)).reshape(len(S), 50, -1)
            ev["spread"].append(float(a.std(1).mean()))
        policies = _policies(r, ch, s, res)
        t1 = time.perf_counter()
        start = episode_seeds("test", s, cfg.episodes).start
        for name, pol in policies.items():
            torch.manual_seed(s)  # the planners draw from torch's generator; Habi from its own (seeded)
            torch.set_num_threads(cfg.planner_threads if isinstance(pol, DiffusionPlanner) else 1)
            ev["scores"].setdefault(name, []).append(score(pol.act_batch, r.env_id, r.meta, episodes=cfg.episodes,
                                                           start=start))
            torch.set_num_threads(1)
            rd.log(None, stage="evaluate", seed=s, policy=name, score=ev["scores"][name][-1])
        t_eval += time.perf_counter() - t1
        if s == r.seed:
            policies[HABI].save(r.out / "habi")  # the speed experiment reads the trained CPU-size Habi from here
    r.trainer.close()
    r.times["train"] = time.perf_counter() - t0 - t_eval
    r.times["eval"] = t_eval
    return ev


def _claims(sec: Section, r: _Run, sel: dict, ch: dict, ev: dict) -> dict[str, str]:
    cfg, seeds, env_id = r.cfg, r.seeds, r.env_id
    sc = ev["scores"]
    metric = f"{env_id} {cfg.dataset} normalised score"
    controls = {RANDOM: sc[RANDOM], ZERO: sc[ZERO]}
    common = (f"{len(seeds)} seeds x {cfg.episodes} test episodes, paired by seed (same reset seeds); one teacher "
              f"(seed {r.seed}) shared by all seeds (official protocol), so the planner's spread is evaluation noise")
    pi = r.pinfo
    g_planner = Claim.gate(
        claim=f"Gate: the Diffusion-QL planner (argmax of 50) has learned {cfg.dataset}: its validation return "
              "plateaued and it beats random and zero actions",
        metric=metric, ours=sc[PLANNER], controls=controls, curves=[r.pcurve], paired=True,
        note=f"trained {pi['steps']} steps (cap {cfg.planner_train.steps}), stopped by {r.pcurve.stopped_by}; best "
             f"validation {pi['best']:.1f} at step {pi['best_step']} (kept; {cfg.planner_val_episodes} validation "
             f"episodes every {cfg.planner_eval_every} steps, patience {cfg.planner_patience}, min_delta "
             f"{cfg.planner_min_delta:g})")
    bc_m = mean_sd(sc["BC"])[0]
    g_bc_level = Claim.gate(
        claim=f"Gate: the planner reaches BC's return on {cfg.dataset} (not below BC by more than "
              f"{100 * cfg.bc_margin:.0f}% of BC's score)",
        metric=metric, ours=sc[PLANNER], controls={"BC (tuned alike, to its plateau)": sc["BC"]},
        margin=-cfg.bc_margin * abs(bc_m), paired=True, paper=PAPER_PLANNER,
        note=f"BC: lr {ch['BC']:g}; a teacher below BC would make every 'Habi vs planner' verdict about an untrained "
             "teacher")
    gates = {}
    for c in (g_planner, g_bc_level):
        sec.add(c)
    for m, name in (("Habi", HABI), ("BC", "BC"), ("Distill-MSE", "Distill-MSE")):
        steps = ev["best_step"][m]
        c = Claim.gate(
            claim=f"Gate: {m} has learned {cfg.dataset}: validation return plateaued on every seed and it beats "
                  "random and zero actions",
            metric=metric, ours=sc[name], controls=controls, curves=ev["curves"][m], paired=True,
            note=f"lr {ch[m]:g} (tuned alike); best step per seed {steps} (cap {cfg.max_steps}, evaluated every "
                 f"{cfg.eval_every}, patience {cfg.patience}, min_delta {cfg.min_delta:g}); stopped by "
                 f"{[c.stopped_by for c in ev['curves'][m]]}")
        sec.add(c)
        gates[m] = c.claim
    planner_gates = [g_planner.claim, g_bc_level.claim, gates["Habi"]]
    pm = mean_sd(sc[PLANNER])[0]
    kl_main = ev["kl"]["main"]
    kl_h = float(np.mean([h["kl_geomean"] for h in kl_main]))
    eta_h = float(np.mean([h["eta_kl"] for h in kl_main]))
    habi_desc = (f"Habi: {_kl_name(cfg.main_kl_lr)}, target 1 (the paper's KL setting); lr {ch['Habi']:g} chosen on "
                 f"validation; KL geo-mean at the kept step {kl_h:.3g}, eta_KL {eta_h:.3g}")
    sec.add(Claim.compare(
        claim=f"Habi (paper's KL setting, Habi critic, N_c=5) is comparable to its diffusion planner on {cfg.dataset}: "
              "normalised return not below 90% of the planner's", metric=metric,
        ours=sc[HABI], baseline=sc[PLANNER], baseline_name="Diffusion-QL planner (argmax of 50)", paper=PAPER_RETURN,
        margin=-0.1 * abs(pm), paired=True, gates=planner_gates,
        note=f"{common}; {habi_desc}; {sel['Habi'].note()}"))
    sec.add(Claim.compare(
        claim="Habi with the official MuJoCo scorer (planner's online critic, N_c=5) is comparable to the planner "
              "(not below 90%)", metric=metric, ours=sc[HPL], baseline=sc[PLANNER],
        baseline_name="Diffusion-QL planner (argmax of 50)", paper=PAPER_RETURN, margin=-0.1 * abs(pm), paired=True,
        gates=planner_gates, note=f"{common}; same Habi model as the row above"))
    sec.add(Claim.compare(
        claim="The latent matters (paper's KL setting): Habi with N_c=5 (Habi critic) scores above N_c=1",
        metric=metric, ours=sc[HABI], baseline=sc[H1], baseline_name="Habi N_c=1 (one prior sample, no critic)",
        paper=PAPER_LATENT, paired=True, gates=[gates["Habi"]],
        note=f"same model per seed; spread (sd) of 50 decoded prior samples per state {np.mean(ev['spread']):.3g} "
             f"(actions in [-1, 1]); N_c=50: {mean_sd(sc[H50])[0]:.1f}; KL geo-mean {kl_h:.3g}"))
    steps_h = int(np.mean(ev["best_step"]["Habi"]))
    sec.add(Claim.threshold(
        claim=f"The paper's adaptive KL weight ({_kl_name(cfg.main_kl_lr)}) brings the geometric-mean KL to within a "
              f"factor 2 of its target 1 within Habi's training (about {steps_h} steps here)",
        metric="|log10 KL - log10 target| at the kept step (decades)",
        ours=[log10_gap(h["kl_geomean"], 1.0) for h in kl_main], threshold=KL_TOL_DECADES, paper=PAPER_KL,
        kind="property", higher_is_better=False,
        note=f"one value per seed; KL geo-mean {kl_h:.3g}, arithmetic mean "
             f"{np.mean([h['kl_mean'] for h in kl_main]):.3g}, eta_KL {eta_h:.3g}; Adam moves log eta_KL by about "
             f"{cfg.main_kl_lr:g} per step, so eta_KL <= 1e-6*exp({cfg.main_kl_lr:g}*steps) (the official code trains "
             "1M steps)"))
    if ev["kl"]["ablation"]:
        kl_a = ev["kl"]["ablation"]
        sec.add(Claim.threshold(
            claim=f"KL ablation ({_kl_name(cfg.ablation_kl_lr)}, same lr): the KL reaches its target within a "
                  "factor 2", metric="|log10 KL - log10 target| at the kept step (decades)",
            ours=[log10_gap(h["kl_geomean"], 1.0) for h in kl_a], threshold=KL_TOL_DECADES, paper=PAPER_KL,
            kind="property", higher_is_better=False,
            note=f"{len(kl_a)} seeds; KL geo-mean {np.mean([h['kl_geomean'] for h in kl_a]):.3g}, eta_KL "
                 f"{np.mean([h['eta_kl'] for h in kl_a]):.3g}; return {mean_sd(sc[ABL])[0]:.1f} (N_c=5) vs "
                 f"{mean_sd(sc[ABL1])[0]:.1f} (N_c=1)"))
    return gates


def _tables(sec: Section, r: _Run, sel: dict, ch: dict, ev: dict) -> None:
    from icml25.plots import grouped_bars, learning_curves
    from icml25.stats import verdict
    from icml25.tuning import selections_table

    cfg, env_id, meta, diag, out = r.cfg, r.env_id, r.meta, r.diag, r.out
    sc = ev["scores"]
    sec.table(f"Normalised score ({env_id} {cfg.dataset}, ours; test episodes)", ["policy", "mean", "sd", "seeds"],
              [[n, round(mean_sd(v)[0], 1), round(mean_sd(v)[1], 1), len(v)] for n, v in sc.items()])
    rows = []
    for b in ("BC", "Distill-MSE"):
        v = verdict(sc[HABI], sc[b], paired=True)
        rows.append([f"Habi (paper's KL setting, N_c=5) vs {b}", round(mean_sd(sc[HABI])[0], 1),
                     round(mean_sd(sc[b])[0], 1), v.verdict, v.p_value])
    sec.table("Habi against the fast baselines (ours, not claims of the paper; paired one-sided t-test)",
              ["comparison", "Habi", "baseline", "verdict", "p"], rows)
    pc = r.pcurve
    sec.table(f"Planner validation curve (argmax of 50, {cfg.planner_val_episodes} validation episodes; weights of "
              "the best evaluation kept)", ["step", "validation score"],
              [[s, round(v, 1)] for s, v in zip(pc.steps, pc.values, strict=True)])
    sec.table("Training to the plateau (validation return; per seed at the chosen lr)",
              ["model", "lr", "best step per seed", "stopped by", "best validation (mean)"],
              [["planner", f"{cfg.planner_train.lr:g} (fixed)", str([r.pinfo["best_step"]]), pc.stopped_by,
                round(r.pinfo["best"], 1)]]
              + [[m, f"{ch[m]:g}", str(ev["best_step"][m]), ", ".join(c.stopped_by for c in ev["curves"][m]),
                  round(float(np.mean([c.best for c in ev["curves"][m]])), 1)] for m in METHODS])
    sec.table("Teacher label diagnostic (best-of-50 by the planner's critic; 1000 data-set states)", ["item", "value"], [
        ["planner, 1 sample (no critic) / argmax of 50 / BC (test, mean)",
         f"{mean_sd(sc[PONE])[0]:.1f} / {mean_sd(sc[PLANNER])[0]:.1f} / {mean_sd(sc['BC'])[0]:.1f}"],
        ["fraction of |a*| > 0.95 (a* / all 50 samples / data actions)",
         f"{diag['frac_bound']:.3f} / {diag['frac_bound_samples']:.3f} / {diag['frac_bound_data']:.3f}"],
        ["within-state corr(action, Q) over the 50 samples: mean / mean |.|",
         f"{diag['corr_aQ']:.3f} / {diag['abs_corr_aQ']:.3f}"],
        ["mean |a* - mean of the 50 samples| / within-state sd of the samples",
         f"{diag['best_minus_mean']:.3f} / {diag['cand_sd']:.3f}"],
        ["mean |a* - a*'| of two independent best-of-50 draws on the same state (label noise)",
         f"{diag['redraw_gap']:.3f}"],
    ])
    cols, srows = selections_table(sel)
    sec.table(f"Tuned alike: Adam lr chosen on validation episodes (seed {r.seed}, {cfg.val_episodes} episodes, "
              f"batch {cfg.batch}; every trial trained to its plateau)", cols, srows)
    sec.table("Tuning trials (best validation normalised score)", ["method", "lr", "validation score"],
              [[m, t["params"]["lr"], t["score"]] for m in sel for t in sel[m].trials])
    kl_rows = []
    for key, kl_lr in (("main", cfg.main_kl_lr), ("ablation", cfg.ablation_kl_lr)):
        if ev["kl"][key]:
            h = ev["kl"][key]
            kl_rows.append([f"{_kl_name(kl_lr)} ({'main' if key == 'main' else 'ablation'})",
                            round(float(np.mean([x["kl_geomean"] for x in h])), 4),
                            round(float(np.mean([x["kl_mean"] for x in h])), 4),
                            float(np.mean([x["eta_kl"] for x in h])), int(np.mean([x["step"] for x in h])), len(h)])
    sec.table("Adaptive KL (at the kept step, target 1)", ["setting", "KL geo-mean", "KL mean", "eta_KL", "step",
                                                            "runs"], kl_rows)
    pt, t = cfg.planner_train, r.times
    sec.table("Data and budget", ["item", "value"], [
        ["env / data set", f"{env_id} / {cfg.dataset}: {len(r.data['observations'])} steps"],
        ["random / expert return", f"{meta['random_return']:.1f} / {meta['expert_return']:.1f}"],
        ["medium checkpoint", f"step {meta['medium_step']} (score {meta['medium_score']:.1f})"],
        ["planner", f"hidden {cfg.planner_hidden}, up to {pt.steps} steps to the plateau (batch {pt.batch_size}, lr "
                    f"{pt.lr:g}, eta {pt.eta:g}, tau {pt.tau:g}, gamma {pt.gamma:g}), 50 cand. x "
                    f"{r.planner.config.steps} DDPM steps; trained {r.pinfo['steps']} steps, kept step "
                    f"{r.pinfo['best_step']}"],
        ["habi", f"d_z {cfg.latent_dim}, hidden {cfg.habi_hidden}, batch {cfg.batch}"],
        ["BC / Distill-MSE", f"MLP 2x{cfg.regress_hidden}, batch {cfg.batch}"],
        ["evaluation", f"{cfg.episodes} test episodes per seed and policy; {cfg.val_episodes} validation episodes "
                       "per evaluation"],
        ["training workers", str(cfg.workers)],
        ["seconds data/planner/labels/tune/train/eval", "/".join(f"{t[k]:.0f}" for k in
                                                                 ("data", "planner", "labels", "tune", "train",
                                                                  "eval"))],
    ])
    names = [n for n in sc if n not in (RANDOM, ZERO)] + [RANDOM, ZERO]
    grouped_bars({"normalised score": {n: sc[n] for n in names}}, out / "scores.png", ylabel="normalised score",
                 title=f"{env_id} {cfg.dataset}")
    curves = {"planner": np.asarray([pc.values]), **{m: _pad([c.values for c in ev["curves"][m]])
                                                     for m in METHODS}}
    steps_axis = {"planner": pc.steps, **{m: _longest([c.steps for c in ev["curves"][m]]) for m in METHODS}}
    longest = max(steps_axis.values(), key=len)
    interp = {k: np.asarray([np.interp(longest, steps_axis[k][: len(v)], v, right=np.nan) for v in vals])
              for k, vals in curves.items()}
    learning_curves(interp, out / "curves.png", x=longest, ylabel="validation normalised score",
                    title="training to the plateau (validation return)")
    figs = ["scores.png", "curves.png"]
    for fname, key, ylabel in (("kl", "kl_geomean", "geometric-mean KL"), ("eta_kl", "eta_kl", "eta_KL")):
        kl_curves = {f"{_kl_name(lr_)}": [[h[key] for h in hist] for hist in ev["kl_hist"][k]]
                     for k, lr_ in (("main", cfg.main_kl_lr), ("ablation", cfg.ablation_kl_lr)) if ev["kl_hist"][k]}
        axes = {f"{_kl_name(lr_)}": _longest([[h["step"] for h in hist] for hist in ev["kl_hist"][k]])
                for k, lr_ in (("main", cfg.main_kl_lr), ("ablation", cfg.ablation_kl_lr)) if ev["kl_hist"][k]}
        x = max(axes.values(), key=len)
        padded = {k: np.asarray([np.interp(x, axes[k][: len(c)], c, right=np.nan) for c in v])
                  for k, v in kl_curves.items()}
        learning_curves(padded, out / f"{fname}.png", x=x, ylabel=ylabel, title=f"adaptive KL weight ({ylabel})",
                        logy=True)
        figs.append(f"{fname}.png")
    sec.figures += figs
    sec.notes += [
        f"data: {'cached' if r.gen['cached'] else 'generated'} in {meta['seconds']}s (SAC "
        f"{meta.get('sac_steps_run', cfg.data.sac_steps)} of at most {cfg.data.sac_steps} steps)",
        "Planner row uses the argmax rule that generated a*; the softmax/target-critic row is the official planner "
        f"evaluation rule (weight temperature 100), on the first {cfg.softmax_seeds} seeds.",
        "Validation episodes use reset seeds from 50,000,000, test episodes from 100,000 (disjoint). The first "
        "seed's test models are the tuning runs at the chosen lr.",
    ]


def _longest(axes: list[list[int]]) -> list[int]:
    return max(axes, key=len)


def _pad(rows: list[list[float]]) -> list[list[float]]:
    return [list(r) for r in rows]


def returns(cfg: Config, seeds: list[int], out: Path) -> Section:
    """Return, KL and the latent's effect at the paper's KL setting, against the planner, BC and Distill-MSE, after
    competence gates."""
    sec = Section("returns")
    prev_threads = torch.get_num_threads()
    torch.set_num_threads(1)  # small nets: a second thread only adds contention on a shared 2-core machine
    try:
        r = _setup(cfg, seeds, out)
        sel, ch = _tune(r)
        ev = _train_evaluate(r, ch)
    finally:
        torch.set_num_threads(prev_threads)
    _claims(sec, r, sel, ch, ev)
    _tables(sec, r, sel, ch, ev)
    return sec
