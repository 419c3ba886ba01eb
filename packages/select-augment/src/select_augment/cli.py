"""Command line of select-augment: ``train``, ``evaluate``, ``reproduce [--quick|--smoke]``."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Literal

from icml25.cli_helpers import (
    BaseOptions,
    CommonOptions,
    ReproduceOptions,
    method_main,
    open_run_dir,
    reproduce_command,
)

from select_augment.config import AugConfig, Config, LearnConfig, ScoreConfig, SelectConfig, cpu, paper
from select_augment.registry import METHOD


def _method_settings(c: Config) -> dict:
    """The parts of a :class:`Config` preset that ``train`` takes: scoring, selection, augmentation, learner."""
    return {"score": c.score, "select": c.select, "aug": c.aug, "learn": c.learn}


@dataclass(frozen=True)
class TrainOptions(CommonOptions):
    """Score the training set with CLIP once, then train a small CNN with per-epoch selection and targeted
    augmentation (or a baseline selector); writes the model, the scores, the cost and the test accuracy."""

    PRESETS = {"cpu": lambda: _method_settings(cpu()), "paper": lambda: _method_settings(paper())}

    dataset: Literal["shapes", "digits", "folder"] = "shapes"
    """shapes (tiny-CLIP test bed), digits (scikit-learn's bundled 8x8 digits) or folder (an ImageFolder, --folder)."""
    method: Literal["ours", "infobatch", "random", "full"] = "ours"
    """Selector: ours (DynamicSelector + TargetedAugment), InfoBatch, random dynamic selection, or full data."""
    regime: Literal["clean", "noisy", "ambiguous", "duplicates"] = "clean"
    """The training-set regime (shapes: all four; digits: clean or noisy = 30% symmetric label noise)."""
    n_train: int = 1200
    """shapes only: training images."""
    n_test: int = 1000
    """shapes only: test images."""
    folder: Path | None = None
    """folder only: root of an ImageFolder (one sub-folder per class); a seeded 80/20 split gives the test set."""
    clip_arch: str | None = None
    """An open_clip architecture name for --clip-checkpoint (default: the shared tiny CLIP, built offline)."""
    clip_checkpoint: Path | None = None
    """A local open_clip weight file (nothing is downloaded)."""
    text_features: Literal["auto", "clip", "prototypes"] = "auto"
    """Class features of the consistency score: clip (the CLIP's text tower on the class prompts), prototypes (class
    means of the CLIP image features: for class names the CLIP has no words for), auto (prototypes for the digits
    with the tiny CLIP, clip otherwise)."""
    prune_ratio: float = 0.5
    """infobatch only: share of the well-learned samples pruned each epoch (InfoBatch's own default)."""
    gate_baselines: bool = True
    """A baseline (infobatch, random, full) gets ours' noise gate (--score.gate): it selects within the gated-in
    samples in the pruning epochs, as reproduce's "+gate" rows do; --no-gate-baselines: the plain baseline."""
    score: ScoreConfig = field(default_factory=lambda: cpu().score)
    """Scoring (defaults: config.cpu(), the full run's: the Gaussian-mixture gate; --preset paper: the quantile gate)."""
    select: SelectConfig = field(default_factory=lambda: cpu().select)
    """Selection (defaults: config.cpu(), unweighted fill; --preset paper: Horvitz-Thompson weights)."""
    aug: AugConfig = field(default_factory=lambda: cpu().aug)
    learn: LearnConfig = field(default_factory=lambda: cpu().learn)


@dataclass(frozen=True)
class EvaluateOptions(BaseOptions):
    """Evaluate a trained model (a ``select-augment train`` run directory) on freshly generated clean shapes; written to
    evaluation.json in --out."""

    run: Path = Path("runs/select-augment/latest")
    """Run directory written by ``select-augment train``."""
    n_test: int = 1000
    """Test images (shapes, drawn with the evaluation --seed)."""


def _load_data(opts: TrainOptions):
    import numpy as np

    from select_augment import data
    from select_augment.errors import SelectAugmentError

    if opts.dataset == "shapes":
        return (data.shapes(opts.n_train, regime=opts.regime, seed=opts.seed),
                data.shapes(opts.n_test, seed=opts.seed, split="test"))
    if opts.dataset == "digits":
        noise = 0.3 if opts.regime == "noisy" else 0.0  # reproduce's "digits-noisy"
        return (data.digits(seed=opts.seed, split="train", image_size=8, label_noise=noise),
                data.digits(seed=opts.seed, split="test", image_size=8))
    if opts.folder is None:
        raise SelectAugmentError("--dataset folder needs --folder DIR")
    full = data.image_folder(opts.folder)
    perm = np.random.default_rng(opts.seed).permutation(len(full))
    cut = int(0.8 * len(full))

    def part(idx):
        return data.ImageSet(full.images[idx], full.labels[idx], full.classnames, {}, full.prompt)

    return part(perm[:cut]), part(perm[cut:])


def _check_train(opts: TrainOptions) -> None:
    from icml25.errors import check_positive

    from select_augment.errors import SelectAugmentError

    check_positive(opts, "n_train", "n_test", prefix="--")
    if not 0.0 <= opts.prune_ratio < 1.0:
        raise SelectAugmentError(f"--prune-ratio must be in [0, 1), got {opts.prune_ratio}")
    if opts.dataset == "folder" and opts.folder is None:
        raise SelectAugmentError("--dataset folder needs --folder DIR")
    if opts.folder is not None and not Path(opts.folder).is_dir():
        raise SelectAugmentError(f"--folder {str(opts.folder)!r} is not a directory")
    if opts.clip_checkpoint is not None and not Path(opts.clip_checkpoint).is_file():
        raise SelectAugmentError(f"--clip-checkpoint {str(opts.clip_checkpoint)!r}: no such file")
    if (opts.clip_checkpoint is None) != (opts.clip_arch is None):
        raise SelectAugmentError("--clip-arch and --clip-checkpoint go together")
    if opts.dataset == "digits" and opts.regime not in ("clean", "noisy"):
        raise SelectAugmentError(f"--regime {opts.regime!r} is for the shapes; the digits take clean or noisy")
    if opts.dataset == "folder" and opts.text_features != "prototypes" and opts.clip_checkpoint is None:
        # ImageFolder's classes are the sorted sub-folder names: check them against the tiny CLIP's words now,
        # before any image is read or any model is built
        from select_augment.data import check_vocabulary

        names = sorted(p.name for p in Path(opts.folder).iterdir() if p.is_dir())
        check_vocabulary(None, names, ("a photo of a {}",))


def train_command(opts: TrainOptions) -> int:
    _check_train(opts)
    rd = open_run_dir(METHOD.name, opts)  # staged: nothing is written before the inputs are checked
    import json

    import numpy as np
    from icml25.checkpoint import save_model
    from icml25.seeding import seed_everything

    from select_augment.augment import TargetedAugment
    from select_augment.data import clip_features, load_clip
    from select_augment.scoring import score
    from select_augment.selection import (
        DynamicSelector,
        GatedSelector,
        InfoBatch,
        LossPolicySelector,
        pool_ratio,
    )
    from select_augment.train import accuracy, train

    seed_everything(opts.seed)
    tr, te = _load_data(opts)
    C = int(max(tr.labels.max(), te.labels.max())) + 1
    prototypes = opts.text_features == "prototypes" or (
        opts.text_features == "auto" and opts.dataset == "digits" and opts.clip_checkpoint is None)
    if not prototypes:  # class names checked before any CLIP is built or loaded
        from select_augment.data import check_vocabulary

        check_vocabulary(opts.clip_checkpoint, tr.classnames, (tr.prompt,))
    bundle = load_clip(str(opts.clip_checkpoint) if opts.clip_checkpoint else None, arch=opts.clip_arch)
    if prototypes:
        # class means of the image features stand in for the text features (e.g. the tiny CLIP has no digit words)
        from icml25.testbeds.clip import encode_images

        from select_augment.data import prototype_text_features, upsample

        imgs = upsample(tr.images, 32) if opts.clip_checkpoint is None and tr.images.shape[1] < 32 else tr.images
        z = encode_images(bundle, imgs).double().numpy()
        t = prototype_text_features(z, tr.labels, C)
    else:
        z, t = clip_features(bundle, tr.images, tr.classnames, templates=(tr.prompt,))
    s = opts.score
    scores = score(z, tr.labels, text_features=t, k=s.k, temperature=s.temperature, consistency=s.consistency,
                   density=s.density, gate=s.gate, q_noise=s.q_noise)
    L, S, A = opts.learn, opts.select, opts.aug
    n = len(tr)
    targeting = A.targeting
    gated = opts.gate_baselines and opts.method != "ours" and s.gate != "off"
    n_sel = int(scores.gate.sum()) if gated else n  # a baseline given ours' gate selects within the gated-in pool
    if opts.method == "ours":
        sel = DynamicSelector(scores, ratio=S.ratio, delta=S.delta, epochs=L.epochs, seed=opts.seed, eps=S.eps,
                              weighting=S.weighting, max_weight=S.max_weight)
    elif opts.method == "infobatch":
        sel, targeting = InfoBatch(n_sel, prune_ratio=opts.prune_ratio, delta=S.delta, epochs=L.epochs,
                                   seed=opts.seed), "none"
    else:
        ratio = 1.0 if opts.method == "full" else pool_ratio(S.ratio, n, n_sel)
        sel = LossPolicySelector(n_sel, ratio=ratio, delta=S.delta, epochs=L.epochs, seed=opts.seed)
        targeting = "none"
    if gated:
        sel = GatedSelector(sel, scores.gate)
    # the digits as in reproduce: native 8x8 (no input pooling), no flip, no geometric or translating strong ops
    digit = opts.dataset == "digits"
    downsample = 1 if digit else L.downsample
    exclude_ops = Config().digits_exclude_ops if digit and A.exclude_ops == AugConfig().exclude_ops else A.exclude_ops
    aug = TargetedAugment((tr.images, tr.labels), sel, policy=A.policy, aug_ratio=A.aug_ratio, mode=A.mode,
                          mix=A.mix, targeting=targeting, suitability=scores.suitability, num_classes=C,
                          exclude_ops=exclude_ops, seed=opts.seed, flip=not digit, batched=A.batched)
    from icml25.device import resolve_device

    device = resolve_device(opts.device)
    rd.write_config(json.loads(json.dumps(asdict(opts), default=str)))
    rd.write_env(device=str(device))

    def log(rec, model):
        rd.log(rec["epoch"], **{k: v for k, v in rec.items() if k != "epoch"})

    res = train(tr.images, tr.labels, augment=aug, epochs=L.epochs, num_classes=C, batch_size=L.batch_size,
                lr=L.lr, width=L.width, downsample=downsample, seed=opts.seed, callback=log, device=device)
    acc = accuracy(res.model, te.images, te.labels)
    save_model(rd.path / "model", res.model, {"num_classes": C, "width": L.width, "downsample": downsample})
    np.savez_compressed(rd.path / "scores.npz", consistency=scores.consistency, density=scores.density,
                        u=scores.u, v=scores.v, suitability=scores.suitability, gate=scores.gate, labels=scores.labels)
    summary = {"test_accuracy": acc, "cost_fraction": res.cost.fraction, "sample_steps": res.cost.total,
               "clip_forward_images": n, "gated_out": int((~scores.gate).sum()), "seconds": res.seconds,
               "selector_seconds": res.selector_seconds}
    rd.write_json("results.json", summary)
    if not opts.quiet:
        print(json.dumps(summary))
        print(f"written to {rd.target}")
    return 0


def evaluate_command(opts: EvaluateOptions) -> int:
    import json

    from icml25.checkpoint import load_config, load_model
    from icml25.errors import check_positive, read_json

    from select_augment.data import shapes
    from select_augment.errors import SelectAugmentError
    from select_augment.train import SmallCNN, accuracy

    check_positive(opts, "n_test", prefix="--")
    model_dir = Path(opts.run) / "model"
    if not Path(opts.run).is_dir():
        raise SelectAugmentError(f"--run {str(opts.run)!r} is not a directory; pass a `select-augment train` run")
    cfg = read_json(Path(opts.run) / "config.json", what="--run config", required=("dataset",))
    if cfg["dataset"] != "shapes":
        raise SelectAugmentError("evaluate generates shapes; the run was trained on "
                                 f"{cfg['dataset']!r} (its results.json holds the test accuracy)")
    load_config(model_dir, required=("num_classes", "width", "downsample"))  # names the file and the missing keys
    model = load_model(model_dir, lambda c: SmallCNN(c["num_classes"], width=c["width"],
                                                     downsample=c["downsample"]))
    te = shapes(opts.n_test, seed=opts.seed, split="test")
    res = {"test_accuracy": accuracy(model, te.images, te.labels), "n_test": opts.n_test}
    rd = open_run_dir(METHOD.name, opts)  # --out was checked before the work (method_main)
    rd.write_config(asdict(opts))
    rd.write_env(device="cpu")
    rd.write_json("evaluation.json", res)
    if not opts.quiet:
        print(json.dumps(res))
        print(f"written to {rd.target}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    return method_main(METHOD, {
        "train": (TrainOptions, train_command),
        "evaluate": (EvaluateOptions, evaluate_command),
        "reproduce": (ReproduceOptions, reproduce_command(METHOD)),
    }, argv=argv)
