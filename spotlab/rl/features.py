"""What the learning scheduler sees: 7 normalised features for each of the first Q queued jobs (RLTune's set).

Each feature is in [0, 1]; a padding slot (fewer than Q queued jobs) is all zeros, and a real job always has
``size > 0``, which is how the network tells padding from jobs. A job is described through its first offered
option (GPU type T, g GPUs) and the pools where that option can ever run (P):

0. ``wait``: time in the queue w, as w / (w + H) (H = ``horizon_s``, one hour by default);
1. ``size``: r = g / (GPUs per node of P's largest node), as r / (1 + r) (a whole node is 0.5);
2. ``demand``: GPUs asked by all queued jobs of type T (d) against free GPUs of type T (s), as d / (d + s);
3. ``soon``: (free GPUs in P + GPUs of P's running jobs ending within H) / g, capped at 1. This reads when the
   running jobs end, as RLTune's simulator (and the SJF baseline) know the true run times; nothing about the
   queued jobs' own run times is shown;
4. ``fragmentation`` of P: the share of its free GPUs that are not on wholly free nodes (0 when none is free);
5. ``placements``: the nodes of P where the job could start now (one node: nodes with >= g free GPUs; k whole
   nodes: whole free nodes // k) over P's nodes;
6. ``can_start``: 1 when one of its offered options fits now, else 0.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

import numpy as np

if TYPE_CHECKING:
    from ..cluster.engine import Engine

__all__ = ["FEATURES", "HORIZON_S", "N_FEATURES", "observe"]

FEATURES = ("wait", "size", "demand", "soon", "fragmentation", "placements", "can_start")
N_FEATURES = len(FEATURES)
HORIZON_S = 3600.0


def observe(engine: Engine, candidates: Sequence[int], slots: int, horizon_s: float = HORIZON_S) -> np.ndarray:
    """The ``(slots, 7)`` float32 features of ``candidates`` (queued job indices, queue order), zero-padded."""
    obs = np.zeros((slots, N_FEATURES), dtype=np.float32)
    if not len(candidates):
        return obs
    st, jobs = engine.state, engine.jobs
    now, pools, places, offered = st.now, st.pools, engine.admission.places, st.offered
    # demand per GPU type over the whole queue; free GPUs per type
    demand: dict[str, int] = {}
    for j in st.queue:
        offer = offered[j]
        if offer:
            o = jobs[j].options[offer[0]]
            demand[o.gpu] = demand.get(o.gpu, 0) + o.gpus
    free_by_type: dict[str, int] = {}
    for ps in pools:
        free_by_type[ps.pool.gpu] = free_by_type.get(ps.pool.gpu, 0) + ps.total_free
    # GPUs each pool gets back within the horizon
    soon = [0] * len(pools)
    limit = now + horizon_s
    for at in st.running.values():
        if at.end <= limit:  # an allocation holds its option's GPUs (`Engine.start` checks it)
            soon[at.pool] += jobs[at.job].options[at.option].gpus
    # every feature but the wait is a function of the job's first offered option's (GPU type, GPUs) when it is
    # the only one offered (`Engine.fits` and the pools where an option can run depend on nothing else): one row
    # per such pair, reused across slots; rows are written in one assignment
    per_key: dict[tuple[tuple[int, ...], int], tuple[float, float, float, float]] = {}
    per_option: dict[tuple[str, int], tuple[float, float, float, float, float, float]] = {}
    rows = []
    for j in candidates:
        offer = offered[j]
        job = jobs[j]
        w = max(now - job.arrival_s, 0.0)
        w = w / (w + horizon_s)
        if len(offer) == 1:
            o = job.options[offer[0]]
            got = per_option.get((o.gpu, o.gpus))
            if got is None:
                got = _option_row(engine, j, offer, o, places[j].get(offer[0], ()), per_key, soon, demand,
                                  free_by_type)
                per_option[(o.gpu, o.gpus)] = got
        else:
            oi = offer[0] if offer else 0
            got = _option_row(engine, j, offer, job.options[oi], places[j].get(oi, ()), per_key, soon, demand,
                              free_by_type)
        rows.append((w, *got))
    obs[:len(rows)] = rows
    return obs


def _option_row(engine: Engine, j: int, offer: Sequence[int], o, pis: Sequence[int], per_key: dict,
                soon: list[int], demand: dict[str, int], free_by_type: dict[str, int]) -> tuple[float, ...]:
    """Every feature but the wait of queued job ``j`` described by option ``o`` (module doc)."""
    g = o.gpus
    key = (tuple(pis), g)
    got = per_key.get(key)
    if got is None:
        got = _pool_features(engine.state.pools, key[0], g, soon)
        per_key[key] = got
    size, soon_f, frag, place = got
    d, s = demand.get(o.gpu, g), free_by_type.get(o.gpu, 0)
    can = any(engine.fits(j, k) is not None for k in offer)
    return size, d / (d + s) if d + s > 0 else 1.0, soon_f, frag, place, 1.0 if can else 0.0


def _pool_features(pools, pis: tuple[int, ...], g: int, soon: list[int]) -> tuple[float, float, float, float]:
    """size, soon, fragmentation and placements of a g-GPU job over pools ``pis`` (module doc)."""
    if not pis:
        return 1.0, 0.0, 0.0, 0.0
    per = max(pools[p].pool.gpus_per_node for p in pis)
    r = g / per
    free = whole = nodes = options = back = 0
    for p in pis:
        ps = pools[p]
        n_per = ps.pool.gpus_per_node
        free += ps.total_free
        n_whole = len(ps.by_free[n_per])
        whole += n_whole * n_per
        nodes += ps.pool.nodes
        back += soon[p]
        if g <= n_per:
            options += sum(len(ps.by_free[f]) for f in range(g, n_per + 1))
        else:
            options += n_whole // (g // n_per) if g % n_per == 0 else 0
    return (r / (1.0 + r), min((free + back) / g, 1.0), (1.0 - whole / free) if free else 0.0,
            min(options / nodes, 1.0))
