"""The zones DP (`spotlab.optimum.dp.zones`) keeps only the band of levels a slot can hold and updates every (zone,
allocation) at once; `FullWidthZonesDP` below is the loop it replaced (every level of the work lattice every slot, one
(zone, allocation, source) at a time), kept as the reference: on random markets of 1-4 zones, random jobs, every
rule set, every safety net, from the window's start or part-way through it, both give the same plan to the bit (zones,
allocations, restarts), the same objective (==) and the same pointer table, or the same error."""

from __future__ import annotations

import time

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from spotlab.errors import SolverError
from spotlab.optimum.dp.zones import (
    DEAD_CHECK,
    SHORT_ROWS,
    ZonePlan,
    ZonesDP,
    ZoneStart,
    _first_min,
    solve_zones,
)
from spotlab.simulation.slots import ceil_slots, floor_slots, horizon_slots
from tests.simulation.test_zones import RULES, cases

TOL = 1e-9
EXAMPLES = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])


class Recording(ZonesDP):
    """The zones DP keeping the pointer table of its last plan (`pointers_`), its folded DP of the same kind."""

    def __init__(self, *args, fold: bool = True, **kw):
        super().__init__(*args, **kw)
        if fold:
            self._folded = type(self)(self.job, self.T, self.dt, self.settings, self.regions[:1], self.must_finish,
                                      self.max_cells, bill_last=self.bill_last, keep_net=self.keep_net, fold=False)

    def _plan(self, pointers, *args):
        self.pointers_ = pointers
        return super()._plan(pointers, *args)


class FullWidthZonesDP(Recording):
    """The zones DP as it was before the band (spotlab 0b00df8): the reference the band must equal."""

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
            Vm = Vb  # the sources but a full on-demand run going on, masked where a guard fires at the slot's start
            if self.keep_net in ("cbl", "skynomad"):
                Vm = np.where(self._reference_net_fires(t0 + t - 1, w_idx), INF, Vb)
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
                block = Vm[srcs].reshape(-1, b - a)  # (sources x P, levels)
                arg = np.argmin(block, axis=0)
                Vn[1 + z, 0, a:b] = block[arg, w_idx - a]
                code[1 + z, 0, a:b] = (srcs[arg // P] * P + arg % P) * 2 + 1
            # launches: from the best source over pending values, plus the egress to the zone
            Vmin = Vm.min(axis=1)  # (M, levels)
            pmin = Vm.argmin(axis=1)
            with np.errstate(invalid="ignore"):
                L = Vmin[:, None, :] + E_src[:, :, None]  # (M, Z, K)
            if self.keep_net == "strict" and Z > 1:  # the strict net counts no spot work in a slot that moves
                fires = self._reference_net_fires(t0 + t, w_idx)
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
                            src = Vb[ms, p] if ms == m and x in full_od else Vm[ms, p]
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
                                best = self._reference_finish(best, t, src, fin, w_idx, self.lost[p], price[z, x], rate,
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
                        best = self._reference_finish(best, t, src, fin, w_idx, self.lost_launch, price[z, x], rate,
                                                      full, bill_last, (t, m, -1, -1, 0),
                                                      launch_src=(src_mode, pmin, a), t0=t0)
            lo = 0
            if self.must_finish:  # a level too low to finish in the slots left is dropped
                lo = min(max(K - (T - t - 1) * max_prog, 0), K)
                Vn[:, :, :lo] = INF
            hi = min(K, w0 + (t + 1) * max_prog + 1)  # nothing above can be reached yet
            if self.keep_net != "off" and lo < hi:
                Vn[net_modes, :, lo:hi] = np.where(self._reference_net_fires(t0 + t, np.arange(lo, hi)), INF,
                                                   Vn[net_modes, :, lo:hi])
            pointers.append((lo, code[:, :, lo:hi].astype(self.code_dtype)))
            V = Vn
            a = lo
            if t % DEAD_CHECK == 0 and (V == INF).all():  # the band's rule: no state left, no plan after
                break
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

    def _reference_net_fires(self, t: int, levels: np.ndarray) -> np.ndarray:
        """Where the safety net would take over after slot t (absolute) at these work levels: N_max on-demand GPUs
        after one more restart could no longer finish in the slots left (strict), or would need every one of them
        (the Can't Be Late guard and SkyNomad's latch; `policies.safety_net`)."""
        job = self.job
        left = np.maximum(job.work - levels * self.q, 0.0)
        need = ceil_slots(left / job.max_rate + job.overhead_h, self.dt)
        slots = floor_slots(job.hard_deadline_h - (t + 1) * self.dt, self.dt)
        fires = need > slots if self.keep_net == "strict" else need >= slots
        return fires & (left > 1e-9 * max(1, job.work))

    def _reference_finish(self, best, t, src, fin, w_idx, lost, price, rate, full, bill_last, where, launch_src=None,
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



def _outcome(dp: Recording, solve):
    try:
        plan = solve(dp)
    except SolverError as e:
        return str(e), None, None
    folded = dp._folded if dp._folded is not None and getattr(dp._folded, "pointers_", None) is not None else dp
    return plan, folded.pointers_, (dp._folded.pointers_ if dp._folded is not None else None)


def _assert_same(band: Recording, full: FullWidthZonesDP, solve) -> bool:
    """Both DPs solve alike: the same error, or the same plan, objective and pointer table."""
    for dp in (band, full):
        dp.pointers_ = None
        if dp._folded is not None:
            dp._folded.pointers_ = None
    a, pa, _ = _outcome(band, solve)
    b, pb, _ = _outcome(full, solve)
    if isinstance(a, str) or isinstance(b, str):
        assert a == b
        return False
    for field in ("zone", "o", "s", "restart"):
        np.testing.assert_array_equal(getattr(a, field), getattr(b, field), err_msg=field)
    assert a.objective == b.objective and a.done == b.done
    assert len(pa) == len(pb)
    for (lo_a, ca), (lo_b, cb) in zip(pa, pb):
        assert lo_a == lo_b and ca.shape == cb.shape and np.array_equal(ca, cb)
    return True


def _arrays(episodes, w: int, T: int):
    zones = episodes.zones
    return (np.stack([e.avail[w, :T] for e in zones]), np.stack([e.spot_price[w, :T] for e in zones]),
            np.stack([e.od_price[w, :T] for e in zones]))


@given(cases(), st.sampled_from(sorted(RULES)), st.sampled_from(["off", "strict", "cbl", "skynomad"]), st.booleans(),
       st.data())
@EXAMPLES
def test_the_band_plans_as_the_full_width_loop(case, rules, net, must_finish, data):
    episodes, job = case
    rules_ = RULES[rules].settings
    T = min(episodes.zones[0].avail.shape[1], horizon_slots(job, episodes.slot_hours))
    args = (job, T, episodes.slot_hours, rules_, episodes.regions, must_finish)
    band, full = Recording(*args, keep_net=net), FullWidthZonesDP(*args, keep_net=net)
    A, SP, OD = _arrays(episodes, data.draw(st.integers(0, episodes.n - 1)), T)
    if data.draw(st.booleans()):  # prices the forecasts may give: ties everywhere
        SP = np.round(SP, 1)
    # the whole window, as the optimum solves it, and without the final zone's pricing (with free moves: a run
    # may go on from the same allocation in any zone)
    _assert_same(band, full, lambda dp: solve_zones(dp, A, SP, OD))
    _assert_same(band, full, lambda dp: dp.solve_window(A, SP, OD))
    # part-way through the window, from any state
    t0 = data.draw(st.integers(1, max(1, T - 1)))
    start = ZoneStart(t0, data.draw(st.integers(0, band.M - 1)), data.draw(st.sampled_from(band.pend)),
                      data.draw(st.floats(0.0, 0.95 * job.work)))
    f = data.draw(st.integers(0, band.Z - 1))
    first = (SP[:, 0], OD[:, 0])
    rest = (A[:, t0:], SP[:, t0:], OD[:, t0:])
    _assert_same(band, full, lambda dp: dp.solve_window(*rest, start=start))
    _assert_same(band, full, lambda dp: dp.solve_window(*rest, final_zone=f, start=start, first_prices=first))
    _assert_same(band, full, lambda dp: dp.solve_free_moves(*rest, f, start=start, first_prices=first))


@given(cases(), st.sampled_from(sorted(RULES)), st.data())
@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_prices_that_are_not_numbers_plan_as_the_full_width_loop(case, rules, data):
    """Where a price is NaN or infinite the band takes numpy's own first minimum (NaN first), as the loop did."""
    episodes, job = case
    T = min(episodes.zones[0].avail.shape[1], horizon_slots(job, episodes.slot_hours))
    args = (job, T, episodes.slot_hours, RULES[rules].settings, episodes.regions)
    band, full = Recording(*args, keep_net="strict"), FullWidthZonesDP(*args, keep_net="strict")
    A, SP, OD = _arrays(episodes, 0, T)
    SP = SP.copy()
    z, t = data.draw(st.integers(0, band.Z - 1)), data.draw(st.integers(0, T - 1))
    SP[z, t] = data.draw(st.sampled_from([np.nan, np.inf]))
    _assert_same(band, full, lambda dp: dp.solve_window(A, SP, OD))


def _first_min_by_rows(x, codes=None):
    """The plain row loop: a later row taken only where strictly smaller than the least so far."""
    v, out = x[0].copy(), (np.zeros(x.shape[1:], dtype=np.intp) if codes is None else codes[0].copy())
    for i in range(1, x.shape[0]):
        later = x[i] < v
        v[later] = x[i][later]
        out[later] = i if codes is None else codes[i][later]
    return v, out


@given(st.integers(1, 3 * SHORT_ROWS), st.lists(st.integers(1, 5), min_size=1, max_size=2), st.booleans(), st.data())
@settings(max_examples=200, deadline=None)
def test_first_min_equals_the_row_loop_over_short_and_long_axes(rows, tail, with_codes, data):
    """Without NaN, `_first_min` (a loop over a short axis, np.argmin over a longer one) gives the row loop's least
    values and first indices (or codes) to the bit: ties to the first row, infinities, -0.0 beside 0.0."""
    shape = (rows, *tail)
    pool = [np.inf, 0.0, -0.0, 1.0, 1.5, 2.0, 1e300, -3.25]
    x = np.array(data.draw(st.lists(st.sampled_from(pool), min_size=int(np.prod(shape)),
                                    max_size=int(np.prod(shape))))).reshape(shape)
    codes = np.arange(x.size, dtype=np.int64).reshape(shape) * 7 if with_codes else None
    got, want = _first_min(x, True, codes), _first_min_by_rows(x, codes)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape
        assert np.array_equal(g, w) and np.array_equal(np.signbit(g), np.signbit(w))
