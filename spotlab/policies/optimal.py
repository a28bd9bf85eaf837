"""The offline optimum as a policy: solve each window with the whole trace known, then replay.

It is the upper bound every online policy is measured against (SPEC §4). The schedule is solved
once per window at `reset` and replayed slot by slot, so the simulator, not the model, reports its
cost and utility. The model bills as the simulator's settings do: under fractional billing its
objective is the replayed utility, so no online policy beats it; under full billing it values the
job at the end of its finishing slot (the Can't Be Late convention). It does not pass through the
safety net: the plan is feasible by construction.

`method`: "dp" is an exact dynamic programme (`optimum.dp.exact`): for a fixed GPU count (N_min = N_max, e.g.
the Can't Be Late single instance) over lost-time levels, all windows at once in numpy; otherwise over
work levels when every slot's work is a multiple of one quantum (e.g. H(n) = n + 0.5, 1-h slots, 0.25-h
overhead). "milp" is the mixed-integer program; "auto" the DP where one applies, else the MILP. With
`warm_start`, each MILP starts from the best of the baselines' schedules (uniform progress, greedy,
on-demand, replayed here) and the schedules of a Lagrangian relaxation (`AllocationRelaxation`), whose
bound is also kept: a time-out is never worse than a baseline, and `report()` carries the worst proven gap.
"""

from __future__ import annotations

import time
from dataclasses import replace
from numbers import Integral, Real

import numpy as np
from joblib import Parallel, delayed

from ..errors import PolicyError, TooManyLabels
from ..optimum.dp.exact import exact_dp
from ..optimum.dp.fixed_count import FixedCountDP
from ..optimum.dp.pareto_labels import ParetoLabelDP
from ..optimum.dp.relaxation import AllocationRelaxation
from ..optimum.dp.zones import ZonesDP, solve_zones
from ..optimum.solve import DEFAULT_GAP, OptimumProblem, OptimumResult
from ..params import Boolean, Interval, Options, Params
from ..processes import worker_count
from ..progress import tqdm_bar
from ..simulation.interface import Action, Context, Observation
from ..simulation.slots import horizon_slots

METHODS = ("auto", "dp", "milp")


def _solve_chunk(problem, avail, sp, od, solver, time_limit, mip_gap, incumbents, relax: bool, fallback=None):
    """Solve windows one by one: an exact DP (`fallback`, the MILP, where the label DP gives up) or the MILP."""
    if not isinstance(problem, OptimumProblem):  # an exact DP
        out = []
        for a, p, q, inc in zip(avail, sp, od, incumbents):
            try:
                out.append(problem.solve_window(a, p, q))
            except TooManyLabels:
                out.extend(_solve_chunk(fallback, [a], [p], [q], solver, time_limit, mip_gap, [inc], relax))
        return out
    out = []
    for a, p, q, inc in zip(avail, sp, od, incumbents):
        bound, left = None, time_limit
        inc = list(inc or [])
        if relax:  # the Lagrangian relaxation: a bound, and schedules that are often near the optimum
            lag = AllocationRelaxation(problem.job, problem.horizon, problem.slot_hours, problem.must_finish,
                                       problem.billing).solve(a, p, q)
            bound, left = lag.bound, max(time_limit - lag.seconds, 0.1 * time_limit)
            inc.extend(lag.schedules)
        res = problem.solve_window(a, p, q, solver, left, mip_gap, incumbents=inc, bound=bound)
        if relax:
            res = replace(res, seconds=res.seconds + lag.seconds)
        out.append(res)
    return out


class Optimal(Params):
    name = "optimal"
    online = False  # a hindsight plan: never guarded by the safety net
    hindsight = True  # sees the whole window: never a member of `select`'s pool
    independent_windows = False  # its solves share workers and a warm start across windows
    reads_history = False

    def __init__(self, solver: str = "highs", time_limit: float = 120.0, mip_gap: float = DEFAULT_GAP,
                 must_finish: bool = True, n_jobs: int = -1, method: str = "auto", warm_start: bool = True):
        self.solver = solver
        self.time_limit = time_limit
        self.mip_gap = mip_gap
        self.must_finish = must_finish
        self.n_jobs = n_jobs
        self.method = method
        self.warm_start = warm_start

    param_error = PolicyError
    _parameter_constraints = {
        "solver": [Options("glpk", "highs")],
        "time_limit": [Interval(Real, 0, None, closed="neither")],
        "mip_gap": [Interval(Real, 0, 1, closed="left")],
        "must_finish": [Boolean()],
        "n_jobs": [lambda n: "" if Interval(Integral, None, None).accepts(n) and n != 0 else "a non-zero whole number"],
        "method": [Options(*METHODS)],
        "warm_start": [Boolean()],
    }
    _parameter_help = {
        "solver": "MILP solver: glpk or highs",
        "time_limit": "seconds per solve; a time-out keeps the best schedule found (its gap is reported)",
        "mip_gap": "relative optimality gap at which a solve stops",
        "must_finish": "require the work done by the hard deadline (else the miss penalty is priced in)",
        "n_jobs": "worker processes (-1: all cores; 1 inside a worker)",
        "method": "auto: the exact dynamic programme where it applies, else the MILP; dp or milp to force one",
        "warm_start": "start each MILP from the best baseline schedule (a time-out is then never worse)",
    }

    def _exact(self, ctx: Context):
        """The exact DP to use, or None for the MILP."""
        if self.method == "milp":
            return None
        dp = exact_dp(ctx.job, ctx.horizon, ctx.episodes.slot_hours, self.must_finish, ctx.settings.billing)
        if dp is None and self.method == "dp":
            raise PolicyError("optimal: no exact DP applies to this job (it needs N_min = N_max, or work per slot "
                              "on a small lattice: throughput, slot and overhead on simple fractions); "
                              "use method='auto' or 'milp'")
        return dp

    def reset(self, ctx: Context) -> None:
        self.check_params()
        ep, H = ctx.episodes, ctx.horizon
        self.plan_zone_ = None
        if ctx.zoned is not None:  # across zones: the zones DP, window by window
            self._reset_zones(ctx)
            return
        dp = self._exact(ctx)
        if isinstance(dp, FixedCountDP):
            results = dp.solve_windows(ep.avail[:, :H], ep.spot_price[:, :H], ep.od_price[:, :H])
        else:
            results = self._solve_each(ctx, dp)
        self.plan_o_ = np.stack([r.o for r in results])
        self.plan_s_ = np.stack([r.s for r in results])
        self.results_ = results

    def _solve_each(self, ctx: Context, dp) -> list:
        """One window at a time (in parallel over chunks of windows when that pays): a DP or the MILP."""
        ep, H = ctx.episodes, ctx.horizon
        W = ep.n
        milp = OptimumProblem(ctx.job, H, ep.slot_hours, self.must_finish, ctx.settings.billing)
        problem = milp if dp is None else dp
        # the label DP may give up on a window (too many labels): the MILP's warm starts are then ready too
        wants_start = self.warm_start and (dp is None or isinstance(dp, ParetoLabelDP))
        incumbents = baseline_schedules(ctx) if wants_start else [None] * W

        def chunk_args(idx):
            return (problem, ep.avail[idx, :H], ep.spot_price[idx, :H], ep.od_price[idx, :H], self.solver,
                    self.time_limit, self.mip_gap, [incumbents[i] for i in idx], self.warm_start, milp)

        results, rest = [], np.arange(W)
        jobs = 1 if W < 4 else worker_count(self.n_jobs)
        if dp is not None and jobs != 1:
            # a DP window often takes milliseconds, less than starting worker processes: time the first one
            started = time.perf_counter()
            results = _solve_chunk(*chunk_args(rest[:1]))
            if (time.perf_counter() - started) * (W - 1) < 5.0:
                jobs = 1
            rest = rest[1:]
        chunks = np.array_split(rest, max(1, min(rest.size, 4 * (2 if jobs == -1 else max(jobs, 1)))))
        args = [chunk_args(c) for c in chunks if c.size]
        if jobs == 1:
            parts = (_solve_chunk(*a) for a in args)
        else:
            parts = Parallel(n_jobs=jobs, return_as="generator")(delayed(_solve_chunk)(*a) for a in args)
        with tqdm_bar(total=W, initial=len(results), desc="optimum", unit="window", enabled=None if W >= 8 else False,
                      leave=False) as bar:
            for part in parts:
                results.extend(part)
                bar.update(len(part))
        return results

    def report(self) -> dict:
        """How the solves went: the method, and for the MILP whether each window was proven and the worst gap."""
        status = [r.status for r in self.results_]
        gaps = [r.gap for r in self.results_]
        known = [g for g in gaps if g is not None]
        by_dp = sum(r.solver == "dp" for r in self.results_)
        method = "dp" if by_dp == len(self.results_) else ("milp" if by_dp == 0 else "dp+milp")  # label DP gave up
        return {"method": method, "solver": "dp" if method == "dp" else self.solver,
                "mip_gap": 0.0 if method == "dp" else self.mip_gap, "windows_dp": by_dp,
                "windows_optimal": status.count("optimal"), "windows_time_limit": status.count("time_limit"),
                "worst_gap": float(max(known)) if len(known) == len(gaps) and known else None,
                "solve_seconds": round(float(sum(r.seconds for r in self.results_)), 2)}

    def _reset_zones(self, ctx: Context) -> None:
        """The optimum across zones (`optimum.dp.zones`): every window's plan of zones and allocations. It meets
        the job's hard deadline even where the rules let a run go on past it (the leaderboard's)."""
        zoned, H = ctx.zoned, ctx.horizon
        if self.method == "milp":
            raise PolicyError("optimal: across zones the optimum is the zones DP; method='milp' applies to one zone")
        T = min(H, horizon_slots(ctx.job, zoned.slot_hours))
        dp = ZonesDP(ctx.job, T, zoned.slot_hours, ctx.settings, zoned.regions, self.must_finish)
        plans = []
        for w in tqdm_bar(range(zoned.n), desc="optimum", unit="window", enabled=None if zoned.n >= 4 else False,
                          leave=False):
            A = np.stack([e.avail[w, :T] for e in zoned.zones])
            SP = np.stack([e.spot_price[w, :T] for e in zoned.zones])
            OD = np.stack([e.od_price[w, :T] for e in zoned.zones])
            plans.append(solve_zones(dp, A, SP, OD))

        def padded(x, fill):
            return np.concatenate([x, np.full(H - T, fill, dtype=x.dtype)])

        self.plan_o_ = np.stack([padded(p.o, 0) for p in plans])
        self.plan_s_ = np.stack([padded(p.s, 0) for p in plans])
        self.plan_zone_ = np.stack([padded(p.zone, -1) for p in plans])
        self.results_ = [OptimumResult(p.o, p.s, -p.objective, "optimal", "dp", p.seconds, -p.objective, 0.0)
                         for p in plans]

    def act(self, obs: Observation):
        if self.plan_zone_ is not None:
            return Action(self.plan_o_[:, obs.t], self.plan_s_[:, obs.t], None, self.plan_zone_[:, obs.t])
        return self.plan_o_[:, obs.t], self.plan_s_[:, obs.t]


def baseline_schedules(ctx: Context) -> list:
    """Per window, the schedules (o, s) that uniform progress, greedy and on-demand actually run under the
    simulator's settings: the MILP's warm starts (the solver keeps the best that fits its model)."""
    from ..simulation.engine import simulate
    from .registry import make_policy

    ep, H = ctx.episodes, ctx.horizon
    out: list[list] = [[] for _ in range(ep.n)]
    for name in ("uniform_progress", "greedy", "on_demand"):
        try:
            res = simulate(make_policy(name), ep, ctx.job, ctx.settings)
        except Exception:  # a baseline that cannot run here is simply no warm start
            continue
        o, s = res.arrays["o"][:, :H], res.arrays["s"][:, :H]
        for w in range(ep.n):
            if res.done[w]:
                out[w].append((o[w].copy(), s[w].copy()))
    return out
