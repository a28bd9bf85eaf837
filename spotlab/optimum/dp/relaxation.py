"""An upper bound on the optimum of any job (N_min..N_max, linear or table throughput) by a Lagrangian relaxation
over allocation states, with the relaxation's near-optimal schedules.

Why: where no exact DP applies (`exact.py`), the MILP needs a good start and an outside bound to prove its
gap; the relaxation gives both in well under a second. Its allocation structure (allocations, throughputs,
overhead phases and the hours each phase loses) is also what the work-lattice and Pareto-label DPs run over.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from ...jobs.job import Job


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
