import pytest
import torch
from focoop.config import FedConfig
from focoop.errors import FOCoOpConfigError
from focoop.prompts import mix_contexts, mix_features, text_features
from focoop.server import fedavg
from focoop.text import PromptBank


def test_prompt_encoder_matches_open_clip_encode_text():
    from focoop.synthetic import tiny_open_clip
    from focoop.text import FrozenTextTower

    model, tok = tiny_open_clip(seed=1)
    names = ["circle", "square", "hexagon"]
    bank = PromptBank(texts=[f"{n}." for n in names], tokenize=tok, token_embedding=model.token_embedding,
                      n_ctx=4, context_length=16)
    ctx = model.token_embedding(tok(["a photo of a"]))[:, 1:5].detach()  # the 4 tokens of "a photo of a"
    with torch.no_grad():
        ours = bank.encode(FrozenTextTower(clip_model=model), ctx, normalize=False)
        ref = model.encode_text(tok([f"a photo of a {n}." for n in names]))
    torch.testing.assert_close(ours, ref, atol=1e-5, rtol=1e-5)
    with pytest.raises(FOCoOpConfigError, match="n_ctx"):
        PromptBank(texts=["circle."], tokenize=tok, token_embedding=model.token_embedding, n_ctx=14,
                   context_length=16)


def test_mixing_extremes():
    a, b = torch.randn(3, 4, 5), torch.randn(3, 4, 5)
    assert mix_contexts(a, b, 0.0) is a and mix_contexts(a, b, 1.0) is b
    torch.testing.assert_close(mix_contexts(a, b, 0.25), 0.75 * a + 0.25 * b)
    assert mix_features(a, b, 0.0) is a and mix_features(a, b, 1.0) is b


def test_context_mix_extremes_in_text_features(syn_setup):
    torch.manual_seed(0)
    c, w = syn_setup.n_classes, syn_setup.width
    g, loc = torch.randn(c, 4, w) * 0.1, torch.randn(c, 4, w) * 0.1
    for frac, src in ((0.0, loc), (1.0, g)):
        cfg = FedConfig(method="focoop_no_dro", frac=frac, n_ood=4)
        t_mix, _ = text_features(syn_setup, cfg, {"ctx_global": g, "ctx_local": loc, "ctx_ood": torch.zeros(4, 4, w)})
        torch.testing.assert_close(t_mix, syn_setup.id_bank.encode(syn_setup.tower, src))
    cfg = FedConfig(method="focoop_no_dro", n_ood=4)
    t_id, t_ood = text_features(syn_setup, cfg, {"ctx_global": g, "ctx_local": loc, "ctx_ood": torch.zeros(4, 4, w)})
    assert t_id.shape[0] == c and t_ood.shape == (4, t_id.shape[1])
    torch.testing.assert_close(t_id.norm(dim=-1), torch.ones(c))


def test_fedavg_identities():
    torch.manual_seed(0)
    s = {"a": torch.randn(3, 2), "b": torch.randn(4)}
    out = fedavg([s, s, s], [1, 5, 2])
    torch.testing.assert_close(out["a"], s["a"])
    torch.testing.assert_close(out["b"], s["b"])
    states = [{"a": torch.randn(3, 2)} for _ in range(4)]
    w = [1.0, 2.0, 3.0, 4.0]
    out = fedavg(states, w)
    ref = sum(wi * st["a"] for wi, st in zip(w, states)) / sum(w)
    torch.testing.assert_close(out["a"], ref)
    torch.testing.assert_close(fedavg(states, [10 * x for x in w])["a"], out["a"])  # weights normalised
    perm = [2, 0, 3, 1]
    torch.testing.assert_close(fedavg([states[i] for i in perm], [w[i] for i in perm])["a"], out["a"])
    lo = torch.stack([st["a"] for st in states]).min(0).values
    hi = torch.stack([st["a"] for st in states]).max(0).values
    assert (out["a"] >= lo - 1e-6).all() and (out["a"] <= hi + 1e-6).all()
    with pytest.raises(FOCoOpConfigError):
        fedavg(states, [0, 0, 0, 0])
