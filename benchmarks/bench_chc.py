"""Time per CHC decision (one window solve) and per full episode, GLPK (swiglpk) vs HiGHS (highspy).

Set-up: jobs one after another on the real GCP H100 trace (us-central1-a, 1-h slots, list prices),
N_min=1..N_max=8, H(n) = n, 0.2 h overhead, soft deadline 12 h, hard 15 h; CHC with perfect
predictions (oracle, sigma=0) for (w, v) in a few settings. Both solvers solve the same window problems
(the model is built and compiled once per pending-overhead value and re-used); the table shows the
mean and max seconds per solve, seconds per episode, the mean utility and the ratio GLPK / HiGHS,
measured side by side in one run.

    python benchmarks/bench_chc.py [--jobs 6] [--gap 1e-3]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from spotlab.experiments.setups import JobSpec, job_episodes, load_market
from spotlab.policies import make_policy
from spotlab.simulator import simulate


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=6)
    ap.add_argument("--gap", type=float, default=1e-3)
    args = ap.parse_args()
    market = load_market("h100", 1.0)
    job = JobSpec(alpha=1.0, beta=0.0).job(market)  # H(n) = n, as in the docstring
    episodes = job_episodes(market, job, stride_hours=24, max_jobs=args.jobs)
    print(f"{episodes.n} episodes of {job.hard_deadline_h:g} h, N_max={job.n_max}, gap {args.gap:g}")
    print(f"{'w':>3} {'v':>3} {'solver':>6} {'solves':>6} {'mean s':>8} {'max s':>7} {'s/episode':>9} "
          f"{'utility':>9} {'GLPK/HiGHS':>10}")
    for w, v in ((6, 2), (12, 4), (12, 1), (15, 15)):
        per = {}
        for solver in ("glpk", "highs"):
            policy = make_policy("chc", {"w": w, "v": v, "predictor": "oracle", "solver": solver,
                                         "mip_gap": args.gap})
            tic = time.perf_counter()
            res = simulate(policy, episodes, job)
            wall = time.perf_counter() - tic
            rep = res.policy_report
            per[solver] = rep["solve_mean_s"]
            ratio = f"{per['glpk'] / per['highs']:.2f}" if solver == "highs" and per["highs"] > 0 else ""
            print(f"{w:>3} {v:>3} {solver:>6} {rep['solves']:>6} {rep['solve_mean_s']:>8.3f} "
                  f"{rep['solve_max_s']:>7.2f} {wall / episodes.n:>9.2f} {float(np.mean(res.utility)):>9.2f} "
                  f"{ratio:>10}")


if __name__ == "__main__":
    main()
