import pytest
import torch


@pytest.mark.slow
@pytest.mark.engine
def test_flower_simulation_engine_matches_inprocess(syn_setup, tmp_path):
    """Flower's Ray simulation engine runs the same ClientApp/ServerApp; the result equals the in-process one."""
    from focoop.config import FedConfig
    from focoop.engine import run_inprocess
    from focoop.flower import run_flower_simulation

    cfg = FedConfig(method="focoop", n_clients=2, rounds=2, local_epochs=1, n_ood=6, lr=0.05)
    path = syn_setup.save(tmp_path / "fed.safetensors")
    a = run_inprocess(syn_setup, cfg)
    b = run_flower_simulation(path, cfg, result_path=tmp_path / "res.safetensors")
    for k in a.global_state:
        torch.testing.assert_close(a.global_state[k], b.global_state[k], atol=1e-5, rtol=0)
    for ra, rb in zip(a.per_client, b.per_client):
        assert ra["fpr95"] == pytest.approx(rb["fpr95"], abs=1e-6)
