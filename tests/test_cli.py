"""The command line: the known answers, the JSON contract and clean failures on bad input."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest


def run(*args, check=True):
    p = subprocess.run([sys.executable, "-m", "spotlab", *map(str, args)], capture_output=True, text=True, timeout=600)
    if check:
        assert p.returncode == 0, p.stderr
    return p


@pytest.fixture
def cbl_args(cbl_trace, cbl_windows):
    return ["simulate", "--trace", cbl_trace, "--windows", cbl_windows, "--work-hours", 48, "--deadline-hours", 52,
            "--restart-overhead-hours", 0.1, "--on-demand-price", 3.06, "--spot-price", 0.9731, "--json"]


@pytest.mark.parametrize("policy, published", [("uniform_progress", 96.98), ("greedy", 117.87), ("on_demand", 147.39)])
def test_cant_be_late_known_answers(cbl_args, policy, published):
    out = json.loads(run(*cbl_args, "--policy", policy).stdout)
    for key in ("policy", "runs", "mean_cost", "mean_utility", "deadline_met_fraction"):
        assert key in out
    assert out["runs"] == 300 and out["policy"] == policy
    assert out["mean_cost"] == pytest.approx(published, rel=1e-3)
    assert out["deadline_met_fraction"] == 1.0


def test_help_and_listing():
    assert "simulate" in run("--help").stdout
    assert "--work-hours" in run("simulate", "--help").stdout
    assert "uniform_progress" in run("policies").stdout


def test_whole_trace_tidy_csv(dataset):
    out = json.loads(run("simulate", "--trace", dataset("markets/gcp_h100_probes.csv.gz"), "--zone", "us-central1-a",
                         "--policy", "greedy", "--work-hours", 40, "--deadline-hours", 30, "--gpus", 4,
                         "--restart-overhead-hours", 0.2, "--slot-hours", 1, "--json").stdout)
    assert out["runs"] == 1 and out["semantics"]["billing"] == "fractional" and out["mean_cost"] > 0


@pytest.mark.parametrize("extra, message", [
    (["--policy", "nope"], "unknown policy 'nope'"),
    (["--policy", "greedy", "--param", "x=1"], "no parameter 'x'"),
    (["--policy", "greedy", "--deadline-hours", 40], "impossible deadline"),
    (["--policy", "greedy", "--spot-price", -1], "must be >= 0"),
    (["--policy", "greedy", "--work-hours", "nan"], "must be finite"),
    (["--policy", "greedy", "--hard-deadline-hours", 50], "must not be before the soft deadline"),
])
def test_bad_arguments_fail_cleanly(cbl_args, extra, message):
    args = list(cbl_args)
    for flag in ("--deadline-hours", "--spot-price", "--work-hours"):
        if flag in extra and flag in args:
            i = args.index(flag)
            del args[i:i + 2]
    p = run(*args, *extra, check=False)
    assert p.returncode == 2
    assert "Traceback" not in p.stderr and message in p.stderr


@pytest.mark.parametrize("content, message", [
    ("", "empty file"),
    ("{not json", "not valid JSON"),
    ('{"metadata": {"gap_seconds": 600}, "data": [0, 3]}', "convention"),
    ("time,zone\n", "missing column"),
])
def test_bad_trace_files_fail_cleanly(tmp_path, content, message):
    p = tmp_path / "trace.json"
    p.write_text(content)
    r = run("simulate", "--trace", p, "--policy", "greedy", "--work-hours", 1, "--deadline-hours", 2,
            "--restart-overhead-hours", 0, "--spot-price", 1, "--on-demand-price", 3, "--json", check=False)
    assert r.returncode == 2 and "Traceback" not in r.stderr and message in r.stderr


def test_bad_windows_and_missing_files(tmp_path, cbl_trace):
    w = tmp_path / "w.csv"
    w.write_text("window,start_tick,end_tick\n0,100,99999\n")
    base = ["simulate", "--trace", cbl_trace, "--policy", "greedy", "--work-hours", 1, "--deadline-hours", 2,
            "--restart-overhead-hours", 0, "--spot-price", 1, "--on-demand-price", 3, "--json"]
    r = run(*base, "--windows", w, check=False)
    assert r.returncode == 2 and "beyond the trace" in r.stderr
    r = run(*base, "--windows", tmp_path / "absent.csv", check=False)
    assert r.returncode == 2 and "no such file" in r.stderr
    r = run(*[a if a != cbl_trace else tmp_path / "absent.json" for a in base], check=False)
    assert r.returncode == 2 and "no such file" in r.stderr and "Traceback" not in r.stderr
    i = base.index("--spot-price")
    r = run(*(base[:i] + base[i + 2:]), check=False)
    assert r.returncode == 2 and "no spot price" in r.stderr
