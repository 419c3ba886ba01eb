"""Configuration of a federated prompt-learning run (FOCoOp and the baselines), with validation.

Method presets (``method``):

=================  ========  ========  ===========  ===========  =====  ====
method             contexts  local     mixing       OOD prompts  DRO    OT
=================  ========  ========  ===========  ===========  =====  ====
zeroshot           —         —         —            —            —      —
promptfl           shared    no        —            no           no     no
promptfolio        shared    yes       feature      no           no     no
fedotp             shared    yes       OT           no           no     no
fedpgp             shared    low-rank  additive     no           no     no
focoop             per-class yes       context      yes          yes    yes
focoop_no_dro      per-class yes       context      yes          no     yes
focoop_no_ot       per-class yes       context      yes          yes    no
focoop_no_oodp     per-class yes       context      no           yes    no
=================  ========  ========  ===========  ===========  =====  ====

FedOTP (Li et al., CVPR 2024) and FedPGP (Cui et al., ICML 2024) are written from their papers on the same prompt
learner (:mod:`focoop.baselines`). ``focoop_no_oodp`` is FOCoOp without OOD prompts: the class-level DRO level and
the KL-DRO stay, the OOD level, the detection loss and the OT calibration (which acts on OOD prompts) go.

Scoring: ``score`` (msp / energy / neglabel, :mod:`focoop.scores`) is computed over the C ID columns and, for FOCoOp,
its K learned OOD-prompt columns. ``neg_columns=True`` gives a method without learned OOD prompts (the baselines,
zero-shot CLIP) the same K negative words as fixed hand-crafted columns ("a photo of a {word}." / "this is a {word}
photo."), i.e. zero-shot NegLabel-style columns, so that every method can be scored with negative labels.

``frac`` is always the weight of the *global* part: FOCoOp mixes contexts ctx = (1 − frac)·ctx_local + frac·ctx_global
(official frac = 0.2); PromptFolio mixes normalised text features t = frac·t_global + (1 − frac)·t_local (official
80 % global, i.e. frac = 0.8).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, replace

from focoop.errors import FOCoOpConfigError

UOT_MODES = ("semi", "official")  # also focoop.ot.UOT_MODES (kept here so validation needs no torch import)
OOD_SELECTIONS = ("per_slot", "official")
SCORE_METHODS = ("msp", "energy", "neglabel")
METHODS = ("zeroshot", "promptfl", "promptfolio", "fedotp", "fedpgp", "focoop", "focoop_no_dro", "focoop_no_ot",
           "focoop_no_oodp")


@dataclass(frozen=True)
class MethodSpec:
    """What a method preset switches on."""

    csc: bool
    local: bool
    mix_space: str  # "none" | "context" | "feature" | "ot" (FedOTP) | "lowrank" (FedPGP)
    ood_prompts: bool
    dro: bool
    ot: bool
    trains: bool = True


def method_spec(method: str) -> MethodSpec:
    """The switches of a method preset (see the module table)."""
    specs = {
        "zeroshot": MethodSpec(False, False, "none", False, False, False, trains=False),
        "promptfl": MethodSpec(False, False, "none", False, False, False),
        "promptfolio": MethodSpec(False, True, "feature", False, False, False),
        "focoop": MethodSpec(True, True, "context", True, True, True),
        "focoop_no_dro": MethodSpec(True, True, "context", True, False, True),
        "focoop_no_ot": MethodSpec(True, True, "context", True, True, False),
        "focoop_no_oodp": MethodSpec(True, True, "context", False, True, False),
        "fedotp": MethodSpec(False, True, "ot", False, False, False),
        "fedpgp": MethodSpec(False, True, "lowrank", False, False, False),
    }
    if method not in specs:
        raise FOCoOpConfigError(f"method must be one of {METHODS}, got {method!r}")
    return specs[method]


@dataclass(frozen=True)
class FedConfig:
    """All knobs of one federated run. Defaults follow the paper/official code, scaled to the tiny CLIP."""

    method: str = "focoop"
    n_clients: int = 10
    rounds: int = 10
    local_epochs: int = 2
    batch_size: int = 32
    lr: float = 2e-2
    alpha: float = 0.1
    num_shot: int = 8
    seed: int = 0
    n_ctx: int = 4
    n_ood: int = 10
    frac: float | None = None  # None -> 0.2 for FOCoOp (context mix), 0.8 for PromptFolio (feature mix)
    ctx_init_std: float = 0.02
    # BiDRO
    tau: float = 0.1
    gamma_init: float = 10.0
    gamma_floor: float = 0.1
    beta: float = 0.005
    rho: float = 10.0
    adv_step: float = 1e-3
    adv_iters: int = 4
    det_weight: float = 0.5
    official_reg: bool = False
    # server calibration
    uot: str = "semi"
    reg_m: float = 0.1
    ot_reg: float = 0.05
    ema: float = 0.5
    normalize_plan: bool = True
    ood_selection: str = "per_slot"
    # FedOTP: partial OT between an image's patch features and its (global, local) prompt features per class
    otp_eps: float = 0.1
    otp_mass: float = 0.8
    otp_iters: int = 20
    # FedPGP: personalised prompt = global + U·V (rank pgp_rank, private), prompt-wise contrastive loss
    pgp_rank: int = 1
    pgp_mu: float = 1.0
    pgp_temp: float = 0.5
    # evaluation
    score: str = "msp"
    neg_columns: bool = False  # score with the K negative words' zero-shot text features appended (NegLabel-style)
    official_metrics: bool = False
    cacc_columns: str = "id"
    per_batch_accuracy: bool = False
    # data split
    shuffle_within_class: bool = True
    official_shots: bool = False

    @property
    def spec(self) -> MethodSpec:
        return method_spec(self.method)

    @property
    def global_frac(self) -> float:
        if self.frac is not None:
            return self.frac
        return 0.8 if self.spec.mix_space == "feature" else 0.2

    @property
    def k(self) -> int:
        """Number of OOD prompts actually used by this method (0 for the baselines)."""
        return self.n_ood if self.spec.ood_prompts else 0

    def with_(self, **kw) -> FedConfig:
        return replace(self, **kw)

    def to_dict(self) -> dict:
        return asdict(self)

    def validate(self) -> FedConfig:
        """Raise :class:`FOCoOpConfigError` naming the field and what is allowed; returns self."""
        method_spec(self.method)
        ints = {"n_clients": self.n_clients, "rounds": self.rounds, "local_epochs": self.local_epochs,
                "batch_size": self.batch_size, "num_shot": self.num_shot, "n_ctx": self.n_ctx}
        for name, v in ints.items():
            if not isinstance(v, int) or v < 1:
                raise FOCoOpConfigError(f"{name} must be an integer >= 1, got {v!r}")
        if self.spec.ood_prompts and self.n_ood < 1:
            raise FOCoOpConfigError(f"n_ood (OOD prompts) must be >= 1 for {self.method}, got {self.n_ood}")
        if self.adv_iters < 0:
            raise FOCoOpConfigError(f"adv_iters must be >= 0, got {self.adv_iters}")
        checks = [
            ("alpha", self.alpha > 0, "> 0"),
            ("lr", self.lr > 0, "> 0"),
            ("tau", self.tau > 0, "> 0"),
            ("reg_m", self.reg_m > 0 and math.isfinite(self.reg_m), "finite and > 0"),
            ("ot_reg", self.ot_reg > 0, "> 0"),
            ("gamma_init", self.gamma_init > 0, "> 0"),
            ("gamma_floor", 0 <= self.gamma_floor <= self.gamma_init, "in [0, gamma_init]"),
            ("beta", self.beta >= 0, ">= 0"),
            ("rho", self.rho >= 0, ">= 0"),
            ("adv_step", self.adv_step >= 0, ">= 0"),
            ("det_weight", self.det_weight >= 0, ">= 0"),
            ("ema", 0.0 <= self.ema <= 1.0, "in [0, 1]"),
            ("frac", self.frac is None or 0.0 <= self.frac <= 1.0, "in [0, 1]"),
            ("ctx_init_std", self.ctx_init_std >= 0, ">= 0"),
            ("otp_eps", self.otp_eps > 0, "> 0"),
            ("otp_mass", 0.0 < self.otp_mass <= 1.0, "in (0, 1]"),
            ("otp_iters", isinstance(self.otp_iters, int) and self.otp_iters >= 1, "an integer >= 1"),
            ("pgp_rank", isinstance(self.pgp_rank, int) and self.pgp_rank >= 1, "an integer >= 1"),
            ("pgp_mu", self.pgp_mu >= 0, ">= 0"),
            ("pgp_temp", self.pgp_temp > 0, "> 0"),
        ]
        for name, ok, allowed in checks:
            if not ok:
                raise FOCoOpConfigError(f"{name} must be {allowed}, got {getattr(self, name)!r}")
        for name, value, allowed in (("uot", self.uot, UOT_MODES), ("ood_selection", self.ood_selection,
                                                                      OOD_SELECTIONS),
                                     ("score", self.score, SCORE_METHODS), ("cacc_columns", self.cacc_columns,
                                                                           ("id", "all"))):
            if value not in allowed:
                raise FOCoOpConfigError(f"{name} must be one of {tuple(allowed)}, got {value!r}")
        if self.neg_columns and (self.spec.ood_prompts or self.n_ood < 1):
            raise FOCoOpConfigError("neg_columns (zero-shot NegLabel columns at evaluation) is for methods without "
                                    f"learned OOD prompts and needs n_ood >= 1; got method={self.method!r}, "
                                    f"n_ood={self.n_ood}")
        if self.spec.dro and self.gamma_floor * self.tau <= 0:
            raise FOCoOpConfigError("gamma_floor must be > 0 with DRO (tau*gamma = 0 divides by zero); "
                                    f"got gamma_floor={self.gamma_floor}")
        return self
