"""Simulating windows in blocks (what `spotlab simulate` does for window-independent policies) gives exactly the
numbers of one pass over all windows: means, per-run table and per-slot record."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spotlab.errors import TraceError
from spotlab.jobs.job import make_job
from spotlab.market.episodes import Episodes, concat
from spotlab.market.load import load_market
from spotlab.market.synthetic import synthetic_market
from spotlab.market.episodes import episode_rows
from spotlab.market.windows import cut_windows
from spotlab.policies.registry import make_policy
from spotlab.policies.registry import REGISTRY, policy_class
from spotlab.policies.run import run_policy
from spotlab.policies.semantics import Semantics
from spotlab.simulation.engine import simulate


INDEPENDENT_WINDOWS = [name for name in REGISTRY if getattr(policy_class(name), "independent_windows", False)]


def test_the_rules_declare_their_windows_independent():
    assert INDEPENDENT_WINDOWS == ["on_demand", "greedy", "uniform_progress", "chc_zones", "prediction_free",
                                   "prediction_free_zones", "up_failover", "round_robin", "up_probe", "up_probe_cost"]


@pytest.mark.parametrize("policy", INDEPENDENT_WINDOWS)
def test_blocks_change_nothing(cbl_trace, cbl_windows, policy):
    market = load_market(cbl_trace, spot_price=0.9731, od_price=3.06)
    loaded = cut_windows(market, windows=cbl_windows, history_hours=0)
    job = make_job(48, 52, overhead_hours=0.1)
    block = 64
    if policy == "chc_zones":  # a DP to the deadline per plan: five windows in blocks of two say the same
        loaded, block = episode_rows(loaded, slice(0, 5)), 2
    one = run_policy(policy, {}, loaded, job, Semantics.cant_be_late(), block=None)
    blocks = run_policy(policy, {}, loaded, job, Semantics.cant_be_late(), block=block)
    assert one.metrics() == blocks.metrics()
    assert one.summary().equals(blocks.summary())
    assert one.records().equals(blocks.records())


@pytest.mark.parametrize("keep", ["metrics", "summary"])
def test_blocks_keep_only_what_is_asked(cbl_trace, cbl_windows, keep):
    market = load_market(cbl_trace, spot_price=0.9731, od_price=3.06)
    loaded = cut_windows(market, windows=cbl_windows, history_hours=0)
    job = make_job(48, 52, overhead_hours=0.1)
    one = run_policy("greedy", {}, loaded, job, Semantics.cant_be_late(), block=None)
    part = run_policy("greedy", {}, loaded, job, Semantics.cant_be_late(), block=64, keep=keep)
    assert one.metrics() == part.metrics()
    if keep == "summary":
        assert one.summary().equals(part.summary())
    with pytest.raises(KeyError, match="not kept"):
        part.records()


def test_record_names_the_arrays_kept(cbl_trace, cbl_windows):
    from spotlab.errors import ArgumentError
    from spotlab.simulation.engine import simulate

    market = load_market(cbl_trace, spot_price=0.9731, od_price=3.06)
    loaded = cut_windows(market, windows=cbl_windows, history_hours=0)
    job = make_job(48, 52, overhead_hours=0.1)
    sem = Semantics.cant_be_late()
    full = simulate(sem.policy("uniform_progress"), loaded, job, sem.settings)
    some = simulate(sem.policy("uniform_progress"), loaded, job, sem.settings, record={"reconfig"})
    assert set(some.arrays) == {"reconfig", "gave_up"}
    assert some.metrics() == full.metrics()
    with pytest.raises(ArgumentError, match="cannot record nonsense"):
        simulate(sem.policy("greedy"), loaded, job, sem.settings, record={"nonsense"})


def test_windows_of_large_counts_keep_their_values():
    """Windows are cut in the narrowest integer type that holds the trace's counts; the values never change."""
    from spotlab.market.market import Market

    for top in (1, 100, 300, 70_000):
        avail = np.random.default_rng(top).integers(0, top + 1, 500)
        m = Market(avail=avail, spot_price=1.0, od_price=3.0, slot_hours=1.0, requested=top)
        starts = np.array([0, 7, 400])
        ep = Episodes.from_windows(m, starts, starts + 100)
        for row, a in zip(ep.avail, starts):
            assert np.array_equal(row.astype(np.int64), avail[a:a + 100])


# ------------------------------------------------------------------------- traces stacked in lockstep

@settings(max_examples=25, deadline=None)
@given(seeds=st.lists(st.integers(0, 10_000), min_size=2, max_size=3), data=st.data(),
       policy=st.sampled_from(["greedy", "uniform_progress", "prediction_free", "slack_reserve"]),
       gpus=st.integers(1, 4), overhead=st.sampled_from([0.0, 0.25, 1.5]))
def test_stacked_traces_simulate_as_each_alone(seeds, data, policy, gpus, overhead):
    """Windows of several traces (other lengths, other histories, other requested counts) stacked with `concat`
    give each window exactly the outcome it gets simulated with its own trace alone."""
    job = make_job(10.0 * gpus, 14.0, 18.0, overhead_hours=overhead, gpus_min=1, gpus_max=gpus, value=50 * gpus,
                   miss_penalty=20)
    parts = []
    for i, seed in enumerate(seeds):
        m = synthetic_market(24 * 6, requested=data.draw(st.integers(2, 12)), seed=seed, regime="volatile")
        n = data.draw(st.integers(1, 4))
        length = data.draw(st.integers(18, 30))
        starts = np.sort(np.asarray(data.draw(st.lists(st.integers(0, len(m) - length), min_size=n, max_size=n))))
        parts.append(Episodes.from_windows(m, starts, starts + length, history=data.draw(st.integers(0, 48))))
    together = simulate(make_policy(policy), concat(parts), job)
    alone = [simulate(make_policy(policy), p, job) for p in parts]
    np.testing.assert_array_equal(together.cost, np.concatenate([r.cost for r in alone]))
    np.testing.assert_array_equal(together.completion_h, np.concatenate([r.completion_h for r in alone]))
    assert together.names == tuple(n for r in alone for n in r.names)


def test_concat_needs_one_slot_length():
    a = Episodes.from_markets([synthetic_market(24, slot_hours=1.0)])
    b = Episodes.from_markets([synthetic_market(24, slot_hours=0.5)])
    with pytest.raises(TraceError, match="same slot length"):
        concat([a, b])
    with pytest.raises(TraceError, match="no episodes"):
        concat([])


def test_stacked_traces_keep_the_history_of_those_that_have_one():
    """A trace cut without history stacked with one cut with it (found by the property test above): the first
    gets unknown history (NaN), the second keeps its own, and a policy that reads the past (slack_reserve
    estimates how often spot comes and goes) decides as it does on each trace alone."""
    job = make_job(10.0, 14.0, 18.0, overhead_hours=0.25)
    a = Episodes.from_windows(synthetic_market(24 * 6, requested=2, seed=0, regime="volatile"), [0], [18], history=0)
    b = Episodes.from_windows(synthetic_market(24 * 6, requested=2, seed=1447, regime="volatile"), [22], [40],
                              history=22)
    both = concat([a, b])
    assert np.isnan(both.history_avail[0]).all()
    np.testing.assert_array_equal(both.history_avail[1], b.history_avail[0])
    for x, y in ((a, 0), (b, 1)):
        alone = simulate(make_policy("slack_reserve"), x, job)
        assert simulate(make_policy("slack_reserve"), both, job).cost[y] == alone.cost[0]
