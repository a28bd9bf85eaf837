"""The window problem's numbers of many windows at once (`WindowProblem.terms_many`, what a lockstep slot of CHC
makes): each window's are those it has alone, bit for bit, whatever windows are beside it; a window with a bad
input gets its own error from `solve_many` and the others their plans."""

from __future__ import annotations

import dataclasses

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from spotlab.errors import SolverError
from spotlab.optimum.window_types import TailForecast
from tests.optimum.test_window_dp import random_window


def _resized(tail: TailForecast | None, k: int, forecast: bool) -> TailForecast | None:
    """`tail`'s fields cut or repeated to k blocks (the blocks of another window's start)."""
    if tail is None:
        return None

    def fit(x):
        return None if x is None else np.resize(np.asarray(x, dtype=float), k)
    return TailForecast(fit(tail.hours), fit(tail.spot_gpu_hours), fit(tail.spot_price), fit(tail.od_price),
                        stalled_hours=fit(tail.stalled_hours), mixed_gpu_hours=fit(tail.mixed_gpu_hours),
                        mixed_price=fit(tail.mixed_price), forecast=forecast)


def windows_at_one_time(seed: int, n: int) -> tuple:
    """A problem and n windows of its job that start at one time, under one net and finishing rule, each with its
    own state, forecasts, tail (none, with a mixed tier or not, a forecast or not), slots left, biases and reserve."""
    job, wp, state0, *_, common = random_window(seed)
    rng = np.random.default_rng(seed)
    k = wp.tail_for(state0).size - 1
    rows = []
    for i in range(n):
        _, _, state, a, sp, od, tail, _ = random_window(seed + 1 + i, same_job=job, same_w=wp.w)
        rows.append(dict(state=dataclasses.replace(state, time_h=state0.time_h), avail=a, spot_price=sp,
                         od_price=od, tail=_resized(tail, k, bool(rng.random() < 0.3)),
                         slots_left=None if rng.random() < 0.2 else int(rng.integers(0, wp.w + 2)),
                         urgency=float(rng.choice([0.0, 0.005, 0.1])),
                         window_urgency=float(rng.choice([0.0, 0.01])),
                         reserve_h=float(rng.choice([0.0, 0.0, rng.uniform(0, 2)]))))
    return wp, rows, common["net"], common["must_finish"]


def _same(x: object, y: object) -> bool:
    if isinstance(x, np.ndarray) or isinstance(y, np.ndarray):
        x, y = np.asarray(x), np.asarray(y)
        return x.shape == y.shape and x.dtype == y.dtype and x.tobytes() == y.tobytes()
    return type(x) is type(y) and x == y


def _terms(wp, rows, net, must_finish):
    cols = ("state", "avail", "spot_price", "od_price", "tail", "slots_left", "urgency")
    return wp.terms_many(*([r[c] for r in rows] for c in cols), must_finish, net,
                         [r["window_urgency"] for r in rows], [r["reserve_h"] for r in rows])


@settings(max_examples=60, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**31 - 1), n=st.integers(1, 7))
def test_the_terms_of_windows_together_are_each_window_s_own(seed, n):
    wp, rows, net, must_finish = windows_at_one_time(seed, n)
    alone = []
    for r in rows:
        try:
            alone.append(_terms(wp, [r], net, must_finish)[0])
        except SolverError:
            return  # (a window the problem refuses alone: the next test's case)
    together = _terms(wp, rows, net, must_finish)
    for a, b in zip(together, alone):
        for f in dataclasses.fields(a):
            assert _same(getattr(a, f.name), getattr(b, f.name)), f.name
    # and `terms`, the one-window call, is the same
    r = rows[-1]
    one = wp.terms(r["state"], r["avail"], r["spot_price"], r["od_price"], r["tail"], r["slots_left"], r["urgency"],
                   must_finish, net, r["window_urgency"], r["reserve_h"])
    assert all(_same(getattr(one, f.name), getattr(alone[-1], f.name)) for f in dataclasses.fields(one))


@settings(max_examples=15, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**31 - 1), n=st.integers(2, 8), bad=st.sampled_from(["avail", "tail", "reserve"]))
def test_a_bad_window_among_others_gets_its_own_error_and_the_others_their_plans(seed, n, bad):
    wp, rows, net, must_finish = windows_at_one_time(seed, n)
    j = seed % n
    if bad == "avail":
        rows[j]["avail"] = np.where(np.arange(wp.w) == 0, np.nan, rows[j]["avail"])
    elif bad == "reserve":
        rows[j]["reserve_h"] = -1.0
    else:
        k = wp.tail_for(rows[j]["state"]).size - 1
        if not k:
            return
        rows[j]["tail"] = TailForecast(np.ones(k), -np.ones(k), np.ones(k), np.ones(k))
    common = dict(net=net, must_finish=must_finish, method="auto", solver="glpk", mip_gap=1e-2, time_limit=60.0)
    got = wp.solve_many(rows, **common)
    for i, r in enumerate(rows):
        try:
            want = wp.solve(**{**common, **r})
        except SolverError as exc:
            want = exc
        if isinstance(want, SolverError) or isinstance(got[i], SolverError):
            assert str(got[i]) == str(want)
            continue
        assert i != j
        assert (got[i] is None) == (want is None)
        if want is not None:
            assert got[i].objective == want.objective and np.array_equal(got[i].o, want.o)
            assert np.array_equal(got[i].s, want.s)
    assert isinstance(got[j], SolverError)
