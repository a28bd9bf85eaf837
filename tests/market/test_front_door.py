"""One front door: the same job on the same trace gives the same numbers through `spotlab simulate ... --json` and
through the Python path the notebooks use (`load_market`, `cut_windows`, `make_job`, `run_policy`,
`semantics_for`), on every trace format, on traces written here (the project has not seen them), by windows
file and by jobs one after another."""

from __future__ import annotations

import gzip
import json

import numpy as np
import pandas as pd
import pytest

from spotlab.cli.main import main
from spotlab.errors import TraceError
from spotlab.jobs.job import make_job
from spotlab.market.load import load_market, trace_format
from spotlab.market.windows import HISTORY_HOURS, cut_windows
from spotlab.policies.run import run_policy
from spotlab.policies.semantics import semantics_for

RNG = np.random.default_rng(20261127)
HOURS = 24 * 10


def _spells(n: int, mean_up: float, mean_down: float, top: int = 1) -> np.ndarray:
    """Availability in spells of geometric length: up (1..top GPUs) and down (0)."""
    out, up = [], True
    while len(out) < n:
        length = int(RNG.geometric(1 / (mean_up if up else mean_down)))
        out += [int(RNG.integers(1, top + 1)) if up else 0] * length
        up = not up
    return np.array(out[:n])


def _sky_spot(tmp_path):
    ticks = HOURS * 6  # 10-min ticks
    data = (1 - _spells(ticks, 30, 12)).tolist()  # 1 = preempted
    prices = np.round(0.8 + 0.3 * RNG.random(ticks), 4).tolist()
    path = tmp_path / "trace.json"
    path.write_text(json.dumps({"metadata": {"gap_seconds": 600}, "data": data, "prices": prices}))
    windows = tmp_path / "windows.csv"
    starts = RNG.integers(0, ticks - 6 * 30, size=25)
    windows.write_text("window,start_tick,end_tick\n" + "".join(
        f"{i},{s},{s + 6 * 30}\n" for i, s in enumerate(sorted(starts))))
    return path, windows


def _tidy(tmp_path):
    times = pd.date_range("2025-03-01", periods=HOURS * 4, freq="15min", tz="UTC")
    rows = []
    for zone, top in (("z-east", 8), ("z-west", 4)):
        avail = _spells(len(times), 10, 6, top)
        price = np.round(1.0 + 0.5 * RNG.random(len(times)), 4)
        rows.append(pd.DataFrame({"time": times.strftime("%Y-%m-%dT%H:%M:%SZ"), "cloud": "c", "zone": zone,
                                  "gpu": "H100", "requested": top, "available": avail, "spot_price": price,
                                  "on_demand_price": 4.0}))
    path = tmp_path / "trace.csv.gz"
    path.write_bytes(gzip.compress(pd.concat(rows).to_csv(index=False).encode()))
    return path


def _marketplace(tmp_path):
    lines = []
    for k in range(HOURS * 2):  # a snapshot every 30 min
        p10 = round(1.5 + 0.4 * RNG.random(), 3)
        spot = bool(RNG.random() < 0.7)
        count = int(RNG.integers(0, 4))
        configs = {"1x": {"count": 2, "min_per_gpu": 2.4, "avg_per_gpu": 2.6, "min_total": 2.4, "avg_total": 2.6,
                          "best_deal": {"provider": "alpha", "location": "x", "socket": "SXM5", "spot": False}}}
        if count:  # a size is listed only when an offer of it is
            configs["8x"] = {"count": count, "min_per_gpu": p10, "avg_per_gpu": 2.5, "min_total": 8 * p10,
                             "avg_total": 20.0,
                             "best_deal": {"provider": "alpha", "location": "x", "socket": "SXM5", "spot": spot}}
        lines.append({
            "timestamp": (pd.Timestamp("2025-11-01T00:00:00Z") + pd.Timedelta(minutes=30 * k)).isoformat(),
            "gpu_type": "H100_80GB", "socket_type": "SXM5",
            "price_stats": {"min": p10 - 0.2, "p10": p10, "p25": p10 + 0.2, "median": 2.5, "p75": 2.7, "p90": 3.0,
                            "max": 3.5, "mean": 2.5},
            "availability": {"total": count + 2, "available": 0, "low": 0, "medium": 0, "high": 0},
            "by_provider": {"alpha": {"count": count + 2, "min": p10, "avg": 2.5}},
            "by_config": configs,
        })
    path = tmp_path / "H100_80GB_SXM5.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    return path


def _cli(capsys, args: list[str]) -> dict:
    assert main(["simulate", *args, "--json", "--no-timings", "--no-progress"]) == 0, capsys.readouterr().err
    return json.loads(capsys.readouterr().out)


def _same(cli: dict, result) -> None:
    ours = result.metrics()
    for key, value in ours.items():
        if isinstance(value, float) and np.isnan(value):
            assert cli[key] is None or np.isnan(cli[key]), key
        else:
            assert cli[key] == value, (key, cli[key], value)


@pytest.mark.parametrize("policy", ["uniform_progress", "greedy", "slack_reserve"])
def test_sky_spot_windows_file(tmp_path, capsys, policy):
    trace, windows = _sky_spot(tmp_path)
    assert trace_format(trace) == "sky_spot"
    cli = _cli(capsys, ["--trace", str(trace), "--windows", str(windows), "--policy", policy, "--work-hours", "20",
                        "--deadline-hours", "28", "--restart-overhead-hours", "0.1", "--on-demand-price", "3.06"])
    market = load_market(trace, od_price=3.06)
    episodes = cut_windows(market, windows=windows)
    job = make_job(20, 28, overhead_hours=0.1)
    _same(cli, run_policy(policy, {}, episodes, job, semantics_for(market)))
    assert cli["runs"] == 25 and cli["format"] == "sky_spot"


@pytest.mark.parametrize("policy, params", [("prediction_free", {}), ("uniform_progress", {}),
                                            ("chc", {"predictor": "persistence", "w": "6"})])
def test_tidy_csv_jobs_one_after_another(tmp_path, capsys, policy, params):
    trace = _tidy(tmp_path)
    assert trace_format(trace) == "tidy"
    job_args = ["--work-hours", "30", "--deadline-hours", "10", "--hard-deadline-hours", "12", "--gpus-min", "2",
                "--gpus-max", "8", "--throughput-beta", "-0.3", "--restart-overhead-hours", "0.25", "--value", "150",
                "--miss-penalty", "40"]
    cli = _cli(capsys, ["--trace", str(trace), "--zone", "z-east", "--slot-hours", "1", "--stride-hours", "12",
                        "--policy", policy, *job_args, *[f"--param={k}={v}" for k, v in params.items()]])
    market = load_market(trace, zone="z-east", slot_hours=1)
    job = make_job(30, 10, hard_deadline_hours=12, gpus_min=2, gpus_max=8, beta=-0.3, overhead_hours=0.25,
                   value=150, miss_penalty=40)
    episodes = cut_windows(market, stride_hours=12, horizon_hours=job.hard_deadline_h)
    _same(cli, run_policy(policy, dict(params), episodes, job, semantics_for(market)))
    assert cli["skip_hours"] == HISTORY_HOURS and cli["runs"] == episodes.n == (HOURS - 168 - 12) // 12 + 1


def test_marketplace_with_a_skip(tmp_path, capsys):
    trace = _marketplace(tmp_path)
    assert trace_format(trace) == "marketplace"
    cli = _cli(capsys, ["--trace", str(trace), "--slot-hours", "1", "--stride-hours", "6", "--skip-hours", "24",
                        "--policy", "prediction_free", "--gpus", "8", "--work-hours", "40", "--deadline-hours", "8",
                        "--restart-overhead-hours", "0.1"])
    market = load_market(trace, slot_hours=1)
    job = make_job(40, 8, gpus=8, overhead_hours=0.1)
    episodes = cut_windows(market, stride_hours=6, horizon_hours=job.hard_deadline_h, skip_hours=24)
    _same(cli, run_policy("prediction_free", {}, episodes, job, semantics_for(market)))


def test_the_skip_is_explicit_and_a_short_trace_says_so(tmp_path):
    market = load_market(_tidy(tmp_path), zone="z-west", slot_hours=1)
    first = cut_windows(market, stride_hours=12, horizon_hours=12)
    assert first.starts[0] == 168  # a week of history before the first job, by default
    assert cut_windows(market, stride_hours=12, horizon_hours=12, skip_hours=0).starts[0] == 0
    short = market.window(0, 100)
    with pytest.raises(TraceError, match="too short for 168 h before the first job.*--skip-hours"):
        cut_windows(short, stride_hours=12, horizon_hours=12)
