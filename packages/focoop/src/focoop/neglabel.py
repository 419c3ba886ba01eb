"""NegLabel-style choice of the negative words bound to FOCoOp's OOD prompts.

Each candidate word w (nouns with the template "The nice {}.", adjectives with "This is a {} photo.", as in the
official code) is scored by the 95th percentile of its CLIP cosine similarity to the ID class names (template
"The nice {}."); the K words with the **lowest** scores (farthest from every ID class) are kept, split between
adjectives and nouns in proportion to the sizes of the two lists. Words that overlap an ID class name are rejected.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import torch
import torch.nn.functional as F

from focoop.errors import FOCoOpConfigError
from focoop.setup import check_words

NOUN_TEMPLATE = "The nice {}."
ADJ_TEMPLATE = "This is a {} photo."


def word_scores(encode_text: Callable[[list[str]], torch.Tensor], classnames: Sequence[str], words: Sequence[str],
                *, template: str, class_template: str = NOUN_TEMPLATE) -> np.ndarray:
    """95th percentile over classes of cos(word, class) for each word; shape (n_words,)."""
    with torch.no_grad():
        cls = F.normalize(encode_text([class_template.format(c) for c in classnames]).float(), dim=-1)
        w = F.normalize(encode_text([template.format(x) for x in words]).float(), dim=-1)
    sim = (w @ cls.T).numpy()  # (n_words, C)
    return np.percentile(sim, 95, axis=1)


def select_negative_words(encode_text: Callable[[list[str]], torch.Tensor], classnames: Sequence[str], *,
                          nouns: Sequence[str], adjectives: Sequence[str] = (), k: int,
                          noun_template: str = NOUN_TEMPLATE, adj_template: str = ADJ_TEMPLATE) -> list[str]:
    """The ``k`` least ID-like words (nouns first, then adjectives), NegLabel-style."""
    nouns = list(dict.fromkeys(nouns))
    adjectives = [a for a in dict.fromkeys(adjectives) if a not in nouns]
    check_words(nouns + adjectives, classnames)
    total = len(nouns) + len(adjectives)
    if k < 1 or k > total:
        raise FOCoOpConfigError(f"n_ood (OOD prompts) must be in [1, {total}] (the size of the word pool), got {k}")
    k_adj = int(round(k * len(adjectives) / total))
    k_noun = k - k_adj
    out = []
    for pool, kk, tpl in ((nouns, k_noun, noun_template), (adjectives, k_adj, adj_template)):
        if kk:
            s = word_scores(encode_text, classnames, pool, template=tpl, class_template=noun_template)
            out += [pool[i] for i in np.argsort(s, kind="stable")[:kk]]
    return out
