"""GLPK in-process through swiglpk, registered with Pyomo's solver factory as "swiglpk".

Pyomo's own GLPK interface runs the `glpsol` executable; this one compiles the model to a matrix
(`matrix.compile_model`, which rejects everything GLPK would abort the process on) and calls the
GLPK library directly: `SolverFactory("swiglpk").solve(model, timelimit=10, mip_gap=1e-4)`.
"""

from __future__ import annotations

from pyomo.opt import SolverFactory, SolverResults, SolverStatus, TerminationCondition

from ..matrix import compile_model, glp, solve_glpk

_TERMINATION = {
    "optimal": TerminationCondition.optimal,
    "time_limit": TerminationCondition.maxTimeLimit,
    "infeasible": TerminationCondition.infeasible,
    "unbounded": TerminationCondition.unbounded,
    "error": TerminationCondition.error,
}


@SolverFactory.register("swiglpk", doc="GLPK in-process through swiglpk (no glpsol executable)")
class SwiglpkSolver:
    """A Pyomo solver plugin; a time limit and a MIP gap are always in force."""

    def __init__(self, **kwds):
        self.options = dict(kwds.get("options") or {})

    def available(self, exception_flag: bool = False) -> bool:
        return glp is not None

    def license_is_valid(self) -> bool:
        return True

    def version(self):
        return tuple(int(x) for x in glp.glp_version().split(".")) if glp else None

    def solve(self, model, timelimit: float = 60.0, mip_gap: float = 1e-4, tee: bool = False,
              load_solutions: bool = True, **kwds) -> SolverResults:
        form = compile_model(model, keep_columns=True)
        sol = solve_glpk(form, timelimit, mip_gap, tee=tee, options=self.options)
        results = SolverResults()
        results.solver.name = "swiglpk"
        results.solver.wallclock_time = sol.seconds
        results.solver.termination_condition = _TERMINATION[sol.status]
        results.solver.status = SolverStatus.ok if sol.x is not None else SolverStatus.warning
        results.solver.has_solution = sol.x is not None
        results.solver.objective = sol.objective
        if sol.x is not None and load_solutions:
            for v, val in zip(form.columns, sol.x):
                v.set_value(float(val), skip_validation=True)
        return results
