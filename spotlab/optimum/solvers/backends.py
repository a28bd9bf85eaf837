"""The in-process MILP backends by name (`BACKENDS`) and the checked solve of a standard form (`solve_form`).

Why here and not in `matrix.py`: each backend's solve lives in its solver's module, which imports the standard
form, so the table of backends sits above both.
"""

from __future__ import annotations

import numpy as np

from ...errors import SolverError
from ..matrix import MatrixSolution, StandardForm
from .glpk import solve_glpk
from .highs import solve_highs

BACKENDS = {"glpk": solve_glpk, "highs": solve_highs}


def solve_form(form: StandardForm, solver: str, time_limit: float, mip_gap: float,
               start: np.ndarray | None = None) -> MatrixSolution:
    """Solve and turn failures into clear errors; a time-out with a schedule is returned as such.
    `start` = (columns, values), part of a feasible solution, is HiGHS's incumbent (GLPK cannot take one; the
    caller keeps the better)."""
    if solver not in BACKENDS:
        raise SolverError(f"unknown solver {solver!r}; use one of {', '.join(BACKENDS)}")
    if not (time_limit and time_limit > 0) or mip_gap is None or not (mip_gap >= 0):
        raise SolverError(f"need a positive time limit and a non-negative MIP gap (got {time_limit}, {mip_gap})")
    if start is not None and solver == "highs":
        sol = solve_highs(form, time_limit, mip_gap, start=start)
    else:
        sol = BACKENDS[solver](form, time_limit, mip_gap)
    if sol.status == "infeasible":
        raise SolverError(f"{solver}: the offline problem is infeasible: the job cannot be finished by its hard "
                          "deadline on this trace (check the deadline, N_min/N_max and availability)")
    if sol.x is None:
        if sol.status == "time_limit":
            raise SolverError(f"{solver}: no feasible schedule found within the time limit of {time_limit:g} s; "
                              "raise it (--param time_limit=...) or shorten the horizon")
        raise SolverError(f"{solver}: the solver stopped with status {sol.status!r} and no schedule")
    return sol
