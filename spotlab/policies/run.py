"""Run a registered policy by name on many windows, in blocks where its windows are independent."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, Callable

import numpy as np

from ..errors import ArgumentError
from ..jobs.job import Job
from ..market.episodes import Episodes, episode_rows
from ..market.zoned_episodes import ZonedEpisodes
from ..simulation.engine import simulate
from ..simulation.result import RECORDED, SimulationResult
from ..simulation.settings import SimSettings
from .registry import policy_class
from .semantics import Semantics

# Windows simulated at a time for a policy whose windows are independent (`independent_windows`): the same
# numbers, and the memory of the per-slot records bounded (30,000 windows: a fifth less time than all at once, as
# Python's cost per numpy call is shared by 10,000 windows).
BLOCK = 10_000


def run_policy(policy: str, params: dict, episodes: Episodes | ZonedEpisodes, job: Job, semantics: Semantics,
               seed: int = 0, block: int | None = BLOCK, on_block: Callable[[int, int], None] | None = None,
               wrap: Callable[[Any], Any] | None = None, keep: str = "all") -> SimulationResult:
    """Simulate a registered policy; one whose windows are independent (its class's `independent_windows`) runs
    `block` windows at a time.

    `on_block(i, n)` is told before each block; `wrap` may wrap each policy object (e.g. a progress bar).
    `keep` says what the result must still answer: "all" (`records()` too), "summary" (`summary()` and
    `metrics()`) or "metrics"; only the per-slot arrays these read are recorded (30,000 windows would otherwise
    fill ~1 GB with per-slot arrays, and writing them costs more than the simulation)."""
    if keep not in ("all", "summary", "metrics"):
        raise ArgumentError(f"keep must be 'all', 'summary' or 'metrics', got {keep!r}")
    if not isinstance(policy, str):
        raise ArgumentError(f"run_policy: policy is a registered name (spotlab policies), got {type(policy).__name__}; "
                            "run a built policy object with spotlab.simulation.engine.simulate")
    if params is not None and not isinstance(params, Mapping):
        raise ArgumentError(f"run_policy: params must be a mapping of parameter names to values, got "
                            f"{type(params).__name__}")
    if not isinstance(episodes, (Episodes, ZonedEpisodes)):
        raise ArgumentError(f"run_policy: episodes must be Episodes or ZonedEpisodes (spotlab.market.windows."
                            f"cut_windows(market, ...)), got {type(episodes).__name__}")
    if not isinstance(semantics, Semantics):
        raise ArgumentError(f"run_policy: semantics must be a Semantics (e.g. semantics_for(market)), got "
                            f"{semantics!r}")
    settings = semantics.settings
    wrap = wrap or (lambda p: p)
    needed = None if keep == "all" else _arrays_used(job, settings, keep)
    independent = getattr(policy_class(policy), "independent_windows", False)
    if block is None or not independent or episodes.n <= block:
        if on_block:
            on_block(0, 1)
        return simulate(wrap(semantics.policy(policy, params)), episodes, job, settings, seed=seed, record=needed)
    cuts = list(range(0, episodes.n, block))
    parts: list[SimulationResult] = []
    for i, a in enumerate(cuts):
        if on_block:
            on_block(i, len(cuts))
        rows = slice(a, a + block)
        part = episodes.rows(rows) if isinstance(episodes, ZonedEpisodes) else episode_rows(episodes, rows)
        parts.append(simulate(wrap(semantics.policy(policy, params)), part, job, settings, seed=seed,
                              record=needed))
    return _stack(parts)


class _Watched(Mapping):
    """A result's arrays, noting which ones are read."""

    def __init__(self, arrays: Mapping[str, np.ndarray]) -> None:
        self.arrays, self.used = arrays, set()

    def __getitem__(self, key: str) -> np.ndarray:
        value = self.arrays[key]
        self.used.add(key)
        return value

    def __iter__(self):
        return iter(self.arrays)

    def __len__(self) -> int:
        return len(self.arrays)


def _arrays_used(job: Job, settings: SimSettings, keep: str) -> set[str]:
    """The per-slot arrays that `metrics()` (and `summary()` for keep="summary") read, found by watching them
    do it on a one-slot dummy result, so this stays right whatever those methods come to use; the blocks then
    record only these (recording all of them costs more than the simulation: fresh memory for every slot)."""
    one = np.zeros(1)
    watched = _Watched({k: np.zeros((1, 1)) for k in RECORDED} | {"gave_up": np.zeros(1, dtype=bool)})
    probe = SimulationResult(policy="probe", job=job, settings=settings, names=("probe",), slot_hours=1.0,
                             arrays=watched, completion_h=one, cost=one, value=one)
    probe.metrics()
    if keep == "summary":
        probe.summary()
    return watched.used


class _StackedArrays(Mapping):
    """The per-slot arrays of several blocks, joined on first use: the command line's means need one or two of
    them, so the others are never copied."""

    def __init__(self, parts: list[Mapping[str, np.ndarray]]) -> None:
        self._parts, self._joined = parts, {}

    def __getitem__(self, key: str) -> np.ndarray:
        if key not in self._parts[0]:
            raise KeyError(f"{key!r}: the per-slot arrays of this result were not kept (run_policy keep='all')")
        if key not in self._joined:
            self._joined[key] = np.concatenate([p[key] for p in self._parts], axis=0)
        return self._joined[key]

    def __iter__(self):
        return iter(self._parts[0])

    def __len__(self) -> int:
        return len(self._parts[0])


def _stack(parts: list[SimulationResult]) -> SimulationResult:
    first = parts[0]
    per_window = {f.name: np.concatenate([getattr(p, f.name) for p in parts])
                  for f in dataclasses.fields(first) if f.name in ("completion_h", "cost", "value")}
    return dataclasses.replace(first, names=tuple(n for p in parts for n in p.names),
                               arrays=_StackedArrays([p.arrays for p in parts]), **per_window)
