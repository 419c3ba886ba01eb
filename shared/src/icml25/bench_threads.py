"""Thread-policy benchmark: ms per training step of a small transformer, idle and under a synthetic CPU load.

``python -m icml25.bench_threads [--steps 40] [--load 2]`` runs each policy in a fresh subprocess (the OpenMP
variables only act before torch is imported):

* ``default``: torch's defaults (threads = cores, active spin-waiting);
* ``1 thread``: ``OMP_NUM_THREADS=1``;
* ``passive``: the icml25 policy, torch's thread count with ``OMP_WAIT_POLICY=PASSIVE``;

first on an idle machine, then with ``--load`` busy-looping processes (the "other jobs on a 2-core machine"
case). The model is a 4-layer transformer encoder (width 128, batch 32 x 32 tokens), the size of the tiny LM test
bed. Prints a markdown table; the numbers in ``shared/README.md`` come from it.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import subprocess
import sys
import time

POLICIES = {
    "default (active waiting)": {"OMP_WAIT_POLICY": None},
    "1 thread": {"OMP_NUM_THREADS": "1", "OMP_WAIT_POLICY": None},
    "passive waiting (icml25)": {"OMP_WAIT_POLICY": "PASSIVE"},
}

_CHILD = r"""
import json, sys, time
import torch
torch.manual_seed(0)
layer = torch.nn.TransformerEncoderLayer(128, 4, 512, batch_first=True)
model = torch.nn.TransformerEncoder(layer, 4)
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
x = torch.randn(32, 32, 128)
steps = int(sys.argv[1])
times = []
for i in range(steps + 3):
    t0 = time.perf_counter()
    loss = model(x).pow(2).mean()
    opt.zero_grad(); loss.backward(); opt.step()
    if i >= 3:
        times.append(time.perf_counter() - t0)
times.sort()
print(json.dumps({"ms": 1000 * times[len(times) // 2], "threads": torch.get_num_threads()}))
"""


def _busy(stop: float) -> None:  # pragma: no cover - runs in a child process
    x = 0
    while time.time() < stop:
        x += 1


def _measure(env_over: dict[str, str | None], steps: int) -> dict[str, float]:
    env = dict(os.environ)
    for k in ("OMP_WAIT_POLICY", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "ICML25_THREADS"):
        env.pop(k, None)
    for k, v in env_over.items():
        if v is not None:
            env[k] = v
    out = subprocess.run([sys.executable, "-c", _CHILD, str(steps)], env=env, capture_output=True, text=True,
                         check=True, timeout=1800)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m icml25.bench_threads", description=__doc__.split("\n")[0])
    p.add_argument("--steps", type=int, default=40, help="timed steps per policy (median reported)")
    p.add_argument("--load", type=int, default=2, help="busy processes in the loaded condition")
    a = p.parse_args(argv)
    if a.steps < 1 or a.load < 0:
        print("error: --steps must be >= 1 and --load >= 0", file=sys.stderr)
        return 2
    rows = []
    for cond in ("idle", f"{a.load} busy processes"):
        procs = []
        if cond != "idle":
            stop = time.time() + 3600
            procs = [mp.Process(target=_busy, args=(stop,), daemon=True) for _ in range(a.load)]
            for pr in procs:
                pr.start()
        try:
            for name, env in POLICIES.items():
                r = _measure(env, a.steps)
                rows.append((cond, name, r["threads"], r["ms"]))
        finally:
            for pr in procs:
                pr.terminate()
    print(f"cpu_count={os.cpu_count()}, steps={a.steps} (median ms/step)\n")
    print("| condition | policy | torch threads | ms / step |\n|---|---|---|---|")
    for cond, name, th, ms in rows:
        print(f"| {cond} | {name} | {th} | {ms:.1f} |")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
