"""Data interface, teacher generator, training steps, persistence, bad input and the CLI."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from habi.data import (
    DataError,
    GaussianNormalizer,
    load_offline,
    qlearning_dataset,
    save_offline,
    validate_dataset,
)
from habi.habitize import HabitizeConfig, Habitizer, habitize
from habi.model import HabiConfig, Synergy
from habi.planner import DiffusionPlanner, PlannerConfig, PlannerNets, PlannerTrainConfig, train_planner
from habi.policy import HabitualPolicy
from habi.teacher import generate_goal_directed_behavior


def _toy_data(n=60, obs_dim=3, act_dim=1, seed=0, episode=20):
    rng = np.random.default_rng(seed)
    obs = rng.normal(size=(n, obs_dim)).astype(np.float32)
    timeouts = (np.arange(n) % episode) == episode - 1
    terminals = np.zeros(n, bool)
    terminals[7] = True  # a true termination mid-stream
    return {"observations": obs, "actions": rng.uniform(-1, 1, (n, act_dim)).astype(np.float32),
            "rewards": rng.normal(size=n).astype(np.float32), "terminals": terminals, "timeouts": timeouts}


# ------------------------------------------------------------------------------------------------ data
def test_qlearning_dataset_next_observation_and_terminal_semantics():
    d = _toy_data()
    d["timeouts"][7] = False
    q = qlearning_dataset(d)
    keep = [i for i in range(len(d["observations"]) - 1) if not d["timeouts"][i]]
    assert len(q["observations"]) == len(keep)
    np.testing.assert_array_equal(q["next_observations"], d["observations"][np.array(keep) + 1])
    np.testing.assert_array_equal(q["observations"], d["observations"][keep])
    # terminals keep true terminations only; timeout rows are dropped, never marked terminal
    assert q["terminals"].sum() == 1 and q["terminals"][keep.index(7)] == 1.0
    assert not any(d["timeouts"][i] for i in keep)


@pytest.mark.parametrize("suffix", [".hdf5", ".npz"])
def test_save_load_roundtrip(tmp_path, suffix):
    d = _toy_data()
    p = save_offline(tmp_path / f"x{suffix}", d, meta={"random_return": -1.0})
    back = load_offline(p, obs_dim=3, act_dim=1)
    for k in ("observations", "actions", "rewards", "terminals", "timeouts"):
        np.testing.assert_array_equal(back[k], d[k])
    assert back["meta"]["random_return"] == -1.0


def test_d4rl_file_without_timeouts_loads(tmp_path):
    import h5py

    d = _toy_data()
    with h5py.File(tmp_path / "d4rl.hdf5", "w") as f:
        for k in ("observations", "actions", "terminals"):
            f.create_dataset(k, data=d[k])
        f.create_dataset("rewards", data=d["rewards"][:, None])  # (N, 1) as in some files
        f.create_group("infos").create_dataset("qpos", data=np.zeros((60, 2)))
    back = load_offline(tmp_path / "d4rl.hdf5")
    assert back["rewards"].shape == (60,) and not back["timeouts"].any()


@pytest.mark.parametrize("mutate, match", [
    (lambda d: d.pop("terminals"), "missing key"),
    (lambda d: d["observations"].__setitem__((3, 1), np.nan), "NaN/inf"),
    (lambda d: d["rewards"].__setitem__(2, np.inf), "NaN/inf"),
    (lambda d: d.__setitem__("actions", d["actions"] * 3), "outside"),
    (lambda d: [d.__setitem__(k, d[k][:0]) for k in list(d)], "empty"),
    (lambda d: d.__setitem__("rewards", d["rewards"][:-1]), "rows"),
])
def test_bad_datasets_rejected(mutate, match):
    d = _toy_data()
    mutate(d)
    with pytest.raises(DataError, match=match):
        validate_dataset(d)


def test_size_mismatch_with_environment_rejected(tmp_path):
    p = save_offline(tmp_path / "x.npz", _toy_data())
    with pytest.raises(DataError, match="observation size 3 does not match"):
        load_offline(p, obs_dim=4)
    with pytest.raises(DataError, match="action size 1 does not match"):
        load_offline(p, act_dim=2)
    with pytest.raises(FileNotFoundError):
        load_offline(tmp_path / "nope.hdf5")


@pytest.mark.parametrize("fn", [
    lambda: HabiConfig(obs_dim=3, act_dim=1, latent_dim=0),
    lambda: HabitizeConfig(kld_target=0.0),
    lambda: HabitizeConfig(kld_target=-1.0),
    lambda: PlannerConfig(obs_dim=3, act_dim=1, steps=0),
    lambda: PlannerConfig(obs_dim=3, act_dim=1, num_candidates=0),
    lambda: PlannerConfig(obs_dim=3, act_dim=1, temperature=0.0),
    lambda: PlannerConfig(obs_dim=3, act_dim=1, decision="greedy"),
])
def test_bad_hyperparameters_rejected(fn):
    with pytest.raises(ValueError):
        fn()


def test_bad_inference_options_rejected():
    m = Synergy(cfg=HabiConfig(obs_dim=3, act_dim=1, latent_dim=4, hidden=8, critic_hidden=8))
    norm = GaussianNormalizer(mean=(0.0,) * 3, std=(1.0,) * 3)
    with pytest.raises(ValueError, match="num_candidates"):
        HabitualPolicy(model=m, normalizer=norm, num_candidates=0)
    with pytest.raises(ValueError, match="scorer"):
        HabitualPolicy(model=m, normalizer=norm, scorer="oracle")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="needs the planner"):
        HabitualPolicy(model=m, normalizer=norm, scorer="planner")
    with pytest.raises(ValueError, match="observation must have shape"):
        HabitualPolicy(model=m, normalizer=norm).act(np.zeros(4))


# ------------------------------------------------------------------------------------------------ teacher
@pytest.fixture(scope="module")
def tiny_planner():
    cfg = PlannerConfig(obs_dim=3, act_dim=1, hidden=16, steps=3, num_candidates=12)
    return train_planner(_toy_data(), config=cfg, train=PlannerTrainConfig(steps=3, batch_size=16), progress=False)


def test_teacher_generator_shapes_and_best_action(tiny_planner):
    d = _toy_data()
    n = len(qlearning_dataset(d)["observations"])
    t = generate_goal_directed_behavior(tiny_planner, d, num_candidates=12, stored=4, batch_states=7,
                                        return_all=True, progress=False)
    assert t["states"].shape == (n * 4, 3) and t["candidates"].shape == (n * 4, 1)
    assert t["values"].shape == (n * 4,) and t["best_actions"].shape == (n * 4, 1)
    assert t["all_candidates"].shape == (n, 12, 1)
    best_v = t["best_values"].reshape(n, 4)[:, 0]
    assert np.all(best_v[:, None] >= t["values"].reshape(n, 4) - 1e-6)
    assert np.all(best_v >= t["all_values"].max(1) - 1e-6)
    # stored candidates are the first `stored` of the sampled ones, and a* is one of the sampled candidates
    np.testing.assert_array_equal(t["candidates"].reshape(n, 4, 1), t["all_candidates"][:, :4])
    best = t["best_actions"].reshape(n, 4, 1)[:, 0]
    assert np.all(np.abs(t["all_candidates"] - best[:, None]).min(axis=(1, 2)) == 0)
    with pytest.raises(ValueError):
        generate_goal_directed_behavior(tiny_planner, d, num_candidates=3, stored=4)


def test_planner_act_and_roundtrip(tiny_planner, tmp_path):
    a = tiny_planner.act(np.zeros(3, np.float32))
    assert a.shape == (1,) and np.all(np.abs(a) <= 1)
    tiny_planner.save(tmp_path / "planner")
    back = DiffusionPlanner.from_pretrained(tmp_path)
    s = torch.randn(4, 3)
    torch.manual_seed(0)
    x = tiny_planner.act_normalized(s)
    torch.manual_seed(0)
    torch.testing.assert_close(back.act_normalized(s), x)


# ------------------------------------------------------------------------------------------------ training
def _teacher_rows(n=64, seed=0):
    rng = np.random.default_rng(seed)
    return {"states": rng.normal(size=(n, 3)).astype(np.float32),
            "candidates": rng.uniform(-1, 1, (n, 1)).astype(np.float32),
            "values": rng.normal(size=n).astype(np.float32) * 10 - 50,
            "best_actions": rng.uniform(-1, 1, (n, 1)).astype(np.float32)}


def test_every_trainable_parameter_changes_in_a_habitization_step():
    torch.manual_seed(0)
    model = Synergy(cfg=HabiConfig(obs_dim=3, act_dim=1, latent_dim=4, hidden=8, critic_hidden=8))
    tr = Habitizer(model=model, config=HabitizeConfig(steps=10, eta=0.1))
    params = {n: p.detach().clone() for n, p in model.named_parameters()} | {"log_eta": tr.kl_weight.log_eta.detach().clone()}
    t = {k: torch.from_numpy(v) for k, v in _teacher_rows().items()}
    tr.step(t["states"], t["candidates"], t["values"], t["best_actions"])
    now = dict(model.named_parameters()) | {"log_eta": tr.kl_weight.log_eta}
    unchanged = [n for n, p in params.items() if torch.equal(p, now[n].detach())]
    assert not unchanged, f"parameters not updated: {unchanged}"


def test_every_trainable_parameter_changes_in_a_planner_step():
    cfg = PlannerConfig(obs_dim=3, act_dim=1, hidden=8, steps=2)
    torch.manual_seed(0)
    ref = {n: p.detach().clone() for n, p in PlannerNets(cfg=cfg).named_parameters() if p.requires_grad}
    planner = train_planner(_toy_data(), config=cfg, train=PlannerTrainConfig(steps=1, batch_size=8), seed=0,
                            progress=False)
    now = dict(planner.nets.named_parameters())
    unchanged = [n for n, p in ref.items() if torch.equal(p, now[n].detach())]
    assert not unchanged, f"parameters not updated: {unchanged}"


def test_habitize_deterministic_and_policy_roundtrip(tmp_path):
    cfg = HabiConfig(obs_dim=3, act_dim=1, latent_dim=4, hidden=8, critic_hidden=8)
    m1, h1 = habitize(_teacher_rows(), habi=cfg, config=HabitizeConfig(steps=5, batch_size=8), seed=3, progress=False)
    m2, h2 = habitize(_teacher_rows(), habi=cfg, config=HabitizeConfig(steps=5, batch_size=8), seed=3, progress=False)
    assert [h["recon"] for h in h1] == [h["recon"] for h in h2]
    for (n, p), (_, q) in zip(m1.state_dict().items(), m2.state_dict().items(), strict=True):
        assert torch.equal(p, q), n
    norm = GaussianNormalizer(mean=(0.0,) * 3, std=(1.0,) * 3)
    pol = HabitualPolicy(model=m1, normalizer=norm, num_candidates=3)
    pol.save(tmp_path / "habi")
    back = HabitualPolicy.from_pretrained(tmp_path)
    assert back.num_candidates == 3 and back.scorer == "habi"
    torch.manual_seed(0)
    a = pol.act_batch(np.ones((2, 3)))
    torch.manual_seed(0)
    np.testing.assert_array_equal(back.act_batch(np.ones((2, 3))), a)


def test_habitize_rejects_bad_teacher_data():
    t = _teacher_rows()
    t["values"][0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        habitize(t, habi=HabiConfig(obs_dim=3, act_dim=1), config=HabitizeConfig(steps=1), progress=False)
    with pytest.raises(ValueError, match="do not match"):
        habitize(_teacher_rows(), habi=HabiConfig(obs_dim=4, act_dim=1), config=HabitizeConfig(steps=1),
                 progress=False)


def test_minari_layout_converted_to_d4rl_rows(tmp_path):
    import h5py

    rng = np.random.default_rng(0)
    with h5py.File(tmp_path / "main_data.hdf5", "w") as f:
        for i, (t, term) in enumerate([(5, True), (4, False)]):
            g = f.create_group(f"episode_{i}")
            g.create_dataset("observations", data=rng.normal(size=(t + 1, 3)).astype(np.float32))
            g.create_dataset("actions", data=rng.uniform(-1, 1, (t, 1)).astype(np.float32))
            g.create_dataset("rewards", data=np.arange(t, dtype=np.float32))
            g.create_dataset("terminations", data=np.r_[np.zeros(t - 1, bool), term])
            g.create_dataset("truncations", data=np.r_[np.zeros(t - 1, bool), not term])
        obs0 = f["episode_0/observations"][()]
    d = load_offline(tmp_path / "main_data.hdf5")
    assert d["observations"].shape == (9, 3)
    np.testing.assert_array_equal(d["observations"][:5], obs0[:5])  # final observation dropped
    assert d["terminals"].tolist() == [False] * 4 + [True] + [False] * 4
    assert d["timeouts"].tolist() == [False] * 8 + [True]
    q = qlearning_dataset(d)
    assert len(q["observations"]) == 8  # the truncated last row is dropped, the terminal row kept
