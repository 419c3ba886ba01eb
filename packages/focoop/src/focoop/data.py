"""The tiny-CLIP test bed as a federated OOD benchmark (``icml25.testbeds.clip``), with features encoded once.

* ID: generated shapes of the tiny CLIP's ID classes (default: the first 8 of ``CLASSES``), a train pool and a test
  pool drawn with seeds disjoint from the CLIP's pretraining seeds;
* covariate shift (CACC): the ID test pool under ``corrupt`` (brightness, noise, blur; one copy per kind);
* far-OOD: ``make_textures`` images; near-OOD: shapes of the held-out classes (default the other 4 of ``CLASSES``);
* negative words: NegLabel-style choice (:mod:`focoop.neglabel`) from the tiny CLIP's vocabulary words that are not
  ID class names, not held-out (near-OOD) class names and not texture words (so the OOD prompts cannot simply name
  the OOD test sets).

The image encoder is frozen, so :func:`encode_benchmark` encodes every image once (pooled features and, for a ViT
image tower, the projected patch features FedOTP needs); :func:`make_federation` then builds the split and the
:class:`~focoop.setup.FederationSetup` for any split / α / seed without re-encoding. Splits (``split=``):

* ``"dirichlet"``: label skew, one Dir(α) per class (official semantics, :mod:`focoop.partition`);
* ``"pathological"``: each client holds ``classes_per_client`` classes;
* ``"domain"``: feature shift; every client holds all classes (equal shares of each class) but sees its images
  through its own *domain*: client j's training, validation and test images are the clean shapes (j mod 4 = 0) or
  their brightness / noise / blur copies (j mod 4 = 1, 2, 3), all at severity 3. CACC is measured on a domain no
  client trains on (the contrast copy of the client's test images), the analogue of the paper's leave-one-domain-out
  protocol. In the two label-skew splits CACC is the brightness/noise/blur copies of the clean test images.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from focoop.neglabel import select_negative_words
from focoop.partition import dirichlet_split
from focoop.setup import FederationSetup, build_setup

DEFAULT_NOUNS = ("dog", "cat", "car", "tree", "house", "bird", "flower", "person", "boat", "chair", "cloud", "fish",
                 "background")
DEFAULT_ADJECTIVES = ("black", "gray", "purple", "pink", "brown", "dark", "faded")
NOUN_TEMPLATE = "a photo of a {}."  # the tiny vocabulary has no "nice"; see README deviations
ADJ_TEMPLATE = "this is a {} photo."


@dataclass
class Benchmark:
    """Precomputed L2-normalised features (float32) of the whole benchmark and its metadata."""

    train_x: torch.Tensor  # (n_train, e)
    train_y: np.ndarray
    test_x: torch.Tensor  # (n_test, e)
    test_y: np.ndarray
    test_c_x: torch.Tensor  # (n_kinds * n_test, e), copy k holds corruption kind k of the test pool
    corruptions: tuple[str, ...]
    ood_x: torch.Tensor  # (n_far + n_near, e)
    ood_kind: np.ndarray  # 0 far (textures), 1 near (held-out shapes)
    classnames: tuple[str, ...]
    held_out: tuple[str, ...]
    seconds: float = 0.0
    # patch features (rows, N, e) of the same images (None: the image tower gives no patch tokens)
    train_tok: torch.Tensor | None = None
    test_tok: torch.Tensor | None = None
    test_c_tok: torch.Tensor | None = None
    ood_tok: torch.Tensor | None = None
    # domain-shift split: the training pool under each corruption of ``corruptions`` (copy k = kind k) and the test
    # pool under the held-out ``holdout`` corruption; None when not encoded
    train_dom_x: torch.Tensor | None = None  # (n_kinds * n_train, e)
    train_dom_tok: torch.Tensor | None = None
    test_hold_x: torch.Tensor | None = None  # (n_test, e)
    test_hold_tok: torch.Tensor | None = None
    holdout: str | None = None


SPLITS = ("dirichlet", "pathological", "domain")


def encode_with_tokens(bundle, images: np.ndarray, *, batch_size: int = 256,
                       tokens: bool = True) -> tuple[torch.Tensor, torch.Tensor | None]:
    """L2-normalised pooled features (n, e) and, for an open_clip ``VisionTransformer``, its patch features projected
    into the joint space and L2-normalised, (n, N, e) (the tokens after ``ln_post`` times ``proj``; with the tiny
    CLIP's mean pooling their mean is the pooled feature before normalisation). Other towers: (features, None)."""
    import torch.nn.functional as F
    from icml25.testbeds import clip as tb

    vis = getattr(bundle.model, "visual", None)
    if not tokens or type(vis).__name__ != "VisionTransformer" or not hasattr(vis, "output_tokens"):
        return tb.encode_images(bundle, images, batch_size=batch_size), None
    old = vis.output_tokens
    vis.output_tokens = True
    pooled, toks = [], []
    try:
        with torch.no_grad():
            for s in range(0, len(images), batch_size):
                x = bundle.preprocess(images[s:s + batch_size])
                p, t = vis(x)
                if vis.proj is not None:
                    t = t @ vis.proj  # (b, N, width) -> (b, N, e)
                pooled.append(F.normalize(p.float(), dim=-1))
                toks.append(F.normalize(t.float(), dim=-1))
    finally:
        vis.output_tokens = old
    if not pooled:
        e = bundle.model.text_projection.shape[1]
        return torch.zeros(0, e), None
    return torch.cat(pooled), torch.cat(toks)


def load_tiny_clip(*, steps: int = 1000, seed: int = 0, classes=None, cache_dir=None, random: bool = False,
                   vision: str = "vit"):
    """The shared tiny CLIP (pretrained and cached by ``icml25.testbeds.clip``); ``random`` = untrained control.

    ``vision="vit"`` (patch-8 ViT tower) is the backbone every focoop result in the README was measured with; the
    test bed's default is now the ResNet tower (``vision="resnet"``, better compositional zero-shot accuracy)."""
    from icml25.testbeds import clip as tb

    if random:
        return tb.random_clip(seed=seed, vision=vision)
    return tb.pretrained_tiny_clip(classes=classes, steps=steps, seed=seed, cache_dir=cache_dir, vision=vision)


def encode_benchmark(bundle, *, n_train_per_class: int = 200, n_test_per_class: int = 100, n_far: int = 400,
                     n_near: int = 400, corruptions=("brightness", "noise", "blur"), severity: int = 3,
                     data_seed: int = 1000, tokens: bool = True, domains: bool = False,
                     holdout: str = "contrast") -> Benchmark:
    """Generate and encode all images once (seeds ``data_seed + …``, disjoint from the CLIP pretraining seeds).

    ``tokens``: also keep patch features (FedOTP); ``domains``: also encode the training pool under every kind of
    ``corruptions`` and the test pool under ``holdout`` (the domain-shift split)."""
    import time

    from icml25.testbeds import clip as tb

    t0 = time.perf_counter()
    classes = tuple(bundle.classnames)
    held = tuple(c for c in tb.CLASSES if c not in classes)
    c = len(classes)
    train = tb.make_shapes(n_train_per_class * c, seed=data_seed, classes=classes)
    test = tb.make_shapes(n_test_per_class * c, seed=data_seed + 1, classes=classes)
    copies = [tb.corrupt(test.images, kind=k, severity=severity, seed=data_seed + 2 + i)
              for i, k in enumerate(corruptions)]
    far = tb.make_textures(n_far, seed=data_seed + 10)
    parts = [far.images]
    if held and n_near:
        parts.append(tb.make_shapes(n_near, seed=data_seed + 11, classes=held).images)
    def enc(images):
        return encode_with_tokens(bundle, images, tokens=tokens)

    (trx, trt), (tex, tet) = enc(train.images), enc(test.images)
    tcx, tct = enc(np.concatenate(copies)) if copies else (tex, tet)
    oox, oot = enc(np.concatenate(parts))
    dom = {}
    if domains:
        if not corruptions:
            raise ValueError("the domain-shift split needs at least one corruption kind")
        if holdout in corruptions:
            raise ValueError(f"holdout={holdout!r} must not be one of the training domains {tuple(corruptions)}")
        tr_copies = [tb.corrupt(train.images, kind=k, severity=severity, seed=data_seed + 20 + i)
                     for i, k in enumerate(corruptions)]
        (dx, dt) = enc(np.concatenate(tr_copies))
        (hx, ht) = enc(tb.corrupt(test.images, kind=holdout, severity=severity, seed=data_seed + 30))
        dom = dict(train_dom_x=dx, train_dom_tok=dt, test_hold_x=hx, test_hold_tok=ht, holdout=holdout)
    return Benchmark(
        train_x=trx, train_y=np.asarray(train.labels), test_x=tex, test_y=np.asarray(test.labels),
        test_c_x=tcx, corruptions=tuple(corruptions), ood_x=oox,
        ood_kind=np.concatenate([np.zeros(n_far, dtype=np.int64), np.ones(sum(len(p) for p in parts[1:]),
                                                                            dtype=np.int64)]),
        classnames=classes, held_out=held, seconds=time.perf_counter() - t0, train_tok=trt, test_tok=tet,
        test_c_tok=tct, ood_tok=oot, **dom)


def negative_words(bundle, classnames, *, k: int, nouns=DEFAULT_NOUNS, adjectives=DEFAULT_ADJECTIVES) -> list[str]:
    """NegLabel-style K words for the tiny CLIP (see module docstring)."""
    from icml25.testbeds import clip as tb

    def encode_text(texts):
        return tb.encode_text(bundle, texts)

    return select_negative_words(encode_text, classnames, nouns=nouns, adjectives=adjectives, k=k,
                                 noun_template=NOUN_TEMPLATE, adj_template=ADJ_TEMPLATE)


def _cat(parts):
    return None if any(p is None for p in parts) else torch.cat(parts)


def make_federation(bundle, bench: Benchmark, *, n_clients: int, alpha: float = 0.1, num_shot: int, seed: int,
                    n_ctx: int = 4, n_ood: int = 10, shuffle_within_class: bool = True,
                    official_shots: bool = False, split: str = "dirichlet", classes_per_client: int = 2,
                    words: list[str] | None = None, neg_prompts: list[str] | None = None) -> FederationSetup:
    """Few-shot federation over the precomputed benchmark features (``split``: see the module docstring).

    Each client gets its few-shot training features, a validation split (the rest of its share of the training
    pool, :mod:`focoop.partition`) and its test split (test pool). The negative words' zero-shot texts (for the
    NegLabel columns of the baselines) use the templates the words were selected with (``words`` /
    ``neg_prompts`` given: used as they are)."""
    from focoop.errors import FOCoOpConfigError
    from focoop.partition import pathological_split, split_from_proportions

    c = len(bench.classnames)
    common = dict(num_shot=num_shot, seed=seed, shuffle_within_class=shuffle_within_class,
                  official_shots=official_shots)
    if split == "dirichlet":
        sp = dirichlet_split(bench.train_y, bench.test_y, n_clients=n_clients, n_classes=c, alpha=alpha, **common)
    elif split == "pathological":
        sp = pathological_split(bench.train_y, bench.test_y, n_clients=n_clients, n_classes=c,
                                classes_per_client=classes_per_client, **common)
    elif split == "domain":
        if bench.train_dom_x is None:
            raise FOCoOpConfigError("split='domain' needs a benchmark encoded with domains=True")
        sp = split_from_proportions(bench.train_y, bench.test_y, np.full((n_clients, c), 1.0 / n_clients), **common)
    else:
        raise FOCoOpConfigError(f"split must be one of {SPLITS}, got {split!r}")
    shots, tests, vals, props = sp.shots, sp.test, sp.val, sp.proportions
    n_train, n_test = len(bench.train_y), len(bench.test_y)
    if words is None:
        words = negative_words(bundle, bench.classnames, k=n_ood) if n_ood else []
    if neg_prompts is None:
        neg_prompts = [(ADJ_TEMPLATE if w in DEFAULT_ADJECTIVES else NOUN_TEMPLATE).format(w) for w in words]
    meta = {"split": split, "alpha": alpha, "seed": seed, "proportions": props.tolist(), "neg_words": words}
    if split == "domain":
        n_dom = 1 + len(bench.corruptions)  # domain 0 = clean, domain d = corruption d − 1
        dom = [j % n_dom for j in range(n_clients)]
        train_x, train_tok = _cat([bench.train_x, bench.train_dom_x]), _cat([bench.train_tok, bench.train_dom_tok])
        test_x, test_tok = _cat([bench.test_x, bench.test_c_x]), _cat([bench.test_tok, bench.test_c_tok])
        shots = [s + d * n_train for s, d in zip(shots, dom)]
        vals = [v + d * n_train for v, d in zip(vals, dom)]
        tests_c = [t.copy() for t in tests]  # the held-out domain copy of the client's (clean-index) test images
        tests = [t + d * n_test for t, d in zip(tests, dom)]
        train_y, test_y = np.tile(bench.train_y, n_dom), np.tile(bench.test_y, n_dom)
        test_c_x, test_c_tok, test_c_y = bench.test_hold_x, bench.test_hold_tok, bench.test_y
        meta["domains"] = [("clean", *bench.corruptions)[d] for d in dom]
        meta["cacc_domain"] = bench.holdout
    else:
        n_copies = bench.test_c_x.shape[0] // n_test
        tests_c = [np.concatenate([t + i * n_test for i in range(n_copies)]) for t in tests]
        train_x, train_tok, test_x, test_tok = bench.train_x, bench.train_tok, bench.test_x, bench.test_tok
        train_y, test_y = bench.train_y, bench.test_y
        test_c_x, test_c_tok, test_c_y = bench.test_c_x, bench.test_c_tok, np.tile(bench.test_y, n_copies)
    return build_setup(clip_model=bundle.model, tokenize=bundle.tokenize, classnames=bench.classnames,
                       neg_words=words, n_ctx=n_ctx, train_x=train_x, train_y=train_y,
                       test_x=test_x, test_y=test_y, test_c_x=test_c_x, test_c_y=test_c_y,
                       ood_x=bench.ood_x, ood_kind=bench.ood_kind, client_train=shots, client_test=tests,
                       client_test_c=tests_c, zeroshot_template="a photo of a {}.", client_val=vals,
                       neg_prompts=neg_prompts, meta=meta, train_tok=train_tok, test_tok=test_tok,
                       test_c_tok=test_c_tok, ood_tok=bench.ood_tok)
