"""The window problem of committed horizon control (SPEC §6, A1): the optimum's model over the next w slots,
followed by a fluid *tail* up to the hard deadline.

At a re-planning slot the online policy knows the true state (time, work left, the allocation that ran in
the previous slot and the overhead still pending) and forecasts of availability and prices for the next
w slots. The window problem is the offline model of `model.py` on those w slots, started from that state,
followed by what happens after the window [ours]:

- **The tail.** The time from the window's end to the hard deadline is cut into at most `blocks` blocks (one per
  slot when they fit, else finer after the soft deadline). In each block the job may buy on-demand GPU-hours and
  *expected* spot GPU-hours at their prices, up to the spot capacity the policy expects there (`TailForecast`: a
  certainty-equivalent view of what it cannot forecast), less the hours restarts are expected to stall the job
  (`TailForecast.stalled_hours`). The work g GPU-hours give in a block of L hours is at most L times the concave
  envelope of H at g / L (`work_segments`), so with beta > 0 many GPUs do less per GPU-hour than few. The value
  is taken at the end of the block in which the job finishes. Why a tail and not a terminal value, which made the
  plan defer work it then bought on demand or finished late: docs/decisions/chc-tail.md.
- **Finishing.** A job that must finish (the default) pays `finish_penalty` if the plan leaves it unfinished at
  the hard deadline (a soft constraint: the problem is always feasible, so a solver that finds no schedule is a
  bug or a time-out) and `shortfall_price` per unit of work beyond what the window and the whole tail can do, so
  that a plan that cannot finish does all it can. `must_finish=False` drops both: the plan then weighs finishing
  against the miss penalty, as the utility does (docs/decisions/chc-net-margin.md).
- **The safety net** forces N_max on-demand GPUs where the work left can only just be finished by the hard
  deadline. At the start of each later slot of the window, either the net does not fire or the plan runs N_max
  on-demand GPUs (what the net would impose), so a plan never counts on a slot the net would override.
  A job that need not finish inside a net (the net's give-up) may also stop there, as late as the net decides
  and never in the tail: nothing runs from then on and it earns minus the miss penalty. Whether to stop is
  decided at the true prices (see `solve`); a job no price could make pay stops at once (`_hopeless`); with the
  net off, `must_finish=False` lets the plan leave the job unfinished at the tail's end
  (docs/decisions/chc-give-up.md).
- **A forecast tail** (the oracle's, `TailForecast.forecast`) may be left unfinished, and before it the timing
  bias buys on-demand GPUs earlier, not later: on-demand hours deferred into the fluid tail land between its spot
  spells, where each switch costs a restart the tail does not model (docs/decisions/chc-oracle-tail.md).

Speed: the Pyomo model is compiled once per (job, w, blocks, pending overhead, constant on-demand price,
give-up); the state and the tail enter only through fixed columns, bounds and costs. `solve(method="auto")`
(CHC's default) solves the same problem, from the same numbers (`WindowTerms`), by the DP of `window_dp.py`,
proven within the gap in milliseconds; "milp" is the MILP alone (docs/decisions/window-solver.md).
"""

from __future__ import annotations

import math
import time
from dataclasses import replace
from typing import Any, Mapping, Sequence

import numpy as np
import pyomo.environ as pe

from ..errors import SolverError
from ..jobs.job import Job
from .matrix import StandardForm, compile_model, with_updates
from .model import add_allocation, link_finishing_slot, unused_capacity
from .solvers.backends import BACKENDS
from .solvers.highs import solve_highs
from .window_dp import WindowDP, dp_applies
from .window_types import TailForecast, WindowPlan, WindowState, WindowTerms, tail_blocks, work_segments

STATE = ("o0", "s0", "y0", "R")
# `solve_many` solves its windows' DPs together only for jobs of at most this many allocations (o, s): there a
# window's tables are a few hundred numbers and the batch saves the per-call overhead (the leaderboard's single
# instance, two allocations: 0.6x the time); with many (N 1..8: 36) the per-window DP's own allowed prefix is
# cheaper than the batch's padding (1.6-1.9x the time). Nor for fewer than LOCKSTEP_MIN_WINDOWS windows (3 leaderboard
# windows: 1.1-1.2x the time; 12: 0.74x). Both paths give the same plans. docs/benchmarks.md
LOCKSTEP_MAX_ALLOCATIONS = 4
LOCKSTEP_MIN_WINDOWS = 6
STOP_EPS = 1e-7  # work beyond the net's limit that makes a slot one the net would take over (MILP tolerance)
METHODS = ("auto", "dp", "milp")


def _take_from_end(hours: np.ndarray, amount: float) -> np.ndarray:
    """Each row of `hours` (last axis) less `amount` in all, taken from the last entries first, none below 0."""
    used = np.cumsum(hours[..., ::-1], axis=-1)
    return np.maximum(np.minimum(hours, used[..., ::-1] - amount), 0.0) if amount > 0 else hours


def _rows(values: Sequence, size: int) -> np.ndarray | None:
    """Per-window arrays of `size` numbers as one (windows, size) array; None unless every one has that shape."""
    arrays = [np.asarray(v, dtype=float) for v in values]
    if not all(x.shape == (size,) for x in arrays):
        return None
    return np.array(arrays).reshape(len(arrays), size)


def _finite_nonnegative(*arrays: np.ndarray) -> bool:
    """Whether every number of `arrays` is finite and >= 0 (one pass over all of them)."""
    every = np.concatenate([x.ravel() for x in arrays])
    return bool(np.isfinite(every).all()) and not bool((every < 0).any())


def _tail_rows(tails: Sequence[TailForecast], size: int) -> tuple[np.ndarray, ...]:
    """The tails' fields as (windows, size) arrays (hours, spot GPU-hours, spot price, on-demand price, stalled
    hours, mixed GPU-hours, mixed price; no stalled or mixed hours: 0), checked as `terms` checks a tail."""
    for tail in tails:
        if (tail.mixed_gpu_hours is None) != (tail.mixed_price is None):
            raise SolverError("window problem: the tail's mixed GPU-hours and mixed price come together")
    zero = np.zeros(size)
    fields = [[tail.hours for tail in tails], [tail.spot_gpu_hours for tail in tails],
              [tail.spot_price for tail in tails], [tail.od_price for tail in tails],
              [zero if tail.stalled_hours is None else tail.stalled_hours for tail in tails],
              [zero if tail.mixed_gpu_hours is None else tail.mixed_gpu_hours for tail in tails],
              [zero if tail.mixed_price is None else tail.mixed_price for tail in tails]]
    rows = [_rows(f, size) for f in fields]
    if any(r is None for r in rows) or not _finite_nonnegative(*rows):
        labels = ("hours", "spot GPU-hours", "spot price", "on-demand price", "stalled hours", "mixed GPU-hours",
                  "mixed price")
        for k in range(len(tails)):
            _check_values(tuple((label, f[k]) for label, f in zip(labels, fields)), size, "the tail's ")
    return tuple(rows)


def _check_values(named: tuple, size: int, whose: str) -> None:
    """Each of `named` ((label, values), ...) must be `size` finite values >= 0, else a `SolverError` naming the
    first that is not. All are checked at once: the window's terms check ten arrays per window and slot."""
    arrays = [np.asarray(arr, dtype=float) for _, arr in named]
    if all(arr.shape == (size,) for arr in arrays) and _finite_nonnegative(*arrays):
        return
    for (label, _), arr in zip(named, arrays):
        if arr.shape != (size,) or not np.all(np.isfinite(arr)) or np.any(arr < 0):
            raise SolverError(f"window problem: {whose}{label} must be {size} finite values >= 0 (got {arr!r})")


def _no_better_than_stopping(plan: WindowPlan, terms: WindowTerms) -> bool:
    """Whether a plan of a job that may stop is worth no more than stopping it (within the solver's tolerance)."""
    return plan.objective <= terms.stop_value + 1e-9 * max(1.0, abs(terms.stop_value))


def build_window_model(job: Job, w: int, slot_hours: float, pending_h: float = 0.0,
                       od_shift_cut: bool = True, blocks: int = 0, stops: bool = False) -> pe.ConcreteModel:
    """Pyomo MILP of the window problem with placeholder data (see the module docstring)."""
    T, dt = int(w), float(slot_hours)
    m = pe.ConcreteModel(name="spotlab_window_problem")
    m.S = pe.Set(initialize=STATE, ordered=True)
    m.state = pe.Var(m.S)  # fixed through bounds at each solve
    # The finishing slot is billed by use, as the simulator does: its unused end is refunded (`model.py`'s
    # exact linearisation), so a plan does not push the last bit of work into the fluid tail to avoid
    # paying a whole slot for it.
    slots = list(range(T))
    unused: dict = {}

    def unused_work(m):
        unused.update(unused_capacity(m, job, dt, slots))
        return unused

    add_allocation(m, np.full(T, job.n_max), job, dt, od_shift_cut,
                   prev=(m.state["o0"], m.state["s0"], m.state["y0"]), unused_work=unused_work)
    # Overhead still pending from a reconfiguration before the window: binds while the allocation is kept
    # (a new reconfiguration's own rows are at least as tight, so the row is valid in every case).
    k_pending = int(math.ceil(pending_h / dt - 1e-9)) if pending_h > 1e-12 else 0
    m.P = pe.RangeSet(0, k_pending - 1) if k_pending else pe.Set(initialize=[])
    m.w_pending = pe.Constraint(m.P, rule=lambda m, k: m.w[k] + unused[k] <= m.rate[k] * (
        dt - min(dt, max(0.0, pending_h - k * dt))) if k < T else pe.Constraint.Skip)

    big = float(job.work)
    m.f = pe.Var(m.T, domain=pe.Binary)  # finished by the end of slot t
    m.f_mono = pe.Constraint(m.T, rule=lambda m, t: m.f[t] >= m.f[t - 1] if t > 0 else pe.Constraint.Skip)
    link_finishing_slot(m, job, slots, {t: m.f[t] - (m.f[t - 1] if t > 0 else 0) for t in slots})
    m.cum = pe.Var(m.T, domain=pe.NonNegativeReals)
    m.cum_def = pe.Constraint(m.T, rule=lambda m, t: m.cum[t] == m.w[t] + (m.cum[t - 1] if t > 0 else 0))
    m.progress = pe.Constraint(m.T, rule=lambda m, t: m.cum[t] >= m.state["R"] - big * (1 - m.f[t]))

    # The safety net (the simulator's strict net): in slot k it fires unless the work left after the slot,
    # R - cum[k], could still be finished by N_max on-demand GPUs from slot k+1 with one restart; lim[k] =
    # H(N_max) * ((slots left after k) * dt - delta) is set per solve. Either R - cum[k] <= lim[k], or the
    # plan runs N_max on-demand GPUs in slot k (z[k] = 1, what the net would impose), or it is done (f[k] = 1).
    m.N = pe.RangeSet(0, T - 1)  # (not K: a throughput table's counts are m.K)
    m.lim = pe.Var(m.N)  # fixed per solve
    m.z = pe.Var(m.N, domain=pe.Binary)
    # Give-up (`stops`: a job that need not finish, inside a net): where the net would fire, the plan may stop the
    # job instead, as the net with `give_up` does; q[k] = 1 once it has stopped (by slot k): nothing runs from then
    # on, the tail included, and the plan earns the stop's value. Without `stops` the model has no such columns.
    if stops:
        m.q = pe.Var(m.N, domain=pe.Binary)
        m.q_mono = pe.Constraint(m.N, rule=lambda m, k: m.q[k] >= m.q[k - 1] if k > 0 else pe.Constraint.Skip)
        m.q_idle = pe.Constraint(m.N, rule=lambda m, k: m.o[k] + m.s[k] <= job.n_max * (1 - m.q[k]))
        # ... only where the net would take it over: the slot it stops in leaves more work than lim allows
        reach = 3 * big + 1 + job.max_rate * (job.hard_deadline_h + (T + 1) * dt)  # beyond any R - cum - lim
        m.q_where = pe.Constraint(m.N, rule=lambda m, k: m.state["R"] - m.cum[k] - m.lim[k]
                                  >= STOP_EPS - reach * (1 - m.q[k] + (m.q[k - 1] if k else 0)))
    q = (lambda k: m.q[k]) if stops else (lambda k: 0)
    m.net = pe.Constraint(m.N, rule=lambda m, k: m.state["R"] - m.cum[k] - m.lim[k] - big * m.z[k]
                          - (big + job.max_rate * ((T + 1) * dt + job.overhead_h)) * (m.f[k] + q(k)) <= 0)
    m.net_od = pe.Constraint(m.N, rule=lambda m, k: m.o[k] >= job.n_max * m.z[k])

    # The fluid tail after the window
    B = int(blocks)
    m.B = pe.RangeSet(0, B - 1) if B else pe.Set(initialize=[])
    m.len = pe.Var(m.B)  # fixed per solve (hours of each block)
    m.gs = pe.Var(m.B, domain=pe.NonNegativeReals)  # spot GPU-hours (capacity as an upper bound)
    m.go = pe.Var(m.B, domain=pe.NonNegativeReals)  # on-demand GPU-hours
    m.gm = pe.Var(m.B, domain=pe.NonNegativeReals)  # mixed GPU-hours (spot beside on-demand; capacity as a bound)
    m.wt = pe.Var(m.B, domain=pe.NonNegativeReals, bounds=(0, job.work))
    m.ft = pe.Var(m.B, domain=pe.Binary)  # finished by the end of block j
    segments = work_segments(job)
    m.G = pe.RangeSet(0, len(segments) - 1)
    m.t_gpus = pe.Constraint(m.B, rule=lambda m, j: m.gs[j] + m.gm[j] + m.go[j] <= job.n_max * m.len[j])
    if stops:
        m.t_stop = pe.Constraint(m.B, rule=lambda m, j: m.gs[j] + m.gm[j] + m.go[j]
                                 <= job.n_max * (job.hard_deadline_h + dt) * (1 - m.q[T - 1]))
    m.t_work = pe.Constraint(m.B, m.G, rule=lambda m, j, k: m.wt[j] <= segments[k][1] * (m.gs[j] + m.gm[j] + m.go[j])
                             + segments[k][2] * m.len[j])
    peak = sum(width * slope for width, slope, _ in segments)  # H(N_max) unless a table's H falls before
    m.t_rate = pe.Constraint(m.B, rule=lambda m, j: m.wt[j] <= peak * m.len[j])
    m.t_mono = pe.Constraint(m.B, rule=lambda m, j: m.ft[j] >= (m.ft[j - 1] if j > 0 else m.f[T - 1]))
    m.t_progress = pe.Constraint(m.B, rule=lambda m, j: m.cum[T - 1] + sum(m.wt[i] for i in range(j + 1))
                                 >= m.state["R"] - big * (1 - m.ft[j]))
    # a job counted finished, in the window or the tail, was not stopped (nor paid the stop's value)
    if stops:
        m.q_done = pe.Constraint(expr=m.q[T - 1] + (m.ft[B - 1] if B else m.f[T - 1]) <= 1)
    # Work a plan leaves beyond what the window and the tail can do, priced per solve (`shortfall_price`), so that
    # a plan that cannot finish still does all it can instead of earning one constant whatever it does
    m.SHORT = pe.Set(initialize=[0])
    m.short = pe.Var(m.SHORT, domain=pe.NonNegativeReals)
    m.shortfall = pe.Constraint(m.SHORT, rule=lambda m, i: m.short[i] >= m.state["R"] - m.cum[T - 1]
                                - sum(m.wt[j] for j in m.B) - big * q(T - 1))  # a stopped job owes nothing
    # Objective with placeholder coefficients; every solve sets the real ones (prices, value by slot).
    m.utility = pe.Objective(
        expr=sum(m.f[t] + m.cum[t] - m.o[t] - m.s[t] for t in m.T) - m.short[0]
        + sum(m.ft[j] - m.gs[j] - m.gm[j] - m.go[j] for j in m.B) + sum(m.z[k] for k in m.N)
        + sum(m.rho[t] + sum(m.z_o[t, b] + m.z_s[t, b] for b in m.bits) for t in m.T),
        sense=pe.maximize)
    return m


class WindowProblem:
    """The window problem of one job, window length w and tail resolution, compiled once per pending
    overhead value."""

    def __init__(self, job: Job, w: int, slot_hours: float, blocks: int = 24):
        if isinstance(w, bool) or not isinstance(w, (int, np.integer)) or w < 1:
            raise SolverError(f"window w must be a whole number of slots >= 1 (got {w!r})")
        if isinstance(blocks, bool) or not isinstance(blocks, (int, np.integer)) or blocks < 0:
            raise SolverError(f"tail blocks must be a whole number >= 0 (got {blocks!r})")
        self.job, self.w, self.slot_hours, self.blocks = job, int(w), float(slot_hours), int(blocks)
        self.forms_: dict[tuple[float, bool, bool], StandardForm] = {}
        self.segments_ = work_segments(job)  # the tail's work rates
        counts = np.arange(job.n_min, job.n_max + 1) if job.throughput.is_linear else \
            np.array([n for n, _ in job.throughput.table if job.n_min <= n <= job.n_max])
        per_gpu = [float(np.min(job.throughput(counts) / counts))] + [slope for _, slope, _ in self.segments_]
        self.least_rate_ = max(min(per_gpu), 1e-9)  # the fewest work units a GPU-hour does (`shortfall_price`)
        self.dp_ = None  # the DP's tables, built at its first solve
        self.n_solves_ = 0

    def compiled(self, pending_h: float, constant_od: bool, stops: bool = False) -> StandardForm:
        key = (round(float(pending_h), 9), bool(constant_od), bool(stops))
        if key not in self.forms_:
            model = build_window_model(self.job, self.w, self.slot_hours, key[0], key[1], self.blocks, key[2])
            form = compile_model(model)
            for name in ("o", "s", "f", "cum", "w", "short"):
                if np.any(form.index[name] < 0):
                    raise SolverError(f"internal: the compiled window problem lost its {name!r} columns")
            self.forms_[key] = form
        return self.forms_[key]

    def tail_for(self, state: WindowState) -> np.ndarray:
        """The tail's block boundaries for a window starting at `state.time_h`."""
        return tail_blocks(state.time_h + self.w * self.slot_hours, self.job, self.slot_hours, self.blocks)

    def terms(self, state: WindowState, avail, spot_price, od_price, tail: TailForecast | None = None,
              slots_left: int | None = None, urgency: float = 0.0, must_finish: bool = True,
              net: str = "strict", window_urgency: float = 0.0, reserve_h: float = 0.0) -> WindowTerms:
        """The numbers of the window problem from `state` (see `solve`), checked: what every method solves."""
        return self.terms_many([state], [avail], [spot_price], [od_price], [tail], [slots_left], [urgency],
                               must_finish, net, [window_urgency], [reserve_h])[0]

    def terms_many(self, states: Sequence[WindowState], avail: Sequence, spot_price: Sequence, od_price: Sequence,
                   tails: Sequence[TailForecast | None], slots_left: Sequence[int | None], urgency: Sequence[float],
                   must_finish: bool, net: str, window_urgency: Sequence[float],
                   reserve_h: Sequence[float]) -> list[WindowTerms]:
        """`terms` of windows that start at one time (a slot of a lockstep simulation), as rows of arrays: per window
        (the sequences' entries) its terms, computed elementwise and row by row, so that a window's numbers do not
        depend on the windows beside it. Why: at a slot CHC re-plans every window, and one window's terms are some
        hundred numpy calls on arrays of a few numbers. A bad input raises the `SolverError` of the first window
        that has one."""
        job, T, dt, B = self.job, self.w, self.slot_hours, self.blocks
        n = len(states)
        time_h = float(states[0].time_h)
        if any(float(st.time_h) != time_h for st in states):
            raise SolverError("window problem: terms_many takes windows that start at one time")
        for r in reserve_h:
            if not (math.isfinite(r) and r >= 0):
                raise SolverError(f"window problem: the reserve must be a finite number of hours >= 0 (got {r!r})")
        a, sp, od = (_rows(x, T) for x in (avail, spot_price, od_price))
        if a is None or sp is None or od is None or not _finite_nonnegative(a, sp, od):
            for x, y, z in zip(avail, spot_price, od_price):
                _check_values((("availability", x), ("spot price", y), ("on-demand price", z)), T, "the ")
        for state in states:
            if not (math.isfinite(state.remaining) and 0 < state.remaining <= job.work * (1 + 1e-9)):
                raise SolverError(f"window problem: remaining work {state.remaining!r} must be in (0, {job.work}]")
        if net not in ("strict", "cbl", "off"):
            raise SolverError(f"window problem: net must be 'strict', 'cbl' or 'off' (got {net!r})")
        left = np.array([T if sl is None else max(0, min(T, int(sl))) for sl in slots_left], dtype=np.int64)
        can_run = (np.arange(T)[None, :] < left[:, None]).astype(float)

        # the tail
        bounds = self.tail_for(states[0])
        ends_tail = np.full(B, bounds[-1])
        lengths = np.zeros((n, B))
        gs_hi, c_gs, c_go, gm_hi, c_gm = (np.zeros((n, B)) for _ in range(5))
        n_used = bounds.size - 1
        forecast_tail = np.zeros(n, dtype=bool)
        if B:
            lengths[:, :n_used] = np.diff(bounds)
            ends_tail[:n_used] = bounds[1:]
            some = [i for i, tail in enumerate(tails) if tail is not None and n_used > 0]
            without = np.ones(n, dtype=bool)
            without[some] = False
            lengths[without] = 0.0
            if some:
                got = _tail_rows([tails[i] for i in some], n_used)
                _, spot_gpu_hours, spot_price_t, od_price_t, stalled, mixed, mixed_price = got  # (hours: checked)
                # the hours left to work in: a restart stalls the whole job (the block still ends where it ends),
                # and the net's margin before the hard deadline is not the plan's to spend
                length = np.maximum(lengths[some, :n_used] - stalled, 0.0)
                length = _take_from_end(length, self.net_margin(net))
                lengths[some, :n_used] = length
                gs_hi[some, :n_used] = np.minimum(spot_gpu_hours, job.n_max * length)
                c_gs[some, :n_used] = spot_price_t
                c_go[some, :n_used] = od_price_t
                gm_hi[some, :n_used] = np.minimum(mixed, job.n_max * length)
                c_gm[some, :n_used] = mixed_price
                forecast_tail[some] = [bool(tails[i].forecast) for i in some]

        # the safety net's limits in slots 0..T-1 (none where nothing can run)
        starts = time_h + np.arange(T) * dt
        after = np.floor((job.hard_deadline_h - starts) / dt + 1e-7) - 1
        lim = job.max_rate * ((after - (net == "cbl")) * dt - job.overhead_h)
        lim = np.where((np.arange(T)[None, :] < left[:, None]) & (net != "off"), lim[None, :], 2.0 * job.work + 1.0)

        # timing bias: spot is taken earlier (it may vanish) and on-demand bought later (the price is known, and
        # waiting keeps the chance of spot); slot 0's multipliers are 1 -/+ urgency, the tail's 1. While the plan
        # leans on a tail (a historical expectation, not a forecast) the bias is `urgency`; with the window
        # reaching the end of the job it is `window_urgency` (0 when the window's slots are known: nothing to
        # hedge, and the plan is the exact optimum)
        bias = np.where((lengths > 0).any(axis=1), np.asarray(urgency, dtype=float),
                        np.asarray(window_urgency, dtype=float))
        early = bias[:, None] * (T - np.arange(T))[None, :] / T
        # ... except that after a tail that is a forecast of its own slots (the oracle's) on-demand is bought
        # earlier: waiting keeps no chance the forecast does not already show, and on-demand hours deferred to the
        # fluid tail land between its spot spells, where each switch costs a restart the tail does not model
        od_early = np.where(forecast_tail[:, None], -early, early)
        # the unused end of the finishing slot: its GPUs' price refunded, its value earned earlier where V
        # is linear over the slot (after d, before gamma*d); elsewhere V at the slot's end (a lower bound)
        # (read `reserve_h` later: a plan that expects to lose that much time it cannot place finishes earlier)
        ends = np.concatenate([time_h + (np.arange(T) + 1) * dt, ends_tail])[None, :] \
            + np.asarray(reserve_h, dtype=float)[:, None]
        lo_c, hi_c = ends[:, :T] - dt, ends[:, :T]
        d, hd = job.deadline_h, job.hard_deadline_h
        linear = (lo_c >= d - 1e-9) & (hi_c <= hd + 1e-9) & (hd > d + 1e-9)
        # a job that need not finish, inside a net, stops only where the net would take it over, in the window; the
        # tail, an expectation, does not decide to stop, unless it is a forecast (`TailForecast.forecast`) or no
        # price the plan sees could make finishing pay
        may_stop = not must_finish and net != "off"
        s_hi = np.floor(np.minimum(a, job.n_max) + 1e-9) * can_run
        o_hi = np.full((n, T), float(job.n_max)) * can_run
        od_cost, sp_cost = od * dt * (1.0 + od_early), sp * dt * (1.0 - early)
        od_refund, sp_refund = od * dt, sp * dt
        constant_od = np.all(od == od[:, :1], axis=1)
        value_end = job.value_at(ends)
        value_unused = np.where(linear, job.value * dt / max(hd - d, 1e-12), 0.0)
        out = []
        for i, state in enumerate(states):
            finish = must_finish or (may_stop and not forecast_tail[i] and not self._hopeless(
                state.remaining, np.concatenate([sp[i][a[i] >= 1], od[i], c_gs[i, :n_used][gs_hi[i, :n_used] > 0],
                                                 c_gm[i, :n_used][gm_hi[i, :n_used] > 0]])))
            running = state.prev_o + state.prev_s > 0
            out.append(WindowTerms(
                remaining=float(state.remaining), prev_o=int(state.prev_o), prev_s=int(state.prev_s), running=running,
                pending_h=state.pending_h if running else 0.0, left=int(left[i]), slot_hours=dt,
                s_hi=s_hi[i], o_hi=o_hi[i], od_cost=od_cost[i], sp_cost=sp_cost[i], od_refund=od_refund[i],
                sp_refund=sp_refund[i], constant_od=bool(constant_od[i]), lim=lim[i], value_end=value_end[i],
                value_unused=value_unused[i],
                unfinished=-job.miss_penalty - (self.finish_penalty(od[i]) if finish else 0.0),
                may_stop=may_stop, stop_value=-float(job.miss_penalty),
                shortfall_price=self.shortfall_price(np.concatenate([od[i], c_go[i, :n_used]])) if finish else 0.0,
                tail_hours=lengths[i], tail_spot_gpu_hours=gs_hi[i], tail_spot_price=c_gs[i], tail_od_price=c_go[i],
                tail_mixed_gpu_hours=gm_hi[i], tail_mixed_price=c_gm[i]))
        return out

    def solve(self, state: WindowState, avail, spot_price, od_price, tail: TailForecast | None = None,
              slots_left: int | None = None, solver: str = "highs", time_limit: float = 10.0,
              mip_gap: float = 1e-3, urgency: float = 0.0, must_finish: bool = True,
              net: str = "strict", method: str = "milp", window_urgency: float = 0.0,
              reserve_h: float = 0.0) -> WindowPlan | None:
        """Plan the next w slots from `state`, given (forecast) availability and prices for them and the
        tail's expectations (None: nothing can be done after the window). `net`: plan within the simulator's
        safety net: "strict", "cbl" (its trigger counts no progress in the slot: one slot earlier) or "off".

        `slots_left`: slots before the hard deadline (nothing can run after it). `urgency`: this share of the
        price makes spot used earlier and on-demand bought later look that much cheaper while the plan leans
        on a tail (expected, not forecast, capacity), so that the plan keeps its options; after a tail that is a
        forecast (`TailForecast.forecast`) on-demand bought earlier instead (see `terms`); `window_urgency`: the
        same when the window reaches the job's end (its slots may be forecasts too). `reserve_h`: the job's value
        at each completion time is read that many hours later, so that a plan expecting to lose time it cannot
        place (restarts it cannot forecast) finishes that much earlier; whether to stop is decided without it.
        `method`: "milp" (the MILP by
        `solver`), "dp" (the dynamic programme of `window_dp.py`, proven within `mip_gap`) or "auto" (the
        DP where it applies and proves its gap, else the MILP started from the DP's plan). Returns None when
        the solver hit its time limit without a schedule; any other failure raises `SolverError` (a bug, not
        an outcome: the problem is always feasible).
        """
        started = time.perf_counter()
        if method not in METHODS:
            raise SolverError(f"window problem: method must be one of {', '.join(map(repr, METHODS))} "
                              f"(got {method!r})")
        if solver not in BACKENDS:
            raise SolverError(f"unknown solver {solver!r}; use one of {', '.join(BACKENDS)}")
        terms = self.terms(state, avail, spot_price, od_price, tail, slots_left, urgency, must_finish, net,
                           window_urgency, reserve_h)
        biased = reserve_h > 0 or not (np.array_equal(terms.od_cost, terms.od_refund)
                                       and np.array_equal(terms.sp_cost, terms.sp_refund))
        if not (terms.may_stop and biased):
            return self._solve(state, terms, method, solver, time_limit, mip_gap, started)
        # Whether to stop the job is decided at the true prices: the timing bias makes the window's spot cheaper and
        # its on-demand dearer than they are, which would tip a job worth about what finishing it costs one way or
        # the other. If stopping is the best plan at the true prices, it is the plan; else the biased plan times
        # the work, unless it would stop
        true = terms if reserve_h == 0 else self.terms(state, avail, spot_price, od_price, tail, slots_left, urgency,
                                                       must_finish, net, window_urgency)
        plain = replace(true, od_cost=true.od_refund, sp_cost=true.sp_refund)
        first = self._solve(state, plain, method, solver, time_limit, mip_gap, started)
        if first is None or _no_better_than_stopping(first, plain):
            return first
        plan = self._solve(state, terms, method, solver, time_limit - (time.perf_counter() - started), mip_gap,
                           time.perf_counter())
        if plan is None or _no_better_than_stopping(plan, terms):
            return first
        return replace(plan, seconds=time.perf_counter() - started)

    def _solve(self, state: WindowState, terms: WindowTerms, method: str, solver: str, time_limit: float,
               mip_gap: float, started: float) -> WindowPlan | None:
        """One solve of `terms` by `method` (see `solve`)."""
        if method != "milp":
            if dp_applies(self.job):
                self.n_solves_ += 1
                try:
                    got = self.dp().solve(terms, time_limit=float(time_limit) - (time.perf_counter() - started),
                                          mip_gap=float(mip_gap), started=started)
                except SolverError as exc:
                    got = exc
                return self._after_dp(state, terms, method, solver, time_limit, mip_gap, started, got)
            if method == "dp":
                raise SolverError("window problem: the DP needs a job value >= 0 (V must not grow with the "
                                  "completion time); use method='milp' or 'auto'")
        return self._milp_after(state, terms, solver, time_limit, mip_gap, None, started)

    def dp(self) -> WindowDP:
        """The DP of this job's windows, built at its first solve."""
        if self.dp_ is None:
            self.dp_ = WindowDP(self.job, self.w, self.slot_hours)
        return self.dp_

    def _after_dp(self, state: WindowState, terms: WindowTerms, method: str, solver: str, time_limit: float,
                  mip_gap: float, started: float, got: WindowPlan | None | SolverError) -> WindowPlan | None:
        """What `_solve` makes of the DP's answer `got` (a plan, None after a time-out, or its error): the plan when
        proven (or with method "dp"), else the MILP, from the DP's plan if there is one."""
        if isinstance(got, SolverError):
            if method == "dp":
                raise got
            start = None  # the MILP decides (and says so if the problem has no schedule)
        else:
            if got is None or got.status == "optimal" or method == "dp":
                return got
            start = got  # not proven within the gap: the MILP, from the DP's plan
        return self._milp_after(state, terms, solver, time_limit, mip_gap, start, started)

    def _milp_after(self, state: WindowState, terms: WindowTerms, solver: str, time_limit: float, mip_gap: float,
                    start: WindowPlan | None, started: float) -> WindowPlan | None:
        """The MILP in the time left, kept only if better than the DP's plan `start` (None: no such plan)."""
        remaining_s = float(time_limit) - (time.perf_counter() - started)
        if remaining_s <= 0:
            return start
        plan = self._solve_milp(state, terms, solver, remaining_s, mip_gap, start, started)
        if start is not None and (plan is None or plan.objective <= start.objective):
            # the DP's plan is as good: proven within the gap if the MILP proved its own
            return replace(start, status=plan.status if plan is not None else start.status,
                           seconds=time.perf_counter() - started)
        return plan

    def solve_many(self, problems: Sequence[Mapping[str, Any]], **common: Any) -> list[WindowPlan | None | SolverError]:
        """`solve(**problem, **common)` of each of `problems` (what differs per window: state, forecasts, tail,
        slots_left, reserve_h), the DP of all of them at once (`window_dp_batch.solve_batch`): the same plans.
        Returns per problem its plan, None, or the `SolverError` its `solve` would raise (the caller decides in its
        own order). Problems the DP does not solve alone (method "milp", a job of negative value, a job that may stop
        under a timing bias, which is solved twice) go through `solve` one by one. The batched DP's time limit is the
        problems' limits summed; each MILP after it gets its limit less its share of the batch's time."""
        from .window_dp_batch import solve_batch

        started = time.perf_counter()
        method, solver = common.get("method", "milp"), common.get("solver", "highs")
        if method not in METHODS:
            raise SolverError(f"window problem: method must be one of {', '.join(map(repr, METHODS))} "
                              f"(got {method!r})")
        if solver not in BACKENDS:
            raise SolverError(f"unknown solver {solver!r}; use one of {', '.join(BACKENDS)}")
        time_limit, mip_gap = float(common.get("time_limit", 10.0)), float(common.get("mip_gap", 1e-3))
        out: list = [None] * len(problems)
        batch: list[tuple[int, WindowState, WindowTerms]] = []
        every = [{**common, **problem} for problem in problems]
        made = self._terms_of(every)
        for j, args in enumerate(every):
            try:
                terms = made[j]
                if isinstance(terms, SolverError):
                    raise terms
                biased = float(args.get("reserve_h", 0.0)) > 0 or not (
                    np.array_equal(terms.od_cost, terms.od_refund) and np.array_equal(terms.sp_cost, terms.sp_refund))
                if method == "milp" or not dp_applies(self.job) or (terms.may_stop and biased):
                    out[j] = self.solve(**args)
                else:
                    batch.append((j, args["state"], terms))
            except SolverError as exc:
                out[j] = exc
        if not batch:
            return out
        if len(batch) < LOCKSTEP_MIN_WINDOWS or self.dp().alloc.size > LOCKSTEP_MAX_ALLOCATIONS:  # one by one
            for j, state, terms in batch:
                try:
                    out[j] = self._solve(state, terms, method, solver, time_limit, mip_gap, time.perf_counter())
                except SolverError as exc:
                    out[j] = exc
            return out
        got = solve_batch(self.dp(), [tm for _, _, tm in batch], time_limit=time_limit, mip_gap=mip_gap,
                          started=started)
        self.n_solves_ += len(batch)
        share = (time.perf_counter() - started) / len(batch)
        for (j, state, terms), plan in zip(batch, got):
            t0 = time.perf_counter()
            try:
                plan = self._after_dp(state, terms, method, solver, time_limit, mip_gap, t0 - share, plan)
            except SolverError as exc:
                out[j] = exc
            else:  # its seconds: its share of the batch, and its MILP's
                out[j] = None if plan is None else replace(plan, seconds=share + time.perf_counter() - t0)
        return out

    def _terms_of(self, problems: Sequence[Mapping[str, Any]]) -> list[WindowTerms | SolverError]:
        """Each problem's `terms` (or the `SolverError` they raise): those that start at one time, under one net and
        finishing rule, made together (`terms_many`); a group with a bad input, window by window."""
        groups: dict[tuple, list[int]] = {}
        for j, args in enumerate(problems):
            groups.setdefault((float(args["state"].time_h), args.get("net", "strict"),
                               bool(args.get("must_finish", True))), []).append(j)

        def made(rows: list[Mapping[str, Any]], net: str, must_finish: bool) -> list[WindowTerms]:
            return self.terms_many([p["state"] for p in rows], [p["avail"] for p in rows],
                                   [p["spot_price"] for p in rows], [p["od_price"] for p in rows],
                                   [p.get("tail") for p in rows], [p.get("slots_left") for p in rows],
                                   [float(p.get("urgency", 0.0)) for p in rows], must_finish, net,
                                   [float(p.get("window_urgency", 0.0)) for p in rows],
                                   [float(p.get("reserve_h", 0.0)) for p in rows])

        out: list = [None] * len(problems)
        for (_, net, must_finish), idx in groups.items():
            rows = [problems[j] for j in idx]
            try:
                got: list = made(rows, net, must_finish)
            except SolverError:  # whose: each window alone
                got = []
                for p in rows:
                    try:
                        got.append(made([p], net, must_finish)[0])
                    except SolverError as exc:
                        got.append(exc)
            for j, terms in zip(idx, got):
                out[j] = terms
        return out

    def _solve_milp(self, state: WindowState, terms: WindowTerms, solver: str, time_limit: float,
                    mip_gap: float, start: WindowPlan | None, started: float) -> WindowPlan | None:
        """The MILP: the compiled form for this pending overhead, with the window's bounds and costs."""
        T = self.w
        form = self.compiled(terms.pending_h, terms.constant_od, terms.may_stop)
        ix = form.index
        o_cols, s_cols, f_cols = ix["o"], ix["s"], ix["f"]
        fixed = np.array([terms.prev_o, terms.prev_s, 1.0 if terms.running else 0.0, terms.remaining], float)
        col_lo, col_hi = {}, {tuple(s_cols): terms.s_hi, tuple(o_cols): terms.o_hi}
        st = ix["state"]
        keep = st >= 0  # a state column the model does not use is absent from the compiled form
        col_lo[tuple(st[keep])] = fixed[keep]
        col_hi[tuple(st[keep])] = fixed[keep]
        B = self.blocks
        if B:
            col_lo[tuple(ix["len"])] = terms.tail_hours
            col_hi[tuple(ix["len"])] = terms.tail_hours
            col_hi[tuple(ix["gs"])] = terms.tail_spot_gpu_hours
            col_hi[tuple(ix["gm"])] = terms.tail_mixed_gpu_hours
        col_lo[tuple(ix["lim"])] = terms.lim
        col_hi[tuple(ix["lim"])] = terms.lim
        # value if finished by the end of slot t / block j, as coefficients of the monotone indicators
        v_end = terms.value_end
        c_ind = v_end - np.append(v_end[1:], terms.unfinished)
        cost = {tuple(o_cols): -terms.od_cost, tuple(s_cols): -terms.sp_cost,
                tuple(f_cols): c_ind[:T], tuple(ix["cum"]): np.zeros(T)}
        if B:
            cost[tuple(ix["ft"])] = c_ind[T:]
            cost[tuple(ix["gs"])] = -terms.tail_spot_price
            cost[tuple(ix["go"])] = -terms.tail_od_price
            cost[tuple(ix["gm"])] = -terms.tail_mixed_price
        cost[tuple(ix["z"])] = np.zeros(T)
        if terms.may_stop:  # a stop earns its own value, not the unfinished one
            cost[tuple(ix["q"])] = np.append(np.zeros(T - 1), terms.stop_value - terms.unfinished)
        cost[tuple(ix["short"])] = np.array([-terms.shortfall_price])
        nb = int(ix["z_o"].size // T)
        weights = (2.0 ** np.arange(nb))[None, :]
        cost[tuple(ix["z_o"])] = (terms.od_refund[:, None] * weights).ravel()
        cost[tuple(ix["z_s"])] = (terms.sp_refund[:, None] * weights).ravel()
        cost[tuple(ix["rho"])] = terms.value_unused
        form = with_updates(form, col_hi=col_hi, cost=cost, col_lo=col_lo)
        # objective = utility of the plan (the constant makes a finished plan's objective V - cost), so the
        # relative MIP gap is a gap on utility, not on the finish penalty
        form = replace(form, c0=-terms.unfinished * (1.0 if form.maximize else -1.0))
        if start is not None and solver == "highs":
            sol = solve_highs(form, float(time_limit), float(mip_gap),
                              start=(np.concatenate([o_cols, s_cols]), np.concatenate([start.o, start.s])))
        else:
            sol = BACKENDS[solver](form, float(time_limit), float(mip_gap))
        self.n_solves_ += 1
        if sol.x is None:
            if sol.status == "time_limit":
                return None
            raise SolverError(f"{solver}: the window problem (always feasible) ended with status {sol.status!r} "
                              f"and no schedule at {state.time_h:g} h with {state.remaining:g} work left")
        o = np.round(sol.x[o_cols]).astype(np.int64)
        s = np.round(sol.x[s_cols]).astype(np.int64)
        return WindowPlan(o=o, s=s, work=np.asarray(sol.x[ix["w"]], dtype=float),
                          objective=float(sol.objective), status=sol.status,
                          seconds=time.perf_counter() - started, method="milp", bound=sol.bound)

    def finish_penalty(self, od: np.ndarray) -> float:
        """Utility a must-finish plan loses by not finishing: more than finishing could ever cost (every GPU
        on demand for the whole horizon at the dearest price) plus the job's value, so it always finishes
        when it can."""
        job = self.job
        return float(job.value) + 2.0 * job.n_max * float(np.max(od)) * (job.hard_deadline_h + self.slot_hours) + 1.0

    def _hopeless(self, remaining: float, prices: np.ndarray) -> bool:
        """Whether finishing cannot pay at any price the plan sees: the work left at the most work a GPU-hour does,
        every GPU-hour at the cheapest price of the window, the tail or on demand, no restart, costs more than the
        job's whole value and the miss penalty it avoids (a bound within the plan's model: spot cheaper than
        anything the window and the tail show is not ruled out). Why: a job that may give up stops only where the net
        would take it over, so that the tail's expectations never stop it; but then a job worth less than any way
        of finishing it works until then and loses what it spent (measured: docs/decisions/chc-give-up.md). Such a
        job may stop at once."""
        job = self.job
        least = remaining / self.segments_[0][1] * float(np.min(prices))
        return least > float(job.value) + float(job.miss_penalty) + 1e-9 * max(1.0, float(job.value))

    def net_margin(self, net: str) -> float:
        """Hours of slack below which the deadline net takes the job over, as `lim` counts it in the window: one
        restart ("cbl": a restart and a slot, its trigger counting no progress in the slot); from then on the job
        runs on N_max on-demand GPUs to the end. Why the tail leaves them out: a fluid tail that planned to spend
        that slack waiting for spot idled down to it, and the net then held the job on on-demand GPUs through every
        later spot spell (measured on the Can't Be Late leaderboard's runs: docs/decisions/chc-net-margin.md)."""
        return 0.0 if net == "off" else float(self.job.overhead_h) + (net == "cbl") * self.slot_hours

    def shortfall_price(self, od: np.ndarray) -> float:
        """What a must-finish plan pays per unit of work it leaves beyond what its window and tail can do: twice
        the dearest a unit of work can cost there (every GPU on demand at the dearest price, at the fewest work per
        GPU-hour of any count the job runs or of the tail's rates), so that such a plan does all it can.

        Why: a plan that cannot finish in the model (the fluid tail's stalled hours can eat the last of the slack)
        earned one constant whatever work it did, so the cheapest plan, doing nothing, won: CHC with perfect window
        forecasts idled through the slack it had left, and the deadline guard then held it on on-demand GPUs for
        the rest of the job while spot came and went (docs/decisions/chc-net-margin.md)."""
        return 2.0 * float(np.max(od)) / self.least_rate_
