"""Solve time of the offline optimum: the exact DPs (`optimum/dp/`) against the MILP (the previous way), in one run.

1. The Can't Be Late cross-check: 300 windows of the us-west-2a V100 trace, 48 h of work, 52 h deadline, 0.1 h
   restart overhead, 600 s ticks, full billing. The DP solves all 300 windows at once; the MILP (HiGHS, gap
   1e-4, the `optimal` policy's old default) solves `--milp-windows` of them one by one, and its time for 300 is
   that per-window time x 300. Objectives are compared window by window, and the DP's mean cost is set against
   the published omniscient policy's (79.63).
2. Single windows over 48, 168 and 720 slots: the V100 single instance (work = 85% of the horizon) and an H100
   job (N_min=2..N_max=8, H(n) = n + 0.5, 0.25 h overhead, value 500, soft deadline at 80% of the horizon, hard
   at its end) on 10-minute slots, plus the H100 job on 168 hourly slots (a week). Per instance: the exact DP
   that `optimal` uses (`exact_dp`: fixed count, work lattice, or Pareto labels; the 720-slot H100 job takes
   the label DP a few minutes); the MILP's build and compile (once per job and horizon); GLPK and HiGHS cold (the previous
   way); and the `optimal` policy's MILP path ("warm": HiGHS started from the best baseline / Lagrangian
   schedule, with the Lagrangian bound; its seconds include the relaxation), with status and proven gap.
   Ratios are HiGHS seconds / DP seconds (a time limit counts as its seconds: the ratio is then a lower bound).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from spotlab.data.locate import dataset_path
from spotlab.experiments.published import CANT_BE_LATE_MEAN_COST
from spotlab.jobs.job import Job, Throughput, make_job
from spotlab.market.load import load_market
from spotlab.market.windows import cut_windows
from spotlab.optimum.dp.exact import exact_dp
from spotlab.optimum.dp.fixed_count import FixedCountDP
from spotlab.optimum.solve import OptimumProblem
from spotlab.policies.registry import make_policy
from spotlab.policies.semantics import semantics_for
from spotlab.simulation.engine import simulate
from spotlab.simulation.settings import SimSettings
from spotlab.simulation.slots import horizon_slots

CBL = "sky_spot_traces/adrs-cant-be-late-traces/"
PUBLISHED_OMNISCIENT_52H = CANT_BE_LATE_MEAN_COST[(52, "optimal")]


def cant_be_late(milp_windows: int) -> None:
    market = load_market(dataset_path(CBL + "ping_based__us-west-2a_v100_1.json"), spot_price=0.9731, od_price=3.06)
    ep = cut_windows(market, windows=dataset_path(CBL + "random_start__us-west-2a_v100_1__windows.csv"))
    settings = semantics_for(market)
    job = make_job(48, 52, overhead_hours=0.1)
    H = horizon_slots(job, ep.slot_hours)
    args = (ep.avail[:, :H], ep.spot_price[:, :H], ep.od_price[:, :H])
    t = time.perf_counter()
    dp = FixedCountDP(job, H, ep.slot_hours, True, settings.billing)
    res = dp.solve_windows(*args)
    t_dp = time.perf_counter() - t
    problem = OptimumProblem(job, H, ep.slot_hours, True, settings.billing)
    k = max(1, min(milp_windows, ep.n))
    t = time.perf_counter()
    milp = [problem.solve_window(args[0][i], args[1][i], args[2][i], "highs", 120.0, 1e-4) for i in range(k)]
    t_milp = (time.perf_counter() - t) / k * ep.n
    diff = max(abs(a.objective - b.objective) for a, b in zip(res, milp))

    class Plan:
        name = "plan"

        def reset(self, ctx):
            pass

        def act(self, obs):
            return np.array([r.o[obs.t] for r in res]), np.array([r.s[obs.t] for r in res])

    replay = simulate(Plan(), ep, job, settings.settings)
    gap_replay = float(np.max(np.abs(replay.utility - np.array([r.objective for r in res]))))
    print(f"Can't Be Late, {ep.n} windows of {H} slots, 52 h deadline ({dp.levels.n} lost-time levels)")
    print(f"  DP all windows {t_dp:.2f} s | MILP (HiGHS, gap 1e-4) {t_milp:.1f} s for {ep.n} "
          f"(measured on {k}) | MILP / DP = {t_milp / t_dp:.0f}x")
    print(f"  max |DP - MILP| objective on those {k}: {diff:.2e}; max |DP - replayed utility| over {ep.n}: "
          f"{gap_replay:.2e}")
    print(f"  mean cost {np.mean(replay.cost):.2f} vs the published omniscient policy's {PUBLISHED_OMNISCIENT_52H}")


def instances(sizes, hourly: bool):
    v100 = load_market(dataset_path(CBL + "ping_based__us-west-2a_v100_1.json"),
                       spot_price=0.9731, od_price=3.06).window(684, 1781)
    h100 = load_market(dataset_path("markets/gcp_h100_probes.csv.gz"), zone="us-central1-a", slot_hours=1 / 6)
    for T in sizes:
        dt = v100.slot_hours
        job = Job(work=0.85 * T * dt, deadline_h=T * dt, overhead_h=0.1)
        yield f"V100 single instance, {T} slots", job, v100.window(0, T)
    markets = [(h100, T, "10-min") for T in sizes]
    if hourly:
        hourly_mk = load_market(dataset_path("markets/gcp_h100_probes.csv.gz"), zone="us-central1-a", slot_hours=1.0)
        markets.append((hourly_mk, 168, "hourly"))
    for mk, T, label in markets:
        hard = T * mk.slot_hours
        job = Job(work=0.45 * hard * 8.5, deadline_h=0.8 * hard, hard_deadline_h=hard, n_min=2, n_max=8,
                  overhead_h=0.25, throughput=Throughput(1.0, 0.5), value=500.0, miss_penalty=500.0)
        yield f"H100 N=2..8, {T} {label} slots", job, mk.window(0, T)


def _fmt(x, spec):
    width = int(spec.split(".")[0]) if spec[0].isdigit() else 0
    return format(x, spec) if x is not None and np.isfinite(x) else "-".rjust(width)


def single_windows(sizes, time_limit: float, gap: float, hourly: bool, skip_glpk: bool) -> None:
    print(f"\nSingle windows (time limit {time_limit:g} s, relative gap {gap:g}); seconds, status, utility, gap")
    print(f"{'instance':32s} {'DP s':>7s} {'DP obj':>10s} | {'build s':>7s} {'GLPK s':>7s} {'status':>10s} | {'HiGHS s':>7s} "
          f"{'status':>10s} {'obj':>10s} {'gap':>7s} | {'warm s':>7s} {'status':>10s} {'obj':>10s} {'gap':>7s} | "
          f"{'HiGHS/DP':>8s}")
    for label, job, mk in instances(sizes, hourly):
        T, dt = len(mk), mk.slot_hours
        a, sp, od = mk.avail, mk.spot_price, mk.od_price
        t = time.perf_counter()
        dp = exact_dp(job, T, dt)
        d_obj = d_s = None
        if dp is not None:
            d_obj = dp.solve_window(a, sp, od).objective
            d_s = time.perf_counter() - t
        t = time.perf_counter()
        problem = OptimumProblem(job, T, dt)
        problem.compiled(bool(np.all(od == od[0])))  # the model is built and compiled once, outside the solves
        t_build = time.perf_counter() - t
        cold = {}
        for solver in (("highs",) if skip_glpk else ("glpk", "highs")):
            try:
                r = problem.solve_window(a, sp, od, solver, time_limit, gap)
                cold[solver] = (r.seconds, r.status, r.objective, r.gap)
            except Exception as exc:  # a solver failing is a result too
                cold[solver] = (float("nan"), type(exc).__name__, float("nan"), None)
        g = cold.get("glpk", (float("nan"), "skipped", float("nan"), None))
        h = cold["highs"]
        pol = make_policy("optimal", {"method": "milp", "time_limit": time_limit, "mip_gap": gap, "n_jobs": 1})
        simulate(pol, mk, job, SimSettings())
        wr = pol.results_[0]
        w_s = wr.seconds  # baselines' replay, Lagrangian and solve (the model's build is the column before)
        print(f"{label:32s} {_fmt(d_s, '7.2f')} {_fmt(d_obj, '10.2f')} | {t_build:7.2f} {g[0]:7.2f} {g[1]:>10s} | {h[0]:7.2f} "
              f"{h[1]:>10s} {h[2]:10.2f} {_fmt(h[3], '7.2%')} | {w_s:7.2f} {wr.status:>10s} {wr.objective:10.2f} "
              f"{_fmt(wr.gap, '7.2%')} | {_fmt(h[0] / d_s if d_s else None, '8.1f')}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="48,168,720")
    ap.add_argument("--time-limit", type=float, default=30.0)
    ap.add_argument("--gap", type=float, default=1e-3)
    ap.add_argument("--milp-windows", type=int, default=8, help="Can't Be Late windows the MILP solves (per-window time)")
    ap.add_argument("--no-hourly", action="store_true", help="skip the H100 job on 168 hourly slots")
    ap.add_argument("--skip-glpk", action="store_true")
    args = ap.parse_args()
    cant_be_late(args.milp_windows)
    single_windows([int(x) for x in args.sizes.split(",")], args.time_limit, args.gap, not args.no_hourly,
                   args.skip_glpk)


if __name__ == "__main__":
    main()
