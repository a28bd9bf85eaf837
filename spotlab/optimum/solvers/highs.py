"""Everything HiGHS: instances that print nothing (`quiet_highs`: the solver behind the optimum, CHC's windows and
the cluster's MILP placement), and the in-process solve of a standard form through highspy (`solve_highs`).

The standard form is imported where it is solved, not at the top: the placement MILP needs only `quiet_highs`,
and the standard form's module loads Pyomo (about a second).
"""

from __future__ import annotations

import os
import sys
import time
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from ..matrix import MatrixSolution, StandardForm


def quiet_highs():
    """A `highspy.Highs` with its output off. HiGHS prints its banner to the process's stdout (file descriptor 1,
    below Python) when the first instance is built, before any option can be set; that line would corrupt a
    command's JSON output, so stdout is pointed at /dev/null while the instance is built."""
    import highspy

    sys.stdout.flush()
    saved = os.dup(1)
    try:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), 1)
            h = highspy.Highs()
    finally:
        os.dup2(saved, 1)
        os.close(saved)
    h.setOptionValue("output_flag", False)
    return h


def solve_highs(form: StandardForm, time_limit: float, mip_gap: float, tee: bool = False,
                start: np.ndarray | None = None) -> MatrixSolution:
    """HiGHS through highspy on the same matrix; `start` = (columns, values) of a feasible schedule is given to
    it as the incumbent (the other columns HiGHS fills in itself)."""
    import highspy

    from ..matrix import solution_of, validate

    validate(form)
    started = time.perf_counter()
    h = quiet_highs()
    h.setOptionValue("output_flag", bool(tee))
    h.setOptionValue("time_limit", float(time_limit))
    h.setOptionValue("mip_rel_gap", float(mip_gap))
    h.setOptionValue("threads", 1)
    inf = highspy.kHighsInf
    A = form.A.tocsc()
    clip = lambda a: np.clip(a, -inf, inf)  # noqa: E731
    lp = highspy.HighsLp()
    lp.num_col_, lp.num_row_ = A.shape[1], A.shape[0]
    lp.col_cost_, lp.offset_ = form.c, form.c0
    lp.col_lower_, lp.col_upper_ = clip(form.col_lo), clip(form.col_hi)
    lp.row_lower_, lp.row_upper_ = clip(form.row_lo), clip(form.row_hi)
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.start_, lp.a_matrix_.index_, lp.a_matrix_.value_ = A.indptr, A.indices, A.data
    if form.is_int.any():
        lp.integrality_ = [highspy.HighsVarType.kInteger if b else highspy.HighsVarType.kContinuous for b in form.is_int]
    h.passModel(lp)
    if start is not None:  # (columns, values): HiGHS completes a partial start by a sub-MIP of its own
        cols, vals = start
        h.setSolution(len(cols), np.asarray(cols, dtype=np.int32), np.asarray(vals, dtype=np.float64))
    h.run()
    ms = h.getModelStatus()
    if ms == highspy.HighsModelStatus.kInfeasible:  # presolve has called feasible problems infeasible: ask again
        h.setOptionValue("presolve", "off")
        h.setOptionValue("time_limit", max(float(time_limit) - (time.perf_counter() - started), 1e-3))
        h.clearSolver()
        h.run()
        ms = h.getModelStatus()
    info = h.getInfo()
    bound = float(info.mip_dual_bound) if form.is_int.any() else float(info.objective_function_value)
    has = info.primal_solution_status == 2  # kSolutionStatusFeasible
    S = highspy.HighsModelStatus
    if ms == S.kOptimal:
        status = "optimal"
    elif ms == S.kTimeLimit:
        status = "time_limit"
    elif ms in (S.kInfeasible,):
        status = "infeasible"
    elif ms in (S.kUnbounded, S.kUnboundedOrInfeasible):
        status = "unbounded" if ms == S.kUnbounded else "infeasible"
    else:
        status = "error"
    x = np.asarray(h.getSolution().col_value, dtype=float) if has else None
    return solution_of(form, x, status, started, bound if np.isfinite(bound) else None)
