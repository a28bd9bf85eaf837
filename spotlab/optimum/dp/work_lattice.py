"""The exact optimum of any job (any GPU range) whose per-slot work is a whole multiple of one quantum, over one
window: a DP over the work done on that lattice.

Why: with several GPU counts the work per slot differs between allocations, so the fixed-count DP's lost-time
levels do not apply; when every increment `H(n)*(slot - loss)` is commensurate (e.g. H(n) = n + 0.5 with 1-h
slots and a 0.25-h overhead: q = 1/8), the work done is one of finitely many levels and the DP is exact.
"""

from __future__ import annotations

import math
import time

import numpy as np

from ...errors import SolverError
from ...jobs.job import Job
from ..model import BILLINGS
from ..solve import OptimumResult
from .relaxation import AllocationRelaxation
from .window_arrays import window_arrays


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
