"""Part of the reproduction: see ``private_robust_align.reproduce``."""

from __future__ import annotations

from pathlib import Path

from icml25.experiment import Section

from private_robust_align.config import Config
from private_robust_align.reproduce.common import _selections


# ---------------------------------------------------------------------------------------------------- 1. tuning
def tuning(cfg: Config, seeds: list[int], out: Path) -> Section:
    from icml25.tuning import selections_table

    sec = Section("tuning")
    sel = _selections(cfg, seeds[0])
    cols, rows = selections_table(sel)
    sec.table(f"κ of the ridge λ = κ/n chosen on a privatized validation split (ε = 0.5, α = 0, n = {cfg.n_val} train / {cfg.n_val} "
              "validation, debiased validation log-loss, lower is better)", cols, rows)
    sec.notes.append("tuning: " + "; ".join(s.note() for s in sel.values()) + "; the sklearn oracle (clean labels, "
                     "penalty=None) has no hyper-parameter, as the issue specifies.")
    return sec
