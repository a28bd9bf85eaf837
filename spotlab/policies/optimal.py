"""The offline optimum as a policy: solve each window with the whole trace known, then replay.

It is the upper bound every online policy is measured against (SPEC §4). The schedule is solved
once per window at `reset` (in parallel over windows with joblib) and replayed slot by slot, so
the simulator, not the model, reports its cost and utility. The model bills as the simulator's
settings do: under fractional billing its objective is the replayed utility, so no online policy
beats it; under full billing it values the job at the end of its finishing slot (the Can't Be Late
convention). It does not pass through the safety net: the plan is feasible by construction.
"""

from __future__ import annotations

import numpy as np
from joblib import Parallel, delayed
from tqdm.auto import tqdm

from ..optimum import OptimumProblem
from ..parallel import worker_count
from ..registry import Params
from ..optimum.solve import DEFAULT_GAP
from ..simulator import Context, Observation


def _solve_chunk(problem: OptimumProblem, avail, sp, od, solver, time_limit, mip_gap):
    return [problem.solve_window(a, p, q, solver, time_limit, mip_gap) for a, p, q in zip(avail, sp, od)]


class Optimal(Params):
    name = "optimal"
    uses_safety_net = False

    def __init__(self, solver: str = "highs", time_limit: float = 120.0, mip_gap: float = DEFAULT_GAP,
                 must_finish: bool = True, n_jobs: int = -1):
        self.solver = solver
        self.time_limit = time_limit
        self.mip_gap = mip_gap
        self.must_finish = must_finish
        self.n_jobs = n_jobs

    def reset(self, ctx: Context) -> None:
        ep, H = ctx.episodes, ctx.horizon
        problem = OptimumProblem(ctx.job, H, ep.slot_hours, self.must_finish, ctx.settings.billing)
        W = ep.n
        jobs = 1 if W < 4 else worker_count(self.n_jobs)
        chunks = np.array_split(np.arange(W), max(1, min(W, 4 * (2 if jobs == -1 else max(jobs, 1)))))
        args = [(problem, ep.avail[c, :H], ep.spot_price[c, :H], ep.od_price[c, :H],
                 self.solver, self.time_limit, self.mip_gap) for c in chunks if c.size]
        if jobs == 1:
            parts = (_solve_chunk(*a) for a in args)
        else:
            parts = Parallel(n_jobs=jobs, return_as="generator")(delayed(_solve_chunk)(*a) for a in args)
        results = []
        with tqdm(total=W, desc="optimum", unit="window", disable=None if W >= 8 else True, leave=False) as bar:
            for part in parts:
                results.extend(part)
                bar.update(len(part))
        self.plan_o_ = np.stack([r.o for r in results])
        self.plan_s_ = np.stack([r.s for r in results])
        self.results_ = results

    def report(self) -> dict:
        """How the solves went: a time-out leaves a feasible but unproven schedule."""
        status = [r.status for r in self.results_]
        return {"solver": self.solver, "mip_gap": self.mip_gap, "windows_optimal": status.count("optimal"),
                "windows_time_limit": status.count("time_limit"),
                "solve_seconds": round(float(sum(r.seconds for r in self.results_)), 2)}

    def act(self, obs: Observation):
        return self.plan_o_[:, obs.t], self.plan_s_[:, obs.t]
