"""Measured peak memory of a fine-tuning run (the paper's "memory on par with PEFT", Liu et al., ICML 2025, Sec. 4).

The exact counts (optimizer-state floats ``2k`` per matrix vs ``2mn``, trainable entries) are computed elsewhere;
this module *measures* the peak memory of the same code path (``setup_method`` + ``finetune``) in two ways:

1. **Allocator trace** (:class:`AllocationTrace`, in-process, any device): ``torch.profiler`` with
   ``profile_memory=True`` records every tensor allocation and free that torch makes on the CPU (and on CUDA)
   inside the window. Sorted by time, the running sum ``B(t) = sum_{events <= t} nbytes`` is the number of bytes of
   torch tensors allocated in the window and still alive at ``t``; the peak is ``max_t B(t)``. It counts
   parameters (the model is copied inside the window), gradients, optimizer state, activations and temporaries,
   exactly, but not the interpreter or allocator overhead.
2. **Process RSS** (:func:`rss_peak_subprocess`): the run in a fresh Python process; after the model is built the
   kernel's peak-RSS counter is reset (``/proc/self/clear_refs`` = 5; ``VmHWM``), and the peak RSS of the training
   steps minus the RSS just before them is reported. glibc is told to serve every allocation >= 64 KiB with
   ``mmap`` (``MALLOC_MMAP_THRESHOLD_``) so that freed tensors leave the RSS at once. Interpreter noise is a few MB,
   so this is meant for a larger model (hidden 512) where the training state is hundreds of MB.

On CUDA, :func:`measure_training_memory` also reports ``torch.cuda.max_memory_allocated``.
"""

from __future__ import annotations

import copy
import gc
import json
import os
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import torch

from lift.errors import LiftConfigError

__all__ = ["AllocationTrace", "measure_training_memory", "rss_peak_subprocess", "rss_peak_batch", "MemorySpec"]


class AllocationTrace:
    """Context manager: peak bytes of torch tensors allocated inside the ``with`` block and alive at once.

    Attributes (after exit): ``peak_by_device`` (``{"cpu": bytes, "cuda": bytes}``: max over time of the running
    sum of allocations minus frees, per device type), ``net_by_device`` (allocated and not freed at exit),
    ``n_events``; ``peak_bytes`` / ``net_bytes`` are the CPU entries.

    Example::

        with AllocationTrace() as tr:
            x = torch.empty(1024, 1024)          # 4 MiB
            del x
        assert tr.peak_bytes >= 4 * 2**20 and tr.net_bytes == 0
    """

    def __init__(self) -> None:
        self.peak_by_device: dict[str, int] = {}
        self.net_by_device: dict[str, int] = {}
        self.n_events = 0
        self._prof: Any = None

    def __enter__(self) -> AllocationTrace:
        from torch.profiler import ProfilerActivity, profile

        # kineto logs a spurious "gpuGetDeviceCount failed" ERROR on CPU-only machines; silence it unless the user
        # has chosen a log level
        os.environ.setdefault("KINETO_LOG_LEVEL", "5")
        acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if torch.cuda.is_available() else [])
        self._prof = profile(activities=acts, profile_memory=True, record_shapes=False, with_stack=False)
        self._prof.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._prof.__exit__(*exc)
        if exc[0] is not None:
            return
        kineto = getattr(getattr(self._prof, "profiler", None), "kineto_results", None)
        if kineto is None or not hasattr(kineto, "events"):  # pragma: no cover - torch internals changed
            raise RuntimeError("this torch version does not expose profiler memory events (kineto_results)")
        events = [e for e in kineto.events() if e.name() == "[memory]"]
        events.sort(key=lambda e: e.start_ns())
        running: dict[str, int] = {}
        peak: dict[str, int] = {}
        for e in events:
            dev = str(e.device_type()).split(".")[-1].lower()  # DeviceType.CPU -> "cpu"
            running[dev] = running.get(dev, 0) + int(e.nbytes())
            peak[dev] = max(peak.get(dev, 0), running[dev])
        self.peak_by_device, self.net_by_device, self.n_events = peak, running, len(events)

    @property
    def peak_bytes(self) -> int:
        """Peak on the CPU (the device these tests and ``reproduce`` run on)."""
        return self.peak_by_device.get("cpu", 0)

    @property
    def net_bytes(self) -> int:
        return self.net_by_device.get("cpu", 0)


def measure_training_memory(method: str, base_model: Any, tokenizer: Any, examples: Sequence[Any], *, cfg: Any,
                            steps: int = 3, batch_size: int = 64, seed: int = 0) -> dict[str, Any]:
    """Peak memory of ``steps`` optimizer steps of ``method`` on a copy of ``base_model`` (same code as reproduce).

    The copy of the model, the method's set-up (peft wrapping, masks, optimizer) and the training steps are all
    inside the :class:`AllocationTrace` window. Returns ``{"peak_bytes", "net_bytes", "peak_cuda_bytes", "live"}``,
    ``live`` = the weights / gradients / optimizer-state bytes alive after the last backward (``params``, ``grads``,
    ``optimizer``; the optimizer entry after the last step), counted from the live tensors.
    """
    from lift.finetune import finetune, setup_method

    gc.collect()
    cuda = next(base_model.parameters()).device.type == "cuda"
    if cuda:
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        cuda0 = torch.cuda.memory_allocated()
    with AllocationTrace() as tr:
        model = copy.deepcopy(base_model)
        su = setup_method(method, model, cfg)
        res = finetune(su.model, tokenizer, examples, optimizer=su.optimizer, steps=steps, batch_size=batch_size,
                       seed=seed)
        del su, model
        gc.collect()
    out: dict[str, Any] = {"peak_bytes": tr.peak_bytes, "net_bytes": tr.net_bytes, "peak_cuda_bytes": None,
                           "live": res["memory"]}
    if cuda:
        out["peak_cuda_bytes"] = int(torch.cuda.max_memory_allocated() - cuda0)
    return out


# ------------------------------------------------------------------------------------------------ process RSS


@dataclass(frozen=True)
class MemorySpec:
    """What the RSS child process trains: a randomly initialised tiny-LM-shaped Llama of a chosen size."""

    method: str
    hidden_size: int = 512
    num_layers: int = 4
    intermediate_size: int | None = None
    """None: the test bed's default (4 x hidden)."""
    sparse_grads: bool = True
    """LIFT's sparse-gradient path (``SparseAdamW(sparse_grads=...)``); False = dense gradients as the official code."""
    svd: str = "randomized"
    """SVD of LIFT's masks (randomized: what a large model uses; exact SVD of a 1024 x 4096 matrix takes ~10 s)."""
    steps: int = 2
    batch_size: int = 16
    budget_rank: int = 4
    filter_rank: int = 8
    update_interval: int = 2
    seed: int = 0


def _status_kb(field: str) -> int:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"{field} not in /proc/self/status")  # pragma: no cover


def _reset_peak_rss() -> bool:
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
        return True
    except OSError:  # pragma: no cover - not Linux, or not permitted
        return False


def _child(spec: MemorySpec) -> dict[str, Any]:
    """Run in the fresh process: build the model, reset the peak-RSS counter, train, report."""
    import resource

    from icml25.testbeds.lm import build_tiny_lm, build_tokenizer, encode_examples, make_examples

    from lift.finetune import MethodConfig, finetune, setup_method

    torch.set_num_threads(1)
    tok = build_tokenizer()
    model = build_tiny_lm(tok, hidden_size=spec.hidden_size, num_layers=spec.num_layers,
                          intermediate_size=spec.intermediate_size, seed=spec.seed)
    examples = make_examples("mul", 4 * spec.batch_size, seed=spec.seed, split="train")
    cfg = MethodConfig(budget_rank=spec.budget_rank, filter_rank=spec.filter_rank,
                       update_interval=spec.update_interval, seed=spec.seed, sparse_grads=spec.sparse_grads,
                       svd=spec.svd)
    with torch.no_grad():  # warm-up forward: kernels and thread pools are loaded before the baseline
        model(**encode_examples(tok, examples[:2]))
    gc.collect()
    params = sum(p.numel() * p.element_size() for p in model.parameters())
    hwm_reset = _reset_peak_rss()
    base_kb = _status_kb("VmRSS")
    ru0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    import time

    t0 = time.perf_counter()
    su = setup_method(spec.method, model, cfg)
    t_setup = time.perf_counter() - t0
    res = finetune(su.model, tok, examples, optimizer=su.optimizer, steps=spec.steps, batch_size=spec.batch_size,
                   seed=spec.seed)
    peak_kb = _status_kb("VmHWM") if hwm_reset else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {"method": spec.method, "rss_before_bytes": 1024 * base_kb, "rss_peak_bytes": 1024 * peak_kb,
            "peak_increase_bytes": 1024 * (peak_kb - base_kb), "param_bytes": params,
            "n_params": sum(p.numel() for p in model.parameters()), "hwm_reset": hwm_reset,
            "ru_maxrss_before_kb": ru0, "live": res["memory"], "setup_s": t_setup,
            "step_s": res["step_seconds"], "sparse_grads": spec.sparse_grads}


def rss_peak_subprocess(spec: MemorySpec, *, timeout: float = 600.0) -> dict[str, Any]:
    """Run :class:`MemorySpec` in a fresh Python process and return its peak-RSS measurement (see module doc)."""
    from lift.finetune import METHODS

    if spec.method not in METHODS:
        raise LiftConfigError(f"method must be one of {', '.join(METHODS)}; got {spec.method!r}")
    env = dict(os.environ)
    env.update({"MALLOC_MMAP_THRESHOLD_": "65536", "MALLOC_TRIM_THRESHOLD_": "0", "OMP_NUM_THREADS": "1"})
    cmd = [sys.executable, "-m", "lift.memory", json.dumps(asdict(spec))]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"memory child for {spec.method} failed ({proc.returncode}): {proc.stderr[-2000:]}")
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    return json.loads(lines[-1])


def rss_peak_batch(specs: Sequence[MemorySpec], *, timeout: float = 600.0) -> list[dict[str, Any]]:
    """:func:`rss_peak_subprocess` for many specs at the price of one interpreter start-up: one fresh Python process
    imports torch/transformers/peft and builds the tokenizer once (one thread, no torch work), then ``os.fork()``-s
    one child per spec; each child builds its own model, resets its peak-RSS counter and trains, so its peak RSS
    increase is its own (pages inherited from the parent are resident before the reset and not counted again).
    Results in the order of ``specs``."""
    from lift.finetune import METHODS

    for spec in specs:
        if spec.method not in METHODS:
            raise LiftConfigError(f"method must be one of {', '.join(METHODS)}; got {spec.method!r}")
    if not specs:
        return []
    env = dict(os.environ)
    env.update({"MALLOC_MMAP_THRESHOLD_": "65536", "MALLOC_TRIM_THRESHOLD_": "0", "OMP_NUM_THREADS": "1",
                "TOKENIZERS_PARALLELISM": "false"})
    cmd = [sys.executable, "-m", "lift.memory", "--batch", json.dumps([asdict(s) for s in specs])]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"memory fork server failed ({proc.returncode}): {proc.stderr[-2000:]}")
    got = [json.loads(ln) for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if len(got) != len(specs):
        raise RuntimeError(f"memory fork server returned {len(got)} results for {len(specs)} specs: "
                           f"{proc.stderr[-2000:]}")
    return got


def _warm_model_imports() -> None:
    """Import transformers' lazily loaded Llama modules (and everything they pull in) once in the fork server, before
    forking. Otherwise every child imports them again (measured: ~13 s of a ~15 s child when Python writes no
    bytecode caches). No model is built here, so the children's memory accounting is unchanged; and a child's
    peak-RSS counter is reset after its own model build and warm-up forward, so imports were never counted."""
    import transformers.models.llama.configuration_llama  # noqa: F401
    import transformers.models.llama.modeling_llama  # noqa: F401


def _fork_server(specs: list[MemorySpec]) -> None:
    """Run in the fresh process of :func:`rss_peak_batch`: warm the imports once, fork one child per spec."""
    torch.set_num_threads(1)  # no OpenMP pool in the parent: forking after it exists can hang the child
    from icml25.testbeds.lm import build_tokenizer

    import lift.finetune  # noqa: F401  (import once, before forking)

    build_tokenizer()  # warm any tokenizer cache
    _warm_model_imports()
    for spec in specs:
        rfd, wfd = os.pipe()
        pid = os.fork()
        if pid == 0:  # child
            os.close(rfd)
            code = 0
            try:
                out = json.dumps(_child(spec)).encode()
            except BaseException as e:  # report, never return into the parent's loop
                out = json.dumps({"error": repr(e)}).encode()
                code = 1
            with os.fdopen(wfd, "wb") as fh:
                fh.write(out)
            os._exit(code)
        os.close(wfd)
        with os.fdopen(rfd, "rb") as fh:
            data = fh.read()
        _, status = os.waitpid(pid, 0)
        rec = json.loads(data.decode() or "{}")
        if "error" in rec or not data or os.waitstatus_to_exitcode(status) != 0:
            raise RuntimeError(f"memory child for {spec} failed: {rec.get('error', status)}")
        print(json.dumps(rec), flush=True)


if __name__ == "__main__":  # the child of rss_peak_subprocess / the fork server of rss_peak_batch
    import warnings

    warnings.filterwarnings("ignore")
    if sys.argv[1] == "--batch":
        _fork_server([MemorySpec(**d) for d in json.loads(sys.argv[2])])
    else:
        print(json.dumps(_child(MemorySpec(**json.loads(sys.argv[1])))), flush=True)
