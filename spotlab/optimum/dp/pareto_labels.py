"""The exact optimum of any job with a value >= 0 (any GPU range, any throughput), for short horizons: a forward
DP over Pareto labels (work done, utility so far).

Why: it needs no lattice of the work and no fixed GPU count, only that V does not grow with the completion
time; its labels can outgrow any budget, so it gives up (`TooManyLabels`) and the caller falls back to the MILP.
"""

from __future__ import annotations

import time

import numpy as np

from ...errors import SolverError, TooManyLabels
from ...jobs.job import Job
from ..model import BILLINGS
from ..solve import OptimumResult
from .relaxation import AllocationRelaxation
from .window_arrays import window_arrays


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
