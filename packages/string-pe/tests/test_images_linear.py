"""Generated RGB-D scenes and their ImageFolder round trip; Performer-style linear attention with STRING."""

import numpy as np
import pytest
import torch
from string_pe import PositionEncodingError
from string_pe.attention import make_encoding
from string_pe.images import SHAPES, load_image_folder_rgbd, render_scenes, write_image_folder
from string_pe.linear import linear_attention, linear_scores, relu_features


def test_scenes_are_deterministic_balanced_and_depth_marks_the_nearer_object():
    x, d, y = render_scenes(40, seed=3)
    x2, d2, y2 = render_scenes(40, seed=3)
    assert torch.equal(x, x2) and torch.equal(d, d2) and torch.equal(y, y2)
    assert x.shape == (40, 3, 32, 32) and d.shape == (40, 1, 32, 32) and y.shape == (40,)
    assert torch.bincount(y, minlength=4).tolist() == [10] * 4
    assert 0 <= float(x.min()) and float(x.max()) <= 1 and 0 <= float(d.min()) and float(d.max()) <= 1
    # the nearest large region of every depth map is an object (depth < 0.5), the background is far (> 0.75)
    assert (d.flatten(1).min(1).values < 0.5).all()
    assert (torch.quantile(d.flatten(1), 0.25, dim=1) > 0.5).float().mean() > 0.5
    assert not torch.equal(render_scenes(40, seed=4)[0], x)  # negative control: another seed differs
    with pytest.raises(PositionEncodingError, match="size"):
        render_scenes(4, size=8)
    with pytest.raises(PositionEncodingError, match="n must be"):
        render_scenes(0)


def test_image_folder_round_trip_keeps_depth_in_alpha(tmp_path):
    x, d, y = render_scenes(8, seed=0)
    write_image_folder(tmp_path / "s", x, d, y)
    assert sorted(p.name for p in (tmp_path / "s").iterdir()) == sorted(SHAPES)
    xr, dr, yr, classes = load_image_folder_rgbd(tmp_path / "s", depth=True)
    assert classes == sorted(SHAPES)
    # DatasetFolder sorts classes by name: map back and compare image by image (8-bit quantisation)
    order = [sorted(SHAPES).index(SHAPES[c]) for c in y.tolist()]
    assert sorted(yr.tolist()) == sorted(order)
    for i in range(8):
        j = [k for k in range(8) if torch.allclose(xr[k], x[i], atol=1 / 255 + 1e-6)]
        assert len(j) == 1 and yr[j[0]] == order[i]
        assert torch.allclose(dr[j[0]], d[i], atol=1 / 255 + 1e-6)
    xr2, dr2, _, _ = load_image_folder_rgbd(tmp_path / "s")  # RGB only: depth dropped
    assert dr2 is None and torch.equal(xr2, xr)
    write_image_folder(tmp_path / "rgb", x, None, y)
    with pytest.raises(PositionEncodingError, match="alpha"):
        load_image_folder_rgbd(tmp_path / "rgb", depth=True)
    with pytest.raises(FileNotFoundError, match="does not exist"):
        load_image_folder_rgbd(tmp_path / "missing")


def _setup(dtype=torch.float64, seed=0):
    g = torch.Generator().manual_seed(seed)
    h, d, m, n = 2, 8, 16, 10
    q = torch.randn(3, h, n, d, generator=g, dtype=dtype)
    k = torch.randn(3, h, n, d, generator=g, dtype=dtype)
    v = torch.randn(3, h, n, 5, generator=g, dtype=dtype)
    pos = torch.rand(3, n, 2, generator=g, dtype=dtype) * 8
    W = torch.randn(h, m, d, generator=g, dtype=dtype)
    return q, k, v, pos, W, h, d, m


@pytest.mark.parametrize("name", ["rope-axial", "rope-mixed", "cayley", "circulant"])
def test_linear_attention_relative_property_on_features_only(f64, name):
    q, k, v, pos, W, h, d, m = _setup()
    kw = {"s_init_std": 0.3} if name == "cayley" else {}
    enc_f = make_encoding(name, head_dim=m, coord_dim=2, num_heads=h, **kw)
    shift = torch.tensor([13.0, -7.5])
    a = linear_scores(q, k, pos, enc_f, W, where="features")
    b = linear_scores(q, k, pos + shift, enc_f, W, where="features")
    torch.testing.assert_close(a, b, atol=1e-10, rtol=1e-10)
    # the score equals ⟨φ(q_i), R(r_j − r_i) φ(k_j)⟩ with the dense STRING matrix
    fq, fk = relu_features(q, W), relu_features(k, W)
    i, j = 1, 4
    R = enc_f.rotation_matrix(pos[:, j:j + 1] - pos[:, i:i + 1])[:, :, 0]  # (B, H, m, m)
    want = torch.einsum("bhm,bhmn,bhn->bh", fq[:, :, i], R, fk[:, :, j])
    # (for Cayley, forward applies RoPE(r)P and rotation_matrix is PᵀRoPE(r)P: the same score)
    torch.testing.assert_close(a[:, :, i, j], want, atol=1e-10, rtol=1e-10)
    # negative control: the encoding before the feature map breaks translation invariance
    enc_i = make_encoding(name, head_dim=d, coord_dim=2, num_heads=h, **kw)
    a = linear_scores(q, k, pos, enc_i, W, where="inputs")
    b = linear_scores(q, k, pos + shift, enc_i, W, where="inputs")
    assert float((a - b).abs().max().detach() / a.abs().max().detach()) > 1e-3


@pytest.mark.parametrize("where", ["features", "inputs"])
def test_linear_attention_equals_quadratic_form(f64, where):
    q, k, v, pos, W, h, d, m = _setup()
    enc = make_encoding("circulant", head_dim=m if where == "features" else d, coord_dim=2, num_heads=h)
    out = linear_attention(q, k, v, pos, enc, W, where=where, eps=0.0)
    s = linear_scores(q, k, pos, enc, W, where=where)
    if where == "features":
        norm = (relu_features(q, W) @ relu_features(k, W).transpose(-1, -2)).sum(-1, keepdim=True)
    else:
        norm = s.sum(-1, keepdim=True)
    torch.testing.assert_close(out, (s @ v) / norm, atol=1e-10, rtol=1e-10)
    with pytest.raises(PositionEncodingError, match="W must have shape"):
        linear_attention(q, k, v, pos, enc, W[:1], where=where)
    with pytest.raises(PositionEncodingError, match="where"):
        linear_attention(q, k, v, pos, enc, W, where="after")


def test_init_options_change_the_start(f64):
    from string_pe import CayleySTRING, CirculantSTRING

    torch.manual_seed(0)
    z = CayleySTRING(head_dim=8, num_heads=2)
    r = CayleySTRING(head_dim=8, num_heads=2, s_init_std=0.1)
    eye = torch.eye(8).expand(2, 8, 8)
    torch.testing.assert_close(z.orthogonal(), eye)  # S = 0: P = I (starts as RoPE-Mixed)
    assert float((r.orthogonal().detach() - eye).abs().max()) > 1e-2
    c0 = CirculantSTRING(head_dim=8, num_heads=2)
    c1 = CirculantSTRING(head_dim=8, num_heads=2, init="normal", init_std=0.1)
    assert not torch.allclose(c0.coeffs, c1.coeffs)
    assert np.isfinite(float(c1.rates().detach().abs().max()))


def _object_centroids(depth):
    """Centroids (x, y) of the nearest region (depth within 0.06 of the minimum) and of the rest of the objects
    (depth < 0.8, the background lies at ~0.85-0.95) of one depth map (1, H, W) without distractors."""
    d = depth[0]
    yy, xx = torch.meshgrid(torch.arange(d.shape[0]), torch.arange(d.shape[1]), indexing="ij")
    near = d <= d.min() + 0.06
    far = (d < 0.8) & ~near
    c = [torch.stack([xx[m].float().mean(), yy[m].float().mean()]) for m in (near, far)]
    return c[0], c[1], int(far.sum())


def test_relation_scenes_label_the_direction_of_the_nearer_object():
    from string_pe.images import RELATIONS

    x, d, y = render_scenes(40, task="relation", distractors=0, seed=5)
    assert torch.bincount(y, minlength=4).tolist() == [10] * 4
    hits, shuffled = 0, 0
    perm = torch.randperm(40, generator=torch.Generator().manual_seed(0))
    for i in range(40):
        near, far, n_far = _object_centroids(d[i])
        assert n_far > 0  # the farther object is never hidden completely
        v = near - far
        direction = int(torch.round(torch.atan2(v[1], v[0]) / (torch.pi / 2))) % 4  # 0 right, 1 below, 2 left, 3 above
        hits += direction == int(y[i])
        shuffled += direction == int(y[perm[i]])
    assert hits >= 38  # the label is the direction seen in the depth map
    assert shuffled <= 25  # negative control: shuffled labels do not match
    assert RELATIONS[0] == "right" and len(RELATIONS) == 4
    with pytest.raises(PositionEncodingError, match="task"):
        render_scenes(4, task="colour")


def test_upright_shapes_change_only_the_objects():
    a = render_scenes(6, seed=2, distractors=0)
    b = render_scenes(6, seed=2, distractors=0, rotate=False)
    assert torch.equal(a[2], b[2])  # same labels, same scenes otherwise
    assert not torch.equal(a[1], b[1])  # the object masks differ
    assert (a[1] > 0.8).float().mean() == pytest.approx(float((b[1] > 0.8).float().mean()), abs=0.1)


def test_linear_attention_layer_and_point_set_model(f64):
    from string_pe import Attention, PointSetClassifier

    torch.manual_seed(0)
    layer = Attention(dim=16, num_heads=2, encoding="cayley", coord_dim=2, attn="linear",
                      encoding_kwargs={"s_init_std": 0.3})
    x, pos = torch.randn(2, 7, 16), torch.rand(2, 7, 2) * 8
    heads = lambda t: t.unflatten(-1, (2, 8)).transpose(1, 2)  # noqa: E731  (B, N, D) -> (B, H, N, d)
    ref = linear_attention(heads(layer.q(x)), heads(layer.k(x)), heads(layer.v(x)), pos, layer.encoding,
                           layer.features_W)
    torch.testing.assert_close(layer(x, pos), layer.proj(ref.transpose(1, 2).flatten(2)), atol=1e-12, rtol=0)
    torch.testing.assert_close(layer(x, pos + torch.tensor([30.0, -9.0])), layer(x, pos), atol=1e-10, rtol=1e-10)
    soft = Attention(dim=16, num_heads=2, encoding="cayley", coord_dim=2)
    soft.load_state_dict({k: v for k, v in layer.state_dict().items() if k != "features_W"})
    assert float((soft(x, pos) - layer(x, pos)).abs().max().detach()) > 1e-3  # it is not softmax attention
    for pe in ("rope-mixed", "circulant"):
        m = PointSetClassifier(feature_dim=3, coord_dim=2, num_classes=4, dim=16, depth=2, num_heads=2, pe=pe,
                               attn="linear")
        f = torch.randn(3, 9, 3)
        p = torch.rand(3, 9, 2) * 8
        torch.testing.assert_close(m(f, p + torch.tensor([40.0, -80.0])), m(f, p), atol=1e-10, rtol=1e-9)
        assert float((m(f, 2 * p) - m(f, p)).abs().max().detach()) > 1e-6  # positions do matter
    ape = PointSetClassifier(feature_dim=3, coord_dim=2, num_classes=4, dim=16, depth=1, num_heads=2,
                             pe="ape-fourier", attn="linear")
    assert float((ape(f, p + 5.0) - ape(f, p)).abs().max().detach()) > 1e-6  # absolute PE: not invariant
    with pytest.raises(PositionEncodingError, match="attn must be one of"):
        Attention(dim=16, num_heads=2, attn="flash")
    with pytest.raises(PositionEncodingError, match="fold_ needs softmax"):
        layer.fold_()
    with pytest.raises(PositionEncodingError, match="unrotated"):
        layer(x, pos[:, 1:], num_unrotated=1)
