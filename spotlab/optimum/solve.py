"""Solve the offline optimum with GLPK (in-process, swiglpk) or HiGHS (highspy), always with a
time limit and a MIP gap, and turn every solver outcome into a result or a clear `SolverError`."""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import pyomo.environ as pe
from pyomo.opt import TerminationCondition

from ..errors import SolverError
from ..job import Job
from . import glpk as _glpk  # noqa: F401  (registers "swiglpk" with Pyomo's SolverFactory)
from .model import build_model, schedule_of

SOLVERS = ("glpk", "highs")


@dataclass(frozen=True)
class OptimumResult:
    o: np.ndarray
    s: np.ndarray
    objective: float  # the model's utility (value at slot ends, slots billed in full)
    status: str  # "optimal" or "time_limit" (feasible, not proven optimal)
    solver: str
    seconds: float


def solve_model(m: pe.ConcreteModel, solver: str = "glpk", time_limit: float = 60.0, mip_gap: float = 1e-6,
                tee: bool = False) -> tuple[str, float]:
    """Solve a built model in place; returns (status, objective)."""
    if solver not in SOLVERS:
        raise SolverError(f"unknown solver {solver!r}; use one of {', '.join(SOLVERS)}")
    if not (time_limit and time_limit > 0) or mip_gap is None or mip_gap < 0:
        raise SolverError(f"need a positive time limit and a non-negative gap (got {time_limit}, {mip_gap})")
    if solver == "glpk":
        res = pe.SolverFactory("swiglpk").solve(m, timelimit=time_limit, mip_gap=mip_gap, tee=tee)
        tc = res.solver.termination_condition
        has_sol = bool(res.solver.has_solution)
    else:
        from pyomo.contrib.appsi.solvers.highs import Highs

        opt = Highs()
        if not opt.available():
            raise SolverError("HiGHS is not available: install highspy (pip install highspy)")
        opt.config.time_limit = float(time_limit)
        opt.config.mip_gap = float(mip_gap)
        opt.config.load_solution = False
        opt.config.stream_solver = tee
        try:
            res = opt.solve(m)
        except Exception as exc:  # appsi raises on malformed models
            raise SolverError(f"HiGHS could not solve the model: {exc}") from None
        tc = res.termination_condition
        has_sol = res.best_feasible_objective is not None
        if has_sol:
            res.solution_loader.load_vars()
        tc = {"optimal": TerminationCondition.optimal, "maxTimeLimit": TerminationCondition.maxTimeLimit,
              "infeasible": TerminationCondition.infeasible, "unbounded": TerminationCondition.unbounded,
              "infeasibleOrUnbounded": TerminationCondition.infeasibleOrUnbounded}.get(tc.name, TerminationCondition.error)
    if tc == TerminationCondition.optimal and has_sol:
        status = "optimal"
    elif tc == TerminationCondition.maxTimeLimit:
        if not has_sol:
            raise SolverError(f"{solver}: no feasible schedule found within the time limit of {time_limit:g} s; "
                              "raise the limit (--param time_limit=...) or shorten the horizon")
        status = "time_limit"
    elif tc in (TerminationCondition.infeasible, TerminationCondition.infeasibleOrUnbounded):
        raise SolverError(f"{solver}: the offline problem is infeasible: the job cannot be finished by its hard "
                          "deadline on this trace (check the deadline, N_min/N_max and availability)")
    else:
        raise SolverError(f"{solver}: solver stopped with status {tc}")
    return status, float(pe.value(m.utility))


def solve_optimum(avail, spot_price, od_price, job: Job, slot_hours: float, solver: str = "glpk",
                  time_limit: float = 60.0, mip_gap: float = 1e-6, must_finish: bool = True) -> OptimumResult:
    """Build and solve the optimum of one window; the schedule is what the simulator replays."""
    avail = np.asarray(avail)
    for label, arr in (("spot price", spot_price), ("on-demand price", od_price)):
        arr = np.asarray(arr, dtype=float)
        if arr.shape != avail.shape or not np.all(np.isfinite(arr)) or np.any(arr < 0):
            raise SolverError(f"the {label} must be a finite non-negative value for each of the {avail.size} slots")
    started = time.perf_counter()
    m = build_model(avail, spot_price, od_price, job, slot_hours, must_finish=must_finish)
    status, obj = solve_model(m, solver, time_limit, mip_gap)
    o, s = schedule_of(m)
    return OptimumResult(o=o, s=s, objective=obj, status=status, solver=solver, seconds=time.perf_counter() - started)
