"""The ADRS leaderboard's Can't Be Late benchmark as an outside benchmark for spotlab's policies.

The public ADRS leaderboard scores single-instance scheduling policies on 1,080 runs of the Can't Be Late
simulator (README of ``sky_spot_traces/adrs-cant-be-late-traces``): 6 environments x 30 random-start windows
x deadlines 52 / 70 h x restart overheads 0.02 / 0.05 / 0.1 h, a 48 h job, $3.06/h on demand and $0.9731/h
spot everywhere; score = clip((146.88 - mean cost) / (146.88 - 46.7088)) x 100. The leaderboard does not
check deadlines; here every run's deadline is counted. Our simulator in its Can't Be Late mode
(``Semantics.cant_be_late()``: full billing and its deadline guard) reproduces that simulator run for run (Greedy and Uniform Progress equal the
peer's costs to the cent), so the peers' published means can be set beside ours.

A policy tuned to these 180 windows proves little, so the same runner also takes any other windows of the
same traces (:func:`random_start_windows`, :func:`stride_windows`).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Collection, Mapping, Sequence

import numpy as np
import pandas as pd

from ..data.catalogue import ADRS_ENVS, ADRS_LEADERBOARD_WINDOWS
from ..data.locate import dataset_path
from ..errors import PolicyError, RunsError, TraceError
from ..jobs.job import make_job
from ..market.episodes import Episodes, concat
from ..market.load import load_market
from ..market.market import Market
from ..market.windows import cut_windows
from ..market.windows_file import load_windows_csv
from ..policies.semantics import Semantics
from ..simulation.engine import simulate
from .cells import append_rows
from .outputs import declare
from .published import (
    LEADERBOARD_DEADLINES,
    LEADERBOARD_OD_PRICE,
    LEADERBOARD_OVERHEADS,
    LEADERBOARD_PEERS,
    LEADERBOARD_SCORE_HIGH,
    LEADERBOARD_SCORE_LOW,
    LEADERBOARD_SPOT_PRICE,
    LEADERBOARD_WORK_HOURS,
)

ADRS_DIR = "sky_spot_traces/adrs-cant-be-late-traces/"
WINDOWS_RELPATH = ADRS_DIR + "leaderboard_windows.csv"
RANDOM_START_RELPATH = ADRS_DIR + "random_start__us-west-2a_v100_1__windows.csv"
ENVS = ADRS_ENVS
WINDOWS = ADRS_LEADERBOARD_WINDOWS
DEADLINES = LEADERBOARD_DEADLINES
OVERHEADS = LEADERBOARD_OVERHEADS
WORK_HOURS = LEADERBOARD_WORK_HOURS
OD_PRICE = LEADERBOARD_OD_PRICE
SPOT_PRICE = LEADERBOARD_SPOT_PRICE
SCORE_HIGH = LEADERBOARD_SCORE_HIGH  # the leaderboard's all-on-demand anchor (score 0)
SCORE_LOW = LEADERBOARD_SCORE_LOW  # its all-spot anchor (score 100)
HISTORY_HOURS = 168.0  # the past an online policy may read before its window (as `market.windows.cut_windows`)
RUNS = len(ENVS) * len(WINDOWS) * len(DEADLINES) * len(OVERHEADS)

# the peers' mean cost over the 1,080 runs and deadline-met fraction (`published.LEADERBOARD_PEERS`)
PEERS = LEADERBOARD_PEERS
# what notebook 01c writes
OUTPUTS = declare("01c", leaderboard_runs="csv", other_windows_runs="csv", leaderboard=("csv", "png", "json"),
                  slow_policies_subset="csv", per_env=("csv", "png"), other_windows="csv",
                  a1_vs_optimum=("csv", "png"))

# spotlab policies that re-implement a peer entry (their means must agree)
SAME_AS_PEER = {"on_demand": "all on demand", "greedy": "Greedy", "uniform_progress": "Uniform Progress"}

POLICIES = ("on_demand", "greedy", "uniform_progress", "prediction_free", "slack_reserve", "chc", "select",
            "optimal")
# variants run under their own labels (`run(names=...)`): A1 on persistence forecasts, an online entry, and A1 with
# perfect forecasts over its window, the issue-11 bar on cost-only jobs far longer than the window (w = 12 ticks
# of 10 min against 52-70 h): near the optimum, not above uniform progress. Its tail is the past's, as a real
# forecaster's is (`tail="past"`): the oracle's own tail would see the whole job
VARIANTS = {"chc_persistence": ("chc", {"predictor": "persistence"}),
            "chc_oracle": ("chc", {"predictor": "oracle", "tail": "past"})}
A1_PERFECT = "chc_oracle"
HINDSIGHT = ("optimal", A1_PERFECT)  # they see the future: floors and references, never online entries
ROW_COLUMNS = ["env", "window", "start_tick", "deadline", "overhead", "policy", "cost", "completion_h",
               "met_deadline", "fallback_rate", "seconds"]


def score(mean_cost: float) -> float:
    """The leaderboard's score of a mean cost: 0 at all on demand, 100 at all spot, clipped to [0, 100]."""
    return float(np.clip((SCORE_HIGH - mean_cost) / (SCORE_HIGH - SCORE_LOW), 0.0, 1.0) * 100.0)


# --------------------------------------------------------------------------------------------- windows


def leaderboard_windows(root: str | Path | None = None) -> pd.DataFrame:
    """The 180 evaluation windows (env, window, start_tick, end_tick), read from the data catalogue (the
    shared data folder, or rebuilt from the downloaded tarball), checked to be the leaderboard's 30 x 6."""
    path = dataset_path(WINDOWS_RELPATH, root)
    df = pd.read_csv(path)
    missing = [c for c in ("env", "window", "start_tick", "end_tick") if c not in df.columns]
    if missing:
        raise TraceError(f"{path}: missing column(s) {', '.join(missing)}")
    got = {(e, int(w)) for e, w in zip(df["env"], df["window"])}
    want = {(e, w) for e in ENVS for w in WINDOWS}
    if got != want:
        raise TraceError(f"{path}: the windows are not the leaderboard's {len(ENVS)} envs x {len(WINDOWS)} windows "
                         f"({len(want - got)} missing, {len(got - want)} unexpected)")
    return df[["env", "window", "start_tick", "end_tick"]].reset_index(drop=True)


def random_start_windows(root: str | Path | None = None) -> pd.DataFrame:
    """The 300 random-start windows of us-west-2a_v100_1 (the Can't Be Late cross-check's), as a check on
    windows the leaderboard does not use."""
    w = load_windows_csv(dataset_path(RANDOM_START_RELPATH, root))
    return w.assign(env="us-west-2a_v100_1")[["env", "window", "start_tick", "end_tick"]]


def stride_windows(envs: Sequence[str] = ENVS, first: int = 3, stride: int = 29, length: int = 554,
                   n_ticks: int = 1781, exclude: pd.DataFrame | None = None) -> pd.DataFrame:
    """Windows starting every `stride` ticks from `first` (length = the leaderboard's 554 ticks), minus those
    starting where a window of `exclude` starts: other start ticks of the same traces."""
    rows = []
    for env in envs:
        taken = set() if exclude is None else set(exclude.loc[exclude["env"] == env, "start_tick"].astype(int))
        for i, start in enumerate(range(first, n_ticks - length + 1, stride)):
            if start not in taken:
                rows.append({"env": env, "window": i, "start_tick": start, "end_tick": start + length})
    return pd.DataFrame(rows, columns=["env", "window", "start_tick", "end_tick"])


def trace_path(env: str, root: str | Path | None = None) -> Path:
    if env not in ENVS:
        raise TraceError(f"unknown environment {env!r}; the leaderboard's are {', '.join(ENVS)}")
    return dataset_path(f"{ADRS_DIR}ping_based__{env}.json", root)


def env_market(env: str, root: str | Path | None = None) -> Market:
    """One env's ping_based trace at the leaderboard's prices."""
    return load_market(trace_path(env, root), convention="preempted", spot_price=SPOT_PRICE, od_price=OD_PRICE)


def windows_episodes(market: Market, windows: pd.DataFrame) -> Episodes:
    """`windows` (start_tick, end_tick) of an env's market, with the week before each window as history (what
    an online policy may learn from)."""
    return cut_windows(market, windows=windows, history_hours=HISTORY_HOURS)


def episodes_for(env: str, windows: pd.DataFrame, root: str | Path | None = None) -> Episodes:
    """The windows of one env on its ping_based trace at the leaderboard's prices (`env_market`,
    `windows_episodes`)."""
    return windows_episodes(env_market(env, root), windows)


# ---------------------------------------------------------------------------------------------- runner


def _done(out_csv: Path | None) -> pd.DataFrame:
    if out_csv is None or not out_csv.is_file() or out_csv.stat().st_size == 0:
        return pd.DataFrame(columns=ROW_COLUMNS)
    return pd.read_csv(out_csv)


def run(
    windows: pd.DataFrame,
    policies: Sequence[str] = POLICIES,
    deadlines: Sequence[float] = DEADLINES,
    overheads: Sequence[float] = OVERHEADS,
    params: Mapping[str, Mapping] | None = None,
    limit: Mapping[str, int] | None = None,
    out_csv: str | Path | None = None,
    root: str | Path | None = None,
    progress: bool = True,
    lockstep: bool = True,
    names: Mapping[str, str] | None = None,
    n_jobs: int = 1,
    from_members: Collection[str] = (),
) -> pd.DataFrame:
    """Per-run rows of every policy on `windows` (env, window, start_tick, end_tick) x deadlines x overheads,
    in the Can't Be Late semantics.

    `policies` are labels of the rows: a registered policy's name, or a label that `names` maps to one (two
    variants of a policy side by side, e.g. ``names={"chc_oracle": "chc"}``). `params` gives a label's parameters
    (default: the policy's defaults); `limit[label] = k` runs it only on the first k windows of each env (for
    slow policies). With `out_csv` every (env, deadline, overhead, label) cell's rows are appended as soon as
    they are computed and runs already there are not run again, so an interrupted call resumes. `n_jobs` cells
    run at once in worker processes (rows are still appended by this process, as each cell finishes). Returns
    the rows of the asked runs.

    `lockstep`: the windows of every env are simulated together, one simulation per (deadline, overhead,
    policy) instead of one per env (the same numbers; `benchmarks/bench_leaderboard.py` times both).

    `from_members`: labels of `policies` that run policy selection (`select`) whose rows are made from the rows
    of its pool members (`select_from_members`: the rows `select` would give, without simulating the members
    again), once every other label's cells are done. Each member is matched by its policy and parameters to a
    label of `policies` or of `out_csv`'s rows, which must hold the member's rows on the same runs (else a
    `RunsError`). Their `seconds` are the choice's (the warm-up replay and the selector), not the members'.
    """
    from ..policies.registry import policy_class
    from ..processes import worker_count
    from ..progress import tqdm_bar

    params = dict(params or {})
    limit = dict(limit or {})
    names = dict(names or {})
    for label in policies:
        policy_class(names.get(label, label))  # an unknown name fails here, before anything runs
    derived = set(from_members)
    for label in derived:
        if label not in policies or names.get(label, label) != "select":
            raise PolicyError(f"leaderboard: from_members names {label!r}, which is not a label of policy "
                              "selection (select) among the policies run")
    out_path = None if out_csv is None else Path(out_csv)
    done = _done(out_path)
    have = set(zip(done["env"], done["window"].astype(int), done["start_tick"].astype(int),
                   np.round(done["deadline"].astype(float), 6), np.round(done["overhead"].astype(float), 6),
                   done["policy"]))
    envs = list(dict.fromkeys(windows["env"]))
    groups = [(float(dl), float(ov), pol) for dl in deadlines for ov in overheads for pol in policies]
    key = ["env", "window", "start_tick", "deadline", "overhead", "policy"]
    markets: dict[str, Market] = {}  # each env's trace, loaded once
    cut: dict[tuple, Episodes] = {}  # and each set of its windows, cut once for every (deadline, overhead, policy)
    asked, tasks = [], []
    for dl, ov, pol in groups:
        todo_parts = []
        for env in envs:
            w_env = windows[windows["env"] == env].reset_index(drop=True)
            if pol in limit:
                w_env = w_env.iloc[: int(limit[pol])]
            asked.append(w_env.assign(deadline=dl, overhead=ov, policy=pol)[key])
            todo = np.array([(env, int(w), int(s), round(dl, 6), round(ov, 6), pol) not in have
                             for w, s in zip(w_env["window"], w_env["start_tick"])], dtype=bool)
            if todo.any():
                if env not in markets:
                    markets[env] = env_market(env, root)
                sel = w_env[todo].reset_index(drop=True)
                at = (env, tuple(sel["start_tick"]), tuple(sel["end_tick"]))
                if at not in cut:
                    cut[at] = windows_episodes(markets[env], sel)
                todo_parts.append((env, sel, cut[at]))
        # every env's windows in one lockstep simulation, except for policy selection, whose rounds are one
        # trace's jobs in time order
        one_by_one = names.get(pol, pol) == "select" or not lockstep
        batches = [[p] for p in todo_parts] if one_by_one else ([todo_parts] if todo_parts else [])
        tasks += [(dl, ov, pol, batch) for batch in batches]

    def finish(task: tuple, result: tuple) -> int:
        """Append a cell's rows; the number of cells done (1)."""
        nonlocal done
        dl, ov, pol, batch = task
        cost, completion, met, fallback, secs = result
        sel = pd.concat([b[1].assign(env=b[0]) for b in batch], ignore_index=True)
        new = pd.DataFrame({
            "env": sel["env"], "window": sel["window"].astype(int), "start_tick": sel["start_tick"].astype(int),
            "deadline": dl, "overhead": ov, "policy": pol, "cost": cost, "completion_h": completion,
            "met_deadline": met, "fallback_rate": fallback, "seconds": secs / len(sel),
        })[ROW_COLUMNS]
        if out_path is not None:
            append_rows(out_path, new)
        done = pd.concat([done, new], ignore_index=True) if len(done) else new
        return 1

    def args(task: tuple) -> tuple:
        dl, ov, pol, batch = task
        return names.get(pol, pol), params.get(pol), dl, ov, concat([ep for _, _, ep in batch])

    def members_args(group: list) -> tuple:  # every env's cell of one (deadline, overhead, label), once the
        dl, ov, pol, _ = group[0]  # members' cells are done
        cells = []
        for _, _, _, batch in group:
            (env, sel, episodes), = batch
            found = [_member_runs(done, lab, env, sel, dl, ov) for lab in member_labels[pol]]
            cost, completion, met = (np.stack([f[i] for f in found], axis=1) for i in range(3))
            cells.append((episodes, cost, completion, met, np.array([f[3] for f in found])))
        return params.get(pol), dl, ov, cells, n_jobs

    def finish_group(group: list, results: list) -> int:
        return sum(finish(task, result) for task, result in zip(group, results))

    def execute(todo: list, cell, cell_args, on_done, bar) -> None:
        jobs = min(worker_count(int(n_jobs)), len(todo))
        if jobs <= 1:
            for task in todo:
                bar.update(on_done(task, cell(*cell_args(task))))
            return
        from joblib import Parallel, delayed

        runner = Parallel(n_jobs=jobs, return_as="generator_unordered")
        for i, result in runner(delayed(_indexed)(cell, i, *cell_args(t)) for i, t in enumerate(todo)):
            bar.update(on_done(todo[i], result))

    simulated = [t for t in tasks if t[2] not in derived]
    chosen = [t for t in tasks if t[2] in derived]
    member_labels = {}
    if chosen:  # every member matched to a label before anything runs
        candidates = [p for p in policies if p not in derived] + [p for p in dict.fromkeys(done["policy"])
                                                                   if p not in derived and p not in policies]
        member_labels = {pol: _member_labels(pol, params.get(pol), candidates, names, params)
                         for pol in {t[2] for t in chosen}}
    with tqdm_bar(total=len(tasks), desc="leaderboard cells", unit="cell", enabled=bool(progress)) as bar:
        execute(simulated, _simulate_cell, args, finish, bar)
        groups: dict[tuple, list] = {}  # select's cells of every env at one (deadline, overhead, label) together
        for task in chosen:
            groups.setdefault(task[:3], []).append(task)
        execute(list(groups.values()), _select_cells, members_args, finish_group, bar)
    if not asked or not len(done):
        return pd.DataFrame(columns=ROW_COLUMNS)
    keys = pd.concat(asked, ignore_index=True).astype({"window": int, "start_tick": int})
    done = done.astype({"window": int, "start_tick": int, "deadline": float, "overhead": float})
    for col in ("deadline", "overhead"):  # match on rounded values (floats read back from the CSV)
        keys[col] = keys[col].astype(float).round(6)
        done[col] = done[col].round(6)
    done = done.drop_duplicates(key, keep="last")
    out = keys.merge(done, on=key, how="left")
    out["met_deadline"] = out["met_deadline"].astype(str).str.lower().isin(("true", "1", "1.0"))
    return out[ROW_COLUMNS]


def _simulate_cell(policy: str, params: Mapping | None, deadline: float, overhead: float, episodes: Episodes
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray, float, float]:
    """One (deadline, overhead, policy) cell's windows in the Can't Be Late semantics: costs, completion times,
    deadlines met, the policy's fallback rate and the seconds it took."""
    semantics = Semantics.cant_be_late()
    job = make_job(WORK_HOURS, deadline, overhead_hours=overhead)
    t0 = time.perf_counter()
    res = simulate(semantics.policy(policy, params), episodes, job, semantics.settings, record=())
    secs = time.perf_counter() - t0
    fallback = res.policy_report.get("fallback_rate", np.nan) if res.policy_report else np.nan
    return res.cost, res.completion_h, res.met_deadline, float(fallback), secs


def _indexed(cell, i: int, *args) -> tuple[int, tuple]:
    return i, cell(*args)


def _member_labels(label: str, select_params: Mapping | None, candidates: Sequence[str],
                   names: Mapping[str, str], params: Mapping[str, Mapping]) -> list[str]:
    """For each member of the pool of the select label `label`, the first of `candidates` (labels) that runs the
    same policy with the same parameters (defaults filled in)."""
    from ..policies.registry import REGISTRY, make_policy, resolved_params
    from ..policies.select import member_label

    select = make_policy("select", select_params, safety_net="off")
    runs = {}
    for cand in candidates:
        name = names.get(cand, cand)
        if name in REGISTRY and name != "select":
            runs.setdefault((name, _frozen(resolved_params(name, params.get(cand)))), cand)
    out = []
    for name, p in select.members():
        found = runs.get((name, _frozen(resolved_params(name, p))))
        if found is None:
            raise RunsError(f"leaderboard: {label}'s member {member_label(name, p)} matches no label run "
                            f"({', '.join(candidates) or 'none'}); run it under a label of its own first")
        out.append(found)
    return out


def _frozen(params: Mapping) -> tuple:
    return tuple(sorted((k, repr(v)) for k, v in params.items()))


def _member_runs(done: pd.DataFrame, label: str, env: str, sel: pd.DataFrame, deadline: float, overhead: float
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """A member's costs, completion times and deadlines met on the windows `sel` of `env` (its rows under
    `label`), and its fallback rate: 0 where its rows report none, NaN where one of them reports some (its rate
    over these windows alone is then not in the rows: a cell may have run every env's windows in one simulation)."""
    d = done[(done["policy"] == label) & (done["env"] == env)
             & (done["deadline"].astype(float).round(6) == round(deadline, 6))
             & (done["overhead"].astype(float).round(6) == round(overhead, 6))]
    d = d.astype({"window": int, "start_tick": int}).drop_duplicates(["window", "start_tick"], keep="last")
    m = sel[["window", "start_tick"]].astype(int).merge(d, on=["window", "start_tick"], how="left")
    missing = int(m["cost"].isna().sum())
    if missing:
        raise RunsError(f"leaderboard: {label} has no rows for {missing} of the {len(sel)} windows of {env} at "
                        f"deadline {deadline:g} h, overhead {overhead:g} h, which policy selection is made from; "
                        f"run {label} there first")
    rate = m["fallback_rate"].astype(float).fillna(0.0)
    met = m["met_deadline"].astype(str).str.lower().isin(("true", "1", "1.0")).to_numpy()
    return (m["cost"].to_numpy(float), m["completion_h"].to_numpy(float), met,
            float("nan") if (rate > 0).any() else 0.0)


def _select_cells(params: Mapping | None, deadline: float, overhead: float,
                  cells: Sequence[tuple[Episodes, np.ndarray, np.ndarray, np.ndarray, np.ndarray]], n_jobs: int
                  ) -> list[tuple[np.ndarray, np.ndarray, np.ndarray, float, float]]:
    """The (deadline, overhead) cells of policy selection of several envs, each made from its members' costs,
    completion times and deadlines met there (rounds, members) and their fallback rates (NaN: the member is
    replayed on these windows for its rate): per cell what `_simulate_cell` gives for select. The members'
    warm-up replays of every env run as one simulation (`warmup_utilities`); each cell's seconds are its own
    choice and an even share of that replay."""
    from ..policies.registry import make_policy
    from ..policies.select import replay_members
    from ..policies.select_from_members import select_from_members, warmup_utilities

    semantics = Semantics.cant_be_late()
    job = make_job(WORK_HOURS, deadline, overhead_hours=overhead)
    t0 = time.perf_counter()
    select = make_policy("select", params, safety_net="off")
    members = select.members()
    warm = warmup_utilities(select, [c[0] for c in cells], job, semantics.settings, 0, semantics.safety_net,
                            semantics.give_up, n_jobs)
    shared = (time.perf_counter() - t0) / len(cells)
    out = []
    for (episodes, cost, completion_h, met, fallback), warm_utility in zip(cells, warm):
        t1 = time.perf_counter()
        fallback = np.array([replay_members([members[k]], [episodes], job, semantics.settings, 0,
                                            semantics.safety_net, semantics.give_up, n_jobs)[0].fallback_rate
                             if np.isnan(f) else f for k, f in enumerate(fallback)])
        sel = select_from_members(select, episodes, job, semantics.settings, cost, completion_h, fallback,
                                  safety_net=semantics.safety_net, give_up=semantics.give_up, n_jobs=n_jobs,
                                  warm=warm_utility)
        picked = (np.arange(episodes.n), sel.chosen)  # A3's run in a round is its chosen member's
        out.append((cost[picked], completion_h[picked], met[picked], sel.fallback_rate,
                    shared + time.perf_counter() - t1))
    return out


def summarise(rows: pd.DataFrame, full_runs: int = RUNS) -> pd.DataFrame:
    """Per policy: runs, mean cost, deadline met (fraction and misses), score, mean fallback rate; `complete`
    when the policy ran all `full_runs` runs (only then is it comparable with the peers' means)."""
    out = []
    for pol, g in rows.groupby("policy", sort=False):
        mean = float(g["cost"].mean())
        out.append({
            "policy": pol, "source": "spotlab", "runs": int(len(g)), "complete": bool(len(g) == full_runs),
            "mean_cost": mean, "deadline_met_fraction": float(g["met_deadline"].mean()),
            "deadline_misses": int((~g["met_deadline"].astype(bool)).sum()), "score": score(mean),
            "fallback_rate": float(g["fallback_rate"].mean()) if g["fallback_rate"].notna().any() else np.nan,
            "peer_mean_cost": PEERS[SAME_AS_PEER[pol]][0] if pol in SAME_AS_PEER else np.nan,
        })
    return pd.DataFrame(out)


def with_peers(summary: pd.DataFrame) -> pd.DataFrame:
    """The summary with the peers' published rows added (source = "published"), sorted by mean cost."""
    peers = pd.DataFrame([
        {"policy": name, "source": "published", "runs": RUNS, "complete": True, "mean_cost": cost,
         "deadline_met_fraction": met if met is not None else np.nan, "deadline_misses": np.nan,
         "score": score(cost), "fallback_rate": np.nan, "peer_mean_cost": np.nan}
        for name, (cost, met) in PEERS.items()
    ])
    both = pd.concat([summary, peers], ignore_index=True)
    return both.sort_values("mean_cost", kind="stable").reset_index(drop=True)


def same_as_peer(rows: pd.DataFrame) -> pd.DataFrame:
    """Our re-implementations of the peers' baselines vs their published means (a check of the semantics)."""
    s = summarise(rows)
    s = s[s["policy"].isin(list(SAME_AS_PEER)) & s["complete"]]
    s = s.assign(peer=s["policy"].map(SAME_AS_PEER), diff=s["mean_cost"] - s["peer_mean_cost"])
    return s[["policy", "peer", "mean_cost", "peer_mean_cost", "diff"]].reset_index(drop=True)


def headline(rows: pd.DataFrame) -> dict:
    """Numbers for the claims report: each complete policy's mean cost, deadline-met fraction and score."""
    s = summarise(rows)
    out: dict = {"runs": RUNS}
    for r in s.itertuples():
        out[r.policy] = {"runs": r.runs, "complete": r.complete, "mean_cost": r.mean_cost,
                         "deadline_met_fraction": r.deadline_met_fraction, "score": r.score}
    return json.loads(json.dumps(out, default=float))
