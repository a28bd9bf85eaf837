"""The offline optimum (SPEC §4): one function builds the Pyomo model of a job on a known trace.

Variables per slot t: on-demand GPUs `o[t]`, spot GPUs `s[t] <= a_t`, running `y[t]`,
reconfiguring `r[t]`, work `w[t]`, and done-by-end-of-t `f[t]` (monotone). Constraints:

- `N_min*y <= o + s <= N_max*y`;
- throughput `H = alpha*n + beta*y` (or, for a profile table, one binary per allowed count);
- `w[t] <= H*slot`, and for every reconfiguration in the last ceil(delta/slot) slots the work is cut
  by the overhead still pending (big-M on `r[t-j]`), which is exactly the simulator's carry-over;
- `r[t]` is forced to 1 by a start or any change of `o` or `s` while running (a preemption forces
  a change since `s[t] <= a_t`);
- cumulative work `sum_{tau<=t} w >= L*f[t]`, and `f[last] = 1` if the job must finish.

Objective: value at the end of the finishing slot minus the cost of every slot billed in full.
The value is taken at the *end* of the finishing slot (a lower bound of V at the exact time) and a
fractionally billed last slot is refunded only when the schedule is replayed in the simulator: both
make the model's objective a lower bound of the replayed utility of its own schedule (exact under
the Can't Be Late settings, where ticks are billed in full and only the deadline matters).
"""

from __future__ import annotations

import math

import numpy as np
import pyomo.environ as pe

from ..job import Job


def build_model(
    avail: np.ndarray,
    spot_price: np.ndarray,
    od_price: np.ndarray,
    job: Job,
    slot_hours: float,
    must_finish: bool = True,
    od_shift_cut: bool | None = None,
) -> pe.ConcreteModel:
    """Pyomo MILP of `job` over the slots of one window (arrays already cut to the horizon)."""
    T = int(len(avail))
    dt = float(slot_hours)
    m = pe.ConcreteModel(name="spotlab_offline_optimum")
    od_arr = np.asarray(od_price, dtype=float)
    if od_shift_cut is None:
        od_shift_cut = bool(np.all(od_arr == od_arr[0]))
    add_allocation(m, np.asarray(avail), job, dt, od_shift_cut)
    delta = job.overhead_h

    ends = (np.arange(T) + 1) * dt
    v_end = job.value_at(ends)  # value if done by the end of slot t (-miss_penalty after gamma*d)
    earliest = int(np.searchsorted(ends, job.work / job.max_rate + delta - 1e-9))  # no finish before
    first_change = int(np.flatnonzero(np.diff(np.concatenate([[v_end[0]], v_end])) != 0)[0]) if np.any(v_end != v_end[0]) else T
    tail = list(range(min(max(first_change - 1, earliest, 0), T - 1), T))
    m.F = pe.Set(initialize=tail)
    m.f = pe.Var(m.F, domain=pe.Binary)
    m.f_mono = pe.Constraint(m.F, rule=lambda m, t: m.f[t] >= m.f[t - 1] if t - 1 in m.F else pe.Constraint.Skip)
    m.cum = pe.Var(m.T, domain=pe.NonNegativeReals)
    m.cum_def = pe.Constraint(m.T, rule=lambda m, t: m.cum[t] == m.w[t] + (m.cum[t - 1] if t > 0 else 0))
    m.progress = pe.Constraint(m.F, rule=lambda m, t: m.cum[t] >= job.work * m.f[t])
    if must_finish:
        m.finish = pe.Constraint(expr=m.f[T - 1] == 1)

    sp = np.asarray(spot_price, dtype=float)
    od = np.asarray(od_price, dtype=float)
    # value = sum_t (f[t] - f[t-1]) * V(end of t); before the tail the value is constant V(end of tail[0])
    value = sum(float(v_end[t]) * (m.f[t] - (m.f[t - 1] if t - 1 in m.F else 0)) for t in tail)
    value = value - job.miss_penalty * (1 - m.f[T - 1])
    cost = sum((float(od[t]) * m.o[t] + float(sp[t]) * m.s[t]) * dt for t in range(T))
    m.cost = pe.Expression(expr=cost)
    m.value = pe.Expression(expr=value)
    m.utility = pe.Objective(expr=value - cost, sense=pe.maximize)
    return m


def add_allocation(m: pe.ConcreteModel, avail: np.ndarray, job: Job, dt: float, od_shift_cut: bool,
                   prev: tuple | None = None) -> None:
    """The allocation part shared by the offline optimum and the online window problem: slots `m.T`,
    o, s, y, r, w, the throughput `m.rate`, overhead and reconfiguration rules.

    `prev` = (o, s, y) of the slot before the first one (Pyomo variables or numbers); None means the
    job starts idle. A change from `prev` in slot 0 is a reconfiguration, as in the simulator.
    """
    T = int(len(avail))
    a = np.minimum(np.asarray(avail, dtype=int), job.n_max)
    o0, s0, y0 = prev if prev is not None else (0, 0, 0)
    m.T = pe.RangeSet(0, T - 1)
    m.o = pe.Var(m.T, domain=pe.NonNegativeIntegers, bounds=(0, job.n_max))
    m.s = pe.Var(m.T, domain=pe.NonNegativeIntegers, bounds=lambda _, t: (0, int(a[t])))
    m.y = pe.Var(m.T, domain=pe.Binary)
    m.r = pe.Var(m.T, domain=pe.Binary)
    m.w = pe.Var(m.T, domain=pe.NonNegativeReals, bounds=(0, job.work))

    m.n_lo = pe.Constraint(m.T, rule=lambda m, t: m.o[t] + m.s[t] >= job.n_min * m.y[t])
    m.n_hi = pe.Constraint(m.T, rule=lambda m, t: m.o[t] + m.s[t] <= job.n_max * m.y[t])

    tp = job.throughput
    if tp.is_linear:
        def rate(m, t):
            return tp.alpha * (m.o[t] + m.s[t]) + tp.beta * m.y[t]
    else:
        counts = [n for n, _ in tp.table if job.n_min <= n <= job.n_max]
        h = dict(tp.table)
        m.K = pe.Set(initialize=counts)
        m.x = pe.Var(m.T, m.K, domain=pe.Binary)
        m.pick = pe.Constraint(m.T, rule=lambda m, t: sum(m.x[t, k] for k in m.K) == m.y[t])
        m.count = pe.Constraint(m.T, rule=lambda m, t: sum(k * m.x[t, k] for k in m.K) == m.o[t] + m.s[t])

        def rate(m, t):
            return sum(h[k] * m.x[t, k] for k in m.K)

    m.rate = pe.Expression(m.T, rule=rate)
    m.w_cap = pe.Constraint(m.T, rule=lambda m, t: m.w[t] <= m.rate[t] * dt)
    delta = job.overhead_h
    carry = max(1, math.ceil(delta / dt - 1e-9)) if delta > 0 else 0
    m.J = pe.RangeSet(0, max(carry - 1, 0))

    def overhead_rule(m, t, j):
        if delta <= 0 or t - j < 0:
            return pe.Constraint.Skip
        lost = min(dt, max(0.0, delta - j * dt))  # overhead paid in slot t after a reconfig at t-j
        # w <= H*(dt - lost) when r[t-j] = 1; the big-M is the least that frees the row when r = 0
        return m.w[t] <= m.rate[t] * (dt - lost) + job.max_rate * lost * (1 - m.r[t - j])

    m.w_overhead = pe.Constraint(m.T, m.J, rule=overhead_rule)

    def change_rules(var, p0):
        def up(m, t):
            before = var[t - 1] if t > 0 else p0
            return job.n_max * m.r[t] >= var[t] - before

        def down(m, t):
            before = var[t - 1] if t > 0 else p0
            if t == 0 and isinstance(before, (int, float)) and before == 0:
                return pe.Constraint.Skip
            return job.n_max * m.r[t] >= before - var[t] - job.n_max * (1 - m.y[t])

        return up, down

    # Valid inequality that keeps the LP relaxation honest: GPUs added in slot t all pay the overhead,
    # so the work lost is at least delta * (per-GPU rate) * (GPUs added). Without it the relaxation
    # can half-start an allocation and lose no work at all (the big-M row above is slack there).
    # It is exact for a single instance, where it is what makes the model solve quickly.
    if delta > 0:
        per_gpu = tp.alpha if tp.is_linear else min(hk / k for k, hk in tp.table)
        lost0 = min(dt, delta)
        m.u_o = pe.Var(m.T, domain=pe.NonNegativeReals)
        m.u_s = pe.Var(m.T, domain=pe.NonNegativeReals)
        m.u_y = pe.Var(m.T, domain=pe.NonNegativeReals)
        m.u_o_def = pe.Constraint(m.T, rule=lambda m, t: m.u_o[t] >= m.o[t] - (m.o[t - 1] if t > 0 else o0))
        m.u_s_def = pe.Constraint(m.T, rule=lambda m, t: m.u_s[t] >= m.s[t] - (m.s[t - 1] if t > 0 else s0))
        m.u_y_def = pe.Constraint(m.T, rule=lambda m, t: m.u_y[t] >= m.y[t] - (m.y[t - 1] if t > 0 else y0))
        beta = tp.beta if tp.is_linear else 0.0
        m.w_added = pe.Constraint(m.T, rule=lambda m, t: m.w[t] <= m.rate[t] * dt - lost0 * (
            per_gpu * (m.u_o[t] + m.u_s[t]) + max(beta, 0.0) * m.u_y[t]))

    for label, var, p0 in (("o", m.o, o0), ("s", m.s, s0)):
        up, down = change_rules(var, p0)
        setattr(m, f"r_up_{label}", pe.Constraint(m.T, rule=up))
        setattr(m, f"r_down_{label}", pe.Constraint(m.T, rule=down))
    m.r_start = pe.Constraint(m.T, rule=lambda m, t: m.r[t] >= m.y[t] - (m.y[t - 1] if t > 0 else y0))

    # Symmetry cut, valid when the on-demand price is the same in every slot: a run that starts
    # after an idle slot must hold spot GPUs, since a pure on-demand run there could start one slot
    # earlier at the same cost, the same number of reconfigurations and an earlier completion.
    # Without it the solver explores every placement of on-demand slots in a gap.
    if od_shift_cut:
        m.od_shift = pe.Constraint(m.T, rule=lambda m, t: m.y[t] - m.y[t - 1] <= m.s[t] if t > 0 else pe.Constraint.Skip)


def schedule_of(m: pe.ConcreteModel) -> tuple[np.ndarray, np.ndarray]:
    """The solved allocation `(o, s)` as integer arrays."""
    o = np.array([round(pe.value(m.o[t])) for t in m.T], dtype=np.int64)
    s = np.array([round(pe.value(m.s[t])) for t in m.T], dtype=np.int64)
    return o, s
