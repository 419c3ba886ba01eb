"""Autoregressive rollout shared by the slot dynamics (OCVP, key/value cache) and the holistic GRU (hidden state)."""

from __future__ import annotations

import torch

from sold.errors import SoldError


def autoregressive_rollout(model, context: torch.Tensor, actions: torch.Tensor, horizon: int, *,
                           cache: bool) -> torch.Tensor:
    """``horizon`` predictions after ``context [B, c, ...]`` → ``[B, horizon, ...]``.

    ``actions [B, >= c + horizon − 1, A]``: the action after each context step and after each predicted step but the
    last. With ``cache`` the model's ``step(new, actions, state) -> (predictions, state)`` sees each new step once and
    carries its state (keys and values, or a GRU state); without, ``model(history, actions)`` re-runs the whole
    history at every step. Both give the same outputs (tested per model).
    """
    c = context.shape[1]
    if horizon < 1:
        raise SoldError(f"horizon must be >= 1, got {horizon}")
    if actions.ndim != 3 or actions.shape[1] < c + horizon - 1:
        raise SoldError(f"actions must have shape [B, >= context + horizon − 1 = {c + horizon - 1}, A], "
                        f"got {tuple(actions.shape)}")
    preds: list[torch.Tensor] = []
    if cache:
        pred, state = model.step(context, actions[:, :c])
        preds.append(pred[:, -1])
        for h in range(1, horizon):
            pred, state = model.step(preds[-1][:, None], actions[:, c + h - 1: c + h], state)
            preds.append(pred[:, -1])
        return torch.stack(preds, 1)
    hist = context
    for h in range(horizon):
        nxt = model(hist, actions[:, : c + h])[:, -1]
        preds.append(nxt)
        hist = torch.cat([hist, nxt[:, None]], 1)
    return torch.stack(preds, 1)


class GrowingHistory:
    """``model(*sequences)[:, -1]`` for sequences ``[B, T, ...]`` that grow by one step per call, through the model's
    incremental ``step(*new_steps, state) -> (outputs, state)`` (a key/value cache, a GRU state): the first call feeds
    the whole sequences, each later call only their new last step. Same outputs and gradients as recomputing the whole
    history, as :meth:`sold.dreamer.ImaginationLearner.imagine` would (tested for the dynamics and the slot
    aggregator)."""

    def __init__(self, model):
        self.model, self.state, self.t = model, None, 0

    def __call__(self, *sequences: torch.Tensor) -> torch.Tensor:
        t = sequences[0].shape[1]
        if self.state is None:
            out, self.state = self.model.step(*sequences)
        elif t == self.t + 1:
            out, self.state = self.model.step(*(s[:, -1:] for s in sequences), self.state)
        else:
            raise SoldError(f"{type(self).__name__}: the history must grow by one step per call ({self.t} → {t} steps)")
        self.t = t
        return out[:, -1]
