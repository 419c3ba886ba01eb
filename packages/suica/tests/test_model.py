import numpy as np
import pytest
import torch
from suica.estimator import SUICA
from suica.networks import GAE, FourierFeatureINR, FourierFeatures

from .conftest import TINY, split_idx


def test_gae_shapes_nonnegative_and_log1p_input_only():
    g = GAE(n_genes=20, hidden=(16, 8), latent_dim=4)
    x = torch.rand(12, 20) * 50
    y, z = g(x, None)
    assert y.shape == (12, 20) and z.shape == (12, 4) and (y >= 0).all()
    g.eval()
    # log1p is applied to the input: feeding expm1(x) with the raw graph conv equals feeding x to a log-free copy
    h = g.graph_conv(torch.log1p(x), None)
    torch.testing.assert_close(g.encoder(torch.relu(g.bn(h))), g.encode(x, None))


def test_fourier_features_buffer_and_determinism():
    ff = FourierFeatures(in_dim=2, mapping_size=16, scale=10.0, seed=3)
    assert "B" in dict(ff.named_buffers()) and not any(True for _ in ff.parameters())
    assert ff(torch.zeros(1, 2)).shape == (1, 32)
    torch.testing.assert_close(FourierFeatures(in_dim=2, mapping_size=16, scale=10.0, seed=3).B, ff.B)
    inr = FourierFeatureINR(in_dim=2, out_dim=5, width=16, n_layers=2, mapping_size=8)
    u = torch.rand(40000, 2) * 2 - 1  # a 200 x 200 grid's worth of off-grid points
    a, b = inr(u), inr(u)
    assert torch.equal(a, b) and torch.isfinite(a).all()


def test_inr_frozen_in_phase_two(tissue):
    tr, _ = split_idx(tissue)
    snaps = {}

    def hook(phase, step, m):
        if phase == "inr" and step == m.config.inr_epochs - 1:
            snaps["inr"] = {k: v.clone() for k, v in m.model["inr"].state_dict().items()}
            snaps["enc"] = {k: v.clone() for k, v in m.model["gae"].encoder.state_dict().items()}
            snaps["dec"] = {k: v.clone() for k, v in m.model["gae"].decoder.state_dict().items()}

    m = SUICA(**TINY, seed=0).fit(tissue, train_idx=tr, on_step=hook)
    for k, v in m.model["inr"].state_dict().items():
        assert torch.equal(v, snaps["inr"][k]), k  # bit-identical after phase 2
    for k, v in m.model["gae"].encoder.state_dict().items():
        assert torch.equal(v, snaps["enc"][k]), k
    changed = [not torch.equal(v, snaps["dec"][k]) for k, v in m.model["gae"].decoder.state_dict().items()]
    assert all(changed)  # every decoder tensor moved in phase 2


def test_heldout_spots_never_reach_training(tissue):
    tr, te = split_idx(tissue)
    m1 = SUICA(**TINY, seed=0).fit(tissue, train_idx=tr)
    other = tissue.copy()
    x = np.asarray(other.X).copy()
    x[te] = np.random.default_rng(0).gamma(1.0, 10.0, size=x[te].shape).astype(np.float32)
    other.X = x
    other.obsm["spatial"] = other.obsm["spatial"].copy()
    other.obsm["spatial"][te] += 1e4  # move them far away too
    m2 = SUICA(**TINY, seed=0).fit(other, train_idx=tr)
    for k, v in m1.model.state_dict().items():
        assert torch.equal(v, m2.model.state_dict()[k]), k
    # the official 'full' target graph does let them leak into the INR targets
    m3 = SUICA(**TINY, seed=0, targets_graph="full").fit(other, train_idx=tr)
    assert not torch.equal(m3.model["inr"].net[0].weight, m1.model["inr"].net[0].weight)


def test_determinism_and_prediction(tissue):
    tr, te = split_idx(tissue)
    a = SUICA(**TINY, seed=4).fit(tissue, train_idx=tr)
    b = SUICA(**TINY, seed=4).fit(tissue, train_idx=tr)
    q = tissue.obsm["spatial"][tr[:10]]
    np.testing.assert_array_equal(a.predict(q).X, b.predict(q).X)
    out = a.predict_grid(20)
    assert out.shape == (400, len(a.var_names)) and (out.X >= 0).all() and out.obsm["embedding"].shape == (400, 8)
    assert list(out.var_names) == list(tissue.var_names)


def test_save_load_roundtrip(tissue, tmp_path):
    tr, _ = split_idx(tissue)
    m = SUICA(**TINY).fit(tissue, train_idx=tr)
    m.save(tmp_path / "m")
    m2 = SUICA.load(tmp_path / "m")
    q = tissue.obsm["spatial"][tr[:7]]
    np.testing.assert_array_equal(m.predict(q).X, m2.predict(q).X)


def test_baselines_run(tissue):
    from suica.baselines import PCAINR, INRRaw, Interpolator

    tr, te = split_idx(tissue)
    q = tissue.obsm["spatial"][te]
    for model in (Interpolator(method="linear"), Interpolator(method="idw"), INRRaw(**TINY), PCAINR(**TINY)):
        p = model.fit(tissue, train_idx=tr).predict(q, allow_extrapolation=True)
        assert p.shape == (len(te), tissue.n_vars) and np.isfinite(p.X).all()
    # interpolation reproduces the training spots exactly
    it = Interpolator(method="idw").fit(tissue, train_idx=tr)
    np.testing.assert_allclose(it.predict(tissue.obsm["spatial"][tr]).X, np.asarray(tissue.X)[tr], rtol=1e-5)


@pytest.mark.parametrize("opts", [dict(inr="siren"), dict(inr="ngp"), dict(graph_norm="raw"), dict(graph_space="expression"),
                                  dict(ffn_hidden_activation=False), dict(use_graph=False), dict(decoder_loss="mse")])
def test_options_fit_and_predict(tissue, opts):
    tr, te = split_idx(tissue)
    m = SUICA(**{**TINY, **opts}).fit(tissue, train_idx=tr)
    p = m.predict(tissue.obsm["spatial"][te], allow_extrapolation=True).X
    assert p.shape == (len(te), tissue.n_vars) and np.isfinite(p).all() and (p >= 0).all()


def test_official_ffn_without_activations_is_affine_after_first_layer():
    inr = FourierFeatureINR(in_dim=2, out_dim=3, width=8, n_layers=3, mapping_size=4, hidden_activation=False)
    relus = [m for m in inr.net if isinstance(m, torch.nn.ReLU)]
    assert len(relus) == 1  # the release's stack: one ReLU, then Linear layers that compose to one affine map
    fixed = FourierFeatureINR(in_dim=2, out_dim=3, width=8, n_layers=3, mapping_size=4)
    assert len([m for m in fixed.net if isinstance(m, torch.nn.ReLU)]) == 4


def test_hash_grid_is_multilinear_inside_a_cell_and_sparse_in_its_gradient():
    from suica.networks import HashGridINR

    torch.manual_seed(0)
    g = HashGridINR(in_dim=2, out_dim=3, levels=1, n_min=4, n_max=4, log2_table=10)
    with torch.no_grad():
        g.embeddings.normal_()
    # level resolution 4 on [-1, 1]: cells of width 0.5; p1, p2 inside the same cell
    p1, p2 = torch.tensor([[0.05, 0.10]]), torch.tensor([[0.40, 0.10]])  # an axis-parallel segment in one cell
    for a in (0.25, 0.7):
        torch.testing.assert_close(g.encode(a * p1 + (1 - a) * p2), a * g.encode(p1) + (1 - a) * g.encode(p2))
    # bilinear, not affine: along a diagonal inside the cell the cross term shows (negative control 1)
    d1, d2 = torch.tensor([[0.05, 0.05]]), torch.tensor([[0.45, 0.45]])
    assert not torch.allclose(g.encode(0.5 * d1 + 0.5 * d2), 0.5 * g.encode(d1) + 0.5 * g.encode(d2), atol=1e-4)
    # negative control 2: across a cell boundary the encoding is not linear along the axis either
    q = torch.tensor([[0.70, 0.10]])
    assert not torch.allclose(g.encode(0.5 * p1 + 0.5 * q), 0.5 * g.encode(p1) + 0.5 * g.encode(q), atol=1e-4)
    # one query touches at most 2^d table rows per level
    g.encode(p1).sum().backward()
    assert int((g.embeddings.grad.abs().sum(-1) > 0).sum()) <= 4
