"""CoTune cluster simulator and trace workloads: hand-computed schedules, invariants (hypothesis), real traces."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spotlab.cluster.alibaba_philly_workload import (
    ALIBABA_PODS,
    PHILLY_RUNTIMES,
    load_alibaba_pods,
    load_philly_runtimes,
    resampled_workload,
    trace_workload,
)
from spotlab.cluster.simulate import simulate
from spotlab.cluster.state import Cluster, NodePool, Option, SimJob
from spotlab.errors import ClusterError, SpotlabError, WorkloadError


def ok(gpu: str, gpus: int, rate: float = 1.0, est: float | None = None, label: str = "") -> Option:
    return Option(gpu, gpus, rate if est is None else est, rate, False, label)


def oom(gpu: str, gpus: int, est: float = 1.0, label: str = "") -> Option:
    return Option(gpu, gpus, est, 1.0, True, label)


def job(i: int, t: float, work: float, *options: Option, setup: float = 0.0) -> SimJob:
    return SimJob(i, t, work, options, setup)


def by_id(res, col: str) -> dict[int, float]:
    return dict(zip(res.jobs["job_id"], res.jobs[col], strict=True))


# ------------------------------------------------------------------------------------ hand-computed cases


def test_two_jobs_known_start_finish_and_summary():
    cluster = Cluster.parse("A:1x8")
    res = simulate(cluster, [job(0, 0, 3600, ok("A", 8)), job(1, 10, 100, ok("A", 4, rate=2))])
    assert by_id(res, "start_s") == {0: 0.0, 1: 3600.0}
    assert by_id(res, "finish_s") == {0: 3600.0, 1: 3650.0}
    assert by_id(res, "queue_s") == {0: 0.0, 1: 3590.0}
    s = res.summary()
    assert s["mean_jct_h"] == pytest.approx((3600 + 3640) / 2 / 3600)
    assert s["mean_queue_h"] == pytest.approx(3590 / 2 / 3600)
    assert s["makespan_h"] == pytest.approx(3650 / 3600)
    assert s["gpu_hours_used"] == pytest.approx((8 * 3600 + 4 * 50) / 3600)
    assert s["utilisation"] == pytest.approx((8 * 3600 + 4 * 50) / (8 * 3650))
    assert (s["jobs_done"], s["jobs_failed"], s["jobs_rejected"], s["gpu_hours_wasted"]) == (2, 0, 0, 0.0)


def test_fifo_blocks_head_of_line_and_sia_backfills():
    jobs = [job(0, 0, 100, ok("A", 6)), job(1, 1, 100, ok("A", 8)), job(2, 2, 10, ok("A", 2))]
    fifo = simulate(Cluster.parse("A:1x8"), jobs, "fifo")
    sia = simulate(Cluster.parse("A:1x8"), jobs, "sia")
    assert by_id(fifo, "start_s") == {0: 0.0, 1: 100.0, 2: 200.0}  # the small job waits behind the big one
    assert by_id(sia, "start_s") == {0: 0.0, 1: 100.0, 2: 2.0}  # ... or fills the 2 idle GPUs at once


def test_sia_prefers_the_best_believed_throughput_per_gpu_fifo_the_first_option():
    jobs = [job(0, 0, 100, ok("A", 8, est=8, label="wide"), ok("B", 2, est=4, label="narrow"))]
    cluster = Cluster.parse("A:1x8,B:1x8")
    assert simulate(cluster, jobs, "fifo").jobs["label"].tolist() == ["wide"]
    assert simulate(cluster, jobs, "sia").jobs["label"].tolist() == ["narrow"]


def test_sia_window_limits_how_far_it_looks():
    jobs = [job(0, 0, 100, ok("A", 6)), job(1, 1, 100, ok("A", 8)), job(2, 2, 10, ok("A", 2))]
    res = simulate(Cluster.parse("A:1x8"), jobs, "sia", window=1)
    assert by_id(res, "start_s")[2] == 200.0


def test_failure_resubmission_and_wasted_gpu_hours():
    jobs = [job(0, 0, 100, oom("A", 4), ok("A", 2)), job(1, 0, 10, oom("A", 2), oom("A", 1))]
    res = simulate(Cluster.parse("A:1x4"), jobs, "fifo", fail_after_s=120)
    j = res.jobs.set_index("job_id")
    assert j.loc[0, "status"] == "done" and j.loc[0, "finish_s"] == 220.0 and j.loc[0, "jct_s"] == 220.0
    assert (j.loc[0, "attempts"], j.loc[0, "failed_attempts"], j.loc[0, "gpus"]) == (2, 1, 2)
    assert j.loc[1, "status"] == "failed" and math.isnan(j.loc[1, "jct_s"]) and j.loc[1, "failed_attempts"] == 2
    # job 0 fails on 4 GPUs [0,120); job 1 then fails on 2 [120,240) beside job 0's run [120,220), then on 1
    assert res.attempts["outcome"].tolist() == ["oom", "oom", "done", "oom"]
    s = res.summary()
    assert s["gpu_hours_wasted"] == pytest.approx(120 * (4 + 2 + 1) / 3600)
    assert (s["jobs_done"], s["jobs_failed"]) == (1, 1)
    assert s["mean_jct_h"] == pytest.approx(220 / 3600)  # the failed job is not in the JCT stats


def test_failed_job_is_requeued_at_the_tail():
    jobs = [job(0, 0, 100, oom("A", 4), ok("A", 4)), job(1, 60, 50, ok("A", 4))]
    res = simulate(Cluster.parse("A:1x4"), jobs, "fifo", fail_after_s=120)
    assert by_id(res, "start_s") == {0: 170.0, 1: 120.0}
    assert by_id(res, "queue_s") == {0: 170.0 - 120.0, 1: 60.0}


def test_setup_time_is_paid_once_and_counted_as_waste():
    res = simulate(Cluster.parse("A:1x4"), [job(0, 5, 100, oom("A", 4), ok("A", 2), setup=30)], fail_after_s=10)
    assert by_id(res, "finish_s")[0] == 5 + 10 + 30 + 100
    assert res.summary()["gpu_hours_wasted"] == pytest.approx((10 * 4 + 30 * 2) / 3600)


def test_multi_node_placement_and_best_fit():
    cluster = Cluster.parse("A:3x4")
    jobs = [job(0, 0, 1000, ok("A", 1)), job(1, 1, 10, ok("A", 8)), job(2, 2, 10, ok("A", 4)),
            job(3, 3, 10, ok("A", 3))]
    res = simulate(cluster, jobs, "sia")
    nodes = dict(zip(res.attempts["job_id"], res.attempts["nodes"], strict=True))
    assert nodes[0] == (0,) and nodes[1] == (1, 2)  # 8 GPUs = two whole free nodes
    assert nodes[3] == (0,)  # best fit: the node with exactly 3 free GPUs, not a whole one
    assert by_id(res, "start_s")[2] == 11.0  # 4 GPUs on one node: waits for a node to empty


def test_options_that_never_fit_are_skipped_and_jobs_rejected_with_a_reason():
    cluster = Cluster.parse("A:2x4,B:1x8")
    jobs = [job(0, 0, 10, ok("A", 6), ok("A", 16), ok("H100", 1), ok("B", 8)),
            job(1, 0, 10, ok("A", 12), ok("H100", 1)), job(2, 0, 10)]
    res = simulate(cluster, jobs)
    j = res.jobs.set_index("job_id")
    assert j.loc[0, "status"] == "done" and j.loc[0, "gpu"] == "B" and j.loc[0, "skipped_options"] == 3
    assert j.loc[1, "status"] == "rejected" and j.loc[2, "status"] == "rejected"
    assert "12 GPUs needs 3 A nodes of 4, the pool has 2" in j.loc[1, "reason"]
    assert "no H100 pool (the cluster has A, B)" in j.loc[1, "reason"]
    assert j.loc[2, "reason"] == "no options"
    assert res.summary()["options_skipped"] == 5 and res.summary()["jobs_rejected"] == 2
    nodes = simulate(Cluster.parse("A:2x4"), [job(0, 0, 1, ok("A", 6))]).jobs.loc[0, "reason"]
    assert "6 GPUs is more than a A node (4) and not a multiple of it" in nodes


# ------------------------------------------------------------------------------------------- invariants


def check_invariants(cluster: Cluster, jobs: list[SimJob], res, fail_after_s: float) -> None:
    spec = {j.job_id: j for j in jobs}
    t = res.jobs
    # every job ended exactly once
    assert sorted(t["job_id"]) == sorted(spec) and t["job_id"].is_unique
    assert set(t["status"]) <= {"done", "failed", "rejected"}
    a = res.attempts
    # no node ever holds more GPUs than it owns (sweep: releases before starts at equal times)
    for (pool, node), rows in _per_node(a).items():
        events = sorted([(e, 0, -n) for _, e, n in rows] + [(s, 1, n) for s, _, n in rows])
        used = np.cumsum([d for _, _, d in events])
        assert used.max() <= cluster.pools[pool].gpus_per_node
        assert cluster.pools[pool].gpu == a.loc[a["pool"] == pool, "gpu"].iloc[0]
    # GPU-time conservation
    s = res.summary()
    gpu_s = float((a["gpus"] * (a["end_s"] - a["start_s"])).sum())
    assert gpu_s == pytest.approx(s["gpu_hours_used"] * 3600, rel=1e-9, abs=1e-9)
    done = t[t["status"] == "done"]
    useful = sum(r.gpus * spec[r.job_id].work / spec[r.job_id].options[r.option].true_rate
                 for r in done.itertuples())
    assert (s["gpu_hours_used"] - s["gpu_hours_wasted"]) * 3600 == pytest.approx(useful, rel=1e-9, abs=1e-9)
    wasted = sum(g * fail_after_s for g, o in zip(a["gpus"], a["outcome"], strict=True) if o == "oom")
    wasted += sum(r.gpus * spec[r.job_id].setup_s for r in done.itertuples())
    assert s["gpu_hours_wasted"] * 3600 == pytest.approx(wasted, rel=1e-9, abs=1e-9)
    for r in done.itertuples():
        j, o = spec[r.job_id], spec[r.job_id].options[r.option]
        assert r.finish_s >= j.arrival_s + j.setup_s + j.work / o.true_rate - 1e-9
        assert r.start_s >= j.arrival_s and not o.fails and o.gpu == r.gpu
    # attempts start after arrival; a job's attempts do not overlap; each option is tried at most once
    arrival = a["job_id"].map(lambda i: spec[i].arrival_s)
    assert (a["start_s"] >= arrival).all()
    for jid, rows in a.groupby("job_id"):
        starts, ends = rows["start_s"].to_numpy(), rows["end_s"].to_numpy()
        assert (starts[1:] >= ends[:-1]).all()
        assert (rows["outcome"].iloc[:-1] == "oom").all()
        status = t.loc[t["job_id"] == jid, "status"].iloc[0]
        assert status == ("done" if rows["outcome"].iloc[-1] == "done" else "failed")
    assert s["jobs_done"] + s["jobs_failed"] + s["jobs_rejected"] == len(jobs)
    assert set(t.loc[t["status"] == "rejected", "job_id"]).isdisjoint(a["job_id"])


def _per_node(a: pd.DataFrame) -> dict[tuple[int, int], list[tuple[float, float, int]]]:
    out: dict[tuple[int, int], list[tuple[float, float, int]]] = {}
    for r in a.itertuples():
        per = r.gpus // len(r.nodes)
        for node in r.nodes:
            out.setdefault((r.pool, node), []).append((r.start_s, r.end_s, per))
    return out


GPUS = ("A", "B", "C")


@st.composite
def scenarios(draw, one_pool: bool = False, failing: bool = True):
    n_pools = 1 if one_pool else draw(st.integers(1, 3))
    pools = tuple(NodePool("A" if one_pool else GPUS[i], draw(st.integers(1, 3)), draw(st.sampled_from([1, 2, 4, 8])))
                  for i in range(n_pools))
    option = st.builds(
        Option,
        gpu=st.sampled_from(("A", "B", "C", "D") if not one_pool else ("A",)),
        gpus=st.sampled_from([1, 1, 2, 2, 3, 4, 8, 16]),
        est_rate=st.floats(0, 5),
        true_rate=st.floats(0.5, 5),
        fails=st.booleans() if failing else st.just(False),
        label=st.just(""),
    )
    n = draw(st.integers(1, 16))
    jobs = [SimJob(i, float(draw(st.integers(0, 20))), draw(st.floats(1, 100)),
                   tuple(draw(st.lists(option, min_size=0 if failing else 1, max_size=3))),
                   draw(st.sampled_from([0.0, 0.0, 7.5])), draw(st.integers(0, 3)))
            for i in range(n)]
    return Cluster(pools), jobs


@settings(max_examples=60, deadline=None)
@given(scenarios(), st.sampled_from([("fifo", {}), ("sia", {"window": 1}), ("sia", {"window": 64})]),
       st.sampled_from([1.0, 120.0]))
def test_invariants_hold_on_random_clusters_and_jobs(scenario, scheduler, fail_after_s):
    cluster, jobs = scenario
    res = simulate(cluster, jobs, scheduler[0], fail_after_s=fail_after_s, **scheduler[1])
    check_invariants(cluster, jobs, res, fail_after_s)


@settings(max_examples=60, deadline=None)
@given(scenarios(one_pool=True, failing=False))
def test_fifo_on_one_pool_without_failures_starts_jobs_in_arrival_order(scenario):
    cluster, jobs = scenario
    res = simulate(cluster, jobs, "fifo")
    check_invariants(cluster, jobs, res, 120.0)
    order = sorted(range(len(jobs)), key=lambda i: jobs[i].arrival_s)  # stable: input order breaks ties
    starts = by_id(res, "start_s")
    placed = [starts[jobs[i].job_id] for i in order if not math.isnan(starts[jobs[i].job_id])]
    assert placed == sorted(placed)


# ------------------------------------------------------------------------------------------- bad input


@pytest.mark.parametrize("make, message", [
    (lambda: Cluster(()), "empty cluster"),
    (lambda: NodePool("A", 0, 8), "nodes must be a whole number >= 1, got 0"),
    (lambda: NodePool("A", 2, -1), "gpus_per_node must be a whole number >= 1, got -1"),
    (lambda: Cluster.parse("A100:4by8"), "cannot read 'A100:4by8'"),
    (lambda: Cluster.parse("A100-80GB:4x8,L40S"), "cannot read 'L40S'"),
    (lambda: Cluster.parse(""), "empty cluster spec"),
    (lambda: Cluster.parse("A:0x8"), "nodes must be a whole number >= 1, got 0"),
    (lambda: job(7, 0, 0, ok("A", 1)), "job 7: work must be a finite number > 0, got 0"),
    (lambda: job(7, 0, -5, ok("A", 1)), "job 7: work must be"),
    (lambda: job(7, math.nan, 1, ok("A", 1)), "job 7: arrival_s"),
    (lambda: ok("A", 0), "gpus must be a whole number >= 1, got 0"),
    (lambda: ok("A", 1, est=math.nan, label="cfg"), "option 'cfg': est_rate must be a finite number >= 0, got nan"),
    (lambda: Option("A", 1, 1.0, -1.0, False), "true_rate must be a finite number >= 0, got -1.0"),
    (lambda: Option("A", 1, 1.0, 0.0, False), "true_rate must be > 0 for an option that runs"),
])
def test_bad_cluster_and_job_input_messages(make, message):
    with pytest.raises(ClusterError, match=message.replace("(", r"\(").replace(")", r"\)")):
        make()


def test_bad_simulate_arguments():
    cluster = Cluster.parse("A:1x8")
    with pytest.raises(ClusterError, match=r"unknown scheduler 'lifo'; known: fifo, sia"):
        simulate(cluster, [], "lifo")
    with pytest.raises(ClusterError, match="duplicate job id 3"):
        simulate(cluster, [job(3, 0, 1, ok("A", 1)), job(3, 1, 1, ok("A", 1))])
    with pytest.raises(ClusterError, match="fail_after_s must be a finite number > 0"):
        simulate(cluster, [], fail_after_s=0)
    assert issubclass(ClusterError, SpotlabError) and issubclass(WorkloadError, SpotlabError)


# ------------------------------------------------------------------------------------------------ workload


POD_HEADER = ("name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,"
              "scheduled_time")


def write_pods(tmp_path, rows: list[str], header: str = POD_HEADER):
    path = tmp_path / "pods.csv"
    path.write_text("\n".join([header, *rows]) + "\n")
    return path


def pod(i: int, gpus: int, t: float, phase: str = "Succeeded", milli: int = 1000) -> str:
    return f"p{i},1000,1024,{gpus},{milli},,LS,{phase},{t},{t + 10},{t}"


def test_small_pod_file_parts_scale_and_resampling(tmp_path):
    rows = [pod(0, 1, 0, "Running"), pod(1, 0, 5), pod(2, 2, 100), pod(3, 1, 150, milli=300), pod(4, 8, 200),
            pod(5, 4, 300)]
    pods = load_alibaba_pods(write_pods(tmp_path, rows))
    assert pods["gpus"].tolist() == [1, 2, 1, 8, 4]  # GPU-less pod dropped, shared GPU counts as one
    runtimes = np.array([10.0, 20.0, 30.0])
    first = trace_workload((0.0, 0.5), pods=pods, runtimes=runtimes, time_scale=0.5)
    # the Running pod at 0 precedes the first completed one (100): span [100, 300], first half [100, 200)
    assert [(j.arrival_s, j.gpus) for j in first] == [(0.0, 2), (25.0, 1)]
    second = trace_workload((0.5, 1.0), pods=pods, runtimes=runtimes)
    assert [(j.arrival_s, j.gpus) for j in second] == [(0.0, 8), (100.0, 4)]
    assert all(j.runtime_s in runtimes for j in first + second)
    everything = trace_workload((0.0, 1.0), pods=pods, runtimes=runtimes, observed_only=False, max_runtime_s=15)
    assert len(everything) == 5 and max(j.runtime_s for j in everything) <= 15
    many = resampled_workload(50, seed=3, pods=pods, runtimes=runtimes, part=(0.0, 1.0))
    assert len(many) == 50 and many[0].arrival_s == 0.0 and {j.gpus for j in many} <= {1, 2, 8, 4}
    assert set(np.diff([j.arrival_s for j in many])) <= {50.0, 100.0}
    assert many == resampled_workload(50, seed=3, pods=pods, runtimes=runtimes, part=(0.0, 1.0))


@pytest.mark.parametrize("header, rows, message", [
    (POD_HEADER, [], "no data rows"),
    ("name,num_gpu,creation_time", [], "missing column(s) gpu_milli, pod_phase"),
    (POD_HEADER, [pod(0, 1, 0), "p1,1,1,1,1000,,LS,Running,soon,5,5"],
     "column 'creation_time': not a finite number in 1 row(s) (line 3: 'soon')"),
    (POD_HEADER, [pod(0, -2, 0)], "column 'num_gpu': negative GPU count in 1 row(s) (line 2: '-2')"),
    (POD_HEADER, [pod(0, 1, 0, milli=1500)], "column 'gpu_milli': GPU share outside 0..1000"),
    (POD_HEADER, [pod(0, 0, 0)], "no pod asks for a GPU"),
])
def test_bad_pod_files(tmp_path, header, rows, message):
    path = write_pods(tmp_path, rows, header)
    with pytest.raises(WorkloadError) as info:
        load_alibaba_pods(path)
    assert str(path) in str(info.value) and message in str(info.value)


def test_bad_runtime_files_and_arguments(tmp_path):
    path = tmp_path / "rt.csv"
    path.write_text("")
    with pytest.raises(WorkloadError, match="empty file"):
        load_philly_runtimes(path)
    path.write_text("seconds\n1\n")
    with pytest.raises(WorkloadError, match="missing column 'runtime'"):
        load_philly_runtimes(path)
    path.write_text("runtime\n5\n-3\nx\n")
    with pytest.raises(WorkloadError, match=r"column 'runtime': not a finite number in 1 row\(s\) \(line 4: 'x'\)"):
        load_philly_runtimes(path)
    path.write_text("runtime\n0\n5\n")
    assert load_philly_runtimes(path).tolist() == [5.0]
    pods = load_alibaba_pods(write_pods(tmp_path, [pod(0, 1, 0), pod(1, 1, 10)]))
    kw = dict(pods=pods, runtimes=np.array([1.0]))
    for bad, message in [(dict(part=(0.5, 0.5)), "0 <= a < b <= 1"), (dict(part=(0.0, 1.5)), "0 <= a < b <= 1"),
                         (dict(time_scale=0), "time_scale must be a finite number > 0"),
                         (dict(n_jobs=5), "part (0.0, 0.5) of the trace holds 1 GPU pod(s), fewer than n_jobs=5"),
                         (dict(n_jobs=0), "n_jobs must be a whole number >= 1")]:
        with pytest.raises(WorkloadError, match=message.replace("(", r"\(").replace(")", r"\)")):
            trace_workload(**kw, **bad)
    with pytest.raises(WorkloadError, match="runtimes must be"):
        trace_workload(pods=pods, runtimes=np.array([1.0, 0.0]))


def test_real_traces(dataset):
    pods = load_alibaba_pods(dataset(ALIBABA_PODS))
    assert len(pods) == 8152 - 1088 and pods["gpus"].value_counts().to_dict() == {1: 6989, 8: 44, 2: 16, 4: 15}
    assert pods["creation_time"].is_monotonic_increasing
    runtimes = load_philly_runtimes(dataset(PHILLY_RUNTIMES))
    assert runtimes.size == 83154 - 2 and (runtimes > 0).all()
    first = trace_workload(pods=pods, runtimes=runtimes)
    held_out = trace_workload((0.5, 1.0), pods=pods, runtimes=runtimes)
    assert len(first) + len(held_out) == 7049 and first[0].arrival_s == 0.0
    assert first == trace_workload(pods=pods, runtimes=runtimes)
    assert first != trace_workload(pods=pods, runtimes=runtimes, seed=1)
    arrivals = np.array([j.arrival_s for j in first])
    assert (np.diff(arrivals) >= 0).all() and arrivals[-1] < 0.5 * 41 * 86400
    squeezed = trace_workload(pods=pods, runtimes=runtimes, time_scale=0.25, n_jobs=100)
    assert [j.arrival_s for j in squeezed] == pytest.approx(0.25 * arrivals[:100])
    big = resampled_workload(10_000, seed=0, pods=pods, runtimes=runtimes, max_runtime_s=86400)
    assert len(big) == 10_000 and {j.gpus for j in big} <= {1, 2, 4, 8} and max(j.runtime_s for j in big) <= 86400
