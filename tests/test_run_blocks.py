"""Simulating windows in blocks (what `spotlab simulate` does for window-independent policies) gives exactly the
numbers of one pass over all windows: means, per-run table and per-slot record."""

from __future__ import annotations

import pytest

from spotlab.runs import INDEPENDENT_WINDOWS, Semantics, load_episodes, make_job, run_policy


@pytest.mark.parametrize("policy", INDEPENDENT_WINDOWS)
def test_blocks_change_nothing(cbl_trace, cbl_windows, policy):
    loaded = load_episodes(cbl_trace, cbl_windows, spot_price=0.9731, od_price=3.06, history_hours=0)
    job = make_job(48, 52, overhead_hours=0.1)
    one = run_policy(policy, {}, loaded.episodes, job, Semantics.cant_be_late(), block=None)
    blocks = run_policy(policy, {}, loaded.episodes, job, Semantics.cant_be_late(), block=64)
    assert one.metrics() == blocks.metrics()
    assert one.summary().equals(blocks.summary())
    assert one.records().equals(blocks.records())


@pytest.mark.parametrize("keep", ["metrics", "summary"])
def test_blocks_keep_only_what_is_asked(cbl_trace, cbl_windows, keep):
    loaded = load_episodes(cbl_trace, cbl_windows, spot_price=0.9731, od_price=3.06, history_hours=0)
    job = make_job(48, 52, overhead_hours=0.1)
    one = run_policy("greedy", {}, loaded.episodes, job, Semantics.cant_be_late(), block=None)
    part = run_policy("greedy", {}, loaded.episodes, job, Semantics.cant_be_late(), block=64, keep=keep)
    assert one.metrics() == part.metrics()
    if keep == "summary":
        assert one.summary().equals(part.summary())
    with pytest.raises(KeyError, match="not kept"):
        part.records()
