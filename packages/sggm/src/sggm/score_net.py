"""A learned, permutation-equivariant GDSS-style score model and its time-weighted denoising score matching.

Score networks ``s_θ(X, A, t) ≈ ∇_X log p_t(X, A)`` and ``s_φ(X, A, t) ≈ ∇_A log p_t(X, A)``:

* node states ``H⁰ = [X, emb(t)]``, then ``K`` dense GCN layers, PyG's
  :class:`torch_geometric.nn.DenseGCNConv`: ``H' = D̂^{-1/2} Â D̂^{-1/2} H W + b``, ``Â`` = the noisy, continuous
  adjacency ``A_t`` as edge weights with its diagonal set to 1 (self-loops; A_t has a zero diagonal, so ``Â = A_t + I``),
  ``D̂ = diag(Â 1)`` clamped at 1 (as in PyG and GDSS); ``tanh`` and the time embedding added at every layer;
* ``s_X = -ε̂_X(H) / √v_t`` (a per-node linear read-out, ``[B, n, F]``);
* ``s_A = -ε̂_A / √v_t`` with ``ε̂_A[i, j] = MLP([h_i + h_j, h_i ⊙ h_j, A_t[i, j], …, (A_t^K)[i, j] / n^{K-1},
  emb(t)])`` (``K = adj_powers``, GDSS's adjacency-power channels; ``A_t²`` counts common neighbours): symmetric by
  construction, zero diagonal, ``[B, n, n]``.

Every operation is node-wise or a sum over neighbours, so ``s(PX, PAPᵀ) = (P s_X, P s_A Pᵀ)`` for any permutation P.

Graphs of different sizes (GDSS's node flags): a batch padded to ``n`` nodes carries ``flags [B, n]`` (1 = the node
exists). Inputs, noise, scores and the loss are masked by them, as GDSS's ``mask_x`` / ``mask_adjs`` do, so a padded
node never enters the message passing and the model does not have to learn which nodes are padding; the sampler
draws the node count from the training graphs' and keeps the masked entries at 0.

Loss (time-weighted DSM, weight ``λ(t) = v_t``): ``E_t E ‖√v_t s(X_t, A_t, t) + z‖²`` for each generated component,
whose minimiser is the score ``∇ log p_t``; the regression target of the score itself is
``-(Y_t - a_t Y_0)/v_t = -z/√v_t``.

The GCN layers are PyG's ``DenseGCNConv`` (parameters ``convs.k.lin.weight`` ``[hidden, hidden]`` and
``convs.k.bias`` ``[hidden]``: the same names and shapes as the hand-written layer of sggm 0.1, so its checkpoints
still load). PyG is imported on first use of this module (about 10 s cold).
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import torch
from torch import nn

with warnings.catch_warnings():  # PyG's import calls the deprecated torch.jit.script: not ours to fix
    warnings.simplefilter("ignore", FutureWarning)
    from torch_geometric.nn import DenseGCNConv

from sggm.errors import SggmError
from sggm.sde import VE, VP


def time_embedding(t: torch.Tensor, dim: int) -> torch.Tensor:
    """Sinusoidal embedding ``[B, dim]`` of times ``t [B]``."""
    half = dim // 2
    freqs = torch.exp(-math.log(1000.0) * torch.arange(half, dtype=t.dtype, device=t.device) / max(half - 1, 1))
    ang = t[:, None] * freqs[None, :] * 10.0
    return torch.cat([ang.sin(), ang.cos()], dim=-1)


class ScoreNetwork(nn.Module):
    """Joint score model ``(X [B, n, F], A [B, n, n], t [B]) -> (s_X [B, n, F], s_A [B, n, n])``.

    Keyword-only: ``n_features`` (F), ``sde_x``/``sde_a`` (their ``v_t`` scales the outputs), ``hidden`` (width),
    ``depth`` (GCN layers), ``time_dim``.
    """

    def __init__(self, *, n_features: int, sde_x: VP | VE | None = None, sde_a: VP | VE | None = None,
                 hidden: int = 32, depth: int = 2, time_dim: int = 16, adj_powers: int = 1) -> None:
        super().__init__()
        if adj_powers < 1:
            raise SggmError(f"adj_powers must be >= 1, got {adj_powers}")
        if n_features < 1 or hidden < 1 or depth < 1 or time_dim < 2:
            raise SggmError(f"n_features, hidden, depth must be >= 1 and time_dim >= 2, got {n_features}, {hidden}, "
                            f"{depth}, {time_dim}")
        self.adj_powers = adj_powers
        self.config = {"n_features": n_features, "hidden": hidden, "depth": depth, "time_dim": time_dim,
                       "adj_powers": adj_powers,
                       "sde_x": (sde_x or VP(1.0, 1.0)).to_dict(), "sde_a": (sde_a or VP(1.0, 1.0)).to_dict()}
        self.sde_x, self.sde_a = sde_x or VP(1.0, 1.0), sde_a or VP(1.0, 1.0)
        self.time_dim = time_dim
        self.inp = nn.Linear(n_features + time_dim, hidden)
        self.convs = nn.ModuleList(DenseGCNConv(hidden, hidden) for _ in range(depth))
        self.temb = nn.ModuleList(nn.Linear(time_dim, hidden) for _ in range(depth))
        self.out_x = nn.Sequential(nn.Linear(2 * hidden, hidden), nn.Tanh(), nn.Linear(hidden, n_features))
        self.out_a = nn.Sequential(nn.Linear(2 * hidden + adj_powers + time_dim, hidden), nn.Tanh(), nn.Linear(hidden, 1))

    def _std(self, sde, t: torch.Tensor) -> torch.Tensor:
        v = torch.as_tensor(sde.var(t.detach().cpu().double().numpy()), dtype=t.dtype, device=t.device)
        return v.clamp(min=1e-12).sqrt()

    def forward(self, X: torch.Tensor, A: torch.Tensor, t: torch.Tensor, *, heads: str = "xa",
                flags: torch.Tensor | None = None) -> tuple[torch.Tensor | None, torch.Tensor | None]:
        """``(s_X, s_A)``; ``heads="x"`` or ``"a"`` computes one of them (the other is ``None``). ``flags [B, n]``
        (optional, 1 = the node exists): inputs and scores are masked to the existing nodes (GDSS's node flags)."""
        b, n, _ = X.shape
        if t.ndim == 0:
            t = t.expand(b)
        mx = ma = None
        if flags is not None:
            mx = flags.to(X.dtype)[:, :, None]  # [B, n, 1]
            ma = mx * mx.transpose(-1, -2)  # [B, n, n]
            X, A = X * mx, A * ma
        emb = time_embedding(t, self.time_dim)  # [B, time_dim]
        h = torch.tanh(self.inp(torch.cat([X, emb[:, None, :].expand(b, n, -1)], dim=-1)))  # [B, n, hidden]
        if mx is not None:
            h = h * mx
        h0 = h
        for conv, te in zip(self.convs, self.temb):
            h = torch.tanh(conv(h, A) + te(emb)[:, None, :])
            if mx is not None:
                h = h * mx
        sx = sa = None
        if "x" in heads:
            eps_x = self.out_x(torch.cat([h, h0], dim=-1))  # [B, n, 2 hidden] -> [B, n, F]
            sx = -eps_x / self._std(self.sde_x, t)[:, None, None]
            if mx is not None:
                sx = sx * mx
        if "a" not in heads:
            return sx, None
        hi, hj = h[:, :, None, :], h[:, None, :, :]
        powers = [A]  # GDSS's adjacency-power channels: (A_t^k)_ij / n^(k-1), k = 1 … adj_powers
        for _ in range(self.adj_powers - 1):
            powers.append(powers[-1] @ A / n)
        pair = torch.cat([(hi + hj).expand(b, n, n, -1), (hi * hj).expand(b, n, n, -1), torch.stack(powers, -1),
                          emb[:, None, None, :].expand(b, n, n, -1)], dim=-1)  # [B, n, n, 2 hidden + K + time_dim]
        eps_a = self.out_a(pair).squeeze(-1)
        eps_a = 0.5 * (eps_a + eps_a.transpose(-1, -2)) * (1.0 - torch.eye(n, dtype=X.dtype, device=X.device))
        sa = -eps_a / self._std(self.sde_a, t)[:, None, None]
        if ma is not None:
            sa = sa * ma
        return sx, sa

    def numpy_scores(self, *, heads: str = "xa", flags: np.ndarray | None = None):
        """``(score_x, score_a)`` callables on numpy arrays for :func:`sggm.sample` (float32 inside, no grad);
        with ``heads="x"`` (or ``"a"``) only that one is computed and the other callable is ``None``. ``flags
        [B, n]``: the node flags of the batch being sampled (see :meth:`forward`)."""
        ft = None if flags is None else torch.as_tensor(np.asarray(flags), dtype=torch.float32)

        def call(X, A, t):
            with torch.no_grad():
                Xt = torch.as_tensor(np.asarray(X), dtype=torch.float32)
                At = torch.as_tensor(np.asarray(A), dtype=torch.float32)
                sx, sa = self(Xt, At, torch.full((Xt.shape[0],), float(t)), heads=heads, flags=ft)
            return (None if sx is None else sx.double().numpy()), (None if sa is None else sa.double().numpy())

        cache: dict = {}

        def score_x(X, A, t):
            cache["xa"] = call(X, A, t)
            return cache["xa"][0]

        def score_a(X, A, t):  # the sampler calls score_x first at the same (X, A, t)
            out = cache.pop("xa", None)
            return (out if out is not None else call(X, A, t))[1]

        if heads == "x":
            return (lambda X, A, t: call(X, A, t)[0]), None
        if heads == "a":
            return None, (lambda X, A, t: call(X, A, t)[1])
        return score_x, score_a


def dsm_loss(net: ScoreNetwork, X0: torch.Tensor, A0: torch.Tensor, *, generate: str, T: float, t_min: float,
             generator: torch.Generator | None = None, flags: torch.Tensor | None = None) -> torch.Tensor:
    """Time-weighted DSM loss on a batch ``X0 [B, n, F]``, ``A0 [B, n, n]``; ``generate`` in ``{"X", "A", "both"}``
    (the other component is passed clean, as the condition). ``flags [B, n]`` (optional): data, noise and the loss
    are masked to the existing nodes (padded entries contribute nothing)."""
    b, n, _ = X0.shape
    mx = ma = None
    if flags is not None:
        mx = flags.to(X0.dtype)[:, :, None]
        ma = mx * mx.transpose(-1, -2)
        X0, A0 = X0 * mx, A0 * ma
    dev = X0.device  # draws come from the (CPU) generator, then move to the batch's device
    t_cpu = t_min + (T - t_min) * torch.rand(b, generator=generator, dtype=X0.dtype)
    t = t_cpu.to(dev)
    loss = X0.new_zeros(())
    Xt, At = X0, A0
    if generate in ("X", "both"):
        zx = torch.randn(X0.shape, generator=generator, dtype=X0.dtype).to(dev)
        if mx is not None:
            zx = zx * mx
        a = torch.as_tensor(net.sde_x.mean_coef(t_cpu.double().numpy()), dtype=X0.dtype, device=dev)[:, None, None]
        sd = torch.as_tensor(np.sqrt(net.sde_x.var(t_cpu.double().numpy())), dtype=X0.dtype, device=dev)[:, None, None]
        Xt = a * X0 + sd * zx
    if generate in ("A", "both"):
        za = torch.triu(torch.randn(A0.shape, generator=generator, dtype=A0.dtype), 1).to(dev)
        za = za + za.transpose(-1, -2)
        if ma is not None:
            za = za * ma
        a = torch.as_tensor(net.sde_a.mean_coef(t_cpu.double().numpy()), dtype=A0.dtype, device=dev)[:, None, None]
        sd_a = torch.as_tensor(np.sqrt(net.sde_a.var(t_cpu.double().numpy())), dtype=A0.dtype,
                               device=dev)[:, None, None]
        At = a * A0 + sd_a * za
    masked = {} if flags is None else {"flags": flags}  # a net without node flags keeps working
    sx, sa = net(Xt, At, t, heads={"X": "x", "A": "a", "both": "xa"}[generate], **masked)
    if generate in ("X", "both"):
        loss = loss + ((sd * sx + zx) ** 2).sum(dim=(-1, -2)).mean()
    if generate in ("A", "both"):
        iu = torch.triu_indices(n, n, 1, device=dev)
        r = (sd_a * sa + za)[:, iu[0], iu[1]]
        loss = loss + (r**2).sum(-1).mean()
    return loss


def _flags_tensor(flags, X0t: torch.Tensor, name: str = "flags") -> torch.Tensor | None:
    """Node flags ``[S, n]`` (0/1) as a float tensor matching ``X0t [S, n, F]``, or ``None``."""
    if flags is None:
        return None
    f = torch.as_tensor(np.asarray(flags), dtype=X0t.dtype)
    if f.shape != X0t.shape[:2]:
        raise SggmError(f"{name} must be [S, n] = {tuple(X0t.shape[:2])}, got {tuple(f.shape)}")
    if not bool(((f == 0) | (f == 1)).all()):
        raise SggmError(f"{name} must hold 0/1 node flags")
    return f


def train_score(net: ScoreNetwork, X0: np.ndarray, A0: np.ndarray, *, generate: str = "both", steps: int = 500,
                batch_size: int = 64, lr: float = 2e-3, T: float = 1.0, t_min: float = 1e-3, seed: int = 0,
                progress: bool = False, device: torch.device | str | None = None,
                flags: np.ndarray | None = None) -> list[float]:
    """Train ``net`` by time-weighted DSM on the dataset ``X0 [S, n, F]``, ``A0 [S, n, n]``; returns the losses.
    ``flags [S, n]``: node flags of graphs padded to ``n`` nodes (GDSS's; see :class:`ScoreNetwork`).

    ``device``: move ``net`` and the data set there first (default: where ``net`` is); the random draws stay on the
    CPU generator (the same numbers on every device)."""
    from icml25.train import check_finite
    from icml25.train import progress as bar

    if generate not in ("X", "A", "both"):
        raise SggmError(f"generate must be 'X', 'A' or 'both', got {generate!r}")
    if steps < 1 or batch_size < 1 or not lr > 0:
        raise SggmError(f"steps and batch_size must be >= 1 and lr > 0, got {steps}, {batch_size}, {lr}")
    X0t = torch.as_tensor(np.asarray(X0), dtype=torch.float32)
    A0t = torch.as_tensor(np.asarray(A0), dtype=torch.float32)
    if X0t.ndim != 3 or A0t.ndim != 3 or X0t.shape[0] != A0t.shape[0] or X0t.shape[1] != A0t.shape[1]:
        raise SggmError(f"X0 must be [S, n, F] and A0 [S, n, n], got {tuple(X0t.shape)} and {tuple(A0t.shape)}")
    if not (torch.isfinite(X0t).all() and torch.isfinite(A0t).all()):
        raise SggmError("training data contains NaN or inf")
    F0t = _flags_tensor(flags, X0t)
    if device is not None:
        net.to(device)
    dev = next(net.parameters()).device
    X0t, A0t = X0t.to(dev), A0t.to(dev)
    F0t = None if F0t is None else F0t.to(dev)
    g = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    opt = torch.optim.Adam(net.parameters(), lr=lr)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=steps)
    losses = []
    for step in bar(range(steps), desc="DSM", disable=None if progress else True):
        idx = torch.randint(0, X0t.shape[0], (batch_size,), generator=g).to(dev)
        loss = dsm_loss(net, X0t[idx], A0t[idx], generate=generate, T=T, t_min=t_min, generator=g,
                        flags=None if F0t is None else F0t[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        losses.append(check_finite(loss, step=step))
    return losses


def validation_loss(net: ScoreNetwork, X0: np.ndarray, A0: np.ndarray, *, generate: str = "both", T: float = 1.0,
                    t_min: float = 1e-3, seed: int = 0, repeats: int = 4, batch_size: int = 256,
                    flags: np.ndarray | None = None) -> float:
    """The time-weighted DSM loss of ``net`` on held-out data ``X0 [S, n, F]``, ``A0 [S, n, n]`` (no gradient),
    averaged over ``repeats`` passes with fixed noise and times (``seed``): the validation score of the learning-rate
    choice in ``reproduce``."""
    if generate not in ("X", "A", "both"):
        raise SggmError(f"generate must be 'X', 'A' or 'both', got {generate!r}")
    X0t = torch.as_tensor(np.asarray(X0), dtype=torch.float32)
    A0t = torch.as_tensor(np.asarray(A0), dtype=torch.float32)
    F0t = _flags_tensor(flags, X0t)
    g = torch.Generator().manual_seed(seed)
    total, count = 0.0, 0
    with torch.no_grad():
        for _ in range(repeats):
            for i in range(0, X0t.shape[0], batch_size):
                xb, ab = X0t[i:i + batch_size], A0t[i:i + batch_size]
                loss = dsm_loss(net, xb, ab, generate=generate, T=T, t_min=t_min, generator=g,
                                flags=None if F0t is None else F0t[i:i + batch_size])
                total += float(loss) * xb.shape[0]
                count += xb.shape[0]
    return total / count


def train_with_validation(net: ScoreNetwork, X0: np.ndarray, A0: np.ndarray, X_val: np.ndarray, A_val: np.ndarray,
                          *, generate: str, steps: int, eval_every: int, batch_size: int = 32, lr: float = 2e-3,
                          T: float = 1.0, t_min: float = 1e-3, seed: int = 0, patience: int = 3,
                          flags: np.ndarray | None = None, flags_val: np.ndarray | None = None):
    """:func:`train_score`'s loop (Adam, cosine decay over ``steps``) with the held-out DSM loss
    (:func:`validation_loss`, fixed noise) measured every ``eval_every`` steps and at the end: returns the
    :class:`icml25.train.Curve` (lower is better, stopped by the budget) used by the competence gates. ``flags`` /
    ``flags_val``: node flags of the training / validation graphs (see :class:`ScoreNetwork`)."""
    from icml25.train import Curve, check_finite

    if generate not in ("X", "A", "both"):
        raise SggmError(f"generate must be 'X', 'A' or 'both', got {generate!r}")
    if steps < 1 or eval_every < 1 or batch_size < 1 or not lr > 0:
        raise SggmError(f"steps, eval_every, batch_size must be >= 1 and lr > 0, got {steps}, {eval_every}, "
                        f"{batch_size}, {lr}")
    X0t = torch.as_tensor(np.asarray(X0), dtype=torch.float32)
    A0t = torch.as_tensor(np.asarray(A0), dtype=torch.float32)
    F0t = _flags_tensor(flags, X0t)
    g = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    opt = torch.optim.Adam(net.parameters(), lr=lr)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=steps)
    curve = Curve(higher_is_better=False, patience=patience)

    def evaluate(at: int) -> None:
        net.eval()
        curve.steps.append(at)
        curve.values.append(validation_loss(net, X_val, A_val, generate=generate, T=T, t_min=t_min,
                                            seed=10_007 + seed, repeats=2, flags=flags_val))
        net.train()

    for step in range(steps):
        idx = torch.randint(0, X0t.shape[0], (batch_size,), generator=g)
        loss = dsm_loss(net, X0t[idx], A0t[idx], generate=generate, T=T, t_min=t_min, generator=g,
                        flags=None if F0t is None else F0t[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        check_finite(loss, step=step)
        if (step + 1) % eval_every == 0 or step + 1 == steps:
            evaluate(step + 1)
    return curve
