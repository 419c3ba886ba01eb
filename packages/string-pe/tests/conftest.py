import sys
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).parent))  # _string_pe_helpers (uniquely named: importlib import mode)


@pytest.fixture
def f64():
    """Build modules and tensors in float64 (restores the default dtype and torch's RNG afterwards)."""
    old = torch.get_default_dtype()
    state = torch.get_rng_state()
    torch.set_default_dtype(torch.float64)
    torch.manual_seed(0)
    try:
        yield
    finally:
        torch.set_default_dtype(old)
        torch.set_rng_state(state)
