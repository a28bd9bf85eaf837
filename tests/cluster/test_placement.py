"""Candidate placements: valid candidates, hand-computed scores, the integer program choosing exactly what the
brute-force scoring chooses (hypothesis), and both placements through the engine."""

from __future__ import annotations

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from spotlab.cluster.simulate import simulate
from spotlab.cluster.placement.best_fit import BestFit
from spotlab.cluster.placement.candidates import (
    candidate_allocations,
    fewest_nodes,
    fits_compactly,
)
from spotlab.cluster.placement.milp import PlacementMilp
from spotlab.cluster.placement.score import TIE, PlacementProblem, Weights, next_demand
from spotlab.cluster.registry import PLACEMENTS, make_placement
from spotlab.cluster.state import Cluster, ClusterState, Option, SimJob


@st.composite
def pools(draw):
    """Free GPUs per node of a pool (node size 1-8, 1-24 nodes) and a job that may or may not fit."""
    per = draw(st.sampled_from([1, 2, 4, 8]))
    free = draw(st.lists(st.integers(0, per), min_size=1, max_size=24))
    gpus = draw(st.integers(1, min(3 * per, per * len(free))))
    return per, free, gpus


def state_with(per: int, free: list[int]) -> ClusterState:
    """A live state whose one pool has the given free GPUs per node."""
    cluster = Cluster.parse(f"A:{len(free)}x{per}")
    st_ = ClusterState(cluster, [], [])
    alloc = tuple((n, per - f) for n, f in enumerate(free) if f < per)
    if alloc:
        st_.take(0, alloc)
    return st_


@settings(max_examples=300, deadline=None, derandomize=True)
@given(p=pools(), spread=st.booleans(), per_size=st.integers(1, 4))
def test_candidates_are_valid_allocations(p, spread, per_size):
    per, free, gpus = p
    found = candidate_allocations(free, per, gpus, spread=spread, per_size=per_size)
    m = fewest_nodes(free, per, gpus, spread)
    assert bool(found) == (m > 0)
    assert len(set(found)) == len(found)
    sizes = [len(a) for a in found]
    assert sizes == sorted(sizes) and set(sizes) <= {m, m + 1}
    assert all(sizes.count(k) <= per_size for k in set(sizes))
    for alloc in found:
        nodes = [n for n, _ in alloc]
        assert nodes == sorted(set(nodes))
        assert sum(g for _, g in alloc) == gpus
        assert all(1 <= g <= free[n] for n, g in alloc)
        if not spread:
            assert len(alloc) == 1 or all(g == per for _, g in alloc)
    if spread:  # m is the fewest: no m - 1 nodes hold the job
        assert m == 0 or sum(sorted(free, reverse=True)[:m - 1]) < gpus


@settings(max_examples=200, deadline=None, derandomize=True)
@given(p=pools())
def test_whole_node_candidates_start_with_best_fit(p):
    """Without spreading, the first candidate is `best_fit`'s allocation: the engine's rule is kept."""
    per, free, gpus = p
    if gpus > per and gpus % per:
        gpus = per * (gpus // per)
    found = candidate_allocations(free, per, gpus, spread=False)
    expected = BestFit().place(state_with(per, free), 0, gpus)
    assert (found[0] if found else None) == expected


def test_candidates_by_hand():
    free = [8, 3, 5, 0, 8, 2, 6, 1]
    assert candidate_allocations(free, 8, 3) == (((1, 3),), ((2, 3),), ((6, 3),), ((0, 3),), ((0, 2), (7, 1)),
                                                 ((2, 1), (6, 2)), ((0, 2), (4, 1)))
    assert candidate_allocations(free, 8, 16, per_size=2) == (((0, 8), (4, 8)), ((0, 8), (4, 7), (7, 1)),
                                                              ((0, 8), (4, 7), (6, 1)))
    assert candidate_allocations(free, 8, 16, spread=False) == (((0, 8), (4, 8)),)
    assert candidate_allocations(free, 8, 34) == ()
    assert fewest_nodes(free, 8, 9) == 2 and fewest_nodes(free, 8, 9, spread=False) == 0
    assert fits_compactly([8, 4, 4], 8, 8) and not fits_compactly([7, 4, 4], 8, 8)


def test_scores_by_hand():
    """Pool of 4 nodes of 8: free 8, 3, 8, 5; a 3-GPU job, next job 8 GPUs."""
    free = (8, 3, 8, 5)
    cands = (((1, 3),), ((3, 3),), ((0, 3),))
    p = PlacementProblem(free, 8, cands, 1, 8, Weights(frag=1.0, next_fit=1.0, waste=0.5, load=0.25))
    assert p.terms(0) == (5 / 8, 0, 0, 1.0)  # node 1 full; node 3's 5 stay stranded; node 0 or 2 holds the next
    assert p.terms(1) == (5 / 8, 0, 0, 6 / 8)  # node 3 keeps 2, node 1 keeps 3
    assert p.terms(2) == (13 / 8, 0, 0, 3 / 8)  # node 0 now partial: 5 + 3 + 5 stranded
    assert p.score(1) == pytest.approx(5 / 8 + 0.25 * 6 / 8 + TIE)
    assert p.best()[0] == 1
    blocked = PlacementProblem((8, 3, 5), 8, (((1, 3),), ((0, 3),)), 1, 8, Weights())
    assert blocked.terms(1)[1] == 1 and blocked.best()[0] == 0  # taking the only whole node blocks the next job


def test_fragmentation_weight_changes_the_choice():
    free = (8, 3, 8, 5)
    cands = (((1, 3),), ((0, 3),))
    assert PlacementProblem(free, 8, cands, 1, 0, Weights(frag=1.0, load=0.25)).best()[0] == 0
    assert PlacementProblem(free, 8, cands, 1, 0, Weights(frag=0.0, load=1.0)).best()[0] == 1
    for w in (Weights(frag=1.0, load=0.25), Weights(frag=0.0, load=1.0)):
        p = PlacementProblem(free, 8, cands, 1, 0, w)
        assert PlacementMilp(4).solve(p)[0] == p.best()[0]


def test_next_demand_skips_the_asker():
    cluster = Cluster.parse("A:1x8,B:1x8")
    opt = lambda gpu, n: Option(gpu, n, 1.0, 1.0, False)  # noqa: E731
    jobs = [SimJob(0, 0, 1, (opt("A", 2),)), SimJob(1, 0, 1, (opt("B", 4),)), SimJob(2, 0, 1, (opt("A", 2),)),
            SimJob(3, 0, 1, (opt("A", 16),)), SimJob(4, 0, 1, (opt("A", 8),))]
    st_ = ClusterState(cluster, jobs, [[0]] * len(jobs))
    st_.queue.extend(range(len(jobs)))
    assert next_demand(st_, 0, 2) == 2  # job 0 asks; job 1 is B; job 2 is next
    assert next_demand(st_, 0, 8) == 2  # the asker (job 4) is further back: the first A job counts
    assert next_demand(st_, 0, 2, lookahead=2) == 0
    st_.queue.remove(2)
    assert next_demand(st_, 0, 2) == 8  # job 3's 16 GPUs never fit one node of 8: skipped


@st.composite
def problems(draw):
    per, free, gpus = draw(pools())
    spread = draw(st.booleans())
    per_size = draw(st.integers(1, 4))
    cands = candidate_allocations(free, per, gpus, spread=spread, per_size=per_size)
    if not cands:
        cands = candidate_allocations([per] * len(free), per, min(gpus, per), per_size=per_size)
        free = [per] * len(free)
    nxt = draw(st.integers(0, per * len(free)))
    w = Weights(*(draw(st.sampled_from([0.0, 0.25, 0.5, 1.0, 2.0, 3.7])) for _ in range(4)))
    fewest = fewest_nodes(free, per, sum(n for _, n in cands[0]), spread)
    return PlacementProblem(tuple(free), per, cands, fewest, nxt, w)


MILP = PlacementMilp(8)


@settings(max_examples=300, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(p=problems())
def test_milp_chooses_what_brute_force_chooses(p):
    index, value = MILP.solve(p)
    best, score = p.best()
    assert index == best
    assert value == pytest.approx(score, abs=1e-6)


WORKLOAD = [SimJob(i, 3.0 * (i // 3), 40.0 + 37 * (i % 5), (Option("A", (1, 2, 4, 8, 3, 16)[i % 6], 1.0, 1.0, False),))
            for i in range(60)]


@pytest.mark.parametrize("scheduler", ["fcfs", "easy", "smallest_first"])
def test_scored_and_milp_place_identically_through_the_engine(scheduler):
    cluster = Cluster.parse("A:3x8,A:4x4")
    a = simulate(cluster, WORKLOAD, scheduler, "scored")
    b = simulate(cluster, WORKLOAD, scheduler, "milp")
    pd.testing.assert_frame_equal(a.attempts, b.attempts)
    assert (a.jobs["status"] == "done").all()
    per = a.attempts["pool"].map({0: 8, 1: 4})
    assert (a.attempts["nodes"].map(len) > -(-a.attempts["gpus"] // per)).any()  # some job spread over nodes


def test_placements_are_registered_and_say_what_they_read():
    assert {"best_fit", "scored", "milp"} <= set(PLACEMENTS)
    assert make_placement("scored", w_next=0.0).free_gpus_only  # free GPUs alone: the engine may cache
    assert not make_placement("milp").free_gpus_only  # reads the queue (the next job)
