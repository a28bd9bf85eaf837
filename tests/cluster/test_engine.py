"""The cluster engine (`spotlab.cluster`): the same tables as the simulator it replaced on seeded random clusters and
jobs (saved in tests/reference/cluster_engine_legacy.json), GPU conservation and capacity at every event, the
step-wise API, a new scheduler in one file plus one registry line, and one-line errors."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spotlab.cluster.engine import Engine
from spotlab.cluster.placement.base import Placement
from spotlab.cluster.registry import (
    PLACEMENTS,
    SCHEDULERS,
    make_placement,
    make_scheduler,
)
from spotlab.cluster.result import ClusterResult
from spotlab.cluster.schedulers.base import Scheduler
from spotlab.cluster.simulate import simulate
from spotlab.cluster.state import Cluster, NodePool, Option, SimJob
from spotlab.errors import ClusterError, SpotlabError
from spotlab.errors import ClusterError as ErrorsClusterError

LEGACY = Path(__file__).resolve().parents[1] / "reference" / "cluster_engine_legacy.json"


def _table(columns: dict[str, list], dtypes: dict[str, str]) -> pd.DataFrame:
    """A table of the reference file: node lists back to tuples, every column of the dtype the old simulator gave."""
    return pd.DataFrame({c: pd.Series([tuple(v) if isinstance(v, list) else v for v in vs], dtype=object)
                         for c, vs in columns.items()}, columns=list(dtypes)).astype(dtypes)


def _legacy_runs() -> dict[str, tuple[Cluster, list[SimJob], dict, ClusterResult, dict]]:
    """Every saved run by id: (cluster, jobs, run settings, the old simulator's result, its summary)."""
    ref = json.loads(LEGACY.read_text())
    out = {}
    for sc in ref["scenarios"]:
        jobs = [SimJob(j, a, w, tuple(Option(*o) for o in opts), s, p) for j, a, w, opts, s, p in sc["jobs"]]
        for run in sc["runs"]:
            old = ClusterResult(_table(run["job_table"], run.get("job_table_dtypes", ref["dtypes"]["job_table"])),
                                _table(run["attempts"], run.get("attempts_dtypes", ref["dtypes"]["attempts"])),
                                run["capacity"], run["policy"], run["options_skipped"])
            setting = {"scheduler": run["scheduler"], "fail_after_s": run["fail_after_s"]}
            if run["scheduler"] == "sia":
                setting["window"] = run["window"]
            summary = dict(zip(ref["summary_keys"], run["summary"], strict=True))
            out[f"seed{sc['seed']}-{'-'.join(map(str, setting.values()))}"] = (Cluster.parse(sc["cluster"]), jobs,
                                                                                setting, old, summary)
    return out


def assert_same(new: ClusterResult, old: ClusterResult, old_summary: dict | None = None) -> None:
    pd.testing.assert_frame_equal(new.jobs, old.jobs)
    pd.testing.assert_frame_equal(new.attempts, old.attempts)
    assert (new.capacity, new.policy, new.options_skipped) == (old.capacity, old.policy, old.options_skipped)
    a, b = new.summary(), old.summary() if old_summary is None else old_summary
    assert a.keys() == b.keys()
    assert all(a[k] == b[k] or (math.isnan(a[k]) and math.isnan(b[k])) for k in a)


def ok(gpu: str, gpus: int, rate: float = 1.0, est: float | None = None, label: str = "") -> Option:
    return Option(gpu, gpus, rate if est is None else est, rate, False, label)


# ------------------------------------------------------------------------------------ random scenarios

GPUS = ("A", "B")


@st.composite
def scenarios(draw):
    """Small, busy clusters: up to 3 pools (two may share a GPU type), up to 16 jobs arriving close together with
    up to 3 options (some never fit, some fail), fallbacks, setup times."""
    pools = tuple(NodePool(draw(st.sampled_from(GPUS)), draw(st.integers(1, 2)), draw(st.sampled_from([1, 2, 4, 8])))
                  for _ in range(draw(st.integers(1, 3))))
    option = st.builds(Option, gpu=st.sampled_from(("A", "A", "B", "C")),
                       gpus=st.sampled_from([1, 1, 2, 2, 3, 4, 8, 16]), est_rate=st.sampled_from([0.0, 0.5, 1.0, 2.0, 3.5]), true_rate=st.floats(0.5, 5),
                       fails=st.sampled_from([False, False, True]), label=st.sampled_from(["", "x"]))
    jobs = [SimJob(i, float(draw(st.integers(0, 6))), draw(st.floats(1, 100)),
                   tuple(draw(st.lists(option, min_size=1, max_size=3))) if draw(st.integers(0, 9)) else (),
                   draw(st.sampled_from([0.0, 0.0, 7.5])), draw(st.integers(0, 2)))
            for i in range(draw(st.integers(0, 16)))]
    return Cluster(pools), jobs


LEGACY_RUNS = _legacy_runs()


@pytest.mark.parametrize("cluster, jobs, setting, old, old_summary", list(LEGACY_RUNS.values()),
                         ids=list(LEGACY_RUNS))
def test_the_engine_reproduces_the_simulator_it_replaced(cluster, jobs, setting, old, old_summary):
    assert_same(simulate(cluster, jobs, **setting), old, old_summary)


def test_the_saved_runs_of_the_old_simulator_cover_what_matters():
    runs = LEGACY_RUNS.values()
    status = pd.concat([old.jobs["status"] for *_, old, _ in runs])
    outcome = pd.concat([old.attempts["outcome"] for *_, old, _ in runs])
    assert len(runs) == 160 and {setting["scheduler"] for _, _, setting, _, _ in runs} == {"fifo", "sia"}
    assert status.value_counts().to_dict() == {"done": 766, "rejected": 308, "failed": 218}
    assert outcome.value_counts().to_dict() == {"done": 766, "oom": 400}


def check_state(engine: Engine) -> None:
    """GPU conservation and capacity, buckets, queue and running attempts consistent with each other."""
    st_, cluster = engine.state, engine.cluster
    held: dict[tuple[int, int], int] = {}
    for at in st_.running.values():
        assert at.start <= engine.now < at.end
        for node, n in at.alloc:
            held[(at.pool, node)] = held.get((at.pool, node), 0) + n
    total = 0
    for pi, (pool, ps) in enumerate(zip(cluster.pools, st_.pools, strict=True)):
        for node, free in enumerate(ps.free):
            assert 0 <= free <= pool.gpus_per_node
            assert free + held.get((pi, node), 0) == pool.gpus_per_node  # every GPU is free or held, once
            assert node in ps.by_free[free]
        assert sum(len(b) for b in ps.by_free) == pool.nodes
        assert ps.total_free == sum(ps.free) == sum(engine.free(pi))
        total += ps.total_free
    assert st_.total_free == total == engine.free_gpus
    queued = engine.queued()
    assert len(set(queued)) == len(queued) == engine.queue_length
    assert set(queued).isdisjoint(st_.running)  # a job waits or runs, never both
    assert all(engine.jobs[j].arrival_s <= engine.now for j in (*queued, *st_.running))


@settings(max_examples=60, deadline=None, derandomize=True)
@given(scenarios(), st.sampled_from(["fifo", "sia"]))
def test_gpus_are_conserved_and_capacity_holds_at_every_event(scenario, name):
    cluster, jobs = scenario
    engine, scheduler = Engine(cluster, jobs, fail_after_s=30.0), make_scheduler(name)
    starts: dict[int, int] = {}
    original = engine.start

    def start(job, option, fit):
        assert job in engine.queued() and job not in engine.state.running
        assert engine.jobs[job].arrival_s <= engine.now
        original(job, option, fit)
        starts[job] = starts.get(job, 0) + 1
        check_state(engine)

    engine.start = start  # every start the scheduler makes is checked
    while engine.advance():
        check_state(engine)
        scheduler.schedule(engine)
        check_state(engine)
    res = engine.result(name)
    assert_same(res, simulate(cluster, jobs, name, fail_after_s=30.0))
    attempts = res.attempts.groupby("job_id").size().to_dict()
    assert {engine.jobs[j].job_id: n for j, n in starts.items()} == attempts  # one start per attempt
    for job in jobs:
        assert attempts.get(job.job_id, 0) <= len(job.options)  # each option at most once
    arrival = res.attempts["job_id"].map({j.job_id: j.arrival_s for j in jobs})
    assert (res.attempts["start_s"] >= arrival).all()


# ------------------------------------------------------------------------------------------ step-wise API


def hand_fifo(engine: Engine) -> None:
    """FIFO driven from outside, one decision at a time, as a learning agent's environment would."""
    while engine.advance():
        while engine.queue_length:
            j = engine.head()
            choice = next(((oi, fit) for oi in engine.options(j) if (fit := engine.fits(j, oi)) is not None), None)
            if choice is None:
                break  # head-of-line blocking: wait for the next event
            engine.start(j, *choice)


@settings(max_examples=40, deadline=None, derandomize=True)
@given(scenarios())
def test_the_step_wise_api_driven_by_hand_reproduces_fifo(scenario):
    cluster, jobs = scenario
    engine = Engine(cluster, jobs)
    hand_fifo(engine)
    assert engine.done and engine.ended == len(jobs)
    assert_same(engine.result("fifo"), simulate(cluster, jobs, "fifo"))


def test_step_wise_view_of_queue_capacity_and_clock():
    cluster = Cluster.parse("A:2x4")
    jobs = [SimJob(7, 5.0, 40.0, (ok("A", 4, rate=2),)), SimJob(8, 5.0, 10.0, (ok("A", 2), ok("A", 1))),
            SimJob(9, 9.0, 10.0, (ok("B", 1),))]  # job 9 can never run: rejected before the run
    engine = Engine(cluster, jobs)
    assert (engine.now, engine.queued(), engine.free_gpus, engine.ended) == (0.0, (), 8, 1)
    assert engine.advance() and engine.now == 5.0 and engine.queued() == (0, 1) and engine.queued(1) == (0,)
    assert engine.options(1) == (0, 1) and engine.fits(0, 0) == (0, ((0, 4),))
    engine.start(1, 1, engine.fits(1, 1))  # the second job first, on its second option
    assert engine.queued() == (0,) and engine.free(0) == (3, 4) and engine.free_gpus == 7
    assert engine.fits(0, 0) == (0, ((1, 4),))  # best fit kept node 1 whole
    engine.start(0, 0, (0, [(1, 4)]))  # an allocation chosen by the caller is checked, then taken
    assert engine.free(0) == (3, 0) and [a.end for a in engine.running()] == [15.0, 25.0]
    with pytest.raises(ClusterError, match="the run has not ended: 2 job"):
        engine.result()
    assert engine.advance() and engine.now == 15.0 and engine.free(0) == (4, 0)
    assert engine.advance() and engine.now == 25.0 and not engine.advance() and engine.done
    res = engine.result("by hand")
    assert res.policy == "by hand" and res.jobs["status"].tolist() == ["done", "done", "rejected"]
    assert res.jobs["start_s"].tolist()[:2] == [5.0, 5.0] and res.jobs["option"].tolist() == [0, 1, -1]


def test_step_wise_start_rejects_what_is_not_allowed():
    cluster = Cluster.parse("A:1x4,B:1x2")
    jobs = [SimJob(0, 0.0, 10.0, (ok("A", 2), ok("B", 2))), SimJob(1, 50.0, 10.0, (ok("A", 1),)),
            SimJob(2, 0.0, 10.0, (ok("A", 1),)), SimJob(3, 0.0, 10.0, (ok("B", 1),))]
    engine = Engine(cluster, jobs)
    engine.advance()
    for args, message in [
        ((1, 0, (0, ((0, 1),))), "job 1 is not queued"),
        ((0, 2, (0, ((0, 2),))), "job 0: option 2 is not offered now (offered: 0, 1)"),
        ((0, 0, (1, ((0, 2),))), "job 0: pool 1 is not a A pool of A:1x4,B:1x2"),
        ((0, 0, (0, ((0, 3),))), "does not hold the option's 2 GPUs"),
        ((0, 0, (0, ((1, 2),))), "is not (node id, GPUs >= 1) of a node of the pool (1 nodes)"),
        ((0, 0, (0, ((0, 1), (0, 1), (0, -0)))), "is not (node id, GPUs >= 1)"),
        ((0, 0, "anywhere"), "expected (pool, ((node, gpus), ...))"),
        ((5, 0, (0, ((0, 2),))), "job index 5 out of range (0..3)"),
    ]:
        with pytest.raises(ClusterError) as info:
            engine.start(*args)
        assert message in str(info.value) and "\n" not in str(info.value), (args, str(info.value))
    assert engine.free_gpus == 6 and engine.queued() == (0, 2, 3)  # nothing was taken by a refused start
    engine.start(3, 0, (1, ((0, 1),)))
    with pytest.raises(ClusterError, match=r"node 0 has 1 free GPU\(s\), not 2"):
        engine.start(0, 1, (1, ((0, 2),)))
    assert engine.free_gpus == 5 and engine.queued() == (0, 2)
    with pytest.raises(ClusterError, match="no option 3 of job index 0"):
        engine.fits(0, 3)
    with pytest.raises(ClusterError, match="no option 0 of job index -1"):
        engine.fits(-1, 0)


def test_a_scheduler_that_leaves_jobs_waiting_is_an_error_not_a_wrong_table():
    class Idle(Scheduler):
        def schedule(self, engine):
            pass

    with pytest.raises(ClusterError, match="scheduler 'Idle' left 1 job"):
        simulate(Cluster.parse("A:1x1"), [SimJob(0, 0.0, 1.0, (ok("A", 1),))], Idle())


# ----------------------------------------------------------------- a new scheduler: one file, one line


class SmallestFirst(Scheduler):
    """Start the queued job asking for the fewest GPUs (first offered option; ties: queue order) while one fits."""

    name = "example_smallest"

    def schedule(self, engine):
        while True:
            order = sorted(engine.queued(), key=lambda j: engine.jobs[j].options[engine.options(j)[0]].gpus)
            fit = next(((j, fit) for j in order if (fit := engine.fits(j, engine.options(j)[0])) is not None), None)
            if fit is None:
                return
            engine.start(fit[0], engine.options(fit[0])[0], fit[1])


def test_a_new_scheduler_is_one_class_and_one_registry_line(monkeypatch):
    monkeypatch.setitem(SCHEDULERS, "example_smallest", f"{__name__}:SmallestFirst")
    jobs = [SimJob(0, 0.0, 100.0, (ok("A", 4),)), SimJob(1, 1.0, 100.0, (ok("A", 4),)),
            SimJob(2, 2.0, 100.0, (ok("A", 2),)), SimJob(3, 3.0, 100.0, (ok("A", 1),))]
    res = simulate(Cluster.parse("A:1x4"), jobs, "example_smallest")
    starts = dict(zip(res.jobs["job_id"], res.jobs["start_s"], strict=True))
    assert starts == {0: 0.0, 3: 100.0, 2: 100.0, 1: 200.0}  # the two small jobs jump the 4-GPU one
    assert res.policy == "example_smallest"
    fifo = simulate(Cluster.parse("A:1x4"), jobs, "fifo")
    assert dict(zip(fifo.jobs["job_id"], fifo.jobs["start_s"], strict=True)) == {0: 0.0, 1: 100.0, 2: 200.0, 3: 200.0}
    from spotlab.cluster.registry import (
        SCHEDULERS as cli_choices,  # the command line offers it too
    )

    assert "example_smallest" in cli_choices


class Leftmost(Placement):
    """A placement that lists every single node with room and takes the lowest id (not the tightest)."""

    def candidates(self, state, pool, gpus):
        ps = state.pools[pool]
        return [((node, gpus),) for node, free in enumerate(ps.free) if free >= gpus]


def test_a_new_placement_sees_the_state_and_chooses_among_candidates(monkeypatch):
    monkeypatch.setitem(PLACEMENTS, "leftmost", f"{__name__}:Leftmost")
    # node 0 is busy until 10, then node 1 holds a long 3-GPU job: a 1-GPU job arriving at 11 has a choice
    jobs = [SimJob(0, 0.0, 10.0, (ok("A", 4),)), SimJob(1, 1.0, 1000.0, (ok("A", 3),)),
            SimJob(2, 11.0, 10.0, (ok("A", 1),))]
    nodes = {p: simulate(Cluster.parse("A:2x4"), jobs, "fifo", p).attempts["nodes"].tolist()
             for p in ("best_fit", "leftmost")}
    assert nodes == {"best_fit": [(0,), (1,), (1,)], "leftmost": [(0,), (1,), (0,)]}  # tightest vs lowest id
    busy = [SimJob(0, 0.0, 1000.0, (ok("A", 3),)), SimJob(1, 1.0, 10.0, (ok("A", 1),))]
    engine = Engine(Cluster.parse("A:2x4"), busy, make_placement("leftmost"))
    engine.advance()
    engine.start(0, 0, (0, ((1, 3),)))  # node 1 has 1 free GPU, node 0 all 4
    engine.advance()
    assert engine.fits(1, 0) == (0, ((0, 1),))  # leftmost: node 0
    assert Engine(Cluster.parse("A:2x4"), busy).placement.candidates(engine.state, 0, 1) == (((1, 1),),)  # best fit


# ------------------------------------------------------------------------------------------- bad input


@pytest.mark.parametrize("call, message", [
    (lambda: make_scheduler("lifo"), "unknown scheduler 'lifo'; known: fifo, sia"),
    (lambda: make_placement("worst_fit"), "unknown placement 'worst_fit'; known: best_fit"),
    (lambda: make_scheduler(3), "scheduler must be a name (fifo, sia"),  # more schedulers may follow
    (lambda: make_placement(None), "placement must be a name (best_fit"),  # more placements may follow
    (lambda: make_scheduler("sia", window=0), "sia: window must be a whole number >= 1 (got 0)"),
    (lambda: make_scheduler("fifo", window=3), "scheduler 'fifo' has no parameter 'window'"),
    (lambda: make_scheduler(make_scheduler("sia"), window=3), "parameters window need a scheduler given by name"),
    (lambda: simulate(Cluster.parse("A:1x1"), [], "lifo"), "unknown scheduler 'lifo'"),
    (lambda: simulate(Cluster.parse("A:1x1"), [], "fifo", "worst_fit"), "unknown placement 'worst_fit'"),
    (lambda: Engine(Cluster.parse("A:1x1"), [], "best_fit"), "placement must be a Placement (make_placement("),
    (lambda: simulate("A:1x1", []), "cluster must be a Cluster (e.g. Cluster.parse('A100-80GB:4x8')), got 'A:1x1'"),
    (lambda: simulate(Cluster.parse("A:1x1"), [], fail_after_s=math.inf), "fail_after_s must be a finite number > 0"),
    (lambda: simulate(Cluster.parse("A:1x1"), ["job"]), "jobs[0] is a str, expected SimJob"),
])
def test_bad_names_and_arguments_give_one_line_errors(call, message):
    with pytest.raises(ClusterError) as info:
        call()
    assert message in str(info.value) and "\n" not in str(info.value)


def test_one_error_class_under_every_import_path():
    from spotlab.errors import ClusterError as state_error

    assert ClusterError is ErrorsClusterError is state_error and issubclass(ClusterError, SpotlabError)


def test_importing_the_package_stays_light():
    import subprocess

    code = ("import sys, spotlab.cluster, spotlab.cluster.state, spotlab.cluster.registry; "
            "print(sorted(m for m in ('pandas', 'spotlab.cluster.engine', 'tqdm') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
