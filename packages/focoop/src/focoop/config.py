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
from typing import Literal

from focoop.errors import FOCoOpConfigError

UOT_MODES = ("semi", "official")  # also focoop.ot.UOT_MODES (kept here so validation needs no torch import)
OOD_SELECTIONS = ("per_slot", "official")
SCORE_METHODS = ("msp", "energy", "neglabel")
SPLITS = ("dirichlet", "pathological", "domain")
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
class Federation:
    """How the benchmark is cut into clients (the federation setup that ``focoop run`` / ``prepare`` build)."""

    n_clients: int = 10
    """Number of clients."""
    alpha: float = 0.1
    """Dirichlet concentration of the label split (> 0; smaller = more heterogeneous)."""
    num_shot: int = 8
    """Training shots per present class per client."""
    n_ctx: int = 4
    """Learned context vectors per prompt (official 16; the tiny CLIP's context length is 16)."""
    n_ood: int = 10
    """OOD prompts / negative words K (at most the size of the word pool)."""
    split: Literal["dirichlet", "pathological", "domain"] = "dirichlet"
    """Client split: dirichlet (label skew, alpha), pathological (classes_per_client classes each) or domain
    (each client sees its own corruption of the generated shapes)."""
    classes_per_client: int = 2
    """Classes per client of the pathological split."""
    shuffle_within_class: bool = True
    """Seeded shuffle within each class before the Dirichlet slices (False = the official contiguous slices)."""
    official_shots: bool = False
    """Few-shot sampling with replacement unless strictly more than num_shot samples exist (the official rule)."""
    seed: int = 0
    """Seed of the split and the few-shot draw."""

    def to_kwargs(self) -> dict:
        """The keyword arguments of :func:`focoop.data.make_federation` (and ``image_folder_federation``)."""
        return asdict(self)

    def validate(self, *, flags: bool = False) -> Federation:
        """Raise :class:`FOCoOpConfigError` naming the field (``--flag`` with ``flags=True``); returns self."""
        def n(name: str) -> str:
            return {"n_clients": "--clients"}.get(name, "--" + name.replace("_", "-")) if flags else name

        for name in ("n_clients", "num_shot", "n_ctx", "classes_per_client"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise FOCoOpConfigError(f"{n(name)} must be an integer >= 1, got {v!r}")
        if self.n_ood < 0:
            raise FOCoOpConfigError(f"{n('n_ood')} must be >= 0, got {self.n_ood!r}")
        if not self.alpha > 0 or not math.isfinite(self.alpha):
            raise FOCoOpConfigError(f"{n('alpha')} must be finite and > 0, got {self.alpha!r}")
        if self.split not in SPLITS:
            raise FOCoOpConfigError(f"{n('split')} must be one of {SPLITS}, got {self.split!r}")
        return self


@dataclass(frozen=True)
class FedConfig:
    """All knobs of one federated run. Defaults follow the paper/official code, scaled to the tiny CLIP."""

    method: Literal["zeroshot", "promptfl", "promptfolio", "fedotp", "fedpgp", "focoop", "focoop_no_dro",
                    "focoop_no_ot", "focoop_no_oodp"] = "focoop"
    """Method preset (FOCoOp, its ablations, or a baseline; see the table in focoop.config)."""
    n_clients: int = 10
    """Number of clients (must match the federation setup)."""
    rounds: int = 10
    """Communication rounds."""
    local_epochs: int = 2
    """Local epochs per round."""
    batch_size: int = 32
    """Local mini-batch size."""
    lr: float = 2e-2
    """SGD learning rate (plain SGD, as the official FOCoOp client)."""
    seed: int = 0
    """Seed of the clients' training randomness."""
    n_ctx: int = 4
    """Learned context vectors per prompt."""
    n_ood: int = 10
    """OOD prompts / negative words K."""
    frac: float | None = None
    """Weight of the global part in the mix, in [0, 1] (default 0.2 for FOCoOp's context mix, 0.8 for PromptFolio's
    feature mix)."""
    ctx_init_std: float = 0.02
    """Standard deviation of the context vectors' initialisation."""
    # BiDRO
    tau: float = 0.1
    """KL-DRO temperature factor (t = tau * gamma_2, > 0)."""
    gamma_init: float = 10.0
    """Initial (and largest) value of the DRO multipliers gamma of both levels."""
    gamma_floor: float = 0.1
    """Positive floor of the DRO multipliers (the official 0 divides by zero)."""
    beta: float = 0.005
    """Step of the multipliers' update gamma <- clamp(gamma - beta (rho - mean|delta|), gamma_floor, gamma_init)."""
    rho: float = 10.0
    """Target perturbation size of that update (the DRO ball's radius)."""
    adv_step: float = 1e-3
    """Step of the feature-space adversary (official code: 1.0)."""
    adv_iters: int = 4
    """Ascent steps of the feature-space adversary."""
    det_weight: float = 0.5
    """Weight of the ID/OOD detection loss."""
    official_reg: bool = False
    """Level-2 regulariser on ||delta_id|| as the official code (default ||delta_ood||, the paper)."""
    # server calibration
    uot: Literal["semi", "official"] = "semi"
    """semi: semi-relaxed Sinkhorn UOT (ID marginal exact); official: mm_unbalanced with both marginals relaxed."""
    reg_m: float = 0.1
    """Marginal relaxation of the UOT (finite, > 0)."""
    ot_reg: float = 0.05
    """Entropic regularisation of the UOT."""
    ema: float = 0.5
    """Calibration EMA of the global prompts, in [0, 1]."""
    normalize_plan: bool = True
    """Column-normalised barycentric calibration (False = the official raw product)."""
    ood_selection: Literal["per_slot", "official"] = "per_slot"
    """How the server picks new OOD prompts (per_slot keeps context-word pairs)."""
    # FedOTP: partial OT between an image's patch features and its (global, local) prompt features per class
    otp_eps: float = 0.1
    """FedOTP: entropic regularisation of the partial OT."""
    otp_mass: float = 0.8
    """FedOTP: transported mass of the partial OT, in (0, 1]."""
    otp_iters: int = 20
    """FedOTP: Sinkhorn iterations."""
    # FedPGP: personalised prompt = global + U·V (rank pgp_rank, private), prompt-wise contrastive loss
    pgp_rank: int = 1
    """FedPGP: rank of the private low-rank prompt U·V."""
    pgp_mu: float = 1.0
    """FedPGP: weight of the prompt-wise contrastive loss."""
    pgp_temp: float = 0.5
    """FedPGP: temperature of the contrastive loss."""
    # evaluation
    score: Literal["msp", "energy", "neglabel"] = "msp"
    """OOD score."""
    neg_columns: bool = False
    """Score a method without learned OOD prompts (baselines, zero-shot) with the negative words' zero-shot text
    features as extra columns (NegLabel-style), like FOCoOp's OOD-prompt columns."""
    official_metrics: bool = False
    """Use the official code's FPR95 (FNR at 5 % FPR) and all-column scores."""
    cacc_columns: Literal["id", "all"] = "id"
    """Columns of the CACC argmax (all = the official C + K columns)."""
    per_batch_accuracy: bool = False
    """Average per-batch accuracies as the official code (default: per sample)."""

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
                "batch_size": self.batch_size, "n_ctx": self.n_ctx}
        for name, v in ints.items():
            if not isinstance(v, int) or v < 1:
                raise FOCoOpConfigError(f"{name} must be an integer >= 1, got {v!r}")
        if self.spec.ood_prompts and self.n_ood < 1:
            raise FOCoOpConfigError(f"n_ood (OOD prompts) must be >= 1 for {self.method}, got {self.n_ood}")
        if self.adv_iters < 0:
            raise FOCoOpConfigError(f"adv_iters must be >= 0, got {self.adv_iters}")
        checks = [
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


@dataclass(frozen=True)
class RunPreset:
    """A preset of ``focoop run``: the federation (``--clients``, ``--alpha``, ``--n-ctx`` ...) and the run's knobs
    (``--rounds``, ``--lr`` ...); ``focoop run --preset paper|cpu`` starts from one (flags still override)."""

    federation: Federation
    fed: FedConfig


def paper() -> RunPreset:
    """The official FOCoOp setting (paper note, "Prompts" and "Client optimisation" [official code]): 10 clients,
    Dirichlet α = 0.1, 8 shots, M = 16 context vectors, K = 100 OOD prompts, 10 rounds of 2 local epochs, batch 32,
    plain SGD lr 1e-3, frac 0.2, τ 0.1, γ_init 10, β 0.005, ρ 10, adversary step 1 (``strength``) with 4 ascent steps.

    Not expressible here: the backbone (ViT-B/16 or RN50: pass ``--clip-model ViT-B-16 --clip-checkpoint FILE``; M = 16
    does not fit the tiny CLIP's context length 16) and the data sets (CIFAR-100, Tiny-ImageNet ...: ``--data``); K =
    100 needs a negative-word pool of at least 100 words (``--neg-words``). The γ floor stays 0.1 (the official 0
    divides by zero, see the note's findings)."""
    fed = FedConfig(n_clients=10, rounds=10, local_epochs=2, batch_size=32, lr=1e-3, n_ctx=16, n_ood=100,
                    tau=0.1, gamma_init=10.0, beta=0.005, rho=10.0, adv_step=1.0, adv_iters=4)
    return RunPreset(federation=Federation(n_clients=10, alpha=0.1, num_shot=8, n_ctx=16, n_ood=100), fed=fed)


def cpu() -> RunPreset:
    """The CPU scale ``focoop run`` uses by default (the tiny CLIP; paper note, "Reproduction at CPU scale"): M = 4,
    K = 10, lr 2e-2, adversary step 1e-3, otherwise the official values."""
    return RunPreset(federation=Federation(), fed=FedConfig())
