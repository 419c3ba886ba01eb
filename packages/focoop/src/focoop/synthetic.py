"""A small synthetic federation for unit tests and smoke runs (no pretrained CLIP needed).

A randomly initialised open_clip ``CLIP`` (BPE tokenizer, built from dataclasses, no downloads) provides the text
tower; image features are drawn around the zero-shot text feature of each class (class mean + Gaussian noise), the
analytic toy encoder of the tiny-CLIP note, so that the prompts have a known signal to fit. Far-OOD features are
isotropic noise, near-OOD features sit around held-out class names, corrupted features add extra noise.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

from focoop.partition import dirichlet_split
from focoop.setup import FederationSetup, build_setup

SYN_CLASSES = ("circle", "square", "triangle", "star", "heart", "ring")
SYN_HELD_OUT = ("hexagon", "diamond")
SYN_WORDS = ("table", "river", "cloud", "violin", "pepper", "ladder", "candle", "tiger", "mountain", "engine",
             "pillow", "glacier", "rocket", "spoon", "forest", "banana")


def tiny_open_clip(*, seed: int = 0, context_length: int = 16, width: int = 32, embed_dim: int = 32):
    """A random ~1.7 M-parameter open_clip CLIP (1 layer per tower) and its tokenizer; no network access."""
    import open_clip
    from open_clip import CLIP, CLIPTextCfg, CLIPVisionCfg

    torch.manual_seed(seed)
    model = CLIP(embed_dim, vision_cfg=CLIPVisionCfg(image_size=32, patch_size=8, width=width, layers=1,
                                                     head_width=16),
                 text_cfg=CLIPTextCfg(context_length=context_length, vocab_size=49408, width=width, heads=2,
                                      layers=1)).eval()
    with torch.no_grad():
        model.logit_scale.fill_(float(np.log(30.0)))

    def tokenize(texts):
        return open_clip.tokenize(texts, context_length=context_length)

    return model, tokenize


def synthetic_setup(*, n_clients: int = 3, alpha: float = 0.5, num_shot: int = 4, seed: int = 0, n_ctx: int = 4,
                    noise: float = 0.6, n_per_class: int = 40, n_ood: int = 60) -> FederationSetup:
    """Build a :class:`FederationSetup` from :func:`tiny_open_clip` with class-mean + noise image features."""
    model, tokenize = tiny_open_clip(seed=seed)
    with torch.no_grad():
        proto = F.normalize(model.encode_text(tokenize([f"a photo of a {c}." for c in SYN_CLASSES])), dim=-1)
        near = F.normalize(model.encode_text(tokenize([f"a photo of a {c}." for c in SYN_HELD_OUT])), dim=-1)
    rng = np.random.default_rng(seed)
    c, e = proto.shape
    proto = proto.numpy()

    def draw(n, sigma):
        y = np.repeat(np.arange(c), n)
        x = proto[y] + sigma * rng.standard_normal((y.size, e)) / np.sqrt(e)
        return x.astype(np.float32), y

    train_x, train_y = draw(n_per_class, noise)
    test_x, test_y = draw(n_per_class // 2, noise)
    test_c_x = test_x + 1.5 * noise * rng.standard_normal(test_x.shape).astype(np.float32) / np.sqrt(e)
    far = rng.standard_normal((n_ood // 2, e)).astype(np.float32)
    near_y = rng.integers(0, len(SYN_HELD_OUT), n_ood - n_ood // 2)
    near_x = (near.numpy()[near_y] + noise * rng.standard_normal((near_y.size, e)) / np.sqrt(e)).astype(np.float32)
    ood_x = np.concatenate([far, near_x])
    ood_kind = np.concatenate([np.zeros(far.shape[0]), np.ones(near_x.shape[0])]).astype(np.int64)
    sp = dirichlet_split(train_y, test_y, n_clients=n_clients, n_classes=c, alpha=alpha, num_shot=num_shot,
                         seed=seed)
    return build_setup(clip_model=model, tokenize=tokenize, classnames=SYN_CLASSES, neg_words=SYN_WORDS,
                       n_ctx=n_ctx, train_x=train_x, train_y=train_y, test_x=test_x, test_y=test_y,
                       test_c_x=test_c_x, test_c_y=test_y, ood_x=ood_x, ood_kind=ood_kind, client_train=sp.shots,
                       client_test=sp.test, client_val=sp.val, meta={"kind": "synthetic", "seed": seed})
