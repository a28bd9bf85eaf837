"""Everything GLPK: the in-process solve of a standard form (`solve_glpk`, through swiglpk) and the same solve
registered with Pyomo's solver factory as "swiglpk".

Pyomo's own GLPK interface runs the `glpsol` executable; this one compiles the model to a matrix
(`matrix.compile_model`, which rejects everything GLPK would abort the process on) and calls the
GLPK library directly: `SolverFactory("swiglpk").solve(model, timelimit=10, mip_gap=1e-4)`.
"""

from __future__ import annotations

import ctypes
import time

import numpy as np
from pyomo.opt import SolverFactory, SolverResults, SolverStatus, TerminationCondition

from ...errors import SolverError
from ..matrix import MatrixSolution, StandardForm, compile_model, solution_of, validate

try:
    import swiglpk as glp
except ImportError:  # pragma: no cover - a hard dependency
    glp = None


def _glpk_bounds(lo: np.ndarray, hi: np.ndarray) -> tuple[list, list, list]:
    """GLPK's bound kind and its two values for each (lo, hi): free, lower, upper, fixed or double bounded (as
    lists: the wrapper takes Python numbers, one call per column or row)."""
    free_lo, free_hi = np.isinf(lo), np.isinf(hi)
    kind = np.select([free_lo & free_hi, free_hi, free_lo, lo == hi],
                     [glp.GLP_FR, glp.GLP_LO, glp.GLP_UP, glp.GLP_FX], glp.GLP_DB)
    return kind.tolist(), np.where(free_lo, 0.0, lo).tolist(), np.where(free_hi, 0.0, hi).tolist()


def _fill(array, values: np.ndarray) -> None:
    """Copy `values` (C ints or doubles, as `array` holds) into a swiglpk array in one move: element by element
    through the wrapper costs a Python call per matrix entry, more than many a solve."""
    ctypes.memmove(int(array.cast()), values.ctypes.data, values.nbytes)


GLPK_CUTS = ("gmi_cuts", "mir_cuts", "cov_cuts", "clq_cuts")
GLPK_MAX_MS = 2**31 - 1  # 24.8 days: a longer time limit is no limit


def solve_glpk(form: StandardForm, time_limit: float, mip_gap: float, tee: bool = False,
               options: dict | None = None) -> MatrixSolution:
    """GLPK in-process: presolve, the four cut families and the feasibility pump on."""
    if glp is None:  # pragma: no cover
        raise SolverError("swiglpk is not installed: pip install swiglpk")
    validate(form)
    started = time.perf_counter()
    A = form.A.tocoo()
    m, n = A.shape
    lp = glp.glp_create_prob()
    lp_bound = None
    try:
        glp.glp_term_out(glp.GLP_ON if tee else glp.GLP_OFF)
        glp.glp_set_obj_dir(lp, glp.GLP_MIN)
        glp.glp_add_cols(lp, n)
        lo = np.where(form.is_int, np.ceil(form.col_lo - 1e-9), form.col_lo)
        hi = np.where(form.is_int, np.floor(form.col_hi + 1e-9), form.col_hi)
        for j, (kind, a, b) in enumerate(zip(*_glpk_bounds(lo.astype(float), hi.astype(float))), start=1):
            glp.glp_set_col_bnds(lp, j, kind, a, b)
        for j in (np.flatnonzero(form.is_int) + 1).tolist():  # (columns are continuous unless told)
            glp.glp_set_col_kind(lp, j, glp.GLP_IV)
        c = np.asarray(form.c, dtype=float)
        for j in np.flatnonzero((c != 0) | np.signbit(c)).tolist():  # (coefficients are +0 unless set)
            glp.glp_set_obj_coef(lp, j + 1, float(c[j]))
        glp.glp_set_obj_coef(lp, 0, float(form.c0))
        if m:
            glp.glp_add_rows(lp, m)
            rows = _glpk_bounds(np.asarray(form.row_lo, dtype=float), np.asarray(form.row_hi, dtype=float))
            for i, (kind, a, b) in enumerate(zip(*rows), start=1):
                glp.glp_set_row_bnds(lp, i, kind, a, b)
            nnz = A.nnz
            ia, ja, ar = glp.intArray(nnz + 1), glp.intArray(nnz + 1), glp.doubleArray(nnz + 1)
            # GLPK's arrays are 1-based: entry 0 is unused
            _fill(ia, np.concatenate([[0], A.row + 1]).astype(np.intc))
            _fill(ja, np.concatenate([[0], A.col + 1]).astype(np.intc))
            _fill(ar, np.concatenate([[0.0], A.data]).astype(np.float64))
            glp.glp_load_matrix(lp, nnz, ia, ja, ar)
        msg = glp.GLP_MSG_ALL if tee else glp.GLP_MSG_OFF
        tm = max(1, int(min(time_limit * 1000, GLPK_MAX_MS)))  # GLPK's limit is a C int of milliseconds
        if form.is_int.any():
            # The LP relaxation first (simplex with its own presolver and scaling), then branch and
            # cut from that basis without GLPK's MIP presolver, which is fragile with small
            # coefficients: it reported feasible models infeasible in our property tests.
            glp.glp_scale_prob(lp, glp.GLP_SF_AUTO)
            smcp = glp.glp_smcp()
            glp.glp_init_smcp(smcp)
            smcp.presolve, smcp.tm_lim, smcp.msg_lev = glp.GLP_OFF, tm, msg
            lp_ret = glp.glp_simplex(lp, smcp)
            if lp_ret == 0 and glp.glp_get_status(lp) == glp.GLP_NOFEAS:
                return solution_of(form, None, "infeasible", started)
            if lp_ret == 0 and glp.glp_get_status(lp) == glp.GLP_OPT:
                lp_bound = float(glp.glp_get_obj_val(lp))  # the relaxation bounds every integer solution
            parm = glp.glp_iocp()
            glp.glp_init_iocp(parm)
            parm.presolve = glp.GLP_OFF if lp_ret == 0 else glp.GLP_ON
            parm.tm_lim = max(1, tm - int((time.perf_counter() - started) * 1000))
            parm.mip_gap, parm.msg_lev = float(mip_gap), msg
            parm.fp_heur = glp.GLP_ON
            for cut in GLPK_CUTS:
                setattr(parm, cut, glp.GLP_ON)
            for key, val in (options or {}).items():
                setattr(parm, key, val)
            ret = glp.glp_intopt(lp, parm)
            st = glp.glp_mip_status(lp)
            has = st in (glp.GLP_OPT, glp.GLP_FEAS)
            value_of = glp.glp_mip_col_val
        else:
            parm = glp.glp_smcp()
            glp.glp_init_smcp(parm)
            parm.presolve, parm.tm_lim, parm.msg_lev = glp.GLP_ON, tm, msg
            ret = glp.glp_simplex(lp, parm)
            st = glp.glp_get_status(lp)
            has = st in (glp.GLP_OPT, glp.GLP_FEAS)
            value_of = glp.glp_get_col_prim
        if has and ret in (0, glp.GLP_EMIPGAP):
            status = "optimal"  # proven within the requested gap
        elif ret == glp.GLP_ETMLIM:
            status = "time_limit"
        elif st == glp.GLP_NOFEAS or ret == glp.GLP_ENOPFS:
            status = "infeasible"
        elif st == glp.GLP_UNBND or ret == glp.GLP_ENODFS:
            status = "unbounded"
        else:
            status = "error"
        x = np.array([value_of(lp, j + 1) for j in range(n)]) if has else None
        if not form.is_int.any() and status == "optimal":
            lp_bound = float(glp.glp_get_obj_val(lp))
        elif status == "optimal" and x is not None:  # proven within mip_gap of GLPK's own relative measure
            best = float(form.c @ x + form.c0)
            lp_bound = best - float(mip_gap) * abs(best) if lp_bound is None else max(lp_bound, best - float(mip_gap) * abs(best))
    finally:
        glp.glp_delete_prob(lp)
    return solution_of(form, x, status, started, lp_bound)


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
