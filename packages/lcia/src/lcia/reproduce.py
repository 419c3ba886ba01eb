"""Side-by-side reproduction of LCIA's claims at CPU scale (``lcia reproduce [--quick|--smoke]``).

1. **Continual stream** (:func:`continual_stream`): the six-task instruction stream of :mod:`lcia.data` on the tiny
   Llama of the icml25 test bed, LoRA r 8 on every linear layer. Methods, with the same LoRA rank, learning rate,
   steps, task order and seeds (comparisons paired by seed): sequential LoRA fine-tuning, + fixed EMA 0.99, + DEMA
   without grouping, full LCIA (DEMA + grouping); references: multitask joint training (steps × tasks steps) and a
   fresh adapter per task with oracle routing. Claims: forgetting and BWT of each EMA variant vs sequential, DEMA's
   Avg vs fixed EMA's, LCIA vs every continual method, grouping decisions and routing accuracy against the designed
   truth, and the share of α fallbacks.
2. **Cost** (:func:`cost`): time per optimizer step with DEMA vs plain LoRA (target ≤ 1.3×) and DEMA's extra memory
   in exact bytes (two float32 copies of the trainable tensors).
"""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path

import numpy as np
from icml25.claims import Claim, Report
from icml25.experiment import Section, run_experiments

from lcia.config import BUDGETS, Config
from lcia.data import default_stream, designed_truth, template_of
from lcia.metrics import average_accuracy, bwt, forgetting

LABEL = {"sequential": "sequential LoRA", "fixed_ema": "+ fixed EMA 0.99", "dema": "+ DEMA (no grouping)",
         "lcia": "LCIA (DEMA + grouping)", "joint": "joint multitask (reference)",
         "oracle": "adapter per task, oracle routing (reference)"}
PAPER_HEADLINE = "LLaVA-7B on CoIN: forgetting 5.42 (LoRA baseline) -> 1.93 (LCIA), paper abstract"
PAPER_ABLATION = "Table 6 ablation rows LoRA / stable EMA / dynamic EMA / + grouping (numbers not in our notes)"


def _tune_lr(cfg: Config, base, tok, seed: int) -> tuple[Config, Section]:
    """Choose the shared learning rate on the validation split (Avg of the final stage), alike for LCIA and the
    sequential baseline (same grid, same budget); every method then uses the baseline's choice."""
    from icml25.tuning import selections_table, tune_alike

    from lcia.continual import run_stream

    sec = Section("tuning")
    tasks = default_stream(cfg.n_train, seed=seed, n_eval=cfg.n_eval, tasks=cfg.tasks)

    def score(method):
        def f(p):
            r = run_stream(base, tok, tasks, replace(cfg, lr=float(p["lr"])), method=method, seed=seed, split="val")
            return average_accuracy(r["acc"])
        return f

    grid = {"lr": list(cfg.lr_grid)}
    sel = tune_alike({"lcia": (score("lcia"), grid), "sequential": (score("sequential"), grid)})
    cols, rows = selections_table(sel)
    sec.table("Learning rate chosen on the validation split (final-stage Avg, one seed)", cols, rows)
    chosen = float(sel["sequential"].params["lr"])
    sec.notes.append("tuning: " + "; ".join(s.note() for s in sel.values())
                     + f"; every method uses the sequential baseline's choice lr={chosen:g} (the issue asks for the"
                       " same lr for all)")
    return replace(cfg, lr=chosen), sec


def continual_stream(cfg: Config, seeds: list[int], out: Path) -> Section:
    """The six-task stream: every method on every seed; accuracy matrices on the test split."""
    from lcia.continual import run_stream, tiny_base

    sec = Section("continual")
    base, tok = tiny_base(cfg)
    if cfg.lr_grid:
        cfg, tsec = _tune_lr(cfg, base, tok, seed=seeds[0] + 1_000)
        sec.tables.update(tsec.tables)
        sec.notes += tsec.notes
    else:
        sec.notes.append(f"learning rate not tuned in this budget: lr={cfg.lr:g} for every method")
    methods = ("sequential", "fixed_ema", "dema", "lcia")
    avg = {m: [] for m in (*methods, "joint", "oracle")}
    forg = {m: [] for m in methods}
    bw = {m: [] for m in methods}
    mats = {m: [] for m in methods}
    fallback = {"fixed_ema": [], "dema": [], "lcia": []}
    decisions_ok, routing_acc, isolated = [], [], []
    seconds = {m: 0.0 for m in avg}
    truth_groups, truth_decisions = designed_truth(cfg.tasks)
    for s in seeds:
        tasks = default_stream(cfg.n_train, seed=s, n_eval=cfg.n_eval, tasks=cfg.tasks)
        for m in methods:
            t0 = time.perf_counter()
            r = run_stream(base, tok, tasks, cfg, method=m, seed=s)
            seconds[m] += time.perf_counter() - t0
            A = r["acc"]
            mats[m].append(A)
            avg[m].append(average_accuracy(A))
            forg[m].append(forgetting(A))
            bw[m].append(bwt(A))
            if m in fallback:
                shares = [st.dema["fallback_share"] for st in r["stages"] if st.dema]
                fallback[m].append(float(np.mean(shares)) if shares else float("nan"))
            if m == "lcia":
                lr_ = r["learner"]
                decs = [(st.group, st.decision) for st in r["stages"]]
                decisions_ok.append(float(np.mean([d == (g, dd) for d, g, dd in
                                                   zip(decs, truth_groups, truth_decisions)])))
                routed = [lr_.router.route(template_of(ex.prompt)) == g
                          for t, g in zip(tasks, truth_groups) for ex in t.test]
                routing_acc.append(float(np.mean(routed)))
                groups = [g for g, _ in decs]
                isolated.append(sum(groups.count(g) == 1 for g in groups[:-1]))
                lcia_diag = np.diag(A)
                lcia_decs = [d for _, d in decs]
        # references
        t0 = time.perf_counter()
        avg["joint"].append(float(np.mean(run_stream(base, tok, tasks, cfg, method="joint", seed=s)["final"])))
        seconds["joint"] += time.perf_counter() - t0
        # oracle: a fresh adapter per task evaluated right after its training. LCIA's *expand* stages are exactly
        # that (fresh adapter, same init and batch seeds, evaluated by its own adapter at stage j), so only the
        # retrained tasks need their own fresh adapter.
        t0 = time.perf_counter()
        acc = []
        for j, (t, d) in enumerate(zip(tasks, lcia_decs)):
            if d == "expand":
                acc.append(float(lcia_diag[j]))
            else:
                one = run_stream(base, tok, [t], cfg, method="oracle", seed=s)  # stage index 0
                acc.append(float(one["final"][0]))
        avg["oracle"].append(float(np.mean(acc)))
        seconds["oracle"] += time.perf_counter() - t0

    n = len(seeds)
    for m in ("fixed_ema", "dema", "lcia"):
        sec.add(Claim.compare(
            claim=f"{LABEL[m]} forgets less than sequential LoRA fine-tuning", metric="forgetting (fraction)",
            ours=forg[m], baseline=forg["sequential"], baseline_name=LABEL["sequential"], higher_is_better=False,
            paired=True, kind="paper", paper=PAPER_HEADLINE if m == "lcia" else PAPER_ABLATION))
    for m in ("fixed_ema", "dema", "lcia"):
        sec.add(Claim.compare(
            claim=f"{LABEL[m]} has a higher (less negative) BWT than sequential LoRA", metric="BWT (fraction)",
            ours=bw[m], baseline=bw["sequential"], baseline_name=LABEL["sequential"], paired=True, kind="paper",
            paper=PAPER_ABLATION))
    sec.add(Claim.compare(
        claim="DEMA's Avg is above fixed EMA's (better plasticity at comparable stability)", metric="Avg accuracy",
        ours=avg["dema"], baseline=avg["fixed_ema"], baseline_name=LABEL["fixed_ema"], paired=True, kind="paper",
        paper=PAPER_ABLATION,
        note=f"forgetting: DEMA {np.mean(forg['dema']):.3f} vs fixed EMA {np.mean(forg['fixed_ema']):.3f}"))
    for m in ("sequential", "fixed_ema", "dema"):
        sec.add(Claim.compare(
            claim=f"full LCIA has the best Avg among continual methods: above {LABEL[m]}", metric="Avg accuracy",
            ours=avg["lcia"], baseline=avg[m], baseline_name=LABEL[m], paired=True, kind="paper",
            paper=PAPER_ABLATION))
    sec.add(Claim.threshold(
        claim="grouping decisions (group and retrain/expand) match the designed truth of the stream",
        metric=f"share of the {len(cfg.tasks)} decisions right", ours=decisions_ok, threshold=0.99, deterministic=True,
        kind="property", paper=f"designed: groups {truth_groups} (the paraphrase 'sum' retrains the 'add' group at tau=0.3)"))
    sec.add(Claim.threshold(
        claim="test-time routing by each instance's instruction sends it to its designed group",
        metric="routing accuracy (test instances)", ours=routing_acc, threshold=0.99, deterministic=True,
        kind="property", paper="route to the best group if sim >= tau, else the latest (paper, Sec. on grouping)"))
    sec.add(Claim.threshold(
        claim="DEMA's closed form is active: most tensor updates do not fall back to alpha = 0.01",
        metric="share of tensor updates that fell back", ours=fallback["dema"], threshold=0.5,
        higher_is_better=False, kind="target",
        paper="audit of the official code: at small tensor sizes the 0.01 fallback fires on most steps",
        note=f"LCIA's retrain stage: fallback share {np.nanmean(fallback['lcia']):.3f}"))

    rows = []
    for m in ("sequential", "fixed_ema", "dema", "lcia", "joint", "oracle"):
        f = forg.get(m)
        b = bw.get(m)
        rows.append([LABEL[m], f"{np.mean(avg[m]):.3f} ± {np.std(avg[m], ddof=1) if n > 1 else 0:.3f}",
                     "-" if f is None else f"{np.mean(f):.3f} ± {np.std(f, ddof=1) if n > 1 else 0:.3f}",
                     "-" if b is None else f"{np.mean(b):.3f} ± {np.std(b, ddof=1) if n > 1 else 0:.3f}",
                     "-" if m not in fallback else f"{np.nanmean(fallback[m]):.3f}",
                     f"{seconds[m] / n:.1f}"])
    sec.table(f"{len(cfg.tasks)}-task stream, test split, mean ± sd over {n} seeds",
              ["method", "Avg", "forgetting", "BWT", "alpha fallback share", "s per seed"], rows)
    mean_A = {m: np.nanmean(np.stack(mats[m]), axis=0) for m in methods}
    tnames = [t.name for t in tasks]
    for m in ("sequential", "lcia"):
        sec.table(f"Accuracy matrix of {LABEL[m]} (row = after stage i, column = task j; mean over seeds)",
                  ["after \\ task", *tnames],
                  [[tnames[i], *["" if np.isnan(v) else f"{v:.2f}" for v in mean_A[m][i]]]
                   for i in range(len(tnames))])
    sec.notes.append(f"LCIA groups: {int(np.mean(isolated))} of {len(cfg.tasks) - 1} earlier tasks sit alone in their group, so their "
                     "adapter is never trained again and their forgetting is zero by construction (as in the "
                     "released code, see the README)")
    try:
        from icml25.plots import grouped_bars

        grouped_bars({"Avg": {LABEL[m]: avg[m] for m in avg},
                      "forgetting": {LABEL[m]: forg[m] for m in methods}},
                     Path(out) / "continual.png", ylabel="fraction", title="Six-task instruction stream")
        sec.figures.append("continual.png")
        _matrices_png(mean_A, tnames, Path(out) / "matrices.png")
        sec.figures.append("matrices.png")
    except Exception as exc:  # pragma: no cover - plotting must not lose the measurements
        sec.notes.append(f"figures not written: {exc}")
    return sec


def _matrices_png(mean_A: dict, tnames: list[str], path: Path) -> None:
    from icml25.plots import _plt, save_figure

    plt = _plt()
    fig, axes = plt.subplots(1, len(mean_A), figsize=(3.2 * len(mean_A), 3.2))
    for ax, (m, A) in zip(np.atleast_1d(axes), mean_A.items()):
        ax.imshow(np.nan_to_num(A, nan=0.0), vmin=0, vmax=1, cmap="viridis")
        ax.set_title(LABEL[m], fontsize=8)
        ax.set_xticks(range(len(tnames)))
        ax.set_xticklabels(tnames, rotation=90, fontsize=6)
        ax.set_yticks(range(len(tnames)))
        ax.set_yticklabels(tnames, fontsize=6)
    save_figure(fig, path, dpi=80)


def cost(cfg: Config, seeds: list[int], out: Path) -> Section:
    """Time per optimizer step with DEMA vs plain LoRA, and DEMA's extra memory in exact bytes."""
    from lcia.continual import ContinualLearner, tiny_base, train_steps
    from lcia.data import make_task
    from lcia.dema import DEMA

    sec = Section("cost")
    base, tok = tiny_base(cfg)
    steps = max(5, min(cfg.steps, 15))
    ratios, extra, expected = [], [], []
    for s in seeds[:3]:
        task = make_task("add", cfg.n_train, seed=s, n_eval=4)
        times = {}
        for use in (False, True, False, True):  # interleaved, the second pair kept
            learner = ContinualLearner(base, tok, cfg, "sequential", seed=s)
            learner._new_adapter("default", s)
            d = DEMA(learner.model) if use else None
            t0 = time.perf_counter()
            train_steps(learner.model, tok, task.train, steps=steps, lr=cfg.lr, batch_size=cfg.batch_size, seed=s,
                        dema=d)
            times[use] = (time.perf_counter() - t0) / steps
            if d is not None:
                extra.append(float(d.extra_bytes))
                expected.append(float(2 * 4 * sum(p.numel() for _, p in d.params)))
        ratios.append(times[True] / times[False])
    sec.add(Claim.threshold(
        claim="time per optimizer step with DEMA is at most 1.3x plain LoRA", metric="time ratio DEMA / LoRA",
        ours=ratios, threshold=1.3, higher_is_better=False, kind="target",
        paper="issue target (the paper reports no timing)", note=f"{steps} steps per measurement, alone under the "
                                                                  "CPU lock, 2 threads"))
    sec.add(Claim.compare(
        claim="DEMA's extra memory is exactly two float32 copies of the trainable tensors (theta* and g_prev)",
        metric="extra bytes", ours=extra, baseline=expected, baseline_name="2 x 4 bytes x trainable numel",
        margin=-0.5, higher_is_better=False, deterministic=True, kind="property",
        paper="released code deep-copies parameters and gradients (note: triples the trainable memory)"))
    sec.table("DEMA cost", ["quantity", "value"],
              [["time ratio DEMA / LoRA (mean)", f"{np.mean(ratios):.3f}"],
               ["extra bytes", f"{int(extra[0])}"], ["trainable tensors' bytes", f"{int(expected[0] // 2)}"]])
    return sec


EXPERIMENTS = [continual_stream, cost]


def reproduce(*, quick: bool, smoke: bool, out: Path, seed: int) -> Report:
    return run_experiments("lcia", EXPERIMENTS, BUDGETS, quick=quick, smoke=smoke, out=out, seed=seed)
