"""Stage A's experiment: SAVi's decomposition (the gate before stage B)."""

from __future__ import annotations

from pathlib import Path

from icml25.claims import Claim
from icml25.experiment import Section

from sold.config import Config
from sold.reproduce.common import ARI_GATE, ARI_GATE_NAME
from sold.reproduce.figures import _plot_decomposition
from sold.reproduce.results import _results


def decomposition(cfg: Config, seeds: list[int], out: Path) -> Section:
    """Stage A: SAVi's foreground ARI (the gate before stage B) vs the same SAVi before training."""
    sec = Section("decomposition")
    res = _results(cfg, seeds)
    ari = [r["ari"] for r in res]
    sec.add(Claim.gate(
        claim=ARI_GATE_NAME, metric="FG-ARI of SAVi masks vs true object masks (test episodes, frames 0–12)",
        ours=ari, controls={f"fixed gate {ARI_GATE}": ARI_GATE, "same SAVi untrained": [r["ari_untrained"] for r in res]},
        paired=True, paper="official README: check the decomposition before RL (no number)",
        note=f"{cfg.ae.pretrain_steps} steps, batch {cfg.ae.batch}×{cfg.ae.seq_len} frames, K={cfg.ae.num_slots}; "
             "no validation curve (fixed pre-training budget)"))
    sec.add(Claim.compare(
        claim="Pre-training improves SAVi's decomposition over its random initialisation",
        metric="FG-ARI (test episodes)", ours=ari, baseline=[r["ari_untrained"] for r in res],
        baseline_name="same SAVi before training", paper="—", kind="property", paired=True))
    sec.table(f"Stage A: autoencoders (same {cfg.ae.pretrain_steps} steps and batch; lr SAVi {cfg.ae.lr:g}, "
              f"holistic {cfg.ae.holistic_lr:g})",
              ["seed", "SAVi FG-ARI", "SAVi FG-ARI untrained", "SAVi recon MSE", "holistic recon MSE",
               "SAVi s", "holistic AE s"],
              [[r["seed"], r["ari"], r["ari_untrained"], r["recon_mse"]["slots"], r["recon_mse"]["holistic"],
                r["savi_seconds"], r["holistic_ae_seconds"]] for r in res])
    with_ex = [r for r in res if r.get("example") is not None]
    if with_ex:
        best = max(with_ex, key=lambda r: r["ari"])
        worst = min(with_ex, key=lambda r: r["ari"])
        _plot_decomposition(best["example"], out / "decomposition.png",
                            title=f"highest FG-ARI: seed {best['seed']} ({best['ari']:.2f})")
        sec.figures.append("decomposition.png")
        if worst is not best:
            _plot_decomposition(worst["example"], out / "decomposition_lowest.png",
                                title=f"lowest FG-ARI: seed {worst['seed']} ({worst['ari']:.2f})")
            sec.figures.append("decomposition_lowest.png")
    return sec
