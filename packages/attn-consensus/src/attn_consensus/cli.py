"""Command line of attn-consensus: ``attn-consensus simulate | gpt2 | reproduce [--quick|--smoke]``.

Also ``python -m attn_consensus``. Every command writes a staged run directory (nothing is written before the
inputs are checked).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from icml25.cli_helpers import BaseOptions, CommonOptions, ReproduceOptions, method_main, reproduce_command

from attn_consensus.config import Gpt2Preset
from attn_consensus.errors import AttnConsensusError
from attn_consensus.registry import METHOD

MASKS = ("causal", "full")
INITS = ("uniform", "hemisphere", "antipodal")
V_KINDS = ("identity", "random", "negdef")
METHODS = ("rk4", "euler")
REINITS = ("none", "once", "every_pass")


def _one_of(field: str, value: str, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise AttnConsensusError(f"{field} must be one of {', '.join(allowed)}; got {value!r}")


def _positive_int(field: str, value: int, minimum: int = 1) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise AttnConsensusError(f"{field} must be an integer >= {minimum}, got {value!r}")


@dataclass(frozen=True)
class SimulateOptions(BaseOptions):
    """Integrate the attention ODE on the sphere from random (or given) tokens; write the diagnostic curves."""

    mask: str = "causal"
    """Attention neighbourhoods: causal (j ≤ i) or full."""
    n: int = 32
    """Tokens."""
    d: int = 16
    """Token dimension (>= 2)."""
    init: str = "uniform"
    """Initial tokens: uniform, hemisphere or antipodal."""
    x0: Path | None = None
    """Initial tokens from a .npy file of shape [n, d] (overrides --n, --d, --init)."""
    v: str = "identity"
    """Value matrix: identity, random or negdef."""
    scale: float = 2.0
    """Spectral norm of the random Q and K."""
    heads: int = 1
    """Attention heads (the field is their sum)."""
    layers: int = 1
    """Layers of piecewise-constant Q(t), K(t) (1 = constant), each lasting --layer-time."""
    layer_time: float = 1.0
    """Duration of one layer."""
    dt: float = 0.025
    """Step size (> 0)."""
    steps: int = 1200
    """Steps (>= 1)."""
    method: str = "rk4"
    """Integrator: rk4 or euler (each followed by the retraction x <- x/|x|)."""
    save_every: int = 10
    """Save every k-th state for the curves."""


@dataclass(frozen=True)
class Gpt2Options(CommonOptions):
    """Run the consensus loop over a GPT-2 block stack on random prompts; write the per-layer diagnostic curve."""

    PRESETS = {"cpu": Gpt2Preset.cpu, "paper": Gpt2Preset.paper}  # attn_consensus.config.Gpt2Preset

    model: str = "tiny"
    """'tiny' (a random-init GPT2Config model), 'tiny-trained' (trained briefly on the tiny-LM tasks), or a local
    path / hub id of a GPT-2 or GPT-Neo model (hub ids need the network)."""
    iterations: int = 100
    """Consensus iterations (passes over the block stack, ln_f between them; >= 1)."""
    mask: str = "causal"
    """Explicit attention mask: causal or full (full only where it takes effect: GPT-2)."""
    drop_mlp: bool = False
    """Remove the MLPs (MLP -> 0, ln_2 -> identity)."""
    reinit: str = "none"
    """Weights: none (as given), once (random init before the loop) or every_pass (re-drawn each pass)."""
    prompts: Path | None = None
    """A text file, one prompt per line, tokenised with the tokenizer saved in --model (a local folder); every
    prompt is cut to the shortest one's token count (and to --length) so they form one batch. Default: --batch
    random prompts of --length tokens."""
    batch: int = 8
    """Random prompts (without --prompts)."""
    length: int = 32
    """Tokens per prompt (with --prompts: at most)."""
    n_layer: int = 6
    """Blocks of the tiny model."""
    n_embd: int = 128
    """Width of the tiny model."""
    train_steps: int = 60
    """Training steps of 'tiny-trained'."""
    attn_implementation: str = "sdpa"
    """sdpa or eager (both get the same explicit mask)."""
    absolute: bool = False
    """Record 1 - mean_j |cos| (the official docstring's variant) instead of the signed diagnostic."""


@dataclass(frozen=True)
class LoopOptions(Gpt2Options):
    """The consensus loop on any local GPT-2-family checkpoint: ``--model DIR`` (config, weights and tokenizer saved
    with ``save_pretrained``) and ``--prompts FILE`` (text, one prompt per line); the same options as ``gpt2``."""


def _load_x0(path: Path):
    import numpy as np

    try:
        arr = np.load(path, allow_pickle=False)
    except FileNotFoundError:
        raise AttnConsensusError(f"--x0 {str(path)!r}: no such file") from None
    except (ValueError, OSError) as exc:
        raise AttnConsensusError(f"--x0 {str(path)!r} is not a numeric .npy array ({exc})") from None
    if arr.ndim != 2:
        raise AttnConsensusError(f"--x0 must hold an array of shape [n, d], got {arr.shape}")
    return arr


def simulate_command(opts: SimulateOptions) -> int:
    from icml25.registry import default_out
    from icml25.rundir import RunDir

    _one_of("mask", opts.mask, MASKS)
    _one_of("init", opts.init, INITS)
    _one_of("v", opts.v, V_KINDS)
    _one_of("method", opts.method, METHODS)
    _positive_int("n", opts.n)
    _positive_int("d", opts.d, 2)
    for f in ("heads", "layers", "steps", "save_every"):
        _positive_int(f, getattr(opts, f))
    for f in ("dt", "layer_time"):
        val = getattr(opts, f)
        if not (val > 0 and val < float("inf")):
            raise AttnConsensusError(f"{f} must be a finite number > 0, got {val!r}")
    if not (opts.scale >= 0 and opts.scale < float("inf")):
        raise AttnConsensusError(f"scale must be a finite number >= 0, got {opts.scale!r}")
    from attn_consensus.flow import check_tokens

    if opts.x0 is not None:
        x0 = check_tokens(_load_x0(opts.x0), name="--x0")
        n, d = x0.shape
    else:
        n, d = opts.n, opts.d
    out = opts.out if opts.out is not None else default_out(METHOD.name)
    with RunDir(out, overwrite=opts.overwrite, staged=True) as rd:
        import numpy as np

        from attn_consensus.diagnostics import consensus_gap, decay_rate, geodesic_diameter
        from attn_consensus.flow import AttentionFlow, integrate
        from attn_consensus.scenarios import random_matrix, random_v, sample_tokens

        if opts.x0 is None:
            x0 = sample_tokens(n, d, init=opts.init, seed=opts.seed)
        q = random_matrix(d, scale=opts.scale, batch=(opts.layers, opts.heads), seed=opts.seed + 1)
        k = random_matrix(d, scale=opts.scale, batch=(opts.layers, opts.heads), seed=opts.seed + 2)
        v = random_v(d, kind=opts.v, seed=opts.seed + 3)
        flow = AttentionFlow(dim=d, mask=opts.mask, q=q, k=k, v=v, layer_time=opts.layer_time)
        tr = integrate(flow, x0, dt=opts.dt, steps=opts.steps, method=opts.method, save_every=opts.save_every)
        gap = consensus_gap(tr.x)
        diam = geodesic_diameter(tr.x)
        rd.write_config({k: (str(v) if isinstance(v, Path) else v) for k, v in asdict(opts).items()})
        for t, g, dm in zip(tr.t, gap.tolist(), diam.tolist()):
            rd.log(None, t=float(t), diagnostic=g, diameter=dm)
        summary = {"n": n, "d": d, "final_diagnostic": float(gap[-1]), "final_diameter": float(diam[-1]),
                   "decay_rate": decay_rate(gap.numpy(), tr.t), "leader_drift": float((tr.x[:, 0] - tr.x[0, 0])
                                                                                      .abs().max())}
        rd.write_json("summary.json", summary)
        np.save(rd.file("final_tokens.npy"), tr.final.numpy())
        rd.write_env(device="cpu")
    if not opts.quiet:
        print(summary)
        print(f"written to {rd.target}")
    return 0


def gpt2_command(opts: Gpt2Options) -> int:
    from icml25.registry import default_out
    from icml25.rundir import RunDir

    _one_of("mask", opts.mask, MASKS)
    _one_of("reinit", opts.reinit, REINITS)
    _one_of("attn_implementation", opts.attn_implementation, ("sdpa", "eager"))
    for f in ("iterations", "batch", "length", "n_layer", "n_embd", "train_steps"):
        _positive_int(f, getattr(opts, f))
    if opts.n_embd % 4:
        raise AttnConsensusError(f"n_embd must be divisible by the 4 heads, got {opts.n_embd}")
    if opts.prompts is not None and (opts.model in ("tiny", "tiny-trained") or not Path(opts.model).is_dir()):
        raise AttnConsensusError(f"--prompts needs --model to be a local model folder with its tokenizer, got "
                                 f"{opts.model!r}")
    if opts.prompts is not None and not Path(opts.prompts).is_file():
        raise AttnConsensusError(f"--prompts {str(opts.prompts)!r}: no such file")
    out = opts.out if opts.out is not None else default_out(METHOD.name)
    with RunDir(out, overwrite=opts.overwrite, staged=True) as rd:  # --out checked before the model is built
        from attn_consensus.hf_loop import _stack, check_mask_supported, hf_consensus_loop
        from attn_consensus.models import (
            load_model,
            random_prompts,
            set_attn_implementation,
            text_prompts,
            tiny_gpt2,
            trained_tiny_gpt2,
        )

        if opts.model == "tiny":
            model = tiny_gpt2(n_layer=opts.n_layer, n_embd=opts.n_embd, vocab_size=512,
                              n_positions=max(64, opts.length), seed=opts.seed)
        elif opts.model == "tiny-trained":
            if opts.length > 64:
                raise AttnConsensusError(f"length must be <= 64 for 'tiny-trained' (64 positions), got {opts.length}")
            model, _ = trained_tiny_gpt2(n_layer=opts.n_layer, n_embd=opts.n_embd, steps=opts.train_steps,
                                         seed=opts.seed)
        else:
            model = load_model(opts.model, attn_implementation=opts.attn_implementation)
        from icml25.device import resolve_device

        device = resolve_device(opts.device)
        model = model.to(device)  # the loop runs where the model is (prompts follow it)
        _stack(model)
        set_attn_implementation(model, opts.attn_implementation)
        check_mask_supported(model, opts.mask)
        if opts.prompts is not None:
            ids, _ = text_prompts(opts.prompts, opts.model, max_length=opts.length)
        else:
            ids = random_prompts(opts.batch, opts.length, vocab_size=int(model.config.vocab_size),
                                 seed=opts.seed + 10_000)
        curve = hf_consensus_loop(model, ids, iterations=opts.iterations, mask=opts.mask, drop_mlp=opts.drop_mlp,
                                  reinit=opts.reinit, seed=opts.seed, absolute=opts.absolute,
                                  progress=not opts.quiet)
        rd.write_config({k: (str(v) if isinstance(v, Path) else v) for k, v in asdict(opts).items()})
        for i, g in enumerate(curve.gap.tolist()):
            rd.log(i, diagnostic=g)
        summary = {"initial_diagnostic": float(curve.gap[0]), "final_diagnostic": float(curve.gap[-1]),
                   "ratio": curve.ratio, "final_diameter": float(curve.diameter[-1]), "mask": curve.mask,
                   "attn_implementation": curve.attn_implementation, "layers_per_pass": curve.n_layer,
                   "prompts": int(ids.shape[0]), "tokens_per_prompt": int(ids.shape[1]),
                   "prompt_source": str(opts.prompts) if opts.prompts is not None else "random"}
        rd.write_json("summary.json", summary)
        rd.write_env(device=str(device))
    if not opts.quiet:
        print(summary)
        print(f"written to {rd.target}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    return method_main(METHOD, {
        "simulate": (SimulateOptions, simulate_command),
        "gpt2": (Gpt2Options, gpt2_command),
        "loop": (LoopOptions, gpt2_command),  # the same command: any local GPT-2-family checkpoint, text prompts
        "reproduce": (ReproduceOptions, reproduce_command(METHOD)),
    }, argv=argv)
