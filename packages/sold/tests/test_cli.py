"""CLI bad-input battery (exit 2, one `error:` line naming the field, nothing written) and the README quickstart."""

import re
from pathlib import Path

import pytest
from sold.cli import main

README = Path(__file__).resolve().parents[1] / "README.md"

BAD = [
    (["train", "--agent.gamma", "1.5"], "gamma"),
    (["train", "--agent.lam", "-0.1"], "lam"),
    (["train", "--ae.num-slots", "0"], "num_slots"),
    (["train", "--ae.slot-dim", "30", "--ae.heads", "4"], "divisible"),
    (["train", "--agent.token-dim", "66", "--agent.heads", "4"], "divisible"),
    (["train", "--agent.min-context", "4", "--agent.max-context", "3"], "min_context"),
    (["train", "--agent.num-bins", "1"], "num_bins"),
    (["train", "--scene.task", "distinct", "--scene.num-objects", "2"], "num_objects"),
    (["train", "--env", "NoSuchEnv-v9"], "--env"),
    (["train", "--env", "CartPole-v1"], "--env"),
    (["train", "--steps", "0"], "--steps"),
    (["train", "--representation", "pixels"], "--representation"),
    (["pretrain", "--ae.lr", "nan"], "lr"),
    (["evaluate", "--run", "NOPE"], "NOPE"),
]


@pytest.mark.parametrize("argv, needle", BAD, ids=[" ".join(a) for a, _ in BAD])
def test_bad_cli_input(argv, needle, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "never"
    args = [a.replace("NOPE", str(tmp_path / "nope")) for a in argv]
    rc = main([*args, "--out", str(out)])
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if "error:" in ln]
    assert rc == 2, err
    assert len(lines) == 1 and needle.replace("NOPE", "nope") in lines[0], err
    assert "Traceback" not in err
    assert not out.exists() and not any(tmp_path.iterdir())


def test_readme_python_quickstart_runs():
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)
    assert blocks, "README has no python block"
    code = blocks[0]
    assert not code.startswith("# no-run")
    exec(compile(code, str(README), "exec"), {"__name__": "__readme__"})


def _register_tiny():
    """A small registered env without masks: a grey square moved by a 1-D action in [0, 2] (not [−1, 1])."""
    import gymnasium as gym
    import numpy as np

    class TinyPixels(gym.Env):
        def __init__(self):
            self.observation_space = gym.spaces.Box(0, 255, (32, 32, 3), np.uint8)
            self.action_space = gym.spaces.Box(0.0, 2.0, (1,), np.float32)
            self.x = 0.0
            self.seen = []

        def _obs(self):
            img = np.zeros((32, 32, 3), np.uint8)
            c = int(4 + 24 * self.x)
            img[12:20, c - 3: c + 3] = 200
            return img

        def reset(self, *, seed=None, options=None):
            super().reset(seed=seed)
            self.x = float(self.np_random.uniform(0, 1))
            return self._obs(), {}

        def step(self, action):
            a = float(np.asarray(action).reshape(-1)[0])
            assert 0.0 <= a <= 2.0, a          # actions arrive in the env's own box
            self.seen.append(a)
            self.x = float(np.clip(self.x + 0.1 * (a - 1.0), 0, 1))
            return self._obs(), -abs(self.x - 0.5), False, False, {}

    if "sold_test/TinyPixels-v0" not in gym.registry:
        gym.register("sold_test/TinyPixels-v0", entry_point=TinyPixels, max_episode_steps=12)


def test_train_on_a_plain_registered_gymnasium_env_without_masks(tmp_path):
    """`sold train --env ID` on an env of neither this package nor with masks, and a non-[−1, 1] action box."""
    import json

    _register_tiny()
    out = tmp_path / "run"
    rc = main(["train", "--env", "sold_test/TinyPixels-v0", "--steps", "30", "--ae.pretrain-steps", "2",
               "--ae.pretrain-episodes", "2", "--agent.seed-steps", "25", "--agent.update-every", "25",
               "--agent.updates-per", "1", "--agent.num-bins", "31", "--out", str(out), "--quiet"])
    assert rc == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["env_steps"] == 30 and summary["updates"] == 1
    meta = json.loads((out / "agent_config.json").read_text())
    assert meta["env"] == "sold_test/TinyPixels-v0" and meta["action_dim"] == 1 and meta["image_size"] == 32
