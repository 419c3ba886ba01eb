"""Pathological and domain-shift splits; patch features of the image tower (FedOTP)."""

from types import SimpleNamespace

import numpy as np
import pytest
import torch
from focoop.errors import FOCoOpConfigError
from focoop.partition import pathological_proportions, pathological_split


def test_pathological_each_client_holds_k_classes_and_columns_sum_to_one():
    p = pathological_proportions(10, 8, classes_per_client=2, seed=0)
    assert ((p > 0).sum(1) == 2).all()
    np.testing.assert_allclose(p.sum(0), 1.0)  # 10 * 2 >= 8: every class is held
    labels = np.repeat(np.arange(8), 30)
    sp = pathological_split(labels, np.repeat(np.arange(8), 10), n_clients=10, n_classes=8, classes_per_client=2,
                            num_shot=4, seed=0)
    for j, shots in enumerate(sp.shots):
        held = set(np.flatnonzero(p[j] > 0))
        assert set(labels[shots]) == held and len(shots) == 4 * len(held)
        assert not np.intersect1d(shots, sp.val[j]).size
    all_shots = np.concatenate(sp.shots)
    assert np.unique(all_shots).size == all_shots.size  # disjoint across clients
    dirichlet_like = pathological_proportions(10, 8, classes_per_client=8, seed=0)
    assert ((dirichlet_like > 0).sum(1) == 8).all()  # k = C: every client holds every class (control)
    with pytest.raises(FOCoOpConfigError, match="classes_per_client"):
        pathological_proportions(3, 8, classes_per_client=9, seed=0)


def _fake_bench(n_train=12, n_test=6, e=16):
    from focoop.data import Benchmark

    g = torch.Generator().manual_seed(0)
    c = 3
    kinds = ("brightness", "noise", "blur")

    def feats(n):
        return torch.nn.functional.normalize(torch.randn(n, e, generator=g), dim=-1)

    return Benchmark(train_x=feats(n_train * c), train_y=np.repeat(np.arange(c), n_train),
                     test_x=feats(n_test * c), test_y=np.repeat(np.arange(c), n_test),
                     test_c_x=feats(3 * n_test * c), corruptions=kinds, ood_x=feats(10),
                     ood_kind=np.zeros(10, dtype=np.int64), classnames=("circle", "square", "triangle"), held_out=(),
                     train_dom_x=feats(3 * n_train * c), test_hold_x=feats(n_test * c), holdout="contrast")


def test_domain_split_gives_each_client_its_own_domain_and_a_held_out_cacc_domain():
    from focoop.data import make_federation
    from focoop.synthetic import tiny_open_clip

    model, tok = tiny_open_clip(seed=0, width=16, embed_dim=16)
    bundle = SimpleNamespace(model=model, tokenize=tok)
    bench = _fake_bench()
    st = make_federation(bundle, bench, n_clients=6, num_shot=2, seed=0,
                         n_ood=2, split="domain", words=["table", "river"])
    n = len(bench.train_y)
    pools = [bench.train_x] + [bench.train_dom_x[d * n:(d + 1) * n] for d in range(3)]
    assert st.meta["domains"] == ["clean", "brightness", "noise", "blur", "clean", "brightness"]
    for j, cd in enumerate(st.clients):
        pool = pools[j % 4]
        # every training feature of client j is a row of its own domain's pool and of no other domain's
        hits = [(torch.cdist(cd.train_x, p) < 1e-2).any(1).all().item() for p in pools]
        assert hits == [d == j % 4 for d in range(4)], (j, hits)
        assert (torch.cdist(cd.test_c_x, bench.test_hold_x) < 1e-2).any(1).all()  # CACC: the held-out domain
        assert sorted(set(cd.train_y.tolist())) == [0, 1, 2]  # all classes on every client
        assert pool.shape[1] == cd.train_x.shape[1]
    st_dir = make_federation(bundle, bench, n_clients=6, num_shot=2,
                             seed=0, n_ood=2, split="dirichlet", words=["table", "river"])
    assert (torch.cdist(st_dir.clients[1].train_x, pools[0]) < 1e-2).any(1).all()  # control: clean features
    with pytest.raises(FOCoOpConfigError, match="split"):
        make_federation(None, bench, n_clients=2, num_shot=2, seed=0, n_ood=0, split="nope", words=[])


def test_patch_features_pool_to_the_image_feature():
    from focoop.data import encode_with_tokens
    from icml25.testbeds import clip as tb

    torch.set_num_threads(1)
    bundle = tb.random_clip(seed=0, vision="vit")
    imgs = tb.make_shapes(6, seed=3).images
    pooled, tokens = encode_with_tokens(bundle, imgs)
    torch.testing.assert_close(pooled, tb.encode_images(bundle, imgs), rtol=1e-5, atol=1e-5)
    assert tokens.shape[:2] == (6, 16) and tokens.shape[2] == pooled.shape[1]
    # tiny CLIP ViT pools by the mean of its patch tokens: mean of projected tokens ∝ the pooled feature
    vis = bundle.model.visual
    vis.output_tokens = True
    with torch.no_grad():
        p, t = vis(bundle.preprocess(imgs))
    vis.output_tokens = False
    torch.testing.assert_close((t @ vis.proj).mean(1), p, rtol=1e-4, atol=1e-5)
    assert torch.allclose(torch.nn.functional.normalize(tokens, dim=-1), tokens, atol=1e-5)
    _, none = encode_with_tokens(bundle, imgs, tokens=False)
    assert none is None
