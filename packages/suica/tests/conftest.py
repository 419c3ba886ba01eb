import numpy as np
import pytest
import torch


@pytest.fixture(scope="session", autouse=True)
def _threads():
    torch.set_num_threads(2)


@pytest.fixture(scope="session")
def tissue():
    """A small preprocessed synthetic tissue with a 20 % hold-out (obs['split'])."""
    from suica.data import preprocess
    from suica.synthetic import holdout_spots, make_tissue

    a = make_tissue(n_spots=220, n_genes=60, n_domains=3, seed=1)
    tr, te = holdout_spots(a.n_obs, frac=0.2, seed=1)
    split = np.array(["train"] * a.n_obs, dtype=object)
    split[te] = "test"
    a.obs["split"] = split.astype(str)
    return preprocess(a, min_counts_spot=5, min_counts_gene=3, max_count=None, fit_on=tr)


def split_idx(a):
    test = np.asarray(a.obs["split"] == "test")
    return np.flatnonzero(~test), np.flatnonzero(test)


TINY = dict(gae_hidden=(32, 16), latent_dim=8, inr_width=32, ffn_mapping=16, ffn_scale=2.0, gae_epochs=15,
            inr_epochs=15, decoder_epochs=10, embedding="gae")
"""Tiny GAE-pipeline settings (the paper's main pipeline; the package default embedding is PCA)."""
