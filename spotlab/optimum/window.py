"""The window problem of committed horizon control (SPEC §6, A1): the optimum's model over the next w slots.

At a re-planning slot the online policy knows the true state (time, work left, the allocation that ran in
the previous slot and the overhead still pending) and forecasts of availability and prices for the next
w slots. The window problem is the offline model of `model.py` on those w slots, started from that state,
plus a *terminal value* for the work left at the end of the window, without which a plan would push all
work past its end (where it costs nothing) [ours]:

    terminal(R') = V(T_est) - c_unit * R',   T_est = end of window + delta + R' / H(N_max),

i.e. the value at the earliest completion still possible (finishing at full speed after one more restart)
minus the cost of the remaining work at a reference price per work unit (`terminal_price` $/GPU-h, which
the policy sets from its forecasts; at N_max GPUs one work unit takes N_max / H(N_max) GPU-hours). V is
concave in T (flat, then a linear decrease from d to gamma*d, then steeply down), so the terminal value is
the minimum of three linear cuts. A job finished inside the window earns V at the end of its finishing
slot, as in the offline model.

Speed: the Pyomo model is built and compiled once per (job, w, pending overhead, constant on-demand
price); the state enters only through fixed columns (`state[...]`), bounds and objective coefficients,
so each solve only copies a few arrays before calling the solver. The pending overhead changes
coefficients, but it takes few values (delta - k * slot), so one compiled form per value is cached.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np
import pyomo.environ as pe

from ..errors import SolverError
from ..job import Job
from .matrix import StandardForm, compile_model, solve_form, with_updates
from .model import add_allocation

STATE = ("o0", "s0", "y0", "R", "tau")


@dataclass(frozen=True)
class WindowState:
    """The true state of one job at the first slot of a window."""

    time_h: float  # hours since the job started, at the start of the window's first slot
    remaining: float  # work units left
    prev_o: int = 0  # allocation that ran in the previous slot
    prev_s: int = 0
    pending_h: float = 0.0  # overhead still to pay if that allocation is kept


@dataclass(frozen=True)
class WindowPlan:
    o: np.ndarray
    s: np.ndarray
    work: np.ndarray  # work units the plan counts on per slot
    objective: float
    status: str  # "optimal" or "time_limit"
    seconds: float


def terminal_cuts(job: Job, slot_hours: float) -> list[tuple[float, float]]:
    """(intercept, slope) of the cuts `v <= intercept - slope * (T_est - d)` of the terminal value."""
    d, hard, v0 = job.deadline_h, job.hard_deadline_h, job.value
    steep = (v0 + max(job.miss_penalty, 0.0)) / slot_hours  # past the hard deadline: a miss per slot
    cuts = [(v0, 0.0)]
    if hard > d + 1e-12:
        cuts.append((v0, v0 / (hard - d)))
        cuts.append((-steep * (hard - d), steep))  # 0 at gamma*d, then steeply down
    else:
        cuts.append((v0, steep))
    return cuts


def build_window_model(job: Job, w: int, slot_hours: float, pending_h: float = 0.0,
                       od_shift_cut: bool = True) -> pe.ConcreteModel:
    """Pyomo MILP of the window problem with placeholder data (see the module docstring)."""
    T, dt = int(w), float(slot_hours)
    m = pe.ConcreteModel(name="spotlab_window_problem")
    m.S = pe.Set(initialize=STATE, ordered=True)
    m.state = pe.Var(m.S)  # fixed through bounds at each solve
    add_allocation(m, np.full(T, job.n_max), job, dt, od_shift_cut,
                   prev=(m.state["o0"], m.state["s0"], m.state["y0"]))
    # Overhead still pending from a reconfiguration before the window: binds while the allocation is kept
    # (a new reconfiguration's own rows are at least as tight, so the row is valid in every case).
    k_pending = int(math.ceil(pending_h / dt - 1e-9)) if pending_h > 1e-12 else 0
    m.P = pe.RangeSet(0, k_pending - 1) if k_pending else pe.Set(initialize=[])
    m.w_pending = pe.Constraint(m.P, rule=lambda m, k: m.w[k] <= m.rate[k] * (
        dt - min(dt, max(0.0, pending_h - k * dt))) if k < T else pe.Constraint.Skip)

    big = float(job.work)
    m.f = pe.Var(m.T, domain=pe.Binary)  # finished by the end of slot t
    m.f_mono = pe.Constraint(m.T, rule=lambda m, t: m.f[t] >= m.f[t - 1] if t > 0 else pe.Constraint.Skip)
    m.cum = pe.Var(m.T, domain=pe.NonNegativeReals)
    m.cum_def = pe.Constraint(m.T, rule=lambda m, t: m.cum[t] == m.w[t] + (m.cum[t - 1] if t > 0 else 0))
    m.progress = pe.Constraint(m.T, rule=lambda m, t: m.cum[t] >= m.state["R"] - big * (1 - m.f[t]))

    # terminal value of the work left R' (0 when finished inside the window)
    m.term = pe.Var(["Rp", "v"], bounds=lambda _, k: (0, None) if k == "Rp" else (None, None))
    Rp, v = m.term["Rp"], m.term["v"]
    m.Rp_def = pe.Constraint(expr=Rp >= m.state["R"] - m.cum[T - 1])
    cuts = terminal_cuts(job, dt)
    horizon_h = job.hard_deadline_h + (T + 1) * dt + job.overhead_h
    big_v = job.value + max(job.miss_penalty, 0.0) + sum(abs(b) for _, b in cuts) * horizon_h + abs(cuts[-1][0])
    m.K = pe.RangeSet(0, len(cuts) - 1)
    last = m.f[T - 1]
    # T_est - d = tau + delta + R'/H(N_max) - d, where tau = time at the end of the window (a fixed column)
    m.v_cut = pe.Constraint(m.K, rule=lambda m, k: v <= cuts[k][0] - cuts[k][1] * (
        m.state["tau"] + job.overhead_h + Rp / job.max_rate - job.deadline_h) + big_v * last)
    m.v_done = pe.Constraint(expr=v <= big_v * (1 - last))
    # Objective with placeholder coefficients; every solve sets the real ones (prices, value by slot,
    # terminal price) on the compiled form.
    m.utility = pe.Objective(expr=sum(m.f[t] for t in m.T) + v - sum(m.o[t] + m.s[t] for t in m.T) - Rp,
                             sense=pe.maximize)
    return m


class WindowProblem:
    """The window problem of one job and window length w, compiled once per pending-overhead value."""

    def __init__(self, job: Job, w: int, slot_hours: float):
        if isinstance(w, bool) or not isinstance(w, (int, np.integer)) or w < 1:
            raise SolverError(f"window w must be a whole number of slots >= 1 (got {w!r})")
        self.job, self.w, self.slot_hours = job, int(w), float(slot_hours)
        self.forms_: dict[tuple[float, bool], StandardForm] = {}
        self.n_solves_ = 0

    def compiled(self, pending_h: float, constant_od: bool) -> StandardForm:
        key = (round(float(pending_h), 9), bool(constant_od))
        if key not in self.forms_:
            model = build_window_model(self.job, self.w, self.slot_hours, key[0], key[1])
            form = compile_model(model)
            for name in ("o", "s", "f", "cum", "state", "term"):
                if np.any(form.index[name] < 0):
                    raise SolverError(f"internal: the compiled window problem lost its {name!r} columns")
            self.forms_[key] = form
        return self.forms_[key]

    def solve(self, state: WindowState, avail, spot_price, od_price, terminal_price: float,
              slots_left: int | None = None, solver: str = "highs", time_limit: float = 10.0,
              mip_gap: float = 1e-3, urgency: float = 0.0) -> WindowPlan:
        """Plan the next w slots from `state`, given (forecast) availability and prices for them.

        `slots_left`: slots before the hard deadline (nothing can run after it); `terminal_price`: the
        reference $/GPU-h of the work left at the end of the window. `urgency`: work done by the end of a
        slot earns this share of its reference cost per slot still left in the window, so that among
        plans of (nearly) equal cost the one that makes progress earlier wins: under forecast error a
        plan that finishes exactly at the deadline is the first to miss it.
        """
        started = time.perf_counter()
        job, T, dt = self.job, self.w, self.slot_hours
        a = np.asarray(avail, dtype=float)
        sp = np.asarray(spot_price, dtype=float)
        od = np.asarray(od_price, dtype=float)
        for label, arr in (("availability", a), ("spot price", sp), ("on-demand price", od)):
            if arr.shape != (T,) or not np.all(np.isfinite(arr)) or np.any(arr < 0):
                raise SolverError(f"window problem: the {label} must be {T} finite values >= 0 (got {arr!r})")
        if not (math.isfinite(terminal_price) and terminal_price >= 0):
            raise SolverError(f"window problem: terminal_price must be finite and >= 0 (got {terminal_price!r})")
        if not (math.isfinite(state.remaining) and 0 < state.remaining <= job.work * (1 + 1e-9)):
            raise SolverError(f"window problem: remaining work {state.remaining!r} must be in (0, {job.work}]")
        running = state.prev_o + state.prev_s > 0
        pending = state.pending_h if running else 0.0
        form = self.compiled(pending, bool(np.all(od == od[0])))
        ix = form.index
        o_cols, s_cols, f_cols, st = ix["o"], ix["s"], ix["f"], ix["state"]
        left = T if slots_left is None else max(0, min(T, int(slots_left)))
        can_run = (np.arange(T) < left).astype(float)
        s_hi = np.floor(np.minimum(a, job.n_max) + 1e-9) * can_run
        o_hi = np.full(T, float(job.n_max)) * can_run
        tau_end = state.time_h + T * dt
        fixed = np.array([state.prev_o, state.prev_s, 1.0 if running else 0.0, state.remaining, tau_end], float)
        # value if finished by the end of slot t, as objective coefficients of the monotone f[t]
        v_end = job.value_at(state.time_h + (np.arange(T) + 1) * dt)
        c_f = v_end - np.append(v_end[1:], 0.0)
        earliest = state.remaining / job.max_rate + (pending if running else 0.0)
        f_hi = ((np.arange(T) + 1) * dt >= earliest - 1e-9).astype(float)
        per_unit = job.n_max / job.max_rate  # GPU-hours per work unit at N_max
        form = with_updates(
            form,
            col_lo={tuple(st): fixed},
            col_hi={tuple(st): fixed, tuple(s_cols): s_hi, tuple(o_cols): o_hi, tuple(f_cols): f_hi},
            cost={tuple(o_cols): -od * dt, tuple(s_cols): -sp * dt, tuple(f_cols): c_f,
                  tuple(ix["cum"]): np.full(T, float(urgency) * terminal_price * per_unit),
                  (int(ix["term"][0]),): -terminal_price * per_unit, (int(ix["term"][1]),): 1.0},
        )
        sol = solve_form(form, solver, time_limit, mip_gap)
        self.n_solves_ += 1
        o = np.round(sol.x[o_cols]).astype(np.int64)
        s = np.round(sol.x[s_cols]).astype(np.int64)
        return WindowPlan(o=o, s=s, work=np.asarray(sol.x[ix["w"]], dtype=float),
                          objective=float(sol.objective), status=sol.status,
                          seconds=time.perf_counter() - started)
