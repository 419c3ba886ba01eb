"""Text columns through a local sentence-transformers model (``relgnn[text]``): RelBench's ``text_embedded`` columns.

>>> embed = sentence_transformer_embedder("/models/all-MiniLM-L6-v2")  # doctest: +SKIP
>>> graph = build_graph(db, text_columns={"review": ["text"]}, text_embedder=embed)  # doctest: +SKIP

Nothing is downloaded: the model must be a local folder (``SentenceTransformer.save(path)`` or a Hub snapshot).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from relgnn.errors import ConfigError


def sentence_transformer_embedder(path: str | Path, *, batch_size: int = 64, device: str = "cpu"):
    """``texts -> (n, d)`` float32 embeddings of the sentence-transformers model saved in the folder ``path``."""
    p = Path(path).expanduser()
    if not p.is_dir():
        raise ConfigError(f"text model {str(path)!r} is not a local folder (a saved sentence-transformers model); "
                          "nothing is downloaded")
    if batch_size < 1:
        raise ConfigError(f"batch_size must be >= 1, got {batch_size}")
    try:
        from sentence_transformers import SentenceTransformer
    except ImportError as exc:  # the optional extra relgnn[text] is not installed
        raise ConfigError("text embeddings need sentence-transformers: pip install 'relgnn[text]'") from exc
    try:
        model = SentenceTransformer(str(p), device=device, local_files_only=True)
    except Exception as exc:
        msg = f"text model {str(path)!r} could not be loaded as a sentence-transformers model: {exc}"
        raise ConfigError(msg) from exc

    def embed(texts: list[str]) -> np.ndarray:
        return np.asarray(model.encode(list(texts), batch_size=batch_size, convert_to_numpy=True,
                                       show_progress_bar=False), dtype=np.float32)

    return embed
