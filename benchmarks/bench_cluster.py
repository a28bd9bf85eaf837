"""Cluster engine throughput (jobs simulated per second), fifo vs sia, on a resampled 10,000-job workload.

Workload: `resampled_workload` (Alibaba v2023 inter-arrival gaps and GPU counts, Philly runtimes; first half of
the trace, seeded), arrivals compressed by ``--time-scale`` so the cluster queues. Each job gets two synthetic
options: its trace GPU count on A100-80GB at a rate that reproduces its Philly runtime, and twice as many
L40S-48GB at 0.8x that rate; the scheduler's belief ``est_rate`` is the truth times a seeded log-normal error
(sigma 0.3), and ``--oom`` of the jobs' first option fails (out of memory). Prints, per policy, the median of
``--repeat`` runs in jobs/second, whether every repeat produced the same tables, and the summary of the last run.
Each timed run starts from a collected heap: a full garbage collection costs about half a run here and otherwise
falls on whichever run crosses the collector's threshold. (The simulator the engine replaced is no longer kept, so
there is no old/new ratio any more; that the engine reproduces it is tests/cluster/test_engine.py's job, against
saved runs.)

    python benchmarks/bench_cluster.py [--jobs 10000] [--cluster A100-80GB:16x8,L40S-48GB:32x4]
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time

import numpy as np
import pandas as pd

from spotlab.cluster.alibaba_philly_workload import resampled_workload
from spotlab.cluster.simulate import simulate
from spotlab.cluster.state import Cluster, Option, SimJob

WORK_PER_S = 1000.0  # work units (tokens) per second of a job's A100 runtime: scale only


def synthetic_jobs(n: int, seed: int, time_scale: float, oom: float, max_runtime_s: float) -> list[SimJob]:
    """Trace jobs with two options each (A100 at the trace size, L40S at twice the GPUs), see module doc."""
    trace = resampled_workload(n, seed=seed, time_scale=time_scale, max_runtime_s=max_runtime_s)
    rng = np.random.default_rng(seed + 1)
    noise = rng.lognormal(0.0, 0.3, size=(n, 2))
    fails = rng.random(n) < oom
    jobs = []
    for t, (e_a, e_l), f in zip(trace, noise, fails, strict=True):
        work = t.runtime_s * WORK_PER_S
        a100, l40s = work / t.runtime_s, 0.8 * work / t.runtime_s
        jobs.append(SimJob(t.job_id, t.arrival_s, work, (
            Option("A100-80GB", t.gpus, a100 * e_a, a100, bool(f), f"a100x{t.gpus}"),
            Option("L40S-48GB", 2 * t.gpus, l40s * e_l, l40s, False, f"l40sx{2 * t.gpus}"),
        )))
    return jobs


def same_tables(a, b) -> bool:
    try:
        pd.testing.assert_frame_equal(a.jobs, b.jobs)
        pd.testing.assert_frame_equal(a.attempts, b.attempts)
    except AssertionError:
        return False
    return True


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=10_000)
    ap.add_argument("--cluster", default="A100-80GB:16x8,L40S-48GB:32x4")
    ap.add_argument("--time-scale", type=float, default=0.08, help="< 1 compresses arrivals (higher load)")
    ap.add_argument("--max-runtime-h", type=float, default=48.0, help="cap on sampled Philly runtimes")
    ap.add_argument("--oom", type=float, default=0.05, help="share of jobs whose first option fails")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    cluster = Cluster.parse(args.cluster)
    jobs = synthetic_jobs(args.jobs, args.seed, args.time_scale, args.oom, args.max_runtime_h * 3600)
    print(f"{len(jobs)} jobs on {cluster} ({cluster.gpus} GPUs), time scale {args.time_scale:g}, "
          f"median of {args.repeat} runs")
    cols = ("mean_jct_h", "p95_jct_h", "mean_queue_h", "makespan_h", "gpu_hours_wasted", "utilisation")
    print(f"{'policy':6s} {'jobs/s':>8s} {'same':>5s} {'wall s':>7s} "
          + " ".join(f"{c:>16s}" for c in cols) + f" {'done':>6s} {'failed':>6s} {'rejected':>8s}")
    for policy in ("fifo", "sia"):
        walls, first, same = [], None, True
        for _ in range(args.repeat):
            gc.collect()
            tic = time.perf_counter()
            res = simulate(cluster, jobs, policy)
            walls.append(time.perf_counter() - tic)
            first = res if first is None else first
            same = same and same_tables(res, first)
        wall, s = statistics.median(walls), res.summary()
        print(f"{policy:6s} {len(jobs) / wall:8,.0f} "
              f"{'yes' if same else 'NO':>5s} {wall:7.2f} " + " ".join(f"{s[c]:16.3f}" for c in cols)
              + f" {s['jobs_done']:6d} {s['jobs_failed']:6d} {s['jobs_rejected']:8d}")


if __name__ == "__main__":
    main()
