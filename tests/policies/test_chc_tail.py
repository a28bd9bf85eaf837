"""CHC's tail after its window (`spotlab.policies.chc`, `spotlab.optimum.window`).

- Work per GPU-hour in the tail is the concave envelope of H: known answers, and never below H at a count.
- `lag_slopes` is the least-squares slope it says it is (against a direct computation).
- `restart_share` counts the restarts of following spot: a hand-counted answer, its edge cases, and random
  series against a count by runs.
- `past_tails` of many windows, whose pasts differ in length, are each window's own tail to the bit (pasts
  either side of the lag products' FFT threshold and of two days, of GPU counts, fractions and gaps).
What the tail does for CHC on markets of day-long regimes is in `test_chc_quality.py`.
"""

from __future__ import annotations

import dataclasses
import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spotlab.errors import SolverError
from spotlab.jobs.job import Job, Throughput
from spotlab.optimum.window import WindowProblem, _take_from_end
from spotlab.optimum.window_types import TailForecast, WindowState, work_segments
from spotlab.policies.past_tail import past_tails, restart_share, restart_slots
from spotlab.predict.reversion import lag_slopes


def envelope(job: Job, n: float) -> float:
    """The tail's most work per hour on n GPUs on average (the minimum of the segments' lines, capped)."""
    lines = [slope * n + icpt for _, slope, icpt in work_segments(job)]
    return min(min(lines), sum(width * slope for width, slope, _ in work_segments(job)))


@pytest.mark.parametrize("beta, n_min, expected", [
    (0.5, 2, ((2.0, 1.25, 0.0), (6.0, 1.0, 0.5))),  # H(2)/2 = 1.25 is the best rate; then 1 per GPU
    (-0.2, 1, ((8.0, 0.975, 0.0),)),  # H(n)/n grows with n: one segment from 0 to N_max
    (0.0, 3, ((8.0, 1.0, 0.0),)),
])
def test_work_segments_known_answers(beta, n_min, expected):
    job = Job(work=50.0, deadline_h=40.0, n_min=n_min, n_max=8, throughput=Throughput(1.0, beta))
    got = work_segments(job)
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        np.testing.assert_allclose(g, e)


@settings(max_examples=40, deadline=None, derandomize=True)
@given(seed=st.integers(0, 2**31 - 1))
def test_work_segments_are_the_concave_envelope_of_the_throughput(seed):
    rng = np.random.default_rng(seed)
    n_max = int(rng.integers(1, 9))
    n_min = int(rng.integers(1, n_max + 1))
    tp = Throughput(1.0, float(rng.uniform(-0.5, 2.0))) if rng.random() < 0.5 else \
        Throughput.from_table({n: float(rng.uniform(0.3, 1.2)) * n for n in range(1, n_max + 1)})
    job = Job(work=10.0, deadline_h=40.0, n_min=n_min, n_max=n_max, throughput=tp)
    segs = work_segments(job)
    slopes = [s for _, s, _ in segs]
    assert all(a >= b - 1e-12 for a, b in zip(slopes, slopes[1:]))  # concave
    assert segs[0][2] == 0.0 and sum(w for w, _, _ in segs) <= n_max + 1e-9  # from the origin, within N_max
    for n in range(n_min, n_max + 1):  # never below what the job does at one of its counts
        assert envelope(job, n) >= float(tp(n)) - 1e-9
        assert envelope(job, n) <= max(float(tp(m)) for m in range(n_min, n_max + 1)) + 1e-9


@settings(max_examples=30, deadline=None, derandomize=True)
@given(seed=st.integers(0, 2**31 - 1))
def test_lag_slopes_are_the_least_squares_slopes(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(10, 200))
    u = np.repeat(rng.integers(0, 9, n // 4 + 1), 4)[:n].astype(float)  # runs of 4: some persistence
    lags = np.array([1, 2, 5, 13, 40, 300])
    beta, mean = lag_slopes(u, lags)
    assert np.all((beta >= 0) & (beta <= 1))
    for h, b, m in zip(lags, beta, mean):
        x, y = u[:max(0, n - h)], u[h:]
        if x.size < 24 or x.var() <= 1e-9:
            assert b == 0.0
            continue
        want = float(np.clip(np.cov(x, y, bias=True)[0, 1] / x.var(), 0.0, 1.0))
        assert b == pytest.approx(want, abs=1e-9) and m == pytest.approx(x.mean())


def test_restart_share_counts_the_restarts_of_following_spot():
    # spot hours at slots 1, 2, 4, 7, 8 (5 h); restarts: spells start at 1, 4, 7, the level changes at 8 (4 ->
    # 8), spells end after 2 and 4 (the one under way at the end is not known to end): 6 restarts
    usable = np.array([0, 8, 8, 0, 6, 0, 0, 4, 8], dtype=float)
    assert restart_share(usable, 1.0, 0.25) == pytest.approx(1 - 0.25 * 6 / 5)
    assert restart_share(usable, 0.5, 0.25) == pytest.approx(1 - 0.25 * 6 / 2.5)  # the same slots, half as long
    assert restart_share(usable, 1.0, 0.0) == 1.0  # restarts cost nothing
    assert restart_share(np.zeros(10), 1.0, 0.25) == 1.0  # no spot seen: nothing to discount
    assert restart_share(np.full(10, 8.0), 1.0, 0.25) == 1.0  # one spell, under way before and after
    assert restart_share(np.tile([8.0, 0.0], 20), 1.0, 0.6) == 0.0  # spells shorter than their restarts


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 3), min_size=1, max_size=60), st.sampled_from([0.25, 0.5, 1.0]),
       st.floats(0.0, 1.0), st.floats(0.0, 1.0))
def test_restart_share_is_one_minus_the_overhead_per_spot_hour(levels, dt, d1, d2):
    """Against a count by runs of equal level: every run of spot after the first run pays a restart, and
    every run of spot followed by a run without pays one more; never outside [0, 1], never up with the
    overhead."""
    usable = np.array(levels, dtype=float)
    runs = [(lvl, len(list(g))) for lvl, g in itertools.groupby(levels)]
    restarts = sum(1 for i, (lvl, _) in enumerate(runs) if lvl > 0 and i > 0)
    restarts += sum(1 for i, (lvl, _) in enumerate(runs[:-1]) if lvl > 0 and runs[i + 1][0] == 0)
    hours = sum(n for lvl, n in runs if lvl > 0) * dt
    lo, hi = sorted((d1, d2))
    for d in (lo, hi):
        want = 1.0 if hours == 0 or d == 0 else max(0.0, 1.0 - d * restarts / hours)
        assert restart_share(usable, dt, d) == pytest.approx(want)
    assert 0.0 <= restart_share(usable, dt, hi) <= restart_share(usable, dt, lo) <= 1.0


def _tail_after(avail: np.ndarray, job: Job, w: int = 4):
    """CHC's tail at the job's first slot on a market repeating `avail` (a week of it as the job's past)."""
    from spotlab.market.episodes import Episodes
    from spotlab.market.market import Market
    from spotlab.policies.chc import CHC
    from spotlab.simulation.engine import simulate
    from spotlab.simulation.slots import horizon_slots

    hours = 168 + horizon_slots(job, 1.0)
    a = np.resize(avail, hours).astype(np.int64)
    mk = Market(a, np.full(hours, 1.0), np.full(hours, 3.0), 1.0, requested=8)
    ep = Episodes.from_windows(mk, [168], [hours], history=168)
    chc = CHC(w=w, predictor="oracle", tail="past")  # the past's tail, not the oracle's
    simulate(chc, ep, job)  # sets up the policy on this market
    state = WindowState(time_h=0.0, remaining=job.work)
    return chc._tails([0], 0, chc.problem_.tail_for(state), [3.0], [np.asarray(a[168:168 + w], dtype=float)])[0]


def test_the_tail_stalls_the_job_while_spot_flickers():
    """Spot for one hour in two, 8 GPUs, 0.25-h restarts: two restarts per spot hour (it comes, then the job
    goes back to on-demand), so half of each spot hour is restarts (`restart_share` 0.5). The job stands still
    in them, its on-demand GPUs included: each block loses (1 - 0.5) x its expected spot hours, i.e. its
    useful spot GPU-hours over 8. With spot there all the time nothing stalls."""
    job = Job(work=150.0, deadline_h=24.0, hard_deadline_h=36.0, n_min=2, n_max=8,
              throughput=Throughput(1.0, 0.5), value=900.0, overhead_h=0.25)
    tail = _tail_after(np.array([8, 0]), job)
    assert tail.spot_gpu_hours.sum() > 0
    np.testing.assert_allclose(tail.stalled_hours, tail.spot_gpu_hours / 8.0, rtol=0.02)  # 0.5 but for the week's ends
    steady = _tail_after(np.array([8]), job)
    np.testing.assert_allclose(steady.stalled_hours, 0.0)
    np.testing.assert_allclose(steady.spot_gpu_hours, 8.0 * steady.hours)


def test_the_oracles_tail_counts_restarts_in_the_blocks_where_they_fall():
    """The oracle's tail reads its own slots: where the forecast flickers (spot one hour in two) each block loses
    the overhead of the restarts in it, where it is steady nothing. The past's tail, an average, spreads the same
    kind of loss over every block. Prices are the forecast's in each block."""
    from spotlab.market.episodes import Episodes
    from spotlab.market.market import Market
    from spotlab.policies.chc import CHC
    from spotlab.simulation.engine import simulate
    from spotlab.simulation.slots import horizon_slots

    job = Job(work=150.0, deadline_h=30.0, hard_deadline_h=40.0, n_min=2, n_max=8,
              throughput=Throughput(1.0, 0.5), value=900.0, overhead_h=0.25)
    H, w = horizon_slots(job, 1.0), 4
    future = np.where(np.arange(H) < 20, np.tile([8, 0], H)[:H], 8)  # flickers for 20 h, then steady
    a = np.concatenate([np.full(168, 8), future]).astype(np.int64)
    price = np.concatenate([np.full(168, 1.0), np.where(np.arange(H) < 20, 1.0, 2.0)])
    mk = Market(a, price, np.full(a.size, 3.0), 1.0, requested=8)
    ep = Episodes.from_windows(mk, [168], [a.size], history=168)
    chc = CHC(w=w, predictor="oracle", tail="oracle")
    simulate(chc, ep, job)
    bounds = chc.problem_.tail_for(WindowState(time_h=0.0, remaining=job.work))
    tail = chc._tails([0], 0, bounds, [3.0], [future[:w].astype(float)])[0]
    slots = np.arange(int(bounds[0]), int(np.ceil(bounds[-1])))
    held = future[slots].astype(float)
    np.testing.assert_allclose(tail.stalled_hours.sum(), 0.25 * restart_slots(held).sum())
    np.testing.assert_allclose(tail.spot_gpu_hours.sum(), 8.0 * ((held > 0).sum() - tail.stalled_hours.sum()))
    late = bounds[:-1] >= 21  # blocks wholly in the steady hours (the last flickering spell ends at 20)
    assert late.any() and (~late).any()
    np.testing.assert_allclose(tail.stalled_hours[late], 0.0)
    np.testing.assert_allclose(tail.spot_gpu_hours[late], 8.0 * tail.hours[late])
    np.testing.assert_allclose(tail.spot_price[late], 2.0)
    assert tail.stalled_hours[~late].sum() > 0
    past = _tail_after(np.array([8, 0]), job, w)  # flickering past: every block stalls
    assert np.all(past.stalled_hours > 0)


def test_spot_below_n_min_runs_beside_on_demand_in_the_tail():
    """The window problem runs 3 spot GPUs beside 1 on-demand GPU when the job needs 4; the tail must count the
    same hours, as 4 GPU-hours at their blended price (3 x 1 $ + 1 x 3 $) / 4, not as no spot at all (a tail
    without them expects to buy the rest of the job on demand and mixes on-demand GPUs in now), and as a tier of
    their own, not pooled with spot at an average price that is too cheap at the margin."""
    job = Job(work=120.0, deadline_h=40.0, hard_deadline_h=60.0, n_min=4, n_max=4, overhead_h=0.05)
    tail = _tail_after(np.array([3]), job)
    np.testing.assert_allclose(tail.spot_gpu_hours, 0.0)
    np.testing.assert_allclose(tail.mixed_gpu_hours, 4.0 * tail.hours)
    np.testing.assert_allclose(tail.mixed_price, 1.5)
    wide = Job(work=120.0, deadline_h=40.0, hard_deadline_h=60.0, n_min=4, n_max=8)
    both = _tail_after(np.array([6, 6, 2, 2]), wide)  # half the hours spot alone, half beside on-demand
    assert both.spot_gpu_hours.sum() > 0 and both.mixed_gpu_hours.sum() > 0
    np.testing.assert_allclose(both.spot_price, 1.0)
    np.testing.assert_allclose(both.mixed_price, (2 * 1.0 + 2 * 3.0) / 4)
    none = _tail_after(np.array([0]), job)
    np.testing.assert_allclose(none.spot_gpu_hours + none.mixed_gpu_hours, 0.0)


def test_stalled_hours_are_hours_the_tail_cannot_work_in():
    """The window problem's tail blocks keep their ends (the value by completion time) but lose their stalled
    hours of work; a plan that fit the tail at full speed must then do more in its window or finish later."""
    job = Job(work=40.0, deadline_h=12.0, hard_deadline_h=18.0, n_min=1, n_max=4, value=500.0,
              miss_penalty=100.0)
    wp = WindowProblem(job, 2, 1.0, blocks=8)
    state = WindowState(time_h=0.0, remaining=job.work)
    bounds = wp.tail_for(state)
    k = bounds.size - 1
    hours = np.diff(bounds)
    free = TailForecast(hours, np.zeros(k), np.full(k, 1.0), np.full(k, 3.0))
    stalled = TailForecast(hours, np.zeros(k), np.full(k, 1.0), np.full(k, 3.0), stalled_hours=np.full(k, 0.5))
    args = (state, np.zeros(2), np.full(2, 1.0), np.full(2, 3.0))
    t_free, t_stalled = wp.terms(*args, free, net="off"), wp.terms(*args, stalled, net="off")
    np.testing.assert_allclose(t_stalled.tail_hours[:k], np.maximum(hours - 0.5, 0.0))
    np.testing.assert_allclose(t_stalled.value_end, t_free.value_end)  # the blocks end where they ended
    restarts = WindowProblem(dataclasses.replace(job, overhead_h=0.5), 2, 1.0, blocks=8)
    base = restarts.terms(*args, stalled, net="off")
    for net, margin in (("strict", 0.5), ("cbl", 1.5)):  # the net's (a restart; and a slot), from the end
        guarded = restarts.terms(*args, stalled, net=net)
        assert restarts.net_margin(net) == margin
        np.testing.assert_allclose(guarded.tail_hours[:k - 2], base.tail_hours[:k - 2])  # (< 2 blocks)
        assert guarded.tail_hours[:k].sum() == pytest.approx(base.tail_hours[:k].sum() - margin)
    whole = wp.terms(*args, TailForecast(hours, np.full(k, 2.0), np.full(k, 1.0), np.full(k, 3.0),
                                         stalled_hours=2.0 * hours))
    np.testing.assert_allclose(whole.tail_hours[:k], 0.0)  # stalled beyond its length: the block does nothing
    np.testing.assert_allclose(whole.tail_spot_gpu_hours[:k], 0.0)
    for method in ("milp", "dp"):
        # (CHC's timing bias breaks the ties between buying on-demand now and in the tail at the same price)
        a, b = (wp.solve(*args, tail, method=method, solver="highs", mip_gap=1e-7, urgency=0.1)
                for tail in (free, stalled))
        assert b.objective < a.objective - 1.0  # less time: finishing costs value or more on-demand now
        assert b.o.sum() > a.o.sum()
    with pytest.raises(SolverError, match="stalled hours"):
        wp.terms(*args, TailForecast(hours, np.zeros(k), np.full(k, 1.0), np.full(k, 3.0),
                                     stalled_hours=np.full(k + 1, 0.5)))
    with pytest.raises(SolverError, match="mixed GPU-hours and mixed price come together"):
        wp.terms(*args, TailForecast(hours, np.zeros(k), np.full(k, 1.0), np.full(k, 3.0),
                                     mixed_gpu_hours=np.ones(k)))


@settings(max_examples=60, deadline=None, derandomize=True)
@given(hours=st.lists(st.floats(0.0, 10.0), min_size=1, max_size=12), amount=st.floats(0.0, 40.0))
def test_the_nets_margin_comes_off_the_tails_last_hours(hours, amount):
    """The margin is taken from the end: the total drops by the margin (never below 0), no block grows or goes
    negative, and a block keeps its hours unless every block after it is emptied."""
    h = np.asarray(hours)
    out = _take_from_end(h, amount)
    assert np.all(out >= 0) and np.all(out <= h + 1e-12)
    assert out.sum() == pytest.approx(max(h.sum() - amount, 0.0), abs=1e-9)
    cut = np.flatnonzero(out < h - 1e-12)
    if cut.size:
        np.testing.assert_allclose(out[cut[0] + 1:], 0.0, atol=1e-12)  # after the first cut block: all taken


@settings(max_examples=40, deadline=None, derandomize=True)
@given(seed=st.integers(0, 2**31 - 1), kind=st.sampled_from(["0/1", "counts", "fractional", "gaps"]))
def test_past_tails_of_many_windows_are_each_windows_own(seed, kind):
    """The tails of windows read at once (pasts of different lengths as rows of one array) equal each window's
    tail read alone, field by field and bit for bit."""
    rng = np.random.default_rng(seed)
    n_max = int(rng.integers(1, 9))
    job = Job(work=30.0, deadline_h=40.0, n_min=int(rng.integers(1, n_max + 1)), n_max=n_max,
              overhead_h=float(rng.choice([0.0, 0.02, 0.2])))
    dt = float(rng.choice([1 / 6, 1.0]))
    G = int(rng.integers(1, 9))
    lengths = rng.choice([1, 5, 25, 60, 290, 399, 401, 700, 1008], size=G) + rng.integers(0, 3, size=G)
    avail, price = [], []
    for n in lengths:
        a = (rng.random(n) < rng.uniform(0.2, 0.9)).astype(float)
        if kind in ("counts", "gaps"):
            a *= rng.integers(0, n_max + 3, size=n)
        if kind == "fractional":
            a *= rng.uniform(0, n_max + 1, size=n)
        p = rng.uniform(0.5, 3.0, size=n)
        if kind == "gaps":
            a[rng.random(n) < 0.05] = np.nan
            p[rng.random(n) < 0.1] = np.nan
        avail.append(a)
        price.append(p)
    w = int(rng.integers(1, 8))
    bounds = np.cumsum(np.concatenate([[w * dt], rng.uniform(0.5, 12.0, size=int(rng.integers(1, 5)))]))
    first, last = int(np.floor(bounds[0] / dt + 1e-9)), int(np.ceil(bounds[-1] / dt - 1e-9))
    ahead = np.arange(first, last)
    seen = np.array([np.nan_to_num(a[-1]) for a in avail])
    od = rng.uniform(2.0, 4.0, size=G)
    together = past_tails(job, avail, price, bounds, ahead, w - 1, dt, seen, od)
    for r in range(G):
        alone = past_tails(job, [avail[r]], [price[r]], bounds, ahead, w - 1, dt, seen[r:r + 1], od[r:r + 1])[0]
        for field in dataclasses.fields(TailForecast):
            got, want = getattr(together[r], field.name), getattr(alone, field.name)
            assert np.asarray(got).tobytes() == np.asarray(want).tobytes(), (r, field.name)
