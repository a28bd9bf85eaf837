"""CHC in lockstep (the default: at each slot the window problems of every window that re-plans are solved together,
`WindowProblem.solve_many`, the DP of all at once) against the per-window path (one `WindowProblem.solve` per
window, what CHC did before), in one run, with the same decisions checked.

Cases: A1 as notebook 01c runs it (`chc_oracle`, `chc_persistence`) on the first windows of one of the ADRS
leaderboard's traces (one GPU, 48-h job, 10-min slots; `lb.run` simulates a cell's windows in lockstep), and CHC
at its defaults on persistence forecasts on `JobSpec()` jobs (N 1..8) of the GCP H100 trace.

    python benchmarks/bench_chc_lockstep.py [--windows 30] [--jobs 8] [--repeats 1]

Prints each case's seconds per path (median of the repeats) and their ratio; exits 1 if a cost differs.
"""

from __future__ import annotations

import argparse
import sys
import time
from contextlib import contextmanager

import numpy as np

from spotlab.errors import SolverError
from spotlab.experiments import leaderboard as lb
from spotlab.experiments.setups import JobSpec
from spotlab.market.load import load_market
from spotlab.market.windows import cut_windows
from spotlab.optimum.window import WindowProblem
from spotlab.policies.registry import make_policy
from spotlab.simulation.engine import simulate


@contextmanager
def per_window():
    """CHC solving its windows one by one, each by `WindowProblem.solve` (the path before lockstep)."""
    lockstep = WindowProblem.solve_many

    def one_by_one(self, problems, **common):
        out = []
        for problem in problems:
            try:
                out.append(self.solve(**{**common, **problem}))
            except SolverError as exc:
                out.append(exc)
        return out

    WindowProblem.solve_many = one_by_one
    try:
        yield
    finally:
        WindowProblem.solve_many = lockstep


def leaderboard_case(label: str, windows: int):
    w = lb.leaderboard_windows()
    w = w[w["env"] == lb.ENVS[0]].head(windows)
    name, params = lb.VARIANTS[label]

    def run() -> np.ndarray:
        rows = lb.run(w, policies=[label], deadlines=[52.0], overheads=[0.1], names={label: name},
                      params={label: params}, progress=False)
        return rows[["cost", "fallback_rate"]].to_numpy(float)
    return run


def h100_case(jobs: int):
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


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--windows", type=int, default=30, help="leaderboard windows (one trace, 52 h, 0.1 h overhead)")
    ap.add_argument("--jobs", type=int, default=8, help="H100 jobs")
    ap.add_argument("--repeats", type=int, default=1)
    args = ap.parse_args()
    cases = {"leaderboard chc_oracle": leaderboard_case("chc_oracle", args.windows),
             "leaderboard chc_persistence": leaderboard_case("chc_persistence", args.windows),
             "h100 chc persistence": h100_case(args.jobs)}
    same = True
    print(f"{'case':>28} {'lockstep s':>10} {'per-window s':>12} {'ratio':>6} same")
    for name, run in cases.items():
        lock, one = [], []
        ok = True
        for _ in range(args.repeats):  # alternating, so that a drift of the machine's speed hits both
            t_lock, c_lock = timed(run)
            with per_window():
                t_one, c_one = timed(run)
            lock.append(t_lock)
            one.append(t_one)
            ok &= bool(np.array_equal(c_lock, c_one))
        same &= ok
        a, b = float(np.median(lock)), float(np.median(one))
        print(f"{name:>28} {a:>10.2f} {b:>12.2f} {a / b:>6.2f} {'yes' if ok else 'NO'}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
