"""Cluster presets, and the seeded rule that puts every job of any trace into a pool of any preset.

Presets (`PRESETS`; every number is a fact of its source):

- ``philly``: 16 nodes x 2 P100 + 20 nodes x 8 P100 = 192 GPUs, the Philly cluster of RLTune's simulator
  (dshruti20/RLTune, ``philly_env_base_v2.py`` at commit 835982a2). Philly nodes had 2 or 8 GPUs (Jeon et al.,
  ATC'19; README of traces/philly-pollux).
- ``helios``: 5 virtual clusters of 6, 4, 3, 2 and 2 nodes x 8 V100 = 136 GPUs, RLTune's Helios cluster
  (``helios_env_base_v2.py``, same commit). Helios nodes hold 8 GPUs: every job of helios-gpw above 8 GPUs uses
  gpu_num / 8 nodes (computed from that trace's ``node_num``).
- ``alibaba``: T4 8 x 2, MISC 8 x 8, P100 15 x 2, V100M16 10 x 8, V100M32 8 x 8 = 254 GPUs of 5 types, RLTune's
  Alibaba cluster (``alibaba_env_base_v2.py``, same commit; it names the V100s V100_16GB / V100_32GB, here the
  Alibaba traces' names).
- ``alibaba-2023-nodes``: the 1,213 GPU nodes of the Alibaba 2023 node list (``openb_node_list_gpu_node.csv``,
  alibaba/clusterdata at commit 50a91c7), one pool per (model, GPUs per node): 12 pools, 6,212 GPUs.

A preset is a `spotlab.cluster.state.Cluster` of `NodePool(gpu, nodes, gpus_per_node)`; `assign_pools` sets a
table's ``pool`` column to an index into ``cluster.pools``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType

import numpy as np
import pandas as pd

from ..errors import JobTableError, TraceError
from .job_table import check_seed, check_table, with_load, with_multi_gpu_share
from .state import Cluster, NodePool
from .trace_csv import numeric_column, raise_bad_rows, read_trace_csv

__all__ = ["ALIBABA_NODES", "PRESETS", "PresetSpec", "assign_pools", "cluster_jobs", "nodes_cluster", "preset",
           "unplaceable_jobs"]

ALIBABA_NODES = "traces/alibaba-gpu-v2023/openb_node_list_gpu_node.csv"


@dataclass(frozen=True)
class PresetSpec:
    """A fixed cluster: pools as (GPU type, nodes, GPUs per node), and where the numbers come from."""

    name: str
    pools: tuple[tuple[str, int, int], ...]
    source: str

    @property
    def gpus(self) -> int:
        return sum(nodes * per for _, nodes, per in self.pools)


_RLTUNE = "dshruti20/RLTune@835982a2"
PRESETS: Mapping[str, PresetSpec | None] = MappingProxyType({
    "philly": PresetSpec("philly", (("P100", 16, 2), ("P100", 20, 8)),
                         f"{_RLTUNE} philly_env_base_v2.py: 16 x 2-GPU and 20 x 8-GPU P100 nodes"),
    "helios": PresetSpec("helios", tuple(("V100", n, 8) for n in (6, 4, 3, 2, 2)),
                         f"{_RLTUNE} helios_env_base_v2.py: 5 VCs of 6, 4, 3, 2, 2 nodes x 8 V100"),
    "alibaba": PresetSpec("alibaba", (("T4", 8, 2), ("MISC", 8, 8), ("P100", 15, 2), ("V100M16", 10, 8),
                                      ("V100M32", 8, 8)),
                          f"{_RLTUNE} alibaba_env_base_v2.py: 5 GPU types, node counts 8, 8, 15, 10, 8 of 2, 8, 2, "
                          "8, 8 GPUs"),
    "alibaba-2023-nodes": None,  # read from the node list (nodes_cluster)
})


def preset(name: str, *, root: str | Path | None = None, download: bool = True) -> Cluster:
    """The `Cluster` of preset ``name`` (`PRESETS`); ``alibaba-2023-nodes`` reads the node list via the catalogue."""
    if name not in PRESETS:
        raise JobTableError(f"unknown cluster preset {name!r}; known: {', '.join(PRESETS)}")
    spec = PRESETS[name]
    if spec is None:
        from ..data.locate import dataset_path

        return nodes_cluster(dataset_path(ALIBABA_NODES, root=root, download=download))
    return Cluster(pools=tuple(NodePool(gpu, nodes, per) for gpu, nodes, per in spec.pools))


def nodes_cluster(path: str | Path) -> Cluster:
    """A `Cluster` from a node list (columns ``model``, ``gpu``: one row per node): a pool per (model, GPUs per
    node), ordered by model then node size. Nodes without GPUs are left out. Raises `TraceError` on a bad file."""
    path = Path(path)
    df = read_trace_csv(path)
    missing = [c for c in ("model", "gpu") if c not in df.columns]
    if missing:
        raise TraceError(f"{path}: not a node list, missing column(s) {', '.join(missing)} (found "
                         f"{', '.join(df.columns)})")
    gpus = numeric_column(path, df, "gpu", integer=True, nonneg="GPU count").astype(np.int64)
    model = df["model"].astype(str).str.strip()
    raise_bad_rows(path, "model", ((model == "") & (gpus > 0)).to_numpy(), model, "empty GPU model")
    nodes = pd.DataFrame({"model": model.to_numpy(), "gpu": gpus})
    nodes = nodes[nodes["gpu"] > 0]
    if nodes.empty:
        raise TraceError(f"{path}: no node with a GPU")
    counts = nodes.groupby(["model", "gpu"]).size().sort_index()
    return Cluster(pools=tuple(NodePool(str(m), int(n), int(g)) for (m, g), n in counts.items()))


# ------------------------------------------------------------------------------------------- pool choice


def _pool_gpus(pool: NodePool) -> int:
    return int(pool.nodes) * int(pool.gpus_per_node)


def _never_fits(pool: NodePool, gpus: int, whole_nodes: bool) -> str:
    """Why ``gpus`` GPUs can never run in ``pool`` ("" when they can). ``whole_nodes``: the engine's accept rule
    (one node, else ``gpus / gpus_per_node`` whole nodes: `NodePool.never_fits`); otherwise the GPUs may be
    spread over the pool's nodes in any counts, as RLTune's placement does, so the pool's GPUs are the limit."""
    if whole_nodes:
        return pool.never_fits(gpus)
    if gpus <= _pool_gpus(pool):
        return ""
    return f"{gpus} GPUs is more than the {pool.gpu} pool's {_pool_gpus(pool)} ({pool.nodes}x{pool.gpus_per_node})"


def _fits(pool: NodePool, gpus: int, whole_nodes: bool = True) -> bool:
    return not _never_fits(pool, gpus, whole_nodes)


def _candidates(pools: tuple[NodePool, ...], gpus: int, gpu_type: str | None,
                whole_nodes: bool) -> tuple[list[int], str, bool]:
    """Pool indices that can hold the job, why none can ("" when some can), and whether its GPU type matched."""
    named = set(gpu_type.split("|")) if gpu_type else set()
    typed = [i for i, p in enumerate(pools) if p.gpu in named]
    allowed = typed if typed else list(range(len(pools)))
    why = {i: _never_fits(pools[i], gpus, whole_nodes) for i in allowed}
    fit = [i for i in allowed if not why[i]]
    if fit:
        return fit, "", bool(typed)
    largest = max(allowed, key=lambda i: _pool_gpus(pools[i]))
    others = f" (and {len(allowed) - 1} other pool(s))" if len(allowed) > 1 else ""
    kind = f" {gpu_type}" if typed else ""
    return fit, f"no{kind} pool can hold {gpus} GPUs: {why[largest]}{others}", bool(typed)


def _groups(table: pd.DataFrame) -> dict[tuple[int, object], np.ndarray]:
    """Row positions per (GPU count, GPU type), in a fixed order so seeded draws do not depend on pandas."""
    keys = list(zip(table["num_gpus"].to_numpy(), table["gpu_type"].fillna("").to_numpy(), strict=True))
    out: dict[tuple[int, object], list[int]] = {}
    for i, key in enumerate(keys):
        out.setdefault((int(key[0]), str(key[1]) or None), []).append(i)
    return {k: np.array(out[k]) for k in sorted(out, key=lambda k: (k[0], k[1] or ""))}


def assign_pools(table: pd.DataFrame, cluster: Cluster, seed: int = 0, *, whole_nodes: bool = True) -> pd.DataFrame:
    """The table with ``pool`` set for every job that some pool of ``cluster`` can hold.

    Rule (seeded, ``numpy.random.default_rng(seed)``): a job whose ``gpu_type`` names GPU types of the cluster
    (``A|B`` for alternatives) goes to a pool of those types; any other job to any pool. Among those pools that
    can hold it (`_never_fits`: by default the engine's rule, one node or whole nodes; ``whole_nodes=False``
    lets a job spread over a pool's nodes), it picks one with probability proportional to the pool's GPUs. A job
    no pool can hold keeps ``pool`` <NA>; ``attrs["pools"]`` counts them by reason, `unplaceable_jobs` lists them.
    """
    table = check_table(table)
    seed = check_seed(seed)
    pools = tuple(getattr(cluster, "pools", ()))
    if not pools:
        raise JobTableError(f"expected a cluster with node pools (e.g. preset('philly')), got {cluster!r}")
    capacity = np.array([_pool_gpus(p) for p in pools], dtype=float)
    rng = np.random.default_rng(seed)
    pool = np.full(len(table), -1, dtype=np.int64)
    reasons: dict[str, int] = {}
    matched = 0
    for (gpus, gpu_type), rows in _groups(table).items():
        fit, why, typed = _candidates(pools, gpus, gpu_type, whole_nodes)
        matched += rows.size if typed else 0
        if not fit:
            reasons[why] = reasons.get(why, 0) + rows.size
            continue
        weights = capacity[fit] / capacity[fit].sum()
        pool[rows] = np.asarray(fit)[rng.choice(len(fit), size=rows.size, p=weights)]
    out = table.copy()
    assigned = pd.array(pool, dtype="Int64")
    assigned[pool < 0] = pd.NA
    out["pool"] = assigned
    out.attrs["pools"] = {
        "cluster": ",".join(f"{p.gpu}:{p.nodes}x{p.gpus_per_node}" for p in pools),
        "seed": seed,
        "whole_nodes": bool(whole_nodes),
        "rule": "a pool of the job's GPU type when the cluster has it, else any pool; among those that can hold "
                "the job (" + ("one node, else whole nodes" if whole_nodes else "spread over a pool's nodes") +
                "), one drawn with probability proportional to its GPUs",
        "gpu_type_matched": int(matched),
        "unplaceable": int((pool < 0).sum()),
        "unplaceable_by_reason": reasons,
    }
    return out


def unplaceable_jobs(table: pd.DataFrame, cluster: Cluster, *, whole_nodes: bool = True) -> pd.DataFrame:
    """The jobs no pool of ``cluster`` can hold (``job_id, num_gpus, gpu_type, reason``), in table order."""
    table = check_table(table)
    pools = tuple(getattr(cluster, "pools", ()))
    if not pools:
        raise JobTableError(f"expected a cluster with node pools (e.g. preset('philly')), got {cluster!r}")
    why = np.full(len(table), "", dtype=object)
    for (gpus, gpu_type), rows in _groups(table).items():
        why[rows] = _candidates(pools, gpus, gpu_type, whole_nodes)[1]
    bad = why != ""
    out = table.loc[bad, ["job_id", "num_gpus", "gpu_type"]].reset_index(drop=True)
    out["reason"] = pd.array(why[bad], dtype="string")
    return out


def cluster_jobs(table: pd.DataFrame, cluster: Cluster, *, seed: int = 0, multi_gpu_share: float | None = None,
                 load: float | None = None, whole_nodes: bool = True) -> pd.DataFrame:
    """A trace's jobs made ready for ``cluster``: GPU mix (optional), pools, then arrivals scaled to ``load``.

    The order matters: pools depend on GPU counts, and the load counts only jobs that have a pool. Each step
    records itself in ``attrs`` (``multi_gpu_share``, ``pools``, ``load``).
    """
    if multi_gpu_share is not None:
        table = with_multi_gpu_share(table, multi_gpu_share, seed=seed)
    table = assign_pools(table, cluster, seed, whole_nodes=whole_nodes)
    if load is not None:
        table = with_load(table, load, cluster)
    return table
