"""SafeDiffCon (Hu, Qian et al., ICML 2025): conformal adaptation of a diffusion controller for safe PDE control.

Pipeline (paper Sec. 3, Alg. 1), on the Burgers task of :mod:`safediffcon.burgers`:

1. ``pretrain``: DDPM on ``x = [u, f, s]`` (:mod:`safediffcon.diffusion`), conditioned by inpainting ``u0, u_d``.
2. ``calibrate``: sample the calibration set with its true control inpainted, scores ``c_i = |s_hat_i - s_i|``,
   weights ``w_i = exp(-lambda max(s_i + Q_prev - s0, 0))``, ``Q = quantile_alpha(c, w)``
   (:mod:`safediffcon.conformal`).
3. ``post_train``: the reweighted diffusion loss ``mean_i w_hat_i ||eps - eps_theta||^2`` with
   ``w_i = exp(-lambda max(s_i + Q - s0, 0))`` on the training set, ``Q`` re-calibrated after every epoch from 0.
4. ``control``: DDIM guided on ``x_hat0`` by ``grad lambda_g max(s_hat + Q - s0, 0)``; the generated ``f`` is the
   control. ``fine_tune`` (inference-time fine-tuning, InfFT): per iteration, sample the test conditions with
   gradients through the last denoising step, one AdamW step on ``mean max(s_hat + Q - s0, 0)^2``, re-calibrate Q.

Controls are always judged by re-simulating them with the true solver (:mod:`safediffcon.metrics`).
"""

from __future__ import annotations

import copy
import math
import warnings

import numpy as np
import torch

from safediffcon.burgers import check_solver
from safediffcon.conformal import normalise, quantile, relative_safety_weights, split_rank
from safediffcon.data import BurgersData
from safediffcon.diffusion import GaussianDiffusion, from_image, to_image
from safediffcon.errors import SafediffconError
from safediffcon.unet import UNet2D


def _device(device: str | torch.device) -> torch.device:
    """``device`` as a ``torch.device``; an unknown name or an unavailable accelerator is one clear error."""
    if isinstance(device, torch.device):
        return device
    from icml25.device import resolve_device

    try:
        return resolve_device(device)
    except (ValueError, RuntimeError) as exc:
        raise SafediffconError(f"device: {exc}") from exc


def _lr_lambda(total: int, warmup_frac: float):
    warm = max(1, int(round(warmup_frac * total))) if warmup_frac > 0 else 0

    def f(step: int) -> float:
        if step < warm:
            return (step + 1) / warm
        p = (step - warm) / max(1, total - warm)
        return 0.5 * (1 + math.cos(math.pi * min(p, 1.0)))

    return f


class SafeDiffCon:
    """The SafeDiffCon controller: a joint diffusion model over ``[u, f, s]`` plus its conformal quantile ``Q``.

    Keyword-only arguments; ``u_bound`` gives ``s0 = u_bound^2``; ``weight_lambda`` is the lambda of the conformal
    and post-training weights, ``guidance_lambda`` the guidance strength (expressed on the official grid);
    ``device`` where the network, the sampler and the schedule run (``"cpu"``, ``"cuda"``, ``"auto"``, ...; see
    :meth:`to`).
    """

    def __init__(self, *, nx: int = 64, nu: float = 0.01, dt: float = 1e-3, dim: int = 16,
                 mults: tuple[int, ...] = (1, 2, 4), timesteps: int = 200, scaler: float = 2.0,
                 u_bound: float = 0.8, alpha: float = 0.98, weight_lambda: float = 2500.0,
                 guidance_lambda: float = 500.0, ddim_steps: int = 20, eta: float = 1.0,
                 quantile_method: str = "weighted", official_safety_row_mask: bool = False,
                 safety_estimate: str = "channel", attention: str = "mid", seed: int = 0,
                 device: str | torch.device = "cpu"):
        check_solver(nx, nu=nu, dt=dt)
        self.device = _device(device)
        if nx % 2 ** (len(mults) - 1):
            raise SafediffconError(f"nx={nx} must be divisible by 2^(len(mults)-1) = {2 ** (len(mults) - 1)}")
        if not (isinstance(u_bound, (int, float)) and math.isfinite(u_bound) and u_bound > 0):
            raise SafediffconError(f"u_bound must be > 0, got {u_bound!r}")
        if not (math.isfinite(alpha) and 0 < alpha < 1):
            raise SafediffconError(f"alpha must be in (0, 1), got {alpha!r}")
        for name, v in (("weight_lambda", weight_lambda), ("guidance_lambda", guidance_lambda)):
            if not (math.isfinite(v) and v >= 0):
                raise SafediffconError(f"{name} must be a finite number >= 0, got {v!r}")
        from safediffcon.unet import ATTENTION

        if attention not in ATTENTION:
            raise SafediffconError(f"attention must be one of {ATTENTION}, got {attention!r}")
        if quantile_method not in ("weighted", "official"):
            raise SafediffconError(f"quantile_method must be 'weighted' or 'official', got {quantile_method!r}")
        if not isinstance(ddim_steps, int) or not 1 <= ddim_steps <= timesteps:
            raise SafediffconError(f"ddim_steps must be in [1, timesteps={timesteps}], got {ddim_steps!r}")
        self.nx, self.nu, self.dt, self.u_bound, self.alpha = nx, nu, dt, float(u_bound), float(alpha)
        self.s0 = self.u_bound**2
        self.weight_lambda, self.guidance_lambda = float(weight_lambda), float(guidance_lambda)
        self.ddim_steps, self.eta, self.quantile_method = ddim_steps, eta, quantile_method
        self.seed = seed
        torch.manual_seed(seed)
        self.net = UNet2D(dim=dim, mults=tuple(mults), attention=attention)
        self.diffusion = GaussianDiffusion(self.net, nx=nx, timesteps=timesteps, scaler=scaler,
                                           official_safety_row_mask=official_safety_row_mask,
                                           safety_estimate=safety_estimate)
        self.diffusion.to(self.device)  # the network and the schedule's buffers
        self.scaler = float(scaler)
        self.Q = 0.0
        self.last_calibration: dict | None = None
        self.history: dict[str, list] = {"pretrain_loss": [], "post_train_Q": [], "infft_Q": [], "infft_loss": []}
        self.pretrain_curve = None
        # the random streams stay on the CPU (their draws are moved to the device): the same seed gives the same
        # noise, batches and DDIM draws on every device
        self._gen = torch.Generator().manual_seed(seed + 12345)

    def to(self, device: str | torch.device) -> SafeDiffCon:
        """Move the network (and the schedule) to ``device`` (``"cpu"``, ``"cuda"``, ``"cuda:1"``, ...); returns self.

        Data and conditions may live anywhere: they are moved to the model's device where they are used, and the
        controls, scores and trajectories this class returns come back on the CPU."""
        self.device = _device(device)
        self.diffusion.to(self.device)
        return self

    def clone(self) -> SafeDiffCon:
        """An independent copy (weights, Q and history)."""
        return copy.deepcopy(self)

    # ------------------------------------------------------------------ training
    def _check_data(self, data: BurgersData, what: str) -> None:
        if not isinstance(data, BurgersData):
            raise SafediffconError(f"{what} must be a BurgersData, got {type(data).__name__}")
        if data.nx != self.nx:
            raise SafediffconError(f"{what} has nx={data.nx}, the model nx={self.nx}")

    def _fit(self, data: BurgersData, *, steps: int, batch_size: int, lr: float, weight_decay: float,
             warmup: float, weights_fn=None, on_epoch=None, epochs: int = 1, clip: float = 1.0) -> list[float]:
        x0 = to_image(data.u, data.f, scaler=self.scaler, s_rows=self.diffusion.s_rows)
        opt = torch.optim.AdamW(self.net.parameters(), lr=lr, weight_decay=weight_decay)
        total = steps * epochs
        sched = torch.optim.lr_scheduler.LambdaLR(opt, _lr_lambda(total, warmup))
        losses = []
        self.net.train()
        for ep in range(epochs):
            w_all = None if weights_fn is None else torch.as_tensor(weights_fn(), dtype=torch.float32)
            for _ in range(steps):
                idx = torch.randint(0, len(data), (batch_size,), generator=self._gen)
                loss = self.diffusion.loss(x0[idx].to(self.device),
                                           weights=None if w_all is None else w_all[idx].to(self.device),
                                           generator=self._gen)
                if not torch.isfinite(loss):
                    raise SafediffconError(f"non-finite training loss at step {len(losses)}; lower the learning rate")
                opt.zero_grad(set_to_none=True)
                loss.backward()
                torch.nn.utils.clip_grad_norm_(self.net.parameters(), clip)
                opt.step()
                sched.step()
                losses.append(loss.item())
            if on_epoch is not None:
                on_epoch(ep)
        self.net.eval()
        return losses

    def pretrain(self, data: BurgersData, *, steps: int = 2000, batch_size: int = 64, lr: float = 2e-3,
                 evaluate=None, eval_every: int = 250, patience: int = 3, ema: float = 0.0,
                 min_delta: float = 0.0) -> list[float]:
        """DDPM pretraining on ``data`` (plain loss; Adam(W) with 5% warm-up and a cosine decay over ``steps``).

        With ``evaluate`` (a callable ``model -> validation score``, lower is better) training stops at a
        validation plateau (:func:`icml25.train.train_until_plateau`: ``patience`` evaluations every
        ``eval_every`` steps without a new best by more than ``min_delta``) and the best weights are restored; the curve is left in
        ``self.pretrain_curve``. ``ema > 0``: an exponential moving average of the weights (decay ``ema`` per step)
        is what is validated and kept (the online weights oscillate at a high learning rate).
        """
        self._check_data(data, "training data")
        if evaluate is None:
            losses = self._fit(data, steps=steps, batch_size=batch_size, lr=lr, weight_decay=0.0, warmup=0.05)
            self.history["pretrain_loss"] += losses
            return losses
        from icml25.train import train_until_plateau

        x0 = to_image(data.u, data.f, scaler=self.scaler, s_rows=self.diffusion.s_rows)
        opt = torch.optim.AdamW(self.net.parameters(), lr=lr, weight_decay=0.0)
        sched = torch.optim.lr_scheduler.LambdaLR(opt, _lr_lambda(steps, 0.05))
        losses: list[float] = []
        best: dict = {}
        evaluated: dict = {}
        if not (math.isfinite(ema) and 0 <= ema < 1):
            raise SafediffconError(f"pretraining ema must be in [0, 1), got {ema!r}")
        params = list(self.net.parameters())
        shadow = [p.detach().clone() for p in params] if ema > 0 else None

        def step(_i: int) -> None:
            self.net.train()
            idx = torch.randint(0, len(data), (batch_size,), generator=self._gen)
            loss = self.diffusion.loss(x0[idx].to(self.device), generator=self._gen)
            if not torch.isfinite(loss):
                raise SafediffconError(f"non-finite training loss at step {len(losses)}; lower the learning rate")
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(self.net.parameters(), 1.0)
            opt.step()
            sched.step()
            losses.append(loss.item())
            if shadow is not None:
                with torch.no_grad():
                    torch._foreach_lerp_(shadow, [p.detach() for p in params], 1 - ema)

        def validate() -> float:
            self.net.eval()
            if shadow is None:
                return float(evaluate(self))
            online = [p.detach().clone() for p in params]
            with torch.no_grad():
                for p, e in zip(params, shadow):
                    p.copy_(e)
            try:
                evaluated["state"] = {k: v.detach().clone() for k, v in self.net.state_dict().items()}
                return float(evaluate(self))
            finally:
                with torch.no_grad():
                    for p, o in zip(params, online):
                        p.copy_(o)

        def keep(_step: int, _value: float) -> None:  # the weights just validated (the EMA ones when ema > 0)
            best["state"] = evaluated["state"] if shadow is not None else {
                k: v.detach().clone() for k, v in self.net.state_dict().items()}

        self.pretrain_curve = train_until_plateau(step, validate, max_steps=steps, eval_every=eval_every,
                                                  patience=patience, min_delta=min_delta, higher_is_better=False,
                                                  on_improve=keep)
        self.net.load_state_dict(best["state"])
        self.net.eval()
        self.history["pretrain_loss"] += losses
        return losses

    def train_weights(self, s: torch.Tensor, Q: float) -> np.ndarray:
        """Normalised post-training weights ``w_hat = n w / sum w``, ``w = exp(-lambda max(s + Q - s0, 0))``."""
        w = relative_safety_weights(np.asarray(s, dtype=np.float64), Qs=(Q,), s0=self.s0, lam=self.weight_lambda)
        return normalise(w)

    @staticmethod
    def effective_sample_size(w: np.ndarray) -> float:
        """Kish's effective sample size ``(sum w)^2 / sum w^2`` of weights ``w [n]``: n for uniform weights, 1 when
        one point holds all the weight."""
        w = np.asarray(w, dtype=np.float64)
        return float(w.sum() ** 2 / np.square(w).sum())

    def post_train(self, data: BurgersData, cal: BurgersData, *, epochs: int = 2, steps_per_epoch: int = 200,
                   batch_size: int = 64, lr: float = 1e-4, weight_decay: float = 1e-4) -> list[float]:
        """Reweighted post-training (Eq. 8), ``Q`` re-calibrated on ``cal`` after every epoch, starting from 0.

        Returns the ``Q`` after each epoch (also left in ``self.Q``).
        """
        self._check_data(data, "training data")
        self._check_data(cal, "calibration data")
        split_rank(len(cal), self.alpha)
        self.Q = 0.0
        qs: list[float] = []
        s = data.s

        def on_epoch(_ep: int) -> None:
            qs.append(self.calibrate(cal, Q_prev=self.Q))

        ess: list[float] = []

        def weights() -> np.ndarray:  # called at the start of every epoch, at the Q of the last calibration
            w = self.train_weights(s, self.Q)
            ess.append(self.effective_sample_size(w))
            return w

        before = torch.cat([p.detach().flatten().clone() for p in self.net.parameters()])
        self._fit(data, steps=steps_per_epoch, batch_size=batch_size, lr=lr, weight_decay=weight_decay,
                  warmup=0.05, weights_fn=weights, on_epoch=on_epoch, epochs=epochs)
        after = torch.cat([p.detach().flatten() for p in self.net.parameters()])
        self.history["post_train_Q"] += qs
        self.history["post_train_ess"] = ess
        self.history["post_train_param_change"] = [float((after - before).norm() / before.norm())]
        return qs

    # ------------------------------------------------------------------ conformal calibration
    @torch.no_grad()
    def calibration_scores(self, cal: BurgersData) -> tuple[np.ndarray, np.ndarray]:
        """``(s_hat, s_true)`` on ``cal``, sampled without guidance with the true control inpainted."""
        d = self.device
        x = self.diffusion.sample(cal.u0.to(d), cal.u_target.to(d), steps=self.ddim_steps, eta=self.eta,
                                  f_cond=cal.f.to(d), generator=self._gen)
        return self.diffusion.s_hat(x).cpu().double().numpy(), cal.s.cpu().double().numpy()

    def calibrate(self, cal: BurgersData, *, Q_prev: float | None = None, extra_Q: float | None = None,
                  weight_lambda: float | None = None) -> float:
        """Weighted conformal quantile ``Q`` of ``|s_hat - s|`` on ``cal`` (Eq. 6-7); sets and returns ``self.Q``.

        Weights ``exp(-lambda max(s_i + Q_prev - s0, 0))`` (times the same factor at ``extra_Q`` when given: the
        post-training shift carried into InfFT); ``weight_lambda`` overrides the model's lambda (the released InfFT
        calibration uses lambda_g). A +inf quantile (too little weighted mass) falls back, with a
        warning, to the largest score.
        """
        self._check_data(cal, "calibration data")
        split_rank(len(cal), self.alpha)
        q_prev = self.Q if Q_prev is None else Q_prev
        sh, st = self.calibration_scores(cal)
        qs = (q_prev,) if extra_Q is None else (q_prev, extra_Q)
        lam = self.weight_lambda if weight_lambda is None else weight_lambda
        w = relative_safety_weights(st, Qs=qs, s0=self.s0, lam=lam)
        scores = np.abs(sh - st)
        self.last_calibration = {"scores": scores, "weights": w, "Q_prev": qs}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            q = quantile(scores, w, alpha=self.alpha, method=self.quantile_method)
        if not math.isfinite(q):
            warnings.warn("conformal quantile is +inf (weighted calibration mass too small); using the largest score",
                          RuntimeWarning, stacklevel=2)
            q = float(scores.max())
        self.Q = float(q)
        return self.Q

    @torch.no_grad()
    def coverage(self, held_out: BurgersData, Q: float | None = None) -> float:
        """Fraction of ``held_out`` with ``s_true <= s_hat + Q`` in the calibration setting (true f inpainted)."""
        sh, st = self.calibration_scores(held_out)
        return float(np.mean(st <= sh + (self.Q if Q is None else Q)))

    # ------------------------------------------------------------------ inference
    def _check_conditions(self, u0: torch.Tensor, u_target: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        u0, ut = torch.as_tensor(u0, dtype=torch.float32), torch.as_tensor(u_target, dtype=torch.float32)
        if u0.ndim == 1:
            u0, ut = u0[None], ut[None]
        if u0.ndim != 2 or u0.shape != ut.shape or u0.shape[1] != self.nx:
            raise SafediffconError(f"u0 and u_target must both be [N, nx={self.nx}], got {tuple(u0.shape)} and "
                                   f"{tuple(ut.shape)}")
        if not (torch.isfinite(u0).all() and torch.isfinite(ut).all()):
            raise SafediffconError("u0 and u_target must be finite (found NaN or inf)")
        for name, v in (("u0", u0), ("u_target", ut)):
            bad = v.abs().amax(dim=1) > self.u_bound
            if bad.any():
                raise SafediffconError(f"{name} violates the safety bound |u| <= u_bound={self.u_bound} in "
                                       f"{int(bad.sum())} of {len(bad)} instances: no safe control can reach it")
        return u0, ut

    @torch.no_grad()
    def generate(self, u0: torch.Tensor, u_target: torch.Tensor, *, guidance: bool = True,
                 Q: float | None = None, generator: torch.Generator | None = None,
                 ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """``(u_model [N, 11, nx], f [N, 10, nx], s_hat [N])``: the jointly generated trajectory, control and score
        (on the CPU, wherever the model runs).

        The sampling noise comes from ``generator`` when given (the model's own stream is then left untouched),
        else from the model's generator.
        """
        u0, ut = (v.to(self.device) for v in self._check_conditions(u0, u_target))
        x = self.diffusion.sample(u0, ut, steps=self.ddim_steps, eta=self.eta,
                                  guidance_lambda=self.guidance_lambda if guidance else 0.0,
                                  Q=self.Q if Q is None else Q, s0=self.s0,
                                  generator=self._gen if generator is None else generator)
        u, f, s = from_image(x, scaler=self.scaler, estimate=self.diffusion.safety_estimate)
        return u.cpu(), f.cpu(), s.cpu()

    def control(self, u0: torch.Tensor, u_target: torch.Tensor, *, guidance: bool = True,
                Q: float | None = None, generator: torch.Generator | None = None) -> torch.Tensor:
        """The control ``f [N, 10, nx]`` that steers ``u0 [N, nx]`` toward ``u_target [N, nx]`` safely."""
        return self.generate(u0, u_target, guidance=guidance, Q=Q, generator=generator)[1]

    def fine_tune(self, u0: torch.Tensor, u_target: torch.Tensor, cal: BurgersData, *, iters: int = 2,
                  lr: float = 1e-4, weight_decay: float = 1e-4, extra_Q: float | None = None,
                  weight_lambda: float | None = None, ema: bool = False, ema_beta: float = 0.995,
                  ema_update_every: int = 10, on_iter=None) -> list[float]:
        """Inference-time fine-tuning on the test conditions (InfFT); returns ``Q`` after every iteration.

        Each iteration: guided sampling with gradients through the last denoising step only, one AdamW step on
        ``mean_i max(s_hat_i + Q - s0, 0)^2``, then ``Q`` re-calibrated on ``cal`` (weights at the previous Q and,
        when given, at ``extra_Q``; lambda ``weight_lambda`` when given, else the model's). By default the
        fine-tuned weights themselves are calibrated and used (the paper). ``ema=True`` is the released code:
        the online weights are fine-tuned and sample the next batch, while an EMA copy with the released update
        rule (:class:`safediffcon.ema.ReleasedEMA`) is calibrated and, afterwards, used for control.

        ``on_iter(k, model)`` is called after iteration ``k`` (1-based) with the model as it would be evaluated
        after ``k`` iterations (its weights and re-calibrated ``Q``): the InfFT curve without re-training per point.
        It must not consume the model's generator (pass its own to :meth:`generate`), or later iterations change.
        """
        if isinstance(iters, bool) or not isinstance(iters, int) or iters < 0:
            raise SafediffconError(f"InfFT iters must be an integer >= 0, got {iters!r}")
        u0, ut = (v.to(self.device) for v in self._check_conditions(u0, u_target))
        self._check_data(cal, "calibration data")
        opt = torch.optim.AdamW(self.net.parameters(), lr=lr, weight_decay=weight_decay)
        sched = torch.optim.lr_scheduler.LambdaLR(opt, _lr_lambda(max(iters, 1), 0.0))
        tracker = None
        if ema:
            from safediffcon.ema import ReleasedEMA

            tracker = ReleasedEMA(self.net, beta=ema_beta, update_every=ema_update_every)
        online = self.net
        qs = []
        for _ in range(iters):
            self.diffusion.model = online
            online.train()
            x = self.diffusion.sample(u0, ut, steps=self.ddim_steps, eta=self.eta,
                                      guidance_lambda=self.guidance_lambda, Q=self.Q, s0=self.s0,
                                      generator=self._gen, grad_last=True)
            loss = torch.relu(self.diffusion.s_hat(x) + self.Q - self.s0).square().mean()
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            sched.step()
            online.eval()
            self.history["infft_loss"].append(loss.item())
            if tracker is not None:
                tracker.update(online)
                self.diffusion.model = tracker.model  # the released code calibrates the EMA copy
            qs.append(self.calibrate(cal, Q_prev=self.Q, extra_Q=extra_Q, weight_lambda=weight_lambda))
            if on_iter is not None:
                on_iter(len(qs), self)
        if tracker is not None and iters > 0:
            self.net = tracker.model  # ... and evaluates it
            self.net.requires_grad_(True)
        self.diffusion.model = self.net
        self.history["infft_Q"] += qs
        return qs

    # ------------------------------------------------------------------ persistence
    def config(self) -> dict:
        d = self.diffusion
        return {"nx": self.nx, "nu": self.nu, "dt": self.dt, "dim": self.net.dim, "mults": list(self.net.mults),
                "attention": self.net.attention,
                "timesteps": d.timesteps, "scaler": self.scaler, "u_bound": self.u_bound, "alpha": self.alpha,
                "weight_lambda": self.weight_lambda, "guidance_lambda": self.guidance_lambda,
                "ddim_steps": self.ddim_steps, "eta": self.eta, "quantile_method": self.quantile_method,
                "official_safety_row_mask": d.s_rows != 11, "safety_estimate": d.safety_estimate, "seed": self.seed,
                "Q": self.Q}

    def save(self, path) -> None:
        """``model.safetensors`` + ``model_config.json`` under the folder ``path`` (no pickle)."""
        from pathlib import Path

        from icml25.checkpoint import save_model

        save_model(Path(path), self.net, self.config())

    @classmethod
    def load(cls, path, *, device: str | torch.device = "cpu") -> SafeDiffCon:
        """The model saved by :meth:`save` in the folder ``path``, on ``device``."""
        from pathlib import Path

        from icml25.checkpoint import load_config, load_model

        keys = ("nx", "nu", "dt", "dim", "timesteps", "scaler", "u_bound", "alpha", "weight_lambda",
                "guidance_lambda", "ddim_steps", "eta", "quantile_method", "official_safety_row_mask", "seed", "mults")
        load_config(Path(path), required=keys)  # a config without a key is refused naming the file and the keys
        holder: dict = {}

        def build(cfg: dict):
            kw = {k: cfg[k] for k in keys if k != "mults"}
            m = cls(mults=tuple(cfg["mults"]), safety_estimate=cfg.get("safety_estimate", "channel"),
                    attention=cfg.get("attention", "none"), **kw)  # checkpoints before the key: no attention
            m.Q = float(cfg.get("Q", 0.0))
            holder["m"] = m
            return m.net

        load_model(Path(path), build)
        return holder["m"].to(device)
