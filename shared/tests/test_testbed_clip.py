"""Tests of the tiny-CLIP test bed (icml25.testbeds.clip)."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("open_clip")

from icml25.testbeds import clip  # noqa: E402

SMALL = dict(vision_layers=1, text_layers=1, embed_dim=32)
FOUR = ("circle", "square", "triangle", "ring")


@pytest.fixture(scope="module", autouse=True)
def _one_thread():
    old = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(old)


@pytest.fixture(scope="session")
def tiny(tmp_path_factory):
    """A small CLIP pretrained on 4 classes (cached in a temporary folder)."""
    cache = tmp_path_factory.mktemp("clipcache")
    bundle = clip.pretrained_tiny_clip(
        classes=FOUR, steps=120, seed=0, cache_dir=cache, batch_size=64, pool_size=1000, eval_n=200, **SMALL
    )
    return bundle, cache


def test_import_is_light():
    code = "import sys, icml25.testbeds.clip; print('torch' in sys.modules, 'open_clip' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False False"


# --------------------------------------------------------------------------------------------------- tokenizer
def test_tokenizer_eot_is_largest_and_argmax_pools_there():
    tok = clip.WordTokenizer(context_length=16)
    assert tok.eot_id == len(clip.VOCAB) - 1 == max(tok.encoder.values())
    t = tok(["a photo of a circle", "a photo of a small red star ."])
    assert t.shape == (2, 16) and t.dtype == torch.long
    assert t[0].argmax().item() == 6 and t[1].argmax().item() == 9  # <sot> + words, then <eot>
    assert (t[0, 7:] == 0).all() and t[0, 0] == tok.sot_id
    assert tok.decode(t[1].tolist()) == "a photo of a small red star."
    assert torch.equal(clip.tokenize(["A Photo of a circle"]), tok(["a photo of a circle"]))
    with pytest.raises(ValueError, match="outside the tiny-CLIP vocabulary"):
        tok(["a photo of a unicorn"])
    with pytest.raises(ValueError, match="context_length=16"):
        tok(["a photo of a " + "small " * 14 + "circle"])


# -------------------------------------------------------------------------------------------------------- data
def test_shapes_deterministic_and_consistent():
    a = clip.make_shapes(64, seed=3)
    b = clip.make_shapes(64, seed=3)
    c = clip.make_shapes(64, seed=4)
    assert a.images.shape == (64, 32, 32, 3) and a.images.dtype == np.uint8 and a.labels.dtype == np.int64
    assert (
        np.array_equal(a.images, b.images) and a.captions == b.captions and np.array_equal(a.labels, b.labels)
    )
    assert not np.array_equal(a.images, c.images)
    colors = list(clip.COLORS)
    for i in range(64):
        size, color, shape = a.captions[i].split()[-3:]
        assert shape == clip.CLASSES[a.labels[i]] and color == colors[a.attrs["color"][i]]
        assert size == clip.SIZES[a.attrs["size"][i]]
    # the shape is drawn where the attributes say: the centre pixel differs from the background
    big = clip.make_shapes(50, seed=0, classes=["circle", "square"], max_noise=0.0)
    for i in range(50):
        y, x = int(big.attrs["cy"][i]), int(big.attrs["cx"][i])
        assert np.abs(big.images[i, y, x].astype(float) - big.attrs["background"][i]).max() > 40


def test_combos_excluded_and_selected():
    held = clip.heldout_combos(clip.CLASSES[:8])
    assert len(held) == 8 and len({c for _, c in held}) >= 5
    d = clip.make_shapes(400, seed=1, classes=clip.CLASSES[:8], exclude_combos=held)
    colors = list(clip.COLORS)
    pairs = {(d.classnames[y], colors[c]) for y, c in zip(d.labels, d.attrs["color"])}
    assert not pairs & held and len(pairs) >= 50  # 56 pairs allowed
    e = clip.make_shapes(100, seed=1, classes=clip.CLASSES[:8], only_combos=held)
    assert {(e.classnames[y], colors[c]) for y, c in zip(e.labels, e.attrs["color"])} == set(held)


def test_ground_truth_flags():
    d = clip.make_shapes(
        400,
        seed=2,
        label_noise=0.2,
        ambiguous_frac=0.2,
        near_duplicate_frac=0.2,
        rare_frac=0.2,
        max_noise=4.0,
    )
    noisy = d.label_noisy
    assert 0.1 < noisy.mean() < 0.3
    assert (d.labels[noisy] != d.attrs["true_label"][noisy]).all()
    assert (d.labels[~noisy] == d.attrs["true_label"][~noisy]).all()
    assert all(d.captions[i].endswith(d.classnames[d.labels[i]]) for i in range(len(d)))
    amb = d.ambiguous
    assert (
        amb.any()
        and (d.attrs["second_label"][amb] >= 0).all()
        and (d.attrs["second_label"][~amb] == -1).all()
    )
    assert (d.attrs["second_label"][amb] != d.attrs["true_label"][amb]).all()
    # near-duplicates are jittered copies of a prototype: same attributes, centre within 1 px, similar pixels
    dup = np.flatnonzero(d.attrs["duplicate_of"] >= 0)
    assert len(dup) > 40 and d.near_duplicate[dup].all()
    proto = d.attrs["duplicate_of"][dup]
    assert (d.attrs["true_label"][dup] == d.attrs["true_label"][proto]).all()
    assert (d.attrs["color"][dup] == d.attrs["color"][proto]).all()
    assert (np.abs(d.attrs["cx"][dup] - d.attrs["cx"][proto]) <= 1).all()
    dist_dup = np.abs(d.images[dup].astype(float) - d.images[proto].astype(float)).mean()
    rnd = np.random.default_rng(0).permutation(len(d))
    dist_rnd = np.abs(d.images.astype(float) - d.images[rnd].astype(float)).mean()
    assert dist_dup < 0.5 * dist_rnd
    # rare mode: tiny or with the centre near an edge
    rare = d.rare_mode
    S = 32
    tiny = d.attrs["radius"] < 0.145 * S
    edge = np.minimum.reduce([d.attrs["cx"], d.attrs["cy"], S - d.attrs["cx"], S - d.attrs["cy"]])
    edge = edge < 0.35 * d.attrs["radius"] + 1.01  # 35% outside, +-1 px jitter of near-duplicates
    assert rare.any() and (tiny | edge)[rare].all() and not (tiny | edge)[~rare].any()


def test_textures_and_corruptions():
    t = clip.make_textures(40, seed=0)
    assert t.images.shape == (40, 32, 32, 3) and set(t.labels) <= set(range(len(clip.TEXTURES)))
    assert np.array_equal(t.images, clip.make_textures(40, seed=0).images)
    assert t.captions[0] == f"a photo of a {clip.TEXTURES[t.labels[0]]} texture"
    x = clip.make_shapes(16, seed=0).images
    for kind in clip.CORRUPTIONS:
        dists = [
            np.abs(clip.corrupt(x, kind=kind, severity=s, seed=0).astype(float) - x).mean() for s in (1, 3, 5)
        ]
        assert dists[0] > 0 and dists[0] < dists[1] < dists[2], kind
        assert clip.corrupt(x, kind=kind, severity=2).dtype == np.uint8
    with pytest.raises(ValueError, match="kind must be one of"):
        clip.corrupt(x, kind="fog", severity=1)
    with pytest.raises(ValueError, match="severity"):
        clip.corrupt(x, kind="blur", severity=9)


def test_data_bad_inputs():
    with pytest.raises(ValueError, match="image_size"):
        clip.make_shapes(4, seed=0, image_size=8)
    with pytest.raises(ValueError, match="n must be"):
        clip.make_shapes(0, seed=0)
    with pytest.raises(ValueError, match="unknown shape"):
        clip.make_shapes(4, seed=0, classes=["circle", "blob"])
    with pytest.raises(ValueError, match="duplicates"):
        clip.make_shapes(4, seed=0, classes=["circle", "circle"])
    with pytest.raises(ValueError, match="no \\(shape, colour\\)"):
        clip.make_shapes(4, seed=0, classes=["circle"], colors=["red"], exclude_combos=[("circle", "red")])


# ------------------------------------------------------------------------------------------------------- model
def test_model_config_checks():
    with pytest.raises(ValueError, match="divisible by patch_size"):
        clip.build_tiny_clip(vision="vit", image_size=32, patch_size=6)
    with pytest.raises(ValueError, match="multiple of 32"):
        clip.build_tiny_clip(image_size=48)
    with pytest.raises(ValueError, match="vision must be one of"):
        clip.build_tiny_clip(vision="convnext")
    with pytest.raises(ValueError, match="does not match the tokenizer"):
        clip.build_tiny_clip(vocab_size=49408)
    for kw in ({}, {"vision": "vit"}, {"vision": "vit", "vision_pool": "tok"}):
        cfg = clip.clip_config(**kw)
        assert clip.clip_config(**cfg) == cfg  # the stored config round-trips (cache keys, checkpoint reload)
    import open_clip.modified_resnet as mr
    from open_clip.transformer import VisionTransformer

    assert isinstance(clip.build_tiny_clip().visual, mr.ModifiedResNet)
    assert isinstance(clip.build_tiny_clip(vision="vit").visual, VisionTransformer)


def test_text_tower_pools_at_eot_with_causal_mask():
    model = clip.build_tiny_clip(seed=1, **SMALL)
    tok = clip.WordTokenizer(context_length=model.context_length)
    t = tok(["a photo of a red circle", "a star"])
    ref = model.encode_text(t)
    # manual: batch-first transformer with the causal mask, final LN, pool at argmax (the <eot>), project
    x = model.token_embedding(t) + model.positional_embedding
    x = model.ln_final(model.transformer(x, attn_mask=model.attn_mask))
    pooled = x[torch.arange(2), t.argmax(-1)] @ model.text_projection
    torch.testing.assert_close(ref, pooled)
    # causal: padding after <eot> cannot change the pooled feature
    t2 = t.clone()
    t2[0, 8:] = 5
    torch.testing.assert_close(model.encode_text(t2)[0], ref[0])
    feats = clip.encode_text(clip.random_clip(seed=1, **SMALL), ["a circle", "a square"])
    assert feats.shape == (2, 32) and torch.allclose(feats.norm(dim=-1), torch.ones(2))


# ------------------------------------------------------------------------------------------------- pretraining
def test_pretrained_small_clip_learns(tiny):
    """Machinery check on a small budget (the accuracy gate itself is the slow test below)."""
    bundle, _ = tiny
    assert bundle.classnames == FOUR and not bundle.info["cache"].hit
    losses = np.array(bundle.info["losses"])
    assert len(losses) == 120 and np.isfinite(losses).all()
    assert losses[-20:].mean() < losses[:20].mean() - 0.2
    zs = bundle.info["zero_shot"]
    assert set(zs) == {"heldout_combos", "all_combos"} and all(0.0 <= v <= 1.0 for v in zs.values())
    d = clip.make_shapes(200, seed=123, classes=FOUR)
    acc = clip.zero_shot_accuracy(bundle, d.images, d.labels, FOUR)
    logits = clip.zero_shot_logits(bundle, d.images, FOUR)
    assert logits.shape == (200, 4) and acc == float((logits.argmax(1).numpy() == d.labels).mean())
    f = clip.encode_images(bundle, d.images[:5])
    assert f.shape == (5, 32) and torch.allclose(f.norm(dim=-1), torch.ones(5), atol=1e-5)
    x = bundle.preprocess(d.images[:2])
    assert x.shape == (2, 3, 32, 32) and x.dtype == torch.float32
    with pytest.raises(ValueError, match="distinct"):
        clip.zero_shot_accuracy(bundle, d.images, d.labels, ["circle", "circle"])


def test_pretrained_clip_cache_hit_and_key(tiny):
    bundle, cache = tiny
    again = clip.pretrained_tiny_clip(
        classes=FOUR, steps=120, seed=0, cache_dir=cache, batch_size=64, pool_size=1000, eval_n=200, **SMALL
    )
    assert again.info["cache"].hit and again.info["cache"].path == bundle.info["cache"].path
    for (k, v), w in zip(bundle.model.state_dict().items(), again.model.state_dict().values()):
        assert torch.equal(v, w), k
    from icml25.testbeds.cache import cache_key

    base = dict(classes=FOUR, steps=120, seed=0)
    assert cache_key(base) != cache_key({**base, "steps": 121}) != cache_key({**base, "seed": 1})


@pytest.mark.slow
def test_gate_default_pretrained_clip():
    """The gate of the issue on the default bundle (ResNet tower, 8 classes, 1200 steps, 82-93 s on 2 cores).

    Measured with seeds 0 / 1 / 2 of the pretraining: 85.0% / 86.2% / 94.6% zero-shot on the held-out colour x shape
    combinations and 97.8% / 98.3% / 99.0% on all (chance 12.5%).
    """
    torch.set_num_threads(2)
    bundle = clip.pretrained_tiny_clip(progress=True)
    assert len(bundle.classnames) == 8
    d = clip.make_shapes(2000, seed=4243, classes=bundle.classnames)
    assert clip.zero_shot_accuracy(bundle, d.images, d.labels, bundle.classnames) >= 0.95
    d = clip.make_shapes(2000, seed=4242, classes=bundle.classnames, only_combos=bundle.heldout_combos)
    assert clip.zero_shot_accuracy(bundle, d.images, d.labels, bundle.classnames) >= 0.8
    # its pretraining time (82-93 s alone on 2 cores) is reported in bundle.info["seconds"], not asserted: a
    # wall-clock threshold in CI measures the machine's load, not the code (753 s under a loaded .ci/run)


# ------------------------------------------------------------------ a user's real open_clip checkpoint (offline)
@pytest.fixture(scope="module")
def real_checkpoint(tmp_path_factory):
    """An open_clip architecture registered from a JSON config (as a user's custom model would be), its weights
    saved as a local .safetensors file and as a ``local-dir:`` folder."""
    from icml25.testing import tiny_open_clip_checkpoint
    from safetensors.torch import load_file

    folder = tmp_path_factory.mktemp("realclip")
    weights = tiny_open_clip_checkpoint(folder, "icml25-test-ViT-T", image_size=48, patch_size=16, context_length=20,
                                        seed=3)  # fmt: skip
    return folder, load_file(str(weights))


def test_load_open_clip_checkpoint_matches_open_clip(real_checkpoint):
    import open_clip

    folder, state = real_checkpoint
    bundle = clip.load_open_clip("icml25-test-ViT-T", folder / "icml25-test-ViT-T.safetensors",
                                 classnames=("cat", "dog"))  # fmt: skip
    for k, v in bundle.model.state_dict().items():
        assert torch.equal(v, state[k]), k
    prompts = ["a photo of a cat", "a photo of a dog"]
    ref = bundle.model.encode_text(open_clip.tokenize(prompts, context_length=20), normalize=True)
    torch.testing.assert_close(clip.encode_text(bundle, prompts), ref.detach())
    d = clip.make_shapes(3, seed=0, classes=FOUR)
    x = bundle.preprocess(d.images)
    assert x.shape == (3, 3, 48, 48)  # resized from 32x32 to the model's input size
    feats = clip.encode_images(bundle, d.images)
    assert feats.shape == (3, 32)
    torch.testing.assert_close(feats.norm(dim=1), torch.ones(3))
    assert clip.zero_shot_logits(bundle, d.images, ["cat", "dog"]).shape == (3, 2)
    with pytest.raises(ValueError, match="context_length is 20"):
        bundle.tokenize(["a photo of a " + "very " * 30 + "long cat"])


def test_load_open_clip_local_dir_equals_file(real_checkpoint):
    folder, state = real_checkpoint
    bundle = clip.load_open_clip(f"local-dir:{folder / 'icml25-test-ViT-T-local'}")
    for k, v in bundle.model.state_dict().items():
        assert torch.equal(v, state[k]), k


@pytest.mark.parametrize(
    ("name", "ckpt", "match"),
    [
        ("hf-hub:laion/CLIP-ViT-B-32", None, "hf-hub"),
        ("ViT-B-32", "openai", "pretrained tags"),
        ("ViT-B-32", None, "existing local weight file"),
        ("no-such-arch", "x.pt", "not an open_clip architecture"),
        ("local-dir:/nonexistent/dir", None, "open_clip_config.json"),
    ],
)
def test_load_open_clip_refuses_downloads_and_bad_names(name, ckpt, match):
    with pytest.raises(ValueError, match=match):
        clip.load_open_clip(name, ckpt)


def test_prompt_ensemble_is_the_renormalised_mean_of_template_embeddings():
    bundle = clip.random_clip(seed=1, **SMALL)
    d = clip.make_shapes(5, seed=3, classes=FOUR)
    single = clip.zero_shot_logits(bundle, d.images, FOUR)
    torch.testing.assert_close(clip.zero_shot_logits(bundle, d.images, FOUR, ["a photo of a {}"]), single)
    temps = ["a photo of a {}", "a drawing of a {}"]
    t = torch.stack([clip.encode_text(bundle, [x.format(c) for c in FOUR]) for x in temps]).mean(0)
    expected = clip.encode_images(bundle, d.images) @ (t / t.norm(dim=1, keepdim=True)).T
    torch.testing.assert_close(clip.zero_shot_logits(bundle, d.images, FOUR, temps), expected)
    with pytest.raises(ValueError, match="template"):
        clip.zero_shot_logits(bundle, d.images, FOUR, [])
    with pytest.raises(ValueError, match="template"):
        clip.zero_shot_logits(bundle, d.images, FOUR, ["no placeholder"])
