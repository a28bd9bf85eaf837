"""The optimum's model in matrix form, compiled once and re-solved for many windows.

A window of a trace changes only the spot availability (upper bounds of `s[t]`) and the prices
(objective coefficients of `o[t]`, `s[t]`), so the Pyomo model is built and compiled once per job
and horizon (`compile_model`), and every window is a cheap update of bounds and costs solved
directly by GLPK (swiglpk) or HiGHS (highspy). Everything GLPK would abort on is checked first.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, replace

import numpy as np
import pyomo.environ as pe
from pyomo.repn.plugins.standard_form import LinearStandardFormCompiler

from ..errors import SolverError
from .solvers.highs import quiet_highs

try:
    import swiglpk as glp
except ImportError:  # pragma: no cover - a hard dependency
    glp = None


@dataclass(frozen=True, eq=False)
class StandardForm:
    """`min c@x + c0` s.t. `row_lo <= A@x <= row_hi`, `col_lo <= x <= col_hi`, `x[is_int]` integer.

    `maximize` says the Pyomo objective was a maximisation (its value is `-(c@x + c0)`).
    `index` maps a Pyomo indexed variable name to the column of each of its indices (-1 = absent).
    """

    A: object  # scipy.sparse.csr_array
    row_lo: np.ndarray
    row_hi: np.ndarray
    col_lo: np.ndarray
    col_hi: np.ndarray
    is_int: np.ndarray
    c: np.ndarray
    c0: float
    maximize: bool
    index: dict
    columns: tuple = ()

    def objective_value(self, x: np.ndarray) -> float:
        v = float(self.c @ x + self.c0)
        return -v if self.maximize else v


def compile_model(model: pe.ConcreteModel, keep_columns: bool = False) -> StandardForm:
    """Compile a linear Pyomo model to a validated `StandardForm`."""
    try:
        sf = LinearStandardFormCompiler().write(model, mixed_form=True)
    except Exception as exc:  # Pyomo raises for non-linear or malformed expressions
        raise SolverError(f"the model is not a linear (mixed-integer) program: {exc}") from None
    if len(sf.objectives) != 1:
        raise SolverError(f"the model needs exactly one active objective, it has {len(sf.objectives)}")
    A = sf.A.tocsr()
    A.sum_duplicates()
    A.data = _negligible_to_zero(A.data)
    A.eliminate_zeros()
    n = A.shape[1]
    c = np.asarray(sf.c.toarray(), dtype=float).ravel() if sf.c.shape[1] else np.zeros(n)
    c = _negligible_to_zero(c)
    c0 = float(np.asarray(sf.c_offset, dtype=float).ravel()[0]) if np.size(sf.c_offset) else 0.0
    rhs = np.asarray(sf.rhs, dtype=float)
    kinds = np.array([r.bound_type for r in sf.rows], dtype=int)
    row_lo = np.where(kinds <= 0, rhs, -np.inf)
    row_hi = np.where(kinds >= 0, rhs, np.inf)
    col_lo = np.array([-np.inf if v.lb is None else float(v.lb) for v in sf.columns])
    col_hi = np.array([np.inf if v.ub is None else float(v.ub) for v in sf.columns])
    is_int = np.array([v.is_integer() or v.is_binary() for v in sf.columns], dtype=bool)
    pos = {id(v): j for j, v in enumerate(sf.columns)}
    index: dict[str, np.ndarray] = {}
    for var in model.component_objects(pe.Var, active=True):
        if var.is_indexed():
            index[var.name] = np.array([pos.get(id(var[k]), -1) for k in var.index_set()], dtype=np.int64)
    if sf.eliminated_vars:
        raise SolverError("the model has variables the compiler eliminated; they cannot be re-solved in matrix form")
    form = StandardForm(A, row_lo, row_hi, col_lo, col_hi, is_int, c, c0,
                        maximize=sf.objectives[0].sense == pe.maximize, index=index,
                        columns=tuple(sf.columns) if keep_columns else ())
    validate(form)
    return form


def _negligible_to_zero(values: np.ndarray) -> np.ndarray:
    """Coefficients below 1e-12 of the largest are rounding noise (e.g. a throughput offset of
    1e-112); GLPK's scaling turns them into spurious infeasibility, so they are dropped."""
    values = np.asarray(values, dtype=float)
    finite = values[np.isfinite(values)]
    scale = max(1.0, float(np.abs(finite).max())) if finite.size else 1.0
    return np.where(np.abs(values) < 1e-12 * scale, 0.0, values)


def validate(form: StandardForm) -> None:
    """Raise `SolverError` for anything that would make GLPK abort the process."""
    A = form.A
    for label, arr in (("constraint coefficient", A.data), ("objective coefficient", form.c)):
        if arr.size and not np.all(np.isfinite(arr)):
            raise SolverError(f"a {label} is NaN or infinite; check the trace and job data")
    for label, lo, hi in (("row", form.row_lo, form.row_hi), ("column", form.col_lo, form.col_hi)):
        if np.any(np.isnan(lo)) or np.any(np.isnan(hi)):
            raise SolverError(f"a {label} bound is NaN; check the trace and job data")
        bad = np.flatnonzero(lo > hi)
        if bad.size:
            raise SolverError(f"{label} {bad[0]} has empty bounds [{lo[bad[0]]}, {hi[bad[0]]}]")
        if np.any(lo == np.inf) or np.any(hi == -np.inf):
            raise SolverError(f"a {label} bound is infinite on the wrong side")
    ilo, ihi = np.ceil(form.col_lo[form.is_int] - 1e-9), np.floor(form.col_hi[form.is_int] + 1e-9)
    if np.any(ilo > ihi):
        raise SolverError("an integer variable has no integer value within its bounds")
    if A.shape[1] == 0:
        raise SolverError("the model has no variables")


def with_updates(form: StandardForm, col_hi: dict | None = None, cost: dict | None = None,
                 col_lo: dict | None = None) -> StandardForm:
    """A copy with new bounds / objective coefficients for the given columns (the solver backends
    validate it before calling the solver). Keys are column index tuples, values arrays or scalars."""
    lo = form.col_lo.copy()
    hi = form.col_hi.copy()
    c = form.c.copy()
    for target, updates in ((lo, col_lo), (hi, col_hi)):
        for cols, vals in (updates or {}).items():
            target[np.asarray(cols)] = vals
    sign = -1.0 if form.maximize else 1.0  # the compiler stores a maximisation as min of -objective
    for cols, vals in (cost or {}).items():
        c[np.asarray(cols)] = sign * np.asarray(vals, dtype=float)
    return replace(form, col_lo=lo, col_hi=hi, c=_negligible_to_zero(c))


@dataclass(frozen=True)
class MatrixSolution:
    x: np.ndarray | None
    objective: float | None  # in the model's own sense
    status: str  # optimal | time_limit | infeasible | unbounded | error
    seconds: float
    bound: float | None = None  # proven bound on the objective, in the model's sense (None: not known)


def _glpk_bounds(lo: float, hi: float):
    if math.isinf(lo) and math.isinf(hi):
        return glp.GLP_FR, 0.0, 0.0
    if math.isinf(hi):
        return glp.GLP_LO, lo, 0.0
    if math.isinf(lo):
        return glp.GLP_UP, 0.0, hi
    if lo == hi:
        return glp.GLP_FX, lo, hi
    return glp.GLP_DB, lo, hi


GLPK_CUTS = ("gmi_cuts", "mir_cuts", "cov_cuts", "clq_cuts")


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
        for j in range(n):
            kind, a, b = _glpk_bounds(float(lo[j]), float(hi[j]))
            glp.glp_set_col_bnds(lp, j + 1, kind, a, b)
            if form.is_int[j]:
                glp.glp_set_col_kind(lp, j + 1, glp.GLP_IV)
            glp.glp_set_obj_coef(lp, j + 1, float(form.c[j]))
        glp.glp_set_obj_coef(lp, 0, float(form.c0))
        if m:
            glp.glp_add_rows(lp, m)
            for i in range(m):
                kind, a, b = _glpk_bounds(float(form.row_lo[i]), float(form.row_hi[i]))
                glp.glp_set_row_bnds(lp, i + 1, kind, a, b)
            nnz = A.nnz
            ia, ja, ar = glp.intArray(nnz + 1), glp.intArray(nnz + 1), glp.doubleArray(nnz + 1)
            for k, (i, j, v) in enumerate(zip(A.row.tolist(), A.col.tolist(), A.data.tolist()), start=1):
                ia[k], ja[k], ar[k] = i + 1, j + 1, v
            glp.glp_load_matrix(lp, nnz, ia, ja, ar)
        msg = glp.GLP_MSG_ALL if tee else glp.GLP_MSG_OFF
        tm = max(1, int(time_limit * 1000))
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
                return _finish(form, None, "infeasible", started)
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
    return _finish(form, x, status, started, lp_bound)


def solve_highs(form: StandardForm, time_limit: float, mip_gap: float, tee: bool = False,
                start: np.ndarray | None = None) -> MatrixSolution:
    """HiGHS through highspy on the same matrix; `start` = (columns, values) of a feasible schedule is given to
    it as the incumbent (the other columns HiGHS fills in itself)."""
    import highspy

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
    return _finish(form, x, status, started, bound if np.isfinite(bound) else None)


def _finish(form: StandardForm, x, status: str, started: float, min_bound: float | None = None) -> MatrixSolution:
    """`min_bound` is the solver's bound on `c@x + c0` (a minimisation), turned into the model's sense."""
    if x is not None:
        x = np.where(form.is_int, np.round(x), x)
    obj = form.objective_value(x) if x is not None else None
    bound = None if min_bound is None else (-min_bound if form.maximize else min_bound)
    return MatrixSolution(x=x, objective=obj, status=status, seconds=time.perf_counter() - started, bound=bound)


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
