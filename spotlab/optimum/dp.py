"""Exact offline optima by dynamic programming where the structure allows it, and a Lagrangian bound.

- `FixedCountDP`: a fixed GPU count (N_min = N_max; the Can't Be Late single instance), all windows at once.
- `WorkLatticeDP`: any GPU range when every slot's work is a whole multiple of one quantum (one window).
- `AllocationRelaxation`: for any job, an upper bound on the optimum and near-optimal schedules (the MILP's
  warm start and outside bound when no DP applies). `exact_dp` picks the DP that applies.

All three follow the simulator's rules (`spotlab.simulation.engine`) and the MILP's value and billing conventions
(`model.py`), and return `OptimumResult`s like `OptimumProblem.solve_window`.

Fixed GPU count. When `N_min == N_max = N` (the Can't Be Late setting is N = 1) every running slot has the same throughput
`h = H(N)`, so the work done by the start of slot t is `h * (t*slot - lost)`, where `lost` is the time
not spent working: idle slots and paid restart overhead. The simulator pays the overhead
`min(pending, slot)` per running slot, with `pending = delta` after a reconfiguration, so with
`delta = m*slot + r` (0 <= r < slot) every slot loses either nothing, a whole slot or `r`. Hence `lost`
is always `A*slot + B*r` for whole numbers A, B: a finite, exact set of levels (no discretisation),
bounded by the slack `horizon - L/h` (more lost time can never finish). Equal sums are merged, so the
Can't Be Late setting (slot 1/6 h, r = 0.1 h: multiples of 1/30 h up to 4 h) has ~120 levels.

State at a slot boundary: the allocation that ran in the previous slot (idle, or k spot + N-k on-demand
GPUs) with how many of its slots have paid overhead (its phase, which matters only when delta > slot),
and the lost-time level. Actions: idle, or run k spot GPUs (k <= a_t); keeping the same k is no
reconfiguration unless it was preempted (then k > a_t and it is not allowed). The job finishes in the
first slot whose capacity covers the remaining work (`h*((t+1)*slot - lost') >= L`, with the simulator's
tolerance), at `T = lost' + L/h`. The value and billing are the optimum model's (`model.py`):

- `"fractional"`: the finishing slot is billed for the time used and V is taken at T: the objective is
  the simulator's utility of the schedule, exactly.
- `"full"` (Can't Be Late): every running slot is billed in full and V is taken at the end of the
  finishing slot, as in the MILP (the simulator's utility of the schedule is then >= the objective).

A schedule that does not finish is worth `-miss_penalty` at best (idle throughout, prices are >= 0); with
`must_finish` it is excluded. The backward pass runs over (windows, states, levels) arrays, one slot at a
time, storing the argmax decisions (int8), and a forward pass reads the schedule back.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from ..errors import SolverError
from ..jobs.job import Job
from .model import BILLINGS
from .solve import OptimumResult

LEVEL_TOL = 1e-9  # lost-time sums closer than this (hours) are the same level
MAX_LEVELS = 20_000  # beyond this the DP is exact but not fast: `auto` leaves it to the MILP
DECISION_BYTES = 64 << 20  # decisions kept per chunk of windows


def dp_applies(job: Job) -> bool:
    """The DP is exact when every running slot has the same throughput: a fixed GPU count."""
    return int(job.n_min) == int(job.n_max)


def window_arrays(T: int, avail, spot_price, od_price) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The first `T` slots of one window's availability and prices, checked (finite, non-negative prices)."""
    avail = np.asarray(avail)[:T]
    sp = np.asarray(spot_price, dtype=float)[:T]
    od = np.asarray(od_price, dtype=float)[:T]
    if avail.shape != (T,) or sp.shape != (T,) or od.shape != (T,):
        raise SolverError(f"the window needs {T} slots of availability and prices")
    for label, arr in (("spot price", sp), ("on-demand price", od)):
        if not np.all(np.isfinite(arr)) or np.any(arr < 0):
            raise SolverError(f"the {label} must be a finite non-negative value for each of the {T} slots")
    return avail, sp, od


@dataclass(frozen=True)
class LostLevels:
    """The lost-time levels `A*slot + B*r` up to the slack, and where +slot / +r lead (`n` = dead)."""

    values: np.ndarray
    plus_slot: np.ndarray
    plus_r: np.ndarray

    @property
    def n(self) -> int:
        return int(self.values.size)


def lost_levels(slack: float, slot: float, r: float, horizon: int) -> LostLevels:
    """Every sum `A*slot + B*r <= slack` (B <= horizon: at most one partial overhead per slot), merged
    within `LEVEL_TOL`. The set is closed under +slot and +r up to the slack, so transitions are lookups."""
    if slack < -LEVEL_TOL:
        return LostLevels(np.zeros(0), np.zeros(0, np.int64), np.zeros(0, np.int64))
    a_max = int(math.floor(max(slack, 0.0) / slot + 1e-9))
    b_max = min(horizon, int(math.floor(max(slack, 0.0) / r + 1e-9))) if r > 0 else 0
    if (a_max + 1) * (b_max + 1) > 50 * MAX_LEVELS:
        raise SolverError(f"the exact DP would need over {50 * MAX_LEVELS:,} lost-time levels here "
                          f"(overhead remainder {r:g} h vs slot {slot:g} h); use method='milp'")
    grid = (np.arange(a_max + 1)[:, None] * slot + np.arange(b_max + 1)[None, :] * r).ravel()
    grid = np.sort(grid[grid <= slack + LEVEL_TOL])
    keep = np.concatenate([[True], np.diff(grid) > LEVEL_TOL])
    values = grid[keep]

    def lookup(target: np.ndarray) -> np.ndarray:
        i = np.searchsorted(values, target - LEVEL_TOL)
        j = np.minimum(i, values.size - 1)
        hit = (i < values.size) & (np.abs(values[j] - target) <= LEVEL_TOL)
        return np.where(hit, j, values.size).astype(np.int64)

    plus_r = lookup(values + r) if r > 0 else np.arange(values.size)
    return LostLevels(values, lookup(values + slot), plus_r)


class FixedCountDP:
    """The exact optimum of a fixed-GPU-count job over `horizon` slots, for many windows at once.

    Same arguments and result type as `OptimumProblem` (`solve.py`), whose MILP it replaces there.
    """

    def __init__(self, job: Job, horizon: int, slot_hours: float, must_finish: bool = True,
                 billing: str = "fractional"):
        if billing not in BILLINGS:
            raise SolverError(f"billing must be one of {', '.join(BILLINGS)}, got {billing!r}")
        if not dp_applies(job):
            raise SolverError(f"the exact DP needs a fixed GPU count (N_min = N_max), the job has "
                              f"N_min={job.n_min}, N_max={job.n_max}; use method='milp'")
        self.job, self.horizon, self.slot_hours = job, int(horizon), float(slot_hours)
        self.must_finish, self.billing = bool(must_finish), billing
        dt, delta = self.slot_hours, float(job.overhead_h)
        self.n = int(job.n_max)
        self.rate = float(job.throughput(self.n))
        self.tol = 1e-9 * max(1.0, float(job.work))  # the simulator's finishing tolerance
        m = int(math.floor(delta / dt + 1e-9))
        r = delta - m * dt
        if abs(r) <= 1e-9 * max(dt, 1.0):
            r = 0.0
        self.m, self.r = m, r
        # phases 1..J of a running allocation: slots of the segment already run (capped once overhead is paid)
        self.phases = max(1, m + (1 if r > 0 else 0))
        self.slack = self.horizon * dt - float(job.work) / self.rate + self.tol / self.rate
        self.levels = lost_levels(self.slack, dt, r, self.horizon)

    @property
    def state_count(self) -> int:
        return (1 + (self.n + 1) * self.phases) * self.levels.n

    def _loss(self, phase: int) -> str:
        """What the next running slot loses after `phase` slots of the segment (0 = a reconfiguration)."""
        if self.job.overhead_h <= 0:
            return "none"
        if phase < self.m:
            return "slot"
        if phase == self.m and self.r > 0:
            return "r"
        return "none"

    def _shift(self, phase: int) -> np.ndarray:
        kind = self._loss(phase)
        lv = self.levels
        return {"none": np.arange(lv.n), "slot": lv.plus_slot, "r": lv.plus_r}[kind]

    def _state(self, k: int, phase: int) -> int:
        return 1 + k * self.phases + (phase - 1)

    def solve_windows(self, avail, spot_price, od_price) -> list[OptimumResult]:
        """The optimum of every window: arrays (windows, >= horizon); one result per window."""
        started = time.perf_counter()
        T = self.horizon
        avail = np.atleast_2d(np.asarray(avail))
        sp = np.atleast_2d(np.asarray(spot_price, dtype=float))
        od = np.atleast_2d(np.asarray(od_price, dtype=float))
        if avail.ndim != 2 or avail.shape[1] < T or sp.shape != avail.shape or od.shape != avail.shape:
            raise SolverError(f"the windows need {T} slots of availability and prices, got shapes "
                              f"{avail.shape}, {sp.shape}, {od.shape}")
        avail, sp, od = avail[:, :T], sp[:, :T], od[:, :T]
        for label, arr in (("spot price", sp), ("on-demand price", od)):
            if not np.all(np.isfinite(arr)) or np.any(arr < 0):
                raise SolverError(f"the {label} must be a finite non-negative value for each of the {T} slots")
        if self.levels.n > MAX_LEVELS:
            raise SolverError(f"the exact DP has {self.levels.n:,} lost-time levels here (limit {MAX_LEVELS:,}); "
                              "use method='milp'")
        W = avail.shape[0]
        states = 1 + (self.n + 1) * self.phases
        per_window = max(1, T * states * max(self.levels.n, 1))
        chunk = max(1, DECISION_BYTES // per_window)
        out: list[OptimumResult] = []
        for lo in range(0, W, chunk):
            sl = slice(lo, min(W, lo + chunk))
            out.extend(self._solve_chunk(avail[sl], sp[sl], od[sl], lo))
        seconds = (time.perf_counter() - started) / max(W, 1)
        return [OptimumResult(r.o, r.s, r.objective, r.status, r.solver, seconds, r.bound, r.gap) for r in out]

    def solve_window(self, avail, spot_price, od_price, *_, **__) -> OptimumResult:
        """One window (the `OptimumProblem.solve_window` signature; solver, time limit and gap do not apply)."""
        return self.solve_windows(np.asarray(avail)[None, :], np.asarray(spot_price)[None, :],
                                  np.asarray(od_price)[None, :])[0]

    def _terminal(self, t: int, price: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Levels (after slot t's loss) at which slot t finishes the job, and what finishing is worth there:
        V - the slot's bill, per window and spot count k (price: (W, N+1))."""
        job, dt, lv = self.job, self.slot_hours, self.levels.values
        fin = self.rate * ((t + 1) * dt - lv) >= job.work - self.tol
        if not fin.any():
            return fin, np.zeros((price.shape[0], price.shape[1], 0))
        if self.billing == "fractional":
            done_at = np.minimum(lv[fin] + job.work / self.rate, (t + 1) * dt)
            value = job.value_at(done_at)
            billed = done_at - t * dt
            worth = value[None, None, :] - price[:, :, None] * billed[None, None, :]
        else:
            value = float(job.value_at((t + 1) * dt))
            worth = np.broadcast_to(value - price[:, :, None] * dt, price.shape + (int(fin.sum()),))
        return fin, worth

    def _solve_chunk(self, avail, sp, od, offset: int) -> list[OptimumResult]:
        W, T = avail.shape
        N, J, dt = self.n, self.phases, self.slot_hours
        L = self.levels.n
        S = 1 + (N + 1) * J
        dead = -np.inf if self.must_finish else -float(self.job.miss_penalty)
        ks = np.arange(N + 1)
        # G[w, state, level] = best utility from the start of slot t on; level L = beyond the slack (dead)
        G = np.full((W, S, L + 1), dead)
        decisions = np.zeros((T, W, S, L), dtype=np.int8)  # 0 idle, 1 + k: run k spot GPUs
        shift0 = self._shift(0)
        shifts = [self._shift(j) for j in range(J + 1)]
        idle_shift = self.levels.plus_slot
        reach = np.searchsorted(self.levels.values, np.arange(T) * dt + LEVEL_TOL, side="right")
        for t in range(T - 1, -1, -1):
            n = int(reach[t])  # levels reachable at the start of slot t (lost <= t*slot)
            if n == 0:
                continue
            price = (N - ks)[None, :] * od[:, t, None] + ks[None, :] * sp[:, t, None]  # (W, N+1)
            fin, worth = self._terminal(t, price)
            blocked = [np.flatnonzero(avail[:, t] < k) for k in range(N + 1)]  # windows where k spot GPUs cannot run

            def after(k: int, q: int) -> np.ndarray:
                """Value after running k spot GPUs in slot t into phase q, per level after the slot's loss."""
                v = G[:, self._state(k, q), :] - price[:, k, None] * dt
                if fin.any():
                    v[:, :L][:, fin] = worth[:, k, :]
                return v

            post = {(k, q): after(k, q) for k in range(N + 1) for q in range(1, J + 1)}
            idle = G[:, 0, idle_shift[:n]]  # (W, n)
            best_v = best_k = second_v = second_k = None
            for k in range(N + 1):  # best and second-best (re)start, elementwise over (W, n)
                v = self._gather(post[(k, 1)], shift0, n, blocked[k])
                if best_v is None:
                    best_v, best_k = v, np.zeros(v.shape, np.int8)
                    second_v, second_k = np.full(v.shape, -np.inf), np.zeros(v.shape, np.int8)
                    continue
                top = v > best_v
                mid = ~top & (v > second_v)
                second_v = np.where(top, best_v, np.where(mid, v, second_v))
                second_k = np.where(top, best_k, np.where(mid, np.int8(k), second_k))
                best_v = np.where(top, v, best_v)
                best_k = np.where(top, np.int8(k), best_k)
            newG = np.full_like(G, dead)
            run = best_v > idle
            newG[:, 0, :n] = np.where(run, best_v, idle)
            decisions[t, :, 0, :n] = np.where(run, best_k + 1, 0)
            for k in range(N + 1):
                mine = best_k == k
                other_v = np.where(mine, second_v, best_v)
                other_a = np.where(mine, second_k, best_k) + 1
                start_better = other_v > idle
                base_v = np.where(start_better, other_v, idle)
                base_a = np.where(start_better, other_a, 0).astype(np.int8)
                for j in range(1, J + 1):
                    st = self._state(k, j)
                    cont = self._gather(post[(k, min(j + 1, J))], shifts[j], n, blocked[k])
                    better = cont > base_v
                    newG[:, st, :n] = np.where(better, cont, base_v)
                    decisions[t, :, st, :n] = np.where(better, np.int8(k + 1), base_a)
            G = newG
        objective = G[:, 0, 0] if L else np.full(W, dead)
        o, s = self._read_back(decisions, avail)
        results = []
        for w in range(W):
            if not np.isfinite(objective[w]):
                raise SolverError(f"window {offset + w}: the offline problem is infeasible: the job cannot be finished "
                                  "by its hard deadline on this trace (check the deadline, N_min/N_max and availability)")
            obj = float(objective[w])
            results.append(OptimumResult(o=o[w], s=s[w], objective=obj, status="optimal", solver="dp",
                                         seconds=0.0, bound=obj, gap=0.0))
        return results

    @staticmethod
    def _gather(values: np.ndarray, shift: np.ndarray, n: int, blocked: np.ndarray) -> np.ndarray:
        """`values` at the shifted levels of the first n levels, -inf in the `blocked` windows (a view
        when the shift is the identity: no overhead to pay)."""
        if shift[n - 1] == n - 1:  # shifts only move up, so this is the identity on the prefix
            out = values[:, :n]
            if blocked.size:
                out = out.copy()
        else:
            out = values[:, shift[:n]]
        if blocked.size:
            out[blocked] = -np.inf
        return out

    def _read_back(self, decisions: np.ndarray, avail: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Follow the stored decisions from the idle start (level 0) to the finish."""
        T, W = decisions.shape[:2]
        N, J, L = self.n, self.phases, self.levels.n
        o = np.zeros((W, T), dtype=np.int64)
        s = np.zeros((W, T), dtype=np.int64)
        if L == 0:
            return o, s
        state = np.zeros(W, dtype=np.int64)
        level = np.zeros(W, dtype=np.int64)
        live = np.ones(W, dtype=bool)  # neither finished nor beyond the slack
        shifts = np.stack([self._shift(j) for j in range(J + 1)] + [self.levels.plus_slot])  # last: idle
        shifts = np.concatenate([shifts, np.full((J + 2, 1), L)], axis=1)  # dead stays dead
        rows = np.arange(W)
        for t in range(T):
            a = np.where(live, decisions[t, rows, state, np.minimum(level, L - 1)], 0).astype(np.int64)
            k = a - 1
            running = a > 0
            prev_k = (state - 1) // J
            prev_j = (state - 1) % J + 1
            same = running & (state > 0) & (prev_k == k)
            phase_before = np.where(same, prev_j, 0)
            new_phase = np.where(same, np.minimum(prev_j + 1, J), 1)
            which = np.where(running, phase_before, J + 1)
            level = np.where(live, shifts[which, level], level)
            o[:, t] = np.where(running, N - k, 0)
            s[:, t] = np.where(running, k, 0)
            state = np.where(running, 1 + k * J + new_phase - 1, 0)
            finished = running & (level < L)
            if finished.any():
                lv = self.levels.values[np.minimum(level, L - 1)]
                finished &= self.rate * ((t + 1) * self.slot_hours - lv) >= self.job.work - self.tol
            live &= ~finished & (level < L)
            if not live.any():
                break
        return o, s


# --- Multi-GPU: a Lagrangian relaxation over allocation states (bound and schedules) -------------------------


@dataclass(frozen=True)
class LagrangeResult:
    """`bound`: a proven upper bound on the utility of every schedule of the job on the window;
    `schedules`: the relaxation's paths (o, s) around the best multiplier, to be replayed and kept if good."""

    bound: float
    multiplier: float
    schedules: list
    seconds: float


class AllocationRelaxation:
    """Upper bound on the optimum of any job (N_min..N_max, linear or table throughput), by pricing work.

    The only constraint that couples the slots is "the work adds up to L". Pricing it at `lam >= 0` per
    unit, `g(lam) = max over schedules and finishing slot tau of V(T) - cost + lam*(work - L)` is a DP over
    (allocation that ran last, overhead phase) with no work in the state: each slot's work is
    `H(n)*(slot - loss)` as in the simulator, and the finishing slot's used time u (after its loss) is chosen
    freely in [loss, slot] (fractional billing; the whole slot under full billing, V at its end as in the MILP).
    A real schedule finishing at T uses exactly L, so its utility is one term of that max: `g(lam) >= OPT`
    for every lam, and `min g` is the bound. The gap left is the integrality of one path choice, small because
    the fractional end of the last slot absorbs the overshoot (0.05% above the optimum on the benchmark's H100
    week, in 0.5 s; HiGHS's own bound after 300 s: 0.06%). Not finishing is worth at most `-miss_penalty`.
    """

    def __init__(self, job: Job, horizon: int, slot_hours: float, must_finish: bool = True,
                 billing: str = "fractional"):
        self.job, self.horizon, self.dt = job, int(horizon), float(slot_hours)
        self.must_finish, self.billing = bool(must_finish), billing
        allocs = [(n - s, s) for n in range(job.n_min, job.n_max + 1) for s in range(0, n + 1)]
        self.o = np.array([a for a, _ in allocs], dtype=np.int64)
        self.s = np.array([b for _, b in allocs], dtype=np.int64)
        self.h = job.throughput(self.o + self.s).astype(float)
        delta, dt = float(job.overhead_h), self.dt
        m = int(math.floor(delta / dt + 1e-9))
        r = delta - m * dt
        r = 0.0 if abs(r) <= 1e-9 * max(dt, 1.0) else r
        self.J = max(1, m + (1 if r > 0 else 0))
        # hours lost in the next slot after `phase` running slots of a segment (0 = a reconfiguration)
        self.loss = np.array([0.0 if delta <= 0 else (dt if j < m else (r if j == m else 0.0))
                              for j in range(self.J + 1)])

    def _sweep(self, lams: np.ndarray, avail, sp, od, keep: bool):
        """g(lam) + lam*L for each multiplier (vector), and the argmax decisions when `keep`."""
        dt, T, J = self.dt, self.horizon, self.J
        K, Lm = self.o.size, lams.size
        # F[lam, k, j]: best -cost + lam*work so far, having run allocation k for j slots (capped); idle apart
        F = np.full((Lm, K, J), -np.inf)
        idle = np.zeros(Lm)
        best_end = np.full(Lm, -np.inf)
        end_at = np.zeros((Lm, 4), dtype=np.int64)  # t, previous state (k or -1), j, action k
        trace = [] if keep else None
        for t in range(T):
            price = self.o * od[t] + self.s * sp[t]  # (K,)
            ok = self.s <= avail[t]
            # best state to come from: idle or any (k', j); for a reconfiguration into k, not from k itself
            per_k = F.max(axis=2)  # (Lm, K)
            arg_j = F.argmax(axis=2)
            cand = np.concatenate([idle[:, None], per_k], axis=1)  # 0 = idle
            order = np.argsort(-cand, axis=1)[:, :2]
            b1, b2 = order[:, 0], order[:, 1]
            v1 = np.take_along_axis(cand, b1[:, None], 1)[:, 0]
            v2 = np.take_along_axis(cand, b2[:, None], 1)[:, 0]
            from_k = np.where((b1[:, None] - 1) == np.arange(K)[None, :], b2[:, None], b1[:, None])  # (Lm, K)
            from_v = np.where((b1[:, None] - 1) == np.arange(K)[None, :], v2[:, None], v1[:, None])
            newF = np.full_like(F, -np.inf)
            dec = np.zeros((Lm, K, J), dtype=np.int64) if keep else None  # source: -1 idle, k' >= 0 reconfig, -2 continue
            gain_re = -price * dt + lams[:, None] * self.h[None, :] * (dt - self.loss[0])  # (Lm, K)
            newF[:, :, 0] = np.where(ok[None, :], from_v + gain_re, -np.inf)
            if keep:
                dec[:, :, 0] = from_k - 1
            for j in range(1, J + 1):
                q = min(j + 1, J) - 1
                cont = F[:, :, j - 1] - price[None, :] * dt + lams[:, None] * self.h[None, :] * (dt - self.loss[j])
                cont = np.where(ok[None, :], cont, -np.inf)
                better = cont > newF[:, :, q]
                newF[:, :, q] = np.where(better, cont, newF[:, :, q])
                if keep:
                    dec[:, :, q] = np.where(better, -2 - (j - 1), dec[:, :, q])
            # finishing in slot t from each source: a reconfiguration (from the best other) or a continuation
            for j in range(0, J + 1):
                base = from_v if j == 0 else F[:, :, j - 1]
                ell = self.loss[j]
                val = self._finish_gain(t, price, ell, lams) + base  # (Lm, K)
                val = np.where(ok[None, :], val, -np.inf)
                kbest = np.argmax(val, axis=1)
                vbest = val[np.arange(Lm), kbest]
                better = vbest > best_end
                if better.any():
                    best_end = np.where(better, vbest, best_end)
                    src = np.where(j == 0, from_k[np.arange(Lm), kbest] - 1, -2 - (j - 1))
                    end_at[better] = np.stack([np.full(Lm, t), src, np.full(Lm, j), kbest], axis=1)[better]
            k_run = np.argmax(per_k, axis=1)
            v_run = per_k[np.arange(Lm), k_run]
            stop = v_run > idle  # idle in slot t after running in t-1
            if keep:
                trace.append((dec, arg_j, np.where(stop, k_run, -1)))
            idle = np.where(stop, v_run, idle)
            F = newF
        return best_end, end_at, trace

    def _finish_gain(self, t: int, price: np.ndarray, ell: float, lams: np.ndarray) -> np.ndarray:
        """Best V(T) - bill + lam*work of finishing in slot t after a loss `ell`, per multiplier and allocation."""
        job, dt = self.job, self.dt
        if self.billing == "full":
            v = float(job.value_at((t + 1) * dt))
            return v - price[None, :] * dt + lams[:, None] * self.h[None, :] * (dt - ell)
        # V is linear in u between its breakpoints (d, and gamma*d where it drops to -P): the max is at one
        cands = [ell, dt] + [x - t * dt for x in (job.deadline_h, job.hard_deadline_h) if ell < x - t * dt < dt]
        best = None
        for u in cands:
            v = float(job.value_at(t * dt + u))
            g = v - price[None, :] * u + lams[:, None] * self.h[None, :] * (u - ell)
            best = g if best is None else np.maximum(best, g)
        return best

    def solve(self, avail, spot_price, od_price, iters: int = 4, grid: int = 48) -> LagrangeResult:
        """min over lam of g(lam), by refining a grid (g is convex and piecewise linear in lam)."""
        started = time.perf_counter()
        T, job = self.horizon, self.job
        avail = np.asarray(avail)[:T]
        sp = np.asarray(spot_price, dtype=float)[:T]
        od = np.asarray(od_price, dtype=float)[:T]
        hi = float(np.max(np.maximum(od, sp)) / max(float(np.min(self.h / np.maximum(self.o + self.s, 1))), 1e-12))
        hi = 2.0 * hi + 2.0 * abs(float(job.value)) / max(job.work, 1e-12) + 1.0
        lo = 0.0
        floor = -np.inf if self.must_finish else -float(job.miss_penalty)
        best_g, best_lam = np.inf, 0.0
        for _ in range(iters):
            lams = np.linspace(lo, hi, grid)
            ends, _, _ = self._sweep(lams, avail, sp, od, keep=False)
            g = np.maximum(ends - lams * job.work, floor)
            i = int(np.argmin(g))
            if g[i] < best_g:
                best_g, best_lam = float(g[i]), float(lams[i])
            step = (hi - lo) / (grid - 1)
            lo, hi = max(0.0, lams[i] - step), lams[i] + step
        # schedules: the paths at and just above the best multiplier (more work: they tend to finish)
        lams = best_lam * np.array([1.0, 1.0005, 1.002, 1.01, 1.03, 1.1]) + np.array([0, 1e-6, 1e-5, 1e-4, 1e-3, 1e-2])
        ends, end_at, trace = self._sweep(lams, avail, sp, od, keep=True)
        schedules = [self.trim(*self._path(i, end_at[i], trace), avail) for i in range(lams.size) if np.isfinite(ends[i])]
        return LagrangeResult(best_g, best_lam, schedules, time.perf_counter() - started)

    def trim(self, o: np.ndarray, s: np.ndarray, avail: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The schedule as the simulator runs it: nothing after the slot where the work is done (a relaxed
        path may overshoot), so that a model given it as a start is not billed for slots never run."""
        job, dt = self.job, self.dt
        o, s = o.copy(), s.copy()
        done, pending, po, ps = 0.0, 0.0, 0, 0
        tol = 1e-9 * max(1.0, job.work)
        for t in range(o.size):
            n = o[t] + s[t]
            if n == 0:
                po = ps = 0
                continue
            preempted = ps > avail[t]
            if o[t] != po or s[t] != ps or preempted:
                pending = float(job.overhead_h)
            lost = min(pending, dt)
            done += float(job.throughput(n)) * (dt - lost)
            pending = max(pending - dt, 0.0)
            po, ps = o[t], s[t]
            if done >= job.work - tol:
                o[t + 1:] = 0
                s[t + 1:] = 0
                break
        return o, s

    def _path(self, i: int, end, trace) -> tuple[np.ndarray, np.ndarray]:
        """Walk the decisions back from the finishing slot `end` = (t, source, j, k)."""
        T = self.horizon
        o = np.zeros(T, dtype=np.int64)
        s = np.zeros(T, dtype=np.int64)
        t, src, j, k = (int(x) for x in end)
        o[t], s[t] = self.o[k], self.s[k]
        # state before slot t: continuation of k at phase j-1 (index j-1), or a reconfiguration from src
        if src <= -2:
            state = (k, -2 - src)  # (alloc, phase index)
        elif src == -1:
            state = None
        else:
            state = (src, int(trace[t][1][i, src]))
        for tt in range(t - 1, -1, -1):
            if state is None:  # idle in slot tt: before it idle too, or the allocation that stopped
                k_stop = int(trace[tt][2][i])
                if k_stop >= 0:
                    state = (k_stop, int(trace[tt][1][i, k_stop]))
                continue
            kk, q = state
            o[tt], s[tt] = self.o[kk], self.s[kk]
            d = int(trace[tt][0][i, kk, q])
            if d <= -2:
                state = (kk, -2 - d)
            elif d == -1:
                state = None
            else:
                state = (d, int(trace[tt][1][i, d]))
        return o, s


# --- Multi-GPU: exact DP when the work per slot lives on a lattice -------------------------------------------


def work_quantum(increments, limit_denominator: int = 10_000) -> float | None:
    """The largest q such that every increment is a whole multiple of q (to 1e-12), or None when they are
    not commensurate with a small denominator (then the lattice DP does not apply)."""
    from fractions import Fraction

    fracs = []
    for x in increments:
        if x <= 0:
            continue
        f = Fraction(float(x)).limit_denominator(limit_denominator)
        if abs(float(f) - float(x)) > 1e-12 * max(1.0, abs(float(x))):
            return None
        fracs.append(f)
    if not fracs:
        return None
    num = 0
    den = 1
    for f in fracs:  # gcd of fractions = gcd(numerators) / lcm(denominators)
        den = den * f.denominator // math.gcd(den, f.denominator)
    for f in fracs:
        num = math.gcd(num, f.numerator * (den // f.denominator))
    return num / den


class WorkLatticeDP:
    """The exact optimum of any job whose per-slot work `H(n)*(slot - loss)` is a whole multiple of one
    quantum q (e.g. H(n) = n + 0.5 with 1-h slots and a 0.25-h overhead: q = 1/8): the DP's state is
    (allocation that ran last, overhead phase, work done = i*q), over one window, backwards, with the
    decisions kept (int8) and read forward. The finishing slot, its bill and V(T) are the simulator's
    (fractional) or the MILP's (full billing). `max_cells` bounds slots x states x work levels."""

    def __init__(self, job: Job, horizon: int, slot_hours: float, must_finish: bool = True,
                 billing: str = "fractional", max_cells: int = 60_000_000):
        if billing not in BILLINGS:
            raise SolverError(f"billing must be one of {', '.join(BILLINGS)}, got {billing!r}")
        self.job, self.horizon, self.dt = job, int(horizon), float(slot_hours)
        self.must_finish, self.billing = bool(must_finish), billing
        self.rel = AllocationRelaxation(job, horizon, slot_hours, must_finish, billing)
        rel = self.rel
        self.tol = 1e-9 * max(1.0, float(job.work))
        incs = [h * (self.dt - ell) for h in np.unique(rel.h) for ell in np.unique(rel.loss)]
        self.q = work_quantum(incs)
        self.levels = 0 if self.q is None else int(math.ceil((job.work - self.tol) / self.q - 1e-9))
        self.states = 1 + rel.o.size * rel.J
        self.cells = self.horizon * self.states * max(self.levels, 1)
        self.max_cells = int(max_cells)

    @property
    def applies(self) -> bool:
        return self.q is not None and 0 < self.cells <= self.max_cells

    def solve_window(self, avail, spot_price, od_price, *_, **__) -> OptimumResult:
        started = time.perf_counter()
        if not self.applies:
            raise SolverError("the work-lattice DP does not apply here (work per slot not on a small lattice, or "
                              f"{self.cells:,} cells over the limit of {self.max_cells:,}); use method='milp'")
        T, rel, job, dt, q = self.horizon, self.rel, self.job, self.dt, self.q
        avail, sp, od = window_arrays(T, avail, spot_price, od_price)
        K, J, NW = rel.o.size, rel.J, self.levels
        S = self.states
        dead = -np.inf if self.must_finish else -float(job.miss_penalty)
        lv = np.arange(NW) * q  # work done at each level
        # work units a slot adds, per allocation and phase before it (phase 0 = a reconfiguration)
        units = np.rint(rel.h[:, None] * (dt - rel.loss[None, :]) / q).astype(np.int64)  # (K, J+1)
        G = np.full((S, NW + 1), dead)  # column NW: never read (a finishing move is terminal)
        decisions = np.zeros((T, S, NW), dtype=np.int8 if K < 127 else np.int16)
        idx = np.arange(NW)
        rows = np.arange(K)
        for t in range(T - 1, -1, -1):
            price = rel.o * od[t] + rel.s * sp[t]  # (K,)
            blocked = rel.s > avail[t]

            def post(phase: int) -> np.ndarray:
                """(K, NW): value of running k in slot t after `phase` slots of it, from each work level."""
                ell = rel.loss[phase]
                nxt = idx[None, :] + units[:, phase][:, None]  # (K, NW)
                fin = (nxt * q >= job.work - self.tol)
                q_next = min(phase + 1, J)
                states = 1 + rows * J + (q_next - 1)
                out = G[states[:, None], np.minimum(nxt, NW)] - price[:, None] * dt
                if fin.any():
                    kk, ii = np.nonzero(fin)
                    need = np.maximum(job.work - lv[ii], 0.0) / rel.h[kk]
                    if self.billing == "fractional":
                        used = np.minimum(ell + need, dt)
                        out[kk, ii] = job.value_at(t * dt + used) - price[kk] * used
                    else:
                        out[kk, ii] = float(job.value_at((t + 1) * dt)) - price[kk] * dt
                out[blocked] = -np.inf
                return out

            recon = post(0)
            b1 = np.argmax(recon, axis=0)
            v1 = recon[b1, idx]
            tmp = recon.copy()
            tmp[b1, idx] = -np.inf
            b2 = np.argmax(tmp, axis=0)
            v2 = tmp[b2, idx]
            stay = G[0, :NW]
            newG = np.full_like(G, dead)
            go = v1 > stay
            newG[0, :NW] = np.where(go, v1, stay)
            decisions[t, 0] = np.where(go, b1 + 1, 0)
            # from allocation k (any phase): idle, the best restart into another allocation, or continue k
            mine = b1[None, :] == rows[:, None]  # (K, NW)
            other_v = np.where(mine, v2[None, :], v1[None, :])
            other_a = np.where(mine, b2[None, :], b1[None, :]) + 1
            better = other_v > stay[None, :]
            base_v = np.where(better, other_v, stay[None, :])
            base_a = np.where(better, other_a, 0)
            for j in range(1, J + 1):
                c = post(j)
                win = c > base_v
                st = 1 + rows * J + (j - 1)
                newG[st, :NW] = np.where(win, c, base_v)
                decisions[t, st] = np.where(win, rows[:, None] + 1, base_a)
            G = newG
        objective = float(G[0, 0]) if NW else dead
        if not np.isfinite(objective):
            raise SolverError("the offline problem is infeasible: the job cannot be finished by its hard deadline "
                              "on this trace (check the deadline, N_min/N_max and availability)")
        o, s = self._read_back(decisions, units)
        return OptimumResult(o=o, s=s, objective=objective, status="optimal", solver="dp",
                             seconds=time.perf_counter() - started, bound=objective, gap=0.0)

    def _read_back(self, decisions: np.ndarray, units: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        T, rel, J = self.horizon, self.rel, self.rel.J
        o = np.zeros(T, dtype=np.int64)
        s = np.zeros(T, dtype=np.int64)
        state, level = 0, 0
        for t in range(T):
            a = int(decisions[t, state, level])
            if a == 0:
                state = 0
                continue
            k = a - 1
            prev_k, prev_j = (state - 1) // J, (state - 1) % J + 1
            phase = prev_j if (state > 0 and prev_k == k) else 0
            o[t], s[t] = rel.o[k], rel.s[k]
            level += int(units[k, phase])
            state = 1 + k * J + min(phase + 1, J) - 1
            if level * self.q >= self.job.work - self.tol:
                break
        return o, s


def exact_dp(job: Job, horizon: int, slot_hours: float, must_finish: bool = True, billing: str = "fractional"):
    """The exact DP that applies to this job, or None: the lost-time DP of a fixed GPU count when it is small
    enough, else the work-lattice DP when the work per slot is on a lattice of a manageable size, else the
    Pareto-label DP for a value >= 0 (which may still give up on a window: `TooManyLabels`)."""
    if dp_applies(job):
        dp = FixedCountDP(job, horizon, slot_hours, must_finish, billing)
        if dp.levels.n <= MAX_LEVELS:
            return dp
    lattice = WorkLatticeDP(job, horizon, slot_hours, must_finish, billing)
    if lattice.applies:
        return lattice
    labels = ParetoLabelDP(job, horizon, slot_hours, must_finish, billing)
    return labels if labels.applies else None


# --- Multi-GPU, any throughput: exact DP over Pareto labels (work done, utility so far) ----------------------


class TooManyLabels(Exception):
    """The label DP outgrew its budget here; the caller falls back to the MILP."""


def _pareto(w: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Indices of the labels no other label beats in both work done and utility so far."""
    if w.size == 0:
        return np.zeros(0, dtype=np.int64)
    order = np.lexsort((-v, -w))  # most work first, then best utility
    vs = v[order]
    prev = np.concatenate([[-np.inf], np.maximum.accumulate(vs)[:-1]])
    return order[vs > prev]


class ParetoLabelDP:
    """The exact optimum of any job with a value >= 0 (any GPU range, any throughput), for short horizons.

    Forward over slots, each state (allocation that ran last, overhead phase; idle) keeps the labels
    (work done, utility so far) that no other label beats in both: with V non-increasing in the completion
    time (value >= 0), more work and more utility can only be better, so nothing optimal is dropped. A
    restart into allocation k draws on the Pareto set of all states at once (restarting from k itself is
    dominated by continuing it, at the same cost with more work). Labels that can no longer finish by the
    horizon are dropped; the finishing slot, its bill and V(T) are the simulator's / the MILP's, as in the
    other DPs. Past `max_labels` labels in a slot it gives up (`TooManyLabels`) and the MILP is used.
    """

    def __init__(self, job: Job, horizon: int, slot_hours: float, must_finish: bool = True,
                 billing: str = "fractional", max_labels: int = 200_000):
        if billing not in BILLINGS:
            raise SolverError(f"billing must be one of {', '.join(BILLINGS)}, got {billing!r}")
        self.job, self.horizon, self.dt = job, int(horizon), float(slot_hours)
        self.must_finish, self.billing = bool(must_finish), billing
        self.rel = AllocationRelaxation(job, horizon, slot_hours, must_finish, billing)
        self.max_labels = int(max_labels)
        self.tol = 1e-9 * max(1.0, float(job.work))

    @property
    def applies(self) -> bool:
        return float(self.job.value) >= 0

    def solve_window(self, avail, spot_price, od_price, *_, **__) -> OptimumResult:
        started = time.perf_counter()
        T, rel, job, dt = self.horizon, self.rel, self.job, self.dt
        avail, sp, od = window_arrays(T, avail, spot_price, od_price)
        if not self.applies:
            raise SolverError("the label DP needs a job value >= 0; use method='milp'")
        K, J, L = rel.o.size, rel.J, float(job.work)
        S = 1 + K * J
        fastest = float(job.max_rate) * dt
        # labels[state] = (work, utility, parent state, parent index) at the end of the current slot
        empty = (np.zeros(0), np.zeros(0), np.zeros(0, np.int64), np.zeros(0, np.int64))
        labels = [empty] * S
        labels[0] = (np.zeros(1), np.zeros(1), np.full(1, -1), np.full(1, -1))
        history = [labels]
        best = (-np.inf, None)  # (utility, (t, k, source state, source index))
        for t in range(T):
            price = rel.o * od[t] + rel.s * sp[t]
            ok = rel.s <= avail[t]
            sizes = [lab[0].size for lab in labels]
            uw = np.concatenate([lab[0] for lab in labels])
            uv = np.concatenate([lab[1] for lab in labels])
            ust = np.repeat(np.arange(S), sizes)
            uix = np.concatenate([np.arange(n) for n in sizes])
            keep = _pareto(uw, uv)
            uw, uv, ust, uix = uw[keep], uv[keep], ust[keep], uix[keep]
            if uw.size > self.max_labels:
                raise TooManyLabels(f"{uw.size} labels at slot {t}")
            reach = L - self.tol - (T - t - 1) * fastest  # below this after slot t, the job cannot finish
            new = [empty] * S
            new[0] = (uw, uv, ust, uix)  # idle: work and utility unchanged
            incoming: dict[int, list] = {}
            for k in np.flatnonzero(ok):
                sources = [(0, uw, uv, ust, uix, 1)]  # restart from anything
                for j in range(1, J + 1):
                    w, v, _, _ = labels[1 + k * J + (j - 1)]
                    if w.size:
                        sources.append((j, w, v, np.full(w.size, 1 + k * J + (j - 1)), np.arange(w.size),
                                        min(j + 1, J)))
                for phase, w, v, st, ix, q in sources:
                    cap = rel.h[k] * (dt - rel.loss[phase])
                    w2 = w + cap
                    fin = w2 >= L - self.tol
                    if fin.any():
                        need = np.maximum(L - w[fin], 0.0) / rel.h[k]
                        if self.billing == "fractional":
                            used = np.minimum(rel.loss[phase] + need, dt)
                            worth = v[fin] + job.value_at(t * dt + used) - price[k] * used
                        else:
                            worth = v[fin] + float(job.value_at((t + 1) * dt)) - price[k] * dt
                        i = int(np.argmax(worth))
                        if worth[i] > best[0]:
                            best = (float(worth[i]), (t, int(k), int(st[fin][i]), int(ix[fin][i])))
                    go = ~fin & (w2 >= reach)
                    if go.any():
                        incoming.setdefault(1 + k * J + (q - 1), []).append(
                            (w2[go], v[go] - price[k] * dt, st[go], ix[go]))
            for state, parts in incoming.items():
                w = np.concatenate([p[0] for p in parts])
                v = np.concatenate([p[1] for p in parts])
                st = np.concatenate([p[2] for p in parts])
                ix = np.concatenate([p[3] for p in parts])
                keep = _pareto(w, v)
                new[state] = (w[keep], v[keep], st[keep], ix[keep])
            labels = new
            history.append(labels)
        floor = -np.inf if self.must_finish else -float(job.miss_penalty)
        o = np.zeros(T, dtype=np.int64)
        s = np.zeros(T, dtype=np.int64)
        if best[0] >= floor and best[1] is not None:
            objective = best[0]
            t, k, st, ix = best[1]
            o[t], s[t] = rel.o[k], rel.s[k]
            for tt in range(t - 1, -1, -1):  # history[tt + 1] holds the labels at the end of slot tt
                if st > 0:
                    kk = (st - 1) // J
                    o[tt], s[tt] = rel.o[kk], rel.s[kk]
                lab = history[tt + 1][st]
                st, ix = int(lab[2][ix]), int(lab[3][ix])
        elif np.isfinite(floor):
            objective = floor
        else:
            raise SolverError("the offline problem is infeasible: the job cannot be finished by its hard deadline "
                              "on this trace (check the deadline, N_min/N_max and availability)")
        return OptimumResult(o=o, s=s, objective=float(objective), status="optimal", solver="dp",
                             seconds=time.perf_counter() - started, bound=float(objective), gap=0.0)
