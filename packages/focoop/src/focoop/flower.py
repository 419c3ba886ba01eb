"""FOCoOp on Flower: a ClientApp, a ServerApp with a FedAvg-subclass strategy, and a simulation runner.

* ClientApp (``@app.train()``): reads its client id from ``context.node_config["partition-id"]``, loads the
  :class:`~focoop.setup.FederationSetup` (path in the run config ``setup-path`` or given to the factory), keeps its
  **private** ``ctx_local`` and DRO multipliers γ₁, γ₂ in ``context.state`` (persisting per node across rounds),
  runs :func:`focoop.client.client_fit` and replies with the shared contexts as an ``ArrayRecord`` and a
  ``MetricRecord`` holding ``num-examples`` (= number of batches, the official FedAvg weight) and ``partition-id``.
  ``@app.evaluate()`` evaluates the client with its own prompts (only in the final round, to save time).
* :class:`FOCoOpStrategy` subclasses ``flwr.serverapp.strategy.FedAvg`` and overrides ``aggregate_train``: it keeps
  the raw replies, orders them by partition id and calls :func:`focoop.server.server_aggregate` (FedAvg, then the
  semi-unbalanced-OT calibration, which needs every client's K OOD prompts, not only their average).
* :func:`run_flower_local` runs both over an in-process ``Grid`` (no Ray; ``--engine flower``, used by the tests)
  and :func:`run_flower_simulation` with Flower's simulation engine (Ray backend, ``--engine flower-sim``). Both
  return a :class:`~focoop.engine.FedResult` identical to the in-process engine's for the same seed.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable
from dataclasses import asdict
from pathlib import Path

import torch

from focoop.config import FedConfig
from focoop.dro import DROState

_SETUP_CACHE: dict[str, object] = {}


def _load_setup(path: str):
    from focoop.setup import FederationSetup

    if path not in _SETUP_CACHE:
        _SETUP_CACHE[path] = FederationSetup.load(path)
    return _SETUP_CACHE[path]


def _cfg_from_record(rec) -> FedConfig:
    return FedConfig(**json.loads(str(rec["focoop-config"])))


def make_client_app(setup_path: str | None = None, *, setup=None):
    """A Flower ``ClientApp`` running FOCoOp's client.

    ``setup`` (an in-memory :class:`~focoop.setup.FederationSetup`) or ``setup_path`` override the run config's
    ``setup-path``.
    """
    from flwr.app import ArrayRecord, ConfigRecord, Context, Message, MetricRecord, RecordDict
    from flwr.clientapp import ClientApp

    from focoop.client import client_evaluate, client_fit

    app = ClientApp()

    def _common(msg: Message, context: Context):
        torch.set_num_threads(1)
        cfg = _cfg_from_record(msg.content["config"])
        data = setup if setup is not None else _load_setup(setup_path or str(context.run_config["setup-path"]))
        cid = int(context.node_config["partition-id"])
        glob = msg.content["arrays"].to_torch_state_dict()
        local = context.state["local"].to_torch_state_dict() if "local" in context.state else None
        return cfg, data, cid, glob, local

    @app.train()
    def train(msg: Message, context: Context) -> Message:
        cfg, data, cid, glob, local = _common(msg, context)
        dro = None
        if "dro" in context.state:
            d = context.state["dro"]
            dro = DROState(gamma_id=float(d["gamma-id"]), gamma_ood=float(d["gamma-ood"]))
        res = client_fit(data, cfg, cid=cid, server_round=int(msg.content["config"]["server-round"]),
                         global_state=glob, local_state=local, dro_state=dro)
        if res.local:
            context.state["local"] = ArrayRecord(res.local)
        if res.dro is not None:
            context.state["dro"] = ConfigRecord({"gamma-id": res.dro.gamma_id, "gamma-ood": res.dro.gamma_ood})
        metrics = {"num-examples": int(res.n_batches), "partition-id": cid, "loss": float(res.metrics["loss"])}
        content = RecordDict({"arrays": ArrayRecord(res.upload), "metrics": MetricRecord(metrics)})
        return Message(content=content, reply_to=msg)

    @app.evaluate()
    def evaluate(msg: Message, context: Context) -> Message:
        cfg, data, cid, glob, local = _common(msg, context)
        final = int(msg.content["config"]["server-round"]) >= cfg.rounds
        out = client_evaluate(data, cfg, cid=cid, global_state=glob, local_state=local) if final else {}
        metrics = {"num-examples": 1, "partition-id": cid,
                   "per-client": json.dumps(out)}
        content = RecordDict({"metrics": ConfigRecord(metrics)})
        return Message(content=content, reply_to=msg)

    return app


def _make_strategy_class():
    from flwr.app import ArrayRecord, MetricRecord
    from flwr.serverapp.strategy import FedAvg

    from focoop.server import server_aggregate

    class FOCoOpStrategy(FedAvg):
        """FedAvg whose ``aggregate_train`` also runs FOCoOp's OT calibration on the raw per-client replies."""

        def __init__(self, *, cfg: FedConfig, **kw):
            super().__init__(**kw)
            self.cfg = cfg
            self.history: list[dict] = []
            self.per_client: dict[int, dict] = {}
            self.round_seconds: list[float] = []
            self._t = time.perf_counter()

        def configure_train(self, server_round, arrays, config, grid):
            self._t = time.perf_counter()
            return super().configure_train(server_round, arrays, config, grid)

        def aggregate_train(self, server_round: int, replies: Iterable) -> tuple:
            valid, _ = self._check_and_log_replies(list(replies), is_train=True)
            if not valid:
                return None, None
            parsed = []
            for m in valid:
                met = m.content["metrics"]
                parsed.append((int(met["partition-id"]), m.content["arrays"].to_torch_state_dict(),
                               float(met["num-examples"])))
            state, info = server_aggregate(self.cfg, parsed)
            self.history.append({"round": server_round, **info})
            self.round_seconds.append(time.perf_counter() - self._t)
            return ArrayRecord(state), MetricRecord({k: float(v) for k, v in info.items()})

        def aggregate_evaluate(self, server_round: int, replies: Iterable):
            for m in replies:
                if m.has_error():
                    continue
                rec = m.content["metrics"]
                row = json.loads(str(rec["per-client"]))
                if row:
                    self.per_client[int(rec["partition-id"])] = row
            return MetricRecord({"n": float(len(self.per_client))})

    return FOCoOpStrategy


def FOCoOpStrategy(*, cfg: FedConfig, **kw):  # noqa: N802 - factory that behaves like the class
    """Build the FedAvg-subclass strategy (class created lazily so flwr is imported only when used)."""
    return _make_strategy_class()(cfg=cfg, **kw)


def make_server_app(cfg: FedConfig | None = None, *, setup_path: str | None = None,
                    result_path: str | None = None):
    """A Flower ``ServerApp``: ``cfg``/paths override the run config (``focoop-config`` JSON, ``setup-path``,
    ``result-path``). It writes the result (final global state as tensors; history, per-client metrics and round times
as JSON metadata) to ``result-path`` as .safetensors (:func:`save_result`; no pickle)."""
    from flwr.app import Context
    from flwr.serverapp import Grid, ServerApp

    app = ServerApp()

    @app.main()
    def main(grid: Grid, context: Context) -> None:
        run_cfg = context.run_config
        c = cfg or FedConfig(**json.loads(str(run_cfg.get("focoop-config", "{}"))))
        c.validate()
        spath = setup_path or str(run_cfg["setup-path"])
        rpath = result_path or str(run_cfg.get("result-path", "focoop_flower_result.safetensors"))
        save_result(run_strategy(grid, c, _load_setup(spath)), rpath)

    return app


def save_result(result: dict, path: str | Path) -> Path:
    """Write a ServerApp result: ``global_state`` tensors + the rest as JSON metadata, one .safetensors file."""
    from icml25.checkpoint import save_tensors

    rest = {"history": result["history"], "round_seconds": list(result["round_seconds"]),
            "per_client": {str(k): v for k, v in result["per_client"].items()}}
    return save_tensors(path, dict(result["global_state"]), metadata={"focoop-result": json.dumps(rest)})


def load_result(path: str | Path) -> dict:
    """Read what :func:`save_result` wrote (never unpickles)."""
    from safetensors import safe_open

    with safe_open(str(path), framework="pt") as f:
        rest = json.loads((f.metadata() or {})["focoop-result"])
        state = {k: f.get_tensor(k) for k in f.keys()}
    return {"history": rest["history"], "round_seconds": rest["round_seconds"], "global_state": state,
            "per_client": {int(k): v for k, v in rest["per_client"].items()}}


def run_strategy(grid, cfg: FedConfig, setup) -> dict:
    """Run :class:`FOCoOpStrategy` for ``cfg.rounds`` rounds on ``grid``; returns history, per-client metrics and
    the final global state (what the ServerApp saves)."""
    from flwr.app import ArrayRecord, ConfigRecord

    from focoop.prompts import init_global_state

    strategy = FOCoOpStrategy(cfg=cfg, fraction_train=1.0, fraction_evaluate=1.0, min_train_nodes=cfg.n_clients,
                              min_evaluate_nodes=cfg.n_clients, min_available_nodes=cfg.n_clients)
    conf = ConfigRecord({"focoop-config": json.dumps(asdict(cfg))})
    result = strategy.start(grid=grid, initial_arrays=ArrayRecord(init_global_state(setup, cfg)),
                            num_rounds=cfg.rounds, train_config=conf, evaluate_config=conf)
    final = result.arrays.to_torch_state_dict() if result.arrays is not None else {}
    return {"history": strategy.history, "per_client": strategy.per_client, "global_state": final,
            "round_seconds": strategy.round_seconds}


def _make_local_grid_class():
    from uuid import uuid4

    from flwr.app import Context, Message, RecordDict
    from flwr.serverapp import Grid

    class LocalGrid(Grid):
        """A Flower ``Grid`` that delivers messages to one ClientApp per virtual node in this process.

        Node ``j + 1`` is partition ``j``; each node keeps its own ``Context`` (so ``context.state`` persists
        across rounds exactly as on a SuperNode). Replies are returned in node order. No Ray, no network.
        """

        def __init__(self, client_app, n_nodes: int):
            self.app = client_app
            self.contexts = {j + 1: Context(run_id=0, node_id=j + 1, node_config={"partition-id": j,
                                                                                   "num-partitions": n_nodes},
                                            state=RecordDict(), run_config={}) for j in range(n_nodes)}
            self._run = None

        def set_run(self, run) -> None:
            self._run = run

        @property
        def run(self):
            return self._run

        def create_message(self, content, message_type, dst_node_id, group_id, ttl=None):
            return Message(content, dst_node_id, message_type, ttl=ttl, group_id=group_id)

        def get_node_ids(self):
            return list(self.contexts)

        def push_messages(self, messages):  # pragma: no cover - send_and_receive is used
            raise NotImplementedError

        def pull_messages(self, message_ids):  # pragma: no cover
            raise NotImplementedError

        def send_and_receive(self, messages, *, timeout=None):
            replies = []
            for msg in sorted(messages, key=lambda m: m.metadata.dst_node_id):
                msg.metadata.__dict__["_message_id"] = str(uuid4())
                replies.append(self.app(msg, self.contexts[msg.metadata.dst_node_id]))
            return replies

    return LocalGrid


def run_flower_local(setup, cfg: FedConfig):
    """Run the Flower ClientApp and FOCoOpStrategy over an in-process :class:`LocalGrid` (no Ray)."""
    from focoop.engine import FedResult

    cfg.validate()
    t0 = time.perf_counter()
    from flwr.supercore.task_identity import TaskIdentity

    grid = _make_local_grid_class()(make_client_app(setup=setup), cfg.n_clients)
    saved = (TaskIdentity._task_id, TaskIdentity._run_id, TaskIdentity._node_id)
    if TaskIdentity._run_id is None:  # messages need a task identity; this process plays the SuperLink
        from flwr.common.constant import SUPERLINK_NODE_ID

        TaskIdentity.task_id, TaskIdentity.run_id, TaskIdentity.node_id = 0, 0, SUPERLINK_NODE_ID
    try:
        out = run_strategy(grid, cfg, setup)
    finally:
        TaskIdentity._task_id, TaskIdentity._run_id, TaskIdentity._node_id = saved
    per = [out["per_client"].get(j, {"n_test": 0.0}) for j in range(cfg.n_clients)]
    rs = out["round_seconds"]
    return FedResult(method=cfg.method, per_client=per, global_state=out["global_state"], history=out["history"],
                     seconds=time.perf_counter() - t0, seconds_per_round=float(sum(rs) / max(len(rs), 1)),
                     engine="flower")


def run_flower_simulation(setup_path: str | Path, cfg: FedConfig, *, result_path: str | Path, num_cpus: int = 2):
    """Run ``cfg`` with Flower's simulation engine (Ray) and return a :class:`~focoop.engine.FedResult`."""
    from flwr.simulation import run_simulation

    from focoop.engine import FedResult

    cfg.validate()
    t0 = time.perf_counter()
    run_simulation(server_app=make_server_app(cfg, setup_path=str(setup_path), result_path=str(result_path)),
                   client_app=make_client_app(str(setup_path)), num_supernodes=cfg.n_clients,
                   backend_config={"client_resources": {"num_cpus": 1, "num_gpus": 0.0},
                                   "init_args": {"num_cpus": num_cpus, "include_dashboard": False}})
    seconds = time.perf_counter() - t0
    if not Path(result_path).exists():
        raise RuntimeError("the Flower simulation finished without writing a result (see the Flower log above)")
    out = load_result(result_path)
    per = [out["per_client"].get(j, {"n_test": 0.0}) for j in range(cfg.n_clients)]
    rs = out["round_seconds"]
    return FedResult(method=cfg.method, per_client=per, global_state=out["global_state"], history=out["history"],
                     seconds=seconds, seconds_per_round=float(sum(rs) / max(len(rs), 1)), engine="flower-sim")
