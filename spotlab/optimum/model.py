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

The objective follows the simulator's billing, so that the optimum is an upper bound of every
policy replayed under the same settings:

- `billing="full"` (Can't Be Late): every slot is billed in full and the value is taken at the end
  of the finishing slot, a lower bound of V at the exact time (exact where only the deadline matters).
- `billing="fractional"`: the finishing slot `t` (`g[t] = f[t] - f[t-1]`) leaves a share `rho[t]`
  of the slot unused at its end (the overhead is paid at its start, so the unused time runs at the
  full rate): `w[t] + H*rho[t]*slot` fits the slot's work capacity, the unused time is refunded and
  the job completes at `(t + 1 - rho[t])*slot`, where V is evaluated exactly (V is linear within a
  slot but at d and gamma*d; a slot containing d takes the minimum of the two pieces, a slot
  containing gamma*d gets one binary for "done after gamma*d", a miss). The products `o*rho`,
  `s*rho` (and the table's `x*rho`) are linearised exactly (`unused_capacity`). The objective is
  then the simulator's utility of the schedule, for a job of value >= 0: V is then non-increasing,
  so a model that lets `f` switch later than the work completes, or waste capacity, only under-states
  (with a negative value a later completion would be worth more and the model could claim it).
"""

from __future__ import annotations

import math

import numpy as np
import pyomo.environ as pe

from ..jobs.job import Job

BILLINGS = ("fractional", "full")


def build_model(
    avail: np.ndarray,
    spot_price: np.ndarray,
    od_price: np.ndarray,
    job: Job,
    slot_hours: float,
    must_finish: bool = True,
    od_shift_cut: bool | None = None,
    billing: str = "fractional",
) -> pe.ConcreteModel:
    """Pyomo MILP of `job` over the slots of one window (arrays already cut to the horizon), for the
    simulator's `billing` ("fractional" or "full", see `SimSettings`)."""
    if billing not in BILLINGS:
        raise ValueError(f"billing must be 'fractional' or 'full', got {billing!r}")
    fractional = billing == "fractional"
    T = int(len(avail))
    dt = float(slot_hours)
    m = pe.ConcreteModel(name="spotlab_offline_optimum")
    od_arr = np.asarray(od_price, dtype=float)
    if od_shift_cut is None:
        od_shift_cut = bool(np.all(od_arr == od_arr[0]))
    delta = job.overhead_h

    ends = (np.arange(T) + 1) * dt
    v_end = job.value_at(ends)  # value if done by the end of slot t (-miss_penalty after gamma*d)
    earliest = int(np.searchsorted(ends, job.work / job.max_rate + delta - 1e-9))  # no finish before
    if fractional:  # every slot the job may finish in has its own refund and completion time
        tail = list(range(min(max(earliest, 0), T - 1), T))
    else:
        first_change = int(np.flatnonzero(np.diff(np.concatenate([[v_end[0]], v_end])) != 0)[0]) if np.any(v_end != v_end[0]) else T
        tail = list(range(min(max(first_change - 1, earliest, 0), T - 1), T))
    unused = (lambda m: unused_capacity(m, job, dt, tail)) if fractional else None
    add_allocation(m, np.asarray(avail), job, dt, od_shift_cut, unused_work=unused)

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
    cost = sum((float(od[t]) * m.o[t] + float(sp[t]) * m.s[t]) * dt for t in range(T))
    if fractional:
        g = {t: m.f[t] - (m.f[t - 1] if t - 1 in m.F else 0) for t in tail}  # finishes in slot t
        link_finishing_slot(m, job, tail, g)
        value = _exact_value(m, job, dt, tail, g)
        cost = cost - dt * sum(2 ** k * (float(od[t]) * m.z_o[t, k] + float(sp[t]) * m.z_s[t, k])
                               for t in tail for k in m.bits)
    else:
        # value = sum_t (f[t] - f[t-1]) * V(end of t); before the tail the value is constant V(end of tail[0])
        value = sum(float(v_end[t]) * (m.f[t] - (m.f[t - 1] if t - 1 in m.F else 0)) for t in tail)
    value = value - job.miss_penalty * (1 - m.f[T - 1])
    m.cost = pe.Expression(expr=cost)
    m.value = pe.Expression(expr=value)
    m.utility = pe.Objective(expr=value - cost, sense=pe.maximize)
    return m


def unused_capacity(m: pe.ConcreteModel, job: Job, dt: float, tail: list[int]) -> dict:
    """Work the unused end of a finishing slot could have done, `H[t]*rho[t]*slot`, per tail slot.

    The products with `rho[t]` are exact: binary digits `d_o`, `d_s` encode the counts of the finishing
    slot (shared by the tail slots and tied to `o[t]`, `s[t]` where `g[t] = 1`; a count of at most 1 is
    its own digit), and `z[t,k] = digit*rho[t]` by McCormick rows, exact for a binary times a share in
    [0, 1]. Shared digits solve faster than digits per slot. A throughput table's count binaries
    `x[t,k]` are used as they are.
    """
    m.rho = pe.Var(tail, bounds=(0, 1))
    m.bits = pe.RangeSet(0, max(1, int(job.n_max).bit_length()) - 1)
    digits = {}
    for label, var in (("o", m.o), ("s", m.s)):
        if job.n_max == 1:
            digits[label] = {(t, 0): var[t] for t in tail}
        else:
            d = pe.Var(m.bits, domain=pe.Binary)
            setattr(m, f"d_{label}", d)
            digits[label] = {(t, k): d[k] for t in tail for k in m.bits}
    products = []
    for label in ("o", "s"):
        z = pe.Var(tail, m.bits, bounds=(0, 1))
        setattr(m, f"z_{label}", z)
        products.append((label, z, digits[label], m.bits))
    tp = job.throughput
    if not tp.is_linear:
        m.z_x = pe.Var(tail, m.K, bounds=(0, 1))
        products.append(("x", m.z_x, {(t, k): m.x[t, k] for t in tail for k in m.K}, m.K))
        # one count runs in the finishing slot (rho <= y = sum_k x)
        m.z_x_sum = pe.Constraint(tail, rule=lambda m, t: sum(m.z_x[t, k] for k in m.K) == m.rho[t])
    for label, z, bit, idx in products:  # z = bit * rho
        def on(m, t, k, z=z, bit=bit):
            return z[t, k] <= bit[t, k]

        def off(m, t, k, z=z, bit=bit):
            return z[t, k] >= bit[t, k] + m.rho[t] - 1

        setattr(m, f"z_{label}_on", pe.Constraint(tail, idx, rule=on))
        setattr(m, f"z_{label}_rho", pe.Constraint(tail, idx, rule=lambda m, t, k, z=z: z[t, k] <= m.rho[t]))
        setattr(m, f"z_{label}_off", pe.Constraint(tail, idx, rule=off))
    # Valid rows on the slot's own counts, which the shared digits only reach through big-Ms
    times_rho = {"o": lambda t: sum(2 ** k * m.z_o[t, k] for k in m.bits),
                 "s": lambda t: sum(2 ** k * m.z_s[t, k] for k in m.bits)}
    for label, var in (("o", m.o), ("s", m.s)):
        def below(m, t, var=var, prod=times_rho[label]):
            return prod(t) <= var[t]

        def above(m, t, var=var, prod=times_rho[label]):
            return prod(t) >= var[t] - job.n_max * (1 - m.rho[t])

        setattr(m, f"z_{label}_below", pe.Constraint(tail, rule=below))
        setattr(m, f"z_{label}_above", pe.Constraint(tail, rule=above))
    m.z_n_min = pe.Constraint(tail, rule=lambda m, t: times_rho["o"](t) + times_rho["s"](t) >= job.n_min * m.rho[t])
    m.z_n_max = pe.Constraint(tail, rule=lambda m, t: times_rho["o"](t) + times_rho["s"](t) <= job.n_max * m.rho[t])
    if tp.is_linear:  # H*rho = alpha*(o + s)*rho + beta*y*rho, and y*rho = rho (rho <= y)
        def rate_rho(t):
            return tp.alpha * sum(2 ** k * (m.z_o[t, k] + m.z_s[t, k]) for k in m.bits) + tp.beta * m.rho[t]
    else:
        h = dict(tp.table)

        def rate_rho(t):
            return sum(h[k] * m.z_x[t, k] for k in m.K)
    return {t: dt * rate_rho(t) for t in tail}


def link_finishing_slot(m: pe.ConcreteModel, job: Job, tail: list[int], g: dict) -> None:
    """`rho` lives in the finishing slot only, which runs, and the shared digits spell its counts."""
    m.rho_fin = pe.Constraint(tail, rule=lambda m, t: m.rho[t] <= g[t])
    m.rho_run = pe.Constraint(tail, rule=lambda m, t: m.rho[t] <= m.y[t])
    if job.n_max == 1:
        return
    top = 2 ** len(m.bits) - 1
    for label, var, d in (("o", m.o, m.d_o), ("s", m.s, m.d_s)):
        enc = sum(2 ** k * d[k] for k in m.bits)

        def hi(m, t, var=var, enc=enc):
            return var[t] - enc <= job.n_max * (1 - g[t])

        def lo(m, t, var=var, enc=enc):
            return enc - var[t] <= top * (1 - g[t])

        setattr(m, f"d_{label}_hi", pe.Constraint(tail, rule=hi))
        setattr(m, f"d_{label}_lo", pe.Constraint(tail, rule=lo))


def _slot_value_pieces(job: Job, t: int, dt: float) -> list[tuple[float, float, list[tuple[float, float]]]]:
    """V on the completion times `c = (t + 1 - rho)*slot` of slot t, as regimes `(rho_lo, rho_hi, pieces)`
    with `V = min_j (A_j + B_j*rho)` on each (concave for a value >= 0). gamma*d inside the slot splits
    it in two regimes: after it the job is late (-miss_penalty)."""
    v0, d, hd, pen = float(job.value), float(job.deadline_h), float(job.hard_deadline_h), float(job.miss_penalty)
    lo_c, hi_c, tol = t * dt, (t + 1) * dt, 1e-9
    cuts = [lo_c, hi_c]
    if lo_c + tol < hd < hi_c - tol:
        cuts.append(hd)
    cuts.sort()
    regimes = []
    for lo, hi in zip(cuts, cuts[1:]):
        if lo >= hd - tol:
            pieces = [(-pen, 0.0)]
        else:
            pieces = []
            if lo < d - tol or hd <= d + tol:
                pieces.append((v0, 0.0))
            if hi > d + tol and hd > d + tol:
                slope = v0 / (hd - d)  # V = v0*(hd - c)/(hd - d), c = hi_c - rho*dt
                pieces.append((slope * (hd - hi_c), slope * dt))
        regimes.append(((hi_c - hi) / dt, (hi_c - lo) / dt, pieces))
    return regimes


def _exact_value(m: pe.ConcreteModel, job: Job, dt: float, tail: list[int], g: dict):
    """V at the exact completion time: a linear term per slot where V is linear, a variable bounded by
    the pieces where the slot holds a breakpoint, and a binary per regime where gamma*d splits it."""
    terms, special = [], {}
    for t in tail:
        regimes = _slot_value_pieces(job, t, dt)
        if len(regimes) == 1 and len(regimes[0][2]) == 1:
            a, b = regimes[0][2][0]
            terms.append(a * g[t] + b * m.rho[t])
        else:
            special[t] = regimes
    if not special:
        return sum(terms)
    m.v = pe.Var(list(special))
    m.q = pe.Var([(t, i) for t, regs in special.items() for i in range(len(regs))], domain=pe.Binary)
    m.v_rows = pe.ConstraintList()
    for t, regimes in special.items():
        if len(regimes) == 1:
            for a, b in regimes[0][2]:
                m.v_rows.add(m.v[t] <= a * g[t] + b * m.rho[t])
            continue
        q = [m.q[t, i] for i in range(len(regimes))]
        kink = (t + 1) * dt - job.deadline_h  # rho at d, where a concave V peaks inside a regime
        top = max(min(a + b * r for a, b in pieces) for lo, hi, pieces in regimes
                  for r in (lo, hi, min(max(kink / dt, lo), hi)))
        m.v_rows.add(sum(q) == g[t])
        m.v_rows.add(m.rho[t] >= sum(lo * qi for (lo, _, _), qi in zip(regimes, q)))
        m.v_rows.add(m.rho[t] <= sum(hi * qi for (_, hi, _), qi in zip(regimes, q)))
        m.v_rows.add(m.v[t] <= top * g[t])
        for (_, _, pieces), qi in zip(regimes, q):
            for a, b in pieces:
                big = max(0.0, top - min(a, a + b))  # frees the row when another regime is chosen
                m.v_rows.add(m.v[t] <= a * g[t] + b * m.rho[t] + big * (1 - qi))
    return sum(terms) + sum(m.v[t] for t in special)


def add_allocation(m: pe.ConcreteModel, avail: np.ndarray, job: Job, dt: float, od_shift_cut: bool,
                   prev: tuple | None = None, unused_work=None) -> None:
    """The allocation part shared by the offline optimum and the online window problem: slots `m.T`,
    o, s, y, r, w, the throughput `m.rate`, overhead and reconfiguration rules.

    `prev` = (o, s, y) of the slot before the first one (Pyomo variables or numbers); None means the
    job starts idle. A change from `prev` in slot 0 is a reconfiguration, as in the simulator.
    `unused_work(m)`, called once `m.rate` exists, gives per slot the work capacity left unused at the
    end of the slot ({t: expression}); it shares every capacity row with `w[t]`.
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
    extra = unused_work(m) if unused_work is not None else {}

    def used(t):
        return m.w[t] + extra[t] if t in extra else m.w[t]

    m.w_cap = pe.Constraint(m.T, rule=lambda m, t: used(t) <= m.rate[t] * dt)
    delta = job.overhead_h
    carry = max(1, math.ceil(delta / dt - 1e-9)) if delta > 0 else 0
    m.J = pe.RangeSet(0, max(carry - 1, 0))

    def overhead_rule(m, t, j):
        if delta <= 0 or t - j < 0:
            return pe.Constraint.Skip
        lost = min(dt, max(0.0, delta - j * dt))  # overhead paid in slot t after a reconfig at t-j
        # w <= H*(dt - lost) when r[t-j] = 1; the big-M is the least that frees the row when r = 0
        return used(t) <= m.rate[t] * (dt - lost) + job.max_rate * lost * (1 - m.r[t - j])

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
    # It is exact for a single instance, where it is what makes the model solve quickly. The unused
    # end of a finishing slot runs at the full rate H, so it shares the row.
    if delta > 0:
        # work lost per GPU added: H(n)/n >= alpha + min(beta, 0)/N_min on N_min..N_max (beta < 0: the
        # smallest count loses the least per GPU; beta > 0 is counted by the u_y term below)
        per_gpu = (tp.alpha + min(tp.beta, 0.0) / job.n_min) if tp.is_linear else min(hk / k for k, hk in tp.table)
        lost0 = min(dt, delta)
        m.u_o = pe.Var(m.T, domain=pe.NonNegativeReals)
        m.u_s = pe.Var(m.T, domain=pe.NonNegativeReals)
        m.u_y = pe.Var(m.T, domain=pe.NonNegativeReals)
        m.u_o_def = pe.Constraint(m.T, rule=lambda m, t: m.u_o[t] >= m.o[t] - (m.o[t - 1] if t > 0 else o0))
        m.u_s_def = pe.Constraint(m.T, rule=lambda m, t: m.u_s[t] >= m.s[t] - (m.s[t - 1] if t > 0 else s0))
        m.u_y_def = pe.Constraint(m.T, rule=lambda m, t: m.u_y[t] >= m.y[t] - (m.y[t - 1] if t > 0 else y0))
        beta = tp.beta if tp.is_linear else 0.0
        m.w_added = pe.Constraint(m.T, rule=lambda m, t: used(t) <= m.rate[t] * dt - lost0 * (
            per_gpu * (m.u_o[t] + m.u_s[t]) + max(beta, 0.0) * m.u_y[t]))

    for label, var, p0 in (("o", m.o, o0), ("s", m.s, s0)):
        up, down = change_rules(var, p0)
        setattr(m, f"r_up_{label}", pe.Constraint(m.T, rule=up))
        setattr(m, f"r_down_{label}", pe.Constraint(m.T, rule=down))
    m.r_start = pe.Constraint(m.T, rule=lambda m, t: m.r[t] >= m.y[t] - (m.y[t - 1] if t > 0 else y0))

    # Symmetry cut, valid when the on-demand price is the same in every slot: a run that starts
    # after an idle slot must hold spot GPUs, since a pure on-demand run there could start one slot
    # earlier at the same cost, the same number of reconfigurations and an earlier completion.
    # Without it the solver explores every placement of on-demand slots in a gap. It holds under
    # fractional billing too: the shifted run finishes (if it does) one slot earlier with the same
    # billed share of its last slot, and every later slot sees the same remaining work and overhead.
    if od_shift_cut:
        m.od_shift = pe.Constraint(m.T, rule=lambda m, t: m.y[t] - m.y[t - 1] <= m.s[t] if t > 0 else pe.Constraint.Skip)


def schedule_of(m: pe.ConcreteModel) -> tuple[np.ndarray, np.ndarray]:
    """The solved allocation `(o, s)` as integer arrays."""
    o = np.array([round(pe.value(m.o[t])) for t in m.T], dtype=np.int64)
    s = np.array([round(pe.value(m.s[t])) for t in m.T], dtype=np.int64)
    return o, s
