"""The exact hindsight optimum of a job across zones (SPEC §9): a DP over the zone, the allocation (how many GPUs,
N_min..N_max, and how many of them spot, the rest on demand, or idle), the restart overhead still to pay, and the
work done on a lattice, under the engine's rules of the run (`SimSettings`: billing, moves, egress, the completing slot,
final-zone prices, the deadline).

Why a DP: with the whole window known, the state above is all the engine carries from slot to slot, and every
slot's work is a whole multiple of one quantum (the slot, the restart overhead and H(n) being commensurate), so the
optimum is exact, not a relaxation, and its plan replays in the engine to its cost. The idle states remember the
zone the job last ran in, where egress is paid from. Levels that cannot finish in the slots left, or not yet be
reached, are never stored. The objective is the utility's: cost, less the value of finishing when it finishes,
or plus the miss penalty where the job may be left unfinished.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from ...errors import SolverError
from ...jobs.job import Job
from ...simulation.settings import SimSettings
from ...simulation.slots import ceil_slots, floor_slots
from .work_lattice import work_quantum

TOL = 1e-9


@dataclass(frozen=True)
class ZonePlan:
    """One window's plan: the zone, on-demand and spot GPUs of every slot (-1 zone: idle), the slots where a run
    (re)starts, and its objective (cost less value, plus the miss penalty where unfinished) as the DP counts it."""

    zone: np.ndarray
    o: np.ndarray
    s: np.ndarray
    restart: np.ndarray
    objective: float
    done: bool
    seconds: float


@dataclass(frozen=True)
class ZoneStart:
    """Where a plan starts, for a plan made part-way through a window (a controller re-planning): the slot `t0`
    of the window its arrays begin at, the DP mode (`ZonesDP.idle_mode`, `run_mode`; 0: never started), the
    restart overhead still to pay (hours) and the work done."""

    t0: int
    mode: int
    pending_h: float
    work_done: float


class ZonesDP:
    """The DP of the module doc for one job and one set of rules; `solve_window` solves one window."""

    def __init__(self, job: Job, horizon: int, slot_hours: float, settings: SimSettings, regions: Sequence[str],
                 must_finish: bool = True, max_cells: int = 400_000_000, bill_last: bool | None = None,
                 keep_net: str = "off"):
        if settings.transfer_time:
            raise SolverError("the optimum across zones does not model a checkpoint's transfer time; run it with "
                              "transfer_time off")
        self.job, self.T, self.dt = job, int(horizon), float(slot_hours)
        self.regions = tuple(regions)  # one per zone
        self.settings, self.Z, self.must_finish = settings, len(self.regions), bool(must_finish)
        # keep the safety net's invariant ("strict", "cbl", "skynomad"; "off": none): an online plan the net would
        # override is no plan
        self.keep_net = str(keep_net)
        self.bill_last = settings.bill_completing_slot or self.Z == 1 if bill_last is None else bool(bill_last)
        self.n = int(job.n_max)
        # the allocations a run may have: c GPUs (N_min..N_max), k of them spot, the rest on demand
        self.alloc = [(c, k) for c in range(int(job.n_min), self.n + 1) for k in range(c + 1)]
        self.NA = len(self.alloc)
        self.alloc_c = np.array([c for c, _ in self.alloc])
        self.alloc_k = np.array([k for _, k in self.alloc])
        rates = {c: float(job.throughput(c)) for c in range(int(job.n_min), self.n + 1)}
        self.rates = np.array([rates[c] for c, _ in self.alloc])
        self.gpu_hours_per_work = min(c / r for c, r in rates.items())  # the least a unit of work can take
        d = float(job.overhead_h)
        self.pend = [0.0]  # overhead left at a slot's start while running: 0, then d - dt, d - 2 dt, ... > 0
        p = d - self.dt
        while p > TOL:
            self.pend.append(p)
            p -= self.dt
        self.P = len(self.pend)
        incr = [r * (self.dt - min(x, self.dt)) for r in rates.values() for x in [d, *self.pend]]
        q = work_quantum(incr)
        if q is None:
            raise SolverError(f"the optimum across zones needs the slot ({self.dt:g} h) and the restart overhead "
                              f"({d:g} h) on simple fractions of an hour; resample the zones to a round slot "
                              "(--slot-hours, or slot_hours= in load_zones)")
        self.q = q
        self.K = int(math.ceil(job.work / q - 1e-9))
        # work levels a slot adds, per allocation and overhead left (a run going on), or after a launch
        self.prog = np.array([[int(round(r * (self.dt - min(x, self.dt)) / q)) for x in self.pend]
                              for r in self.rates])
        self.prog_launch = np.array([int(round(r * (self.dt - min(d, self.dt)) / q)) for r in self.rates])
        self.next_p = np.array([self._index(max(x - self.dt, 0.0)) for x in self.pend])
        self.next_launch = self._index(max(d - self.dt, 0.0))
        self.lost = np.array([min(x, self.dt) for x in self.pend])
        self.lost_launch = min(d, self.dt)
        self.E = settings.move_usd(self.regions, job.checkpoint_gb)
        # modes: 0 never started; 1..Z idle, last ran in zone z; then (zone z, allocation a) running
        self.M = 1 + self.Z + self.Z * self.NA
        self.max_cells = int(max_cells)
        self._folded: ZonesDP | None = None
        codes = self.M * self.P * 2
        self.code_dtype = np.uint8 if codes < 255 else np.uint16 if codes < 65535 else np.int32

    def _index(self, pending: float) -> int:
        for i, x in enumerate(self.pend):
            if abs(x - pending) <= TOL:
                return i
        return 0

    def run_mode(self, z: int, a: int) -> int:
        """The mode of a run in zone `z` with allocation `a` (`alloc[a]`: GPUs, of which spot)."""
        return 1 + self.Z + z * self.NA + a

    def idle_mode(self, z: int) -> int:
        """The mode of a job not running whose checkpoint is in zone `z`."""
        return 1 + z

    def mode_of(self, zone: int, on_demand: int, spot: int, started: bool) -> int:
        """The mode of a job in `zone` holding `on_demand` + `spot` GPUs (none, or fewer than N_min left by a
        preemption: idle there, or never started)."""
        if on_demand + spot < self.job.n_min or on_demand + spot <= 0:
            return self.idle_mode(zone) if started else 0
        return self.run_mode(zone, self.alloc.index((int(on_demand + spot), int(spot))))

    def _start(self, start: ZoneStart | None) -> tuple[int, int, int, int]:
        """(t0, mode, pending index, work level) of a start; the nearest pending value and level on the lattice."""
        if start is None:
            return 0, 0, 0, 0
        p = int(np.argmin([abs(x - start.pending_h) for x in self.pend])) if start.mode > self.Z else 0
        w = min(int(math.floor(start.work_done / self.q + 1e-6)), self.K)
        return int(start.t0), int(start.mode), p, w

    def solve_window(self, avail: np.ndarray, spot_price: np.ndarray, od_price: np.ndarray,
                     final_zone: int | None = None, start: ZoneStart | None = None,
                     first_prices: tuple[np.ndarray, np.ndarray] | None = None) -> ZonePlan:
        """The optimum of one window (arrays (Z, T)); with `final_zone`, prices are that zone's first-slot ones and
        the job must end there (the leaderboard's pricing: `solve_zones` tries every zone). From `start`, the
        arrays begin at its slot and `first_prices` (spot, on-demand per zone) are the window's first slot's."""
        T = self.T
        A = np.asarray(avail)[:, :T].astype(np.int64)
        SP, OD = np.asarray(spot_price, dtype=float)[:, :T], np.asarray(od_price, dtype=float)[:, :T]
        finish_ok = None
        if final_zone is not None:
            sp0, od0 = (SP[:, 0], OD[:, 0]) if first_prices is None else first_prices
            SP = np.broadcast_to(float(sp0[final_zone]), SP.shape)
            OD = np.broadcast_to(float(od0[final_zone]), OD.shape)
            finish_ok = np.zeros((self.Z, self.n + 1, A.shape[1]), dtype=bool)
            finish_ok[final_zone] = True
        return self._solve(A, SP, OD, None, finish_ok, start)

    def solve_free_moves(self, avail: np.ndarray, spot_price: np.ndarray, od_price: np.ndarray,
                         final_zone: int, start: ZoneStart | None = None,
                         first_prices: tuple[np.ndarray, np.ndarray] | None = None) -> ZonePlan:
        """The optimum of one window where moves are free and every slot is priced at the final zone's first slot
        (the leaderboard's rules). Prices are then the same wherever the job is, so the zones fold into one: k spot
        GPUs can be had where some zone has k, and a run of k goes on from one slot to the next without a restart
        where some zone has k in both (the job waits in that zone, then moves for free). The plan is then given
        real zones slot by slot. `start` and `first_prices` as in `solve_window` (a start's mode is the folded
        zone's: its zone is moot)."""
        n = self.n
        A = np.asarray(avail)[:, :self.T].astype(np.int64)
        T = A.shape[1]
        kk = np.arange(n + 1)[None, :, None]
        has = A[:, None, :] >= kk  # (Z, n+1, T)
        cont = np.zeros((1, n + 1, T), dtype=bool)
        cont[0, :, 1:] = (has[:, :, :-1] & has[:, :, 1:]).any(axis=0)
        finish_ok = has[final_zone][None]
        if self._folded is None:  # the one-zone DP of the folded zones, built once for every window
            self._folded = ZonesDP(self.job, self.T, self.dt, self.settings, self.regions[:1], self.must_finish,
                                   self.max_cells, bill_last=self.bill_last, keep_net=self.keep_net)
        one = self._folded
        sp0, od0 = (np.asarray(spot_price)[:, 0], np.asarray(od_price)[:, 0]) if first_prices is None \
            else first_prices
        sp = np.full((1, T), float(sp0[final_zone]))
        od = np.full((1, T), float(od0[final_zone]))
        if start is not None and start.mode > 0:  # the same run or idle state, in the one folded zone
            x = (start.mode - 1 - self.Z) % self.NA
            mode = one.run_mode(0, x) if start.mode > self.Z else one.idle_mode(0)
            start = ZoneStart(start.t0, mode, start.pending_h, start.work_done)
        plan = one._solve(A.max(axis=0)[None], sp, od, cont, finish_ok, start)
        return _place(plan, has, final_zone)

    def _solve(self, A: np.ndarray, SP: np.ndarray, OD: np.ndarray, cont: np.ndarray | None,
               finish_ok: np.ndarray | None, start: ZoneStart | None = None) -> ZonePlan:
        """The DP proper. `cont` (Z, n+1, T), where given, says where a run with k spot GPUs may go on into slot t
        without a restart (default: wherever the zone has k); `finish_ok` (same shape) where the job may complete;
        `start` where the plan starts (default: slot 0 of the window, never started, no work done)."""
        started = time.perf_counter()
        job, Z, P, K, dt = self.job, self.Z, self.P, self.K, self.dt
        T = A.shape[1]
        t0, m0, p0, w0 = self._start(start)
        max_prog = int(max(self.prog.max(), self.prog_launch.max()))
        if T * self.M * P * (K + 1) > self.max_cells * 8:
            raise SolverError(f"the optimum across zones would keep {T * self.M * P * (K + 1):,} states; "
                              "shorten the window or coarsen the slots")
        INF = np.inf
        NA, ac, ak = self.NA, self.alloc_c, self.alloc_k
        run_modes = np.array([[self.run_mode(z, x) for x in range(NA)] for z in range(Z)])  # (Z, NA)
        V = np.full((self.M, P, K), INF)
        if w0 >= K:
            raise SolverError("the job is already done: nothing to plan")
        V[m0, p0, w0] = 0.0
        # the mode each zone's idle/run states leave egress from; the never-started state pays none
        src_zone = np.full(self.M, -1)
        for z in range(Z):
            src_zone[1 + z] = z
            src_zone[run_modes[z]] = z
        E_src = np.zeros((self.M, Z))
        has = src_zone >= 0
        E_src[has] = self.E[src_zone[has]]
        moving = np.where(src_zone >= 0, src_zone, 0)[:, None] != np.arange(Z)[None, :]  # (M, Z): a launch moves
        pointers: list[tuple[int, np.ndarray]] = []
        full_od = [x for x in range(NA) if ac[x] == self.n and ak[x] == 0]
        net_modes = np.array([m for m in range(self.M) if m not in set(run_modes[:, full_od].ravel())])
        best = (INF, None)  # objective, (t, mode, pending, w, kind, code)
        bill_last = self.bill_last
        full = self.settings.billing == "full"
        a = w0  # levels [a, b) are the only ones that may hold a value at a slot's start
        for t in range(T):
            b = min(K, w0 + t * max_prog + 1)
            if b <= a:  # no level left that can still finish in time
                break
            w_idx = np.arange(a, b)
            Vb = V[:, :, a:b]
            valid = ak[None, :] <= A[:, t][:, None]  # (Z, NA): the allocation's spot GPUs can be had in zone z
            price = (ac - ak)[None, :] * OD[:, t][:, None] + ak[None, :] * SP[:, t][:, None]  # per hour (Z, NA)
            Vn = np.full_like(V, INF)
            code = np.full(V.shape, -1, dtype=np.int32)  # source mode * P + source pending, x2, + kind (1 = stay)

            # never started: stays
            Vn[0, 0] = V[0, 0]
            code[0, 0] = 0 * 2 + 1
            # idle in zone z: from idle there or stopping a run there (no cost, no work; the pending is moot)
            for z in range(Z):
                srcs = np.concatenate([[1 + z], run_modes[z]])
                block = Vb[srcs].reshape(-1, b - a)  # (sources x P, levels)
                arg = np.argmin(block, axis=0)
                Vn[1 + z, 0, a:b] = block[arg, w_idx - a]
                code[1 + z, 0, a:b] = (srcs[arg // P] * P + arg % P) * 2 + 1
            # launches: from the best source over pending values, plus the egress to the zone
            Vmin = Vb.min(axis=1)  # (M, levels)
            pmin = Vb.argmin(axis=1)
            with np.errstate(invalid="ignore"):
                L = Vmin[:, None, :] + E_src[:, :, None]  # (M, Z, K)
            if self.keep_net == "strict" and Z > 1:  # the strict net counts no spot work in a slot that moves
                fires = self._net_fires(t0 + t, w_idx)
                if fires.any():
                    L = np.where(moving[:, :, None] & fires[None, None, :], INF, L)
            Lsrc = np.argmin(L, axis=0)  # (Z, K)
            Lval = np.take_along_axis(L, Lsrc[None], axis=0)[0]  # (Z, K)
            for z in range(Z):
                for x in range(NA):
                    if not valid[z, x]:
                        continue
                    k, rate = int(ak[x]), float(self.rates[x])
                    m = run_modes[z, x]
                    cost = price[z, x] * dt
                    ends_here = finish_ok is None or finish_ok[z, k, t]
                    # stay (and, with free moves, arrive from the same allocation in another zone that still has it)
                    if cont is not None and not cont[z, k, t]:
                        froms = []
                    elif self.settings.moves == "free" and Z > 1:
                        froms = [run_modes[zs, x] for zs in range(Z) if valid[zs, x]]
                    else:
                        froms = [m]
                    for ms in froms:
                        for p in range(P):
                            src = Vb[ms, p]
                            if not np.isfinite(src).any():
                                continue
                            dest = w_idx + self.prog[x, p]
                            fin = dest >= K
                            if (~fin).any():
                                cand = src[~fin] + cost
                                tgt = dest[~fin]
                                pn = self.next_p[p]
                                better = cand < Vn[m, pn, tgt]
                                Vn[m, pn, tgt[better]] = cand[better]
                                code[m, pn, tgt[better]] = (ms * P + p) * 2 + 1
                            if fin.any() and ends_here:
                                best = self._finish(best, t, src, fin, w_idx, self.lost[p], price[z, x], rate,
                                                    full, bill_last, (t, m, ms, p, 1), t0=t0)
                    # launch (a restart in place where the run could go on is no restart in the engine)
                    src, src_mode = Lval[z], Lsrc[z]
                    if froms and m in froms:
                        Lm = L[:, z, :].copy()
                        Lm[m] = INF
                        src_mode = np.argmin(Lm, axis=0)
                        src = Lm[src_mode, w_idx - a]
                    dest = w_idx + self.prog_launch[x]
                    fin = dest >= K
                    if (~fin).any():
                        cand = src[~fin] + cost
                        tgt = dest[~fin]
                        pn = self.next_launch
                        better = cand < Vn[m, pn, tgt]
                        ms = src_mode[~fin][better]
                        ps = pmin[ms, w_idx[~fin][better] - a]
                        Vn[m, pn, tgt[better]] = cand[better]
                        code[m, pn, tgt[better]] = (ms * P + ps) * 2
                    if fin.any() and ends_here:
                        best = self._finish(best, t, src, fin, w_idx, self.lost_launch, price[z, x], rate, full,
                                            bill_last, (t, m, -1, -1, 0), launch_src=(src_mode, pmin, a), t0=t0)
            lo = 0
            if self.must_finish:  # a level too low to finish in the slots left is dropped
                lo = min(max(K - (T - t - 1) * max_prog, 0), K)
                Vn[:, :, :lo] = INF
            hi = min(K, w0 + (t + 1) * max_prog + 1)  # nothing above can be reached yet
            if self.keep_net != "off" and lo < hi:
                Vn[net_modes, :, lo:hi] = np.where(self._net_fires(t0 + t, np.arange(lo, hi)), INF,
                                                   Vn[net_modes, :, lo:hi])
            pointers.append((lo, code[:, :, lo:hi].astype(self.code_dtype)))
            V = Vn
            a = lo
        unfinished = (INF, None)
        if not self.must_finish:
            flat = int(np.argmin(V))
            m, p, w = np.unravel_index(flat, V.shape)
            unfinished = (float(V[m, p, w]) + job.miss_penalty, (T - 1, int(m), int(p), int(w)))
            if unfinished[0] < best[0]:
                return self._plan(pointers, unfinished[1], None, False, unfinished[0], started, T)
        if best[1] is None:
            raise SolverError("no schedule finishes the job by its deadline in this window (not even on demand)")
        return self._plan(pointers, None, best[1], True, best[0], started, T)

    def _net_fires(self, t: int, levels: np.ndarray) -> np.ndarray:
        """Where the safety net would take over after slot t (absolute) at these work levels: N_max on-demand GPUs
        after one more restart could no longer finish in the slots left (strict), or would need every one of them
        (the Can't Be Late guard and SkyNomad's latch; `policies.safety_net`)."""
        job = self.job
        left = np.maximum(job.work - levels * self.q, 0.0)
        need = ceil_slots(left / job.max_rate + job.overhead_h, self.dt)
        slots = floor_slots(job.hard_deadline_h - (t + 1) * self.dt, self.dt)
        fires = need > slots if self.keep_net == "strict" else need >= slots
        return fires & (left > 1e-9 * max(1, job.work))

    def _finish(self, best, t, src, fin, w_idx, lost, price, rate, full, bill_last, where, launch_src=None,
                t0: int = 0):
        """The best completion among the sources that finish in slot t (a run doing `rate` work an hour)."""
        left = (self.job.work - w_idx[fin] * self.q) / rate
        used = lost + left
        billed = self.dt if full else np.minimum(used, self.dt)
        cost = price * billed if bill_last else 0.0
        completion = (t0 + t) * self.dt + np.minimum(used, self.dt)
        obj = src[fin] + cost - self.job.value_at(completion)
        if not np.isfinite(obj).any():
            return best
        i = int(np.nanargmin(np.where(np.isfinite(obj), obj, np.inf)))
        if obj[i] < best[0]:
            w = int(w_idx[fin][i])
            if launch_src is not None:
                Lsrc, pmin, a = launch_src
                ms = int(Lsrc[w - a])
                return float(obj[i]), (t, where[1], ms, int(pmin[ms, w - a]), 0, w)
            return float(obj[i]), (t, where[1], where[2], where[3], 1, w)
        return best

    def _plan(self, pointers, end_state, finish, done, objective, started, T: int) -> ZonePlan:
        """Read the plan back from the pointers: the run or idle state of every slot."""
        P, Z = self.P, self.Z
        zone = np.full(T, -1, dtype=np.int64)
        o = np.zeros(T, dtype=np.int64)
        s = np.zeros(T, dtype=np.int64)
        restart = np.zeros(T, dtype=bool)
        if finish is not None:
            t, m, ms, ps, kind, w = finish
            self._set(t, m, zone, o, s)
            restart[t] = kind == 0
            m, p, t = ms, ps, t - 1
        else:
            t, m, p, w = end_state
        while t >= 0 and m >= 0:
            self._set(t, m, zone, o, s)
            lo, band = pointers[t]
            c = int(band[m, p, w - lo]) if 0 <= w - lo < band.shape[2] else -1
            if c < 0 or c == np.iinfo(band.dtype).max:
                raise SolverError("the optimum across zones lost its way reading the plan back (a bug)")
            kind, ms, ps = c % 2, (c // 2) // P, (c // 2) % P
            if m > Z:  # a run: the work it did this slot
                restart[t] = kind == 0
                x = (m - 1 - Z) % self.NA
                w -= self.prog[x, ps] if kind == 1 else self.prog_launch[x]
            m, p, t = ms, ps, t - 1
        return ZonePlan(zone, o, s, restart, float(objective), bool(done), time.perf_counter() - started)

    def _set(self, t: int, m: int, zone, o, s) -> None:
        if m <= self.Z:  # never started, or idle
            return
        z, x = divmod(m - 1 - self.Z, self.NA)
        c, k = self.alloc[x]
        zone[t], s[t], o[t] = z, k, c - k


def _place(plan: ZonePlan, has: np.ndarray, final_zone: int) -> ZonePlan:
    """Real zones for a plan made on the folded zones of `solve_free_moves`: a slot of k spot GPUs goes to a zone
    that has k then, and also in the next slot where the run goes on there without a restart (the zone the job
    was in, where it still does); on demand, and the completing slot, in the final zone."""
    T = len(plan.o)
    zone = np.full(T, -1, dtype=np.int64)
    running = np.flatnonzero(plan.zone >= 0)
    last = int(running[-1]) if plan.done and running.size else -1
    here = final_zone
    for t in running:
        k = int(plan.s[t])
        if t == last or k == 0:
            here = final_zone
        else:
            ok = has[:, k, t].copy()
            if t + 1 < T and plan.zone[t + 1] >= 0 and plan.s[t + 1] == k and not plan.restart[t + 1]:
                ok &= has[:, k, t + 1]
            if not ok[here]:
                here = int(np.argmax(ok))
        zone[t] = here
    return ZonePlan(zone, plan.o, plan.s, plan.restart, plan.objective, plan.done, plan.seconds)


def solve_zones(dp: ZonesDP, avail: np.ndarray, spot_price: np.ndarray, od_price: np.ndarray) -> ZonePlan:
    """One window's optimum under `dp`'s rules; with final-zone pricing, the best over the zone it ends in."""
    if dp.settings.pricing != "final_zone_first_slot":
        return dp.solve_window(avail, spot_price, od_price)
    free = dp.settings.moves == "free"
    plans = []
    for f in final_zone_order(dp, spot_price, od_price):
        if plans and _bound(dp, spot_price, od_price, f) >= min(p.objective for p in plans) - TOL:
            break  # no plan ending in this zone, or any after it, can do better
        try:
            plans.append(dp.solve_free_moves(avail, spot_price, od_price, f) if free else
                         dp.solve_window(avail, spot_price, od_price, final_zone=f))
        except SolverError:
            continue
    if not plans:
        raise SolverError("no schedule finishes the job by its deadline in this window (not even on demand)")
    return min(plans, key=lambda p: p.objective)


def _bound(dp: ZonesDP, spot_price: np.ndarray, od_price: np.ndarray, final_zone: int) -> float:
    """A floor on the objective of any plan priced at `final_zone`'s first slot: the work's GPU-hours at the
    cheaper of its two prices, less the job's value (or the miss penalty, where the job may be left)."""
    job = dp.job
    price = min(float(np.asarray(spot_price)[final_zone, 0]), float(np.asarray(od_price)[final_zone, 0]))
    floor = job.work * dp.gpu_hours_per_work * price - float(job.value)
    return floor if dp.must_finish else min(floor, float(job.miss_penalty))


def final_zone_order(dp: ZonesDP, spot_price: np.ndarray, od_price: np.ndarray) -> list[int]:
    """The zones a run priced at its final zone's first slot may end in, the one with the lowest floor first."""
    return sorted(range(dp.Z), key=lambda f: (_bound(dp, spot_price, od_price, f), f))
