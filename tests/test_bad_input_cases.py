"""The bad inputs a new user tried on the CLIs (issues 17 and 70), one by one, package by package.

Each case runs the package's ``main(argv)`` in this process (fast: the imports are shared) and asserts exit status
2, one ``error:`` line that names the field or the file (every needle of the case), no traceback, and nothing written
under the test folder except the fixtures. Every package has its own cases (a corrupt checkpoint, a text file given
as the binary format, a config missing a key, zero/NaN/negative sizes, unknown names). Function-level checks cover
inputs that need a fitted model, ``--out`` being honoured by the evaluate/benchmark commands, and validation before
torch is imported.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

GPT2_CONFIG = {"model_type": "gpt2", "n_layer": 1, "n_head": 1, "n_embd": 8, "vocab_size": 16, "n_positions": 8}


def _fixtures(tmp: Path) -> None:
    (tmp / "a-file").write_text("not a folder")
    (tmp / "full").mkdir()
    (tmp / "full" / "keep.txt").write_text("an earlier run")
    (tmp / "text.h5ad").write_text("not hdf5")
    (tmp / "text.hdf5").write_text("not hdf5")
    (tmp / "text.npz").write_text("not an npz")
    (tmp / "bad.jsonl").write_text("{bad json\n")
    (tmp / "nan-prompt.jsonl").write_text('{"prompt": NaN, "chosen": "a", "rejected": "b"}\n')
    (tmp / "nan-chosen.jsonl").write_text('{"prompt": "1+1=", "chosen": NaN, "rejected": "b"}\n')
    (tmp / "no-fields.jsonl").write_text('{"prompt": "1+1=", "answer": "2"}\n')
    run = tmp / "run-missing-keys"
    run.mkdir()
    (run / "model_config.json").write_text('{"foo": 1}')
    (run / "model.safetensors").write_text("junk")
    kea = tmp / "kea-run" / "model"
    kea.mkdir(parents=True)
    (kea / "model_config.json").write_text('{"foo": 1}')
    kea_bad = tmp / "kea-badjson" / "model"
    kea_bad.mkdir(parents=True)
    (kea_bad / "model_config.json").write_text("{bad")
    lift = tmp / "lift-corrupt" / "model"
    lift.mkdir(parents=True)
    (lift / "config.json").write_text(json.dumps(GPT2_CONFIG))
    (lift / "model.safetensors").write_bytes(b"\x00garbage" * 8)
    pipa = tmp / "pipa-corrupt" / "lm"
    pipa.mkdir(parents=True)
    (pipa / "config.json").write_text(json.dumps(GPT2_CONFIG))
    (pipa / "model.safetensors").write_bytes(b"\x00garbage" * 8)
    (tmp / "fake.safetensors").write_text("text, not weights")
    (tmp / "fake.pt").write_text("text, not weights")
    _fixtures_issue70(tmp)


def _write_json(path: Path, obj) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(obj))


def _fixtures_issue70(t: Path) -> None:
    """Fixtures of the eleven newer packages' cases (issue 70): text and truncated binaries, configs without keys or
    with unknown fields, corrupt weights. All cheap: no model is built here."""
    import scipy.io

    junk = b"\x00garbage" * 8
    (t / "text.npy").write_text("not an npy")
    (t / "text.mat").write_text("not a mat")
    (t / "binary.jsonl").write_bytes(b"\xff\xfe\x00garbage")
    np.save(t / "ok.npy", np.zeros((4, 4, 4)))
    (t / "trunc.npy").write_bytes((t / "ok.npy").read_bytes()[:100])
    scipy.io.savemat(t / "ok.mat", {"x": np.ones((4, 4, 4))})
    (t / "trunc.mat").write_bytes((t / "ok.mat").read_bytes()[:200])
    np.savez(t / "coo.npz", coords=np.array([[0, 0], [1, 1]]), values=np.array([1.0, 2.0]), shape=np.array([2, 2]))
    (t / "trunc.npz").write_bytes((t / "coo.npz").read_bytes()[:150])
    np.savez(t / "coo-nokeys.npz", coords=np.array([[0, 0]]))
    np.save(t / "asym.npy", np.array([[0.0, 1.0], [0.0, 0.0]]))
    np.save(t / "nan-x0.npy", np.array([[1.0, np.nan], [0.0, 1.0]]))
    # safediffcon: a model config without its keys; a complete one beside corrupt weights
    _write_json(t / "sdc-nokeys" / "model" / "model_config.json", {"nx": 32})
    (t / "sdc-nokeys" / "model" / "model.safetensors").write_bytes(junk)
    _write_json(t / "sdc-badweights" / "model" / "model_config.json", {
        "nx": 32, "nu": 0.01, "dt": 0.002, "dim": 8, "timesteps": 200, "scaler": 2.0, "u_bound": 0.8, "alpha": 0.98,
        "weight_lambda": 2500.0, "guidance_lambda": 0.0, "ddim_steps": 10, "eta": 1.0, "quantile_method": "weighted",
        "official_safety_row_mask": False, "seed": 0, "mults": [1, 2]})
    (t / "sdc-badweights" / "model" / "model.safetensors").write_bytes(junk)
    (t / "h5dir").mkdir()
    (t / "h5dir" / "burgers_train.h5").write_text("not hdf5")
    # sggm: a model config that `sample` reads but `_build` needs more of; a complete one beside corrupt weights
    sg = {"task": "features", "n": 4, "T": 8.0, "graph": "regular", "degree": 2, "alpha": 1.0, "n_features": 2}
    _write_json(t / "sggm-nokeys" / "model" / "model_config.json", sg)
    (t / "sggm-nokeys" / "model" / "model.safetensors").write_bytes(junk)
    vp = {"kind": "VP", "beta_min": 1.0, "beta_max": 1.0}
    _write_json(t / "sggm-run" / "model" / "model_config.json",
                {**sg, "hidden": 8, "depth": 1, "time_dim": 8, "sde_x": vp, "sde_a": vp})
    (t / "sggm-run" / "model" / "model.safetensors").write_bytes(junk)
    # k2ie model.json files
    for name, body in {"k2ie-badparams": {"method": "k2ie", "params": {"zzz": 1}, "points": [[0.5]], "window": [[[0, 1]]]},
                       "k2ie-badmethod": {"method": "nope", "params": {}, "points": [[0.5]], "window": [[[0, 1]]]},
                       "k2ie-nokeys": {"method": "kie"}}.items():
        _write_json(t / name / "model.json", body)
    # string-pe run folders
    spe = {"pe": "cayley", "dim": 8, "depth": 1, "heads": 2}
    _write_json(t / "spe-badtask" / "model_config.json", {"task": "nope", **spe})
    _write_json(t / "spe-corrupt" / "model_config.json", {"task": "digits", **spe})
    (t / "spe-corrupt" / "model.safetensors").write_bytes(junk)
    _write_json(t / "spe-img-nokeys" / "model_config.json", {"task": "images", **spe})
    (t / "spe-img-nokeys" / "model.safetensors").write_bytes(junk)
    # pes policy files
    _write_json(t / "pes-nokeys" / "policy.json", {"env": "lqr"})
    _write_json(t / "pes-badtheta" / "policy.json", {"env": "lqr", "horizon": 5, "gamma": 0.9, "theta": [[0.0, 1.0, 2.0]]})
    # select-augment run folders
    _write_json(t / "sa-nokeys" / "config.json", {"dataset": "shapes"})
    _write_json(t / "sa-nokeys" / "model" / "model_config.json", {"width": 8})
    (t / "sa-nokeys" / "model" / "model.safetensors").write_bytes(junk)
    _write_json(t / "sa-corrupt" / "config.json", {"dataset": "shapes"})
    _write_json(t / "sa-corrupt" / "model" / "model_config.json", {"num_classes": 4, "width": 8, "downsample": 1})
    (t / "sa-corrupt" / "model" / "model.safetensors").write_bytes(junk)
    # earl-bo
    (t / "bounds-nan.json").write_text("[[0, NaN], [0, 1]]")
    (t / "bounds-ok.json").write_text("[[0, 1], [0, 1]]")
    (t / "obj_text.py").write_text("this is not python(\n")
    # lcia
    (t / "tasks-nofields.jsonl").write_text('{"task": "a", "prompt": "x"}\n')
    _write_json(t / "lcia-nokeys" / "config.json", {"config": {}, "method": "lcia"})
    # private-robust-align
    np.savez(t / "pra-badz.npz", x=np.zeros((4, 2)), z=np.array([0, 1, 2, 1]))
    np.savez(t / "pra-eps.npz", x=np.ones((4, 2)), z=np.array([0, 1, 0, 1]), epsilon=np.array([1.0, 2.0]))
    # sold: configs with an unknown field, without keys, beside corrupt weights
    ae = {"ae": {}, "representation": "slots", "image_size": 64, "action_dim": 2}
    _write_json(t / "sold-pre-badae" / "model" / "model_config.json", {**ae, "ae": {"zzz": 1}})
    (t / "sold-pre-badae" / "model" / "model.safetensors").write_bytes(junk)
    _write_json(t / "sold-pre-corrupt" / "model" / "model_config.json", ae)
    (t / "sold-pre-corrupt" / "model" / "model.safetensors").write_bytes(junk)
    _write_json(t / "sold-run-badagent" / "agent_config.json",
                {"agent": {"zzz": 1}, "env": "sold/ColorReach2D-v0", "scene": {}, **ae})
    _write_json(t / "sold-run-badagent" / "model" / "model_config.json", ae)
    (t / "sold-run-badagent" / "model" / "model.safetensors").write_bytes(junk)
    _write_json(t / "sold-run-nokeys" / "agent_config.json", {"agent": {}})


def _cases(t: Path) -> list[tuple[str, str, list[str], str | tuple[str, ...]]]:
    never = str(t / "never")
    return [
        # tracebacks before
        ("relgnn", "config lacks keys", ["evaluate", "--run", str(t / "run-missing-keys")], "lacks the key"),
        ("string-pe", "config lacks keys", ["evaluate", "--run", str(t / "run-missing-keys")], "lacks the key"),
        ("kea", "config lacks env", ["evaluate", "--run", str(t / "kea-run")], "env"),
        ("suica", "text as .h5ad (fit)", ["fit", "--data", str(t / "text.h5ad"), "--out", never], "text.h5ad"),
        ("suica", "not a suica model (predict)", ["predict", "--model", str(t / "run-missing-keys"), "--output",
                                                  str(t / "never.h5ad")], "lacks the key"),
        ("habi", "text as .hdf5", ["train-planner", "--data", str(t / "text.hdf5"), "--out", never], "text.hdf5"),
        ("suica", "output under a file", ["simulate", "--output", str(t / "a-file" / "x.h5ad")], "a-file"),
        ("kea", "negative width", ["train", "--hidden", "-1", "--out", never], "--hidden"),
        ("lift", "corrupt safetensors", ["evaluate", "--model", str(t / "lift-corrupt"), "--out", never],
         "lift-corrupt"),
        ("pipa", "corrupt safetensors", ["evaluate", "--model", str(t / "pipa-corrupt"), "--out", never],
         "pipa-corrupt"),
        ("lift", "out is a file (evaluate)", ["evaluate", "--out", str(t / "a-file")], "a-file"),
        # silent before
        ("string-pe", "zero tokens", ["benchmark", "--tokens", "0"], "--tokens"),
        ("string-pe", "zero repeats", ["benchmark", "--repeats", "0"], "--repeats"),
        ("kea", "zero width", ["train", "--hidden", "0", "--out", never], "--hidden"),
        ("pipa", "zero steps", ["train", "--steps", "0", "--data", str(t / "bad.jsonl"), "--out", never], "--steps"),
        ("pipa", "zero prompts", ["evaluate", "--n-prompts", "0", "--model", str(t / "pipa-corrupt"), "--out", never],
         "--n-prompts"),
        ("lift", "out not empty (evaluate)", ["evaluate", "--out", str(t / "full")], "not empty"),
        # unclear before
        ("kea", "config is not JSON", ["evaluate", "--run", str(t / "kea-badjson")], "model_config.json"),
        ("pipa", "data is not JSONL", ["train", "--data", str(t / "bad.jsonl"), "--out", never], "line 1"),
        ("pipa", "NaN prompt in a row", ["train", "--data", str(t / "nan-prompt.jsonl"), "--out", never], "'prompt'"),
        ("pipa", "NaN completion in a row", ["train", "--data", str(t / "nan-chosen.jsonl"), "--out", never],
         "'chosen'"),
        ("pipa", "row without a known format", ["train", "--data", str(t / "no-fields.jsonl"), "--out", never],
         "line 1"),
        ("habi", "text as .npz", ["train-planner", "--data", str(t / "text.npz"), "--out", never], "text.npz"),
        # NaN sizes and rates, unknown names
        ("kea", "NaN entropy coefficient", ["train", "--alpha", "nan", "--out", never], "--alpha"),
        ("pipa", "NaN learning rate", ["train", "--lr", "nan", "--data", str(t / "bad.jsonl"), "--out", never], "--lr"),
        ("relgnn", "NaN learning rate", ["train", "--lr", "nan", "--out", never], "--lr"),
        ("relgnn", "unknown task", ["train", "--task", "nope", "--out", never], "--task"),
        ("suica", "NaN noise", ["simulate", "--noise", "nan", "--output", str(t / "never.h5ad")], "--noise"),
        ("focoop", "text as a .pt clip checkpoint", ["run", "--clip-model", "ViT-B-32", "--clip-checkpoint",
                                                     str(t / "fake.pt"), "--out", never], "fake.pt"),
        ("focoop", "text as the clip folder", ["run", "--clip-model", "local-dir:" + str(t / "run-missing-keys"),
                                                    "--out", never], "open_clip_config.json"),
        *_cases_issue70(t),
    ]


_HAS_MUJOCO = importlib.util.find_spec("mujoco") is not None


def _cases_issue70(t: Path) -> list[tuple[str, str, list[str], str | tuple[str, ...]]]:
    """Issue 70: the fixes (each failed before: a traceback, exit 0, or a message naming neither flag nor file) and the
    package-specific cases of the eleven newer packages. A tuple needle: every part must be in the error line."""
    never = str(t / "never")
    out = ["--out", never]
    rt, sdc, sg, k2, spe = "richardson-tc", "safediffcon", "sggm", "k2ie", "string-pe"
    pra, sa = "private-robust-align", "select-augment"
    cases = [
        # richardson-tc: the flag and the file for text/truncated .npy/.npz/.mat (a traceback for .mat before)
        (rt, "text as .npy (--input)", ["complete", "--input", str(t / "text.npy"), *out], ("--input", "text.npy")),
        (rt, "text as .npy (--mask)", ["complete", "--shape", "4", "4", "--mask", str(t / "text.npy"), *out],
         ("--mask", "text.npy")),
        (rt, "text as .npz (--coo)", ["complete", "--coo", str(t / "text.npz"), *out], ("--coo", "text.npz")),
        (rt, "truncated .npz (--coo)", ["complete", "--coo", str(t / "trunc.npz"), *out], ("--coo", "trunc.npz")),
        (rt, "text as .mat", ["complete", "--input", str(t / "text.mat"), *out], ("--input", "text.mat")),
        (rt, "truncated .mat", ["complete", "--input", str(t / "trunc.mat"), *out], ("--input", "trunc.mat")),
        (rt, "unknown .mat variable", ["complete", "--input", str(t / "ok.mat"), "--key", "nope", *out], "--key"),
        (rt, "coo lacks arrays", ["complete", "--coo", str(t / "coo-nokeys.npz"), *out], ("--coo", "values")),
        (rt, "zero size", ["complete", "--shape", "0", "5", *out], "--shape"),
        (rt, "NaN sample ratio", ["complete", "--p", "nan", *out], "--p"),
        (rt, "negative true rank", ["complete", "--true-rank", "-1", *out], "--true-rank"),
        (rt, "zero sweeps (benchmark)", ["benchmark", "--n-sweeps", "0", *out], "--n-sweeps"),
        # safediffcon
        (sdc, "text as .npz (--controls)", ["evaluate", "--controls", str(t / "text.npz"), *out],
         ("--controls", "text.npz")),
        (sdc, "truncated .npz (--controls)", ["evaluate", "--controls", str(t / "trunc.npz"), *out],
         ("--controls", "trunc.npz")),
        (sdc, "model config lacks keys", ["post-train", "--model", str(t / "sdc-nokeys"), *out], "lacks the key"),
        (sdc, "corrupt safetensors", ["control", "--model", str(t / "sdc-badweights"), *out], "sdc-badweights"),
        (sdc, "text as .h5 (--data)", ["pretrain", "--data", str(t / "h5dir"), *out], ("--data", "burgers_train.h5")),
        (sdc, "zero training size", ["pretrain", "--config.n-train", "0", *out], "n_train"),
        (sdc, "NaN learning rate", ["pretrain", "--config.pretrain-lr", "nan", *out], "pretrain_lr"),
        # sggm
        (sg, "text as .npy (--graph-file)", ["sweep", "--graph-file", str(t / "text.npy"), *out],
         ("--graph-file", "text.npy")),
        (sg, "asymmetric adjacency", ["sweep", "--graph-file", str(t / "asym.npy"), *out], ("--graph-file", "symmetric")),
        (sg, "model config lacks keys", ["sample", "--run", str(t / "sggm-nokeys"), *out], "lacks the key"),
        (sg, "corrupt safetensors", ["sample", "--run", str(t / "sggm-run"), *out], "sggm-run"),
        (sg, "zero nodes", ["train", "--n", "0", *out], "--n "),
        (sg, "NaN learning rate", ["train", "--lr", "nan", *out], "--lr"),
        (sg, "one chain", ["sample", "--run", str(t / "sggm-run"), "--samples", "1", *out], "--samples"),
        (sg, "NaN grid of T", ["sweep", "--over", "T", "--grid", "nan", *out], "T must"),
        # k2ie: NaN --p-cell was stored in the run (exit 0 before)
        (k2, "NaN p-cell", ["fit", "--p-cell", "nan", *out], "--p-cell"),
        (k2, "p-cell above 1 (1-D data)", ["fit", "--p-cell", "2", *out], "--p-cell"),
        (k2, "model.json params unknown", ["evaluate", "--run", str(t / "k2ie-badparams"), *out], ("--run", "params")),
        (k2, "model.json unknown method", ["evaluate", "--run", str(t / "k2ie-badmethod"), *out], "'nope'"),
        (k2, "model.json lacks keys", ["evaluate", "--run", str(t / "k2ie-nokeys"), *out], "lacks the key"),
        (k2, "NaN bandwidth", ["fit", "--estimator.b", "nan", "--no-select", *out], "b must"),
        (k2, "points file is not JSON", ["fit", "--points", str(t / "bad.jsonl"), *out], "bad.jsonl"),
        # string-pe
        (spe, "unknown task in the run", ["evaluate", "--run", str(t / "spe-badtask"), *out], "unknown task"),
        (spe, "images config lacks keys", ["evaluate", "--run", str(t / "spe-img-nokeys"), *out], "lacks the key"),
        (spe, "corrupt safetensors", ["evaluate", "--run", str(t / "spe-corrupt"), *out], "spe-corrupt"),
        (spe, "NaN shift", ["evaluate", "--run", str(t / "spe-corrupt"), "--shift", "nan", *out], "--shift"),
        (spe, "odd head dim", ["benchmark", "--head-dim", "3", *out], "--head-dim"),
        # suica / pipa: flags that were accepted and never used are gone (exit 0 before)
        ("suica", "simulate --device", ["simulate", "--device", "cuda", "--output", str(t / "never.h5ad")], "--device"),
        ("suica", "predict --out", ["predict", "--model", str(t / "run-missing-keys"), "--output",
                                    str(t / "never.h5ad"), *out], "--out"),
        ("pipa", "make-data --device", ["make-data", "--device", "cuda", *out], "--device"),
        ("pipa", "evaluate --device", ["evaluate", "--device", "cuda", "--model", str(t / "pipa-corrupt"), *out],
         "--device"),
        ("pipa", "NaN step error", ["make-data", "--step-error", "nan", *out], "--step-error"),
        # kea
        ("kea", "zero episodes", ["evaluate", "--run", str(t / "kea-run"), "--episodes", "0", *out], "--episodes"),
        # attn-consensus
        ("attn-consensus", "text as .npy (--x0)", ["simulate", "--x0", str(t / "text.npy"), *out],
         ("--x0", "text.npy")),
        ("attn-consensus", "NaN token", ["simulate", "--x0", str(t / "nan-x0.npy"), *out], "--x0"),
        ("attn-consensus", "model folder without model_type", ["gpt2", "--model", str(t / "run-missing-keys"), *out],
         ("--model", "run-missing-keys")),
        ("attn-consensus", "corrupt safetensors", ["gpt2", "--model", str(t / "lift-corrupt" / "model"), *out],
         ("--model", "lift-corrupt")),
        ("attn-consensus", "unknown init", ["simulate", "--init", "nope", *out], "init"),
        ("attn-consensus", "NaN step size", ["simulate", "--dt", "nan", *out], "dt"),
        ("attn-consensus", "one-dimensional tokens", ["simulate", "--d", "1", *out], "d must"),
        # earl-bo
        ("earl-bo", "bounds not JSON", ["optimize", "--objective", str(t / "obj_text.py") + ":f", "--bounds",
                                        str(t / "bad.jsonl"), *out], ("--bounds", "bad.jsonl")),
        ("earl-bo", "NaN bound", ["optimize", "--objective", str(t / "obj_text.py") + ":f", "--bounds",
                                  str(t / "bounds-nan.json"), *out], "--bounds"),
        ("earl-bo", "objective file is not python", ["optimize", "--objective", str(t / "obj_text.py") + ":f",
                                                     "--bounds", str(t / "bounds-ok.json"), *out], "--objective"),
        ("earl-bo", "unknown benchmark", ["optimize", "--benchmark", "nope", *out], "--benchmark"),
        ("earl-bo", "one initial point", ["optimize", "--n-init", "1", *out], "--n-init"),
        ("earl-bo", "NaN agent learning rate", ["optimize", "--agent.lr", "nan", *out], "--agent.lr"),
        # lcia
        ("lcia", "binary task stream", ["train", "--tasks", str(t / "binary.jsonl"), *out], ("--tasks", "binary.jsonl")),
        ("lcia", "task row without answer", ["train", "--tasks", str(t / "tasks-nofields.jsonl"), *out],
         ("--tasks", "answer")),
        ("lcia", "run config lacks keys", ["evaluate", "--run", str(t / "lcia-nokeys"), *out], "lacks the key"),
        ("lcia", "model folder without a model", ["train", "--model", str(t / "run-missing-keys"), *out],
         ("--model", "run-missing-keys")),
        ("lcia", "corrupt safetensors", ["train", "--model", str(t / "lift-corrupt" / "model"), *out],
         ("--model", "lift-corrupt")),
        ("lcia", "unknown task name", ["train", "--config.tasks", "nope", *out], "'nope'"),
        ("lcia", "NaN learning rate", ["train", "--config.lr", "nan", *out], "lr must"),
        # private-robust-align
        (pra, "text as .npz", ["fit", "--data", str(t / "text.npz"), *out], ("--data", "text.npz")),
        (pra, "truncated .npz", ["fit", "--data", str(t / "trunc.npz"), *out], ("--data", "trunc.npz")),
        (pra, "epsilon entry not a number", ["fit", "--data", str(t / "pra-eps.npz"), *out], ("--data", "epsilon")),
        (pra, "labels not 0/1", ["fit", "--data", str(t / "pra-badz.npz"), *out], ("--data", "z must")),
        (pra, "binary pairs file", ["privatize-pairs", "--data", str(t / "binary.jsonl"), *out],
         ("--data", "binary.jsonl")),
        (pra, "NaN epsilon", ["fit", "--epsilon", "nan", *out], "--epsilon"),
        (pra, "zero pairs", ["simulate", "--sim.n", "0", *out], "n must"),
        (pra, "unknown order", ["simulate", "--sim.order", "nope", *out], "order"),
        # sold
        ("sold", "pretrained config with an unknown field", ["train", "--pretrained", str(t / "sold-pre-badae"), *out],
         "'ae'"),
        ("sold", "agent config with an unknown field", ["evaluate", "--run", str(t / "sold-run-badagent"), *out],
         "'agent'"),
        ("sold", "agent config lacks keys", ["evaluate", "--run", str(t / "sold-run-nokeys"), *out], "lacks the key"),
        ("sold", "corrupt safetensors", ["train", "--pretrained", str(t / "sold-pre-corrupt"), *out],
         "sold-pre-corrupt"),
        ("sold", "env without image observations", ["train", "--env", "CartPole-v1", *out], "--env"),
        ("sold", "unknown representation", ["train", "--representation", "nope", *out], "--representation"),
        ("sold", "zero steps", ["train", "--steps", "0", *out], "--steps"),
        # pes
        ("pes", "discrete-action env", ["train", "--learner.env", "CartPole-v1", *out], "CartPole-v1"),
        ("pes", "unknown env", ["train", "--learner.env", "nope", *out], "'nope'"),
        ("pes", "policy lacks keys", ["evaluate", "--run", str(t / "pes-nokeys"), *out], "lacks the key"),
        ("pes", "theta of the wrong size", ["evaluate", "--run", str(t / "pes-badtheta"), *out], ("--run", "theta")),
        ("pes", "NaN learning rate", ["train", "--learner.lr", "nan", *out], "lr must"),
        ("pes", "zero batch", ["train", "--learner.batch", "0", *out], "batch must"),
        # select-augment
        (sa, "model config lacks keys", ["evaluate", "--run", str(t / "sa-nokeys"), *out], "lacks the key"),
        (sa, "corrupt safetensors", ["evaluate", "--run", str(t / "sa-corrupt"), *out], "sa-corrupt"),
        (sa, "zero test images", ["evaluate", "--run", str(t / "sa-corrupt"), "--n-test", "0", *out], "--n-test"),
        (sa, "NaN prune ratio", ["train", "--prune-ratio", "nan", *out], "--prune-ratio"),
        (sa, "text as a .pt clip checkpoint", ["train", "--clip-arch", "ViT-B-32", "--clip-checkpoint",
                                                str(t / "fake.pt"), *out], "fake.pt"),
    ]
    if not _HAS_MUJOCO:  # a traceback before; where MuJoCo is installed the task simply runs
        cases.append(("kea", "sparse-reacher without MuJoCo", ["train", "--task", "sparse-reacher", *out], "--task"))
    return cases


def _snapshot(tmp: Path) -> list[str]:
    return sorted(str(p.relative_to(tmp)) for p in tmp.rglob("*"))


CASES = _cases(Path("/placeholder"))


def _log_to_current_stderr() -> None:
    """Library loggers (transformers, torch) keep the stderr of the test that first used them; in one process that
    is an earlier test's closed capture, and a warning then prints a logging traceback. Point them at this test's."""
    import logging

    loggers = [logging.getLogger(), *(lg for lg in logging.Logger.manager.loggerDict.values()
                                      if isinstance(lg, logging.Logger))]
    for lg in loggers:
        for h in lg.handlers:
            if isinstance(h, logging.StreamHandler) and getattr(h.stream, "closed", False):
                h.stream = sys.stderr  # not setStream: it flushes the closed one first


@pytest.mark.parametrize("i", range(len(CASES)), ids=[f"{c[0]}: {c[1]}" for c in CASES])
def test_bad_input_case(i, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.chdir(tmp_path)  # a default --out (runs/...) would land here and be caught by the snapshot
    _fixtures(tmp_path)
    pkg, label, argv, needle = _cases(tmp_path)[i]
    _log_to_current_stderr()
    import logging

    monkeypatch.setattr(logging, "raiseExceptions", False)  # a handler left on a closed capture: no "Logging error"
    before = _snapshot(tmp_path)
    main = importlib.import_module(pkg.replace("-", "_") + ".cli").main
    rc = main(argv)
    err = capsys.readouterr().err
    assert rc == 2, f"{pkg}: {label}: exit {rc}\n{err[-2000:]}"
    lines = [ln for ln in err.splitlines() if "error:" in ln]
    needles = (needle,) if isinstance(needle, str) else needle
    assert len(lines) == 1 and all(n in lines[0] for n in needles), f"{pkg}: {label}: {err[-2000:]}"
    assert "Traceback" not in err
    assert _snapshot(tmp_path) == before, f"{pkg}: {label}: something was written"


# ---------------------------------------------------------------- inputs that need a fitted model: function level
def test_suica_coords_files(tmp_path):
    from suica.cli import _load_coords
    from suica.errors import SUICAInputError

    ok = tmp_path / "c.csv"
    ok.write_text("x,y\n1,2\n3,4\n")
    np.testing.assert_array_equal(_load_coords(ok), [[1, 2], [3, 4]])  # one header row is allowed
    bad = tmp_path / "bad.csv"
    bad.write_text("x,y\nfoo,bar\n")
    with pytest.raises(SUICAInputError, match="--coords"):
        _load_coords(bad)
    txt = tmp_path / "t.npy"
    txt.write_text("not npy")
    with pytest.raises(SUICAInputError, match="--coords"):
        _load_coords(txt)
    nan = tmp_path / "nan.npy"
    np.save(nan, np.array([[0.0, math.nan]]))
    with pytest.raises(SUICAInputError, match="finite"):
        _load_coords(nan)
    h5 = tmp_path / "t.h5ad"
    h5.write_text("text")
    with pytest.raises(Exception, match="--coords"):
        _load_coords(h5)


def test_suica_fit_refuses_a_nan_coordinate_on_a_held_out_spot(tmp_path, capsys):
    from suica.cli import main
    from suica.data import write_h5ad
    from suica.synthetic import make_tissue

    a = make_tissue(n_spots=60, n_genes=12, n_domains=2, layout="random", dim=2, zero_frac=0.5, seed=0)
    split = np.array(["train"] * a.n_obs, dtype=object)
    split[:5] = "test"
    a.obs["split"] = split.astype(str)
    a.obsm["spatial"] = np.asarray(a.obsm["spatial"], dtype=np.float64)
    a.obsm["spatial"][2, 0] = math.nan  # a held-out spot
    write_h5ad(a, tmp_path / "nan.h5ad")
    rc = main(["fit", "--data", str(tmp_path / "nan.h5ad"), "--out", str(tmp_path / "never")])
    err = capsys.readouterr().err
    assert rc == 2 and "non-finite" in err and "obsm" in err, err
    assert not (tmp_path / "never").exists()


def test_lift_offline_hub_id_fails_fast(monkeypatch):
    import time

    import torch  # noqa: F401  (imports are not what is timed)
    from lift.models import load_model
    from transformers import AutoModelForCausalLM  # noqa: F401

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    t0 = time.perf_counter()
    with pytest.raises(Exception, match="gpt2-not-cached"):
        load_model("gpt2-not-cached")
    assert time.perf_counter() - t0 < 5.0


def test_interrupted_command_leaves_nothing_and_keeps_the_old_run(tmp_path, monkeypatch, capsys):
    """Ctrl-C inside a command: exit 130, one line, the staged run is removed and an old run stays intact."""
    from dataclasses import dataclass

    from icml25.cli_helpers import CommonOptions, method_main, open_run_dir

    @dataclass(frozen=True)
    class Cmd(CommonOptions):
        pass

    def fn(cfg):
        rd = open_run_dir("demo", cfg)
        rd.write_json("config.json", {"new": True})
        raise KeyboardInterrupt

    class M:
        name = cli = "demo"
        title, venue, url = "Demo", "", ""

    out = tmp_path / "run"
    out.mkdir()
    (out / "results.json").write_text('{"old": true}')
    rc = method_main(M, {"go": (Cmd, fn)}, argv=["go", "--out", str(out), "--overwrite"])
    err = capsys.readouterr().err
    assert rc == 130 and "interrupted" in err and "Traceback" not in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run"]
    assert sorted(p.name for p in out.iterdir()) == ["results.json"]
    # positive control: the same command without the interrupt replaces the run
    def ok(cfg):
        open_run_dir("demo", cfg).write_json("config.json", {"new": True})
        return 0

    assert method_main(M, {"go": (Cmd, ok)}, argv=["go", "--out", str(out), "--overwrite"]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["config.json"]


# ---------------------------------------------------------------- issue 70: --out honoured, validation before torch
def _honour_string_pe(t: Path) -> list[str]:
    return ["benchmark", "--head-dim", "8", "--heads", "1", "--tokens", "4", "--repeats", "1"]


def _honour_safediffcon(t: Path) -> list[str]:
    np.savez(t / "ctrl.npz", u0=np.zeros((2, 32)), u_target=np.zeros((2, 32)), f=np.zeros((2, 10, 32)))
    return ["evaluate", "--controls", str(t / "ctrl.npz")]


def _honour_pes(t: Path) -> list[str]:
    _write_json(t / "pol" / "policy.json", {"env": "lqr", "horizon": 5, "gamma": 0.9, "theta": [0.1, -0.2]})
    return ["evaluate", "--run", str(t / "pol")]


def _honour_select_augment(t: Path) -> list[str]:
    from icml25.checkpoint import save_model
    from select_augment.data import shapes
    from select_augment.train import SmallCNN

    classes = len(shapes(4, seed=0, split="test").classnames)
    _write_json(t / "sa" / "config.json", {"dataset": "shapes"})
    save_model(t / "sa" / "model", SmallCNN(classes, width=4), {"num_classes": classes, "width": 4, "downsample": 1})
    return ["evaluate", "--run", str(t / "sa"), "--n-test", "8"]


HONOUR = {("string-pe", "benchmark.json"): _honour_string_pe, ("safediffcon", "evaluation.json"): _honour_safediffcon,
          ("pes", "evaluation.json"): _honour_pes, ("select-augment", "evaluation.json"): _honour_select_augment}


@pytest.mark.parametrize("pkg, result", list(HONOUR), ids=[k[0] for k in HONOUR])
def test_out_is_honoured(pkg, result, tmp_path, capsys, monkeypatch):
    """``--out`` of the evaluate/benchmark commands that accepted it and wrote nothing (issue 70) holds the run."""
    monkeypatch.chdir(tmp_path)
    argv = HONOUR[(pkg, result)](tmp_path)
    before = set(_snapshot(tmp_path))
    main = importlib.import_module(pkg.replace("-", "_") + ".cli").main
    assert main([*argv, "--out", str(tmp_path / "D"), "--quiet"]) == 0, capsys.readouterr().err[-2000:]
    assert {"config.json", "env.json", result} <= {p.name for p in (tmp_path / "D").iterdir()}
    assert json.loads((tmp_path / "D" / result).read_text())
    assert all(p == "D" or p.startswith("D/") for p in set(_snapshot(tmp_path)) - before)  # nothing outside --out


def test_suica_evaluate_refuses_data_without_coordinates_and_honours_out(tmp_path, capsys):
    import anndata as ad
    from suica.cli import main
    from suica.data import write_h5ad

    data, run = tmp_path / "t.h5ad", tmp_path / "run"
    assert main(["simulate", "--output", str(data), "--n-spots", "80", "--n-genes", "20", "--quiet"]) == 0
    tiny = ["--model.gae-hidden", "8", "4", "--model.latent-dim", "4", "--model.inr-width", "8",
            "--model.ffn-mapping", "8", "--model.gae-epochs", "2", "--model.inr-epochs", "2",
            "--model.decoder-epochs", "2"]
    assert main(["fit", "--data", str(data), "--out", str(run), "--min-counts-spot", "1", "--max-count", "None",
                 "--quiet", *tiny]) == 0, capsys.readouterr().err[-2000:]
    a = ad.read_h5ad(data)
    del a.obsm["spatial"]
    write_h5ad(a, tmp_path / "nospatial.h5ad")
    model_files = sorted(p.name for p in run.iterdir())
    capsys.readouterr()
    rc = main(["evaluate", "--model", str(run), "--data", str(tmp_path / "nospatial.h5ad"), "--out",
               str(tmp_path / "never"), "--quiet"])
    err = capsys.readouterr().err
    assert rc == 2 and "Traceback" not in err, err[-2000:]  # a KeyError traceback before
    lines = [ln for ln in err.splitlines() if "error:" in ln]
    assert len(lines) == 1 and "--data" in lines[0] and 'obsm["spatial"]' in lines[0], err
    assert not (tmp_path / "never").exists()
    assert main(["evaluate", "--model", str(run), "--out", str(tmp_path / "ev"), "--quiet"]) == 0
    assert "masked_cosine" in json.loads((tmp_path / "ev" / "evaluation.json").read_text())  # --out honoured
    assert sorted(p.name for p in run.iterdir()) == model_files  # the model folder is not written into


@pytest.mark.parametrize("argv", [["make-data", "--k", "0"], ["evaluate", "--n-prompts", "0"],
                                  ["make-data", "--step-error", "nan"], ["evaluate", "--prior", "not-a-folder"]],
                         ids=["make-data k", "evaluate n-prompts", "make-data step-error", "evaluate prior"])
def test_pipa_validates_before_importing_torch(argv, tmp_path):
    """A bad argument is refused in well under a second: torch (about 4 s to import) is not imported first."""
    code = ("import sys; from pipa.cli import main; rc = main(sys.argv[1:]); "
            "print('torch' in sys.modules); sys.exit(rc)")
    r = subprocess.run([sys.executable, "-c", code, *argv, "--out", str(tmp_path / "never")], capture_output=True,
                       text=True, timeout=120, cwd=tmp_path)
    assert r.returncode == 2 and "error:" in r.stderr, r.stderr[-2000:]
    assert r.stdout.strip() == "False", "torch was imported before the arguments were checked"
    assert not (tmp_path / "never").exists()
