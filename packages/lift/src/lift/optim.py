"""Sparse AdamW over principal weights, with dynamic mask updates (LIFT, Liu et al., ICML 2025, Sec. 3, Alg. 1).

For every masked weight ``W`` (shape ``(m, n)``) with mask ``M`` of ``k`` entries (row-major flat indices
``idx``, shape ``(k,)``) and gradient ``G``, one optimizer step ``t`` is

.. code-block:: text

    g   = G.flatten()[idx]                                  # (k,)
    m   = beta1 m + (1 - beta1) g                           # (k,)  first moment, masked entries only
    v   = beta2 v + (1 - beta2) g^2                         # (k,)  second moment, masked entries only
    a_t = lr sqrt(1 - beta2^t) / (1 - beta1^t)              # bias correction, HF-AdamW style (eps added to sqrt(v))
    W.flatten()[idx] <- W_M - lr wd W_M - a_t m / (sqrt(v) + eps)   # decoupled weight decay on W_M only
    W.flatten()[not idx] unchanged (bit-identical)

So the optimizer state is ``2k`` floats per matrix instead of ``2mn`` for dense AdamW.

**Sparse gradients** (``sparse_grads=True``, the default for the weight-based masks): a post-accumulate-grad hook on
every masked weight gathers ``G.flatten()[idx]`` (shape ``(k,)``) into a flat per-matrix buffer (summed over
micro-batches) and sets ``W.grad = None`` at once, so the dense ``(m, n)`` gradient of a matrix lives only while
autograd hands it over (one matrix at a time) instead of from backward until ``zero_grad``. The update is bit-for-bit
the dense path's (the same float operations on the same entries). After ``backward`` the masked weights' ``.grad`` is
``None``; :meth:`SparseAdamW.sparse_grad` returns the buffer. :meth:`SparseAdamW.step` consumes the buffers (they
never outlive a step, so a loop that clears gradients with ``model.zero_grad()``, as ``transformers.Trainer`` does,
is correct); :meth:`SparseAdamW.zero_grad` drops them too. The training-statistics masks (gradient, momentum,
movement) read the dense gradient and keep the dense path. Every ``update_interval``
optimizer steps (after optimizer step ``n`` with ``n % update_interval == 0``; the official code's off-by-one
``(n + 1) % update_interval == 0`` via ``official_schedule=True``) each mask is recomputed from the current weights
and the moments are remapped: entries in both the old and the new mask keep their moments, new entries start at 0,
and the bias-correction clock ``t`` is not reset.

Differences from the official ``src/sparseAdam.py`` (all deliberate, documented in the README): weight decay works
(the official masked decay acts on a copy and is a no-op); ``.grad`` is never written; state and masks live on the
parameter's device (no CUDA-only SVD, no CPU mask copies); masks are stored as sorted ``int64`` flat indices; the mask
type is an enum; the default selection is the *largest* entries (paper), the released scripts' *smallest* is an
option.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import torch
from torch import nn

from lift.checks import check_hparams as _check_hparams
from lift.errors import LiftConfigError, MaskError
from lift.masks import MaskType, Selection, SVDMethod, _check_int, budget_size, check_mask, compute_mask

__all__ = ["SparseAdamW", "select_linear_weights"]

MaskFn = Callable[[torch.Tensor], torch.Tensor]


def _module_matches(name: str, patterns: Sequence[str]) -> bool:
    """``name`` (dotted module path) matches a pattern if it equals it, ends with ``.pattern``, or regex-fullmatches."""
    for pat in patterns:
        if name == pat or name.endswith("." + pat):
            return True
        try:
            if re.fullmatch(pat, name):
                return True
        except re.error:
            continue
    return False


def select_linear_weights(model: nn.Module, *, target_modules: Sequence[str] | None = None,
                          exclude: Sequence[str] = ("lm_head",)) -> list[tuple[str, nn.Parameter]]:
    """The ``(name, weight)`` pairs LIFT masks: every ``nn.Linear`` weight, except modules matching ``exclude``.

    With ``target_modules`` (e.g. ``["q_proj", "v_proj"]``, suffixes or regexes as in peft) only those modules.
    Shared (tied) weights are listed once. GPT-2 style ``Conv1D`` layers are not ``nn.Linear`` and are not selected.
    """
    out: list[tuple[str, nn.Parameter]] = []
    seen: set[int] = set()
    for name, module in model.named_modules():
        if not isinstance(module, nn.Linear):
            continue
        if _module_matches(name, exclude):
            continue
        if target_modules is not None and not _module_matches(name, target_modules):
            continue
        w = module.weight
        if id(w) in seen:
            continue
        seen.add(id(w))
        out.append((f"{name}.weight", w))
    return out


class SparseAdamW(torch.optim.Optimizer):
    """AdamW on LIFT's principal weights only, with optimizer state for the masked entries only.

    Args:
        params_or_model: an ``nn.Module`` (every ``nn.Linear`` weight except ``exclude`` is masked; every other
            parameter is frozen with ``requires_grad_(False)`` unless ``train_other_params``), or an iterable of
            parameters / parameter-group dicts (a group with ``"masked": False`` gets dense AdamW; every parameter
            of a masked group must be 2-D).
        lr: learning rate (>= 0).
        filter_rank: ``r_f``, rank of the low-rank filter, in ``[1, min(m, n)]`` for every masked matrix.
        budget_rank: ``r_b``; ``k = min((m + n) r_b, m n)`` trainable entries per matrix (LoRA's count).
        update_interval: recompute the masks every this many optimizer steps (>= 1); ``None`` keeps them static.
        density: instead of ``budget_rank``, ``k = round(density m n)`` with density in (0, 1].
        betas, eps, weight_decay, correct_bias: AdamW hyper-parameters (HF style: eps is added to ``sqrt(v)``).
            Defaults follow the official ``SparseAdamW`` (eps 1e-6); its training script uses betas (0.9, 0.95).
        mask_type: :class:`~lift.masks.MaskType` (``principal`` = LIFT; ``magnitude``, ``random``, ``stable_rank``
            are the baselines of the official code; ``gradient`` (top-k ``|G|`` at refresh), ``momentum`` (top-k of
            a dense gradient EMA) and ``movement`` (top-k of ``-sum G*W``) its training-statistics masks, random
            until the first refresh; momentum and movement keep an extra dense ``(m, n)`` ``state["score"]``).
        selection: ``largest`` (paper, default) or ``smallest`` (what the released official scripts select).
        svd, niter: exact / randomized / auto SVD and power iterations of the randomized SVD.
        seed: seed for the randomized SVD and random masks (mixed with the parameter index and update count).
        mask_fn: a custom ``mask_fn(weight) -> mask``; checked for shape and cardinality ``k`` every time it is used.
        target_modules, exclude: which ``nn.Linear`` modules to mask when given a model.
        train_other_params: with a model, also train the non-masked parameters with dense AdamW.
        official_schedule: refresh after step ``n`` when ``(n + 1) % update_interval == 0`` (official off-by-one).
        sparse_grads: keep only the ``k`` masked entries of each masked weight's gradient (see the module doc;
            default on; ignored, i.e. dense, for the gradient / momentum / movement masks). ``False`` keeps dense
            ``.grad`` tensors as the official code does (needed e.g. for gradient clipping over all gradients or DDP).
        sync_ranks: under an initialised ``torch.distributed`` process group (``accelerate launch``, ``torchrun``)
            average every gradient over the ranks inside :meth:`step` (data parallelism without DDP; the masks are
            identical on every rank). Do not wrap the model in DDP as well.

    Attributes:
        param_names: ``{id(param): name}`` when built from a model.

    Works as a plain optimizer and as ``transformers.Trainer(optimizers=(SparseAdamW(model, ...), None))``.
    """

    def __init__(
        self,
        params_or_model: nn.Module | Iterable[nn.Parameter] | Iterable[dict[str, Any]],
        *,
        lr: float,
        filter_rank: int,
        budget_rank: int | None = None,
        update_interval: int | None,
        density: float | None = None,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-6,
        weight_decay: float = 0.0,
        correct_bias: bool = True,
        mask_type: MaskType | str = MaskType.PRINCIPAL,
        selection: Selection | str = Selection.LARGEST,
        svd: SVDMethod | str = SVDMethod.AUTO,
        niter: int = 2,
        seed: int = 0,
        mask_fn: MaskFn | None = None,
        target_modules: Sequence[str] | None = None,
        exclude: Sequence[str] = ("lm_head",),
        train_other_params: bool = False,
        official_schedule: bool = False,
        sparse_grads: bool = True,
        sync_ranks: bool = True,
    ) -> None:
        _check_hparams(lr, betas, eps, weight_decay)
        mt = MaskType.parse(mask_type)
        sel = Selection.parse(selection)
        svd_m = SVDMethod.parse(svd)
        if mt is MaskType.PRINCIPAL and mask_fn is None:
            _check_int(filter_rank, "filter_rank", low=1)
        if mt is not MaskType.STABLE_RANK:
            budget_size((1, 1), budget_rank=budget_rank, density=density)  # validates exactly-one + ranges
        if update_interval is not None:
            _check_int(update_interval, "update_interval", low=1)
        _check_int(niter, "niter", low=0)
        if mask_fn is not None and not callable(mask_fn):
            raise LiftConfigError("mask_fn must be callable: mask_fn(weight) -> bool mask of the weight's shape")

        self.param_names: dict[int, str] = {}
        if isinstance(params_or_model, nn.Module):
            groups = self._groups_from_model(params_or_model, target_modules=target_modules, exclude=exclude,
                                             train_other_params=train_other_params)
        else:
            if target_modules is not None or train_other_params:
                raise LiftConfigError("target_modules / train_other_params need a model, not a parameter list")
            groups = list(params_or_model)
            if not groups:
                raise LiftConfigError("params_or_model is empty: nothing to optimize")
            if not isinstance(groups[0], dict):
                groups = [{"params": groups}]
        defaults = {
            "lr": float(lr), "betas": (float(betas[0]), float(betas[1])), "eps": float(eps),
            "weight_decay": float(weight_decay), "correct_bias": bool(correct_bias), "masked": True,
            "filter_rank": filter_rank, "budget_rank": budget_rank, "density": density,
            "update_interval": update_interval, "mask_type": mt.value, "selection": sel.value, "svd": svd_m.value,
            "niter": int(niter), "seed": int(seed), "official_schedule": bool(official_schedule),
            "optimizer_step": 0, "mask_update_steps": [],
            "sparse_grads": bool(sparse_grads) and not mt.needs_scores,
        }
        if not isinstance(sparse_grads, bool):
            raise LiftConfigError(f"sparse_grads must be True or False; got {sparse_grads!r}")
        self._sync_ranks = bool(sync_ranks)
        self._grad_buffers: dict[torch.Tensor, torch.Tensor] = {}  # masked param -> (k,) gathered gradient
        self._hooks: list[Any] = []
        super().__init__(groups, defaults)
        self._mask_fn = mask_fn
        for group in self.param_groups:
            group["mask_update_steps"] = list(group["mask_update_steps"])  # not the shared default list
            _check_hparams(group["lr"], group["betas"], group["eps"], group["weight_decay"])
            if group["masked"]:
                self._init_masked_group(group)

    # ------------------------------------------------------------------------------------------------ set-up

    def _groups_from_model(self, model: nn.Module, *, target_modules: Sequence[str] | None,
                           exclude: Sequence[str], train_other_params: bool) -> list[dict[str, Any]]:
        selected = [(n, w) for n, w in select_linear_weights(model, target_modules=target_modules, exclude=exclude)
                    if w.requires_grad]
        if not selected:
            raise LiftConfigError(
                f"no trainable nn.Linear weight found in the model (target_modules={target_modules!r}, "
                f"exclude={tuple(exclude)!r}); Conv1D (GPT-2) layers are not nn.Linear")
        masked_ids = {id(w) for _, w in selected}
        for name, w in selected:
            self.param_names[id(w)] = name
        others: list[nn.Parameter] = []
        seen: set[int] = set(masked_ids)
        for name, p in model.named_parameters():
            if id(p) in seen:
                continue
            seen.add(id(p))
            if train_other_params and p.requires_grad:
                others.append(p)
                self.param_names[id(p)] = name
            else:
                p.requires_grad_(False)
        groups: list[dict[str, Any]] = [{"params": [w for _, w in selected]}]
        if others:
            groups.append({"params": others, "masked": False})
        return groups

    def _init_masked_group(self, group: dict[str, Any]) -> None:
        for i, p in enumerate(group["params"]):
            name = self.param_names.get(id(p), f"param{i}")
            if p.ndim != 2:
                raise MaskError(f"parameter {name} of shape {tuple(p.shape)} is in a masked group but is not 2-D; "
                                "put it in a group with 'masked': False")
            if not p.is_contiguous():
                raise MaskError(f"parameter {name} is not contiguous; call .contiguous() on it before optimizing")
            if group["mask_type"] == MaskType.PRINCIPAL.value and self._mask_fn is None:
                _check_int(group["filter_rank"], f"filter_rank (for {name} of shape {tuple(p.shape)})",
                           low=1, high=min(p.shape))
            state = self.state[p]
            state["indices"] = self._compute_indices(p, group, param_index=i, n_updates=0)
            k = state["indices"].numel()
            state["step"] = 0
            state["mask_updates"] = 0
            state["exp_avg"] = torch.zeros(k, dtype=p.dtype, device=p.device)  # (k,)
            state["exp_avg_sq"] = torch.zeros(k, dtype=p.dtype, device=p.device)  # (k,)
            if group["sparse_grads"]:
                self._hooks.append(p.register_post_accumulate_grad_hook(self._gather_grad))

    @torch.no_grad()
    def _gather_grad(self, p: torch.Tensor) -> None:
        """Post-accumulate-grad hook: ``buffer += G.flatten()[idx]`` (k,), then free the dense ``(m, n)`` grad."""
        g = p.grad
        if g is None:  # pragma: no cover - torch calls the hook after accumulating a gradient
            return
        idx = self.state[p]["indices"]  # (k,)
        part = g.reshape(-1).index_select(0, idx)  # (m, n) -> (m*n,) -> (k,)
        buf = self._grad_buffers.get(p)
        if buf is None:
            self._grad_buffers[p] = part
        else:
            buf.add_(part)
        p.grad = None

    def sparse_grad(self, param: torch.Tensor) -> torch.Tensor | None:
        """The gathered gradient ``G.flatten()[idx]`` (k,) of a masked weight since the last ``step`` or
        ``zero_grad`` (``None`` when there is none)."""
        return self._grad_buffers.get(param)

    def grad_buffer_bytes(self) -> int:
        """Bytes of the sparse gradient buffers alive now."""
        return sum(b.numel() * b.element_size() for b in self._grad_buffers.values())

    def zero_grad(self, set_to_none: bool = True) -> None:
        """As ``torch.optim.Optimizer.zero_grad``; also drops the sparse gradient buffers."""
        super().zero_grad(set_to_none=set_to_none)
        self._grad_buffers.clear()

    def remove_hooks(self) -> None:
        """Remove the sparse-gradient hooks (the masked weights get dense ``.grad`` again)."""
        for h in self._hooks:
            h.remove()
        self._hooks.clear()
        for group in self.param_groups:
            group["sparse_grads"] = False

    def _compute_indices(self, p: torch.Tensor, group: dict[str, Any], *, param_index: int,
                         n_updates: int) -> torch.Tensor:
        """Sorted row-major flat indices (int64, shape (k,)) of the current mask of ``p``."""
        name = self.param_names.get(id(p), f"param{param_index}")
        w = p.detach()
        if self._mask_fn is not None:
            mask = self._mask_fn(w)
            k = budget_size(w.shape, budget_rank=group["budget_rank"], density=group["density"])
            mask = check_mask(mask, w, k=k, name=f"mask_fn mask for {name}")
        else:
            seed = group["seed"] + 7919 * param_index + 104729 * n_updates
            mt = MaskType(group["mask_type"])
            mask = compute_mask(w, mask_type=mt, filter_rank=group["filter_rank"],
                                budget_rank=group["budget_rank"], density=group["density"],
                                selection=group["selection"], svd=group["svd"], niter=group["niter"], seed=seed,
                                scores=self._scores(p, mt) if mt.needs_scores else None)
        return mask.reshape(-1).nonzero().squeeze(1).to(device=p.device, dtype=torch.long)  # (m, n) -> (k,)

    def _scores(self, p: torch.Tensor, mask_type: MaskType) -> torch.Tensor | None:
        """Training statistics of the gradient / momentum / movement masks (``None`` before the first gradient)."""
        if mask_type is MaskType.GRADIENT:
            return None if p.grad is None else p.grad.detach().abs()  # |G| of the current step, (m, n)
        score = self.state[p].get("score") if p in self.state else None  # (m, n) or None
        if score is None:
            return None
        return score.abs() if mask_type is MaskType.MOMENTUM else score

    @torch.no_grad()
    def _update_scores(self, p: torch.Tensor, group: dict[str, Any]) -> None:
        """Dense score buffers: momentum ``s <- beta1 s + (1 - beta1) G``; movement ``s <- s - G * W`` (before the
        update, Sanh et al. 2020). The gradient mask needs no buffer (it reads ``.grad`` at refresh time)."""
        mt = group["mask_type"]
        if mt not in (MaskType.MOMENTUM.value, MaskType.MOVEMENT.value):
            return
        state = self.state[p]
        if "score" not in state:
            state["score"] = torch.zeros_like(p, memory_format=torch.contiguous_format)  # (m, n)
        g = p.grad.to(state["score"].dtype)
        if mt == MaskType.MOMENTUM.value:
            state["score"].mul_(group["betas"][0]).add_(g, alpha=1.0 - group["betas"][0])
        else:
            state["score"].addcmul_(g, p.detach().to(g.dtype), value=-1.0)

    # ------------------------------------------------------------------------------------------------ stepping

    @torch.no_grad()
    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """One AdamW step on the masked entries (and dense groups); refresh the masks when scheduled."""
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        self._average_over_ranks()
        for group in self.param_groups:
            for p in group["params"]:
                if group["masked"] and group["sparse_grads"] and p.grad is None:
                    g = self._grad_buffers.get(p)
                    if g is not None:
                        self._masked_update(p, group, g)
                    continue
                if p.grad is None:
                    continue
                if p.grad.is_sparse:
                    raise RuntimeError("SparseAdamW does not support sparse gradients (torch.sparse); use dense grads")
                if group["masked"]:
                    self._update_scores(p, group)
                    self._masked_update(p, group,
                                        p.grad.reshape(-1).index_select(0, self.state[p]["indices"]))  # (k,)
                else:
                    self._dense_update(p, group)
            group["optimizer_step"] += 1
            if group["masked"] and self._refresh_due(group):
                self._refresh_group(group)
        # the step consumed the gathered gradients: drop them here, not only in our zero_grad, so that a loop which
        # clears gradients another way (transformers.Trainer calls model.zero_grad()) never adds them to the next
        # step's
        self._grad_buffers.clear()
        return loss

    def _average_over_ranks(self) -> None:
        """Data parallelism without DDP: when a ``torch.distributed`` process group with more than one rank is
        initialised, every gradient this step uses -- the ``(k,)`` sparse buffers (the masks are the same on every
        rank: the same weights, the same seeds) and any dense ``.grad`` -- is all-reduced and divided by the world
        size, so every rank applies the same update. Do not also wrap the model in DDP."""
        if not self._sync_ranks:
            return
        import torch.distributed as dist

        if not (dist.is_available() and dist.is_initialized()) or dist.get_world_size() < 2:
            return
        world = dist.get_world_size()
        for group in self.param_groups:
            for p in group["params"]:
                g = p.grad if p.grad is not None else self._grad_buffers.get(p)
                if g is None:
                    continue
                dist.all_reduce(g, op=dist.ReduceOp.SUM)
                g.div_(world)

    def _step_size(self, group: dict[str, Any], t: int) -> float:
        beta1, beta2 = group["betas"]
        step_size = group["lr"]
        if group["correct_bias"]:
            step_size = step_size * math.sqrt(1.0 - beta2**t) / (1.0 - beta1**t)
        return step_size

    def _masked_update(self, p: torch.Tensor, group: dict[str, Any], grad_k: torch.Tensor) -> None:
        """The masked AdamW step from ``grad_k`` = ``G.flatten()[idx]`` (k,)."""
        state = self.state[p]
        idx = state["indices"]  # (k,)
        if idx.numel() == 0:
            return
        beta1, beta2 = group["betas"]
        flat = p.view(-1)  # (m, n) -> (m*n,), a view: writes go to p
        g = grad_k.to(state["exp_avg"].dtype)  # (k,)
        state["step"] += 1
        exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
        exp_avg.mul_(beta1).add_(g, alpha=1.0 - beta1)
        exp_avg_sq.mul_(beta2).addcmul_(g, g, value=1.0 - beta2)
        denom = exp_avg_sq.sqrt().add_(group["eps"])
        delta = (exp_avg / denom).mul_(-self._step_size(group, state["step"]))  # (k,)
        if group["weight_decay"] != 0.0:
            # decoupled weight decay, applied to the masked entries W_M themselves (not to a copy)
            delta.add_(flat.index_select(0, idx), alpha=-group["lr"] * group["weight_decay"])
        flat.index_add_(0, idx, delta.to(p.dtype))

    def _dense_update(self, p: torch.Tensor, group: dict[str, Any]) -> None:
        state = self.state[p]
        if "exp_avg" not in state:
            state["step"] = 0
            state["exp_avg"] = torch.zeros_like(p, memory_format=torch.preserve_format)
            state["exp_avg_sq"] = torch.zeros_like(p, memory_format=torch.preserve_format)
        beta1, beta2 = group["betas"]
        g = p.grad
        state["step"] += 1
        exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
        exp_avg.mul_(beta1).add_(g, alpha=1.0 - beta1)
        exp_avg_sq.mul_(beta2).addcmul_(g, g, value=1.0 - beta2)
        if group["weight_decay"] != 0.0:
            p.mul_(1.0 - group["lr"] * group["weight_decay"])
        denom = exp_avg_sq.sqrt().add_(group["eps"])
        p.addcdiv_(exp_avg, denom, value=-self._step_size(group, state["step"]))

    # ------------------------------------------------------------------------------------------------ masks

    def _refresh_due(self, group: dict[str, Any]) -> bool:
        interval = group["update_interval"]
        if interval is None:
            return False
        n = group["optimizer_step"]
        return (n + 1) % interval == 0 if group["official_schedule"] else n % interval == 0

    @torch.no_grad()
    def _refresh_group(self, group: dict[str, Any]) -> None:
        for i, p in enumerate(group["params"]):
            state = self.state[p]
            old_idx = state["indices"]  # (k_old,), sorted
            new_idx = self._compute_indices(p, group, param_index=i, n_updates=state["mask_updates"] + 1)  # (k,)
            if old_idx.numel() > 0:
                pos = torch.searchsorted(old_idx, new_idx).clamp_(max=old_idx.numel() - 1)  # (k,)
                kept = old_idx[pos] == new_idx  # (k,) entry in both masks
            else:
                pos = torch.zeros_like(new_idx)
                kept = torch.zeros_like(new_idx, dtype=torch.bool)
            for key in ("exp_avg", "exp_avg_sq"):
                old = state[key]
                new = torch.zeros(new_idx.numel(), dtype=old.dtype, device=old.device)
                new[kept] = old[pos[kept]]
                state[key] = new
            state["indices"] = new_idx
            state["mask_updates"] += 1
            self._grad_buffers.pop(p, None)  # gathered with the old mask: stale (consumed by the step)
        group["mask_update_steps"].append(group["optimizer_step"])

    def update_masks(self) -> None:
        """Recompute every mask from the current weights now and remap the moments (also called by the schedule)."""
        for group in self.param_groups:
            if group["masked"]:
                self._refresh_group(group)

    def mask(self, param: torch.Tensor) -> torch.Tensor:
        """The current boolean mask (shape of ``param``) of a masked parameter."""
        if param not in self.state or "indices" not in self.state[param]:
            raise KeyError("this parameter is not in a masked group of the optimizer")
        idx = self.state[param]["indices"]
        m = torch.zeros(param.numel(), dtype=torch.bool, device=param.device)
        m[idx] = True
        return m.view(param.shape)  # (m*n,) -> (m, n)

    def masks(self) -> dict[str, torch.Tensor]:
        """``{name: bool mask}`` of every masked parameter (names from the model, else ``param<i>``)."""
        out: dict[str, torch.Tensor] = {}
        for group in self.param_groups:
            if not group["masked"]:
                continue
            for i, p in enumerate(group["params"]):
                out[self.param_names.get(id(p), f"param{i}")] = self.mask(p)
        return out

    @property
    def mask_update_steps(self) -> list[int]:
        """Optimizer steps (1-based counts of completed steps) after which the masks were recomputed."""
        steps: list[int] = []
        for group in self.param_groups:
            if group["masked"]:
                steps = sorted(set(steps) | set(group["mask_update_steps"]))
        return steps

    # ------------------------------------------------------------------------------------------------ accounting

    def trainable_entries(self) -> int:
        """Total number of entries the optimizer can change: sum of k over masked matrices + dense numels."""
        total = 0
        for group in self.param_groups:
            for p in group["params"]:
                total += self.state[p]["indices"].numel() if group["masked"] else p.numel()
        return total

    def state_floats(self) -> int:
        """Number of floats in the optimizer moments (2k per masked matrix, 2 numel per dense parameter)."""
        total = 0
        for group in self.param_groups:
            for p in group["params"]:
                st = self.state.get(p, {})
                if group["masked"]:
                    total += st["exp_avg"].numel() + st["exp_avg_sq"].numel()
                else:
                    total += 2 * p.numel()
        return total

    def state_bytes(self) -> int:
        """Bytes of every tensor in the optimizer state right now (moments and int64 mask indices)."""
        total = 0
        for st in self.state.values():
            for v in st.values():
                if isinstance(v, torch.Tensor):
                    total += v.numel() * v.element_size()
        return total

    # ------------------------------------------------------------------------------------------------ (de)serialise

    def load_state_dict(self, state_dict: Mapping[str, Any]) -> None:
        """As ``torch.optim.Optimizer.load_state_dict``, keeping the mask indices int64 (torch would cast them)."""
        state = {k: dict(v) for k, v in state_dict["state"].items()}
        stash = {k: v.pop("indices") for k, v in state.items() if "indices" in v}
        super().load_state_dict({"state": state, "param_groups": state_dict["param_groups"]})
        saved_ids = [i for g in state_dict["param_groups"] for i in g["params"]]
        params = [p for g in self.param_groups for p in g["params"]]
        by_id = dict(zip(saved_ids, params))
        for k, idx in stash.items():
            p = by_id[k]
            self.state[p]["indices"] = idx.to(device=p.device, dtype=torch.long)
        self._grad_buffers.clear()
        for group in self.param_groups:
            group["mask_update_steps"] = list(group.get("mask_update_steps", []))
            group.setdefault("sparse_grads", False)
