"""The agent's observation (`spotlab.rl.features`): `observe` equals the plain slot-by-slot version it replaced (kept
here as the reference), bit for bit, on random clusters and jobs (several options per job, failures, fallbacks,
jobs no pool holds) at every scheduling point of a run, for several queue windows."""

from __future__ import annotations

from typing import Sequence

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from spotlab.cluster.engine import Engine
from spotlab.cluster.registry import make_scheduler
from spotlab.cluster.state import Cluster, NodePool, Option, SimJob
from spotlab.rl.features import HORIZON_S, N_FEATURES, observe


def plain_observe(engine, candidates: Sequence[int], slots: int, horizon_s: float = HORIZON_S) -> np.ndarray:
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
        if at.end <= limit:
            soon[at.pool] += sum(n for _, n in at.alloc)
    per_key: dict[tuple[tuple[int, ...], int], tuple[float, float, float, float]] = {}
    for slot, j in enumerate(candidates):
        offer = offered[j]
        oi = offer[0] if offer else 0
        o = jobs[j].options[oi]
        g = o.gpus
        pis = tuple(places[j].get(oi, ()))
        key = (pis, g)
        got = per_key.get(key)
        if got is None:
            got = plain_pool_features(pools, pis, g, soon)
            per_key[key] = got
        size, soon_f, frag, place = got
        w = max(now - jobs[j].arrival_s, 0.0)
        d, s = demand.get(o.gpu, g), free_by_type.get(o.gpu, 0)
        can = any(engine.fits(j, k) is not None for k in offer)
        obs[slot] = (w / (w + horizon_s), size, d / (d + s) if d + s > 0 else 1.0, soon_f, frag, place,
                     1.0 if can else 0.0)
    return obs


def plain_pool_features(pools, pis: tuple[int, ...], g: int, soon: list[int]) -> tuple[float, float, float, float]:
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


@st.composite
def runs(draw):
    pools = tuple(NodePool(draw(st.sampled_from("AB")), draw(st.integers(1, 4)), draw(st.sampled_from([1, 2, 4, 8])))
                  for _ in range(draw(st.integers(1, 3))))
    option = st.builds(Option, gpu=st.sampled_from("AABC"), gpus=st.sampled_from([1, 1, 2, 3, 4, 8, 16]),
                       est_rate=st.just(1.0), true_rate=st.floats(0.01, 5),
                       fails=st.sampled_from([False, False, False, True]), label=st.just(""))
    spread = draw(st.sampled_from([10.0, 1e4]))
    jobs = [SimJob(i, draw(st.floats(0, spread)), draw(st.floats(1, 1e4)),
                   tuple(draw(st.lists(option, min_size=1, max_size=3))) if draw(st.integers(0, 19)) else (),
                   0.0, draw(st.integers(0, 2)))
            for i in range(draw(st.integers(1, 60)))]
    return Cluster(pools), jobs


@settings(max_examples=80, deadline=None)
@given(runs(), st.sampled_from(["fifo", "easy", "smallest_first"]), st.sampled_from([2, 5, 128]),
       st.sampled_from([HORIZON_S, 60.0]))
def test_observe_equals_the_plain_slot_by_slot_version(run, scheduler, slots, horizon):
    cluster, jobs = run
    engine = Engine(cluster, jobs)
    sched = make_scheduler(scheduler)
    while engine.advance():
        for cands in (engine.queued(slots), tuple(reversed(engine.queued(slots)))):
            got, want = observe(engine, cands, slots, horizon), plain_observe(engine, cands, slots, horizon)
            assert got.dtype == want.dtype == np.float32 and got.shape == want.shape == (slots, N_FEATURES)
            assert got.tobytes() == want.tobytes(), (got, want)
        sched.schedule(engine)
