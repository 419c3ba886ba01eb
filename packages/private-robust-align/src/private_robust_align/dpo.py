"""DPO on privatized preference pairs with trl: ``sigmoid`` (naive) vs ``robust`` (debiased, rDPO) on a tiny LM.

Randomized response on a preference pair ``(prompt, chosen, rejected)`` keeps the pair with probability
``e^ε/(1 + e^ε)`` and swaps chosen and rejected otherwise (:func:`rr_swap_pairs`). trl's
``DPOConfig(loss_type=["robust"], label_smoothing=ρ)`` then minimises, per pair with DPO margin
``m = β[(log π/π_ref)(chosen) − (log π/π_ref)(rejected)]``,

    [−(1 − ρ) log σ(m) + ρ log σ(−m)] / (1 − 2ρ) = log(1 + e^m) − ŷ m,   ŷ = (1 − ρ)/(1 − 2ρ)

(the debiased logistic loss of :mod:`private_robust_align.estimator` with label z = 1 for the released order),
while ``loss_type=["sigmoid"]`` is ordinary DPO on the swapped pairs, which treats the noisy order as the truth.

The demo task is generated (no download): prompts ``sort 52813=`` from :mod:`icml25.testbeds.lm`, the chosen
completion sorted ascending (the task's answer), the rejected one descending. A fresh tiny Llama is trained from
its initialisation (the reference model is a frozen copy of it); held-out pairs come from the test split of
prompts. Measured: held-out preference accuracy (margin > 0) and the implied win probability ``σ(m)`` of the true
chosen completion; label noise caps the naive loss's margins near ``log((1 − ρ)/ρ) = ε`` while the debiased loss
keeps pushing them up as clean DPO does.
"""

from __future__ import annotations

import copy
import math
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from private_robust_align.errors import PrivateRobustAlignError, check_epsilon
from private_robust_align.mechanism import flip_rate

LOSSES = ("sigmoid", "robust", "conservative")
"""trl DPO losses: ``sigmoid`` (plain DPO), ``robust`` (rDPO, ``label_smoothing = ρ``: the paper's debiased loss)
and ``conservative`` (cDPO, ``(1 − ρ)·softplus(−m) + ρ·softplus(m)``, the field's other answer to noisy preference
labels).

trl ≥ 1.x ignores ``label_smoothing`` in its ``sigmoid`` loss (only ``robust``, ``exo_pair`` and ``aot*`` read it), so
``loss_type="sigmoid", label_smoothing=ρ`` is plain DPO, not cDPO. cDPO is built from trl's own per-pair terms as
the weighted sum ``2(1 − ρ)·sigmoid − (1 − 2ρ)·robust`` (``loss_type=["sigmoid", "robust"]`` with those
``loss_weights``), which equals ``(1 − ρ)·softplus(−m) + ρ·softplus(m)`` exactly (see :func:`_trl_loss_args`)."""


def _trl_loss_args(loss: str, rho: float) -> dict[str, Any]:
    """``DPOConfig`` keyword arguments for one of :data:`LOSSES` at flip rate ``rho``.

    With ``s = softplus(−m)`` (trl ``sigmoid``) and ``r = [(1 − ρ)s − ρ·softplus(m)]/(1 − 2ρ)`` (trl ``robust``),
    ``2(1 − ρ)s − (1 − 2ρ)r = (1 − ρ)s + ρ·softplus(m)``: the conservative (label-smoothed) DPO loss."""
    if loss == "sigmoid":
        return {"loss_type": ["sigmoid"], "label_smoothing": 0.0}
    if loss == "robust":
        return {"loss_type": ["robust"], "label_smoothing": rho}
    if loss == "conservative":
        return {"loss_type": ["sigmoid", "robust"], "label_smoothing": rho,
                "loss_weights": [2.0 * (1.0 - rho), -(1.0 - 2.0 * rho)]}
    raise PrivateRobustAlignError(f"loss must be one of {LOSSES}, got {loss!r}")


def rr_swap_pairs(rows: list[dict[str, str]], *, epsilon: float,
                  rng: np.random.Generator) -> tuple[list[dict[str, str]], np.ndarray]:
    """Randomized response on ``prompt/chosen/rejected`` rows: each pair is swapped with probability ρ(ε).

    Returns the released rows and ``z [n]`` (1 = the released order is the true one)."""
    if not isinstance(rows, list) or not all(isinstance(r, dict) and {"prompt", "chosen", "rejected"} <= set(r)
                                             for r in rows):
        raise PrivateRobustAlignError("rows must be a list of dicts with keys prompt, chosen, rejected")
    rho = flip_rate(check_epsilon(epsilon))
    swap = rng.random(len(rows)) < rho
    out = [{**r, "chosen": r["rejected"], "rejected": r["chosen"]} if s else dict(r)
           for r, s in zip(rows, swap)]
    return out, (~swap).astype(np.int64)


PAIR_KEYS = ("prompt", "chosen", "rejected")


def load_pairs(path: str | Path) -> list[dict[str, str]]:
    """Preference pairs in trl's format from a ``.jsonl`` file (one JSON object a line) or a ``.json`` list, each
    with string fields ``prompt``, ``chosen``, ``rejected`` (other fields are kept). Errors name the file, the line
    and the field."""
    import json

    p = Path(path)
    if not p.is_file():
        raise PrivateRobustAlignError(f"--data {str(p)!r}: no such file")
    if p.suffix not in (".jsonl", ".json"):
        raise PrivateRobustAlignError(f"--data {str(p)!r}: expected a .jsonl or .json file of prompt/chosen/rejected "
                                      "rows")
    text = p.read_text(encoding="utf-8")
    try:
        if p.suffix == ".json":
            rows = json.loads(text)
            where = [f"item {i}" for i in range(len(rows))] if isinstance(rows, list) else []
        else:
            lines = [(i + 1, ln) for i, ln in enumerate(text.splitlines()) if ln.strip()]
            rows = [json.loads(ln) for _, ln in lines]
            where = [f"line {i}" for i, _ in lines]
    except json.JSONDecodeError as e:
        raise PrivateRobustAlignError(f"--data {str(p)!r}: not valid JSON ({e.msg}, line {e.lineno})") from None
    if not isinstance(rows, list) or not rows:
        raise PrivateRobustAlignError(f"--data {str(p)!r}: expected a non-empty list of prompt/chosen/rejected rows")
    for w, r in zip(where, rows):
        if not isinstance(r, dict):
            raise PrivateRobustAlignError(f"--data {str(p)!r} {w}: expected an object with {', '.join(PAIR_KEYS)}")
        for k in PAIR_KEYS:
            if not isinstance(r.get(k), str):
                raise PrivateRobustAlignError(f"--data {str(p)!r} {w}: field {k!r} must be a string, got "
                                              f"{type(r.get(k)).__name__}")
    return rows


def rr_swap_dataset(dataset: Any, *, epsilon: float, seed: int = 0) -> tuple[Any, np.ndarray]:
    """Randomized response on a ``datasets.Dataset`` in trl's preference format (``prompt/chosen/rejected``):
    each pair swapped with probability ρ(ε), the same draws as :func:`rr_swap_pairs` with
    ``np.random.default_rng(seed)``. Returns the released dataset (other columns kept) and ``z [n]`` (1 = the
    released order is the true one); train trl's ``DPOTrainer`` on it with ``loss_type="robust"`` and
    ``label_smoothing=flip_rate(epsilon)``."""
    missing = [k for k in PAIR_KEYS if k not in getattr(dataset, "column_names", [])]
    if missing:
        raise PrivateRobustAlignError(f"dataset: missing column(s) {missing}; trl preference data has "
                                      f"{', '.join(PAIR_KEYS)}")
    rho = flip_rate(check_epsilon(epsilon))
    swap = np.random.default_rng(seed).random(len(dataset)) < rho

    def _swap(row: dict[str, Any], i: int) -> dict[str, Any]:
        if swap[i]:
            return {"chosen": row["rejected"], "rejected": row["chosen"]}
        return {"chosen": row["chosen"], "rejected": row["rejected"]}

    return dataset.map(_swap, with_indices=True), (~swap).astype(np.int64)


def sort_pairs(n: int, *, seed: int, split: str, length: int = 5) -> list[dict[str, str]]:
    """``n`` pairs: ``sort ...=`` with chosen = ascending (correct), rejected = descending (ties skipped)."""
    from icml25.testbeds.lm import make_examples

    rows: list[dict[str, str]] = []
    k = 0
    while len(rows) < n:
        for ex in make_examples("sort", 2 * n, seed=seed + 7919 * k, length=length, split=split):
            if ex.answer != ex.answer[::-1] and len(rows) < n:
                rows.append({"prompt": ex.prompt, "chosen": ex.answer, "rejected": ex.answer[::-1]})
        k += 1
    return rows


def completion_logprobs(model: Any, tokenizer: Any, prompts: list[str], completions: list[str]) -> np.ndarray:
    """``log π(completion </s> | <s> prompt)`` summed over tokens, float64 ``[n]``."""
    import torch
    from icml25.testbeds.lm import Example, encode_examples

    batch = encode_examples(tokenizer, [Example(p, c) for p, c in zip(prompts, completions)])
    with torch.no_grad():
        logits = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).logits
    logp = torch.log_softmax(logits[:, :-1].double(), dim=-1)  # [B, T-1, V] predicts token t+1
    labels = batch["labels"][:, 1:]                           # [B, T-1]
    mask = labels != -100
    tok = torch.gather(logp, 2, labels.clamp_min(0).unsqueeze(-1)).squeeze(-1)
    return (tok * mask).sum(1).numpy()


def dpo_margins(model: Any, ref: Any, tokenizer: Any, rows: list[dict[str, str]], *, beta: float) -> np.ndarray:
    """``β[(log π/π_ref)(chosen) − (log π/π_ref)(rejected)]`` per row, float64 ``[n]``."""
    p = [r["prompt"] for r in rows]
    c, j = [r["chosen"] for r in rows], [r["rejected"] for r in rows]
    return beta * ((completion_logprobs(model, tokenizer, p, c) - completion_logprobs(ref, tokenizer, p, c))
                   - (completion_logprobs(model, tokenizer, p, j) - completion_logprobs(ref, tokenizer, p, j)))


def _trainer(model: Any, ref: Any, tokenizer: Any, rows: list[dict[str, str]], *, loss: str, rho: float,
             beta: float, steps: int, lr: float, batch_size: int, seed: int, out: str) -> Any:
    import datasets
    import transformers
    from datasets import Dataset
    from transformers.trainer_callback import PrinterCallback, ProgressCallback
    from trl import DPOConfig, DPOTrainer

    datasets.disable_progress_bars()
    transformers.logging.set_verbosity_error()

    if loss not in LOSSES:
        raise PrivateRobustAlignError(f"loss must be one of {LOSSES}, got {loss!r}")
    args = DPOConfig(output_dir=out, **_trl_loss_args(loss, rho), beta=beta,
                     max_steps=steps, learning_rate=lr, per_device_train_batch_size=batch_size, seed=seed,
                     data_seed=seed, report_to="none", save_strategy="no", use_cpu=True, logging_steps=10**9,
                     lr_scheduler_type="constant", warmup_steps=0, weight_decay=0.0, disable_tqdm=True,
                     dataloader_num_workers=0, gradient_checkpointing=False, bf16=False, fp16=False,
                     max_length=64)
    data = Dataset.from_list([{**r, "prompt": tokenizer.bos_token + r["prompt"]} for r in rows])
    trainer = DPOTrainer(model=model, ref_model=ref, args=args, train_dataset=data, processing_class=tokenizer)
    for cb in (PrinterCallback, ProgressCallback):
        trainer.remove_callback(cb)
    return trainer


@dataclass(frozen=True)
class DemoResult:
    """Held-out metrics of one DPO run."""

    loss: str
    accuracy: float
    win_probability: float
    mean_margin: float
    seconds: float
    val_loss: float | None = None
    """With ``validation=True``: the debiased (rDPO) log-loss of the margins on RR-swapped validation pairs, an
    unbiased estimate of the clean DPO loss that a learner who only sees privatized pairs can compute (its terms are
    unbounded below in the margin, so on a finite split it rewards large margins; see :func:`channel_nll`)."""
    val_channel_nll: float | None = None
    """With ``validation=True``: :func:`channel_nll` of the margins on the same RR-swapped validation pairs."""


def channel_nll(margins: np.ndarray, rho: float) -> float:
    """Mean negative log-likelihood of privatized preference labels under the model composed with the known RR
    channel: ``−mean log((1 − ρ)·σ(m) + ρ·σ(−m))`` for margins ``m`` in the released orientation.

    A proper scoring rule for the released labels (minimised in expectation at the true preference probability),
    bounded below by ``−log(1 − ρ)`` whatever the margin; ``ρ = 0`` gives the plain DPO log-loss."""
    m = np.asarray(margins, dtype=np.float64)
    if not 0.0 <= rho < 0.5:
        raise PrivateRobustAlignError(f"rho must lie in [0, 0.5), got {rho}")
    log_p, log_q = -np.logaddexp(0.0, -m), -np.logaddexp(0.0, m)  # log σ(m), log σ(−m)
    if rho == 0.0:
        return float(-np.mean(log_p))
    return float(-np.mean(np.logaddexp(math.log1p(-rho) + log_p, math.log(rho) + log_q)))


def run_dpo(loss: str, *, epsilon: float, n_train: int = 256, n_test: int = 128, steps: int = 60,
            lr: float = 2e-3, beta: float = 0.1, batch_size: int = 16, seed: int = 0, hidden: int = 32,
            clean: bool = False, validation: bool = False) -> DemoResult:
    """Train a fresh tiny LM with trl DPO (``loss`` = sigmoid | robust) on RR-swapped sort pairs; score held out.

    ``clean=True`` trains on the unswapped pairs (the oracle). The same seed gives the same swaps, data and
    initial weights for every loss, so runs are paired.
    """
    import torch
    from icml25.testbeds.lm import build_tiny_lm, build_tokenizer

    eps = check_epsilon(epsilon)
    if loss not in LOSSES:
        raise PrivateRobustAlignError(f"loss must be one of {LOSSES}, got {loss!r}")
    for name, v in (("n_train", n_train), ("n_test", n_test), ("steps", steps), ("batch_size", batch_size)):
        if not isinstance(v, int) or v < 1:
            raise PrivateRobustAlignError(f"{name} must be a positive integer, got {v!r}")
    if not (lr > 0 and beta > 0):
        raise PrivateRobustAlignError(f"lr and beta must be > 0, got lr={lr}, beta={beta}")
    tok = build_tokenizer()
    train = sort_pairs(n_train, seed=seed, split="train")
    test = sort_pairs(n_test, seed=10_000 + seed, split="test")
    released, _z = rr_swap_pairs(train, epsilon=eps, rng=np.random.default_rng([seed, 41]))
    rows = train if clean else released
    model = build_tiny_lm(tok, hidden_size=hidden, num_layers=2, num_heads=2, seed=seed)
    ref = copy.deepcopy(model).eval()
    torch.manual_seed(seed)
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        trainer = _trainer(model, ref, tok, rows, loss=loss, rho=0.0 if clean else flip_rate(eps), beta=beta,
                           steps=steps, lr=lr, batch_size=batch_size, seed=seed, out=tmp)
        trainer.train()
    seconds = time.perf_counter() - t0
    model.eval()
    m = dpo_margins(model, ref, tok, test, beta=beta)
    win = float(np.mean(1.0 / (1.0 + np.exp(-m))))
    val = val_channel = None
    if validation:
        rho = flip_rate(eps)
        released_val, _ = rr_swap_pairs(sort_pairs(n_test, seed=20_000 + seed, split="test"), epsilon=eps,
                                        rng=np.random.default_rng([seed, 43]))
        mv = dpo_margins(model, ref, tok, released_val, beta=beta)  # released orientation: label 1 for every pair
        yhat = (1.0 - rho) / (1.0 - 2.0 * rho) if rho < 0.5 else 1.0
        val = float(np.mean(np.logaddexp(0.0, mv) - yhat * mv))
        val_channel = channel_nll(mv, rho)
    return DemoResult(loss=loss, accuracy=float(np.mean(m > 0)), win_probability=win, mean_margin=float(m.mean()),
                      seconds=seconds, val_loss=val, val_channel_nll=val_channel)


def trl_losses(margins_seed: int = 0, *, rho: float, n: int = 4, beta: float = 0.1, conservative: bool = False):
    """trl's own per-pair ``sigmoid`` and ``robust`` losses on ``n`` single-pair batches of a randomly perturbed
    tiny LM (policy ≠ reference, so the margins are non-zero). Returns ``(margins, robust_losses)`` where the
    margins are recovered from trl's sigmoid loss ``s = log(1 + e^{−m})`` as ``m = −log(e^s − 1)``.
    ``conservative=True`` appends the cDPO losses of our ``conservative`` trainer (trl's ``sigmoid`` and ``robust``
    terms weighted as in :func:`_trl_loss_args`) as a third array."""
    import torch
    from icml25.testbeds.lm import build_tiny_lm, build_tokenizer

    tok = build_tokenizer()
    rows = sort_pairs(n, seed=margins_seed, split="train")
    ref = build_tiny_lm(tok, hidden_size=16, num_layers=1, num_heads=2, seed=margins_seed)
    model = copy.deepcopy(ref)
    g = torch.Generator().manual_seed(margins_seed)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.5 * torch.randn(p.shape, generator=g))
    margins, robust, cons = [], [], []
    with tempfile.TemporaryDirectory() as tmp:
        for r in rows:
            out = {}
            for loss in ("sigmoid", "robust") + (("conservative",) if conservative else ()):
                tr = _trainer(model, ref, tok, [r], loss=loss, rho=rho, beta=beta, steps=1, lr=1e-3,
                              batch_size=1, seed=0, out=tmp)
                batch = next(iter(tr.get_train_dataloader()))
                with torch.no_grad():
                    out[loss] = float(tr.compute_loss(tr.model, batch))
            margins.append(-math.log(math.expm1(out["sigmoid"])))
            robust.append(out["robust"])
            cons.append(out.get("conservative", math.nan))
    if conservative:
        return np.asarray(margins), np.asarray(robust), np.asarray(cons)
    return np.asarray(margins), np.asarray(robust)
