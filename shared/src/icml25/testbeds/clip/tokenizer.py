"""Tiny CLIP test bed: the word tokenizer over the compact vocabulary."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    import torch
from icml25.testbeds.clip.data import CLASSES

_WORDS = (
    # template words
    "a", "an", "the", "photo", "picture", "drawing", "image", "rendering", "sketch", "of", "this", "is", "there",
    "in", "on", "with", "and", "shape", "object", "thing", "texture", "pattern", "background", "x", ".", ",",
    # sizes and other adjectives
    "small", "medium", "large", "big", "tiny", "bright", "dark", "blurry", "noisy", "faded", "low", "contrast",
    # colours (more than COLORS so that prompts may name unseen colours)
    "red", "green", "blue", "yellow", "magenta", "cyan", "orange", "white", "black", "gray", "purple", "pink",
    "brown",
    # shapes
    *CLASSES,
    # textures
    "striped", "checkered", "dotted", "wavy", "stripes", "checkerboard", "dots", "waves", "grid",
    # other objects (never in captions; e.g. negative labels for OOD scoring)
    "dog", "cat", "car", "tree", "house", "bird", "flower", "person", "boat", "chair", "cloud", "fish",
)  # fmt: skip
PAD_TOKEN, SOT_TOKEN, EOT_TOKEN = "<pad>", "<start_of_text>", "<end_of_text>"
VOCAB: tuple[str, ...] = (PAD_TOKEN, SOT_TOKEN, *dict.fromkeys(_WORDS), EOT_TOKEN)
_WORD_RE = re.compile(r"[a-z]+|[.,]|\S")



# ================================================================================================== tokenizer
class WordTokenizer:
    """Word-level tokenizer for the tiny CLIP's text tower (the ``open_clip.tokenize`` call signature).

    ``tokenizer(texts) -> LongTensor (n, context_length)``: ``[<start_of_text>, w_1 .. w_k, <end_of_text>, 0 ...]``,
    lower-cased, words split at spaces and before ``.``/``,``. ``<end_of_text>`` has the largest id, so
    ``argmax(tokens, -1)`` is its position (open_clip's ``pool_type='argmax'``).
    """

    def __init__(self, *, vocab: Sequence[str] = VOCAB, context_length: int = 16):
        self.vocab = tuple(vocab)
        if self.vocab[0] != PAD_TOKEN or self.vocab[1] != SOT_TOKEN or self.vocab[-1] != EOT_TOKEN:
            raise ValueError("vocab must start with <pad>, <start_of_text> and end with <end_of_text>")
        self.encoder = {w: i for i, w in enumerate(self.vocab)}
        self.context_length = int(context_length)
        self.pad_id, self.sot_id, self.eot_id = 0, 1, len(self.vocab) - 1

    def __len__(self) -> int:
        return len(self.vocab)

    def words(self, text: str) -> list[str]:
        words = _WORD_RE.findall(text.lower())
        unknown = [w for w in words if w not in self.encoder or w in (PAD_TOKEN, SOT_TOKEN, EOT_TOKEN)]
        if unknown:
            raise ValueError(
                f"text {text!r} has word(s) {unknown} outside the tiny-CLIP vocabulary "
                f"(icml25.testbeds.clip.VOCAB, {len(self.vocab)} tokens)"
            )
        return words

    def encode(self, text: str) -> list[int]:
        return [self.sot_id, *(self.encoder[w] for w in self.words(text)), self.eot_id]

    def decode(self, ids: Iterable[int]) -> str:
        out = [self.vocab[int(i)] for i in ids if int(i) not in (self.pad_id, self.sot_id, self.eot_id)]
        return " ".join(out).replace(" .", ".").replace(" ,", ",")

    def __call__(self, texts: str | Sequence[str], context_length: int | None = None) -> torch.Tensor:
        import torch

        if isinstance(texts, str):
            texts = [texts]
        L = self.context_length if context_length is None else int(context_length)
        out = torch.zeros((len(texts), L), dtype=torch.long)
        for i, t in enumerate(texts):
            ids = self.encode(t)
            if len(ids) > L:
                raise ValueError(
                    f"prompt {t!r} needs {len(ids)} tokens (with start/end) but context_length={L}; shorten it"
                )
            out[i, : len(ids)] = torch.tensor(ids)
        return out


def tokenize(texts: str | Sequence[str], context_length: int = 16) -> torch.Tensor:
    """``WordTokenizer(context_length=context_length)(texts)``: LongTensor ``(n, context_length)``."""
    return WordTokenizer(context_length=context_length)(texts)


