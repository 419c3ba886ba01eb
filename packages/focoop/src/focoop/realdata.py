"""A user's own images: an ``ImageFolder``-style tree and a negative-word file (``focoop run --data PATH``).

Layout (class = sub-folder name, ``_`` read as a space; images: .png .jpg .jpeg .bmp .gif .webp, any depth below the
class folder)::

    PATH/train/<class>/*.png      training pool (few-shot shots and validation splits are drawn from it)
    PATH/test/<class>/*.png       ID test pool (the same classes as train)
    PATH/ood/<set>/**/*.png       one or more OOD sets (semantic shift), e.g. ood/textures, ood/places

CACC (covariate shift) is measured on numpy corruptions (brightness, noise, blur at severity 3) of each client's ID
test images. The negative words come from ``--neg-words FILE`` (one word or phrase a line; blank lines and lines
starting with ``#`` are skipped) or, by default, the package's built-in list of common English nouns
(:data:`BUILTIN_WORDS`, no download). Words that overlap an ID class name, and words the model's tokenizer cannot
encode (e.g. outside the tiny CLIP's vocabulary), are dropped; the K least ID-like of the rest are chosen
NegLabel-style (:mod:`focoop.neglabel`) with the same CLIP that encodes the prompts.

:func:`check_image_folder` only looks at the file tree (no imports of torch), so a bad ``--data`` fails at once.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from focoop.errors import FOCoOpConfigError

IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".bmp", ".gif", ".webp")
BUILTIN_WORDS = Path(__file__).with_name("words") / "nouns.txt"


def _images(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.is_file() and p.suffix.lower() in IMAGE_SUFFIXES)


def check_image_folder(path: str | Path) -> dict:
    """Validate the tree of ``--data`` and list its files: {"classes", "train", "test", "ood"} (paths and labels).

    Raises :class:`FOCoOpConfigError` naming ``--data`` and what is expected."""
    root = Path(path).expanduser()
    if not root.is_dir():
        raise FOCoOpConfigError(f"--data {str(path)!r} is not a folder (expected train/, test/ and ood/ inside)")
    out: dict = {}
    for part in ("train", "test", "ood"):
        if not (root / part).is_dir():
            raise FOCoOpConfigError(f"--data {str(path)!r} has no {part}/ folder (expected train/<class>/, "
                                    "test/<class>/ and ood/<set>/ with images)")
    classes = sorted(p.name for p in (root / "train").iterdir() if p.is_dir())
    if len(classes) < 2:
        raise FOCoOpConfigError(f"--data {str(path)!r}: train/ must hold at least 2 class folders, got {classes}")
    test_classes = sorted(p.name for p in (root / "test").iterdir() if p.is_dir())
    if test_classes != classes:
        raise FOCoOpConfigError(f"--data {str(path)!r}: test/ must hold the same class folders as train/ "
                                f"({classes}), got {test_classes}")
    for part in ("train", "test"):
        files, labels = [], []
        for c, name in enumerate(classes):
            imgs = _images(root / part / name)
            if not imgs:
                raise FOCoOpConfigError(f"--data {str(path)!r}: {part}/{name}/ has no images "
                                        f"(allowed suffixes {IMAGE_SUFFIXES})")
            files += imgs
            labels += [c] * len(imgs)
        out[part] = (files, np.asarray(labels, dtype=np.int64))
    ood = _images(root / "ood")
    if not ood:
        raise FOCoOpConfigError(f"--data {str(path)!r}: ood/ has no images (allowed suffixes {IMAGE_SUFFIXES})")
    out["ood"] = ood
    out["classes"] = [c.replace("_", " ") for c in classes]
    return out


def read_words(path: str | Path | None = None) -> list[str]:
    """Negative-word candidates from ``path`` (one a line), or the built-in list; de-duplicated, order kept."""
    p = BUILTIN_WORDS if path is None else Path(path).expanduser()
    if not p.is_file():
        raise FOCoOpConfigError(f"--neg-words {str(path)!r} is not a file (one word a line)")
    try:
        lines = p.read_text(encoding="utf-8").splitlines()
    except UnicodeDecodeError as exc:
        raise FOCoOpConfigError(f"--neg-words {str(path)!r} is not UTF-8 text ({exc.reason})") from None
    words = [ln.strip().lower() for ln in lines if ln.strip() and not ln.strip().startswith("#")]
    words = list(dict.fromkeys(words))
    if not words:
        raise FOCoOpConfigError(f"--neg-words {str(path)!r} holds no words")
    return words


def load_images(files: list[Path], size: int) -> np.ndarray:
    """uint8 (n, size, size, 3) RGB images (bicubic resize), for the CLIP's own preprocessing."""
    from torchvision.datasets.folder import pil_loader  # torchvision's ImageFolder loader (RGB)

    arr = np.zeros((len(files), size, size, 3), dtype=np.uint8)
    for i, f in enumerate(files):
        try:
            arr[i] = np.asarray(pil_loader(str(f)).resize((size, size), resample=3))  # 3 = bicubic
        except OSError as exc:  # incl. PIL's UnidentifiedImageError
            raise FOCoOpConfigError(f"--data: {str(f)!r} is not a readable image ({type(exc).__name__})") from None
    return arr


def usable_words(bundle, words: list[str], classnames: list[str]) -> list[str]:
    """Drop words that overlap a class name or that the bundle's tokenizer cannot encode."""
    cls = {c.lower() for c in classnames}
    cls_tokens = {t for c in classnames for t in c.lower().split()}
    keep = []
    for w in words:
        if w in cls or set(w.split()) & cls_tokens:
            continue
        try:
            bundle.tokenize([f"a photo of a {w}."])
        except ValueError:
            continue
        keep.append(w)
    return keep


def image_folder_benchmark(bundle, path: str | Path, *, corruptions=("brightness", "noise", "blur"),
                           severity: int = 3, seed: int = 0):
    """Encode the tree of :func:`check_image_folder` once; returns a :class:`focoop.data.Benchmark` (no near-OOD
    set: every OOD image counts as far-OOD)."""
    import time

    from icml25.testbeds import clip as tb

    from focoop.data import Benchmark, encode_with_tokens

    t0 = time.perf_counter()
    tree = check_image_folder(path)
    size = getattr(bundle.model.visual, "image_size", 32)
    size = int(size[0] if isinstance(size, (tuple, list)) else size)
    train = load_images(tree["train"][0], size)
    test = load_images(tree["test"][0], size)
    ood = load_images(tree["ood"], size)
    copies = [tb.corrupt(test, kind=k, severity=severity, seed=seed + 2 + i) for i, k in enumerate(corruptions)]
    (trx, trt), (tex, tet), (oox, oot) = (encode_with_tokens(bundle, a) for a in (train, test, ood))
    tcx, tct = encode_with_tokens(bundle, np.concatenate(copies))
    return Benchmark(train_x=trx, train_y=tree["train"][1], test_x=tex, test_y=tree["test"][1], test_c_x=tcx,
                     corruptions=tuple(corruptions), ood_x=oox, ood_kind=np.zeros(len(ood), dtype=np.int64),
                     classnames=tuple(tree["classes"]), held_out=(), seconds=time.perf_counter() - t0,
                     train_tok=trt, test_tok=tet, test_c_tok=tct, ood_tok=oot)


def image_folder_federation(bundle, path: str | Path, *, words_file: str | Path | None, n_clients: int,
                            alpha: float, num_shot: int, seed: int, n_ctx: int, n_ood: int, split: str = "dirichlet",
                            classes_per_client: int = 2, shuffle_within_class: bool = True,
                            official_shots: bool = False):
    """The federation of a user's image folder: benchmark, NegLabel-style words, Dirichlet/pathological split."""
    from icml25.testbeds import clip as tb

    from focoop.data import make_federation
    from focoop.neglabel import select_negative_words

    if split == "domain":
        raise FOCoOpConfigError("--split domain needs the generated shapes (it corrupts the training pool per client)"
                                "; with --data use dirichlet or pathological")
    bench = image_folder_benchmark(bundle, path, seed=seed)
    classes = list(bench.classnames)
    pool = usable_words(bundle, read_words(words_file), classes)
    if len(pool) < n_ood:
        raise FOCoOpConfigError(f"--n-ood {n_ood} needs at least as many usable negative words; the word list has "
                                f"{len(pool)} after dropping class-name overlaps and words the tokenizer refuses")
    words = select_negative_words(lambda t: tb.encode_text(bundle, t), classes, nouns=pool, k=n_ood,
                                  noun_template="a photo of a {}.") if n_ood else []
    setup = make_federation(bundle, bench, n_clients=n_clients, alpha=alpha, num_shot=num_shot, seed=seed,
                            n_ctx=n_ctx, n_ood=n_ood, split=split, classes_per_client=classes_per_client,
                            shuffle_within_class=shuffle_within_class, official_shots=official_shots, words=words, neg_prompts=[f"a photo of a {w}." for w in words])
    setup.meta.update(data=str(path), n_word_pool=len(pool))
    return setup
