"""Presets of ``lift train`` (:func:`paper`, :func:`cpu`) and the budgets of ``lift reproduce`` (house shape: frozen
config dataclasses, one :class:`icml25.experiment.Budgets`)."""

from __future__ import annotations

from dataclasses import dataclass

from icml25.experiment import Budgets

__all__ = ["Config", "BUDGETS", "TASK_BUDGETS", "SOURCE_TASK", "TARGET_TASK", "TIE_BREAK", "TrainPreset", "paper",
           "cpu"]


@dataclass(frozen=True)
class TrainPreset:
    """The settings of ``lift train`` a preset fixes (each is the flag of the same name; ``lift train --preset``)."""

    model: str = "tiny"
    """Model: 'tiny', a local folder or a HF model id."""
    steps: int = 300
    """Optimizer steps."""
    batch_size: int = 64
    """Micro-batch size."""
    grad_accum: int = 1
    """Micro-batches per optimizer step."""
    lr: float = 3e-3
    """Learning rate (linear decay, 3 % warm-up)."""
    filter_rank: int = 8
    """r_f."""
    budget_rank: int = 4
    """r_b."""
    update_interval: int = 25
    """Mask refresh interval (optimizer steps)."""
    betas: tuple[float, float] = (0.9, 0.95)
    """Adam betas."""
    eps: float = 1e-6
    """Adam eps."""
    weight_decay: float = 0.0
    """Decoupled weight decay."""
    seed: int = 0
    """Seed."""


def paper() -> TrainPreset:
    """LIFT on Llama-2-7B for math reasoning (paper note, "Training recipe" and its table [official code]): lr 2e-4,
    r_b = 128 (LoRA's count at rank 128), r_f = 64, masks refreshed every 400 optimizer steps, micro-batch 1 x
    gradient accumulation 16, linear schedule with 3 % warm-up, SparseAdamW betas (0.9, 0.999), eps 1e-6, no weight
    decay, seed 43; the model is the HF id ``meta-llama/Llama-2-7b-hf`` (needs the network or a local copy).

    Not expressible by ``lift train``: "3 epochs" (``--steps`` counts optimizer steps: give 3 x examples / 16 for
    your ``--data``; the preset keeps the CPU default of 300), the MATH10K data (``--data FILE.jsonl``), max_seq_len
    2048, bf16 and gradient checkpointing."""
    return TrainPreset(model="meta-llama/Llama-2-7b-hf", batch_size=1, grad_accum=16, lr=2e-4, filter_rank=64,
                       budget_rank=128, update_interval=400, betas=(0.9, 0.999), seed=43)


def cpu() -> TrainPreset:
    """The CPU scale ``lift train`` uses by default: the tiny Llama (paper note, "Reproduction at CPU scale"),
    300 steps of batch 64, lr 3e-3, r_f = 8, r_b = 4, masks every 25 steps."""
    return TrainPreset()

SOURCE_TASK = "add"
TARGET_TASK = "mul"

TIE_BREAK = 1e-4
"""Validation score = exact match + TIE_BREAK x answer-token accuracy: exact match decides (it moves in steps of
1/n_val), the graded token accuracy only breaks exact ties."""


@dataclass(frozen=True)
class Config:
    """Sizes of one reproduce mode (the full run's values are the defaults)."""

    seeds: int = 5
    """Seeds of every per-seed list (paired by seed across methods)."""
    target_task: str = TARGET_TASK
    """Test-bed task of the fine-tuning (source task: :data:`SOURCE_TASK`)."""
    workers: int = 2
    """Independent fine-tuning runs (tuning grid points, seeds, rank-sweep points) go to this many forked worker
    processes with one torch thread each (the tiny LM does not speed up with a second thread; two processes nearly
    double the throughput on 2 cores). 1 = sequential in this process."""
    steps: int = 90
    """Optimizer steps of every fine-tuning run (same for every method)."""
    batch_size: int = 32
    n_train: int = 2000
    n_eval: int = 300
    """Held-out test examples of the source and of the target task."""
    n_val: int = 300
    """Validation examples of the target task (lr selection only)."""
    hidden_size: int = 96
    num_layers: int = 3
    pretrain_steps: int = 600
    budget_rank: int = 4
    """r_b: LoRA rank and k = (m+n) r_b trainable entries per matrix for the sparse methods."""
    filter_rank: int = 8
    """r_f of LIFT in the method comparison (the "small r_f" of the rank-sweep claim)."""
    filter_ranks: tuple[int, ...] = (1, 2, 4, 8, 16, 32)
    """r_f candidates of the main LIFT row, chosen on the validation split (first seed, at LIFT's lr and mask
    interval tuned at ``filter_rank``); ranks >= min(m, n) (= the magnitude mask) are left out. () = no choice:
    ``filter_rank`` is used."""
    update_interval: int = 25
    curve_every: int = 25
    """Validation exact match is measured every this many optimizer steps of every run (and after the last): the
    validation curve of the competence gates' plateau check. 0 = no curves (the gates then test the controls
    only). The plateau window is the last 3 evaluations, so ``steps / curve_every`` fixes the fraction of the
    linear schedule it covers (steps / 8 = the last 3/8 in the full runs)."""
    plateau_delta: float = 0.02
    """A validation curve has plateaued when its best value rose by at most max(this, the seed sd of the best
    values) over its last 3 evaluations (:func:`icml25.train.plateau_check`)."""
    gate_margin: float = 0.1
    """A method has learned the target task when its held-out exact match beats the prior model's (no fine-tuning)
    by more than this (and its validation curve plateaued)."""
    retention_floor: float = 0.05
    """The source skill counts as retained when, on each seed, some method keeps source exact match above this
    after fine-tuning; otherwise the exact-match retention rows are untested."""
    warmup_ratio: float = 0.1
    """Linear warm-up, as a fraction of ``steps``, of every method's linear lr schedule (the official recipe's 3 %
    is 6 steps of 200: Full FT then sat on a loss plateau on 2 of 5 seeds at its tuned lr)."""
    eps: float = 1e-6
    """AdamW eps of every method: the released SparseAdamW's default."""
    methods: tuple[str, ...] = ("full_ft", "lora", "lift", "lift_smallest", "lift_static", "magnitude", "random")
    """Tuned alike and compared with LIFT: Full FT, LoRA, LIFT-smallest (the released selection), LIFT-static
    (peft SHiRA with the principal mask, never refreshed), magnitude and random sparse (gradient, momentum, movement
    exist in :data:`lift.finetune.METHODS` but do not fit the full run)."""
    lr_grid: tuple[float, ...] = (1 / 3, 1.0, 3.0)
    """Multipliers of the lr grid centre (``reproduce.LR_CENTRES``) for the methods tuned on two knobs (lr x
    ``lora_alphas`` for LoRA, lr x ``update_intervals`` for LIFT and magnitude)."""
    lr_grid_wide: tuple[float, ...] = (1 / 3, 3**-0.5, 1.0, 3**0.5, 3.0, 3**1.5)
    """Multipliers for the methods with lr as their only knob (Full FT, random): as many points as
    ``lr_grid`` x the second knob, so every method gets the same number of tuning runs."""
    lora_alphas: tuple[float, ...] = (2.0, 8.0)
    """LoRA alpha / r_b values tuned with the lr (r = r_b is fixed by the equal-trainable-count constraint; 2 is the
    official LoRA config's ratio)."""
    update_intervals: tuple[int, ...] = (15, 45)
    """Mask refresh intervals tuned with the lr for the dynamic sparse methods (LIFT, magnitude)."""
    curve_lrs: tuple[float, ...] = (1 / 3, 1.0, 3.0)
    """Multipliers of each method's chosen lr: the per-seed lr curve (Full FT, LoRA, LIFT, at the chosen second
    knob) along which retention is read at a common target accuracy (one value per seed, paired). () or (1.0,) =
    no per-seed curves."""
    extend: int = 1
    """A choice at the edge of the lr grid is extended by up to this many grid steps (icml25.tuning)."""
    sweep_ranks: tuple[int, ...] = (1, 4, 16, 0)
    """r_f of the rank sweep; 0 = full rank (W' = W, the magnitude mask). The comparison's r_f (chosen on
    validation) is always added."""
    memory_steps: int = 3
    """Optimizer steps of the in-process allocation trace (tiny LM)."""
    rss_models: tuple[tuple[int, int], ...] = ((512, 2),)
    """(hidden, layers) of the random-weight models whose peak RSS is measured in fresh processes ((1024, 3), about
    52 M parameters, was measured in earlier runs: LIFT / LoRA 1.21; left out for time)."""
    rss_methods: tuple[str, ...] = ("full_ft", "lora", "lift", "lift_dense")
    """``lift_dense`` = LIFT with dense gradients (``sparse_grads=False``), the official code's memory path."""
    rss_repeats: int = 3
    """Fresh processes per (model, method)."""
    mask_timing_dim: int = 4096
    experiments: tuple[str, ...] = ("compare", "rank_sweep", "memory")
    """Experiments of ``reproduce`` (``lift.reproduce.EXPERIMENTS`` by name)."""


_NO_TUNING = dict(lr_grid=(1.0,), lr_grid_wide=(1.0,), lora_alphas=(2.0,), update_intervals=(25,), extend=0,
                  curve_lrs=(1.0,), filter_ranks=())

BUDGETS = Budgets(
    smoke=Config(seeds=1, steps=4, batch_size=8, n_train=64, n_eval=16, n_val=16, hidden_size=32, num_layers=1,
                 pretrain_steps=5, budget_rank=2, filter_rank=2, update_interval=2, workers=1,
                 **{**_NO_TUNING, "update_intervals": (2,), "filter_ranks": (1,)},
                 sweep_ranks=(1, 2, 0), memory_steps=2, rss_models=(), mask_timing_dim=128,
                 methods=("full_ft", "lora", "lift", "lift_static", "lift_smallest", "magnitude", "random")),
    quick=Config(seeds=3, steps=40, n_train=1000, n_eval=100, n_val=100, **_NO_TUNING,
                 methods=("full_ft", "lora", "lift", "magnitude"), sweep_ranks=(1, 8, 0), rss_models=(),
                 mask_timing_dim=1024),
    full=Config(target_task="sub", steps=480, curve_every=60, curve_lrs=(1.0,)),
)
"""The main protocol (``lift reproduce``): method comparison, rank sweep, memory. The full run's target is 2-digit
subtraction in 480 steps, validation curves every 60 (= steps / 8, so the plateau window of the gates -- the last 3
evaluations -- is the last 3/8 of the schedule, as in the earlier 200-step run with curves every 25: a window of a
fixed number of steps would sit ever closer to the end of the linear decay, where the lr is near 0 and a curve is
flat by construction). Measured before: in 200 steps no method plateaued (the best validation exact match still
rose 0.11-0.63 over the last 75 steps); a probe of every method at its 200-step knobs over 400 steps (seeds 0, 1)
had most curves at >= 0.95 by step 250-300, LoRA and LIFT-smallest later, so 480 steps put the window's start past
the point where the 400-step curves reached their ceiling. Multiplication stayed at 0.11-0.20 for every method in
90-250 steps and Full FT's validation exact match was still rising at 1000 steps (0.43 / 0.45): see the ``mul``
sub-run. quick and smoke keep multiplication (a fast plumbing check; quick measures memory by the in-process
allocation trace only: the fresh-process peak-RSS measurements, ~35 s of start-up and model builds, are in the full
run and in the ``slow`` tests)."""

_MUL_TUNING = dict(lr_grid=(1 / 3, 1.0, 3.0), lr_grid_wide=(1 / 3, 1.0, 3.0), lora_alphas=(2.0,),
                   update_intervals=(25,), extend=1, curve_lrs=(1.0,), filter_ranks=())

TASK_BUDGETS = {
    "main": BUDGETS,
    "mul": Budgets(
        smoke=Config(seeds=1, steps=4, batch_size=8, n_train=64, n_eval=16, n_val=16, hidden_size=32, num_layers=1,
                     pretrain_steps=5, budget_rank=2, filter_rank=2, update_interval=2, workers=1, curve_every=2,
                     **{**_NO_TUNING, "update_intervals": (2,)}, target_task="mul",
                     methods=("full_ft", "lora", "lift", "magnitude"), experiments=("compare",)),
        quick=Config(seeds=3, steps=120, n_train=1000, n_eval=100, n_val=100, **_NO_TUNING, target_task="mul",
                     methods=("full_ft", "lora", "lift", "magnitude"), experiments=("compare",)),
        full=Config(steps=2000, target_task="mul", curve_every=250, methods=("full_ft", "lora", "lift", "magnitude"),
                    experiments=("compare",), **_MUL_TUNING),
    ),
}
"""``lift reproduce --task NAME``: ``main`` (the committed full run) and ``mul`` -- 2-digit x 1-digit
multiplication as the target, a task harder than the source task (addition) and than subtraction: Full FT, LoRA,
LIFT and magnitude (full rank: the rank-reduction claim) tuned alike on 3 lrs each (LoRA alpha = 2 r_b, T = 25,
r_f = 8 fixed), 2000 steps with validation curves every 250 (= steps / 8: the plateau window is the last 3/8 of
the linear schedule, as in the main run), 5 seeds, no sweep / memory. Measured before: Full FT reaches 0.20
held-out exact match in 250 steps, 0.38-0.43 in 500-600; no method's validation curve plateaued in the 400-step
run, and Full FT at lr 1e-3 was still rising at 1000 steps (validation 0.39 / 0.42 at step 850, 0.43 / 0.45 at
1000, seeds 0 / 1), so the sub-run trains 5x longer than it did (about 30 min alone on the 2-core machine)."""
