"""CHC's window DP on the band of reachable work levels (the default) against the whole grid, in one run, with the
same decisions checked.

The backward pass of `spotlab.optimum.window_dp` computes only the levels of work done that the window can reach
(`WindowDP.band`); the whole grid (every level up to the work left) gives the same plans bit for bit, and is what
the DP computed before. Both are run here on the same cases, alternating, and the costs of every run compared:

- `leaderboard`: A1 as notebook 01c runs it (`chc_oracle` and `chc_persistence`) on the first windows of one of
  the ADRS leaderboard's traces (one GPU, a 48-h job, 10-min slots: a window does a few percent of the job);
- `h100`: CHC at its defaults on persistence forecasts, `JobSpec()` jobs (N 1..8) on the GCP H100 trace.

    python benchmarks/bench_window_band.py [--windows 3] [--repeats 2]

Prints each case's seconds per path (the median of the repeats) and their ratio; exits 1 if a decision differs.
"""

from __future__ import annotations

import argparse
import sys
import time
from contextlib import contextmanager

import numpy as np

from spotlab.experiments import leaderboard as lb
from spotlab.experiments.setups import JobSpec
from spotlab.market.load import load_market
from spotlab.market.windows import cut_windows
from spotlab.optimum.window_dp import WindowDP
from spotlab.policies.registry import make_policy
from spotlab.simulation.engine import simulate


@contextmanager
def whole_grid():
    """The DP computing every level of its grid (what it did before the band)."""
    band = WindowDP.band
    WindowDP.band = lambda self, grid: grid.n
    try:
        yield
    finally:
        WindowDP.band = band


def leaderboard_case(label: str, windows: int):
    """A1 as notebook 01c runs it (`label` of `leaderboard.VARIANTS`) on the first `windows` windows of one trace,
    52 h, 0.1 h: a function returning each run's cost and fallback rate."""
    w = lb.leaderboard_windows()
    w = w[w["env"] == lb.ENVS[0]].head(windows)
    name, params = lb.VARIANTS[label]

    def run() -> np.ndarray:
        rows = lb.run(w, policies=[label], deadlines=[52.0], overheads=[0.1], names={label: name},
                      params={label: params}, progress=False)
        return rows[["cost", "fallback_rate"]].to_numpy(float)
    return run


def h100_case(jobs: int):
    """CHC at its defaults on persistence forecasts on `jobs` `JobSpec()` jobs of the H100 trace: each job's cost."""
    market = load_market("h100", slot_hours=1.0)
    job = JobSpec().job(market)
    episodes = cut_windows(market, horizon_hours=job.hard_deadline_h, stride_hours=job.hard_deadline_h, max_jobs=jobs)

    def run() -> np.ndarray:
        return simulate(make_policy("chc", {"predictor": "persistence"}), episodes, job).cost
    return run


def timed(run) -> tuple[float, np.ndarray]:
    tic = time.perf_counter()
    out = run()
    return time.perf_counter() - tic, out


def compare(cases: dict, repeats: int, reference, labels: tuple[str, str]) -> int:
    """Run each case as it is and inside `reference()` (the path compared against), alternating, so that a drift of
    the machine's speed hits both; print the medians and their ratio. 0 when every run's outputs agree, else 1."""
    same = True
    print(f"{'case':>28} {labels[0]:>12} {labels[1]:>12} {'ratio':>6} same")
    for name, run in cases.items():
        new, old = [], []
        ok = True
        for _ in range(repeats):
            t_new, c_new = timed(run)
            with reference():
                t_old, c_old = timed(run)
            new.append(t_new)
            old.append(t_old)
            ok &= bool(np.array_equal(c_new, c_old))
        same &= ok
        a, b = float(np.median(new)), float(np.median(old))
        print(f"{name:>28} {a:>12.2f} {b:>12.2f} {a / b:>6.2f} {'yes' if ok else 'NO'}")
    return 0 if same else 1


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--windows", type=int, default=3, help="leaderboard windows (one trace, 52 h, 0.1 h overhead)")
    ap.add_argument("--jobs", type=int, default=4, help="H100 jobs")
    ap.add_argument("--repeats", type=int, default=2)
    args = ap.parse_args()
    cases = {"leaderboard chc_oracle": leaderboard_case("chc_oracle", args.windows),
             "leaderboard chc_persistence": leaderboard_case("chc_persistence", args.windows),
             "h100 chc persistence": h100_case(args.jobs)}
    return compare(cases, args.repeats, whole_grid, ("band s", "whole s"))


if __name__ == "__main__":
    sys.exit(main())
