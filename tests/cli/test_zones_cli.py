"""The command line across zones: `spotlab simulate` with one trace per zone or the zones of one tidy CSV (the same
numbers as the Python path), the move options, `spotlab scenario`, and bad input in one line."""

from __future__ import annotations

import json

import numpy as np
import pytest

from spotlab.cli.main import main
from spotlab.jobs.job import make_job
from spotlab.market.egress import read_egress_table
from spotlab.market.windows import cut_windows
from spotlab.market.zones import load_zones
from spotlab.policies.run import run_policy
from spotlab.policies.semantics import semantics_for

HEADER = "time,cloud,zone,gpu,requested,available,spot_price,on_demand_price\n"
ZONES = ("us-east-1a", "us-east-1b", "eu-west-1a")


def tidy(path, zones=ZONES, hours=120, seed=0, skip_price_of=None, hours_of=None):
    rng = np.random.default_rng(seed)
    lines = [HEADER]
    for i, z in enumerate(zones):
        avail = np.clip(np.cumsum(rng.integers(-1, 2, (hours_of or {}).get(z, hours))) + 2, 0, 4)
        for t, a in enumerate(avail):
            price = "" if z == skip_price_of else f"{0.8 + 0.1 * i + 0.05 * np.sin(t / 5):.4f}"
            lines.append(f"2025-01-01T{t % 24:02d}:00Z,aws,{z},V100,4,{a},{price},3.06\n".replace(
                f"2025-01-01T{t % 24:02d}", (np.datetime64("2025-01-01T00:00") + np.timedelta64(t, "h")).astype(str)))
    path.write_text("".join(lines))
    return path


def cli(argv, capsys):
    try:
        code = main([str(a) for a in argv])
    except SystemExit as exc:
        code = exc.code
    out, err = capsys.readouterr()
    return code, out, err


JOB = ["--work-hours", "10", "--deadline-hours", "16", "--restart-overhead-hours", "0.2", "--stride-hours", "16",
       "--skip-hours", "0"]


@pytest.mark.parametrize("policy", ["up_failover", "round_robin", "optimal"])
def test_the_zones_of_one_csv_and_the_python_path_agree(tmp_path, capsys, policy):
    path = tidy(tmp_path / "zones.csv")
    code, out, err = cli(["simulate", "--trace", path, "--zones", "all", "--policy", policy, *JOB,
                          "--checkpoint-gb", "40", "--json", "--no-timings"], capsys)
    assert code == 0, err
    got = json.loads(out)
    assert got["zone"] == list(ZONES) and got["semantics"]["regions"] == ["us-east-1", "us-east-1", "eu-west-1"]
    market = load_zones(path, zones="all")
    job = make_job(10, 16, overhead_hours=0.2, checkpoint_gb=40)
    eps = cut_windows(market, stride_hours=16, horizon_hours=16, skip_hours=0,
                      history_hours=0 if policy != "optimal" else 168)
    res = run_policy(policy, {}, eps, job, semantics_for(market))
    assert got["runs"] == eps.n and got["mean_cost"] == pytest.approx(float(res.cost.mean()), rel=1e-12)


def test_one_trace_per_zone_with_a_users_egress_table(tmp_path, capsys):
    path = tidy(tmp_path / "zones.csv")
    files = []
    for z in ZONES:  # the same zones, one file each
        lines = [ln for ln in path.read_text().splitlines(keepends=True)[1:] if f",{z}," in ln]
        files.append(tmp_path / f"{z}.csv")
        files[-1].write_text(HEADER + "".join(lines))
    table = tmp_path / "egress.csv"
    table.write_text("from_region,to_region,usd_per_gb\n*,*,0.09\n")
    argv = ["simulate", *sum((["--trace", f] for f in files), []), "--policy", "up_failover", *JOB, "--json",
            "--no-timings", "--checkpoint-gb", "100"]
    code, dear, err = cli([*argv, "--egress-table", table], capsys)
    assert code == 0, err
    code, cheap, err = cli(argv, capsys)
    assert code == 0, err
    dear, cheap = json.loads(dear), json.loads(cheap)
    assert dear["semantics"]["egress"] == str(table) and dear["mean_cost"] >= cheap["mean_cost"]
    assert read_egress_table(table).usd_per_gb("us-east-1", "eu-west-1") == 0.09


def test_zone_rules_beyond_the_rule_set(tmp_path, capsys):
    path = tidy(tmp_path / "zones.csv")
    base = ["simulate", "--trace", path, "--zones", "all", "--policy", "up_failover", *JOB, "--checkpoint-gb", "500",
            "--json", "--no-timings"]
    runs = {}
    for rule in ("transfer_time=false", "transfer_time=true"):
        code, out, err = cli([*base, "--zone-rule", rule], capsys)
        assert code == 0, err
        runs[rule] = json.loads(out)
    assert runs["transfer_time=true"]["semantics"]["transfer_time"] is True
    code, out, err = cli([*base[:5], "--policy", "optimal", *base[7:], "--zone-rule", "transfer_time=true"], capsys)
    assert code == 2 and "transfer time" in err and len(err.strip().splitlines()) == 1, err


@pytest.mark.parametrize("argv,message", [
    (["--zones", "all", "--zone-rule", "warp=9"], "unknown zone rule 'warp'"),
    (["--zones", "all", "--zone-rule", "visibility=maybe"], "visibility must be one of"),
    (["--zones", "all", "--zone-rule", "probe_seconds=soon"], "probe_seconds='soon' is not a valid float"),
    (["--zone-rule", "visibility=free"], "--zone-rule price moves between zones"),
    (["--zones", "all", "--zone", "us-east-1a"], "--zone picks the one zone"),
    (["--checkpoint-gb", "5"], "price moves between zones"),
    (["--zones", "us-east-1a,nowhere-1z"], "nowhere-1z"),
    (["--zones", "all", "--checkpoint-gb", "-1"], "--checkpoint-gb"),
])
def test_bad_zone_options_in_one_line(tmp_path, capsys, argv, message):
    path = tidy(tmp_path / "zones.csv")
    code, out, err = cli(["simulate", "--trace", path, "--policy", "greedy", *JOB, *argv], capsys)
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1, err


def test_zones_not_aligned_without_prices_or_without_an_egress_price(tmp_path, capsys):
    a = tidy(tmp_path / "a.csv", zones=("us-east-1a",))
    short = tidy(tmp_path / "b.csv", zones=("us-east-1b",), hours_of={"us-east-1b": 100})
    code, _, err = cli(["simulate", "--trace", a, "--trace", short, "--policy", "greedy", *JOB], capsys)
    assert code == 2 and "zones not aligned" in err and len(err.strip().splitlines()) == 1, err
    unpriced = tidy(tmp_path / "c.csv", zones=("us-east-1c",), skip_price_of="us-east-1c")
    code, _, err = cli(["simulate", "--trace", a, "--trace", unpriced, "--policy", "greedy", *JOB], capsys)
    assert code == 2 and "us-east-1c" in err and "price" in err and len(err.strip().splitlines()) == 1, err
    table = tmp_path / "egress.csv"
    table.write_text("from_region,to_region,usd_per_gb\nus-east-1,us-east-1,0\n")
    path = tidy(tmp_path / "zones.csv")
    code, _, err = cli(["simulate", "--trace", path, "--zones", "all", "--policy", "greedy", *JOB,
                        "--egress-table", table, "--checkpoint-gb", "1"], capsys)
    assert code == 2 and "no price for moving data from region us-east-1 to eu-west-1" in err, err


def test_the_scenario_command(capsys, dataset):
    dataset("sky_spot_traces/skynomad-gcp-h100/us-east4-b_h100_16__full.json")
    code, out, _ = cli(["scenario", "--list"], capsys)
    assert code == 0 and "skynomad/1.5" in out.split()
    code, out, err = cli(["scenario", "skynomad/1.5/us-east4-b+us-west1-a", "--policy", "up_failover",
                          "--policy", "optimal", "--json"], capsys)
    assert code == 0, err
    rows = {r["policy"]: r for r in json.loads(out)["policies"]}
    assert rows["optimal"]["mean_cost"] <= rows["up_failover"]["mean_cost"] and rows["optimal"]["windows"] == 6
    code, out, err = cli(["scenario", "skynomad/1.5/us-east4-b", "--policy", "uniform_progress"], capsys)
    assert code == 0 and "633.30" in out, out  # SkyNomad's one-zone UP there, beside ours
    code, out, err = cli(["scenario", "skynomad/1.5/us-east4-b+us-west1-a", "--policy", "up_probe", "--param",
                          "up_probe.samples=3", "--json"], capsys)
    assert code == 0 and json.loads(out)["policies"][0]["published"] is None  # not the peers' settings
    for argv, message in ((["scenario"], "name a scenario"), (["scenario", "leaderboard/nine"], "unknown"),
                          (["scenario", "skynomad/1.5", "--param", "x.y=1"], "x is not among --policy"),
                          (["scenario", "skynomad/1.5", "--policy", "nope"], "nope")):
        code, _, err = cli(argv, capsys)
        assert code == 2 and message in err and len(err.strip().splitlines()) == 1, err
