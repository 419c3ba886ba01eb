"""Tests of the mathematics (REPLACE the example with the paper's): each would fail if the method were wrong."""

import numpy as np
import pytest
from lcia.config import Config
from lcia.data import make_data
from lcia.errors import LciaError
from lcia.method import fit


def test_zero_ridge_equals_least_squares_in_float64():
    x, y, _ = make_data(50, 4, noise=0.1, seed=0)
    ref = np.linalg.lstsq(x, y, rcond=None)[0]
    np.testing.assert_allclose(fit(x, y, ridge=0.0), ref, rtol=1e-10, atol=1e-12)
    # negative control: a large penalty shrinks the weights away from least squares
    assert np.linalg.norm(fit(x, y, ridge=100.0)) < 0.9 * np.linalg.norm(ref)


def test_noise_free_recovers_the_true_weights_and_is_deterministic():
    x, y, w = make_data(30, 3, noise=0.0, seed=1)
    np.testing.assert_allclose(fit(x, y, ridge=0.0), w, atol=1e-10)
    np.testing.assert_array_equal(make_data(30, 3, noise=0.1, seed=2)[1], make_data(30, 3, noise=0.1, seed=2)[1])


@pytest.mark.parametrize("field, value", [("n", 0), ("dim", -1), ("noise", float("nan")), ("seeds", 0)])
def test_bad_config_names_the_field(field, value):
    with pytest.raises(ValueError, match=field):
        Config(**{field: value})


def test_bad_data_refused():
    with pytest.raises(LciaError, match="finite"):
        fit(np.array([[np.nan]]), np.array([1.0]), ridge=0.0)
