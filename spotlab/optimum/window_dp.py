"""The window problem of committed horizon control (`window.py`) solved by dynamic programming over the work
done, proven within a gap like a MILP.

Why: CHC solves one window problem per decision, and branch and bound on its MILP takes a tenth of a second
and more (GCP H100, default job: median 0.07 s, p90 0.2 s; a volatile synthetic market: 0.24 s and 0.9 s),
while the problem has the structure of the offline DPs (`dp/`): at a slot boundary, what matters for the
rest of the window is the allocation that ran last with the overhead it still has to pay, and the work done.

- **States and moves.** A state is idle, or an allocation (o, s) with its pending overhead; in a slot the plan
  idles, keeps its allocation (paying what overhead is left) or changes to another (paying the overhead
  delta again), exactly as the simulator and the MILP count it. A slot that covers the work left finishes
  the job: it is billed by use and earns V at the completion time where V is linear over the slot, else V
  at its end (the MILP's convention). The safety net: after each slot either the work left fits the net's
  limit, or the slot ran N_max on-demand GPUs, or the job is done.
- **The tail.** What the work left at the window's end is worth is a closed form (`window_tail.py`): the best,
  over the tail blocks, of V at the block's end minus the cheapest way to do the work by then, or the penalty of
  not finishing.
- **The work grid, and why the answer is proven.** Work done is continuous, so the value of the rest of the
  window is tabulated on a grid of `levels` values of the work done (q = work left / levels). For a job of
  value >= 0 that value never decreases with the work done (more work relaxes the net, finishes no later and
  leaves less to the tail), so a table that rounds every slot's work *up* to whole levels, computed at the
  most work of each level, is an upper bound of every plan's objective. A second table rounds to the nearest
  level (no bound, but close). The plan is read forward from the true state with the exact work, each slot's
  move the best on a table (once on each; the better plan is kept), so its objective is computed exactly:
  it is the MILP's objective of that schedule. When plan and bound are within `mip_gap` (the MILP's relative
  gap) the plan is returned as optimal; otherwise the grid is refined (twice the levels, up to `MAX_LEVELS`)
  and, still unproven, the plan is returned with status "gap" (`window.py` then lets the MILP finish the job).
  Replayed on CHC's own windows (default job, H100 trace and volatile market), the plans are within 0.1% of
  HiGHS's optimum to 1e-6 and are proven at the first grid, all on the H100 trace and 86% on the volatile
  market (`benchmarks/bench_chc.py` for the times).

The DP is not used for a job of negative value (a later completion would then be worth more, and the
monotonicity above fails); `window.py` solves those by the MILP.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from ..errors import SolverError
from ..jobs.job import Job
from .window_tail import TailValue
from .window_types import WindowPlan, WindowTerms, work_segments

LEVELS = 512  # first grid of the work done; doubled while the gap is not proven
MAX_LEVELS = 4096
EPS = 1e-9  # the simulator's finishing tolerance, relative to the job's work


def dp_applies(job: Job) -> bool:
    """The DP is exact for a job whose value does not grow with the completion time (value >= 0)."""
    return float(job.value) >= 0


@dataclass(frozen=True)
class Allocations:
    """Every allocation (o, s) with N_min <= o + s <= N_max (a throughput table's counts only), ordered by spot
    count: the allocations a slot allows (s at most the spot GPUs available) are then a prefix."""

    o: np.ndarray
    s: np.ndarray
    rate: np.ndarray  # H(o + s)

    @classmethod
    def of(cls, job: Job) -> "Allocations":
        tp = job.throughput
        counts = list(range(job.n_min, job.n_max + 1)) if tp.is_linear else \
            [int(n) for n, _ in tp.table if job.n_min <= n <= job.n_max]
        pairs = [(n - s, s) for s in range(max(counts) + 1) for n in counts if n >= s]
        o = np.array([a for a, _ in pairs], dtype=np.int64)
        s = np.array([b for _, b in pairs], dtype=np.int64)
        return cls(o, s, tp(o + s).astype(float))

    @property
    def size(self) -> int:
        return int(self.o.size)

    def index(self, o: int, s: int) -> int:
        """Index of (o, s), or -1 when it is not an allocation the job may run."""
        hit = np.flatnonzero((self.o == o) & (self.s == s))
        return int(hit[0]) if hit.size else -1

    def allowed(self, spot: float) -> int:
        """How many allocations (a prefix) fit `spot` spot GPUs."""
        return int(np.searchsorted(self.s, spot + 1e-9, side="right"))


@dataclass(frozen=True)
class Grid:
    """`n` levels of the work done, q apart, and the work each table computes level i at: the guide table at
    `guide[i]` = i*q (a slot's work rounded to the nearest level), the upper table at `high[i]`, the most work of
    [i*q, (i+1)*q) short of finishing (a slot's work rounded up)."""

    q: float
    guide: np.ndarray
    high: np.ndarray

    @classmethod
    def over(cls, remaining: float, tol: float, levels: int) -> "Grid":
        q = remaining / levels
        i = np.arange(levels)
        return cls(q, i * q, np.minimum((i + 1) * q, remaining - tol))

    @property
    def n(self) -> int:
        return int(self.guide.size)

    def level(self, done: np.ndarray, which: int) -> np.ndarray:
        """The level the guide table (which = 0: the nearest) or the upper table (1: the one whose value bounds
        it) reads at the exact work `done`."""
        x = np.asarray(done, dtype=float) / self.q
        i = np.rint(x) if which == 0 else np.ceil(x) - 1
        return np.clip(i, 0, self.n - 1).astype(np.int64)


@dataclass(frozen=True)
class Moves:
    """What one slot can do from one state in the forward pass: idle (k = -1) or run allocation k, with what each
    runs (o, s, its rate, 1 when idle) and the work it can do in the slot (`cap`)."""

    k: np.ndarray
    loss: np.ndarray  # hours of the slot lost to overhead
    row: np.ndarray  # state at the next slot (0 idle, else 1 + k*P + pending index)
    pending: np.ndarray  # overhead pending after the slot
    run: np.ndarray
    o: np.ndarray
    s: np.ndarray
    rate: np.ndarray
    cap: np.ndarray


class Workspace:
    """The arrays of the backward pass, kept between solves of the same size (fresh arrays of this size cost a
    page fault per 4 KiB at every use, more than the arithmetic on them), for up to `n` levels; `use(m)` lays the
    first m levels out contiguously (the band a solve computes). Per move kind (a change of allocation, then
    keeping one with each pending value), table (guide, upper), level and allocation: the work left after the slot
    and the flat index of the next slot's table entry the move leads to; and per kind the few entries where the
    slot finishes the job (`finishing`: their (table, level) row, allocation and share of the slot left unused)."""

    def __init__(self, T: int, n: int, K: int, P: int):
        S = 1 + K * P
        self.shape = (T, n, K, P)
        kinds = 1 + P  # a change, then keeping with each pending value
        self._buffers = {"tables": (np.empty((T + 1) * 2 * n * S), (T + 1, 2), S),
                         "left_after": (np.empty(kinds * 2 * n * K), (kinds, 2), K),
                         "index": (np.empty(kinds * 2 * n * K, dtype=np.int64), (kinds, 2), K)}
        self.values = np.empty((kinds, 2 * n * K))
        self.scratch = np.empty((3, 2 * n * K))
        self.bad = np.empty(2 * n * K, dtype=bool)
        self.finishing: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []  # per kind, made by `WindowDP._kinds`
        self.use(n)

    def use(self, m: int) -> None:
        """Lay out the per-level arrays for the first `m` levels: tables (T+1, 2, m, states), the move kinds'
        arrays (kinds, 2, m, K)."""
        if getattr(self, "levels_in_use", None) == int(m):
            return
        self.levels_in_use = int(m)
        self._views: dict[tuple, np.ndarray] = {}
        for name, (buf, lead, last) in self._buffers.items():
            shape = (*lead, int(m), last)
            setattr(self, name, buf[:int(np.prod(shape))].reshape(shape))

    def flat(self, name: str, i: int, K: int, dims: tuple) -> np.ndarray:
        """A contiguous (dims..., K) view on the first entries of buffer `name`[i] (made once per layout)."""
        key = (name, i, K, dims)
        view = self._views.get(key)
        if view is None:
            buf = getattr(self, name)[i] if i >= 0 else getattr(self, name)
            size = int(np.prod(dims)) * K
            view = self._views[key] = buf[:size].reshape(*dims, K)
        return view


class GridSearch:
    """The refinement of one solve: the best plan and the tightest bound over the grids tried, and whether the gap is
    proven (status "optimal"), the finest grid was tried ("gap") or time ran out ("time_limit"). Shared by the
    per-window solve and the batched one (`window_dp_batch.py`), so that both decide alike."""

    def __init__(self, levels: int, max_levels: int, mip_gap: float):
        self.levels, self.max_levels, self.mip_gap = int(levels), int(max_levels), float(mip_gap)
        self.best: tuple | None = None
        self.bound, self.status, self.done = np.inf, "time_limit", False

    def add(self, got: tuple | None) -> None:
        """Take one grid's (plan or None, bound), or None when the time ran out; then either done or the next
        grid's `levels`. Raises `SolverError` when the bound proves that no plan keeps the safety net."""
        if got is None:
            self.status, self.done = "time_limit", True
            return
        plan, grid_bound = got
        self.bound = min(self.bound, grid_bound)  # every grid's bound holds: the tightest
        if not np.isfinite(self.bound):
            self.done = True
            raise SolverError("dp: no plan keeps the safety net (the window problem has no schedule)")
        best = self.best
        if plan is not None and (best is None or plan[3] > best[3]):
            best = self.best = plan
        scale = abs(best[3]) if best is not None else np.inf
        if self.bound - (best[3] if best is not None else -np.inf) <= self.mip_gap * scale + 1e-9 * max(1.0, scale):
            self.status, self.done = "optimal", True
        elif self.levels * 2 > self.max_levels:
            self.status, self.done = "gap", True
        else:
            self.levels *= 2

    def result(self, started: float) -> WindowPlan | None:
        """The plan (see `WindowDP.solve`), None after a time-out without one."""
        if self.best is None:
            if self.status == "time_limit":
                return None
            raise SolverError("dp: every plan read from the tables broke the safety net; use method='milp'")
        o, s, work, objective = self.best
        return WindowPlan(o=o, s=s, work=work, objective=objective, status=self.status,
                          seconds=time.perf_counter() - started, method="dp", bound=max(self.bound, objective))


class WindowDP:
    """The DP of one job's window problem (window length w); `solve` takes the terms of one state."""

    def __init__(self, job: Job, w: int, slot_hours: float, levels: int = LEVELS, max_levels: int = MAX_LEVELS):
        if not dp_applies(job):
            raise SolverError("the window DP needs a job value >= 0 (V must not grow with the completion time)")
        self.job, self.w, self.dt = job, int(w), float(slot_hours)
        self.alloc = Allocations.of(job)
        self.levels, self.max_levels = int(levels), int(max_levels)
        self.tol = EPS * max(1.0, float(job.work))
        self.full_od = self.alloc.index(job.n_max, 0)  # what the safety net imposes
        self.segments = work_segments(job)  # the tail's work rates (`TailValue`)
        self.workspace_: Workspace | None = None
        self.moves_: dict[tuple, Moves] = {}

    def _workspace(self, n: int, P: int) -> Workspace:
        """The first grid's workspace is kept (~10 MB at the defaults); a refined grid's is not (rare, and up to
        8x larger)."""
        shape = (self.w, n, self.alloc.size, P)
        if n != self.levels:
            return Workspace(*shape)
        if self.workspace_ is None or self.workspace_.shape != shape:
            self.workspace_ = Workspace(*shape)
        return self.workspace_

    def solve(self, terms: WindowTerms, time_limit: float, mip_gap: float, started: float | None = None
              ) -> WindowPlan | None:
        """The best plan on the work grid with its exact objective and a proven bound, the grid refined until
        they are within `mip_gap`. None when `time_limit` passed before any plan (the MILP's "time-out without
        a schedule"); a plan not proven within the gap has status "gap" (or "time_limit" when time ran out).
        Raises `SolverError` when no plan keeps the safety net (the upper table proves it), or, rarely, when the
        plans read from the tables all broke it (the MILP then decides)."""
        started = time.perf_counter() if started is None else started
        deadline = started + float(time_limit)
        search = GridSearch(self.levels, self.max_levels, float(mip_gap))
        tail = TailValue(self.job, terms, self.w, self.segments)  # the same on every grid
        while not search.done:
            search.add(self._solve_on_grid(terms, search.levels, deadline, tail))
        return search.result(started)

    # ------------------------------------------------------------------------------------ one grid

    def pendings(self, p0: float) -> np.ndarray:
        """Overhead still pending at a slot boundary: every value reachable after a change (delta, less a slot
        per slot) and after keeping the allocation that ran before the window (its own pending, likewise)."""
        delta, dt = float(self.job.overhead_h), self.dt
        values = {0.0}
        for p in (max(0.0, delta - dt), max(0.0, p0 - dt)):
            while p > 1e-12:
                values.add(p)
                p = max(0.0, p - dt)
        return np.array(sorted(values))

    def _solve_on_grid(self, terms: WindowTerms, levels: int, deadline: float, tail: TailValue) -> tuple | None:
        """(the better plan read from the two tables as (o, s, work, objective), or None when both broke the
        net; the bound) on a grid of `levels`; None when the time ran out."""
        T = self.w
        R = float(terms.remaining)
        grid = Grid.over(R, self.tol, levels)
        pend = self.pendings(float(terms.pending_h))
        ws = self._workspace(grid.n, pend.size)
        m = self.band(grid)
        ws.use(m)
        tables = ws.tables
        # the backward pass: guide and upper tables (2, levels, states) of the value from the start of slot t
        # on, for t = T-1 .. 1, on the band of levels the window can reach; after the last slot, the tail's
        end = tail(np.maximum(R - np.stack([grid.guide[:m], grid.high[:m]]), self.tol))
        tables[T] = end[:, :, None]
        if T > 1:
            idle_left = self._kinds(terms, grid, pend, ws, m)
        for t in range(T - 1, 0, -1):
            if time.perf_counter() > deadline:
                return None
            self._slot(terms, t, tables[t + 1], ws, idle_left, out=tables[t])
        if time.perf_counter() > deadline:
            return None
        # the bound: the best move at slot 0 from the true state, on the upper table; the plan: read forward
        # from the true state with the exact work, each slot's move chosen on a table (the better of the two)
        start = self.moves_from(terms, 0, self.alloc.index(terms.prev_o, terms.prev_s) if terms.running else -1,
                            float(terms.pending_h), pend)
        bound = float(np.max(self._values(terms, 0, start, 0.0, tables[1][1], grid, tail, 1)[0]))
        plans = [p for p in (self._follow(terms, tables, which, grid, tail, pend) for which in (0, 1)) if p]
        return (max(plans, key=lambda p: p[3]) if plans else None), bound

    def band(self, grid: Grid) -> int:
        """How many levels the backward pass computes: every level work done in the window can reach (a slot
        adds at most s = ceil(most work of a slot / q) levels, so slot t reads levels <= t*s), with one level of
        margin for the rounding of sums of slots' work. A level's value depends only on higher levels, so the
        band's values are exactly those of the whole grid's, and far fewer when the window does little of the job."""
        steps = int(np.ceil(float(self.alloc.rate.max()) * self.dt / grid.q))
        return int(min(grid.n, self.w * steps + 2))

    def _follow(self, terms: WindowTerms, tables: np.ndarray, which: int, grid: Grid, tail: TailValue,
                pend: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, float] | None:
        """The plan read forward from the true state with the exact work, each move the best on table `which`,
        and its exact objective; None if it reaches a slot where no move keeps the net (a table's rounding
        misled it)."""
        T, dt, R = self.w, self.dt, float(terms.remaining)
        k_cur = self.alloc.index(terms.prev_o, terms.prev_s) if terms.running else -1
        p_cur = float(terms.pending_h)
        done, objective = 0.0, 0.0
        o = np.zeros(T, dtype=np.int64)
        s = np.zeros(T, dtype=np.int64)
        work = np.zeros(T)
        for t in range(T):
            moves = self.moves_from(terms, t, k_cur, p_cur, pend)
            vals, fin, now, ok = self._values(terms, t, moves, done, tables[t + 1][which], grid, tail, which)
            if not ok.any():
                return None
            if np.isfinite(vals).any():
                i = int(np.argmax(vals))
            else:  # the table sees no way to keep the net later (a rounding): the most work is the safest
                i = int(np.argmax(np.where(ok, self.alloc.rate[np.maximum(moves.k, 0)] * (moves.k >= 0)
                                           * (dt - moves.loss), -np.inf)))
            k = int(moves.k[i])
            if k < 0 and self.stops(terms, t, np.array([k]), np.array([R - done]))[0]:  # stopped: nothing runs
                return o, s, work, objective + float(terms.stop_value)
            objective += float(now[i])
            if k >= 0:
                o[t], s[t] = self.alloc.o[k], self.alloc.s[k]
                work[t] = R - done if fin[i] else self.alloc.rate[k] * (dt - float(moves.loss[i]))
            if fin[i]:
                return o, s, work, objective
            done += work[t]
            k_cur, p_cur = k, float(moves.pending[i])
        return o, s, work, objective + float(tail(np.array([R - done]))[0])

    # ---------------------------------------------------------------------------------- forward pass

    def moves_from(self, terms: WindowTerms, t: int, k_cur: int, p_cur: float, pend: np.ndarray,
                   allowed: int | None = None) -> Moves:
        """Idle, and every allocation slot t allows (`allowed`, read from `terms` when None): keeping k_cur pays
        what it has pending, another pays delta. The same few sets recur at every slot of every solve, so each is
        built once (`moves_`)."""
        if allowed is None:
            allowed = self.alloc.allowed(terms.s_hi[t]) if t < terms.left else 0
        key = (allowed, k_cur, p_cur, pend.tobytes())
        got = self.moves_.get(key)
        if got is None:
            got = self.moves_[key] = self._new_moves(allowed, k_cur, p_cur, pend)
        return got

    def _new_moves(self, allowed: int, k_cur: int, p_cur: float, pend: np.ndarray) -> Moves:
        dt, delta = self.dt, float(self.job.overhead_h)
        ks = np.arange(allowed)
        keep = ks == k_cur
        pending = np.where(keep, max(0.0, p_cur - dt), max(0.0, delta - dt))
        loss = np.where(keep, min(dt, p_cur), min(dt, delta))
        rows = 1 + ks * pend.size + nearest(pend, pending)
        k_all, loss_all = np.concatenate([[-1], ks]), np.concatenate([[0.0], loss])
        run = k_all >= 0
        k = np.where(run, k_all, 0)
        rate = np.where(run, self.alloc.rate[k], 1.0)
        return Moves(k_all, loss_all, np.concatenate([[0], rows]), np.concatenate([[0.0], pending]), run,
                     np.where(run, self.alloc.o[k], 0), np.where(run, self.alloc.s[k], 0), rate,
                     np.where(run, rate * (dt - loss_all), 0.0))

    def _values(self, terms: WindowTerms, t: int, mv: Moves, done: float, table: np.ndarray, grid: Grid,
                tail: TailValue, which: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Per move from the exact work `done`: its value (the slot's, then the rest of the window's from `table`,
        of kind `which`, or exactly from the tail after the last slot), whether it finishes the job, the slot's
        own value and whether it keeps the safety net."""
        R, dt, T = float(terms.remaining), self.dt, self.w
        run, o, s, rate, cap = mv.run, mv.o, mv.s, mv.rate, mv.cap
        after = R - (done + cap)
        fin = run & (after <= self.tol)
        if t + 1 == T:
            later = tail(np.maximum(after, self.tol))
        else:
            later = table[grid.level(done + cap, which), mv.row]
        # the finishing slot: billed by use, V at the completion time where it is linear over the slot
        unused = unused_share(dt, mv.loss, R - done, rate)
        finish = unused * (o * terms.od_refund[t] + s * terms.sp_refund[t] + terms.value_unused[t]) \
            + terms.value_end[t]
        now = np.where(fin, finish, 0.0) - (o * terms.od_cost[t] + s * terms.sp_cost[t])
        stop = self.stops(terms, t, mv.k, after)
        ok = fin | stop | (after <= terms.lim[t]) | (run & (mv.k == self.full_od)
                                                    & (after - terms.lim[t] <= self.job.work))
        return np.where(ok, np.where(stop, terms.stop_value, now + np.where(fin, 0.0, later)), -np.inf), fin, now, ok

    @staticmethod
    def stops(terms: WindowTerms, t: int, k: np.ndarray, after: np.ndarray) -> np.ndarray:
        """Per move: whether it stops the job (give-up): an idle slot that leaves more work than the net allows.
        Why only idle: any other move the net would override there is stopped by it just the same."""
        return (k < 0) & (after > terms.lim[t]) & bool(terms.may_stop) & (t < terms.left)

    # --------------------------------------------------------------------------------- backward pass

    def _kinds(self, terms: WindowTerms, grid: Grid, pend: np.ndarray, ws: Workspace, m: int) -> np.ndarray:
        """Fill the workspace's move kinds: a change of allocation (pending = delta), then keeping one with each
        pending value; per kind, both tables (guide, upper), every level and allocation: the work left after the
        slot and where the next slot's table is read, on the first `m` levels (`band`), and the entries where the
        slot finishes with the unused share of it. Returns the work left at each level of both tables (an idle
        slot's)."""
        job, dt, R = self.job, self.dt, float(terms.remaining)
        K, P, n = self.alloc.size, pend.size, m
        S = 1 + K * P
        rep = np.stack([grid.guide[:m], grid.high[:m]])[:, :, None]  # (2, m, 1)
        rate = self.alloc.rate[None, None, :]  # (1, 1, K)
        delta = float(job.overhead_h)
        kinds = [(min(dt, delta), max(0.0, delta - dt))] + [(min(dt, float(p)), max(0.0, float(p) - dt)) for p in pend]
        finishing = ws.finishing = []
        for e, (loss, p_next) in enumerate(kinds):
            cap = rate * (dt - loss)
            left = ws.left_after[e]
            np.subtract(R, rep + cap, out=left)
            # the moves that finish the job: the top levels only, so their unused share is worked out there alone
            row, k = np.nonzero((left <= self.tol).reshape(2 * n, K))
            finishing.append((row, k, unused_share(dt, loss, R - rep.ravel()[row], self.alloc.rate[k])))
            # whole levels a slot adds: the nearest for the guide table, rounded up for the upper one
            shift = np.concatenate([np.rint(cap / grid.q), np.ceil(cap / grid.q)]).astype(np.int64)  # (2, 1, K)
            rows = 1 + np.arange(K) * P + int(nearest(pend, np.array([p_next]))[0])
            level = np.minimum(np.arange(n)[None, :, None] + shift, n - 1)
            ws.index[e] = (np.arange(2)[:, None, None] * n + level) * S + rows[None, None, :]
        return R - rep[:, :, 0]

    def _slot(self, terms: WindowTerms, t: int, nxt: np.ndarray, ws: Workspace, idle_left: np.ndarray,
              out: np.ndarray) -> None:
        """The tables at the start of slot t (into `out`) from those at t+1 (both (2, levels, states))."""
        if t >= terms.left:  # nothing runs: idle, and the net does not apply
            out[:] = nxt[:, :, :1]
            return
        al, lim = self.alloc, float(terms.lim[t])
        _, n, S = nxt.shape
        P = (S - 1) // al.size
        K = al.allowed(terms.s_hi[t])  # the allocations this slot allows: a prefix
        # idling into the net's limit: the net takes the job over, or, with give-up, the plan stops it there
        idle = np.where(idle_left <= lim, nxt[:, :, 0], terms.stop_value if terms.may_stop else -np.inf)  # (2, n)
        if K == 0:
            out[:] = idle[:, :, None]
            return
        flat = nxt.ravel()
        cost = al.o[:K] * terms.od_cost[t] + al.s[:K] * terms.sp_cost[t]
        gain = al.o[:K] * terms.od_refund[t] + al.s[:K] * terms.sp_refund[t] + terms.value_unused[t]
        f = self.full_od if 0 <= self.full_od < K else None
        gathered = ws.flat("scratch", 0, K, (2, n))
        bad = ws.flat("bad", -1, K, (2, n))
        values = []
        for e in range(1 + P):
            left = ws.left_after[e][:, :, :K]
            np.greater(left, lim, out=bad)  # the net fires and the slot did not run N_max on demand
            if f is not None:
                bad[:, :, f] &= left[:, :, f] - lim > self.job.work
            np.take(flat, ws.index[e][:, :, :K], out=gathered, mode="clip")
            np.copyto(gathered, -np.inf, where=bad)
            row, k, unused = ws.finishing[e]
            if K < al.size:  # the allowed allocations' entries only
                keep = k < K
                row, k, unused = row[keep], k[keep], unused[keep]
            gathered.reshape(-1)[row * K + k] = unused * gain[k] + terms.value_end[t]  # the slot finishes
            v = ws.flat("values", e, K, (2, n))
            np.subtract(gathered, cost, out=v)
            values.append(v)
        # from a running state: idle, change to the best other allocation, or keep it (top two changes)
        change = values[0]
        # flat positions of each (table, level)'s best change: the max is the value there, and the second best is
        # the max with it masked (flat indexing on the contiguous scratch views, put_along_axis's result)
        best = np.arange(0, 2 * n * K, K) + change.argmax(axis=2).ravel()
        v1 = change.ravel()[best].reshape(2, n, 1)  # the value at `best`
        masked = ws.flat("scratch", 2, K, (2, n))
        np.copyto(masked, change)
        masked.ravel()[best] = -np.inf
        v2 = masked.max(axis=2, keepdims=True)
        top = np.maximum(idle[:, :, None], v1)
        out[:, :, :1] = top
        out[:, :, 1 + K * P:] = top  # allocations this slot does not allow: idle or change
        base = ws.flat("scratch", 0, K, (2, n))  # the best change, but for the best allocation itself
        np.copyto(base, top)
        base.ravel()[best] = np.maximum(v2, idle[:, :, None]).ravel()
        for j, v in enumerate(values[1:]):  # keep: state 1 + k*P + j
            np.maximum(base, v, out=out[:, :, 1 + j:1 + K * P:P])


def unused_share(dt: float, loss: np.ndarray | float, work_left: np.ndarray, rate: np.ndarray | float) -> np.ndarray:
    """The share of a finishing slot left unused: the slot less its overhead `loss` and the hours the work left
    takes at `rate`, over the slot, in [0, 1] (what the slot's refunds and the value of finishing early scale by)."""
    return np.clip((dt - (loss + work_left / rate)) / dt, 0.0, 1.0)


def nearest(values: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Index of the nearest of the sorted `values` for each x (pending overheads computed two ways agree)."""
    return np.abs(np.asarray(x, dtype=float)[:, None] - values[None, :]).argmin(axis=1)
