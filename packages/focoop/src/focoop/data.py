"""The tiny-CLIP test bed as a federated OOD benchmark (``icml25.testbeds.clip``), with features encoded once.

* ID: generated shapes of the tiny CLIP's ID classes (default: the first 8 of ``CLASSES``), a train pool and a test
  pool drawn with seeds disjoint from the CLIP's pretraining seeds;
* covariate shift (CACC): the ID test pool under ``corrupt`` (brightness, noise, blur; one copy per kind);
* far-OOD: ``make_textures`` images; near-OOD: shapes of the held-out classes (default the other 4 of ``CLASSES``);
* negative words: NegLabel-style choice (:mod:`focoop.neglabel`) from the tiny CLIP's vocabulary words that are not
  ID class names, not held-out (near-OOD) class names and not texture words (so the OOD prompts cannot simply name
  the OOD test sets).

The image encoder is frozen, so :func:`encode_benchmark` encodes every image once; :func:`make_federation` then
builds the Dirichlet split and the :class:`~focoop.setup.FederationSetup` for any α / seed without re-encoding.
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
                     data_seed: int = 1000) -> Benchmark:
    """Generate and encode all images once (seeds ``data_seed + …``, disjoint from the CLIP pretraining seeds)."""
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
    enc = tb.encode_images
    return Benchmark(
        train_x=enc(bundle, train.images), train_y=np.asarray(train.labels),
        test_x=enc(bundle, test.images), test_y=np.asarray(test.labels),
        test_c_x=enc(bundle, np.concatenate(copies)) if copies else enc(bundle, test.images),
        corruptions=tuple(corruptions), ood_x=enc(bundle, np.concatenate(parts)),
        ood_kind=np.concatenate([np.zeros(n_far, dtype=np.int64), np.ones(sum(len(p) for p in parts[1:]),
                                                                            dtype=np.int64)]),
        classnames=classes, held_out=held, seconds=time.perf_counter() - t0)


def negative_words(bundle, classnames, *, k: int, nouns=DEFAULT_NOUNS, adjectives=DEFAULT_ADJECTIVES) -> list[str]:
    """NegLabel-style K words for the tiny CLIP (see module docstring)."""
    from icml25.testbeds import clip as tb

    def encode_text(texts):
        return tb.encode_text(bundle, texts)

    return select_negative_words(encode_text, classnames, nouns=nouns, adjectives=adjectives, k=k,
                                 noun_template=NOUN_TEMPLATE, adj_template=ADJ_TEMPLATE)


def make_federation(bundle, bench: Benchmark, *, n_clients: int, alpha: float, num_shot: int, seed: int,
                    n_ctx: int = 4, n_ood: int = 10, shuffle_within_class: bool = True,
                    official_shots: bool = False) -> FederationSetup:
    """Dirichlet few-shot federation over the precomputed benchmark features.

    Each client gets its few-shot training features, a validation split (the rest of its share of the training
    pool, :func:`focoop.partition.dirichlet_split`) and its test split (test pool). The negative words' zero-shot
    texts (for the NegLabel columns of the baselines) use the templates the words were selected with."""
    sp = dirichlet_split(bench.train_y, bench.test_y, n_clients=n_clients, n_classes=len(bench.classnames),
                         alpha=alpha, num_shot=num_shot, seed=seed, shuffle_within_class=shuffle_within_class,
                         official_shots=official_shots)
    shots, tests, props = sp.shots, sp.test, sp.proportions
    n_test = len(bench.test_y)
    n_copies = bench.test_c_x.shape[0] // n_test
    tests_c = [np.concatenate([t + i * n_test for i in range(n_copies)]) for t in tests]
    test_c_y = np.tile(bench.test_y, n_copies)
    words = negative_words(bundle, bench.classnames, k=n_ood) if n_ood else []
    neg_prompts = [(ADJ_TEMPLATE if w in DEFAULT_ADJECTIVES else NOUN_TEMPLATE).format(w) for w in words]
    return build_setup(clip_model=bundle.model, tokenize=bundle.tokenize, classnames=bench.classnames,
                       neg_words=words, n_ctx=n_ctx, train_x=bench.train_x, train_y=bench.train_y,
                       test_x=bench.test_x, test_y=bench.test_y, test_c_x=bench.test_c_x, test_c_y=test_c_y,
                       ood_x=bench.ood_x, ood_kind=bench.ood_kind, client_train=shots, client_test=tests,
                       client_test_c=tests_c, zeroshot_template="a photo of a {}.", client_val=sp.val,
                       neg_prompts=neg_prompts,
                       meta={"alpha": alpha, "seed": seed, "proportions": props.tolist(), "neg_words": words})
