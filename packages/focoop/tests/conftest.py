import pytest
import torch


@pytest.fixture(scope="session")
def syn_setup():
    torch.set_num_threads(1)  # tiny ops: one thread avoids OpenMP spin on shared cores
    from focoop.synthetic import synthetic_setup

    return synthetic_setup(n_clients=2, num_shot=4, n_per_class=20, n_ood=30)
