"""Bad input: clear errors naming the field; the CLI exits 2 with one `error:` line and writes nothing."""

import json
import math
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from private_robust_align import DebiasedLogistic, corrupt, privatize_and_corrupt, randomized_response
from private_robust_align.cli import main
from private_robust_align.errors import PrivateRobustAlignError

X = np.random.default_rng(0).normal(size=(10, 3))
Y = np.array([0, 1] * 5)
RNG = np.random.default_rng(0)


@pytest.mark.parametrize("call, needle", [
    (lambda: randomized_response(Y, epsilon=0.0, rng=RNG), "epsilon"),
    (lambda: randomized_response(Y, epsilon=-1.0, rng=RNG), "epsilon"),
    (lambda: randomized_response(Y, epsilon=float("nan"), rng=RNG), "epsilon"),
    (lambda: privatize_and_corrupt(X, Y, epsilon=1.0, alpha=0.5, seed=0), "alpha"),
    (lambda: privatize_and_corrupt(X, Y, epsilon=1.0, alpha=-0.1, seed=0), "alpha"),
    (lambda: privatize_and_corrupt(X, Y, order="CLC", epsilon=1.0, alpha=(0.3, 0.3), seed=0), "alpha1 \\+ alpha2"),
    (lambda: privatize_and_corrupt(X, Y, order="XYZ", epsilon=1.0, alpha=0.1, seed=0), "order"),
    (lambda: privatize_and_corrupt(X, np.array([0, 2] * 5), epsilon=1.0, alpha=0.1, seed=0), "0, 1"),
    (lambda: privatize_and_corrupt(X, Y[:-1], epsilon=1.0, alpha=0.1, seed=0), "shape mismatch"),
    (lambda: privatize_and_corrupt(X[:0], Y[:0], epsilon=1.0, alpha=0.1, seed=0), "n = 0"),
    (lambda: corrupt(X, Y, alpha=0.1, adversary="sneaky", rng=RNG), "adversary"),
    (lambda: DebiasedLogistic(epsilon=1.0, radius=0.0), "radius"),
    (lambda: DebiasedLogistic(epsilon=1.0, radius=2.0, l2=-1.0), "l2"),
    (lambda: DebiasedLogistic(epsilon=1.0).fit(np.where(X > 1, np.nan, X), Y), "finite"),
    (lambda: DebiasedLogistic(epsilon=1.0).fit(X[:, 0], Y), "2-D"),
    (lambda: DebiasedLogistic(epsilon=0.0), "epsilon"),
    (lambda: DebiasedLogistic(epsilon=1.0).fit(X, np.array([0.5] * 10)), "0, 1"),
    (lambda: corrupt(X, Y, alpha=0.6, adversary="random", rng=RNG), "alpha"),
    (lambda: privatize_and_corrupt(X, Y, order="CLC", epsilon=1.0, alpha=0.1, seed=0), "pair"),
    (lambda: privatize_and_corrupt(X, Y, order="LTC", epsilon=1.0, alpha=0.1, seed=0, adversary="sneaky"),
     "adversary"),
])
def test_bad_input_raises_named_error(call, needle):
    with pytest.raises(PrivateRobustAlignError, match=needle):
        call()


def test_infinite_epsilon_is_allowed():
    z = randomized_response(Y, epsilon=math.inf, rng=RNG)
    np.testing.assert_array_equal(z, Y)


@pytest.mark.parametrize("args, needle", [
    (["simulate", "--sim.epsilon", "0"], "epsilon"),
    (["simulate", "--sim.alpha", "0.7"], "alpha"),
    (["simulate", "--sim.order", "CLC", "--sim.alpha", "0.3", "--sim.alpha2", "0.3"], "alpha + alpha2"),
    (["fit", "--estimator.radius", "-1"], "radius"),
    (["fit", "--estimator.l2", "-0.5"], "l2"),
    (["simulate", "--sim.n", "0"], "n"),
    (["simulate", "--sim.order", "XYZ"], "order must be one of CTL, LTC, CLC"),
    (["simulate", "--sim.adversary", "sneaky"], "adversary must be one of directional, shrinking, random"),
    (["simulate", "--sim.design", "cube"], "design must be one of ball, gaussian"),
    (["fit", "--sim.order", "CTL", "--sim.alpha", "0", "--sim.alpha2", "0.1"], "alpha2"),
])
def test_cli_bad_input_exit_2_nothing_written(args, needle, tmp_path, capsys):
    out = tmp_path / "never"
    assert main([*args, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "error:" in err and needle in err
    assert not out.exists()


def test_cli_fit_refuses_bad_data_files(tmp_path, capsys):
    bad = tmp_path / "bad.npz"
    np.savez(bad, x=np.ones((5, 2)), z=np.array([0, 1, 2, 0, 1]))
    assert main(["fit", "--data", str(bad), "--out", str(tmp_path / "a")]) == 2
    assert "0, 1" in capsys.readouterr().err
    nan = tmp_path / "nan.npz"
    np.savez(nan, x=np.full((5, 2), np.nan), z=np.array([0, 1, 1, 0, 1]))
    assert main(["fit", "--data", str(nan), "--out", str(tmp_path / "b")]) == 2
    assert "finite" in capsys.readouterr().err
    assert main(["fit", "--data", str(tmp_path / "missing.npz"), "--out", str(tmp_path / "c")]) == 2
    assert not any((tmp_path / d).exists() for d in "abc")


def test_cli_simulate_then_fit_round_trip(tmp_path):
    sim = tmp_path / "sim"
    assert main(["simulate", "--sim.n", "3000", "--sim.epsilon", "1", "--sim.alpha", "0.01", "--sim.order", "LTC",
                 "--out", str(sim), "--quiet"]) == 0
    assert (sim / "data.npz").exists()
    fit = tmp_path / "fit"
    assert main(["fit", "--data", str(sim / "data.npz"), "--epsilon", "1", "--out", str(fit), "--quiet"]) == 0
    res = json.loads((fit / "fit.json").read_text())
    assert len(res["theta"]) == 5 and np.linalg.norm(res["theta"]) <= 2 + 1e-9
    assert 0 < res["l2_error"] < 1.5 and "naive_l2_error" in res


def test_readme_python_quickstart_runs():
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    blocks = re.findall(r"^```python\n(.*?)^```", readme, re.S | re.M)
    assert blocks, "README has no python quickstart"
    exec(compile(blocks[0], "README.md", "exec"), {"__name__": "__readme__"})


def test_module_help():
    out = subprocess.run([sys.executable, "-m", "private_robust_align", "--help"], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0 and "dpo-demo" in out.stdout and "simulate" in out.stdout
