"""Joint diffusion over the trajectory, its control and its safety score (SafeDiffCon, Sec. 3.1; DiffPhyCon).

The sample is an "image" ``x [B, 3, H = 16, nx]`` of three channels, each divided by ``scaler``:

* ``u``: the 11 recorded frames (rows 0..10), conditioned (inpainted) on ``u[0] = u0`` and ``u[10] = u_d``;
* ``f``: the 10 control intervals (rows 0..9);
* ``s``: the safety score ``max_{t,x} u^2`` broadcast over rows 0..10 (``use_max_safety``).

Rows beyond the real ones are zero padding. DDPM with the cosine schedule (Nichol & Dhariwal 2021),
``x_t = sqrt(abar_t) x_0 + sqrt(1 - abar_t) eps``, noise-prediction loss on the real, unconditioned entries only,
weighted per sample for post-training (Eq. 8): ``L = mean_i w_hat_i ||eps - eps_theta(x_t, t)||^2_mask``.

Sampling is DDIM (Song et al. 2021) with inpainting after every step and guidance on ``x_hat0`` (Eq. 9)::

    eps <- eps + grad_{x_hat0} [ lambda_g * max(s_hat(x_hat0) + Q - s0, 0) ]

with ``s_hat`` the mean of the safety channel over its 11 real rows (times ``scaler``). ``lambda_g`` is expressed
on the official grid (nx = 128, scaler 10): the gradient is rescaled by ``(10 / scaler) (nx / 128)`` so that the
push per entry, ``lambda_g * 10 / (11 * 128)``, does not depend on the grid or the scaler.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
from torch import nn

from safediffcon.burgers import NT
from safediffcon.errors import SafediffconError

HEIGHT = 16
"""Padded time rows of the image (the official 16)."""


def cosine_alphas_cumprod(timesteps: int, s: float = 0.008) -> torch.Tensor:
    """``abar_t`` of the cosine schedule, ``[T]`` in float64 (betas clipped to 0.999)."""
    x = torch.linspace(0, timesteps, timesteps + 1, dtype=torch.float64)
    ac = torch.cos(((x / timesteps) + s) / (1 + s) * math.pi * 0.5) ** 2
    ac = ac / ac[0]
    betas = (1 - ac[1:] / ac[:-1]).clamp(0, 0.999)
    return torch.cumprod(1 - betas, dim=0)


def to_image(u: torch.Tensor, f: torch.Tensor, *, scaler: float, s_rows: int = NT) -> torch.Tensor:
    """``[u, f, s] / scaler`` as ``[B, 3, 16, nx]`` from ``u [B, 11, nx]``, ``f [B, 10, nx]``; ``s = max u^2``."""
    b, nt, nx = u.shape
    x = u.new_zeros(b, 3, HEIGHT, nx)
    x[:, 0, :nt] = u
    x[:, 1, :nt - 1] = f
    x[:, 2, :s_rows] = u.square().flatten(1).amax(dim=1)[:, None, None]
    return x / scaler


SAFETY_ESTIMATES = ("channel", "state")


def s_hat(x: torch.Tensor, *, scaler: float, estimate: str = "channel") -> torch.Tensor:
    """Predicted safety score ``[B]`` in physical units.

    ``"channel"`` (the paper): mean of the generated safety channel over its 11 rows. ``"state"`` (our diagnostic
    option, not the paper's): ``max_{t,x} u_hat^2`` of the generated state channel, rows 0..10.
    """
    if estimate == "channel":
        return scaler * x[:, 2, :NT].mean(dim=(1, 2))
    if estimate == "state":
        return (scaler * x[:, 0, :NT]).square().flatten(1).amax(dim=1)
    raise SafediffconError(f"safety_estimate must be one of {SAFETY_ESTIMATES}, got {estimate!r}")


def from_image(x: torch.Tensor, *, scaler: float,
               estimate: str = "channel") -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``u [B, 11, nx]``, ``f [B, 10, nx]`` and ``s_hat [B]`` of a generated image."""
    return scaler * x[:, 0, :NT], scaler * x[:, 1, :NT - 1], s_hat(x, scaler=scaler, estimate=estimate)


class GaussianDiffusion(nn.Module):
    """DDPM/DDIM over the [u, f, s] image with inpainted conditions (see the module docstring).

    ``model(x_t [B, 3, 16, nx], t [B]) -> eps [B, 3, 16, nx]``. ``official_safety_row_mask=True`` treats the last
    real row of the safety channel as padding (the released code: zeroed in training images, noisy inputs and after
    every sampling step, no loss there) while ``s_hat`` still reads 11 rows, and the final sample keeps that row of
    the last ``x_hat0`` (the released sampler does not re-mask its output). Without the option the real rows are the
    same everywhere, so the final step changes nothing.
    """

    def __init__(self, model: nn.Module, *, nx: int, timesteps: int = 200, scaler: float = 4.0,
                 official_safety_row_mask: bool = False, safety_estimate: str = "channel"):
        super().__init__()
        if timesteps < 2:
            raise SafediffconError(f"timesteps must be >= 2, got {timesteps}")
        if not scaler > 0:
            raise SafediffconError(f"scaler must be > 0, got {scaler}")
        if safety_estimate not in SAFETY_ESTIMATES:
            raise SafediffconError(f"safety_estimate must be one of {SAFETY_ESTIMATES}, got {safety_estimate!r}")
        self.model, self.nx, self.timesteps, self.scaler = model, nx, timesteps, float(scaler)
        self.safety_estimate = safety_estimate
        self.s_rows = NT - 1 if official_safety_row_mask else NT
        self.register_buffer("abar", cosine_alphas_cumprod(timesteps).float(), persistent=False)
        real = torch.zeros(3, HEIGHT, nx)
        real[0, :NT], real[1, :NT - 1], real[2, :self.s_rows] = 1, 1, 1
        self.register_buffer("real", real, persistent=False)
        # the released sampler returns the last x_hat0 without the padding mask: with the official row mask, the
        # safety channel's row 10 (padding everywhere else) then holds the network's untrained output
        final = real.clone()
        final[2, :NT] = 1
        self.register_buffer("real_final", final, persistent=False)

    # ------------------------------------------------------------------ forward process
    def _a(self, t: torch.Tensor) -> torch.Tensor:
        return self.abar[t][:, None, None, None]

    def q_sample(self, x0: torch.Tensor, t: torch.Tensor, noise: torch.Tensor) -> torch.Tensor:
        """``x_t = sqrt(abar_t) x0 + sqrt(1 - abar_t) noise``."""
        a = self._a(t)
        return a.sqrt() * x0 + (1 - a).sqrt() * noise

    def predict_start_from_noise(self, x_t: torch.Tensor, t: torch.Tensor, noise: torch.Tensor) -> torch.Tensor:
        """``x0 = (x_t - sqrt(1 - abar_t) noise) / sqrt(abar_t)``."""
        a = self._a(t)
        return (x_t - (1 - a).sqrt() * noise) / a.sqrt()

    def cond_mask(self, *, with_f: bool = False) -> torch.Tensor:
        """``[3, 16, nx]``: 1 on the inpainted entries (u rows 0 and 10; all of f when ``with_f``)."""
        m = torch.zeros_like(self.real)
        m[0, 0], m[0, NT - 1] = 1, 1
        if with_f:
            m[1, :NT - 1] = 1
        return m

    def inpaint(self, x: torch.Tensor, cond: torch.Tensor, mask: torch.Tensor,
                real: torch.Tensor | None = None) -> torch.Tensor:
        """Conditioned entries := ``cond``, padded entries (``real == 0``; default ``self.real``) := 0."""
        return (x * (1 - mask) + cond * mask) * (self.real if real is None else real)

    def loss(self, x0: torch.Tensor, *, weights: torch.Tensor | None = None,
             generator: torch.Generator | None = None) -> torch.Tensor:
        """Reweighted noise-prediction loss ``mean_i w_i ||eps - eps_theta(x_t, t)||^2`` over the real,
        unconditioned entries (``weights=None``: the plain DDPM loss)."""
        b = x0.shape[0]
        # drawn from ``generator`` (a CPU stream: the same draws on every device), then moved to x0's device
        t = torch.randint(0, self.timesteps, (b,), generator=generator).to(x0.device)
        noise = torch.randn(x0.shape, generator=generator).to(x0.device)
        mask = self.cond_mask()
        x_t = self.inpaint(self.q_sample(x0, t, noise), x0, mask)
        keep = self.real * (1 - mask)
        err = ((noise - self.model(x_t, t)).square() * keep).sum(dim=(1, 2, 3)) / keep.sum()
        if weights is None:
            return err.mean()
        return (weights * err).mean()

    def s_hat(self, x: torch.Tensor) -> torch.Tensor:
        """Predicted safety score ``[B]`` of ``x [B, 3, 16, nx]`` with this model's ``safety_estimate``."""
        return s_hat(x, scaler=self.scaler, estimate=self.safety_estimate)

    # ------------------------------------------------------------------ sampling
    def guidance_grad(self, x0_hat: torch.Tensor, *, lam: float, Q: float, s0: float) -> torch.Tensor:
        """``grad_{x_hat0} lam * c * sum_b max(s_hat_b + Q - s0, 0)`` with ``c = (10 / scaler) (nx / 128)``;
        exactly 0 for every sample with ``s_hat + Q < s0``."""
        with torch.enable_grad():
            x = x0_hat.detach().requires_grad_(True)
            c = (10.0 / self.scaler) * (self.nx / 128.0)
            obj = lam * c * torch.relu(self.s_hat(x) + Q - s0).sum()
            (g,) = torch.autograd.grad(obj, x)
        return g

    def sample(self, u0: torch.Tensor, u_target: torch.Tensor, *, steps: int = 20, eta: float = 1.0,
               guidance_lambda: float = 0.0, Q: float = 0.0, s0: float = 0.64, f_cond: torch.Tensor | None = None,
               generator: torch.Generator | None = None, grad_last: bool = False,
               callback: Callable[[int, torch.Tensor], None] | None = None) -> torch.Tensor:
        """DDIM sample ``x0 [B, 3, 16, nx]`` conditioned on ``u0, u_target [B, nx]`` (and the control ``f_cond
        [B, 10, nx]`` when given: the calibration setting), guided when ``guidance_lambda > 0``.

        ``grad_last=True`` keeps the graph of the last denoising step only (inference-time fine-tuning).
        ``callback(i, x)`` sees the image after every step (tests check the inpainting).
        """
        if not isinstance(steps, int) or steps < 1:
            raise SafediffconError(f"DDIM steps must be a positive integer, got {steps!r}")
        if steps > self.timesteps:
            raise SafediffconError(f"DDIM steps ({steps}) must not exceed the training steps ({self.timesteps})")
        if guidance_lambda < 0:
            raise SafediffconError(f"guidance_lambda must be >= 0, got {guidance_lambda}")
        if not math.isfinite(Q):
            raise SafediffconError(f"Q must be finite, got {Q}")
        b = u0.shape[0]
        cond = u0.new_zeros(b, 3, HEIGHT, self.nx)  # on u0's device (the model's: SafeDiffCon moves it there)
        cond[:, 0, 0], cond[:, 0, NT - 1] = u0, u_target
        if f_cond is not None:
            cond[:, 1, :NT - 1] = f_cond
        cond = cond / self.scaler
        mask = self.cond_mask(with_f=f_cond is not None)
        times = torch.linspace(self.timesteps - 1, 0, steps).round().long().tolist()
        dev = cond.device  # the draws come from the CPU stream ``generator`` and are moved here
        x = self.inpaint(torch.randn(cond.shape, generator=generator).to(dev), cond, mask)
        for i, t in enumerate(times):
            last = i == len(times) - 1
            tt = torch.full((b,), t, dtype=torch.long, device=dev)
            with torch.set_grad_enabled(grad_last and last):
                eps = self.model(x, tt)
                a = self.abar[t]
                x0 = self.predict_start_from_noise(x, tt, eps).clamp(-1, 1)
                if guidance_lambda > 0:
                    eps = (x - a.sqrt() * x0) / (1 - a).sqrt()
                    eps = eps + self.guidance_grad(x0, lam=guidance_lambda, Q=Q, s0=s0)
                    x0 = self.predict_start_from_noise(x, tt, eps).clamp(-1, 1)
                if last:
                    x = x0
                else:
                    a_prev = self.abar[times[i + 1]]
                    eps = (x - a.sqrt() * x0) / (1 - a).sqrt()
                    sigma = eta * ((1 - a_prev) / (1 - a) * (1 - a / a_prev)).clamp(min=0).sqrt()
                    z = torch.randn(x.shape, generator=generator).to(dev)
                    x = a_prev.sqrt() * x0 + (1 - a_prev - sigma**2).clamp(min=0).sqrt() * eps + sigma * z
                x = self.inpaint(x, cond, mask, self.real_final if last else None)
            if callback is not None:
                callback(i, x)
        return x
