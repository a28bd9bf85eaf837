"""Heuristic schedulers on the cluster engine: invariants on random workloads (hypothesis), EASY's reservation,
hand-computed orders, trace jobs, job scores and one-line errors."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from spotlab.cluster import metrics
from spotlab.cluster.engine import Engine
from spotlab.cluster.registry import SCHEDULERS, make_placement, make_scheduler
from spotlab.cluster.schedulers.f1 import f1_score
from spotlab.cluster.simulate import simulate
from spotlab.cluster.state import Cluster, Option, SimJob
from spotlab.cluster.trace_jobs import trace_jobs
from spotlab.errors import ClusterError, JobTableError, SpotlabError

HEURISTICS = ("fcfs", "easy", "sjf", "smallest_first", "multifactor", "f1", "random")
CLUSTER = Cluster.parse("A:2x4,A:3x2,B:2x8")


def ok(gpu: str, gpus: int, rate: float = 1.0) -> Option:
    return Option(gpu, gpus, rate, rate, False)


def job(i: int, t: float, work: float, *options: Option) -> SimJob:
    return SimJob(i, t, work, options)


@st.composite
def workloads(draw, fails: bool = False, equal: bool = False) -> list[SimJob]:
    """Up to 24 jobs on `CLUSTER`, arrivals in bursts, one or two options of 1-16 GPUs (some never fit)."""
    n = draw(st.integers(1, 24))
    jobs, t = [], 0.0
    work = draw(st.sampled_from([50.0, 300.0]))
    for i in range(n):
        t += draw(st.sampled_from([0.0, 0.0, 5.0, 40.0, 200.0]))
        options = []
        for _ in range(draw(st.integers(1, 2))):
            gpu = draw(st.sampled_from(["A", "B"]))
            gpus = draw(st.sampled_from([1, 1, 2, 3, 4, 6, 8, 16]))
            rate = 1.0 if equal else draw(st.sampled_from([0.5, 1.0, 2.0]))
            est = rate if equal else rate * draw(st.sampled_from([0.5, 1.0, 1.5]))
            options.append(Option(gpu, gpus, est, rate, fails and draw(st.booleans())))
        jobs.append(SimJob(i, t, work if equal else draw(st.sampled_from([20.0, 100.0, 700.0])), tuple(options)))
    return jobs


def check_state(engine: Engine) -> None:
    """GPUs conserved node by node: free + held by running attempts = node size, never below 0."""
    st_ = engine.state
    for pi, ps in enumerate(st_.pools):
        held = [0] * ps.pool.nodes
        for a in st_.running.values():
            if a.pool == pi:
                for node, n in a.alloc:
                    held[node] += n
        for node in range(ps.pool.nodes):
            assert 0 <= ps.free[node] <= ps.pool.gpus_per_node
            assert ps.free[node] + held[node] == ps.pool.gpus_per_node
        assert ps.total_free == sum(ps.free)
    assert st_.total_free == sum(ps.total_free for ps in st_.pools)


def run_checked(jobs, scheduler: str, placement: str = "best_fit", **params):
    """The run step by step, state checked after every batch of events; the result and the reservations EASY
    gave each head job."""
    sched = make_scheduler(scheduler, **params)
    engine = Engine(CLUSTER, jobs, make_placement(placement))
    reservations: dict[int, list[float]] = {}
    while engine.advance():
        check_state(engine)
        sched.schedule(engine)
        check_state(engine)
        if scheduler == "easy" and engine.queue_length:
            reservations.setdefault(engine.head(), []).append(sched.reservation(engine))
    return engine.result(scheduler), reservations


def check_attempts(res, jobs) -> None:
    """Every attempt is of an offered option, starts at or after its job's arrival and holds the option's GPUs."""
    arrival = {j.job_id: j.arrival_s for j in jobs}
    by_id = {j.job_id: j for j in jobs}
    for a in res.attempts.itertuples():
        assert a.start_s >= arrival[a.job_id]
        assert a.gpu in {o.gpu for o in by_id[a.job_id].options}
        assert CLUSTER.pools[a.pool].gpu == a.gpu


@pytest.mark.parametrize("placement", ["best_fit", "scored"])
@pytest.mark.parametrize("scheduler", HEURISTICS)
@settings(max_examples=25, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(jobs=workloads())
def test_heuristics_keep_invariants(scheduler, placement, jobs):
    res, _ = run_checked(jobs, scheduler, placement)
    check_attempts(res, jobs)
    done = res.jobs[res.jobs["status"] == "done"]
    assert set(res.jobs["status"]) <= {"done", "rejected"}
    assert (res.attempts.groupby("job_id").size() == 1).all()  # no option fails here: each job starts once
    assert len(done) + (res.jobs["status"] == "rejected").sum() == len(jobs)
    assert (done["start_s"] >= done["arrival_s"]).all()


@pytest.mark.parametrize("scheduler", HEURISTICS)
@settings(max_examples=15, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(jobs=workloads(fails=True))
def test_heuristics_with_failing_options_end_every_job(scheduler, jobs):
    res, _ = run_checked(jobs, scheduler)
    check_attempts(res, jobs)
    assert res.jobs["status"].isin(["done", "failed", "rejected"]).all()


@pytest.mark.parametrize("placement", ["best_fit", "scored"])
@settings(max_examples=40, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(jobs=workloads())
def test_easy_never_delays_the_head(placement, jobs):
    res, reservations = run_checked(jobs, "easy", placement)
    start = dict(zip(res.jobs["job_id"], res.jobs["start_s"], strict=True))
    for j, times in reservations.items():
        assert start[jobs[j].job_id] <= min(times) + 1e-9


@settings(max_examples=30, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(jobs=workloads(equal=True))
def test_sjf_with_equal_runtimes_is_fcfs(jobs):
    a, b = simulate(CLUSTER, jobs, "sjf"), simulate(CLUSTER, jobs, "fcfs")
    pd.testing.assert_frame_equal(a.jobs, b.jobs)
    pd.testing.assert_frame_equal(a.attempts, b.attempts)


def contended() -> list[SimJob]:
    """12 jobs arriving together on a 4-GPU node: many orders are possible."""
    return [job(i, 0.0, 10.0 * (i + 1), ok("A", 1 + i % 4)) for i in range(12)]


def test_random_is_reproducible_per_seed():
    cluster = Cluster.parse("A:1x4")
    sched = make_scheduler("random", seed=3)
    first = simulate(cluster, contended(), sched)
    again = simulate(cluster, contended(), sched)  # the same instance reseeds for a new run
    fresh = simulate(cluster, contended(), "random", seed=3)
    pd.testing.assert_frame_equal(first.jobs, again.jobs)
    pd.testing.assert_frame_equal(first.jobs, fresh.jobs)
    starts = {tuple(simulate(cluster, contended(), "random", seed=s).jobs["start_s"]) for s in range(5)}
    assert len(starts) > 1


# --------------------------------------------------------------------------------------- hand-computed orders


def test_orders_on_one_node():
    """One 4-GPU node busy until t=100; three jobs queued by then, served in each heuristic's order."""
    cluster = Cluster.parse("A:1x4")
    jobs = [job(0, 0, 100, ok("A", 4)), job(1, 1, 500, ok("A", 1)), job(2, 1, 30, ok("A", 4)),
            job(3, 1, 200, ok("A", 2))]

    def starts(name, **kw):
        return simulate(cluster, jobs, name, **kw).jobs.set_index("job_id")["start_s"].to_dict()

    assert starts("fcfs") == {0: 0, 1: 100, 2: 600, 3: 630}
    assert starts("sjf") == {0: 0, 2: 100, 1: 130, 3: 130}  # 30 s, then 200 s and 500 s side by side
    assert starts("smallest_first") == {0: 0, 1: 100, 3: 100, 2: 600}
    assert starts("f1") == starts("smallest_first")  # log10(r) * n: 2.7 (job 1) < 4.6 (job 3) < 5.9 (job 2)
    assert starts("multifactor") == {0: 0, 2: 100, 3: 130, 1: 130}  # size dominates: 4 GPUs, then 2, then 1
    assert starts("multifactor", weight_size=0.0) == starts("fcfs")  # equal ages: queue order


def test_blocking_waits_for_the_pick_and_list_scheduling_passes_it():
    cluster = Cluster.parse("A:1x4")
    jobs = [job(0, 0, 100, ok("A", 2)), job(1, 1, 10, ok("A", 4)), job(2, 2, 500, ok("A", 1))]
    blocking = simulate(cluster, jobs, "smallest_first").jobs.set_index("job_id")["start_s"]
    passing = simulate(cluster, jobs, "smallest_first", blocking=False).jobs.set_index("job_id")["start_s"]
    assert blocking.to_dict() == {0: 0.0, 1: 100.0, 2: 110.0}  # job 1, alone when picked, keeps its turn
    assert passing.to_dict() == {0: 0.0, 1: 502.0, 2: 2.0}


def test_easy_backfills_only_what_does_not_delay_the_head():
    """Node of 4: job 0 holds 3 GPUs until t=100; the head (4 GPUs) is reserved for t=100. A 1-GPU job of 50 s
    backfills, one of 500 s does not (it would hold a GPU at t=100)."""
    cluster = Cluster.parse("A:1x4")
    jobs = [job(0, 0, 100, ok("A", 3)), job(1, 1, 10, ok("A", 4)), job(2, 2, 500, ok("A", 1)),
            job(3, 3, 50, ok("A", 1))]
    start = simulate(cluster, jobs, "easy").jobs.set_index("job_id")["start_s"].to_dict()
    assert start == {0: 0.0, 1: 100.0, 2: 110.0, 3: 3.0}
    assert simulate(cluster, jobs, "fcfs").jobs.set_index("job_id")["start_s"].to_dict() == \
        {0: 0.0, 1: 100.0, 2: 110.0, 3: 110.0}


def test_easy_backfills_beside_the_reservation_on_other_nodes():
    """Two 4-GPU nodes: the head needs a whole node, free at t=100; a long 1-GPU job may take the other node's
    spare GPU because the head still fits at t=100."""
    cluster = Cluster.parse("A:2x4")
    jobs = [job(0, 0, 100, ok("A", 4)), job(1, 0, 1000, ok("A", 3)), job(2, 1, 10, ok("A", 4)),
            job(3, 2, 5000, ok("A", 1))]
    start = simulate(cluster, jobs, "easy").jobs.set_index("job_id")["start_s"].to_dict()
    assert start == {0: 0.0, 1: 0.0, 2: 100.0, 3: 2.0}


def test_f1_score_known_values():
    j = job(0, 1000.0, 100.0, ok("A", 4))
    assert f1_score(j, j.options[0]) == pytest.approx(math.log10(100) * 4 + 870 * math.log10(1000))
    j0 = job(1, 0.0, 100.0, ok("A", 2))
    assert f1_score(j0, j0.options[0]) == pytest.approx(2 * 2 + 870 * math.log10(0.1))


def test_scheduler_registry_has_every_heuristic():
    assert set(HEURISTICS) <= set(SCHEDULERS)
    assert SCHEDULERS["fcfs"] == SCHEDULERS["fifo"]  # FCFS is the existing strict-order scheduler


# -------------------------------------------------------------------------------------------- trace jobs


def tidy(rows, pools=True) -> pd.DataFrame:
    from spotlab.cluster.job_table import COLUMNS, DTYPES

    df = pd.DataFrame(rows, columns=["job_id", "submit_time_s", "num_gpus", "duration_s", "pool"])
    df["gpu_type"], df["user"], df["status"], df["source"] = pd.NA, "u", "completed", "test"
    df = df[list(COLUMNS)].astype(dict(DTYPES))
    if pools:
        df.attrs["pools"] = {"cluster": "test"}
    return df


def test_trace_jobs_one_option_per_job_with_a_pool():
    cluster = Cluster.parse("P100:2x2,P100:2x8")
    table = tidy([("a", 0.0, 1, 60.0, 0), ("b", 5.0, 16, 600.0, 1), ("c", 9.0, 64, 10.0, pd.NA)])
    jobs = trace_jobs(table, cluster)
    assert [j.job_id for j in jobs] == [0, 1]
    assert [(j.arrival_s, j.work) for j in jobs] == [(0.0, 60.0), (5.0, 600.0)]
    assert [(o.gpu, o.gpus, o.label) for j in jobs for o in j.options] == [("P100", 1, "a"), ("P100", 16, "b")]
    res = simulate(cluster, jobs, "easy")
    assert (res.jobs["finish_s"] - res.jobs["start_s"]).tolist() == [60.0, 600.0]


def test_trace_jobs_errors():
    cluster = Cluster.parse("P100:2x2")
    with pytest.raises(JobTableError, match="no pools"):
        trace_jobs(tidy([("a", 0.0, 1, 60.0, pd.NA)], pools=False), cluster)
    with pytest.raises(JobTableError, match="not a pool of"):
        trace_jobs(tidy([("a", 0.0, 1, 60.0, 3)]), cluster)
    with pytest.raises(JobTableError, match="more than 0 s"):
        trace_jobs(tidy([("a", 0.0, 1, 0.0, 0)]), cluster)
    with pytest.raises(JobTableError, match="expected a Cluster"):
        trace_jobs(tidy([("a", 0.0, 1, 1.0, 0)]), "P100:2x2")


def test_trace_jobs_on_philly_windows(dataset):
    from spotlab.cluster.job_table import TRACES, job_table, job_windows
    from spotlab.cluster.presets import cluster_jobs, preset

    dataset(TRACES["philly-gpw"][0])
    cluster = preset("philly")
    window = job_windows(cluster_jobs(job_table("philly-gpw", download=False), cluster, load=0.9), 256)["test"][0]
    jobs = trace_jobs(window, cluster)
    assert len(jobs) == 256
    res = simulate(cluster, jobs, "easy")
    assert (res.jobs["status"] == "done").all()


# ------------------------------------------------------------------------------------------------ metrics


def test_job_scores_known_values():
    cluster = Cluster.parse("A:1x4")
    res = simulate(cluster, [job(0, 0, 100, ok("A", 4)), job(1, 0, 5, ok("A", 4))], "fcfs")
    assert metrics.waits(res).tolist() == [0.0, 100.0]
    assert metrics.jcts(res).tolist() == [100.0, 105.0]
    assert metrics.bounded_slowdowns(res).tolist() == [1.0, 105.0 / 10.0]  # run 5 s < threshold 10 s
    assert metrics.bounded_slowdowns(res, threshold_s=1.0).tolist() == [1.0, 21.0]
    assert metrics.utilisation(res) == pytest.approx((400 + 20) / (4 * 105))
    assert metrics.job_score(res, "bsld") == pytest.approx(5.75)
    assert metrics.job_score(res, "wait") == 50.0
    assert metrics.improvement(5.0, 10.0, "bsld") == 0.5
    assert metrics.improvement(0.6, 0.5, "utilisation") == pytest.approx(0.2)


# ------------------------------------------------------------------------------------------------- errors


@pytest.mark.parametrize("call, match", [
    (lambda: make_scheduler("nope"), "unknown scheduler 'nope'"),
    (lambda: make_scheduler("sjf", runtimes="oracle"), "runtimes must be one of"),
    (lambda: make_scheduler("random", seed=-1), "seed must be"),
    (lambda: make_scheduler("multifactor", max_age_s=0), "max_age_s must be"),
    (lambda: make_scheduler("easy", window=0), "window must be"),
    (lambda: make_scheduler("f1", blocking="maybe"), "blocking"),
    (lambda: make_scheduler("smallest_first", runtimes="true"), "has no parameter 'runtimes'"),
    (lambda: make_placement("milp", per_size=0), "per_size must be"),
    (lambda: make_placement("scored", w_frag=-1.0), "w_frag must be"),
    (lambda: metrics.job_score(None), "expected a ClusterResult"),
    (lambda: metrics.improvement(1.0, 2.0, "speed"), "unknown metric"),
])
def test_bad_names_and_parameters_are_one_line_errors(call, match):
    with pytest.raises(SpotlabError, match=match) as info:
        call()
    assert isinstance(info.value, (ClusterError, JobTableError))
    assert "\n" not in str(info.value)


def test_every_heuristic_builds_from_strings():
    """Command-line strings are converted by the registry (window=\"8\" is 8)."""
    for name in HEURISTICS:
        s = make_scheduler(name, window="8") if name != "fcfs" else make_scheduler(name)
        assert s.get_params().get("window", 8) == 8
    assert make_scheduler("random", seed="4", blocking="false").get_params() == {"window": 128, "blocking": False,
                                                                                  "seed": 4}
    assert np.isfinite(make_scheduler("multifactor", favor_small="true").max_age_s)
