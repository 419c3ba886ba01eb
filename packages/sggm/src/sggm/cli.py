"""Command line of sggm: ``sggm sweep | train | sample | evaluate | reproduce [--quick|--smoke]``.

* ``sweep``: exact KL of the sampler on a Gaussian graph model over a grid of N (or T), written to the run dir.
* ``train``: train a ScoreNetwork by time-weighted DSM on generated graphs (safetensors checkpoint).
* ``sample``: run the reverse system with a trained ScoreNetwork (``--run``) and report degree / spectrum MMD
  (the joint task: GDSS's degree / clustering / orbit MMD against the held-out graphs).
* ``evaluate``: GDSS's MMDs between two graph sets in any supported format.
"""

from __future__ import annotations

import os

# Small dense matrices: one BLAS thread is much faster than OpenBLAS's spinning pool on a busy machine.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from collections.abc import Sequence  # noqa: E402
from dataclasses import asdict, dataclass  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Literal  # noqa: E402

from icml25.cli_helpers import (  # noqa: E402
    BaseOptions,
    CommonOptions,
    ReproduceOptions,
    method_main,
    reproduce_command,
)

from sggm.config import train_cpu, train_paper  # noqa: E402
from sggm.registry import METHOD  # noqa: E402


@dataclass(frozen=True)
class SweepOptions(BaseOptions):
    """Exact KL(sampler ‖ data) of the Euler–Maruyama reverse system on a Gaussian graph model, over N or T."""

    paradigm: Literal["features", "structure", "joint"] = "features"
    """Paradigm: X given A, A given X, or joint."""
    graph: Literal["regular", "powerlaw"] = "regular"
    """Graph family (random d-regular, or Barabási–Albert with m = d/2)."""
    graph_file: Path | None = None
    """Optional .npy file with a dense symmetric adjacency [n, n] (replaces --graph/--n)."""
    n: int = 50
    """Nodes."""
    degree: int = 4
    """Regular degree d (power-law: m = d/2)."""
    n_features: int = 50
    """F: node features."""
    alpha: float = 1.0
    """α in Σ_A = (I + αL)⁻¹."""
    laplacian: Literal["combinatorial", "normalized"] = "combinatorial"
    """Laplacian of the feature covariance."""
    coupling: float = 0.0
    """Coupling c of the joint model."""
    beta_min: float = 1.0
    """VP β_min of the features (and of A outside the joint paradigm)."""
    beta_max: float = 1.0
    """VP β_max."""
    T: float = 8.0
    """Diffusion length (the value used when sweeping N)."""
    n_steps: int = 100
    """N (the value used when sweeping T)."""
    t_min: float = 1e-3
    """End time of the reverse system, in (0, T)."""
    score_error: float = 0.0
    """ε of the perturbed score Σ_t⁻¹ + εI."""
    exact_prior: bool = False
    """Start from the exact p_T instead of the prior N(0, I)."""
    over: Literal["N", "T"] = "N"
    """Sweep N or T."""
    grid: tuple[float, ...] = (25, 50, 100, 200, 400)
    """Values of N (integers) or T."""


@dataclass(frozen=True)
class TrainOptions(CommonOptions):
    """Train a GDSS-style ScoreNetwork by time-weighted denoising score matching on generated graphs."""

    PRESETS = {"cpu": train_cpu, "paper": train_paper}  # sggm.config: the values of this command's own fields

    task: Literal["features", "structure", "joint"] = "features"
    """features: X ~ N(0, (I + αL)⁻¹) on one fixed graph; structure: 0/1 adjacencies of the family (as ±1);
    joint: X (degree one-hot) and A together on a standard set (--dataset) or your graphs (--graphs)."""
    dataset: Literal["community_small", "grid_small", "ego_small"] = "community_small"
    """Standard set of the joint task (generated offline; see sggm.datasets)."""
    graphs: Path | None = None
    """Joint task on your graphs: an edge-list file (u v [graph_id]), a folder of .npy/.npz adjacencies or a .pt
    list of PyG Data objects (replaces --dataset; 20 % are held out for the MMD of `sggm sample`)."""
    max_degree: int = 10
    """Joint task: degree one-hot node features clipped at this degree."""
    graph: Literal["regular", "powerlaw"] = "regular"
    """Graph family."""
    n: int = 16
    """Nodes."""
    degree: int = 4
    """Regular degree d (power-law: m = d/2)."""
    n_features: int = 4
    """F (features task)."""
    alpha: float = 1.0
    """α of the features task."""
    train_size: int = 1024
    """Training draws (features) or graphs (structure)."""
    steps: int = 500
    """DSM steps."""
    batch_size: int = 64
    """Minibatch size."""
    lr: float = 2e-3
    """Adam learning rate (cosine decay)."""
    hidden: int = 32
    """Width of the GCN layers."""
    depth: int = 2
    """GCN layers."""
    T: float = 8.0
    """Diffusion length of training (features task; the structure task uses T = 1 with VP(0.1, 10))."""


@dataclass(frozen=True)
class SampleOptions(BaseOptions):
    """Sample from a trained ScoreNetwork (a ``sggm train`` run directory) and score the samples."""

    run: Path = Path("runs/sggm/latest")
    """Run directory written by ``sggm train``."""
    samples: int = 64
    """Chains."""
    n_steps: int = 100
    """N: Euler–Maruyama steps."""
    t_min: float = 1e-3
    """End time of the reverse system."""


@dataclass(frozen=True)
class EvaluateOptions(BaseOptions):
    """GDSS's graph-generation metrics: degree / clustering / orbit (/ spectrum) MMD² between two graph sets."""

    generated: Path = Path("generated")
    """Generated graphs: an edge-list file (u v [graph_id]), a folder of .npy/.npz adjacencies, or a .pt list of
    PyG Data objects. Isolated nodes are removed first (generated graphs are padded)."""
    reference: Path = Path("reference")
    """Reference (test) graphs, in the same formats."""
    methods: tuple[Literal["degree", "cluster", "orbit", "spectral"], ...] = ("degree", "cluster", "orbit")
    """Which MMDs (GDSS kernels: EMD-Gaussian for degree / clustering / spectrum, Gaussian σ = 30 on orbit counts)."""


def _out(opts: BaseOptions) -> Path:
    from icml25.registry import default_out

    return opts.out if opts.out is not None else default_out(METHOD.name)


def _check(cond: bool, msg: str) -> None:
    from sggm.errors import SggmError

    if not cond:
        raise SggmError(msg)


def sweep_command(opts: SweepOptions) -> int:
    from icml25.rundir import RunDir

    from sggm.errors import check_time_grid
    from sggm.gaussian import GaussianGraphModel
    from sggm.graphs import make_graph
    from sggm.sde import VP

    _check(len(opts.grid) >= 1, "grid must hold at least one value")
    if opts.over == "N":
        _check(all(float(v).is_integer() and v >= 1 for v in opts.grid), f"grid of N must be integers >= 1, got {opts.grid}")
        for v in opts.grid:
            check_time_grid(n_steps=int(v), T=opts.T, t_min=opts.t_min)
    else:
        for v in opts.grid:
            check_time_grid(n_steps=opts.n_steps, T=float(v), t_min=opts.t_min)
    if opts.graph_file is not None:
        from sggm.graphs import as_adjacency, read_npy

        adj = as_adjacency(read_npy(opts.graph_file, what="--graph-file"), name=f"--graph-file {str(opts.graph_file)!r}")
    else:
        adj = make_graph(opts.graph, opts.n, mean_degree=opts.degree, seed=opts.seed)
    model = GaussianGraphModel(paradigm=opts.paradigm, graph=adj, alpha=opts.alpha, laplacian=opts.laplacian,
                               coupling=opts.coupling, n_features=opts.n_features,
                               sde_x=VP(opts.beta_min, opts.beta_max),
                               sde_a=None if opts.paradigm == "joint" else VP(opts.beta_min, opts.beta_max),
                               seed=opts.seed)
    with RunDir(_out(opts), overwrite=opts.overwrite, staged=True) as rd:
        rd.write_config(asdict(opts))
        rows = []
        for v in opts.grid:
            kw = dict(n_steps=int(v) if opts.over == "N" else opts.n_steps, T=opts.T if opts.over == "N" else float(v),
                      t_min=opts.t_min, score_error=opts.score_error, exact_prior=opts.exact_prior)
            law = model.sampler_law(**kw)
            row = {opts.over: v, "kl": law.kl, "kl_reverse": law.kl_reverse, "kl_per_entry": law.kl_per_entry,
                   "kl_reverse_per_entry": law.kl_reverse_per_entry, "entries": law.entries}
            rd.log(len(rows), **row)
            rows.append(row)
        rd.write_json("sweep.json", {"over": opts.over, "rows": rows})
        rd.write_env(device="cpu")
    if not opts.quiet:
        for r in rows:
            print(f"{opts.over} = {r[opts.over]:g}: KL per entry {r['kl_per_entry']:.4g} "
                  f"(reverse {r['kl_reverse_per_entry']:.4g})")
        print(f"written to {rd.target}")
    return 0


def train_command(opts: TrainOptions) -> int:
    import math

    from icml25.rundir import RunDir

    from sggm.errors import SggmError

    for name in ("n", "degree", "n_features", "train_size", "steps", "batch_size", "hidden", "depth"):
        if getattr(opts, name) < 1:
            raise SggmError(f"--{name.replace('_', '-')} must be >= 1, got {getattr(opts, name)}")
    _check(opts.lr > 0 and math.isfinite(opts.lr), f"--lr must be a finite number > 0, got {opts.lr}")
    _check(opts.T > 1e-3 and math.isfinite(opts.T), f"--T must be a finite number > t_min = 0.001, got {opts.T}")
    from sggm.graphs import make_graph

    make_graph(opts.graph, opts.n, mean_degree=opts.degree, seed=opts.seed)  # validates n / degree before writing
    with RunDir(_out(opts), overwrite=opts.overwrite, staged=True) as rd:
        import numpy as np
        from icml25.checkpoint import save_model
        from icml25.device import resolve_device
        from icml25.seeding import seed_everything

        from sggm.gaussian import GaussianGraphModel
        from sggm.score_net import ScoreNetwork, train_score
        from sggm.sde import VP

        device = resolve_device(opts.device)
        seed_everything(opts.seed)
        if opts.task == "features":
            m = GaussianGraphModel(paradigm="features", graph=make_graph(opts.graph, opts.n, mean_degree=opts.degree,
                                   seed=opts.seed), alpha=opts.alpha, n_features=opts.n_features)
            X0, A0 = m.sample_data(opts.train_size, seed=opts.seed)
            net = ScoreNetwork(n_features=opts.n_features, sde_x=m.sde_x, sde_a=m.sde_a, hidden=opts.hidden,
                               depth=opts.depth)
            generate, T = "X", opts.T
            np.save(rd.path / "graph.npy", m.adjacency)
        elif opts.task == "joint":
            from sggm.datasets import node_flags, read_graphs, standard_set, to_tensors
            from sggm.metrics import to_signed

            gs = read_graphs(opts.graphs) if opts.graphs is not None else standard_set(
                opts.dataset, opts.train_size, seed=opts.seed)
            if len(gs) < 2:
                raise SggmError(f"the joint task needs at least 2 graphs, got {len(gs)}")
            n_max = max(g.number_of_nodes() for g in gs)
            k = max(1, len(gs) // 5)
            X0, A01 = to_tensors(gs, n_max=n_max, max_degree=opts.max_degree)
            A0 = to_signed(A01)
            import networkx as nx

            (rd.path / "held_out").mkdir()
            np.savez(rd.path / "held_out" / "graphs.npz", *[nx.to_numpy_array(g, nodelist=range(g.number_of_nodes()))
                                                           for g in gs[len(gs) - k:]])
            X0, A0 = X0[:len(gs) - k], A0[:len(gs) - k]
            sizes = [g.number_of_nodes() for g in gs[:len(gs) - k]]
            flags = node_flags(sizes, n_max)  # GDSS's node flags: padded nodes masked out
            net = ScoreNetwork(n_features=opts.max_degree + 1, sde_x=VP(0.1, 10.0), sde_a=VP(0.1, 10.0),
                               hidden=opts.hidden, depth=opts.depth, adj_powers=3)
            generate, T = "both", 1.0
        else:
            from sggm.metrics import to_signed

            A0 = to_signed(np.stack([make_graph(opts.graph, opts.n, mean_degree=opts.degree,
                                                seed=opts.seed * 100_003 + i) for i in range(opts.train_size)]))
            X0 = np.ones((opts.train_size, opts.n, 1))
            net = ScoreNetwork(n_features=1, sde_x=VP(0.1, 10.0), sde_a=VP(0.1, 10.0), hidden=opts.hidden,
                               depth=opts.depth)
            generate, T = "A", 1.0
        if opts.task != "joint":
            flags, sizes = None, None
        losses = train_score(net, X0, A0, generate=generate, steps=opts.steps, batch_size=opts.batch_size,
                             lr=opts.lr, T=T, seed=opts.seed, progress=not opts.quiet, device=device, flags=flags)
        for i, loss in enumerate(losses):
            if i % 50 == 0 or i == len(losses) - 1:
                rd.log(i, loss=loss)
        n_cfg = A0.shape[-1] if opts.task == "joint" else opts.n
        cfg = {**net.config, "task": opts.task, "graph": opts.graph, "n": n_cfg, "degree": opts.degree,
               "alpha": opts.alpha, "T": T, "seed": opts.seed}
        if sizes is not None:
            cfg["node_counts"] = [int(v) for v in sizes]  # `sggm sample` draws generated graphs' sizes from them
        save_model(rd.path / "model", net, cfg)
        rd.write_config(asdict(opts))
        rd.write_env(device=str(device))
        rd.write_json("train.json", {"final_loss": float(np.mean(losses[-20:])), "steps": opts.steps})
    if not opts.quiet:
        print(f"final DSM loss {np.mean(losses[-20:]):.4g}; written to {rd.target}")
    return 0


def _build(cfg: dict):
    from sggm.score_net import ScoreNetwork
    from sggm.sde import VE, VP

    def sde(d):
        return VP(d["beta_min"], d["beta_max"]) if d["kind"] == "VP" else VE(d["sigma_min"], d["sigma_max"])

    return ScoreNetwork(n_features=cfg["n_features"], sde_x=sde(cfg["sde_x"]), sde_a=sde(cfg["sde_a"]),
                        hidden=cfg["hidden"], depth=cfg["depth"], time_dim=cfg["time_dim"],
                        adj_powers=cfg.get("adj_powers", 1))


def sample_command(opts: SampleOptions) -> int:
    from icml25.errors import read_json
    from icml25.rundir import RunDir

    from sggm.errors import SggmError, check_time_grid

    model_dir = Path(opts.run) / "model"
    if not (model_dir / "model_config.json").exists():
        raise SggmError(f"--run {str(opts.run)!r} has no model/model_config.json; pass a `sggm train` run directory")
    c = read_json(model_dir / "model_config.json", what="--run model config",
                  required=("task", "n", "T", "graph", "degree", "alpha", "n_features", "hidden", "depth", "time_dim",
                            "sde_x", "sde_a"))
    _check(opts.samples >= 2, f"--samples must be >= 2, got {opts.samples}")
    check_time_grid(n_steps=opts.n_steps, T=float(c["T"]), t_min=opts.t_min)
    with RunDir(_out(opts), overwrite=opts.overwrite, staged=True) as rd:
        import numpy as np
        from icml25.checkpoint import load_model

        from sggm.gaussian import GaussianGraphModel
        from sggm.graphs import as_adjacency, make_graph, read_npy
        from sggm.kl import monte_carlo_kl
        from sggm.metrics import degree_mmd, quantize, spectrum_mmd
        from sggm.sampler import sample

        net = load_model(model_dir, _build)
        net.eval()
        rng = np.random.default_rng(opts.seed)
        n = c["n"]
        if c["task"] == "features":
            sx, _ = net.numpy_scores(heads="x")
            adj = as_adjacency(read_npy(Path(opts.run) / "graph.npy", what="--run graph"), name="--run graph.npy")
            m = GaussianGraphModel(paradigm="features", graph=adj, alpha=c["alpha"], n_features=c["n_features"])
            XT = rng.standard_normal((opts.samples, n, c["n_features"]))
            X, _ = sample(sx, None, XT, adj, n_steps=opts.n_steps, T=c["T"], t_min=opts.t_min, sde_x=net.sde_x,
                          seed=opts.seed)
            cols = np.swapaxes(X, 1, 2).reshape(-1, n)
            law = m.sampler_law(n_steps=opts.n_steps, T=c["T"], t_min=opts.t_min)
            res = {"kl_per_entry_learned_mc": monte_carlo_kl(cols, np.zeros(n), m.sigma_graph) / n,
                   "kl_per_entry_exact_law": law.kl_per_entry}
            np.save(rd.path / "samples_X.npy", X)
        elif c["task"] == "joint":
            from sggm.datasets import read_graphs, sample_node_flags
            from sggm.graph_eval import graph_mmds

            z = np.triu(rng.standard_normal((opts.samples, n, n)), 1)
            # node counts drawn from the training graphs' (GDSS's flags); a run without them: every graph has n nodes
            flags = sample_node_flags(c.get("node_counts") or [n], opts.samples, n, rng)
            sx, sa = net.numpy_scores(flags=flags)
            _, A = sample(sx, sa, rng.standard_normal((opts.samples, n, c["n_features"])), z + np.swapaxes(z, 1, 2),
                          n_steps=opts.n_steps, T=c["T"], t_min=opts.t_min, sde_x=net.sde_x, sde_a=net.sde_a,
                          seed=opts.seed, flags=flags)
            G = quantize(A, threshold=0.0)
            (rd.path / "graphs").mkdir()
            np.savez(rd.path / "graphs" / "generated.npz", *list(G))
            res = graph_mmds(read_graphs(Path(opts.run) / "held_out"), list(G))
        else:
            _, sa = net.numpy_scores(heads="a")
            z = np.triu(rng.standard_normal((opts.samples, n, n)), 1)
            _, A = sample(None, sa, np.ones((opts.samples, n, 1)), z + np.swapaxes(z, 1, 2), n_steps=opts.n_steps,
                          T=c["T"], t_min=opts.t_min, sde_a=net.sde_a, seed=opts.seed)
            G = quantize(A, threshold=0.0)
            ref = np.stack([make_graph(c["graph"], n, mean_degree=c["degree"], seed=10**6 + opts.seed * 1000 + i)
                            for i in range(opts.samples)])
            res = {"degree_mmd": degree_mmd(G, ref), "spectrum_mmd": spectrum_mmd(G, ref),
                   "mean_degree": float(G.sum(-1).mean())}
            np.save(rd.path / "samples_A.npy", G)
        rd.write_config(asdict(opts))
        rd.write_env(device="cpu")
        rd.write_json("sample.json", res)
    if not opts.quiet:
        print(res)
        print(f"written to {rd.target}")
    return 0


def evaluate_command(opts: EvaluateOptions) -> int:
    from icml25.rundir import RunDir

    from sggm.datasets import read_graphs
    from sggm.graph_eval import graph_mmds

    gen, ref = read_graphs(opts.generated), read_graphs(opts.reference)
    res = graph_mmds(ref, gen, methods=opts.methods)
    with RunDir(_out(opts), overwrite=opts.overwrite, staged=True) as rd:
        rd.write_config(asdict(opts))
        rd.write_env(device="cpu")
        rd.write_json("evaluate.json", {"mmd": res, "generated": len(gen), "reference": len(ref)})
    if not opts.quiet:
        for k, v in res.items():
            print(f"{k} MMD² {v:.6f}")
        print(f"written to {rd.target}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    return method_main(METHOD, {
        "sweep": (SweepOptions, sweep_command),
        "train": (TrainOptions, train_command),
        "sample": (SampleOptions, sample_command),
        "evaluate": (EvaluateOptions, evaluate_command),
        "reproduce": (ReproduceOptions, reproduce_command(METHOD)),
    }, argv=argv)
