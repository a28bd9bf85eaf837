"""GLPK solved in-process through swiglpk, registered with Pyomo's solver factory as "swiglpk".

Pyomo's own GLPK interface runs the `glpsol` executable; this one compiles the Pyomo model to a
sparse matrix (Pyomo's standard-form compiler) and calls the GLPK library directly. GLPK stops the
whole process (abort) on invalid input such as a column with lower bound above its upper bound, a
duplicate matrix entry or a NaN, so everything is validated *before* GLPK is called and reported as
a `SolverError` instead.
"""

from __future__ import annotations

import math
import time

import numpy as np
import pyomo.environ as pe
from pyomo.opt import SolverFactory, SolverResults, SolverStatus, TerminationCondition
from pyomo.repn.plugins.standard_form import LinearStandardFormCompiler

from ..errors import SolverError

try:
    import swiglpk as glp
except ImportError:  # pragma: no cover - swiglpk is a hard dependency
    glp = None


def _validated_standard_form(model: pe.ConcreteModel):
    """Matrix form of the model, checked for everything that would make GLPK abort."""
    try:
        sf = LinearStandardFormCompiler().write(model, mixed_form=True)
    except Exception as exc:  # Pyomo raises for non-linear or malformed expressions
        raise SolverError(f"the model is not a linear (mixed-integer) program GLPK can take: {exc}") from None
    if len(sf.objectives) != 1:
        raise SolverError(f"GLPK needs exactly one active objective, the model has {len(sf.objectives)}")
    A = sf.A.tocoo()
    A.sum_duplicates()
    A.eliminate_zeros()
    c = np.asarray(sf.c.toarray()).ravel() if sf.c.shape[1] else np.zeros(0)
    rhs = np.asarray(sf.rhs, dtype=float)
    cols = sf.columns
    if not cols:
        raise SolverError("the model has no free variables")
    for label, arr in (("constraint coefficient", A.data), ("objective coefficient", c), ("right-hand side", rhs)):
        if arr.size and not np.all(np.isfinite(arr)):
            raise SolverError(f"a {label} is NaN or infinite; check the trace and job data")
    lbs, ubs, ints = [], [], []
    for v in cols:
        lb = -math.inf if v.lb is None else float(v.lb)
        ub = math.inf if v.ub is None else float(v.ub)
        if math.isnan(lb) or math.isnan(ub) or lb > ub:
            raise SolverError(f"variable {v.name} has empty bounds [{lb}, {ub}]")
        is_int = v.is_integer() or v.is_binary()
        if is_int:
            lb = math.ceil(lb - 1e-9) if math.isfinite(lb) else lb
            ub = math.floor(ub + 1e-9) if math.isfinite(ub) else ub
            if lb > ub:
                raise SolverError(f"integer variable {v.name} has no integer value in its bounds")
        lbs.append(lb)
        ubs.append(ub)
        ints.append(is_int)
    return sf, A, c, rhs, lbs, ubs, ints


def _col_bounds(lb: float, ub: float):
    if math.isinf(lb) and math.isinf(ub):
        return glp.GLP_FR, 0.0, 0.0
    if math.isinf(ub):
        return glp.GLP_LO, lb, 0.0
    if math.isinf(lb):
        return glp.GLP_UP, 0.0, ub
    if lb == ub:
        return glp.GLP_FX, lb, ub
    return glp.GLP_DB, lb, ub


@SolverFactory.register("swiglpk", doc="GLPK in-process through swiglpk (no glpsol executable)")
class SwiglpkSolver:
    """Pyomo solver plugin: `SolverFactory("swiglpk").solve(model, timelimit=10, mip_gap=1e-4)`."""

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
        if timelimit is None or not (timelimit > 0) or mip_gap is None or not (mip_gap >= 0):
            raise SolverError("GLPK needs a positive time limit and a non-negative MIP gap")
        sf, A, c, rhs, lbs, ubs, ints = _validated_standard_form(model)
        m, n = A.shape
        lp = glp.glp_create_prob()
        started = time.perf_counter()
        try:
            glp.glp_term_out(glp.GLP_ON if tee else glp.GLP_OFF)
            glp.glp_set_obj_dir(lp, glp.GLP_MIN)
            glp.glp_add_cols(lp, n)
            for j in range(n):
                kind, lo, up = _col_bounds(lbs[j], ubs[j])
                glp.glp_set_col_bnds(lp, j + 1, kind, lo, up)
                if ints[j]:
                    glp.glp_set_col_kind(lp, j + 1, glp.GLP_IV)
                glp.glp_set_obj_coef(lp, j + 1, float(c[j]) if j < c.size else 0.0)
            if m:
                glp.glp_add_rows(lp, m)
                for i, row in enumerate(sf.rows):
                    kind = {0: glp.GLP_FX, 1: glp.GLP_UP, -1: glp.GLP_LO}[row.bound_type]
                    glp.glp_set_row_bnds(lp, i + 1, kind, float(rhs[i]), float(rhs[i]))
                nnz = A.nnz
                ia, ja, ar = glp.intArray(nnz + 1), glp.intArray(nnz + 1), glp.doubleArray(nnz + 1)
                for k, (i, j, v) in enumerate(zip(A.row.tolist(), A.col.tolist(), A.data.tolist()), start=1):
                    ia[k], ja[k], ar[k] = i + 1, j + 1, v
                glp.glp_load_matrix(lp, nnz, ia, ja, ar)
            mip = any(ints)
            if mip:
                parm = glp.glp_iocp()
                glp.glp_init_iocp(parm)
                parm.presolve = glp.GLP_ON
                parm.tm_lim = max(1, int(timelimit * 1000))
                parm.mip_gap = float(mip_gap)
                parm.msg_lev = glp.GLP_MSG_ALL if tee else glp.GLP_MSG_OFF
                ret = glp.glp_intopt(lp, parm)
                status = glp.glp_mip_status(lp)
                has_sol = status in (glp.GLP_OPT, glp.GLP_FEAS)
                get_val, obj = glp.glp_mip_col_val, glp.glp_mip_obj_val(lp)
            else:
                parm = glp.glp_smcp()
                glp.glp_init_smcp(parm)
                parm.presolve = glp.GLP_ON
                parm.tm_lim = max(1, int(timelimit * 1000))
                parm.msg_lev = glp.GLP_MSG_ALL if tee else glp.GLP_MSG_OFF
                ret = glp.glp_simplex(lp, parm)
                status = glp.glp_get_status(lp)
                has_sol = status in (glp.GLP_OPT, glp.GLP_FEAS)
                get_val, obj = glp.glp_get_col_prim, glp.glp_get_obj_val(lp)
            results = SolverResults()
            results.solver.name = "swiglpk"
            results.solver.wallclock_time = time.perf_counter() - started
            results.solver.return_code = int(ret)
            if status == glp.GLP_OPT and ret == 0:
                tc = TerminationCondition.optimal
            elif ret == glp.GLP_ETMLIM:
                tc = TerminationCondition.maxTimeLimit
            elif ret == glp.GLP_EMIPGAP or (has_sol and ret == 0):
                tc = TerminationCondition.optimal  # stopped at the requested relative gap
            elif status in (glp.GLP_NOFEAS,) or ret == glp.GLP_ENOPFS:
                tc = TerminationCondition.infeasible
            elif status == glp.GLP_UNBND or ret == glp.GLP_ENODFS:
                tc = TerminationCondition.unbounded
            else:
                tc = TerminationCondition.error
            results.solver.termination_condition = tc
            results.solver.status = SolverStatus.ok if has_sol else (
                SolverStatus.aborted if tc is TerminationCondition.maxTimeLimit else SolverStatus.warning)
            sense = sf.objectives[0].sense
            offset = float(np.asarray(sf.c_offset).ravel()[0]) if np.size(sf.c_offset) else 0.0
            results.problem.lower_bound = results.problem.upper_bound = None
            results.solver.has_solution = has_sol
            results.solver.objective = (obj + offset) * (1 if sense == pe.minimize else -1) if has_sol else None
            if has_sol and load_solutions:
                for j, v in enumerate(sf.columns):
                    val = get_val(lp, j + 1)
                    v.set_value(round(val) if ints[j] else val, skip_validation=True)
                for var, expr in sf.eliminated_vars:
                    var.set_value(pe.value(expr), skip_validation=True)
            return results
        finally:
            glp.glp_delete_prob(lp)
