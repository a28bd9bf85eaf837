"""Shared fixtures: the real data folder (tests that need it skip cleanly without it); Hypothesis' profile."""

from __future__ import annotations

import os

import numpy as np
import pytest
from hypothesis import settings

from spotlab.errors import DataNotFoundError


# The property tests draw the same examples every run ("repeatable": a run that passed passes again, and a failure
# is reproduced by the same command); HYPOTHESIS_PROFILE=explore draws new ones each run, to hunt for counterexamples
settings.register_profile("repeatable", derandomize=True)
settings.register_profile("explore", derandomize=False)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "repeatable"))


def _path(rel: str):
    from spotlab.data.locate import dataset_path

    try:
        return dataset_path(rel, download=False)
    except DataNotFoundError as exc:
        pytest.skip(f"dataset not available: {exc}".splitlines()[0])


CBL = "sky_spot_traces/adrs-cant-be-late-traces/"


@pytest.fixture(scope="session")
def cbl_trace():
    return _path(CBL + "ping_based__us-west-2a_v100_1.json")


@pytest.fixture(scope="session")
def cbl_windows():
    return _path(CBL + "random_start__us-west-2a_v100_1__windows.csv")


@pytest.fixture(scope="session")
def dataset():
    return _path


class Scripted:
    """A policy that plays a fixed schedule (same for every window)."""

    name = "scripted"

    def __init__(self, o, s):
        self.o, self.s = np.asarray(o), np.asarray(s)

    def reset(self, ctx):
        self.w_ = ctx.episodes.n

    def act(self, obs):
        t = min(obs.t, len(self.o) - 1)
        return np.full(self.w_, self.o[t]), np.full(self.w_, self.s[t])


@pytest.fixture
def scripted():
    return Scripted


@pytest.fixture
def spell_gap_episodes():
    """One Can't Be Late-like window (10-min ticks, $0.9731 spot, $3.06 on demand, 52 h): a week's past of 5-h
    spot spells, then 12 h without spot, then 2-h spells with 1-h gaps. The case where a policy that waits into
    the deadline guard's margin is held on on-demand through the spells that come."""
    from spotlab.market.episodes import Episodes
    from spotlab.market.market import Market

    past = np.tile(np.r_[np.ones(30), np.zeros(30)], 17)[:1008]
    future = np.r_[np.zeros(72), np.tile(np.r_[np.ones(12), np.zeros(6)], 20)][:360]
    avail = np.r_[past, future].astype(np.int64)
    market = Market(avail, np.full(avail.size, 0.9731), np.full(avail.size, 3.06), 1 / 6, requested=1)
    return Episodes.from_windows(market, [1008], [1008 + 52 * 6], history=1008)
