"""Solve time of the offline optimum, GLPK (swiglpk) vs HiGHS (highspy), on the same instances.

Instances over 48, 168 and 720 slots of 10 minutes:
- single instance, the Can't Be Late setting: the real us-west-2a V100 trace from tick 684, spot
  $0.9731/h, on-demand $3.06/h, 0.1 h restart overhead, work = 85% of the horizon, deadline = horizon;
- multi-GPU: N_min=2..N_max=8 H100s, H(n) = n + 0.5, 0.25 h overhead, value 500, soft deadline at 80%
  of the horizon, hard deadline at its end, on the real GCP H100 probe trace (us-central1-a). Each solve has a time limit; the table shows the status, the
objective and the time of each solver and the ratio GLPK / HiGHS, measured in one run.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from spotlab.data import dataset_path
from spotlab.job import Job, Throughput
from spotlab.optimum import OptimumProblem
from spotlab.runs import load_episodes
from spotlab.traces import load_tidy_csv


def instances(sizes):
    base = "sky_spot_traces/adrs-cant-be-late-traces/"
    v100 = load_episodes(dataset_path(base + "ping_based__us-west-2a_v100_1.json"),
                         spot_price=0.9731, od_price=3.06).market.window(684, 1781)
    h100 = load_tidy_csv(dataset_path("markets/gcp_h100_probes.csv.gz"), zone="us-central1-a", slot_hours=1 / 6)
    for T in sizes:
        dt = v100.slot_hours
        job = Job(work=0.85 * T * dt, deadline_h=T * dt, overhead_h=0.1)
        yield f"V100 single instance, {T} slots", job, v100.avail[:T], v100.spot_price[:T], v100.od_price[:T], dt
    for T in sizes:
        dt = h100.slot_hours
        hard = T * dt
        job = Job(work=0.45 * hard * 8.5, deadline_h=0.8 * hard, hard_deadline_h=hard, n_min=2, n_max=8,
                  overhead_h=0.25, throughput=Throughput(1.0, 0.5), value=500.0, miss_penalty=500.0)
        yield f"H100 N=2..8, {T} slots", job, h100.avail[:T], h100.spot_price[:T], h100.od_price[:T], dt


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="48,168,720")
    ap.add_argument("--time-limit", type=float, default=60.0)
    ap.add_argument("--gap", type=float, default=1e-3)
    args = ap.parse_args()
    sizes = [int(x) for x in args.sizes.split(",")]
    print(f"time limit {args.time_limit:g} s, relative gap {args.gap:g}")
    print(f"{'instance':36s} {'build+compile':>13s} {'GLPK s':>8s} {'status':>10s} {'HiGHS s':>8s} {'status':>10s} "
          f"{'GLPK/HiGHS':>10s} {'obj GLPK':>10s} {'obj HiGHS':>10s}")
    for label, job, a, sp, od, dt in instances(sizes):
        t = time.perf_counter()
        problem = OptimumProblem(job, len(a), dt)
        problem.compiled(bool(np.all(od == od[0])))
        t_build = time.perf_counter() - t
        row = {}
        for solver in ("glpk", "highs"):
            try:
                r = problem.solve_window(a, sp, od, solver, args.time_limit, args.gap)
                row[solver] = (r.seconds, r.status, r.objective)
            except Exception as exc:  # a solver failing is a result too
                row[solver] = (float("nan"), type(exc).__name__, float("nan"))
        g, h = row["glpk"], row["highs"]
        print(f"{label:36s} {t_build:13.2f} {g[0]:8.2f} {g[1]:>10s} {h[0]:8.2f} {h[1]:>10s} {g[0] / h[0]:10.1f} "
              f"{g[2]:10.2f} {h[2]:10.2f}")


if __name__ == "__main__":
    main()
