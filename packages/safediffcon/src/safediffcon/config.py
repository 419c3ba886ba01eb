"""Configuration of safediffcon: one frozen dataclass, named presets (``paper()``, ``cpu()``) and the budgets.

The CLI is generated from these dataclasses (tyro); the field docstrings are the help text.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Literal

from icml25.errors import check_non_negative, check_positive
from icml25.experiment import Budgets

from safediffcon.errors import SafediffconError


@dataclass(frozen=True)
class Config:
    """SafeDiffCon on 1D Burgers: data, model, conformal calibration, post-training, inference, baselines."""

    # ---- PDE and data
    nx: int = 64
    """Interior grid points (official 128, the note's coarse grid 64; dx = 1/(nx+1))."""
    dt: float = 1e-3
    """Explicit Euler step (official 1e-4, coarse grid 1e-3); 1/dt must be a multiple of 10 and nu*dt/dx^2 <= 0.5."""
    nu: float = 0.01
    """Viscosity."""
    u_bound: float = 0.8
    """Safety bound |u| <= u_bound at the 11 recorded frames, s0 = u_bound^2 (paper 0.8, s0 = 0.64)."""
    train_amp: float = 1.0
    """Largest initial amplitude of the training set (official 2: 89% unsafe; 1.0 gives about 55% unsafe)."""
    eval_amp: float = 0.7
    """Largest initial amplitude of calibration/validation/test instances (kept only if the whole trajectory is safe)."""
    n_train: int = 2000
    """Training trajectories."""
    n_cal: int = 150
    """Calibration trajectories (safe)."""
    n_holdout: int = 100
    """Held-out trajectories for the coverage check (safe)."""
    n_val: int = 50
    """Validation instances for tuning (safe; as many as the test set, so a validation R_s moves in the same steps)."""
    n_test: int = 50
    """Test instances (paper: 50)."""
    # ---- model
    dim: int = 16
    """UNet base channels (official 128; 8 in earlier runs, whose controls scored no better than the zero control)."""
    mults: tuple[int, ...] = (1, 2, 4)
    """UNet channel multipliers per level (official (1, 2, 4, 8))."""
    attention: Literal["none", "mid", "all"] = "mid"
    """Global mixing in the UNet as in the official model: "mid" self-attention in the middle block (with a second
    ResNet block there), "all" also linear attention at every level (the official layout; 190 vs 125 ms per
    pretraining step at dim 16 on 2 cores, against "none"), "none" the purely convolutional net of earlier runs (local receptive field)."""
    timesteps: int = 200
    """Diffusion training steps T (official 1000), cosine schedule."""
    scaler: float = 2.0
    """All channels are divided by it (official 10; ours keeps |u| <= 2 of the training set inside the x_hat0 clip)."""
    ddim_steps: int = 10
    """DDIM sampling steps (official 200); must not exceed timesteps."""
    eta: float = 1.0
    """DDIM eta (official 1.0)."""
    pretrain_steps: int = 4000
    """Pretraining steps (official 200k); reproduce stops earlier at a validation plateau, `pretrain` runs them all.
    4000 is what the full run affords at dim 16 with middle attention (140 ms per step on 2 cores, against 89 ms
    at dim 8 without attention; the dim-8 run's 3,000 steps stopped with the validation loss still falling)."""
    pretrain_eval_every: int = 250
    """Pretraining is validated every this many steps: the denoising loss on n_pretrain_val held-out trajectories of
    the training distribution (same t and noise every time). Not the control J of unguided samples: it first
    rises as the model learns to generate training-like forces (the near-zero forces of an untrained model score
    like the zero control), so early stopping on it keeps an untrained model."""
    pretrain_min_delta: float = 5e-4
    """A validation loss must beat the best by more than this to count as progress (the loss is about 0.03)."""
    pretrain_ema: float = 0.995
    """Decay of the exponential moving average of the pretraining weights that is validated and kept (0: the online
    weights, which oscillate at the peak learning rate)."""
    n_pretrain_val: int = 200
    """Held-out trajectories of the pretraining plateau (the training distribution, a split of their own)."""
    pretrain_patience: int = 3
    """Pretraining stops after this many validations in a row without a new best (the best weights are kept)."""
    batch_size: int = 32
    """Batch size of pretraining and post-training."""
    pretrain_lr: float = 2e-3
    """Peak learning rate of pretraining (5% warm-up, cosine)."""
    # ---- conformal + post-training
    alpha: float = 0.98
    """Coverage level of the conformal quantile Q."""
    weight_lambda: float = 2500.0
    """lambda of the weights exp(-lambda max(s + Q - s0, 0)) in calibration and post-training."""
    quantile_method: Literal["weighted", "official"] = "weighted"
    """Textbook weighted conformal quantile, or the released code's quantile of weighted scores."""
    official_safety_row_mask: bool = False
    """Treat the last real row of the safety channel as padding (the released code)."""
    safety_estimate: Literal["channel", "state"] = "channel"
    """s_hat from the generated safety channel (the paper) or max u_hat^2 of the generated state (a diagnostic)."""
    post_epochs: int = 2
    """Post-training epochs (official 5); Q is re-calibrated after each."""
    post_steps: int = 60
    """Post-training steps per epoch (official 3200)."""
    post_lr: float = 2e-4
    """Post-training peak learning rate (official 1e-4 on a 200k-step model), AdamW, 5% warm-up + cosine."""
    # ---- inference
    guidance_lambda: float = 500.0
    """Safety guidance strength lambda_g, on the official grid's scale (official 500)."""
    infft_iters: int = 2
    """Inference-time fine-tuning iterations (the official script's 2 effective updates)."""
    infft_lr: float = 1e-4
    """InfFT learning rate (official 1e-5), AdamW."""
    infft_from_pretrained: bool = False
    """Start InfFT from the pretrained weights at Q = 0, without the post-training shift (the released pipeline)."""
    infft_tie_lambda: bool = False
    """Use lambda_g as the lambda of InfFT's calibration weights (the released code) instead of weight_lambda."""
    infft_ema: bool = False
    """Calibrate and evaluate an EMA copy of the InfFT weights with the released update rule (the released code;
    with 2 updates it holds the weights after the first one) instead of the fine-tuned weights themselves."""
    ema_beta: float = 0.995
    """Largest decay of the released EMA (infft_ema)."""
    ema_update_every: int = 10
    """The released EMA acts on every ema_update_every-th update call (infft_ema)."""
    ess_floor: float = 0.02
    """Gate floor of the post-training weights' effective sample size, as a fraction of the training set (the
    released setting has about 5% at Q = 0.2 and 11% at Q = 0): below it post-training fits a handful of
    trajectories and does not adapt the model."""
    # ---- baselines and tuning
    adjoint_iters: int = 30
    """Adam iterations of the adjoint (direct optimisation) baseline."""
    adjoint_lr: float = 0.5
    """Adam learning rate of the adjoint baseline."""
    adjoint_mus: tuple[float, ...] = (0.0, 10.0, 1000.0)
    """Penalties mu of J + mu max(s - s0, 0)^2 reported for the adjoint baseline."""
    guidance_grid: tuple[float, ...] = (20.0, 100.0, 500.0)
    """lambda_g values SafeDiffCon is tuned over on the validation split."""
    state_guidance_grid: tuple[float, ...] = (0.2, 1.0, 5.0)
    """lambda_g values of the safety_estimate='state' row (its gradient falls on one entry of the state channel,
    about 500x the per-entry push of the channel estimate; same size as guidance_grid)."""
    mu_grid: tuple[float, ...] = (1.0, 10.0, 100.0)
    """mu values the adjoint is tuned over on the validation split (same size as guidance_grid)."""
    feedback_grid: tuple[float, ...] = (1.0, 3.0, 10.0)
    """Gains K of the proportional feedback controller f_k = K (u_d - u(t_k)), tuned on the validation split (same
    size as guidance_grid; K = 10 is dead-beat for du/dt = f)."""
    tune_extend: int = 3
    """A choice at the edge of its grid gets up to this many more grid steps in that direction (icml25.tuning)."""
    few_seeds: int = 3
    """Seeds (the first ones) of the rows that are costly or equal to (d) by construction: the released
    safety-row mask (its own pretraining), safety_estimate='state' (its own post-training), the tied lambda."""
    options_all_seeds: bool = True
    """Run the cheaper released-code options (InfFT chaining, official quantile, InfFT EMA) on every seed; False:
    on the first few_seeds only (the quick run)."""
    mask_row: bool = True
    """Measure the released safety-row mask in reproduce (one more pretraining of pretrain_steps)."""
    speed_trajectories: int = 32
    """Trajectories of the batched-vs-loop solver timing."""
    seeds: int = 5
    """Seeds of a reproduce run."""

    def __post_init__(self) -> None:
        check_positive(self, "nx", "n_train", "n_cal", "n_holdout", "n_val", "n_test", "n_pretrain_val", "dim", "timesteps",
                       "ddim_steps", "pretrain_steps", "pretrain_eval_every", "pretrain_patience", "batch_size", "post_epochs", "post_steps", "adjoint_iters",
                       "speed_trajectories", "seeds")
        check_positive(self, "dt", "nu", "u_bound", "train_amp", "eval_amp", "scaler", "pretrain_lr", "post_lr",
                       "infft_lr", "adjoint_lr", integer=False)
        if not (math.isfinite(self.pretrain_min_delta) and self.pretrain_min_delta >= 0):
            raise SafediffconError(f"pretrain_min_delta must be >= 0, got {self.pretrain_min_delta!r}")
        if not (math.isfinite(self.pretrain_ema) and 0 <= self.pretrain_ema < 1):
            raise SafediffconError(f"pretrain_ema must be in [0, 1), got {self.pretrain_ema!r}")
        check_non_negative(self, "weight_lambda", "guidance_lambda", "infft_iters", "eta", "tune_extend", "few_seeds")
        check_positive(self, "ema_update_every")
        if not (math.isfinite(self.ema_beta) and 0 <= self.ema_beta < 1):
            raise SafediffconError(f"ema_beta must be in [0, 1), got {self.ema_beta!r}")
        if not (math.isfinite(self.alpha) and 0 < self.alpha < 1):
            raise SafediffconError(f"alpha must be in (0, 1), got {self.alpha!r}")
        if self.nx < 4:
            raise SafediffconError(f"nx must be >= 4, got {self.nx}")
        if self.attention not in ("none", "mid", "all"):
            raise SafediffconError(f"attention must be 'none', 'mid' or 'all', got {self.attention!r}")
        if self.ddim_steps > self.timesteps:
            raise SafediffconError(f"ddim_steps ({self.ddim_steps}) must not exceed timesteps ({self.timesteps})")
        if self.nx % 2 ** (len(self.mults) - 1):
            raise SafediffconError(f"nx={self.nx} must be divisible by 2^(len(mults)-1)")
        if any(m < 0 or not math.isfinite(m) for m in (*self.adjoint_mus, *self.mu_grid)):
            raise SafediffconError("adjoint_mus and mu_grid must be finite numbers >= 0")
        if any(k < 0 or not math.isfinite(k) for k in self.feedback_grid):
            raise SafediffconError("feedback_grid must hold finite gains >= 0")
        if not (math.isfinite(self.ess_floor) and 0 <= self.ess_floor <= 1):
            raise SafediffconError(f"ess_floor must be in [0, 1], got {self.ess_floor!r}")
        for name in ("guidance_grid", "state_guidance_grid"):
            if any(g < 0 or not math.isfinite(g) for g in getattr(self, name)):
                raise SafediffconError(f"{name} must hold finite numbers >= 0")
        if not len(self.guidance_grid) == len(self.state_guidance_grid) == len(self.mu_grid) == len(
                self.feedback_grid):
            raise SafediffconError("guidance_grid, state_guidance_grid, mu_grid and feedback_grid must have the same "
                                   "size "
                                   "(methods are tuned alike)")
        r = self.nu * self.dt * (self.nx + 1) ** 2
        if r > 0.5:
            raise SafediffconError(f"unstable: nu*dt/dx^2 = {r:.3g} > 0.5 (nu, dt, nx)")
        if math.ceil(self.alpha * (self.n_cal + 1)) > self.n_cal:
            raise SafediffconError(f"n_cal={self.n_cal} is too small for alpha={self.alpha}: "
                                   f"ceil(alpha (n_cal+1)) > n_cal")

    def model_kwargs(self, seed: int) -> dict:
        return dict(nx=self.nx, nu=self.nu, dt=self.dt, dim=self.dim, mults=self.mults, timesteps=self.timesteps,
                    scaler=self.scaler, u_bound=self.u_bound, alpha=self.alpha, weight_lambda=self.weight_lambda,
                    guidance_lambda=self.guidance_lambda, ddim_steps=self.ddim_steps, eta=self.eta,
                    quantile_method=self.quantile_method, official_safety_row_mask=self.official_safety_row_mask,
                    safety_estimate=self.safety_estimate, attention=self.attention, seed=seed)


def paper() -> Config:
    """The paper's / official code's settings (a GPU-scale run: 128 points, dt 1e-4, dim-128 UNet)."""
    return Config(nx=128, dt=1e-4, train_amp=2.0, n_train=90_000, n_cal=1000, n_holdout=500, n_val=50, dim=128,
                  attention="all",
                  mults=(1, 2, 4, 8), timesteps=1000, scaler=10.0, ddim_steps=200, pretrain_steps=200_000,
                  batch_size=16, pretrain_lr=1e-5, post_epochs=5, post_steps=3200, post_lr=1e-4, infft_lr=1e-5,
                  adjoint_iters=300, seeds=10)


def coarse() -> Config:
    """The note's coarse grid (nx 64, dt 1e-3) with the CPU-scale model: the settings of the full run."""
    return Config(nx=64, dt=1e-3)


def official_grid() -> Config:
    """The official grid (nx 128, dt 1e-4: 10,000 Euler steps) with the CPU-scale model (a sub-run)."""
    return Config(nx=128, dt=1e-4)


def cpu() -> Config:
    """Our CPU-scale settings (the full reproduce run, on the note's coarse grid nx 64, dt 1e-3)."""
    return Config()


BUDGETS = Budgets(
    smoke=replace(cpu(), nx=16, mults=(1, 2), n_train=64, n_cal=60, n_holdout=20, n_val=8, n_test=8, n_pretrain_val=8, dim=4,
                  timesteps=20, ddim_steps=3, pretrain_steps=5, pretrain_eval_every=5, post_epochs=1, post_steps=3,
                  infft_iters=1, adjoint_iters=3, speed_trajectories=2, seeds=1, alpha=0.9, guidance_grid=(500.0,),
                  state_guidance_grid=(1.0,), mu_grid=(100.0,), feedback_grid=(3.0,), adjoint_mus=(0.0, 100.0),
                  few_seeds=1, dt=2e-3),
    quick=replace(cpu(), n_train=1000, n_cal=60, n_holdout=40, n_test=24, n_val=12, n_pretrain_val=48, pretrain_steps=240,
                  pretrain_eval_every=40,
                  post_steps=20, adjoint_iters=12, speed_trajectories=16, seeds=3, few_seeds=1, mask_row=False,
                  options_all_seeds=False, dim=8),
    full=replace(cpu(), seeds=5, mask_row=False, options_all_seeds=False),
)

BUDGETS_NX128 = Budgets(
    smoke=BUDGETS.smoke,
    quick=replace(BUDGETS.quick, nx=128),
    full=replace(official_grid(), dt=1e-3, seeds=5, options_all_seeds=False, few_seeds=1, mask_row=False),
)
"""The nx-128 sub-run (``reproduce --task nx128``): the official grid with the CPU-scale model, dt 1e-3 (stable:
nu dt / dx^2 = 0.17) instead of the official 1e-4 (ten times the solver cost)."""

