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
SHORT_ROWS = 8  # `_first_min` loops over fewer rows than this, else np.argmin is quicker
DEAD_CHECK = 16  # slots between the DP's checks that some state is left (a solve with no plan dies in its first slot)


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
        self.max_prog = int(max(self.prog.max(), self.prog_launch.max()))
        self._tables()

    def _tables(self) -> None:
        """What every solve of this job and these rules shares: the runs j = z * NA + x (zone z, allocation x),
        the modes each may go on from (itself; with free moves across zones, the same allocation in any zone),
        the sources of each zone's idle state, egress by source mode, and the net's slots needed per level."""
        Z, NA, M, P = self.Z, self.NA, self.M, self.P
        run_modes = np.array([[self.run_mode(z, x) for x in range(NA)] for z in range(Z)]).reshape(Z, NA)
        self.j_zone = np.repeat(np.arange(Z), NA)
        self.j_alloc = np.tile(np.arange(NA), Z)
        free_across = self.settings.moves == "free" and Z > 1
        self.froms = run_modes[:, self.j_alloc].T if free_across else run_modes.reshape(-1, 1)  # (J, F)
        self.stay_code = (self.froms[:, :, None] * P + np.arange(P)[None, None, :]) * 2 + 1  # (J, F, P)
        # levels a slot of the run adds, per run (J,) for each pending value, and after a launch; one number where
        # every run adds the same
        self.stay_shift = [_one_or_all(self.prog[self.j_alloc, p]) for p in range(P)]
        self.launch_shift = _one_or_all(self.prog_launch[self.j_alloc])
        self.j_mode = run_modes.ravel()
        self.idle_code = (1 + np.arange(Z)) * P * 2 + 1  # idle from idle (pending 0), kind "stay"
        self.idle_pend = np.zeros((1 + Z, self.K + 1), dtype=np.intp)  # idle and never started: pending 0
        self.idle_codes = np.repeat(self.idle_code[:, None, None], self.K + 1, axis=2)  # (Z, 1, levels), sliced
        # the zone each idle/run mode leaves egress from; the never-started mode pays none
        src_zone = np.full(M, -1)
        for z in range(Z):
            src_zone[1 + z] = z
            src_zone[run_modes[z]] = z
        self.E_src = np.zeros((M, Z))
        has = src_zone >= 0
        self.E_src[has] = self.E[src_zone[has]]
        self.moving = np.where(src_zone >= 0, src_zone, 0)[:, None] != np.arange(Z)[None, :]  # (M, Z): a launch moves
        full_od = [x for x in range(NA) if self.alloc_c[x] == self.n and self.alloc_k[x] == 0]
        self.net_modes = np.array([m for m in range(M) if m not in set(run_modes[:, full_od].ravel())])
        # under a guard that acts at a slot's start (Can't Be Late's, SkyNomad's), a state at a level it fires at
        # may only go on with the full on-demand run it holds: the stays (run j from source i) that do that
        self.guard_at_start = self.keep_net in ("cbl", "skynomad")
        self.holds_od = (self.froms == self.j_mode[:, None]) & np.isin(self.j_alloc, full_od)[:, None]  # (J, F)
        self.od_runs = np.flatnonzero(np.isin(self.j_alloc, full_od))  # the runs j of N_max on-demand GPUs
        job = self.job
        left = np.maximum(job.work - np.arange(self.K) * self.q, 0.0)
        self.net_need = ceil_slots(left / job.max_rate + job.overhead_h, self.dt)
        self.net_left = left > 1e-9 * max(1, job.work)
        # the levels where the net fires are those below a count (need never grows with work done): found by search
        self.net_prefix = bool(np.all(np.diff(self.net_need) <= 0) and np.all(np.diff(self.net_left.astype(int)) <= 0))
        self.net_rising = -self.net_need  # ascending where it is a prefix
        self.net_behind = int(self.net_left.sum())
        self.net_counts: list[int] = []  # `_net_count(t)` for t = 0, 1, ...: the same every solve, kept once made

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

    def start_at(self, t: int, zone: int, held_o: int, held_s: int, prev_s: int, started: bool, pending_h: float,
                 work_done: float) -> ZoneStart:
        """The DP's start at slot `t` of a job in `zone` that ran `prev_s` spot GPUs last slot and holds
        `held_o` + `held_s` now: a run that lost spot GPUs restarts on what it holds (the engine charges the
        restart), which in the DP is a launch from idle there."""
        intact = held_s >= prev_s
        o, s = (int(held_o), int(held_s)) if intact else (0, 0)
        return ZoneStart(int(t), self.mode_of(int(zone), o, s, bool(started)), float(pending_h), float(work_done))

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
        `start` where the plan starts (default: slot 0 of the window, never started, no work done).

        Only the band of levels that may hold a value is kept, slot by slot: from the lowest that can still finish
        in the slots left to the highest the slots so far can reach from the start. Every (zone, allocation) is
        updated at once, its sources tried in the order a loop over them would (the modes a run may go on from,
        the overhead left, then a launch), a state taking a source only where it is strictly better: the values,
        ties and plans of that loop."""
        started = time.perf_counter()
        job, Z, P, K, NA, M = self.job, self.Z, self.P, self.K, self.NA, self.M
        T = A.shape[1]
        t0, m0, p0, w0 = self._start(start)
        mp = self.max_prog
        if T * M * P * (K + 1) > self.max_cells * 8:
            raise SolverError(f"the optimum across zones would keep {T * M * P * (K + 1):,} states; "
                              "shorten the window or coarsen the slots")
        if w0 >= K:
            raise SolverError("the job is already done: nothing to plan")
        INF = np.inf
        R, J, F = 1 + Z, Z * NA, self.froms.shape[1]
        jz, jx = self.j_zone, self.j_alloc
        jk, jc = self.alloc_k[jx], self.alloc_c[jx]
        # per slot and (zone, allocation) j = z * NA + x, (T, J): can be had, price an hour, may go on, may complete
        valid = jk[None, :] <= A[jz].T
        price = (jc - jk)[None, :] * OD[jz].T + jk[None, :] * SP[jz].T
        cost = price * self.dt
        goes_on = np.ones((T, J), dtype=bool) if cont is None else cont[jz, jk, :T].T
        ends = np.ones((T, J), dtype=bool) if finish_ok is None else finish_ok[jz, jk, :T].T
        stays = valid[:, :, None] & goes_on[:, :, None] & valid[:, self.froms - R]  # (T, J, F)
        stay_cost = np.where(stays, cost[:, :, None], INF)
        launch_cost = np.where(valid, cost, INF)
        # a launch where the run could go on is a restart in place, which the engine does not make: not from itself
        not_from_self = valid & goes_on
        stay_ends, launch_ends = stays & ends[:, :, None], valid & ends
        strict = self.keep_net == "strict" and Z > 1  # the strict net counts no spot work in a slot that moves
        finite = bool(np.isfinite(SP).all() and np.isfinite(OD).all() and np.isfinite(self.E).all())
        V = np.full((M, P, 1), INF)  # levels [a, b) at a slot's start
        V[m0, p0, 0] = 0.0
        pointers: list[tuple[int, np.ndarray]] = []
        net_counts = self._net_counts(t0 + T) if self.keep_net != "off" and self.net_prefix else []
        best = (INF, None)  # objective, (t, mode, source mode, source pending, kind, level)
        a = w0
        for t in range(T):
            b = min(K, w0 + t * mp + 1)
            if b <= a:  # no level left that can still finish in time
                break
            nb = b - a
            lo = min(max(K - (T - t - 1) * mp, 0), K) if self.must_finish else 0  # lower: cannot finish
            hi = min(K, w0 + (t + 1) * mp + 1)  # nothing above can be reached yet
            nh = max(hi - lo, 0)
            Vn = np.full((M, P, nh), INF)
            code = np.full((M, P, nh), -1, dtype=np.int32)  # source mode * P + source pending, x2, + kind (1 = stay)
            code[0, 0] = 1
            # where the guard fires at this slot's start it holds N_max on-demand GPUs: from those levels only a full
            # on-demand run going on (`Vs`: every other source masked)
            Vs, held = V, 0
            if self.guard_at_start:
                if self.net_prefix and t > 0 and F == 1:
                    # the net dropped every other state at those levels after the last slot: only the full
                    # on-demand runs are there, and only their own stays read `V` (F == 1), so masking them as
                    # sources of the rest is the whole mask
                    held = min(net_counts[t0 + t - 1], b) - a
                else:
                    fired = self._net_fires(t0 + t - 1, a, b)
                    if fired.any():
                        Vs = np.where(fired, INF, V)
            # a run's best pending value per level (J, levels); idle and never-started states hold pending 0 only
            vr, ir = _first_min(Vs[R:].transpose(1, 0, 2), finite)
            if held > 0:
                vr[self.od_runs, :held] = INF
            s0 = max(a, lo)
            if b > s0:  # never started: stays; idle in zone z: from idle there or stopping a run there
                Vn[0, 0, s0 - lo:b - lo] = V[0, 0, s0 - a:]
                c = s0 - a  # sources in the loop's order: idle there, then each allocation's run (its best pending)
                values = np.concatenate([Vs[1:R, 0, None, c:], vr[:, c:].reshape(Z, NA, -1)], axis=1)
                codes = np.concatenate([self.idle_codes[:, :, :nb - c],
                                        ((self.j_mode[:, None] * P + ir[:, c:]) * 2 + 1).reshape(Z, NA, -1)], axis=1)
                Vn[1:R, 0, s0 - lo:b - lo], code[1:R, 0, s0 - lo:b - lo] = _first_min(
                    values.transpose(1, 0, 2), finite, codes.transpose(1, 0, 2))
            # launches: from the best source over pending values, plus the egress to the zone
            Vmin = np.concatenate([Vs[:R, 0], vr])  # (M, levels)
            pmin = np.concatenate([self.idle_pend[:, :nb].astype(ir.dtype, copy=False), ir])
            with np.errstate(invalid="ignore"):
                L = Vmin[:, None, :] + self.E_src[:, :, None]  # (M, Z, levels)
            if strict:
                fires = self._net_fires(t0 + t, a, b)
                if fires.any():
                    L = np.where(self.moving[:, :, None] & fires[None, None, :], INF, L)
            Lval, Lsrc = _first_min(L, finite)  # (Z, levels)
            src, src_mode = Lval[jz], Lsrc[jz]  # (J, levels)
            own = not_from_self[t][:, None] & (src_mode == self.j_mode[:, None])
            if own.any():  # the best source but the run itself
                L2 = L.copy()
                L2.reshape(M, -1)[Lsrc.ravel(), np.arange(Z * nb)] = INF
                val2, src2 = _first_min(L2, finite)
                src, src_mode = np.where(own, val2[jz], src), np.where(own, src2[jz], src_mode)
            levels = np.arange(nb)
            g0 = max(lo, a)  # the levels a run can reach: [g0, hi)
            if hi > g0:
                for i in range(F):
                    rows = self._stay_sources(V, Vs, i)  # (J, P, levels)
                    for p in range(P):
                        self._relax(Vn[R:, self.next_p[p]], code[R:, self.next_p[p]], rows[:, p],
                                    self.stay_shift[p], stay_cost[t, :, i], self.stay_code[:, i, p], a, g0, lo, mp)
                launch_code = (src_mode * P + pmin[src_mode, levels]) * 2
                self._relax(Vn[R:, self.next_launch], code[R:, self.next_launch], src, self.launch_shift,
                            launch_cost[t], launch_code, a, g0, lo, mp)
            f0 = max(a, K - mp)  # completions: from the top levels only
            if f0 < b:
                best = self._finish(best, t, t0, V, Vs, a, f0, src, src_mode, pmin, price[t], stay_ends[t],
                                    launch_ends[t])
            if self.keep_net != "off" and nh > 0:
                if self.net_prefix:  # the net fires on the levels below one: no more work can be that far behind
                    Vn[self.net_modes, :, :max(min(net_counts[t0 + t], hi) - lo, 0)] = INF
                else:
                    Vn[self.net_modes] = np.where(self._net_fires(t0 + t, lo, hi), INF, Vn[self.net_modes])
            pointers.append((lo, code.astype(self.code_dtype)))
            V = Vn
            a = lo
            if t % DEAD_CHECK == 0 and (V == INF).all():  # no state left: nothing after can finish or do better
                break
        if not self.must_finish:
            flat = int(np.argmin(V))
            m, p, w = np.unravel_index(flat, V.shape)
            unfinished = (float(V[m, p, w]) + job.miss_penalty, (T - 1, int(m), int(p), int(w) + a))
            if unfinished[0] < best[0]:
                return self._plan(pointers, unfinished[1], None, False, unfinished[0], started, T)
        if best[1] is None:
            raise SolverError("no schedule finishes the job by its deadline in this window (not even on demand)")
        return self._plan(pointers, None, best[1], True, best[0], started, T)

    @staticmethod
    def _relax(Vt: np.ndarray, Ct: np.ndarray, src: np.ndarray, shift: int | np.ndarray, cost: np.ndarray,
               src_code: np.ndarray, a: int, g0: int, lo: int, mp: int) -> None:
        """One source per run (J, levels [a, ...)) into its target pending value (`Vt`, `Ct`: (J, levels [lo, hi))):
        level w + shift (per run, or one for all) costs src + cost[j]; a target takes it only where strictly
        better."""
        J, nb = src.shape
        hi = lo + Vt.shape[1]
        if isinstance(shift, int):  # one shift: slices
            s = shift
            l0, l1 = max(g0, a + s), min(hi, a + nb + s)
            if l1 <= l0:
                return
            cand = src[:, l0 - s - a:l1 - s - a] + cost[:, None]
            cur = Vt[:, l0 - lo:l1 - lo]
            better = cand < cur
            np.copyto(cur, cand, where=better)
            codes = src_code[:, l0 - s - a:l1 - s - a] if src_code.ndim == 2 else src_code[:, None]
            np.copyto(Ct[:, l0 - lo:l1 - lo], codes, where=better)
            return
        pad = np.full((J, nb + 2 * mp), np.inf)
        pad[:, mp:mp + nb] = src
        cols = (g0 - a + mp) + np.arange(hi - g0)[None, :] - shift[:, None]
        cand = np.take_along_axis(pad, cols, axis=1) + cost[:, None]
        cur = Vt[:, g0 - lo:]
        better = cand < cur
        np.copyto(cur, cand, where=better)
        if src_code.ndim == 2:
            cpad = np.zeros((J, nb + 2 * mp), dtype=src_code.dtype)
            cpad[:, mp:mp + nb] = src_code
            codes = np.take_along_axis(cpad, cols, axis=1)
        else:
            codes = src_code[:, None]
        np.copyto(Ct[:, g0 - lo:], codes, where=better)

    def _net_fires(self, t: int, lo: int, hi: int) -> np.ndarray:
        """Where the safety net would take over after slot t (absolute) at work levels [lo, hi): N_max on-demand GPUs
        after one more restart could no longer finish in the slots left (strict), or would need every one of them
        (the Can't Be Late guard and SkyNomad's latch; `policies.safety_net`)."""
        slots = floor_slots(self.job.hard_deadline_h - (t + 1) * self.dt, self.dt)
        need = self.net_need[lo:hi]
        fires = need > slots if self.keep_net == "strict" else need >= slots
        return fires & self.net_left[lo:hi]

    def _net_counts(self, n: int) -> list[int]:
        """`_net_count(t)` for t = 0 .. n-1 (at least), each made once per DP and kept."""
        while len(self.net_counts) < n:
            self.net_counts.append(self._net_count(len(self.net_counts)))
        return self.net_counts

    def _net_count(self, t: int) -> int:
        """How many levels from 0 up the net fires at after slot t (absolute), where they are a prefix."""
        slots = floor_slots(self.job.hard_deadline_h - (t + 1) * self.dt, self.dt)
        side = "left" if self.keep_net == "strict" else "right"  # need > slots, or need >= slots
        return min(int(np.searchsorted(self.net_rising, -slots, side=side)), self.net_behind)

    def _stay_sources(self, V: np.ndarray, Vs: np.ndarray, i: int) -> np.ndarray:
        """The states each run (J,) may go on from out of source i (`froms[:, i]`), (J, P, levels): `Vs`, but for a
        full on-demand run going on in its own mode, `V` (the levels the guard fires at included)."""
        if Vs is V:
            return V[1 + self.Z:] if self.froms.shape[1] == 1 else V[self.froms[:, i]]
        rows = self.froms[:, i]
        return np.where(self.holds_od[:, i, None, None], V[rows], Vs[rows])

    def _finish(self, best, t: int, t0: int, V: np.ndarray, Vs: np.ndarray, a: int, f0: int, src: np.ndarray,
                src_mode: np.ndarray, pmin: np.ndarray, price: np.ndarray, stay_ends: np.ndarray,
                launch_ends: np.ndarray):
        """The best completion in slot t, from levels [f0, b) of the band [a, b): `best` unless one is strictly
        better, the first such in the order of the DP's loop (zone, allocation, its sources, level). Stays from
        `V` where a full on-demand run goes on, else from `Vs` (`_stay_sources`)."""
        R, J, F, P, K = 1 + self.Z, self.Z * self.NA, self.froms.shape[1], self.P, self.K
        c0 = f0 - a
        w = np.arange(f0, a + V.shape[2])  # the levels
        rate = self.rates[self.j_alloc]
        with np.errstate(invalid="ignore", divide="ignore"):
            # stays (J, F, P, levels), then launches (J, levels)
            sv = V[self.froms[:, :, None], np.arange(P)[None, None, :], c0:]
            if Vs is not V:
                sv = np.where(self.holds_od[:, :, None, None], sv,
                              Vs[self.froms[:, :, None], np.arange(P)[None, None, :], c0:])
            obj = self._objective(sv, w, self.lost[None, None, :, None], rate[:, None, None, None],
                                  price[:, None, None, None], t0 + t)
            ok = (w[None, None, None, :] + self.prog[self.j_alloc][:, None, :, None] >= K) & stay_ends[:, :, None, None]
            obj = np.where(ok & np.isfinite(obj), obj, np.inf).reshape(J, F * P, -1)
            lv = self._objective(src[:, c0:], w, self.lost_launch, rate[:, None], price[:, None], t0 + t)
            ok = (w[None, :] + self.prog_launch[self.j_alloc][:, None] >= K) & launch_ends[:, None]
            lv = np.where(ok & np.isfinite(lv), lv, np.inf)
        allobj = np.concatenate([obj, lv[:, None, :]], axis=1)  # (J, sources, levels), in the loop's order
        i = int(np.argmin(allobj))
        value = float(allobj.flat[i])
        if not value < best[0]:
            return best
        j, c, k = np.unravel_index(i, allobj.shape)
        if c < F * P:
            return value, (t, R + int(j), int(self.froms[j, c // P]), int(c % P), 1, int(w[k]))
        ms = int(src_mode[j, c0 + k])
        return value, (t, R + int(j), ms, int(pmin[ms, c0 + k]), 0, int(w[k]))

    def _objective(self, src, w, lost, rate, price, t: int):
        """Objective of completing in slot t (absolute) from level w with `src` so far, a run doing `rate` work an
        hour after `lost` hours of overhead, at `price` an hour."""
        left = (self.job.work - w * self.q) / rate
        used = lost + left
        billed = self.dt if self.settings.billing == "full" else np.minimum(used, self.dt)
        cost = price * billed if self.bill_last else 0.0
        completion = t * self.dt + np.minimum(used, self.dt)
        return src + cost - self.job.value_at(completion)

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


def _one_or_all(shift: np.ndarray) -> int | np.ndarray:
    """The shift every run shares, or each run's."""
    return int(shift[0]) if (shift == shift[0]).all() else shift


def _first_min(x: np.ndarray, finite: bool, codes: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The least value over axis 0 and the first index holding it, as `np.argmin` gives them, or that row's entry
    of `codes` (shaped as x): row by row, a later row taken only where strictly smaller (without NaN, quicker than
    `np.argmin` over a short axis that is not the last); where NaN may be, or the axis is not short (`SHORT_ROWS`
    rows or more), `np.argmin` itself (without NaN both give the first least value)."""
    if not finite or x.shape[0] >= SHORT_ROWS:
        i = np.argmin(x, axis=0)[None]
        return np.take_along_axis(x, i, axis=0)[0], (i[0] if codes is None else np.take_along_axis(codes, i, axis=0)[0])
    v = x[0].copy()
    out = np.zeros(v.shape, dtype=np.intp) if codes is None else codes[0].copy()
    for i in range(1, x.shape[0]):
        later = x[i] < v
        np.copyto(v, x[i], where=later)
        if codes is None:
            np.copyto(out, i, where=later)
        else:
            np.copyto(out, codes[i], where=later)
    return v, out


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
