"""Side-by-side reproduction of FOCoOp's claims on the tiny-CLIP federated OOD benchmark (issue 19).

Every method — zero-shot CLIP, PromptFL, PromptFolio, FedOTP, FedPGP, FOCoOp and its three ablations (−DRO, −OT,
−OOD prompts) — runs on the same clients, splits, rounds and seeds, on three splits: Dirichlet α = 0.1 (label skew),
pathological (each client holds 2 of the 8 classes) and domain shift (each client sees its own corruption of the
shapes; CACC on a held-out corruption). Image features are encoded once.

Fairness:

* **Tuned alike.** The SGD learning rate of every trained method is chosen by :func:`icml25.tuning.tune_alike` on
  the same grid, with the same training budget (rounds, local epochs, shots), on a separate tuning federation of the
  same split (its own seed), by the mean over clients of the accuracy on each client's **validation** split (the rest
  of its share of the training pool; never the test split, never OOD data). The chosen values then run on every test
  seed.
* **Same scoring for everyone.** Each method without learned OOD prompts (zero-shot CLIP, the four federated
  baselines, FOCoOp −OOD prompts) is scored four ways: its own MSP, its own energy, and with the K negative words
  FOCoOp uses appended as zero-shot NegLabel columns (MSP over the ID columns — FOCoOp's score — and NegLabel's summed
  ID mass). "Zero-shot CLIP, +NegLabel cols" is the no-training NegLabel reference. The OOD claims compare FOCoOp with
  the **strongest** of these rows on the test mean (a conservative choice: selecting on test favours the baseline).

Claims are computed from the per-seed numbers with :meth:`icml25.claims.Claim.compare` (paired by seed: every method
sees the same split and seed).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from icml25.claims import Claim, Report, mean_sd
from icml25.experiment import Budgets, Section, run_experiments

METHODS = ("zeroshot", "promptfl", "promptfolio", "fedotp", "fedpgp", "focoop", "focoop_no_dro", "focoop_no_ot",
           "focoop_no_oodp")
BASELINES = ("zeroshot", "promptfl", "promptfolio", "fedotp", "fedpgp")
MULTI_SCORED = (*BASELINES, "focoop_no_oodp")  # methods without learned OOD prompts: scored four ways
TRAINED = tuple(m for m in METHODS if m != "zeroshot")
LABELS = {"zeroshot": "Zero-shot CLIP", "promptfl": "PromptFL", "promptfolio": "PromptFolio", "fedotp": "FedOTP",
          "fedpgp": "FedPGP", "focoop": "FOCoOp", "focoop_no_dro": "FOCoOp −DRO", "focoop_no_ot": "FOCoOp −OT",
          "focoop_no_oodp": "FOCoOp −OOD prompts"}
# evaluation variants of a method without OOD prompts: (label, FedConfig overrides)
SCORINGS = {
    "msp": ("MSP (own)", dict(score="msp")),
    "energy": ("energy (own)", dict(score="energy")),
    "neg_msp": ("+NegLabel cols, MSP", dict(score="msp", neg_columns=True)),
    "neg_sum": ("+NegLabel cols, NegLabel score", dict(score="neglabel", neg_columns=True)),
}
FOCOOP_SCORING = "MSP over ID cols (learned OOD prompts)"
PAPER = ("paper (Fig. 1, main tables): FOCoOp beats federated prompt-learning baselines on FPR95/AUROC/CACC at "
         "comparable ACC; exact numbers not in our notes")
LR_GRID = (7e-3, 2e-2, 6e-2)  # SGD lr, the same 3 points for every trained method (×3 steps; extended at an edge)
TUNE_SEED_OFFSET = 1000  # the tuning federation has its own split, disjoint in seed from every test seed
# (key, split, alpha, label)
SPLITS = {
    "dir": ("dirichlet", 0.1, "Dirichlet α=0.1"),
    "patho": ("pathological", 0.1, "pathological, 2 classes/client"),
    "domain": ("domain", 0.1, "domain shift (CACC on a held-out corruption)"),
}


@dataclass(frozen=True)
class Budget:
    """What ``reproduce`` varies between its smoke, quick and full runs."""

    clients: int
    rounds: int
    local_epochs: int
    seeds: int
    n_train: int
    n_test: int
    n_far: int
    n_near: int
    corruptions: tuple[str, ...]
    clip_steps: int
    num_shot: int
    lr_grid: tuple[float, ...]
    extend: int
    splits: tuple[str, ...]
    flower: bool
    methods: tuple[str, ...] = METHODS
    n_ood: int = 10


BUDGETS: Budgets[Budget] = Budgets(
    smoke=Budget(clients=2, rounds=1, local_epochs=1, seeds=1, n_train=10, n_test=5, n_far=10, n_near=10,
                 corruptions=("noise",), clip_steps=0, num_shot=4, lr_grid=(1e-2, 4e-2), extend=0, splits=("dir",),
                 flower=False),
    quick=Budget(clients=4, rounds=2, local_epochs=1, seeds=3, n_train=30, n_test=25, n_far=80, n_near=80,
                 corruptions=("brightness", "noise", "blur"), clip_steps=1000, num_shot=8, lr_grid=LR_GRID,
                 extend=0, splits=("dir", "domain"), flower=False),
    full=Budget(clients=10, rounds=4, local_epochs=1, seeds=5, n_train=60, n_test=40, n_far=150, n_near=150,
                corruptions=("brightness", "noise", "blur"), clip_steps=1000, num_shot=8, lr_grid=LR_GRID,
                extend=1, splits=("dir", "patho", "domain"), flower=True),
)


class _Bench:
    """The state the three sections share: the tiny CLIP and its encoded benchmark, the tuned lrs, the test runs."""

    def __init__(self, b: Budget, seeds: list[int], smoke: bool) -> None:
        from focoop.data import encode_benchmark, load_tiny_clip

        self.b, self.seeds, self.smoke = b, seeds, smoke
        self.seed = seeds[0]
        t0 = time.perf_counter()
        self.bundle = load_tiny_clip(random=True) if smoke else load_tiny_clip(steps=b.clip_steps)
        self.t_clip = time.perf_counter() - t0
        self.bench = encode_benchmark(self.bundle, n_train_per_class=b.n_train, n_test_per_class=b.n_test,
                                      n_far=b.n_far, n_near=b.n_near, corruptions=b.corruptions,
                                      domains="domain" in b.splits)
        self.words: list[str] | None = None
        self.selections: dict[str, dict] = {}
        self.lr_of: dict[tuple[str, str], float] = {}
        self.rows: dict[tuple[str, str, str], list[dict]] = {}  # (split, method, scoring) -> per-seed summaries
        self.timing: dict[str, list[float]] = {"inprocess": [], "flower": []}
        self.run_seconds: dict[str, list[float]] = {}
        self.engines_equal, self.flower_checked = True, 0
        self.hist: Any = None
        self.t_tune = self.t_test = 0.0

    def fed(self, sk: str, s: int):
        from focoop.data import make_federation

        split, alpha, _ = SPLITS[sk]
        b = self.b
        st = make_federation(self.bundle, self.bench, n_clients=b.clients, alpha=alpha, num_shot=b.num_shot, seed=s,
                             n_ood=b.n_ood, split=split, words=self.words)
        if self.words is None:  # chosen once (they depend on the CLIP and the class names only)
            self.words = st.neg_words
        return st

    def cfg_of(self, m: str, sk: str, s: int, lr: float):
        from focoop.config import FedConfig

        b = self.b
        return FedConfig(method=m, n_clients=b.clients, rounds=b.rounds, local_epochs=b.local_epochs, lr=lr, seed=s,
                         n_ood=b.n_ood)

    # -- row helpers
    def vals(self, sk: str, m: str, scoring: str, key: str) -> list[float]:
        return [row[key] for row in self.rows[(sk, m, scoring)]]

    @staticmethod
    def rows_of(m: str) -> list[tuple[str, str]]:
        return [(m, k) for k in SCORINGS] if m in MULTI_SCORED else [(m, "own")]

    def strongest(self, sk: str, key: str, hib: bool, candidates: list[tuple[str, str]]) -> tuple[str, str]:
        means = {c: float(np.mean(self.vals(sk, *c, key))) for c in candidates}
        return (max if hib else min)(means, key=means.get)

    def tune_note(self, sk: str, *ms: str) -> str:
        return "; ".join(self.selections[sk][LABELS[m]].note() if m in TRAINED else f"{LABELS[m]}: untrained"
                         for m in ms)


def _row_label(m: str, scoring: str) -> str:
    return f"{LABELS[m]}, {SCORINGS[scoring][0]}" if scoring in SCORINGS else LABELS[m]


_STATE: dict[tuple[Budget, tuple[int, ...]], _Bench] = {}


def _state(b: Budget, seeds: list[int]) -> _Bench:
    key = (b, tuple(seeds))
    if key not in _STATE:
        _STATE.clear()
        _STATE[key] = _Bench(b, seeds, smoke=b == BUDGETS.smoke)
    return _STATE[key]


def tuning(b: Budget, seeds: list[int], out: Path) -> Section:
    """The SGD lr of every trained method, tuned alike on the validation split of a separate federation."""
    from icml25.tuning import selections_table, tune_alike

    from focoop.engine import run_inprocess, validation_accuracy

    st = _state(b, seeds)
    sec = Section("tuning")
    trained = [m for m in b.methods if m in TRAINED]
    t0 = time.perf_counter()
    for sk in b.splits:
        ts = st.seed + TUNE_SEED_OFFSET
        tune_setup = st.fed(sk, ts)

        def evaluate(p, m, sk=sk, ts=ts, tune_setup=tune_setup):
            c = st.cfg_of(m, sk, ts, p["lr"])
            return validation_accuracy(tune_setup, c, run_inprocess(tune_setup, c))

        comp = {LABELS[m]: (lambda p, m=m: evaluate(p, m), {"lr": list(b.lr_grid)}) for m in trained}
        sel = tune_alike(comp, extend=b.extend)
        st.selections[sk] = sel
        for m in trained:
            st.lr_of[(sk, m)] = float(sel[LABELS[m]].params["lr"])
        sec.table(f"lr chosen on the validation split ({SPLITS[sk][2]}; validation ACC, mean over clients)",
                  *selections_table(sel))
    st.t_tune = time.perf_counter() - t0
    return sec


def _test_runs(st: _Bench) -> None:
    """Every method at its chosen lr on every test seed; methods without OOD prompts scored four ways."""
    import torch

    from focoop.engine import evaluate_variants, run_inprocess
    from focoop.flower import run_flower_local

    b, seeds = st.b, st.seeds
    t0 = time.perf_counter()
    for sk in b.splits:
        for s in seeds:
            setup = st.fed(sk, s)
            for m in b.methods:
                cfg = st.cfg_of(m, sk, s, st.lr_of.get((sk, m), b.lr_grid[0]))
                r = run_inprocess(setup, cfg)
                st.run_seconds.setdefault(m, []).append(r.seconds)
                if m in MULTI_SCORED:
                    ev = evaluate_variants(setup, cfg, r, {k: cfg.with_(**over) for k, (_, over) in SCORINGS.items()})
                    for key in SCORINGS:
                        st.rows.setdefault((sk, m, key), []).append(ev[key].summary())
                else:
                    st.rows.setdefault((sk, m, "own"), []).append(r.summary())
                if m == "focoop":
                    st.timing["inprocess"].append(r.seconds_per_round)
                    if st.hist is None:
                        st.hist = r.history
                    if b.flower and s == seeds[0] and sk == b.splits[0]:  # Flower apps, same split/seed
                        fr = run_flower_local(setup, cfg)
                        st.timing["flower"].append(fr.seconds_per_round)
                        same = all(torch.allclose(r.global_state[k], fr.global_state[k], atol=1e-6)
                                   for k in r.global_state)
                        same &= all(a.keys() == bb.keys() and np.allclose(
                            [a[k] for k in a], [bb[k] for k in a], rtol=0, atol=1e-9, equal_nan=True)
                            for a, bb in zip(r.per_client, fr.per_client))  # NaN: client without a test split
                        st.engines_equal &= bool(same)
                        st.flower_checked += 1
    st.t_test = time.perf_counter() - t0


def _result_tables(st: _Bench, sec: Section) -> None:
    from icml25.stats import verdict

    b, methods = st.b, st.b.methods
    cols = ["method", "scoring", "lr", "ACC", "CACC", "FPR95", "AUROC", "FPR95 spread (std over clients)",
            "FPR95 far", "FPR95 near"]
    for sk in b.splits:
        tab = []
        for m in methods:
            for _, k in st.rows_of(m):
                lr = st.lr_of.get((sk, m))
                row = [LABELS[m], SCORINGS[k][0] if k in SCORINGS else FOCOOP_SCORING, "—" if lr is None else lr]
                for key in ("acc", "cacc", "fpr95", "auroc", "fpr95_std", "fpr95_far", "fpr95_near"):
                    mu, sd = mean_sd(st.vals(sk, m, k, key))
                    row.append(f"{mu:.3f} ± {sd:.3f}")
                tab.append(row)
        sec.table(f"{SPLITS[sk][2]} (mean ± sd over {len(st.seeds)} seeds of the mean over clients)", cols, tab)
    if "focoop_no_dro" in methods:  # the DRO's effect, whatever it is (FOCoOp − FOCoOp −DRO, paired over seeds)
        eff = []
        for sk in b.splits:
            for key, name in (("acc", "ACC"), ("cacc", "CACC"), ("fpr95", "FPR95"), ("auroc", "AUROC")):
                a, c = st.vals(sk, "focoop", "own", key), st.vals(sk, "focoop_no_dro", "own", key)
                d = np.asarray(a) - np.asarray(c)
                p1 = verdict(a, c, paired=True).p_value if len(d) >= 3 else None
                p_two = float("nan") if p1 is None else min(1.0, 2 * min(p1, 1 - p1))
                eff.append([SPLITS[sk][2], name, f"{np.mean(a):.3f}", f"{np.mean(c):.3f}",
                            f"{d.mean():+.3f} ± {d.std(ddof=1) if len(d) > 1 else 0.0:.3f}",
                            "—" if not np.isfinite(p_two) else f"{p_two:.2g}"])
        sec.table("effect of the bi-level DRO (FOCoOp minus FOCoOp −DRO, paired over seeds; two-sided p)",
                  ["split", "metric", "FOCoOp", "FOCoOp −DRO", "difference (mean ± sd)", "p"], eff)


def _split_claims(st: _Bench, sk: str, sec: Section) -> None:
    """FOCoOp vs the strongest baseline on ACC/CACC/FPR95/AUROC, then the three ablations, on one split."""
    methods, has = st.b.methods, set(st.b.methods)
    baselines = [m for m in BASELINES if m in methods]
    baseline_rows = [r for m in baselines for r in st.rows_of(m)]
    sl = SPLITS[sk][2]
    ours = {key: st.vals(sk, "focoop", "own", key) for key in ("acc", "cacc", "fpr95", "auroc", "fpr95_std")}
    for key, name, hib in (("acc", "ACC", True), ("cacc", "CACC", True), ("fpr95", "FPR95", False),
                           ("auroc", "AUROC", True)):
        ood = key in ("fpr95", "auroc")
        cands = baseline_rows if ood else [(m, st.rows_of(m)[0][1]) for m in baselines]
        bm, bk = st.strongest(sk, key, hib, cands)
        what = (f"{len(cands)} rows: {', '.join(LABELS[m] for m in baselines)}, each with its own MSP/energy and "
                "with the same NegLabel columns" if ood else
                f"{', '.join(LABELS[m] for m in baselines)} (scoring-independent)")
        acc = key == "acc"
        sec.add(Claim.compare(
            claim=(f"{sl}: FOCoOp {'is not worse (by more than 0.02) than' if acc else 'beats'} the "
                   f"strongest baseline on {name}"),
            metric=f"{name} ({sl}, mean over clients)", ours=ours[key], baseline=st.vals(sk, bm, bk, key),
            baseline_name=_row_label(bm, bk), paper=PAPER, kind="paper", higher_is_better=hib,
            margin=-0.02 if acc else 0.0, paired=True,
            note=(f"baseline = the best of {what}, by test mean (a conservative choice); "
                  + st.tune_note(sk, "focoop", bm))))
    if "focoop_no_dro" in has:
        for key, name, hib, says in (
                ("cacc", "CACC", True, "removing the bi-level DRO lowers CACC"),
                ("fpr95", "FPR95", False, "BOS = bi-level OOD separation; removing it worsens OOD detection")):
            sec.add(Claim.compare(
                claim=f"{sl}: the bi-level DRO (BOS) {'raises' if hib else 'lowers'} {name} "
                      "(FOCoOp vs FOCoOp −DRO)",
                metric=f"{name} ({sl})", ours=ours[key], baseline=st.vals(sk, "focoop_no_dro", "own", key),
                baseline_name=LABELS["focoop_no_dro"], paired=True, kind="paper", higher_is_better=hib,
                paper=f"FOCoOp ablation (w/o BOS): {says}", note=st.tune_note(sk, "focoop", "focoop_no_dro")))
    if "focoop_no_ot" in has:
        sec.add(Claim.compare(
            claim=f"{sl}: OT calibration (GOC) lowers the spread of FPR95 across clients (FOCoOp vs FOCoOp −OT)",
            metric=f"std over clients of FPR95 ({sl})", ours=ours["fpr95_std"],
            baseline=st.vals(sk, "focoop_no_ot", "own", "fpr95_std"), baseline_name=LABELS["focoop_no_ot"],
            paired=True, kind="paper", higher_is_better=False,
            paper="FOCoOp ablation (w/o GOC): the UOT calibration makes OOD detection consistent across clients",
            note=st.tune_note(sk, "focoop", "focoop_no_ot")))
    if "focoop_no_oodp" in has:
        bm, bk = st.strongest(sk, "fpr95", False, st.rows_of("focoop_no_oodp"))
        sec.add(Claim.compare(
            claim=f"{sl}: learned OOD prompts lower FPR95 (FOCoOp vs FOCoOp −OOD prompts, best of its 4 scorings)",
            metric=f"FPR95 ({sl})", ours=ours["fpr95"], baseline=st.vals(sk, bm, bk, "fpr95"),
            baseline_name=_row_label(bm, bk), paired=True, kind="paper", higher_is_better=False,
            paper="FOCoOp ablation (w/o OOD prompts): the OOD prompts are what separates ID from OOD",
            note=("the ablation without OOD prompts is scored like the baselines (own MSP/energy and the same "
                  "NegLabel columns), the best by test mean; " + st.tune_note(sk, "focoop", "focoop_no_oodp"))))


def results(b: Budget, seeds: list[int], out: Path) -> Section:
    """Every method on every split and test seed: result tables, the paper's claims per split, the engines."""
    st = _state(b, seeds)
    sec = Section("results")
    _test_runs(st)
    _result_tables(st, sec)
    for sk in b.splits:
        _split_claims(st, sk, sec)
    if st.flower_checked:
        sec.add(Claim(
            claim="the Flower ClientApp/ServerApp path gives the same result as the in-process engine",
            metric=f"identical global prompts and per-client metrics (FOCoOp, same seed, {st.flower_checked} runs)",
            ours=float(st.engines_equal), baseline=None, baseline_name="in-process engine",
            holds=bool(st.engines_equal), kind="property", paper="engineering requirement (not a paper claim)",
            note="compared to 1e-6 (prompts) / 1e-9 (metrics); measured in this run"))
    sec.table("engine time per round (FOCoOp)", ["engine", "seconds per round (mean ± sd)"],
              [[k, "{:.3f} ± {:.3f}".format(*mean_sd(v))] for k, v in st.timing.items() if v])
    sec.table("seconds per run (training + evaluation, mean over splits and seeds)", ["method", "seconds"],
              [[LABELS[m], f"{np.mean(v):.2f}"] for m, v in st.run_seconds.items()])
    return sec


def figures(b: Budget, seeds: list[int], out: Path) -> Section:
    """FPR95/ACC/CACC bars (each method at its best scoring on FPR95) and the run's notes."""
    from icml25.plots import grouped_bars

    st = _state(b, seeds)
    sec = Section("figures")
    best_row = {(sk, m): st.strongest(sk, "fpr95", False, st.rows_of(m)) for sk in b.splits for m in b.methods}
    for key, name in (("fpr95", "FPR95 (lower is better; each method at its best scoring)"), ("acc", "ACC"),
                      ("cacc", "CACC")):
        data = {SPLITS[sk][2].split(" (")[0]: {LABELS[m]: st.vals(sk, *best_row[(sk, m)], key) for m in b.methods}
                for sk in b.splits}
        fname = f"{key}.png"
        grouped_bars(data, out / fname, ylabel=key.upper(), title=f"{name}, mean over clients (tiny CLIP)")
        sec.figures.append(fname)
    zs = getattr(st.bundle, "info", {}).get("zero_shot", {})
    clip_desc = "random (smoke)" if st.smoke else f"pretrained {b.clip_steps} steps"
    sec.notes += [
        f"tiny CLIP: {clip_desc}; zero-shot after pretraining {zs}; loading/pretraining took {st.t_clip:.1f} s; "
        f"benchmark encoded once in {st.bench.seconds:.1f} s ({b.n_train} train / {b.n_test} test images per "
        f"class, {b.n_far} far-OOD textures + {b.n_near} near-OOD held-out shapes)",
        f"{b.clients} clients, {b.rounds} rounds x {b.local_epochs} local epochs, {b.num_shot} shots, "
        f"K={b.n_ood} negative words {st.words}; test seeds {seeds}; tuning seed {st.seed + TUNE_SEED_OFFSET}",
        f"lr grid {list(b.lr_grid)} (extended by one step when the choice is at an edge: "
        f"{'yes' if b.extend else 'no'}), the same for every trained method; tuning took {st.t_tune:.1f} s, "
        f"the test runs {st.t_test:.1f} s",
    ]
    if st.hist:
        sec.notes.append(
            f"FOCoOp ({SPLITS[b.splits[0]][2]}, seed {seeds[0]}) per-round server/DRO log: "
            + "; ".join(f"r{int(h['round'])}: plan mass {h.get('plan_mass', float('nan')):.3f}, "
                        f"selected {int(h.get('n_selected', 0))}, γ₂ {h.get('gamma_ood_mean', float('nan')):.2f}, "
                        f"ESS {h.get('ess_mean', float('nan')):.1f}" for h in st.hist[-3:]))
    return sec


EXPERIMENTS = [tuning, results, figures]


def reproduce(*, quick: bool, smoke: bool, out: Path, seed: int) -> Report:
    import torch

    torch.set_num_threads(1)  # tiny ops: one thread avoids OpenMP spin on shared cores
    try:
        return run_experiments("focoop", EXPERIMENTS, BUDGETS, quick=quick, smoke=smoke, out=Path(out), seed=seed)
    finally:
        _STATE.clear()
