"""The ADRS leaderboard's 1,080 Can't Be Late runs (6 environments x 30 windows x 2 deadlines x 3 overheads),
per rule-based policy, in one run: every environment's windows in one lockstep simulation per (deadline,
overhead, policy) against one simulation per environment (the previous way, `run(..., lockstep=False)`).
Both give the same rows (checked here); the ratio is per-env seconds / lockstep seconds, best of `--repeat`.

The issue that asked for this measured the Can't Be Late simulator itself at 32 s for Greedy's 1,080 runs on a
2-core machine; that simulator is not part of spotlab, so its seconds are printed as that reference only.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from spotlab.experiments import leaderboard as lb

CBL_SIMULATOR_GREEDY_S = 32.0  # the measurement of the peer simulator on the same 1,080 runs


def best_of(repeat: int, fn) -> tuple[float, object]:
    best, out = np.inf, None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--policies", nargs="+", default=["greedy", "uniform_progress", "slack_reserve"])
    args = ap.parse_args()
    windows = lb.leaderboard_windows()
    print(f"{'policy':18s} {'runs':>5s} {'per env (s)':>12s} {'lockstep (s)':>13s} {'ratio':>6s} "
          f"{'mean cost':>10s} {'vs CBL sim':>10s}")
    for pol in args.policies:
        old_s, old = best_of(args.repeat, lambda: lb.run(windows, [pol], progress=False, lockstep=False))
        new_s, new = best_of(args.repeat, lambda: lb.run(windows, [pol], progress=False, lockstep=True))
        cols = ["cost", "completion_h", "met_deadline"]
        assert np.allclose(old[cols[:2]].to_numpy(float), new[cols[:2]].to_numpy(float), equal_nan=True, rtol=0,
                           atol=1e-9) and (old["met_deadline"] == new["met_deadline"]).all(), pol
        ref = f"{CBL_SIMULATOR_GREEDY_S / new_s:9.0f}x" if pol == "greedy" else ""
        print(f"{pol:18s} {len(new):5d} {old_s:12.3f} {new_s:13.3f} {old_s / new_s:5.1f}x {new['cost'].mean():10.4f} "
              f"{ref:>10s}", flush=True)


if __name__ == "__main__":
    main()
