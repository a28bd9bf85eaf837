"""Solve time of the optimum across zones (`optimum/dp/zones.py`), in one run.

1. SkyNomad's "shared six" zones, windows of 311 ticks of 600 s, ratios 1.5 and 1.2 (SkyNomad's rules): seconds per
   window of the zones DP, against the bar of 2 s, and against simulating UP(S) on the same six windows in the same
   run (a machine-independent ratio).
2. The multi-region leaderboard (its rules: free moves, final-zone prices): windows of 1,107 ticks on 2 and on 9
   zones, where the zones fold into one (moves are free), the same measures.
The DP's objective is checked against the engine's replay of its plan, window by window.
"""

from __future__ import annotations

import time

import numpy as np

from spotlab.experiments.zone_benchmarks import scenario
from spotlab.policies.registry import make_policy
from spotlab.policies.run import run_policy
from spotlab.simulation.engine import simulate


def measure(name: str) -> None:
    sc = scenario(name)
    started = time.perf_counter()
    policy = make_policy("optimal")
    res = simulate(policy, sc.episodes, sc.job, sc.semantics.settings)
    total = time.perf_counter() - started
    solve = sum(r.seconds for r in policy.results_)
    gap = np.max(np.abs(res.cost - np.array([-r.objective for r in policy.results_])))
    started = time.perf_counter()
    baseline = "up_failover" if name.startswith("skynomad") else "round_robin"
    base = run_policy(baseline, {}, sc.episodes, sc.job, sc.semantics)
    sim = time.perf_counter() - started
    n = sc.episodes.n
    print(f"{sc.name[:60]:60s} zones {sc.episodes.z} windows {n} ticks {int(sc.episodes.length.max())}: "
          f"DP {solve / n:.2f} s/window (bar 2 s: x{solve / n / 2:.2f}), whole policy {total:.1f} s, "
          f"{baseline} {sim:.2f} s (DP / {baseline} = {solve / max(sim, 1e-9):.0f}); "
          f"mean cost {res.cost.mean():.4f} vs {baseline} {base.cost.mean():.4f}; |DP - replay| <= {gap:.1e}")


def main() -> None:
    for name in ("skynomad/1.5", "skynomad/1.2", "leaderboard/2_zones_same_region/0-1", "leaderboard/all_9_regions"):
        measure(name)


if __name__ == "__main__":
    main()
