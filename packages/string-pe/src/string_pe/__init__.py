"""string-pe: Learning the RoPEs — Better 2D and 3D Position Encodings with STRING (Schenck et al., ICML 2025).

Public API (lazily imported, so ``import string_pe`` does not import torch):

* :class:`RoPEAxial`, :class:`RoPEMixed`, :class:`CayleySTRING`, :class:`CirculantSTRING` — position encodings with
  ``forward(q, k, positions)``; ``q, k``: ``(batch, heads, tokens, head_dim)``, ``positions``:
  ``(batch, tokens, coord_dim)``.
* :class:`Attention`, :func:`string_sdpa`, :func:`make_encoding` — drop-in attention.
* :class:`ViT` (2D patch coordinates or 3D from a depth map), :class:`PointSetClassifier`.
* :class:`PositionEncoding` (base class), :class:`PositionEncodingError` (a ``ValueError``).
"""

from __future__ import annotations

from icml25.lazy import lazy_exports

__version__ = "0.1.0"

__getattr__, __dir__, __all__ = lazy_exports(__name__, {
    "PositionEncoding": "string_pe.base",
    "PositionEncodingError": "string_pe.errors",
    "RoPEAxial": "string_pe.rope",
    "RoPEMixed": "string_pe.rope",
    "CayleySTRING": "string_pe.cayley",
    "CirculantSTRING": "string_pe.circulant",
    "Attention": "string_pe.attention",
    "string_sdpa": "string_pe.attention",
    "make_encoding": "string_pe.attention",
    "ENCODINGS": "string_pe.attention",
    "ViT": "string_pe.model",
    "PointSetClassifier": "string_pe.model",
    "FourierAPE": "string_pe.model",
    "Encoder": "string_pe.model",
})
