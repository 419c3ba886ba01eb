"""Experiments 3 and 4: the linear-attention relative-position property and folding Cayley's P into W_q, W_k."""

from __future__ import annotations

import copy
from pathlib import Path

from icml25.claims import Claim
from icml25.experiment import Section

from string_pe.config import Config
from string_pe.reproduce.common import (
    LABEL,
)


# ---------------------------------------------------------------------------------------------- 3. linear attention
def linear_attention(cfg: Config, seeds: list[int], out: Path) -> Section:
    import torch

    from string_pe.attention import make_encoding
    from string_pe.linear import linear_scores

    sec = Section("linear attention")
    diffs: dict[tuple[str, str], list[float]] = {}
    for s in seeds:
        g = torch.Generator().manual_seed(s)
        h, d, m, n = 2, 8, 16, 12
        q = torch.randn(2, h, n, d, generator=g, dtype=torch.float64)
        k = torch.randn(2, h, n, d, generator=g, dtype=torch.float64)
        pos = torch.rand(2, n, 2, generator=g, dtype=torch.float64) * 8
        shift = torch.randn(2, 1, 2, generator=g, dtype=torch.float64) * 20
        W = torch.randn(h, m, d, generator=g, dtype=torch.float64)
        for name in ("rope-mixed", "cayley", "circulant"):
            torch.manual_seed(s)
            kw = {"s_init_std": 0.3} if name == "cayley" else {}
            for where, dim in (("features", m), ("inputs", d)):
                torch.manual_seed(s)
                enc = make_encoding(name, head_dim=dim, coord_dim=2, num_heads=h, **kw).double()
                with torch.no_grad():
                    a = linear_scores(q, k, pos, enc, W, where=where)
                    b = linear_scores(q, k, pos + shift, enc, W, where=where)
                diffs.setdefault((name, where), []).append(float((a - b).abs().max() / a.abs().max()))
    paper = "STRING applies to efficient (kernelised) attention: R(r) acts on the features φ(q), φ(k)"
    rows = []
    for name in ("rope-mixed", "cayley", "circulant"):
        sec.add(Claim.threshold(
            claim=f"Linear attention, {LABEL[name]} on the features φ(q), φ(k): scores unchanged under translation",
            metric="max relative |Δ score| under a random global translation (float64)",
            ours=diffs[(name, "features")], threshold=1e-9, higher_is_better=False, kind="property", paper=paper,
            note="⟨R(r_i)φ(q), R(r_j)φ(k)⟩ = ⟨φ(q), R(r_j − r_i)φ(k)⟩"))
        sec.add(Claim.threshold(
            claim=f"Linear attention, {LABEL[name]} before the feature map: scores change under translation",
            metric="max relative |Δ score| under a random global translation (float64)",
            ours=diffs[(name, "inputs")], threshold=1e-3, higher_is_better=True, kind="property", paper=paper,
            note="negative control: φ(x) = ReLU(Wx)/√m is not rotation-equivariant, so φ(R(r_i)q)ᵀφ(R(r_j)k) is "
                 "not a function of r_j − r_i"))
        rows.append([LABEL[name], f"{max(diffs[(name, 'features')]):.2g}", f"{min(diffs[(name, 'inputs')]):.2g}"])
    sec.table("Linear (ReLU-Performer) attention: relative change of the scores under a global translation",
              ["encoding", "on the features (max over seeds)", "before the feature map (min over seeds)"], rows)
    return sec


# ---------------------------------------------------------------------------------------------- 4. folding
def folding(cfg: Config, seeds: list[int], out: Path) -> Section:
    import torch

    from string_pe.attention import Attention

    sec = Section("folding")
    fold_err = []
    for s in seeds:  # folding P into W_q, W_k gives the same layer (float64, non-trivial S)
        torch.manual_seed(s)
        layer = Attention(dim=64, num_heads=4, encoding="cayley", coord_dim=2,
                          encoding_kwargs={"s_init_std": 0.3}).double()
        folded = copy.deepcopy(layer).fold_()
        x = torch.randn(2, 32, 64, dtype=torch.float64)
        pos = torch.rand(2, 32, 2, dtype=torch.float64) * 8
        with torch.no_grad():
            fold_err.append(float((folded(x, pos) - layer(x, pos)).abs().max()))
    sec.add(Claim.threshold(
        claim="Folding Cayley's P into W_q, W_k leaves the attention layer unchanged",
        metric="max |Δ output| folded vs unfolded layer, random S (std 0.3), float64", ours=fold_err,
        threshold=1e-9, higher_is_better=False, kind="property",
        paper="Sec. 3.3: P can be folded into W_q, W_k at inference",
        note="(RoPE(r)P W_q x)ᵀ(RoPE(r')P W_k x') = RoPE logits with W_q' = P W_q, W_k' = P W_k"))
    return sec
