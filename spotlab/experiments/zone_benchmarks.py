"""The two public benchmarks across zones, cut as they cut them, by name (SPEC §9): the multi-region Can't Be Late
leaderboard (nine AWS V100 zones, six scenarios of 2-9 zones, windows of 1,107 ticks of 195 s) and SkyNomad's GCP
H100 zones (windows of 311 ticks of 600 s tiling the aligned traces, a job of deadline / ratio).

`scenario(name)` gives the windows, the job and the rule set of a named scenario: `leaderboard/<scenario>`
(e.g. `leaderboard/2_zones_same_region`), `skynomad/<ratio>` for the "shared six" zones (e.g. `skynomad/1.5`), or
`skynomad/<ratio>/<zone>+<zone>+...` for other zones of the same traces; `leaderboard/<scenario>/8-15` takes
other windows of the leaderboard's zones. `run` simulates registered policies on scenarios and returns one row
per run. The data folders' READMEs give both benchmarks' protocols and known answers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Iterable, Sequence

import pandas as pd

from ..data.locate import data_root, dataset_path
from ..errors import DataNotFoundError, ExperimentError
from ..jobs.job import Job, make_job
from ..market.episodes import Episodes
from ..market.windows import cut_windows
from ..market.zoned_episodes import ZonedEpisodes
from ..market.zones import load_zones
from ..policies.semantics import Semantics
from .published import (
    MULTI_LEADERBOARD_PEERS,
    MULTI_LEADERBOARD_SCENARIOS,
    SKYNOMAD_ONE_ZONE_UP_15,
    SKYNOMAD_SHARED_SIX,
)

LEADERBOARD_DIR = "sky_spot_traces/adrs-cant-be-late-multi/"
LEADERBOARD_OD_PRICE = 3.06  # USD/h of a p3.2xlarge on demand in every zone (the evaluator's device constant)
LEADERBOARD_SCENARIOS: dict[str, tuple[tuple[str, ...], range]] = {  # zones (the job starts in the first), windows
    "2_zones_same_region": (("us-east-1a", "us-east-1c"), range(8)),
    "2_regions_east_west": (("us-east-2a", "us-west-2a"), range(8)),
    "3_regions_diverse": (("us-east-1a", "us-east-2b", "us-west-2c"), range(6)),
    "3_zones_same_region": (("us-east-1a", "us-east-1c", "us-east-1d"), range(6)),
    "5_regions_high_diversity": (("us-east-1a", "us-east-1f", "us-west-2a", "us-west-2b", "us-east-2b"), range(4)),
    "all_9_regions": (("us-east-2a", "us-west-2c", "us-east-1d", "us-east-2b", "us-west-2a", "us-east-1f",
                       "us-east-1a", "us-west-2b", "us-east-1c"), range(2)),
}
LEADERBOARD_JOB = dict(work_hours=48.0, deadline_hours=52.0, overhead_hours=0.2)

SKYNOMAD_DIR = "sky_spot_traces/skynomad-gcp-h100/"
SHARED_SIX = ("us-central1-a", "us-east4-b", "us-west1-a", "europe-west3-c", "asia-southeast1-b", "asia-south2-b")
SKYNOMAD_TICKS = 311  # a window and its deadline, in ticks of 600 s
SKYNOMAD_WINDOWS = 6
SKYNOMAD_CHECKPOINT_GB = 50.0
SKYNOMAD_OVERHEAD_H = 0.2


@dataclass(frozen=True)
class Scenario:
    """A named benchmark case: its windows across zones, its job and its rule set."""

    name: str
    episodes: ZonedEpisodes
    job: Job
    semantics: Semantics


def scenario(name: str, root: str | Path | None = None) -> Scenario:
    """The scenario `name` (see the module doc); `root` is the data folder (default: `dataset_path`'s)."""
    parts = str(name).split("/")
    if parts[0] == "leaderboard" and len(parts) in (2, 3):
        return leaderboard_scenario(parts[1], None if len(parts) == 2 else _window_list(parts[2], name), root=root)
    if parts[0] == "skynomad" and len(parts) in (2, 3):
        try:
            ratio = float(parts[1])
        except ValueError:
            raise ExperimentError(f"scenario {name!r}: the ratio {parts[1]!r} is not a number") from None
        zones = tuple(parts[2].split("+")) if len(parts) == 3 else SHARED_SIX
        return skynomad_scenario(zones, ratio, root=root)
    raise ExperimentError(f"unknown scenario {name!r}; use leaderboard/<one of {', '.join(LEADERBOARD_SCENARIOS)}>"
                          "[/<windows, e.g. 8-15 or 3,5>], skynomad/<ratio> (the shared six zones) or "
                          "skynomad/<ratio>/<zone>+<zone>...")


def _window_list(text: str, name: str) -> list[int]:
    """`8-15`, `3,5,9` or `4` as window indices."""
    out: list[int] = []
    try:
        for part in text.split(","):
            a, _, b = part.partition("-")
            out.extend(range(int(a), int(b) + 1) if b else [int(a)])
    except ValueError:
        raise ExperimentError(f"scenario {name!r}: windows {text!r} are not like 8-15 or 3,5,9") from None
    if not out or min(out) < 0:
        raise ExperimentError(f"scenario {name!r}: windows {text!r} name no window (indices start at 0)")
    return out


def _zone_file(folder: str, zone: str, suffix: str, root: str | Path | None) -> Path:
    """A zone's trace in a benchmark's folder; a zone with no file there is named with the zones that have one."""
    try:
        return dataset_path(f"{folder}{zone}{suffix}", root, download=False)
    except DataNotFoundError:
        base = data_root(root)
        here = sorted({p.name.split("_", 1)[0] for p in (base / folder).glob(f"*{suffix}")}) if base else []
        raise ExperimentError(f"no trace of zone {zone!r} ({zone}{suffix}) in {folder}"
                              + (f"; it has {', '.join(here)}" if here else "; that folder is not in the data")
                              ) from None


def scenario_names() -> list[str]:
    return [f"leaderboard/{k}" for k in LEADERBOARD_SCENARIOS] + ["skynomad/1.5", "skynomad/1.2"]


def leaderboard_scenario(key: str, windows: Iterable[int] | None = None, root: str | Path | None = None) -> Scenario:
    """A scenario of the multi-region leaderboard: each window is one file per zone (`<zone>__<i>.json`), all
    aligned; the job starts in the first zone; the leaderboard's rules."""
    if key not in LEADERBOARD_SCENARIOS:
        raise ExperimentError(f"unknown leaderboard scenario {key!r}; use one of {', '.join(LEADERBOARD_SCENARIOS)}")
    zones, default = LEADERBOARD_SCENARIOS[key]
    idx = list(default if windows is None else windows)
    per_window = [load_zones([_zone_file(LEADERBOARD_DIR, z, f"_v100_1__{i}.json", root) for z in zones],
                             od_price=LEADERBOARD_OD_PRICE) for i in idx]
    parts = tuple(Episodes.from_markets([m.zones[k] for m in per_window]) for k in range(len(zones)))
    names = tuple(f"{key}[{i}]" for i in idx)
    parts = tuple(replace(p, names=names) for p in parts)
    episodes = ZonedEpisodes(parts, per_window[0].names, per_window[0].regions)
    label = f"leaderboard/{key}" if windows is None else f"leaderboard/{key}/{','.join(map(str, idx))}"
    return Scenario(label, episodes, make_job(**LEADERBOARD_JOB), Semantics.leaderboard())


def skynomad_windows(n_ticks: int, windows: int = SKYNOMAD_WINDOWS) -> list[tuple[int, int]]:
    """SkyNomad's benchmark windows: `SKYNOMAD_TICKS` ticks each, back to back, window w starting at
    ceil(float(w * 311 * 600 / 3600) * 3600 / 600), which is 1556, not 1555, for w = 5 (float rounding)."""
    out = []
    for w in range(windows):
        start = math.ceil(float(w * SKYNOMAD_TICKS * 600 / 3600) * 3600 / 600)
        if start + SKYNOMAD_TICKS > n_ticks:
            break
        out.append((start, start + SKYNOMAD_TICKS))
    return out


def skynomad_scenario(zones: Sequence[str], ratio: float, windows: Iterable[int] | None = None,
                      checkpoint_gb: float = SKYNOMAD_CHECKPOINT_GB, root: str | Path | None = None) -> Scenario:
    """SkyNomad's H100 benchmark on `zones` (the job starts in the first): windows of 311 ticks, the deadline at the
    window's end, work = deadline / `ratio` on one 8-GPU machine priced per machine, 0.2-h restarts, a 50-GB
    checkpoint; SkyNomad's rules."""
    if not (isinstance(ratio, (int, float)) and math.isfinite(ratio) and ratio >= 1):
        raise ExperimentError(f"the deadline ratio must be a number >= 1 (deadline / work), got {ratio!r}")
    market = load_zones([_zone_file(SKYNOMAD_DIR, z, "_h100_16__full.json", root) for z in zones],
                        price_per="instance")
    cuts = skynomad_windows(len(market))
    chosen = list(range(len(cuts))) if windows is None else list(windows)
    bad = [w for w in chosen if not 0 <= w < len(cuts)]
    if bad:
        raise ExperimentError(f"SkyNomad windows are 0..{len(cuts) - 1}, got {bad}")
    table = pd.DataFrame({"start_tick": [cuts[w][0] for w in chosen], "end_tick": [cuts[w][1] for w in chosen]})
    episodes = cut_windows(market, windows=table, history_hours=0)
    deadline_h = SKYNOMAD_TICKS * 600 / 3600
    job = make_job(deadline_h / ratio, deadline_h, overhead_hours=SKYNOMAD_OVERHEAD_H, checkpoint_gb=checkpoint_gb)
    return Scenario(f"skynomad/{ratio:g}/" + "+".join(zones), episodes, job, Semantics.skynomad())


def default_policies(name: str) -> tuple[str, ...]:
    """The policies a scenario is shown with: its benchmark's baselines and the optimum."""
    if str(name).startswith("leaderboard/"):
        return ("round_robin", "up_failover", "up_probe", "optimal")
    return ("up_failover", "up_probe", "up_probe_cost", "optimal")


def run(policies: Sequence[str], scenarios: Sequence[str], params: dict | None = None,
        root: str | Path | None = None, rules: str | None = None, progress: bool | None = False) -> pd.DataFrame:
    """Every policy on every scenario under the scenario's rules (or the rule set `rules`, e.g. "spotlab"): one
    row per (scenario, policy, window)."""
    from ..policies.run import run_policy
    from ..policies.semantics import semantics_for
    from ..progress import tqdm_bar

    rows = []
    bar = tqdm_bar(total=len(scenarios) * len(policies), desc="scenarios", unit="run", enabled=progress)
    for name in scenarios:
        sc = scenario(name, root)
        semantics = sc.semantics if rules is None else semantics_for(None, rules)
        for policy in policies:
            bar.set_postfix_str(f"{sc.name[:30]} {policy}")
            res = run_policy(policy, dict((params or {}).get(policy, {})), sc.episodes, sc.job, semantics)
            bar.update()
            met = res.met_hard_deadline
            for w in range(sc.episodes.n):
                rows.append({"scenario": sc.name, "policy": policy, "window": sc.episodes.window_names[w],
                             "cost": float(res.cost[w]), "completion_h": float(res.completion_h[w]),
                             "deadline_met": bool(met[w])})
    bar.close()
    return pd.DataFrame(rows)


def published(scenario_name: str, policy: str) -> float | None:
    """The peers' mean cost for `policy` on a scenario as its benchmark runs it (all its windows, its rules), or
    None where none was published."""
    parts = scenario_name.split("/")
    if parts[0] == "leaderboard" and len(parts) == 2 and policy == "round_robin":
        per, _ = MULTI_LEADERBOARD_PEERS["baseline"]
        return per[MULTI_LEADERBOARD_SCENARIOS.index(parts[1])]
    if parts[0] == "skynomad" and len(parts) == 3 and tuple(parts[2].split("+")) == SHARED_SIX:
        ratio = float(parts[1])
        if policy in SKYNOMAD_SHARED_SIX and ratio in (1.5, 1.2):
            return SKYNOMAD_SHARED_SIX[policy][(1.5, 1.2).index(ratio)]
    if parts[0] == "skynomad" and len(parts) == 3 and policy == "uniform_progress" and float(parts[1]) == 1.5:
        return SKYNOMAD_ONE_ZONE_UP_15.get(parts[2])
    return None


def compare(rows: pd.DataFrame) -> pd.DataFrame:
    """Per scenario and policy: windows, mean cost, deadlines met, and the peers' published number beside it
    (under the scenario's own rules only: `rules` moves spotlab's numbers, not theirs)."""
    out = rows.groupby(["scenario", "policy"], sort=False).agg(
        windows=("cost", "size"), mean_cost=("cost", "mean"), deadlines_met=("deadline_met", "mean")).reset_index()
    out["published"] = [published(s, p) for s, p in zip(out.scenario, out.policy)]
    return out
