"""Instruction grouping of LCIA: retrain an existing LoRA group or expand with a new one, by TF-IDF similarity.

A codebook holds LoRA groups ``1, 2, ...``, each with the instruction templates it was trained on. For a new task
with templates ``N`` and a group with templates ``O`` the score is the mean pairwise similarity::

    score(N, O) = mean_{n ∈ N, o ∈ O} cos(tfidf(n), tfidf(o))

where the TF-IDF vectorizer (English stop words, smoothed idf ``ln((1 + 2)/(1 + df)) + 1``, L2-normalised rows)
is fitted on each *pair* of two strings, as in the official ``instruct/LoRASelect.py``. If ``max score ≥ τ`` the best
group is **retrained** (with DEMA on) and the new templates are appended to it; otherwise the codebook **expands**
with group ``len(groups) + 1`` (a new adapter, DEMA off). At test time an instruction goes to the best group if its
score is ``≥ τ``, else to the latest group. τ = 0.9 for fixed templates, 0.3 for diverse ones (paper).

The TF-IDF is written here in numpy-free Python with scikit-learn's exact conventions (token pattern
``(?u)\\b\\w\\w+\\b``, lower-casing, scikit-learn's English stop-word list) so that scikit-learn is not a run-time
dependency; the tests check it against ``sklearn.feature_extraction.text.TfidfVectorizer`` when it is installed.
``aggregate="best_match"`` (non-official) scores a group by the mean over new templates of their best match.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lcia.errors import LciaError
from lcia.stopwords import ENGLISH_STOP_WORDS

_TOKEN = re.compile(r"(?u)\b\w\w+\b")
AGGREGATES = ("mean_pair", "best_match")


def tokens(text: str) -> list[str]:
    """Lower-cased word tokens of two or more characters, English stop words removed (scikit-learn's analyzer)."""
    return [t for t in _TOKEN.findall(text.lower()) if t not in ENGLISH_STOP_WORDS]


def check_template(text: Any, what: str = "template") -> str:
    """``text`` if it is a string with at least one non-stop-word token, else a clear :class:`LciaError`."""
    if not isinstance(text, str) or not text.strip():
        raise LciaError(f"{what} must be a non-empty string, got {text!r}")
    if not tokens(text):
        raise LciaError(f"{what} {text!r} has no words left after removing English stop words and 1-letter tokens;"
                        " give an instruction with at least one content word")
    return text


def tfidf_similarity(a: str, b: str) -> float:
    """Cosine similarity of the TF-IDF vectors of ``a`` and ``b`` with the vectorizer fitted on ``[a, b]`` only.

    Symmetric, in [0, 1]; 1 for identical token bags, 0 for disjoint vocabularies.
    """
    ta, tb = Counter(tokens(check_template(a))), Counter(tokens(check_template(b)))
    vocab = set(ta) | set(tb)
    idf = {t: math.log(3.0 / (1.0 + (t in ta) + (t in tb))) + 1.0 for t in vocab}
    va = {t: c * idf[t] for t, c in ta.items()}
    vb = {t: c * idf[t] for t, c in tb.items()}
    na = math.sqrt(sum(v * v for v in va.values()))
    nb = math.sqrt(sum(v * v for v in vb.values()))
    dot = sum(v * vb.get(t, 0.0) for t, v in va.items())
    return min(1.0, max(0.0, dot / (na * nb)))


def group_score(new: Sequence[str], old: Sequence[str], *, aggregate: str = "mean_pair") -> float:
    """Similarity of a set of new templates to a group's templates (``mean_pair``: the released mean over pairs)."""
    sims = [[tfidf_similarity(n, o) for o in old] for n in new]
    if aggregate == "mean_pair":
        return sum(sum(r) for r in sims) / (len(new) * len(old))
    if aggregate == "best_match":
        return sum(max(r) for r in sims) / len(new)
    raise LciaError(f"aggregate must be one of {AGGREGATES}, got {aggregate!r}")


@dataclass
class Group:
    """One LoRA group of the codebook: its number (1-based), adapter name and instruction templates."""

    id: int
    templates: list[str] = field(default_factory=list)

    @property
    def adapter(self) -> str:
        return f"group{self.id}"


class InstructionRouter:
    """The codebook of LoRA groups: :meth:`assign` at training time, :meth:`route` at test time.

    Args:
        tau: similarity threshold τ in [0, 1]; ``score ≥ τ`` reuses (retrains) a group.
        aggregate: ``"mean_pair"`` (official) or ``"best_match"``.
    """

    def __init__(self, *, tau: float, aggregate: str = "mean_pair") -> None:
        if isinstance(tau, bool) or not isinstance(tau, (int, float)) or not 0.0 <= float(tau) <= 1.0:
            raise LciaError(f"tau must be a number in [0, 1], got {tau!r}")
        if aggregate not in AGGREGATES:
            raise LciaError(f"aggregate must be one of {AGGREGATES}, got {aggregate!r}")
        self.tau = float(tau)
        self.aggregate = aggregate
        self.groups: list[Group] = []

    def _templates(self, templates: Sequence[str] | str) -> list[str]:
        if isinstance(templates, str):
            templates = [templates]
        templates = list(templates)
        if not templates:
            raise LciaError("templates must hold at least one instruction template (got an empty instruction set)")
        out: list[str] = []
        for i, t in enumerate(templates):
            check_template(t, f"templates[{i}]")
            if t not in out:
                out.append(t)
        return out

    def scores(self, templates: Sequence[str] | str) -> list[float]:
        """Score of ``templates`` against every group, in group order."""
        new = self._templates(templates)
        return [group_score(new, g.templates, aggregate=self.aggregate) for g in self.groups]

    def assign(self, templates: Sequence[str] | str) -> tuple[int, str]:
        """Decide for a new task: ``(group, "retrain")`` if its best score is ``≥ τ`` (templates appended to that
        group), else ``(len(groups) + 1, "expand")`` with a new group. The first task always makes group 1."""
        new = self._templates(templates)
        scores = self.scores(new)
        if scores:
            best = max(range(len(scores)), key=lambda i: (scores[i], -i))
            if scores[best] >= self.tau:
                g = self.groups[best]
                g.templates += [t for t in new if t not in g.templates]
                return g.id, "retrain"
        self.groups.append(Group(id=len(self.groups) + 1, templates=new))
        return self.groups[-1].id, "expand"

    def route(self, instruction: str) -> int:
        """Group of a test instruction: the best-scoring group if its score is ``≥ τ``, else the latest group."""
        if not self.groups:
            raise LciaError("the router has no groups yet: assign at least one task before routing")
        scores = self.scores([instruction])
        best = max(range(len(scores)), key=lambda i: (scores[i], -i))
        return self.groups[best].id if scores[best] >= self.tau else self.groups[-1].id

    # ------------------------------------------------------------------------------------------------ saving
    def to_dict(self) -> dict[str, Any]:
        return {"tau": self.tau, "aggregate": self.aggregate,
                "groups": [{"id": g.id, "adapter": g.adapter, "templates": list(g.templates)} for g in self.groups]}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> InstructionRouter:
        try:
            r = cls(tau=data["tau"], aggregate=data.get("aggregate", "mean_pair"))
            for i, g in enumerate(data["groups"]):
                if int(g["id"]) != i + 1:
                    raise LciaError(f"codebook groups must be numbered 1, 2, ...; group {i} has id {g['id']}")
                r.groups.append(Group(id=i + 1, templates=r._templates(g["templates"])))
        except (KeyError, TypeError) as exc:
            raise LciaError(f"codebook is missing or has a malformed field: {exc}") from None
        return r

    def save(self, path: str | Path) -> Path:
        from icml25.io import atomic_write_json

        atomic_write_json(Path(path), self.to_dict())
        return Path(path)

    @classmethod
    def load(cls, path: str | Path) -> InstructionRouter:
        from icml25.errors import read_json

        return cls.from_dict(read_json(path, what="codebook", required=("tau", "groups")))

    def __repr__(self) -> str:
        return f"InstructionRouter(tau={self.tau}, groups={[g.templates for g in self.groups]})"

