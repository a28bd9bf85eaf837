"""The optimum's model in matrix form, compiled once and re-solved for many windows.

A window of a trace changes only the spot availability (upper bounds of `s[t]`) and the prices
(objective coefficients of `o[t]`, `s[t]`), so the Pyomo model is built and compiled once per job
and horizon (`compile_model`), and every window is a cheap update of bounds and costs (`with_updates`)
solved directly by GLPK (`solvers/glpk.py`) or HiGHS (`solvers/highs.py`), both answering a `MatrixSolution`.
Everything GLPK would abort on is checked first (`validate`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace

import numpy as np
import pyomo.environ as pe
from pyomo.repn.plugins.standard_form import LinearStandardFormCompiler

from ..errors import SolverError


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


def solution_of(form: StandardForm, x, status: str, started: float,
                min_bound: float | None = None) -> MatrixSolution:
    """A backend's answer as a `MatrixSolution` (integer columns rounded, the objective in the model's sense).
    `min_bound` is the solver's bound on `c@x + c0` (a minimisation), turned into the model's sense."""
    if x is not None:
        x = np.where(form.is_int, np.round(x), x)
    obj = form.objective_value(x) if x is not None else None
    bound = None if min_bound is None else (-min_bound if form.maximize else min_bound)
    return MatrixSolution(x=x, objective=obj, status=status, seconds=time.perf_counter() - started, bound=bound)
