"""Solve the offline optimum with GLPK (in-process, swiglpk) or HiGHS (highspy), always with a
time limit and a MIP gap, and turn every solver outcome into a result or a clear `SolverError`.

`OptimumProblem` builds and compiles the Pyomo model once for a job and horizon; each window is
then only new bounds and costs (`solve_window`), which is what makes hundreds of windows cheap.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import pyomo.environ as pe

from ..errors import SolverError
from ..jobs.job import Job
from .matrix import compile_model, with_updates
from .model import BILLINGS, build_model
from .solvers import glpk as _glpk  # noqa: F401  (registers "swiglpk" with Pyomo's SolverFactory)
from .solvers.backends import solve_form

SOLVERS = ("glpk", "highs")
DEFAULT_GAP = 1e-4


@dataclass(frozen=True)
class OptimumResult:
    o: np.ndarray
    s: np.ndarray
    objective: float  # the model's utility: the simulator's under "fractional" billing, a lower bound under "full"
    status: str  # "optimal" (within the gap) or "time_limit" (feasible, not proven)
    solver: str  # "glpk" or "highs" (the MILP), "dp" (an exact dynamic programme, `dp/`)
    seconds: float
    bound: float | None = None  # proven upper bound on the utility (None: the solver gave none)
    gap: float | None = None  # (bound - objective) / |objective|: the result is proven within it (None: unknown)


def solve_model(m: pe.ConcreteModel, solver: str = "glpk", time_limit: float = 60.0, mip_gap: float = DEFAULT_GAP,
                tee: bool = False) -> tuple[str, float]:
    """Solve a Pyomo model in place through Pyomo's solver interfaces; returns (status, objective).

    GLPK goes through the "swiglpk" plugin, HiGHS through Pyomo's APPSI interface to highspy: two
    independent paths from the same model, which the agreement tests compare.
    """
    if solver not in SOLVERS:
        raise SolverError(f"unknown solver {solver!r}; use one of {', '.join(SOLVERS)}")
    if not (time_limit and time_limit > 0) or mip_gap is None or not (mip_gap >= 0):
        raise SolverError(f"need a positive time limit and a non-negative gap (got {time_limit}, {mip_gap})")
    if solver == "glpk":
        res = pe.SolverFactory("swiglpk").solve(m, timelimit=time_limit, mip_gap=mip_gap, tee=tee)
        status = str(res.solver.termination_condition)
        has = bool(res.solver.has_solution)
    else:
        from pyomo.contrib.appsi.solvers.highs import Highs

        opt = Highs()
        if not opt.available():
            raise SolverError("HiGHS is not available: pip install highspy")
        opt.config.time_limit, opt.config.mip_gap = float(time_limit), float(mip_gap)
        opt.config.load_solution, opt.config.stream_solver = False, tee
        try:
            res = opt.solve(m)
            if res.termination_condition.name == "infeasible":  # presolve has called feasible problems infeasible
                opt.highs_options = {**opt.highs_options, "presolve": "off"}  # (as `solvers.highs`): ask again
                res = opt.solve(m)
        except Exception as exc:  # APPSI raises on malformed models
            raise SolverError(f"HiGHS could not solve the model: {exc}") from None
        status = res.termination_condition.name
        has = res.best_feasible_objective is not None
        if has:
            res.solution_loader.load_vars()
    if not has:
        if "nfeasible" in status:
            raise SolverError(f"{solver}: the model is infeasible")
        raise SolverError(f"{solver}: no solution (status {status}) within {time_limit:g} s")
    ok = status in ("optimal",)
    return ("optimal" if ok else "time_limit"), float(pe.value(m.utility))


class OptimumProblem:
    """The optimum of one job over `horizon` slots, compiled once and solved per window; `billing` is
    the simulator's (`SimSettings.billing`) that its schedule will be replayed under."""

    def __init__(self, job: Job, horizon: int, slot_hours: float, must_finish: bool = True,
                 billing: str = "fractional"):
        if billing not in BILLINGS:
            raise SolverError(f"billing must be one of {', '.join(BILLINGS)}, got {billing!r}")
        self.job, self.horizon, self.slot_hours = job, int(horizon), float(slot_hours)
        self.must_finish, self.billing = must_finish, billing
        self.forms_: dict = {}
        self.refund_: dict = {}

    def compiled(self, constant_od: bool):
        """The compiled model; the variant with the on-demand symmetry cut needs a constant price."""
        if constant_od not in self.forms_:
            ones = np.ones(self.horizon)
            model = build_model(np.full(self.horizon, self.job.n_max), ones, ones, self.job, self.slot_hours,
                                self.must_finish, od_shift_cut=constant_od, billing=self.billing)
            form = compile_model(model)
            names = ("o", "s", "z_o", "z_s") if self.billing == "fractional" else ("o", "s")
            if any(np.any(form.index[k] < 0) for k in names):
                raise SolverError("internal: the compiled optimum lost allocation columns")
            if self.billing == "fractional":  # refund columns z[t, k] = bit k of the count x rho[t]
                keys = list(model.z_o.index_set())
                self.refund_[constant_od] = (np.array([t for t, _ in keys]), np.array([2.0 ** k for _, k in keys]))
            self.forms_[constant_od] = form
        return self.forms_[constant_od]

    def solve_window(self, avail, spot_price, od_price, solver: str = "glpk", time_limit: float = 60.0,
                     mip_gap: float = DEFAULT_GAP, incumbents=None, bound: float | None = None) -> OptimumResult:
        """The optimum of one window. `incumbents`: schedules (o, s) known to be feasible (e.g. a baseline's);
        the best of them in the model's terms is HiGHS's starting incumbent, and with either solver the result
        is never worse than it. `bound`: a proven upper bound on the utility from elsewhere (a relaxation),
        kept if it is tighter than the solver's."""
        started = time.perf_counter()
        T = self.horizon
        avail = np.asarray(avail)[:T]
        sp = np.asarray(spot_price, dtype=float)[:T]
        od = np.asarray(od_price, dtype=float)[:T]
        if avail.shape != (T,):
            raise SolverError(f"the window has {avail.size} slots, the problem was built for {T}")
        for label, arr in (("spot price", sp), ("on-demand price", od)):
            if arr.shape != (T,) or not np.all(np.isfinite(arr)) or np.any(arr < 0):
                raise SolverError(f"the {label} must be a finite non-negative value for each of the {T} slots")
        dt = self.slot_hours
        constant_od = bool(np.all(od == od[0]))
        base = self.compiled(constant_od)
        o_cols, s_cols = base.index["o"], base.index["s"]
        cost = {tuple(o_cols): -od * dt, tuple(s_cols): -sp * dt}
        if self.billing == "fractional":
            slot, weight = self.refund_[constant_od]
            cost[tuple(base.index["z_o"])] = od[slot] * weight * dt
            cost[tuple(base.index["z_s"])] = sp[slot] * weight * dt
        form = with_updates(
            base,
            col_hi={tuple(s_cols): np.minimum(avail, self.job.n_max).astype(float)},
            cost=cost,
        )
        start = self._best_incumbent(incumbents or (), avail, sp, od)
        hint = None
        if start is not None and solver == "highs":
            # HiGHS can complete a partial start itself, but that sub-MIP ignores the time limit (a 24 s limit
            # took 55 s on the 720-slot H100 job), so the start is completed here, with the allocation fixed
            fix = {tuple(o_cols): start[0].astype(float), tuple(s_cols): start[1].astype(float)}
            try:
                full = solve_form(with_updates(form, col_lo=fix, col_hi=fix), solver,
                                  max(1.0, min(10.0, 0.3 * time_limit)), 1e-9)
                if full.x is not None:
                    hint = (np.arange(full.x.size), full.x)
            except SolverError:
                pass
        left = max(1.0, time_limit - (time.perf_counter() - started))  # the time limit is for the whole call
        try:
            sol = solve_form(form, solver, left, mip_gap, start=hint)
        except SolverError as exc:
            if start is None or "infeasible" in str(exc):
                raise
            sol = None  # no schedule of its own in time: the start stands
        if start is not None and (sol is None or start[2] > sol.objective + 1e-9):  # the solver did worse
            bound = bound if sol is None or sol.bound is None else (
                sol.bound if bound is None else min(bound, sol.bound))
            return self._result(start[0], start[1], start[2], "time_limit" if sol is None else sol.status,
                                solver, started, bound, mip_gap)
        o = np.round(sol.x[o_cols]).astype(np.int64)
        s = np.round(sol.x[s_cols]).astype(np.int64)
        if sol.bound is not None:
            bound = sol.bound if bound is None or not np.isfinite(bound) else min(bound, sol.bound)
        return self._result(o, s, float(sol.objective), sol.status, solver, started, bound, mip_gap)

    @staticmethod
    def _result(o, s, obj: float, status: str, solver: str, started: float, bound, mip_gap: float) -> OptimumResult:
        """The result with its proven gap; a time-out closed by an outside bound counts as proven."""
        if bound is not None and not np.isfinite(bound):
            bound = None
        gap = None if bound is None else max(0.0, bound - obj) / max(abs(obj), 1e-9)
        if status == "time_limit" and gap is not None and gap <= mip_gap:
            status = "optimal"
        return OptimumResult(o=np.asarray(o, dtype=np.int64), s=np.asarray(s, dtype=np.int64), objective=float(obj),
                             status=status, solver=solver, seconds=time.perf_counter() - started, bound=bound, gap=gap)

    def _best_incumbent(self, incumbents, avail, sp, od):
        """The best of the given schedules as (o, s, objective in the model's terms), replayed by the simulator
        (what it runs is what counts); None when none finishes where the job must."""
        from ..market.episodes import Episodes
        from ..simulation.settings import SimSettings
        from ..simulation.engine import simulate

        rows = [(np.asarray(o)[: self.horizon], np.asarray(s)[: self.horizon]) for o, s in incumbents]
        rows = [(o, s) for o, s in rows if o.shape == (self.horizon,) and s.shape == (self.horizon,)]
        if not rows:
            return None
        k, T, dt, job = len(rows), self.horizon, self.slot_hours, self.job
        ep = Episodes(np.tile(avail, (k, 1)), np.tile(sp, (k, 1)), np.tile(od, (k, 1)), np.full(k, T), dt,
                      tuple(f"start{i}" for i in range(k)))
        plan_o = np.stack([o for o, _ in rows]).astype(np.int64)
        plan_s = np.stack([s for _, s in rows]).astype(np.int64)

        class Plan:
            name = "start"

            def reset(self, ctx):
                pass

            def act(self, obs):
                return plan_o[:, obs.t], plan_s[:, obs.t]

        try:
            res = simulate(Plan(), ep, job, SimSettings(billing=self.billing))
        except Exception:  # e.g. a horizon shorter than the job's: no start then
            return None
        if self.billing == "fractional":
            value = res.value  # the model's objective is the simulator's utility
        else:  # the model values the job at the end of its finishing slot
            ends = np.ceil(res.completion_h / dt - 1e-9) * dt
            value = job.value_at(np.where(res.done, ends, np.nan))
        objective = value - res.cost
        ok = res.done if self.must_finish else np.ones(k, dtype=bool)
        if not ok.any():
            return None
        best = int(np.argmax(np.where(ok, objective, -np.inf)))
        return res.arrays["o"][best, :T].copy(), res.arrays["s"][best, :T].copy(), float(objective[best])


def solve_optimum(avail, spot_price, od_price, job: Job, slot_hours: float, solver: str = "glpk",
                  time_limit: float = 60.0, mip_gap: float = DEFAULT_GAP, must_finish: bool = True,
                  billing: str = "fractional") -> OptimumResult:
    """Build and solve the optimum of one window; the schedule is what the simulator replays."""
    problem = OptimumProblem(job, len(np.asarray(avail)), slot_hours, must_finish, billing)
    return problem.solve_window(avail, spot_price, od_price, solver, time_limit, mip_gap)
