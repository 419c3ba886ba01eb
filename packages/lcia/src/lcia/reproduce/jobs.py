"""Worker jobs of lcia's reproduce runs (plain numbers back): one row on one seed of the test stream, one task's long
'learn it alone' run for the competence gate, and the base model's accuracy on its own pre-training tasks."""

from __future__ import annotations

import time
from collections import Counter

import numpy as np

from lcia.data import default_stream, designed_truth, template_of
from lcia.reproduce.common import JOB


def oracle_tasks(cfg_lcia, cfg_oracle, decisions: list[str]) -> list[int]:
    """Stages the oracle reference must train itself: all of them, unless it has LCIA's lr, when LCIA's *expand*
    stages are exactly its runs (a fresh adapter, the same init and batch seeds, scored by its own adapter at stage
    j) and only the retrained stages remain."""
    same = cfg_oracle.lr == cfg_lcia.lr and cfg_oracle.steps == cfg_lcia.steps
    return [j for j, d in enumerate(decisions) if not (same and d == "expand")]


def stream_job(item: tuple[int, str]) -> dict:
    """Row ``m`` on seed ``s`` on the test split. ``oracle``: the one-adapter-per-task reference, a fresh adapter
    trained on stage j's task alone (same init and batch seeds as every method's stage j) and scored right after
    its training, on the stages :func:`oracle_tasks` names (the others are LCIA's expand stages). Its per-task
    accuracies are also the just-learned accuracies of the competence gates."""
    from lcia.continual import ContinualLearner, run_stream

    s, m = item
    cfg, cfgs, base, tok = JOB["stream_cfg"], JOB["cfgs"], JOB["base"], JOB["tok"]
    tasks = default_stream(cfg.n_train, seed=s, n_eval=cfg.n_eval, tasks=cfg.tasks)
    t0 = time.perf_counter()
    if m == "oracle":
        alone = {}
        for j in oracle_tasks(cfgs["lcia"], cfgs["oracle"], designed_truth(cfg.tasks)[1]):
            learner = ContinualLearner(base, tok, cfgs["oracle"], "sequential", seed=s)
            learner.learn(tasks[j], j)
            alone[j] = float(learner.evaluate(tasks[j].test))
        return {"alone": alone, "seconds": time.perf_counter() - t0}
    if m == "joint":
        final = run_stream(base, tok, tasks, cfgs["joint"], method="joint", seed=s)["final"]
        return {"avg": float(np.mean(final)), "final": [float(v) for v in final], "seconds": time.perf_counter() - t0}
    r = run_stream(base, tok, tasks, cfgs[m], method=m, seed=s)
    out: dict = {"acc": r["acc"], "seconds": time.perf_counter() - t0}
    shares = [st.dema["fallback_share"] for st in r["stages"] if st.dema]
    out["fallback"] = float(np.mean(shares)) if shares else float("nan")
    out["alphas"] = list(r["learner"].formula_alphas)
    out["terms"] = np.asarray(r["learner"].terms, dtype=np.float64).reshape(-1, 4)  # [updates, (numel, a, b, c)]
    by_numel: dict[int, Counter] = {}
    for st in r["stages"]:
        for k, c in (st.dema or {}).get("by_numel", {}).items():
            by_numel.setdefault(int(k), Counter()).update(c)
    out["by_numel"] = {k: dict(v) for k, v in by_numel.items()}
    if m == "lcia":
        truth_groups, truth_decisions = designed_truth(cfg.tasks)
        lr_ = r["learner"]
        decs = [(st.group, st.decision) for st in r["stages"]]
        out["decisions_ok"] = float(np.mean([d == (g, dd) for d, g, dd in zip(decs, truth_groups, truth_decisions)]))
        routed = [lr_.router.route(template_of(ex.prompt)) == g for t, g in zip(tasks, truth_groups) for ex in t.test]
        out["routing_acc"] = float(np.mean(routed))
        groups = [g for g, _ in decs]
        out["isolated"] = sum(groups.count(g) == 1 for g in groups[:-1])
        out["adapters"] = len(set(groups))
        out["decisions"] = [d for _, d in decs]
    return out


def oracle_final(lcia: dict, oracle: dict, n_tasks: int) -> list[float]:
    """The oracle's per-task accuracies: its own runs, LCIA's expand stages for the rest (:func:`oracle_tasks`)."""
    out = []
    for j in range(n_tasks):
        if j in oracle["alone"]:
            out.append(oracle["alone"][j])
        elif lcia["decisions"][j] == "expand":
            out.append(float(lcia["acc"][j, j]))
        else:  # pragma: no cover - the router disagreed with the designed truth (a property claim reports it)
            raise RuntimeError(f"stage {j} was retrained by LCIA but the oracle reference did not train it")
    return out


def long_job(item: tuple[str, int]) -> dict:
    """Task ``name`` learned alone for up to ``gate_steps`` steps (constant lr), seed ``s``: the validation accuracy
    curve and the validation losses. It never stops before the stream's ``steps`` (a reference for "what unlimited
    training reaches" that trains less than the budget it judges would judge nothing) and, below accuracy 1, not
    while the validation loss still falls (:func:`lcia.continual.train_until_learned`)."""
    from lcia.continual import learn_alone_curve

    name, s = item
    cfg, base, tok = JOB["stream_cfg"], JOB["base"], JOB["tok"]
    task = default_stream(cfg.n_train, seed=s, n_eval=cfg.n_eval, tasks=[name])[0]
    t0 = time.perf_counter()
    curve, losses = learn_alone_curve(base, tok, task, JOB["cfgs"]["oracle"], seed=s, max_steps=cfg.gate_steps,
                                      eval_every=cfg.gate_every, loss_delta=cfg.gate_loss_delta,
                                      min_steps=min(cfg.steps, cfg.gate_steps))
    return {"curve": curve.to_dict(), "val_loss": losses, "seconds": time.perf_counter() - t0}


def majority_accuracy(train_answers: list[str], test_answers: list[str]) -> float:
    """Accuracy of answering every test example with the most frequent training answer (the 'chance' control)."""
    top = Counter(train_answers).most_common(1)[0][0]
    return float(np.mean([a == top for a in test_answers]))


def base_competence(base, tok, seeds: list[int], n: int = 64) -> dict:
    """The base model on held-out examples of its own pre-training tasks in their bare format (``reverse abcde=``,
    ``sort 52813=``, ``count a in abcaa=``, ``07+45=``, ``45-07=``): per seed the mean exact match over the tasks,
    and the majority-answer control on the same examples."""
    from icml25.testbeds.lm import exact_match, make_examples

    names = ("reverse", "sort", "count", "add", "sub")
    acc, chance, per_task = [], [], {t: [] for t in names}
    for s in seeds:
        a_s, c_s = [], []
        for t in names:
            test = make_examples(t, n, seed=s, split="test")
            train = make_examples(t, 4 * n, seed=s + 100, split="train")
            v = exact_match(base, tok, test)
            per_task[t].append(v)
            a_s.append(v)
            c_s.append(majority_accuracy([e.answer for e in train], [e.answer for e in test]))
        acc.append(float(np.mean(a_s)))
        chance.append(float(np.mean(c_s)))
    return {"acc": acc, "chance": chance, "per_task": {t: float(np.mean(v)) for t, v in per_task.items()}}
