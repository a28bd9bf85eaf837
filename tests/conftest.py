"""Shared fixtures: the real data folder (tests that need it skip cleanly without it)."""

from __future__ import annotations

import numpy as np
import pytest

from spotlab.errors import DataNotFoundError


def _path(rel: str):
    from spotlab.data import dataset_path

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
