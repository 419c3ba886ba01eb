"""Per-epoch dynamic data selection as torch ``Sampler`` objects (never a global DataLoader patch).

:class:`DynamicSelector` is the reconstructed selection of Yang et al. (ICML 2025) [derived, unverified], built on
InfoBatch (Qin et al., ICLR 2024). At epoch ``t < ceil(delta T)`` with budget ``B = ceil(r N)``:

1. the pool ``P`` = samples kept by the gate ``g`` (gated samples are dropped; the set may then be smaller than B);
2. the informative set ``H = {i in P : l_i >= mean_P l}`` (latest per-sample losses) is kept with weight 1 when
   ``|H| < B``;
3. the remaining ``m = B - |H|`` places are filled from ``E = P \\ H`` by Gumbel-top-k sampling without replacement
   with probabilities ``p_i ∝ eps + a_i``. Gumbel-top-k on ``log p_i + G_i`` is bottom-k on the exponential ranks
   ``r_i = E_i / p_i`` (``G = -log E``), so the Horvitz-Thompson weight is ``w_i = 1 / pi_i`` with the rank-conditioned
   inclusion probability ``pi_i = 1 - exp(-p_i kappa)``, ``kappa`` the (m+1)-th smallest rank (Cohen & Kaplan's
   bottom-k estimator); it is exactly unbiased: ``E[sum_{i in S} x_i / pi_i] = sum_{i in E} x_i`` for any ``x``.
   When all ``p_i`` are equal the exact ``pi = m / |E|`` is used. (When ``|H| >= B``, e.g. at epoch 0 where all
   losses are equal, the B places are drawn the same way from ``H`` alone.)
4. from epoch ``ceil(delta T)`` on: every sample, weight 1, no gate (InfoBatch's annealing; ``anneal_gate=True``
   keeps the gate on).

:class:`InfoBatch` is the baseline (official ``infobatch/infobatch.py``, re-written): well-learned samples
(``l_i < mean l``) are kept with probability ``1 - prune_ratio`` (weight ``1 / keep``), the rest always.
:class:`LossPolicySelector` gives the uniform random, epsilon-greedy and UCB selectors of Raju et al. (2021) on the
EMA of the loss. Every selector is deterministic given ``seed`` (numpy ``default_rng([seed, epoch])``).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any, Literal

import numpy as np
import torch
from torch.utils.data import Sampler

from select_augment.errors import SelectAugmentError
from select_augment.scoring import Scores


def check_schedule(*, ratio: float, delta: float, epochs: int, name: str = "ratio") -> None:
    if not (isinstance(ratio, (int, float)) and not isinstance(ratio, bool) and 0.0 < ratio <= 1.0):
        raise SelectAugmentError(f"{name} must be in (0, 1], got {ratio!r}")
    if not (isinstance(delta, (int, float)) and not isinstance(delta, bool) and 0.0 <= delta <= 1.0):
        raise SelectAugmentError(f"delta must be in [0, 1], got {delta!r}")
    if isinstance(epochs, bool) or not isinstance(epochs, (int, np.integer)) or epochs < 1:
        raise SelectAugmentError(f"epochs must be an integer >= 1, got {epochs!r}")


def ratio_for_cost(target_cost: float, *, delta: float, epochs: int) -> float:
    """The selection ratio ``r`` whose fixed budget gives the total cost ``target_cost`` (fraction of ``T N``):
    ``cost = (n_pruned r + (T - n_pruned)) / T`` with ``n_pruned = ceil(delta T)``."""
    check_schedule(ratio=1.0, delta=delta, epochs=epochs)
    n_pruned = math.ceil(delta * epochs)
    if n_pruned == 0:
        return 1.0
    r = (target_cost * epochs - (epochs - n_pruned)) / n_pruned
    if not 0.0 < r <= 1.0:
        raise SelectAugmentError(f"target cost {target_cost} is not reachable with delta={delta}, epochs={epochs}")
    return r


def bottom_k(rng: np.random.Generator, candidates: np.ndarray, p: np.ndarray, m: int) -> tuple[np.ndarray, np.ndarray]:
    """Sample ``m`` of ``candidates`` without replacement with probabilities ``∝ p`` (Gumbel-top-k, drawn as the
    ``m`` smallest exponential ranks ``E_i / p_i``). Returns ``(chosen ids, inclusion probabilities pi)`` with
    ``pi_i = 1 - exp(-p_i kappa)`` conditioned on the (m+1)-th rank ``kappa`` (``m / n`` exactly for equal ``p``)."""
    n = len(candidates)
    if m <= 0:
        return candidates[:0], np.zeros(0)
    if m >= n:
        return candidates.copy(), np.ones(n)
    e = rng.exponential(size=n)
    p = np.asarray(p, dtype=np.float64)
    ranks = e / p
    order = np.argsort(ranks, kind="stable")
    chosen = order[:m]
    if np.ptp(p) == 0:
        pi = np.full(m, m / n)
    else:
        kappa = ranks[order[m]]
        pi = -np.expm1(-p[chosen] * kappa)
    return candidates[chosen], pi


class CostMeter:
    """Sample-steps spent per epoch (a sample seen in an epoch counts 1, plus 1 per extra augmented view). The CLIP
    scoring pass is counted apart (``clip_forward``, in images encoded)."""

    def __init__(self, n: int, epochs: int):
        self.n, self.epochs = int(n), int(epochs)
        self.per_epoch: list[int] = []
        self.clip_forward = 0

    def add(self, samples: int, extra_views: int = 0) -> None:
        self.per_epoch.append(int(samples) + int(extra_views))

    @property
    def total(self) -> int:
        return int(sum(self.per_epoch))

    @property
    def fraction(self) -> float:
        """``cost / (T N)``; the training-cost reduction is ``1 - fraction``."""
        return self.total / float(self.n * self.epochs)


class _EpochSampler(Sampler[int]):
    """Common machinery: per-epoch selected ids and weights, shuffled iteration, per-sample loss memory."""

    def __init__(self, n: int, *, delta: float, epochs: int, seed: int, init_loss: float = 3.0):
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
            raise SelectAugmentError(f"the data set must hold at least one sample, got n={n!r}")
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
            raise SelectAugmentError(f"seed must be an integer >= 0, got {seed!r}")
        self.n, self.delta, self.epochs, self.seed = int(n), float(delta), int(epochs), int(seed)
        self.loss = np.full(self.n, float(init_loss))
        self.seen = np.zeros(self.n, dtype=bool)
        self._w = np.ones(self.n)
        self.selected = np.arange(self.n)
        self.epoch = -1
        self.seconds = 0.0  # time spent selecting, weighting and updating (the selector's overhead)

    @property
    def anneal_epoch(self) -> int:
        """First epoch of full data: ``ceil(delta T)``."""
        return math.ceil(self.delta * self.epochs)

    def pruning(self, epoch: int) -> bool:
        return epoch < self.anneal_epoch

    def _select(self, epoch: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        raise NotImplementedError

    def set_epoch(self, epoch: int) -> None:
        """Choose this epoch's samples ``S_t`` (``self.selected``, sorted ids) and their weights."""
        import time

        if isinstance(epoch, bool) or not isinstance(epoch, (int, np.integer)) or epoch < 0:
            raise SelectAugmentError(f"epoch must be an integer >= 0, got {epoch!r}")
        t0 = time.perf_counter()
        self.epoch = int(epoch)
        if self.pruning(epoch):
            ids, w = self._select(epoch, np.random.default_rng([self.seed, int(epoch)]))
        else:
            ids, w = self._full()
        order = np.argsort(ids, kind="stable")
        self.selected = np.asarray(ids, dtype=np.int64)[order]
        self._w = np.zeros(self.n)
        self._w[self.selected] = np.asarray(w, dtype=np.float64)[order]
        self.seconds += time.perf_counter() - t0

    def _full(self) -> tuple[np.ndarray, np.ndarray]:
        return np.arange(self.n), np.ones(self.n)

    def __iter__(self) -> Iterator[int]:
        if self.epoch < 0:
            self.set_epoch(0)
        perm = np.random.default_rng([self.seed, self.epoch, 7]).permutation(len(self.selected))
        return iter(self.selected[perm].tolist())

    def __len__(self) -> int:
        return len(self.selected)

    def weights(self, ids: Any) -> torch.Tensor:
        """Loss weights ``w_i`` of the given sample ids (float32 ``[B]``); 0 for an id not selected this epoch."""
        idx = self._ids(ids)
        return torch.as_tensor(self._w[idx], dtype=torch.float32)

    def _ids(self, ids: Any) -> np.ndarray:
        idx = np.asarray(ids.detach().cpu().numpy() if hasattr(ids, "detach") else ids)
        if idx.ndim != 1 or (idx.size and idx.dtype.kind not in "iu"):
            raise SelectAugmentError(f"ids must be a 1-D integer array, got shape {idx.shape} dtype {idx.dtype}")
        if idx.size and (idx.min() < 0 or idx.max() >= self.n):
            raise SelectAugmentError(f"ids must lie in [0, {self.n}), got values in [{idx.min()}, {idx.max()}]")
        return idx.astype(np.int64)

    def update(self, ids: Any, losses: Any) -> None:
        """Record the per-sample losses ``[B]`` of the batch's sample ids ``[B]`` (InfoBatch's score update)."""
        import time

        t0 = time.perf_counter()
        idx = self._ids(ids)
        val = np.asarray(losses.detach().cpu().numpy() if hasattr(losses, "detach") else losses, dtype=np.float64)
        if val.shape != idx.shape:
            raise SelectAugmentError(f"losses must hold one value per sample id of the batch ({idx.shape[0]}), "
                                     f"got shape {val.shape}")
        if not np.isfinite(val).all():
            raise SelectAugmentError("losses must be finite (found NaN or inf)")
        self._record(idx, val)
        self.seconds += time.perf_counter() - t0

    def _record(self, idx: np.ndarray, val: np.ndarray) -> None:
        self.loss[idx] = val
        self.seen[idx] = True


class DynamicSelector(_EpochSampler):
    """The method's per-epoch selection (see the module docstring): gate, informative set, Gumbel-top-k fill
    ``∝ eps + a`` with Horvitz-Thompson weights, InfoBatch annealing.

    Args:
        scores: :class:`Scores` from :func:`select_augment.score` (``Scores.uniform(n)`` switches the scores off).
        ratio: ``r`` in (0, 1]; budget ``B = ceil(r N)`` per pruned epoch.
        delta: annealing fraction; full data from epoch ``ceil(delta T)``.
        epochs: ``T``.
        seed: RNG seed.
        eps: ``eps`` of the fill probabilities ``∝ eps + a``.
        use_gate: drop samples with ``g_i = 0`` (the noise/ambiguity gate) before selecting.
        keep_informative: keep the above-mean-loss samples first (InfoBatch's rule); ``False`` fills all B by ``a``.
        anneal_gate: keep the gate on in the annealing epochs too.
        budget_mode: ``"fixed"`` (``B = ceil(r N)``, the default) or ``"infobatch"`` (keep all of H and a
            ``1 - prune_ratio`` share of E, as InfoBatch does; with scores off this reproduces :class:`InfoBatch`
            with ``thinning="fixed"`` draw for draw).
        prune_ratio: the share of E pruned in ``budget_mode="infobatch"``.
    """

    def __init__(self, scores: Scores, *, ratio: float = 0.5, delta: float = 0.875, epochs: int, seed: int = 0,
                 eps: float = 1e-3, use_gate: bool = True, keep_informative: bool = True, anneal_gate: bool = False,
                 budget_mode: Literal["fixed", "infobatch"] = "fixed", prune_ratio: float = 0.5,
                 weighting: Literal["ht", "stratum", "none"] = "ht", max_weight: float | None = None,
                 init_loss: float = 3.0):
        if not isinstance(scores, Scores):
            raise SelectAugmentError(f"scores must be a select_augment.Scores, got {type(scores).__name__}")
        check_schedule(ratio=ratio, delta=delta, epochs=epochs)
        if not (isinstance(eps, (int, float)) and math.isfinite(eps) and eps >= 0):
            raise SelectAugmentError(f"eps must be a finite number >= 0, got {eps!r}")
        if budget_mode not in ("fixed", "infobatch"):
            raise SelectAugmentError(f"budget_mode must be 'fixed' or 'infobatch', got {budget_mode!r}")
        if not 0.0 <= prune_ratio < 1.0:
            raise SelectAugmentError(f"prune_ratio must be in [0, 1), got {prune_ratio!r}")
        if weighting not in ("ht", "stratum", "none"):
            raise SelectAugmentError(f"weighting must be 'ht', 'stratum' or 'none', got {weighting!r}")
        if max_weight is not None and not (math.isfinite(max_weight) and max_weight >= 1):
            raise SelectAugmentError(f"max_weight must be None or a finite number >= 1, got {max_weight!r}")
        self.weighting, self.max_weight = weighting, max_weight
        super().__init__(len(scores), delta=delta, epochs=epochs, seed=seed, init_loss=init_loss)
        self.scores, self.ratio, self.eps = scores, float(ratio), float(eps)
        self.use_gate, self.keep_informative, self.anneal_gate = use_gate, keep_informative, anneal_gate
        self.budget_mode, self.prune_ratio = budget_mode, float(prune_ratio)
        self.budget = math.ceil(self.ratio * self.n)
        if self.budget < 1:
            raise SelectAugmentError(f"the budget ceil(ratio * N) = {self.budget} is zero; raise ratio")
        p = self.eps + scores.suitability
        if use_gate and not scores.gate.any():
            raise SelectAugmentError("the gate drops every sample: the budget after gating is zero (lower q_noise)")
        if self.budget_mode == "fixed" and not (p[self._pool()] > 0).all():
            raise SelectAugmentError("fill probabilities eps + a must be > 0 (use eps > 0)")

    def _pool(self) -> np.ndarray:
        return np.flatnonzero(self.scores.gate) if self.use_gate else np.arange(self.n)

    def _fill(self, rng: np.random.Generator, cand: np.ndarray, p: np.ndarray, m: int) -> tuple[np.ndarray,
                                                                                              np.ndarray]:
        """``m`` of ``cand`` by Gumbel-top-k ``∝ p`` and their weights: ``1 / pi_i`` (``"ht"``, clipped at
        ``max_weight`` if set), ``|cand| / m`` (``"stratum"``: the keep share of the stratum) or 1 (``"none"``)."""
        chosen, pi = bottom_k(rng, cand, p[cand], m)
        if self.weighting == "none":
            w = np.ones(len(chosen))
        elif self.weighting == "stratum":
            w = np.full(len(chosen), len(cand) / max(len(chosen), 1))
        else:
            w = 1.0 / pi
        if self.max_weight is not None:
            w = np.minimum(w, self.max_weight)
        return chosen, w

    def _select(self, epoch: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        pool = self._pool()
        p = self.eps + self.scores.suitability
        if self.keep_informative:
            lp = self.loss[pool]
            informative = lp >= lp.mean()
            hard, easy = pool[informative], pool[~informative]
        else:
            hard, easy = pool[:0], pool
        if self.budget_mode == "infobatch":
            m = int(round((1.0 - self.prune_ratio) * len(easy)))
            fill, w = self._fill(rng, easy, p, m)
            return np.concatenate([hard, fill]), np.concatenate([np.ones(len(hard)), w])
        budget = min(self.budget, len(pool))
        if len(hard) >= budget:
            return self._fill(rng, hard, p, budget)
        fill, w = self._fill(rng, easy, p, budget - len(hard))
        return np.concatenate([hard, fill]), np.concatenate([np.ones(len(hard)), w])

    def _full(self) -> tuple[np.ndarray, np.ndarray]:
        if self.anneal_gate and self.use_gate:
            ids = self._pool()
            return ids, np.ones(len(ids))
        return super()._full()


class InfoBatch(_EpochSampler):
    """InfoBatch (Qin et al., ICLR 2024) as a ``Sampler``: each pruned epoch, the well-learned samples
    ``W = {i : l_i < mean l}`` are kept with probability ``keep = 1 - prune_ratio`` (clamped to [0.1, 1] as in the
    official code) and weight ``1 / keep``; all others are kept with weight 1; full data from ``ceil(delta T)``.

    ``thinning="bernoulli"`` is the official rule (an independent coin per sample); ``"fixed"`` keeps exactly
    ``round(keep |W|)`` uniformly (exact ``pi = m / |W|``), the form :class:`DynamicSelector` reduces to.
    Losses start at 3 (official ``scores`` initialisation), so epoch 0 uses every sample.
    """

    def __init__(self, n: int, *, prune_ratio: float = 0.5, delta: float = 0.875, epochs: int, seed: int = 0,
                 thinning: Literal["bernoulli", "fixed"] = "bernoulli", init_loss: float = 3.0):
        check_schedule(ratio=1.0, delta=delta, epochs=epochs)
        if not (isinstance(prune_ratio, (int, float)) and 0.0 <= prune_ratio < 1.0):
            raise SelectAugmentError(f"prune_ratio must be in [0, 1), got {prune_ratio!r}")
        if thinning not in ("bernoulli", "fixed"):
            raise SelectAugmentError(f"thinning must be 'bernoulli' or 'fixed', got {thinning!r}")
        super().__init__(n, delta=delta, epochs=epochs, seed=seed, init_loss=init_loss)
        self.prune_ratio, self.thinning = float(prune_ratio), thinning
        self.keep_ratio = min(1.0, max(0.1, 1.0 - self.prune_ratio))

    def _select(self, epoch: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        ids = np.arange(self.n)
        well = self.loss < self.loss.mean()
        hard, easy = ids[~well], ids[well]
        if self.thinning == "bernoulli":
            keep = easy[rng.random(len(easy)) < self.keep_ratio]
            w = np.full(len(keep), 1.0 / self.keep_ratio)
        else:
            m = int(round(self.keep_ratio * len(easy)))
            keep, pi = bottom_k(rng, easy, np.ones(len(easy)), m)
            w = 1.0 / pi
        return np.concatenate([hard, keep]), np.concatenate([np.ones(len(hard)), w])


class LossPolicySelector(_EpochSampler):
    """Dynamic pruning baselines of Raju et al. (2021) with a fixed budget ``B = ceil(r N)``, weights 1:

    * ``"random"``: B uniformly at random each epoch (``ratio=1``: full data);
    * ``"egreedy"``: the top ``(1 - eps_greedy) B`` by the EMA loss, the rest uniformly from the others;
    * ``"ucb"``: the top B by ``mean + c * sd`` of the EMA loss (``ema`` the decay; unseen samples first).
    """

    def __init__(self, n: int, *, ratio: float = 0.5, delta: float = 0.875, epochs: int, seed: int = 0,
                 policy: Literal["random", "egreedy", "ucb"] = "random", eps_greedy: float = 0.1, c: float = 1.0,
                 ema: float = 0.9, init_loss: float = 3.0):
        check_schedule(ratio=ratio, delta=delta, epochs=epochs)
        if policy not in ("random", "egreedy", "ucb"):
            raise SelectAugmentError(f"policy must be 'random', 'egreedy' or 'ucb', got {policy!r}")
        if not 0.0 <= eps_greedy <= 1.0:
            raise SelectAugmentError(f"eps_greedy must be in [0, 1], got {eps_greedy!r}")
        if not (math.isfinite(c) and c >= 0):
            raise SelectAugmentError(f"c must be a finite number >= 0, got {c!r}")
        if not 0.0 <= ema < 1.0:
            raise SelectAugmentError(f"ema must be in [0, 1), got {ema!r}")
        super().__init__(n, delta=delta, epochs=epochs, seed=seed, init_loss=init_loss)
        self.ratio, self.policy, self.eps_greedy, self.c, self.ema = float(ratio), policy, eps_greedy, c, ema
        self.budget = math.ceil(self.ratio * self.n)
        self.mean = np.full(self.n, float(init_loss))
        self.var = np.zeros(self.n)

    def _record(self, idx: np.ndarray, val: np.ndarray) -> None:
        super()._record(idx, val)
        d = val - self.mean[idx]
        self.mean[idx] += (1 - self.ema) * d
        self.var[idx] = self.ema * (self.var[idx] + (1 - self.ema) * d * d)

    def _select(self, epoch: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        ids, b = np.arange(self.n), self.budget
        if self.policy == "random" or b >= self.n:
            chosen = rng.choice(self.n, size=b, replace=False)
            return chosen, np.ones(b)
        if self.policy == "egreedy":
            n_greedy = int(round((1 - self.eps_greedy) * b))
            tie = rng.random(self.n)
            order = np.lexsort((tie, -self.mean))  # by EMA loss, descending; random among ties
            top = order[:n_greedy]
            rest = np.setdiff1d(ids, top)
            extra = rng.choice(rest, size=b - n_greedy, replace=False)
            return np.concatenate([top, extra]), np.ones(b)
        ucb = np.where(self.seen, self.mean + self.c * np.sqrt(self.var), np.inf)
        order = np.lexsort((rng.random(self.n), -ucb))
        return order[:b], np.ones(b)


class GatedSelector(_EpochSampler):
    """Any baseline selector given the method's noise gate: in the pruning epochs ``inner`` (built on the ``|P|``
    gated-in samples ``P = {i : g_i = 1}``, local ids ``0..|P|-1``) chooses ``S_t`` within ``P``; in the annealing
    epochs every sample is used with weight 1, exactly as :class:`DynamicSelector` with ``use_gate=True`` does. The
    losses of the samples in ``P`` are passed on to ``inner`` (its loss memory), so InfoBatch's mean-loss rule and the
    EMA-loss policies see the same pool the method sees. Give ``inner`` the budget ``ceil(r N)`` of the whole data set
    (:func:`pool_ratio`) so that the cost is matched to the method's.

    Args:
        inner: a selector over the gated-in samples (``inner.n == gate.sum()``), e.g. :class:`LossPolicySelector`
            or :class:`InfoBatch`.
        gate: boolean ``[N]`` (``Scores.gate``).
    """

    def __init__(self, inner: _EpochSampler, gate: Any):
        g = np.asarray(gate, dtype=bool)
        if g.ndim != 1 or not g.any():
            raise SelectAugmentError("gate must be a 1-D boolean array that keeps at least one sample")
        if not isinstance(inner, _EpochSampler) or inner.n != int(g.sum()):
            raise SelectAugmentError(f"inner must be a selector over the {int(g.sum())} gated-in samples, "
                                     f"got n={getattr(inner, 'n', None)}")
        super().__init__(len(g), delta=inner.delta, epochs=inner.epochs, seed=inner.seed)
        self.inner, self.pool = inner, np.flatnonzero(g)
        self._local = np.full(self.n, -1, dtype=np.int64)
        self._local[self.pool] = np.arange(len(self.pool))

    def pruning(self, epoch: int) -> bool:
        return self.inner.pruning(epoch)

    def _select(self, epoch: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        self.inner.set_epoch(epoch)
        return self.pool[self.inner.selected], self.inner._w[self.inner.selected]

    def _record(self, idx: np.ndarray, val: np.ndarray) -> None:
        super()._record(idx, val)
        loc = self._local[idx]
        mask = loc >= 0
        if mask.any():
            self.inner._record(loc[mask], val[mask])


def pool_ratio(ratio: float, n: int, pool: int) -> float:
    """The ratio that gives a selector over ``pool`` samples the budget ``ceil(ratio n)`` of the whole data set
    (``min(1, ...)``; exact under ``ceil``)."""
    budget = math.ceil(ratio * n)
    return 1.0 if budget >= pool else (budget - 0.5) / pool


def successive_sampling_inclusion(p: Any, m: int) -> tuple[np.ndarray, dict[frozenset, float]]:
    """Exact first-order inclusion probabilities ``pi [n]`` of drawing ``m`` of ``n`` items without replacement with
    probabilities ``∝ p`` (successive sampling, which Gumbel-top-k / :func:`bottom_k` draws), and the probability of
    each unordered set, by enumerating every ordered draw (``n <= 10``: for tests and small checks)."""
    import itertools

    p = np.asarray(p, dtype=np.float64)
    n = len(p)
    if n > 10 or not 0 <= m <= n or (p <= 0).any():
        raise SelectAugmentError(f"needs n <= 10, 0 <= m <= n and p > 0 (got n={n}, m={m})")
    pi = np.zeros(n)
    sets: dict[frozenset, float] = {}
    for seq in itertools.permutations(range(n), m):
        pr, left = 1.0, p.sum()
        for i in seq:
            pr *= p[i] / left
            left -= p[i]
        key = frozenset(seq)
        sets[key] = sets.get(key, 0.0) + pr
        pi[list(seq)] += pr
    return pi, sets
