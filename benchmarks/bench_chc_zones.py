"""A1 across zones (`chc_zones`) and the optimum across zones with the zones DP as it is (the band of reachable
levels, every (zone, allocation) at once) against the full-width loop it replaced (`FullWidthZonesDP`, kept in
tests/optimum/test_zones_dp.py as the reference), side by side in one run, as notebook 11 builds its cells.

Per case: seconds with each DP (the whole policy run: forecasts, engine and DP; the DP's share of A1 in its report),
their ratio, and whether the two runs' costs and completion times are equal to the bit (they must be: the same
plans). Cases: A1 on the leaderboard's `2_zones_same_region` (its rules: free moves and final-zone prices fold the
zones into one), A1 on SkyNomad's shared six zones at ratio 1.5 under SkyNomad's rules and under spotlab's (strict
net, a move pays egress and a restart), and the optimum on SkyNomad's six windows under spotlab's rules.

    python benchmarks/bench_chc_zones.py [--windows 0] [--quick]

Results are in docs/benchmarks.md ("A1 across zones").
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

import spotlab.policies.chc_zones as chc_zones
import spotlab.policies.optimal as optimal
from spotlab.experiments.zone_benchmarks import SHARED_SIX, leaderboard_scenario, skynomad_scenario
from spotlab.optimum.dp.zones import ZonesDP
from spotlab.policies.run import run_policy
from spotlab.policies.semantics import semantics_for

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the reference DP is kept with the tests
from tests.optimum.test_zones_dp import FullWidthZonesDP  # noqa: E402


def scenario(bench: str, rules: str, windows):
    sc = (leaderboard_scenario("2_zones_same_region", windows=windows) if bench == "leaderboard"
          else skynomad_scenario(tuple(SHARED_SIX), 1.5, windows=windows))
    return sc, (sc.semantics if rules == sc.semantics.rules else semantics_for(None, rules))


def run(policy: str, bench: str, rules: str, windows, dp_class) -> tuple[float, object]:
    chc_zones.ZonesDP = optimal.ZonesDP = dp_class
    try:
        sc, sem = scenario(bench, rules, windows)
        started = time.perf_counter()
        res = run_policy(policy, {}, sc.episodes, sc.job, sem)
        return time.perf_counter() - started, res
    finally:
        chc_zones.ZonesDP = optimal.ZonesDP = ZonesDP


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--windows", type=int, nargs="+", default=[0], help="windows of the A1 cases")
    ap.add_argument("--quick", action="store_true", help="the SkyNomad A1 cases only")
    args = ap.parse_args()
    w = list(args.windows)
    cases = [("chc_zones", "skynomad", "skynomad", w), ("chc_zones", "skynomad", "spotlab", w),
             ("optimal", "skynomad", "spotlab", None)]
    if not args.quick:
        cases.insert(0, ("chc_zones", "leaderboard", "leaderboard", w))
    total = {"band": 0.0, "full": 0.0}
    for policy, bench, rules, windows in cases:
        t_full, full = run(policy, bench, rules, windows, FullWidthZonesDP)
        t_band, band = run(policy, bench, rules, windows, ZonesDP)
        same = (np.array_equal(band.cost, full.cost) and np.array_equal(band.completion_h, full.completion_h,
                                                                         equal_nan=True))
        total["band"] += t_band
        total["full"] += t_full
        dp_share = band.policy_report.get("solve_total_s") if policy == "chc_zones" else None
        print(f"{policy:10s} {bench:11s} {rules:11s} windows {len(band.cost)}: full-width {t_full:7.2f} s, "
              f"band {t_band:6.2f} s (DP {dp_share if dp_share is None else round(dp_share, 2)} s), "
              f"x{t_full / t_band:.2f}; costs {'equal to the bit' if same else 'DIFFER'} "
              f"(mean {band.cost.mean():.6f})", flush=True)
        if not same:
            raise SystemExit("the band DP does not reproduce the full-width loop")
    print(f"all cases: full-width {total['full']:.1f} s, band {total['band']:.1f} s, "
          f"x{total['full'] / total['band']:.2f}")


if __name__ == "__main__":
    main()
