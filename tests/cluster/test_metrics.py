"""Job scores of a cluster run (`spotlab.cluster.metrics`): `log_scores`, read from the engine's log, equals the
scores of the result tables bit for bit on seeded random clusters and jobs (failures, fallbacks, rejected jobs,
setup times; runs long enough for numpy's pairwise sums to block), for every scheduler and placement."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spotlab.cluster.metrics import METRICS, job_score, log_scores
from spotlab.cluster.simulate import run_engine
from spotlab.cluster.state import Cluster, NodePool, Option, SimJob
from spotlab.errors import ClusterError


@st.composite
def runs(draw):
    """Up to 3 pools (two may share a GPU type), up to 300 jobs with up to 3 options (some never fit, some fail),
    fallbacks, setup times, arrivals as floats or whole numbers. The jobs come from a drawn seed: 300 jobs drawn one
    field at a time would exceed hypothesis's budget of generated data."""
    pools = tuple(NodePool(draw(st.sampled_from("AB")), draw(st.integers(1, 4)), draw(st.sampled_from([1, 2, 4, 8])))
                  for _ in range(draw(st.integers(1, 3))))
    n = draw(st.integers(0, 300))
    spread = draw(st.sampled_from([1.0, 100.0, 1e5]))
    whole = draw(st.booleans())
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))

    def option() -> Option:
        return Option(str(rng.choice(list("AABC"))), int(rng.choice([1, 1, 2, 3, 4, 8, 16])),
                      float(rng.choice([0.5, 1.0, 2.0])), float(rng.uniform(0.01, 5)), bool(rng.integers(4) == 0),
                      str(rng.choice(["", "x"])))

    jobs = []
    for i in range(n):
        t = float(rng.uniform(0, spread))
        options = tuple(option() for _ in range(rng.integers(1, 4))) if rng.integers(20) else ()
        jobs.append(SimJob(i, float(int(t)) if whole else t, float(np.exp(rng.uniform(np.log(0.001), np.log(1e4)))),
                           options, float(rng.choice([0.0, 0.0, 7.5])), int(rng.integers(0, 3))))
    return Cluster(pools), jobs


def same(a: float, b: float) -> bool:
    return a == b or (math.isnan(a) and math.isnan(b))


@settings(max_examples=60, deadline=None)
@given(runs(), st.sampled_from(["fifo", "easy", "sjf", "smallest_first", "random"]),
       st.sampled_from(["best_fit", "milp"]), st.sampled_from([10.0, 1.0, 3600]))
def test_scores_from_the_log_are_the_scores_of_the_tables_bit_for_bit(run, scheduler, placement, threshold):
    cluster, jobs = run
    engine, _ = run_engine(cluster, jobs, scheduler=scheduler, placement=placement)
    got = log_scores(engine, threshold)
    result = engine.result()
    want = {m: job_score(result, m, threshold) for m in METRICS}
    assert list(got) == list(METRICS)
    assert all(same(got[m], want[m]) for m in METRICS), (got, want)


def test_scores_need_an_ended_run_and_a_valid_threshold():
    from spotlab.cluster.engine import Engine

    cluster = Cluster((NodePool("A", 1, 1),))
    engine = Engine(cluster, [SimJob(0, 0.0, 1.0, (Option("A", 1, 1.0, 1.0, False),))])
    with pytest.raises(ClusterError, match="not ended"):
        log_scores(engine)
    engine, _ = run_engine(cluster, [SimJob(0, 0.0, 1.0, (Option("A", 1, 1.0, 1.0, False),))])
    with pytest.raises(ClusterError, match="threshold_s"):
        log_scores(engine, 0.0)
