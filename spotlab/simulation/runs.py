"""From files to a simulation: load a trace (and its windows), build the job, run a policy.

This is the layer the CLI and the notebooks share, so a number printed by `spotlab simulate` is
the number a notebook computes with the same arguments.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np

from ..errors import TraceError
from ..jobs.job import Job, make_job  # noqa: F401  (make_job re-exported: its old home)
from ..market.market import Market
from ..policies import make_policy
from ..market.episodes import Episodes, stride_starts
from .engine import RECORDED, SimSettings, SimulationResult, simulate
from ..market.traces import is_json_trace, load_sky_spot_observations, load_tidy_observations, read_windows

SEMANTICS = ("auto", "cant-be-late", "spotlab")


@dataclass(frozen=True)
class LoadedTrace:
    market: Market  # the whole trace on the simulation grid
    episodes: Episodes  # the windows to simulate (one = the whole trace)
    kind: str  # "sky_spot" or "tidy"


def load_episodes(
    trace: str | Path,
    windows: str | Path | None = None,
    zone: str | None = None,
    slot_hours: float | None = None,
    convention: str = "preempted",
    spot_price: float | None = None,
    od_price: float | None = None,
    stride_hours: float | None = None,
    horizon_hours: float | None = None,
    history_hours: float = 168.0,
) -> LoadedTrace:
    """Load a trace of either format, apply price overrides and cut the windows.

    Windows are `[start_tick, end_tick)` in the trace's native ticks; with another slot length they
    are mapped to the new grid, which must align with them. Without a windows file, `stride_hours`
    cuts the trace into jobs one after another: a window of `horizon_hours` (the job's hard deadline)
    starting every `stride_hours` (the rounds of policy selection). Every window keeps up to
    `history_hours` of the trace before it, for policies that forecast.
    """
    json_trace = is_json_trace(trace)
    if json_trace and zone is not None:
        raise TraceError(f"{trace} is a sky_spot JSON trace of one zone; --zone applies to tidy CSVs of several")
    if json_trace:
        obs = load_sky_spot_observations(trace, convention)
    else:
        obs = load_tidy_observations(trace, zone)
    market = obs.to_market(slot_hours)
    if spot_price is not None or od_price is not None:
        market = market.with_prices(spot_price, od_price)
    kind = "sky_spot" if json_trace else "tidy"
    history = int(round(history_hours / market.slot_hours))
    if windows is None and stride_hours is not None:
        if horizon_hours is None:
            raise TraceError("cutting the trace into jobs needs the job's horizon (its hard deadline)")
        length = int(np.ceil(horizon_hours / market.slot_hours - 1e-7))
        stride = int(round(stride_hours / market.slot_hours))
        if stride < 1:
            raise TraceError(f"stride {stride_hours:g} h is shorter than one slot of {market.slot_hours:g} h")
        starts = stride_starts(len(market), length, stride)
        if starts.size == 0:
            raise TraceError(f"the trace has {len(market)} slots ({len(market) * market.slot_hours:g} h), "
                             f"shorter than one job's horizon of {horizon_hours:g} h")
        return LoadedTrace(market, Episodes.from_windows(market, starts, starts + length, history), kind)
    if windows is None:
        return LoadedTrace(market, Episodes.from_markets([market]), kind)
    native_s = obs.native_step()
    w = read_windows(windows, len(obs.seconds))
    ratio = market.slot_hours * 3600.0 / native_s
    starts = w.start_tick / ratio
    stops = w.end_tick / ratio
    if not (np.allclose(starts, np.round(starts)) and np.allclose(stops, np.round(stops))):
        raise TraceError(
            f"{windows}: window boundaries do not fall on slots of {market.slot_hours:g} h "
            f"(the trace's native tick is {native_s:g} s); use a slot length that divides them"
        )
    starts = np.round(starts).astype(np.int64)
    stops = np.minimum(np.round(stops).astype(np.int64), len(market))
    return LoadedTrace(market, Episodes.from_windows(market, starts, stops, history), kind)


@dataclass(frozen=True)
class Semantics:
    """How a run is simulated: the market's billing (the engine's `SimSettings`) and the deadline safety net
    put around online policies (`policies.safety_net`). Can't Be Late's simulator is full billing and its guard.
    """

    billing: str = "fractional"
    safety_net: str = "strict"
    give_up: bool = False

    @classmethod
    def cant_be_late(cls) -> "Semantics":
        return cls(billing="full", safety_net="cbl")

    @property
    def settings(self) -> SimSettings:
        return SimSettings(billing=self.billing)

    def policy(self, name: str, params: Mapping[str, Any] | None = None) -> Any:
        """The registered policy `name`, guarded by this net (a hindsight plan is never guarded)."""
        return make_policy(name, params, safety_net=self.safety_net, give_up=self.give_up)


def settings_for(semantics: str, kind: str, billing: str | None = None, safety_net: str | None = None,
                 give_up: bool = False) -> Semantics:
    """`auto`: a sky_spot trace is simulated with the Can't Be Late simulator's rules (SPEC §3.2),
    a tidy trace with spotlab's; explicit `billing` / `safety_net` override either; `give_up` lets the net
    stop a job not worth finishing on demand."""
    if semantics not in SEMANTICS:
        raise TraceError(f"unknown semantics {semantics!r}; use one of {', '.join(SEMANTICS)}")
    cbl = semantics == "cant-be-late" or (semantics == "auto" and kind == "sky_spot")
    base = Semantics.cant_be_late() if cbl else Semantics()
    return Semantics(billing=billing or base.billing, safety_net=safety_net or base.safety_net,
                     give_up=bool(give_up))


# Policies whose decisions in one window never depend on another window: simulating their windows in blocks
# gives the same numbers, and bounds the memory of the per-slot records (30,000 windows: a fifth less time than
# all at once, as Python's cost per numpy call is shared by 10,000 windows).
INDEPENDENT_WINDOWS = ("on_demand", "greedy", "uniform_progress", "prediction_free")
BLOCK = 10_000


def run_policy(policy: str, params: dict, episodes: Episodes, job: Job, semantics: Semantics,
               seed: int = 0, block: int | None = BLOCK, on_block: Callable[[int, int], None] | None = None,
               wrap: Callable[[Any], Any] | None = None, keep: str = "all") -> SimulationResult:
    """Simulate a registered policy; policies in `INDEPENDENT_WINDOWS` run `block` windows at a time.

    `on_block(i, n)` is told before each block; `wrap` may wrap each policy object (e.g. a progress bar).
    `keep` says what the result must still answer: "all" (`records()` too), "summary" (`summary()` and
    `metrics()`) or "metrics"; only the per-slot arrays these read are recorded (30,000 windows would otherwise
    fill ~1 GB with per-slot arrays, and writing them costs more than the simulation)."""
    if keep not in ("all", "summary", "metrics"):
        raise ValueError(f"keep must be 'all', 'summary' or 'metrics', got {keep!r}")
    if not isinstance(semantics, Semantics):
        raise TypeError(f"run_policy: semantics must be a Semantics (e.g. settings_for(...)), got {semantics!r}")
    settings = semantics.settings
    wrap = wrap or (lambda p: p)
    needed = None if keep == "all" else _arrays_used(job, settings, keep)
    if block is None or policy not in INDEPENDENT_WINDOWS or episodes.n <= block:
        if on_block:
            on_block(0, 1)
        return simulate(wrap(semantics.policy(policy, params)), episodes, job, settings, seed=seed, record=needed)
    cuts = list(range(0, episodes.n, block))
    parts: list[SimulationResult] = []
    for i, a in enumerate(cuts):
        if on_block:
            on_block(i, len(cuts))
        parts.append(simulate(wrap(semantics.policy(policy, params)), episode_rows(episodes, slice(a, a + block)),
                              job, settings, seed=seed, record=needed))
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


def episode_rows(ep: Episodes, rows: slice) -> Episodes:
    """The windows `rows` of `ep` (views, no copy): every per-window field is cut alike."""
    cut = {}
    for f in dataclasses.fields(ep):
        v = getattr(ep, f.name)
        if isinstance(v, np.ndarray) and v.ndim >= 1 and v.shape[0] == ep.n:
            cut[f.name] = v[rows]
        elif isinstance(v, tuple) and len(v) == ep.n:
            cut[f.name] = v[rows]
    return dataclasses.replace(ep, **cut)


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
