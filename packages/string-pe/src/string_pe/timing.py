"""Cost of each encoding relative to plain RoPE (paper Table 1: Cayley O(d³) training, Circulant O(d log d)).

Measured per attention layer at head dim ``d`` (64 in the paper): (a) the encoding alone, forward and
forward + backward, on ``q, k`` of shape ``(B, H, N, d)``; (b) a whole :class:`~string_pe.attention.Attention`
layer, training step (forward + backward) and inference (no grad), including folded Cayley-STRING (``P`` merged
into ``W_q, W_k``). Each number is the minimum over interleaved repeats of the *process CPU time* of one call
(``time.process_time``, all threads): on a shared machine wall time mostly measures the other processes; on an
idle machine the two agree.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import torch

from string_pe.attention import Attention, make_encoding

VARIANTS = ("rope-axial", "rope-mixed", "cayley", "circulant")


def _times(fn: Callable[[], object], repeats: int, warmup: int = 2) -> list[float]:
    for _ in range(warmup):
        fn()
    out = []
    for _ in range(repeats):
        t0 = time.process_time()
        fn()
        out.append(time.process_time() - t0)
    return out


def benchmark(*, head_dim: int = 64, num_heads: int = 4, tokens: int = 256, batch: int = 8, coord_dim: int = 2,
              repeats: int = 20, seed: int = 0, samples: dict[str, dict[str, list[float]]] | None = None,
              layers: bool = True) -> dict[str, dict[str, float]]:
    """Seconds per call for every variant: ``{variant: {"enc_fwd", "enc_fwd_bwd", "layer_train", "layer_infer"}}``
    plus ``"cayley-folded"`` (layer inference only, after ``Attention.fold_``). If ``samples`` is a dict, it is
    filled with the time of every repeat in the same layout (``samples[variant][metric][i]`` is repeat ``i``, so
    the ratio of two variants at the same ``i`` compares calls made one right after the other).

    All measurements are interleaved round-robin (every repeat times every variant once) after a common warm-up, so
    that load changes on a shared machine and first-call effects hit all variants alike; the minimum is reported.
    ``layers=False`` times the encodings only (``enc_fwd``, ``enc_fwd_bwd``).
    """
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(batch, num_heads, tokens, head_dim, generator=g)
    k = torch.randn(batch, num_heads, tokens, head_dim, generator=g)
    pos = torch.rand(batch, tokens, coord_dim, generator=g) * 16
    dim = head_dim * num_heads
    x = torch.randn(batch, tokens, dim, generator=g)
    fns: dict[tuple[str, str], Callable[[], object]] = {}
    for name in VARIANTS:
        torch.manual_seed(seed)
        enc = make_encoding(name, head_dim=head_dim, coord_dim=coord_dim, num_heads=num_heads)
        qg, kg = q.clone().requires_grad_(True), k.clone().requires_grad_(True)

        def enc_fwd(enc=enc):
            with torch.no_grad():
                enc(q, k, pos)

        def enc_fwd_bwd(enc=enc, qg=qg, kg=kg):
            a, b = enc(qg, kg, pos)
            (a.sum() + b.sum()).backward()

        fns.update({(name, "enc_fwd"): enc_fwd, (name, "enc_fwd_bwd"): enc_fwd_bwd})
        if not layers:
            continue
        layer = Attention(dim=dim, num_heads=num_heads, encoding=name, coord_dim=coord_dim)

        def layer_train(layer=layer):
            layer(x, pos).sum().backward()

        def layer_infer(layer=layer):
            with torch.no_grad():
                layer(x, pos)

        fns.update({(name, "layer_train"): layer_train, (name, "layer_infer"): layer_infer})
        if name == "cayley":
            folded = Attention(dim=dim, num_heads=num_heads, encoding=name, coord_dim=coord_dim)
            folded.load_state_dict(layer.state_dict())
            folded.fold_()

            def folded_infer(folded=folded):
                with torch.no_grad():
                    folded(x, pos)

            fns[("cayley-folded", "layer_infer")] = folded_infer
    for fn in fns.values():  # common warm-up
        fn()
        fn()
    times: dict[tuple[str, str], list[float]] = {key: [] for key in fns}
    for _ in range(repeats):
        for key, fn in fns.items():
            t0 = time.process_time()
            fn()
            times[key].append(time.process_time() - t0)
    out: dict[str, dict[str, float]] = {}
    for (name, metric), ts in times.items():
        out.setdefault(name, {})[metric] = min(ts)
        if samples is not None:
            samples.setdefault(name, {})[metric] = list(ts)
    return out


def parameter_cost_scaling(*, dims: tuple[int, ...] = (16, 32, 64, 128, 256), num_heads: int = 4, repeats: int = 10,
                           seed: int = 0,
                           samples: dict[int, dict[str, list[float]]] | None = None) -> dict[int, dict[str, float]]:
    """Seconds per training step spent on the token-independent part of each STRING, fwd+bwd, vs head dim ``d``:
    Cayley's ``P = solve(I + S, I − S)`` (O(d³), Table 1) and Circulant's rates ``2 Im rfft(c)`` (O(d log d)).
    Minimum over ``repeats``; ``samples`` (if a dict) gets every repeat's time."""
    from string_pe.cayley import CayleySTRING
    from string_pe.circulant import CirculantSTRING

    out: dict[int, dict[str, float]] = {}
    for d in dims:
        torch.manual_seed(seed)
        cay = CayleySTRING(head_dim=d, num_heads=num_heads, s_init_std=0.1)
        circ = CirculantSTRING(head_dim=d, num_heads=num_heads)
        ts = {"cayley_P": _times(lambda cay=cay: cay.orthogonal().sum().backward(), repeats),
              "circulant_rates": _times(lambda circ=circ: circ.rates().sum().backward(), repeats)}
        out[d] = {k: min(v) for k, v in ts.items()}
        if samples is not None:
            samples[d] = ts
    return out
