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
from contextlib import contextmanager

from bench_window_band import compare, h100_case, leaderboard_case  # the same cases, run as the band's benchmark does
from spotlab.errors import SolverError
from spotlab.optimum.window import WindowProblem


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

def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--windows", type=int, default=30, help="leaderboard windows (one trace, 52 h, 0.1 h overhead)")
    ap.add_argument("--jobs", type=int, default=8, help="H100 jobs")
    ap.add_argument("--repeats", type=int, default=1)
    args = ap.parse_args()
    cases = {"leaderboard chc_oracle": leaderboard_case("chc_oracle", args.windows),
             "leaderboard chc_persistence": leaderboard_case("chc_persistence", args.windows),
             "h100 chc persistence": h100_case(args.jobs)}
    return compare(cases, args.repeats, per_window, ("lockstep s", "per-window s"))

if __name__ == "__main__":
    sys.exit(main())
