"""The window DP (`window_dp.py`) of many window problems of one job at once: both passes vectorised over the
windows.

Why: CHC re-plans every active window of a lockstep simulation at the same slot, and on a small allocation set (the
Can't Be Late leaderboard's single instance: two allocations, one pending value) one window's tables are a few
hundred numbers, so a solve is numpy call overhead; stacked over a cell's windows the same arithmetic runs once per
slot for all of them.

The same plans as the per-window DP, bit for bit: every table entry and every move's value is computed by the same
elementwise operations, in the same order, on the same operands (only broadcast against a window axis);
allocations a window's slot does not allow are set to minus infinity, which the maxima then ignore as the
per-window pass leaves them out; each window's band is padded to the batch's widest (levels past a window's band
are never read: `WindowDP.band`); and each window's refinement is decided by the per-window `GridSearch`. Windows
are grouped by their grid and pending overhead values (the layout of the states). A time limit applies to the
batch as a whole (the windows' limits summed); past it every window still open has no plan ("time_limit").
"""

from __future__ import annotations

import time
from typing import Sequence

import numpy as np

from ..errors import SolverError
from .window_dp import Grid, GridSearch, WindowDP, nearest, unused_share
from .window_tail import TailStack
from .window_types import WindowPlan, WindowTerms


def solve_batch(dp: WindowDP, terms: Sequence[WindowTerms], time_limit: float, mip_gap: float,
                started: float | None = None) -> list[WindowPlan | None | SolverError]:
    """`dp.solve` of every one of `terms`: per window its plan, None (time-out without a plan) or the `SolverError`
    the per-window solve raises (returned, not raised, so that the caller decides in window order)."""
    started = time.perf_counter() if started is None else started
    deadline = started + float(time_limit) * max(1, len(terms))
    out: list = [None] * len(terms)
    searches = [GridSearch(dp.levels, dp.max_levels, float(mip_gap)) for _ in terms]
    stack = TailStack(dp.job, terms, dp.w, dp.segments)
    pends = [dp.pendings(float(tm.pending_h)) for tm in terms]
    todo = list(range(len(terms)))
    while todo:
        groups: dict[tuple, list[int]] = {}
        grids = {i: Grid.over(float(terms[i].remaining), dp.tol, searches[i].levels) for i in todo}
        for i in todo:  # a group pads its windows' bands to the widest: bands within a factor of two
            band = dp.band(grids[i])
            groups.setdefault((searches[i].levels, pends[i].tobytes(), int(band - 1).bit_length()), []).append(i)
        for idx in groups.values():
            got = _solve_on_grid(dp, [terms[i] for i in idx], [grids[i] for i in idx], stack, np.array(idx),
                                 pends[idx[0]], deadline)
            for j, i in enumerate(idx):
                try:
                    searches[i].add(None if got is None else got[j])
                except SolverError as exc:
                    out[i] = exc
        todo = [i for i in todo if not searches[i].done]
    for i, search in enumerate(searches):
        if out[i] is None:
            try:
                out[i] = search.result(started)
            except SolverError as exc:
                out[i] = exc
    return out


def _col(values: Sequence[float], ndim: int) -> np.ndarray:
    """Per-window scalars as a (B, 1, ...) column broadcasting against arrays of `ndim` dimensions."""
    return np.asarray(values, dtype=float).reshape((-1,) + (1,) * (ndim - 1))


def _solve_on_grid(dp: WindowDP, terms: list[WindowTerms], grids: list[Grid], stack: TailStack, rows: np.ndarray,
                   pend: np.ndarray, deadline: float) -> list[tuple] | None:
    """Per window, (the better plan read from its two tables, or None; the bound) on its grid (`grids`: of one
    number of levels), the tables of all computed at once; None when the time ran out. The windows' tail values
    are rows `rows` of `stack`."""
    B, T, K, P = len(terms), dp.w, dp.alloc.size, pend.size
    S = 1 + K * P
    m = max(dp.band(g) for g in grids)
    stacked = _Stacked(terms, T)
    tables = np.empty((B, T + 1, 2, m, S))
    for b, (tm, g) in enumerate(zip(terms, grids)):
        end = stack.one(int(rows[b]), np.maximum(float(tm.remaining) - np.stack([g.guide[:m], g.high[:m]]), dp.tol))
        tables[b, T] = end[:, :, None]
    if T > 1:
        kinds = _Kinds(dp, terms, grids, pend, m, stacked)
        for t in range(T - 1, 0, -1):
            if time.perf_counter() > deadline:
                return None
            _slot(dp, terms, t, tables[:, t + 1], kinds, out=tables[:, t])
    if time.perf_counter() > deadline:
        return None
    reader = _Reader(dp, terms, grids, stack, rows, pend, tables, stacked)
    bounds = reader.bounds()
    plans = reader.follow()
    out = []
    for b in range(B):
        got = [p for p in (plans[0][b], plans[1][b]) if p]
        out.append(((max(got, key=lambda p: p[3]) if got else None), bounds[b]))
    return out


# ----------------------------------------------------------------------------------------------- backward pass


class _Stacked:
    """The terms of a batch's windows as arrays with a leading window axis (per slot: (B, w))."""

    def __init__(self, terms: list[WindowTerms], w: int):
        for name in ("od_cost", "sp_cost", "od_refund", "sp_refund", "value_unused", "lim", "s_hi"):
            setattr(self, name, np.array([getattr(tm, name) for tm in terms], dtype=float))
        self.value_end = np.array([tm.value_end[:w] for tm in terms], dtype=float)
        self.left = np.array([tm.left for tm in terms])
        self.may_stop = np.array([bool(tm.may_stop) for tm in terms])
        self.stop_value = np.array([tm.stop_value for tm in terms], dtype=float)


class _Kinds:
    """`WindowDP._kinds` of every window: per move kind (a change, then keeping with each pending value), window,
    table, level and allocation: the work left after the slot and the flat index (into the batch's next tables) of
    the entry the move leads to; per kind and allocation, the few entries where the slot finishes (`finishing`:
    their flat position in a (B, 2, m) array, window and unused share of the slot)."""

    def __init__(self, dp: WindowDP, terms: list[WindowTerms], grids: list[Grid], pend: np.ndarray, m: int,
                 stacked: _Stacked):
        job, dt = dp.job, dp.dt
        self.stacked = stacked
        B, K, P = len(terms), dp.alloc.size, pend.size
        S = 1 + K * P
        # every array allocation-major, (K, B, 2, m), each allocation's block contiguous: the slot's arithmetic runs
        # one allocation at a time on long rows (numpy's inner loops along a short last axis are slow)
        R = _col([tm.remaining for tm in terms], 4)[None, :, :, :, 0]  # (1, B, 1, 1)
        q = _col([g.q for g in grids], 4)[None, :, :, :, 0]
        rep = np.stack([np.stack([g.guide[:m], g.high[:m]]) for g in grids])[None]  # (1, B, 2, m)
        rate = dp.alloc.rate[:, None, None, None]  # (K, 1, 1, 1)
        delta = float(job.overhead_h)
        kinds = [(min(dt, delta), max(0.0, delta - dt))] + [(min(dt, float(p)), max(0.0, float(p) - dt)) for p in pend]
        self.finishing, self.left_after, self.index = [], [], []
        offset = (np.arange(B) * (2 * m * S))[None, :, None, None]
        for loss, p_next in kinds:
            cap = rate * (dt - loss)
            left = R - (rep + cap)
            finishing = []  # per allocation: the top levels only, so their unused share is worked out there alone
            for k in range(K):
                pos = np.flatnonzero(left[k] <= dp.tol)
                b = pos // (2 * m)
                finishing.append((pos, b, unused_share(dt, loss, R.ravel()[b] - rep.ravel()[pos], rate.ravel()[k])))
            shift = np.concatenate([np.rint(cap / q), np.ceil(cap / q)], axis=2).astype(np.int64)  # (K, B, 2, 1)
            rows = 1 + np.arange(K) * P + int(nearest(pend, np.array([p_next]))[0])
            level = np.minimum(np.arange(m)[None, None, None, :] + shift, m - 1)
            index = (np.arange(2)[None, None, :, None] * m + level) * S + rows[:, None, None, None]
            self.finishing.append(finishing)
            self.left_after.append(left)
            self.index.append(index + offset)
        self.idle_left = (R - rep)[0]  # (B, 2, m)


def _slot(dp: WindowDP, terms: list[WindowTerms], t: int, nxt: np.ndarray, kinds: _Kinds, out: np.ndarray) -> None:
    """`WindowDP._slot` of every window: the tables at the start of slot t (into `out`, (B, 2, m, S)) from those at
    t+1."""
    al = dp.alloc
    B, _, m, S = nxt.shape
    K = al.size
    P = (S - 1) // K
    st = kinds.stacked
    runs = t < st.left
    allowed = np.where(runs, np.searchsorted(al.s, st.s_hi[:, t] + 1e-9, side="right"), 0)  # `Allocations.allowed`
    lim = st.lim[:, t].reshape(-1, 1, 1)
    stop = np.where(st.may_stop, st.stop_value, -np.inf).reshape(-1, 1, 1)
    idle = np.where(kinds.idle_left <= lim, nxt[:, :, :, 0], stop)  # (B, 2, m)
    Kt = int(allowed.max()) if B else 0  # the allocations some window's slot allows: a prefix
    if Kt == 0:
        out[:] = idle[..., None]
        if not runs.all():  # nothing runs: idle, and the net does not apply
            out[~runs] = nxt[~runs][:, :, :, :1]
        return
    col = {name: getattr(st, name)[:, t].reshape(-1, 1, 1)
           for name in ("od_cost", "sp_cost", "od_refund", "sp_refund", "value_unused", "value_end")}
    flat = nxt.ravel()
    values = [[] for _ in range(1 + P)]  # per move kind (a change, then keeping with each pending value), allocation
    for k in range(Kt):
        o, s = al.o[k], al.s[k]
        cost = o * col["od_cost"] + s * col["sp_cost"]
        not_allowed = allowed <= k  # an allocation the window's slot does not allow is worth minus infinity
        if not_allowed.any():
            cost = np.where(not_allowed[:, None, None], np.inf, cost)
        gain = o * col["od_refund"] + s * col["sp_refund"] + col["value_unused"]
        for e in range(1 + P):
            left = kinds.left_after[e][k]
            bad = left > lim  # the net fires and the slot did not run N_max on demand
            if k == dp.full_od:
                bad &= left - lim > dp.job.work
            gathered = np.take(flat, kinds.index[e][k], mode="clip")
            gathered[bad] = -np.inf
            pos, b, unused = kinds.finishing[e][k]
            if pos.size:  # the slot finishes
                gathered.reshape(-1)[pos] = unused * gain.ravel()[b] + col["value_end"].ravel()[b]
            values[e].append(gathered - cost)
    # the best change (the first allocation at the maximum) and the best of the others
    change = values[0]
    v1 = change[0]
    for k in range(1, Kt):
        v1 = np.maximum(v1, change[k])
    best = np.zeros(v1.shape, dtype=np.int64)
    for k in range(Kt - 1, 0, -1):
        best[change[k] == v1] = k
    best[change[0] == v1] = 0
    v2 = np.full(v1.shape, -np.inf)
    for k in range(Kt):
        v2 = np.maximum(v2, np.where(best == k, -np.inf, change[k]))
    top = np.maximum(idle, v1)
    out[:, :, :, 0] = top
    out[:, :, :, 1 + Kt * P:] = top[..., None]  # allocations no window's slot allows: idle or change
    second = np.maximum(v2, idle)
    for k in range(Kt):  # keep: state 1 + k*P + j, against the best change but for k itself
        base = np.where(best == k, second, top)
        for j in range(P):
            out[:, :, :, 1 + k * P + j] = np.maximum(base, values[1 + j][k])
    if not runs.all():  # nothing runs: idle, and the net does not apply
        out[~runs] = nxt[~runs][:, :, :, :1]


# ------------------------------------------------------------------------------------------------ forward pass


class _Reader:
    """`WindowDP._follow` and the bound of every window, one slot at a time for all of them: each (window, table)
    path keeps its state (allocation, pending overhead, work done, objective) and its moves are padded to the
    allocation count (padding never chosen)."""

    def __init__(self, dp: WindowDP, terms: list[WindowTerms], grids: list[Grid], stack: TailStack, rows: np.ndarray,
                 pend: np.ndarray, tables: np.ndarray, stacked: _Stacked):
        self.dp, self.terms, self.grids, self.pend, self.tables = dp, terms, grids, pend, tables
        self.stack, self.tail_rows = stack, rows  # the windows' tail values: rows of the stack
        self.B, self.M = len(terms), dp.alloc.size + 1
        self.R = np.array([tm.remaining for tm in terms], dtype=float)
        self.q = np.array([g.q for g in grids], dtype=float)
        self.n = grids[0].n
        self.start_k = [dp.alloc.index(tm.prev_o, tm.prev_s) if tm.running else -1 for tm in terms]
        st = stacked
        self.per_slot = {name: getattr(st, name) for name in self.PER_SLOT}
        self.slot_terms = np.stack([st.value_end, *self.per_slot.values()])  # (1 + len(PER_SLOT), B, w)
        self.left, self.may_stop, self.stop_value = st.left, st.may_stop, st.stop_value
        self.s_hi = st.s_hi
        self.sets: dict[tuple, int] = {}  # each distinct move set (`WindowDP.moves_from`), padded to M, by id
        self.rows: dict[str, list] = {name: [] for name in self.FIELDS}
        self.arrays: dict[str, np.ndarray] = {}
        # the sets' ids by (allowed, k + 1, index of the pending value in `pvals`), -1 where none: a path's set is
        # looked up for all paths at once (a loop over the paths cost more than the slot's arithmetic)
        self.pvals = np.empty(0)
        self.table = np.full((self.M, self.M, 0), -1, dtype=np.int64)

    FIELDS = ("valid", "k", "loss", "row", "pending", "run", "o", "s", "rate", "cap")
    PER_SLOT = ("od_cost", "sp_cost", "od_refund", "sp_refund", "value_unused", "lim")

    def _moves(self, b: np.ndarray, t: int, k_cur: np.ndarray, p_cur: np.ndarray) -> dict[str, np.ndarray]:
        """The moves of paths `b` (window indices) at slot t from (k_cur, p_cur), padded to M (`valid`)."""
        al = self.dp.alloc
        allowed = np.where(t < self.left[b], np.searchsorted(al.s, self.s_hi[b, t] + 1e-9, side="right"), 0)
        ids = self._ids(allowed, k_cur, p_cur)
        if ids is None:  # a state no path was in before: its set, then the lookup again
            for key in zip(allowed.tolist(), k_cur.tolist(), p_cur.tolist()):
                if key not in self.sets:
                    self._add(t, *key)
            keys = list(self.sets)
            self.pvals = np.unique(np.array([p for _, _, p in keys], dtype=float))
            self.table = np.full((self.M, self.M, self.pvals.size), -1, dtype=np.int64)
            for (a, k, p), got in self.sets.items():
                self.table[a, k + 1, int(np.searchsorted(self.pvals, p))] = got
            self.arrays = {name: np.array(rows) for name, rows in self.rows.items()}
            ids = self._ids(allowed, k_cur, p_cur)
        return {name: arr[ids] for name, arr in self.arrays.items()}

    def _ids(self, allowed: np.ndarray, k_cur: np.ndarray, p_cur: np.ndarray) -> np.ndarray | None:
        """The set id of every path, None when some path's set is not made yet."""
        pv = self.pvals
        if not pv.size:
            return None
        i = np.minimum(np.searchsorted(pv, p_cur), pv.size - 1)
        ids = self.table[allowed, k_cur + 1, i]
        if (pv[i] != p_cur).any() or (ids < 0).any():
            return None
        return ids

    def _add(self, t: int, a: int, k: int, p: float) -> None:
        """The move set of state (k, p) where the slot allows `a` allocations, padded to M, under a new id."""
        M = self.M
        mv = self.dp.moves_from(self.terms[0], t, int(k), float(p), self.pend, allowed=int(a))
        c = mv.k.size
        pad = {"valid": (np.arange(M) < c), "k": np.full(M, -1, dtype=np.int64), "loss": np.zeros(M),
               "row": np.zeros(M, dtype=np.int64), "pending": np.zeros(M), "run": np.zeros(M, dtype=bool),
               "o": np.zeros(M, dtype=np.int64), "s": np.zeros(M, dtype=np.int64), "rate": np.ones(M),
               "cap": np.zeros(M)}
        for name in self.FIELDS[1:]:
            pad[name][:c] = getattr(mv, name)
        self.sets[(a, k, p)] = len(self.sets)
        for name in self.FIELDS:
            self.rows[name].append(pad[name])

    def _values(self, b: np.ndarray, t: int, mv: dict, done: np.ndarray, which: np.ndarray) -> tuple:
        """`WindowDP._values` of paths `b` at slot t: per move its value (minus infinity where it breaks the net
        or is padding), whether it finishes, the slot's own value and whether it keeps the net."""
        dp, T, dt = self.dp, self.dp.w, self.dp.dt
        R, d = self.R[b][:, None], done[:, None]
        run, cap, rate = mv["run"], mv["cap"], mv["rate"]
        after = R - (d + cap)
        fin = run & (after <= dp.tol)
        if t + 1 == T:
            later = self.stack.at(self.tail_rows[b], np.maximum(after, dp.tol))
        else:
            x = (d + cap) / self.q[b][:, None]
            lv = np.where(which[:, None] == 0, np.rint(x), np.ceil(x) - 1)
            lv = np.where(mv["valid"], np.clip(lv, 0, self.n - 1), 0).astype(np.int64)
            later = self.tables[b[:, None], t + 1, which[:, None], lv, mv["row"]]
        at = self.slot_terms[:, b, t, None]  # the slot's terms of every path in one gather
        ps = dict(zip(self.PER_SLOT, at[1:]))
        unused = unused_share(dt, mv["loss"], R - d, rate)
        o, s = mv["o"], mv["s"]
        finish = unused * (o * ps["od_refund"] + s * ps["sp_refund"] + ps["value_unused"]) + at[0]
        now = np.where(fin, finish, 0.0) - (o * ps["od_cost"] + s * ps["sp_cost"])
        stop = (mv["k"] < 0) & (after > ps["lim"]) & self.may_stop[b][:, None] & (t < self.left[b])[:, None]
        ok = fin | stop | (after <= ps["lim"]) | (run & (mv["k"] == dp.full_od)
                                                 & (after - ps["lim"] <= dp.job.work))
        ok &= mv["valid"]
        vals = np.where(ok, np.where(stop, self.stop_value[b][:, None], now + np.where(fin, 0.0, later)), -np.inf)
        return vals, fin, now, ok

    def bounds(self) -> np.ndarray:
        """Per window: the best move at slot 0 from the true state, on the upper table."""
        b = np.arange(self.B)
        mv = self._moves(b, 0, np.array(self.start_k), np.array([tm.pending_h for tm in self.terms], dtype=float))
        vals = self._values(b, 0, mv, np.zeros(self.B), np.ones(self.B, dtype=np.int64))[0]
        return [float(np.max(vals[r][mv["valid"][r]])) for r in range(self.B)]

    def follow(self) -> tuple[list, list]:
        """Per window, the plans read forward on the guide table and on the upper table as (o, s, work, objective),
        None where it broke the net (`WindowDP._follow`): both tables' paths at once (path p: window p mod B,
        table p // B)."""
        dp, T, B, dt = self.dp, self.dp.w, self.B, self.dp.dt
        N = 2 * B
        win, which = np.tile(np.arange(B), 2), np.repeat(np.arange(2), B)
        o = np.zeros((N, T), dtype=np.int64)
        s = np.zeros((N, T), dtype=np.int64)
        work = np.zeros((N, T))
        k_cur = np.tile(np.array(self.start_k, dtype=np.int64), 2)
        p_cur = np.tile(np.array([tm.pending_h for tm in self.terms], dtype=float), 2)
        done, objective = np.zeros(N), np.zeros(N)
        result: list = [None] * N
        alive = np.arange(N)
        for t in range(T):
            if not alive.size:
                break
            b = win[alive]
            mv = self._moves(b, t, k_cur[alive], p_cur[alive])
            vals, fin, now, ok = self._values(b, t, mv, done[alive], which[alive])
            any_ok = ok.any(axis=1)
            finite = np.isfinite(vals).any(axis=1)
            most = np.where(ok, dp.alloc.rate[np.maximum(mv["k"], 0)] * (mv["k"] >= 0) * (dt - mv["loss"]), -np.inf)
            pick = np.where(finite, vals.argmax(axis=1), most.argmax(axis=1))
            r = np.arange(alive.size)
            k = mv["k"][r, pick]
            R_left = self.R[b] - done[alive]
            stopped = (k < 0) & (R_left > self.per_slot["lim"][b, t]) & self.may_stop[b] & (t < self.left[b])
            keep = any_ok.copy()  # no move keeps the net: no plan
            for j in np.flatnonzero(any_ok & stopped):  # stopped: nothing runs
                i = int(alive[j])
                result[i] = (o[i].copy(), s[i].copy(), work[i].copy(),
                             float(objective[i]) + float(self.terms[int(win[i])].stop_value))
                keep[j] = False
            go = any_ok & ~stopped
            objective[alive[go]] = objective[alive[go]] + now[r, pick][go]
            runs = go & (k >= 0)
            fin_sel = fin[r, pick]
            ka = np.maximum(k, 0)
            o[alive[runs], t] = dp.alloc.o[ka[runs]]
            s[alive[runs], t] = dp.alloc.s[ka[runs]]
            w_t = np.where(fin_sel, R_left, dp.alloc.rate[ka] * (dt - mv["loss"][r, pick]))
            work[alive[runs], t] = w_t[runs]
            for j in np.flatnonzero(go & fin_sel):
                i = int(alive[j])
                result[i] = (o[i].copy(), s[i].copy(), work[i].copy(), float(objective[i]))
                keep[j] = False
            cont = go & ~fin_sel
            done[alive[cont]] = done[alive[cont]] + work[alive[cont], t]
            k_cur[alive[cont]] = k[cont]
            p_cur[alive[cont]] = mv["pending"][r, pick][cont]
            alive = alive[keep]
        if alive.size:  # past the window: the tail's value of the work left
            b = win[alive]
            rest = self.stack.at(self.tail_rows[b], (self.R[b] - done[alive])[:, None])[:, 0]
            for i, value in zip(alive.tolist(), rest.tolist()):
                result[i] = (o[i].copy(), s[i].copy(), work[i].copy(), float(objective[i]) + value)
        return result[:B], result[B:]
