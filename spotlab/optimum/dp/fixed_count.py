"""The exact optimum of a fixed-GPU-count job (N_min = N_max = N; the Can't Be Late setting is N = 1), for
many windows at once: a DP over the lost-time levels of `lost_time.py`.

Every running slot has the same throughput `h = H(N)`, so the work done by the start of slot t is
`h * (t*slot - lost)`, and `lost` (idle slots and paid restart overhead) takes finitely many exact values.

State at a slot boundary: the allocation that ran in the previous slot (idle, or k spot + N-k on-demand
GPUs) with how many of its slots have paid overhead (its phase, which matters only when delta > slot),
and the lost-time level. Actions: idle, or run k spot GPUs (k <= a_t); keeping the same k is no
reconfiguration unless it was preempted (then k > a_t and it is not allowed). The job finishes in the
first slot whose capacity covers the remaining work (`h*((t+1)*slot - lost') >= L`, with the simulator's
tolerance), at `T = lost' + L/h`. The value and billing are the optimum model's (`optimum/model.py`):

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

import numpy as np

from ...errors import SolverError
from ...jobs.job import Job
from ..model import BILLINGS
from ..solve import OptimumResult
from .lost_time import LEVEL_TOL, MAX_LEVELS, lost_levels

DECISION_BYTES = 64 << 20  # decisions kept per chunk of windows


def dp_applies(job: Job) -> bool:
    """The DP is exact when every running slot has the same throughput: a fixed GPU count."""
    return int(job.n_min) == int(job.n_max)


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
