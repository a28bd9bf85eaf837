"""The command line: the known answers, the JSON contract and clean failures on bad input."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from spotlab.market.load import load_market


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


# --- issue 12: the polished command line -------------------------------------------------------------------

def test_no_abbreviations_and_one_line_argparse_errors(cbl_args):
    p = run(*cbl_args, "--policy", "greedy", "--deadline", 5, check=False)
    assert p.returncode == 2 and "unrecognized arguments: --deadline" in p.stderr
    assert len(p.stderr.strip().splitlines()) == 1 and "usage:" not in p.stderr
    p = run("simulate", "--policy", "greedy", check=False)
    assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1 and "required" in p.stderr


def test_every_option_has_help():
    from spotlab.cli.main import build_parser

    parser = build_parser()
    subs = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    for name, sub in subs.choices.items():
        for action in sub._actions:
            if action.option_strings and action.dest != "help":
                assert action.help, f"spotlab {name} {action.option_strings[0]} has no help text"


def test_policies_list_parameters_with_defaults_and_meaning():
    out = run("policies").stdout
    assert "theta=" in out and "w=" in out
    out = run("policies", "chc").stdout
    assert "w=" in out and "look-ahead" in out and "seed=0" in out
    for line in out.splitlines()[1:]:
        assert len(line.split(None, 1)) == 2, f"a parameter without its meaning: {line!r}"
    p = run("policies", "nope", check=False)
    assert p.returncode == 2 and "unknown policy 'nope'" in p.stderr


def test_json_in_input_units_typed_params_one_seed_and_timings(dataset):
    args = ["simulate", "--trace", dataset("markets/gcp_h100_probes.csv.gz"), "--zone", "us-central1-a",
            "--slot-hours", 1, "--work-hours", 24, "--deadline-hours", 30, "--gpus-min", 2, "--gpus-max", 4,
            "--throughput-beta", 0.5, "--restart-overhead-hours", 0.2, "--policy", "prediction_free",
            "--param", "theta=0.5", "--param", "hysteresis_h=none", "--json"]
    out = json.loads(run(*args).stdout)
    assert out["job"]["work_hours"] == 24.0 and out["job"]["throughput_beta"] == 0.5
    assert out["params"]["theta"] == 0.5 and out["params"]["hysteresis_h"] is None
    assert out["seed"] == 0 and "total_s" in out["timings"] and "elapsed_s" not in out
    quiet = [*args, "--no-timings"]
    a, b = run(*quiet).stdout, run(*quiet).stdout
    assert a == b and "timings" not in json.loads(a)


def test_seed_and_param_seed_are_one_seed(cbl_args):
    p = run(*cbl_args, "--policy", "greedy", "--seed", 1, "--param", "seed=2", check=False)
    assert p.returncode == 2 and "disagree" in p.stderr
    out = json.loads(run(*cbl_args, "--policy", "greedy", "--param", "seed=3", "--no-timings").stdout)
    assert out["seed"] == 3


@pytest.mark.parametrize("extra, message", [
    (["--spot-price", "1e308"], "at most 1e+09"),
    (["--zone", "us-west-2a"], "applies to tidy CSVs"),
    (["--gpus", 2, "--gpus-max", 4], "not both"),
    (["--throughput-alpha", 0, "--throughput-beta", -1], "must be > 0"),
    (["--per-run", "/tmp"], "is a folder"),
    (["--records", "/no/such/folder/r.csv"], "does not exist"),
])
def test_weak_inputs_are_one_line_errors(cbl_args, extra, message):
    args = list(cbl_args)
    if "--spot-price" in extra:
        i = args.index("--spot-price")
        del args[i:i + 2]
    p = run(*args, "--policy", "greedy", *extra, check=False)
    assert p.returncode == 2 and message in p.stderr, p.stderr
    assert len(p.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("content, message", [
    ("time,cloud,zone,gpu,requested,available,spot_price,on_demand_price\n"
     "2024-01-01T00:00:00Z,gcp,z,h100,8,4,1.0,3.0\n2024-01-01T01:00:00Z,gcp,z,h100,8,4,inf,3.0\n", "line 3"),
    ("[0, 1, 0, 1]\n", "a sky_spot trace is a JSON object"),
])
def test_weak_trace_files(tmp_path, content, message):
    p = tmp_path / "trace.csv"
    p.write_text(content)
    r = run("simulate", "--trace", p, "--policy", "greedy", "--work-hours", 1, "--deadline-hours", 2,
            "--restart-overhead-hours", 0, "--json", check=False)
    assert r.returncode == 2 and message in r.stderr and "Warning" not in r.stderr, r.stderr


def test_python_api_misuse_is_a_clear_type_error(dataset):
    from spotlab.errors import SpotlabError
    from spotlab.jobs.job import make_job
    from spotlab.policies.registry import make_policy
    from spotlab.simulation.engine import simulate
    pass

    market = load_market(dataset("markets/gcp_h100_probes.csv.gz"), zone="us-central1-a", slot_hours=1)
    job = make_job(work_hours=4, deadline_hours=8)
    for args, message in [(("greedy", market, job), "make_policy('greedy')"),
                          ((make_policy("greedy"), "trace.csv", job), "load_market"),
                          ((make_policy("greedy"), market, None), "job must be a Job")]:
        with pytest.raises(TypeError, match=__import__("re").escape(message)) as info:
            simulate(*args)
        assert isinstance(info.value, SpotlabError)


def test_help_starts_fast():
    import time

    t = time.perf_counter()
    run("--help")
    took = time.perf_counter() - t
    assert took < 3.0, f"spotlab --help took {took:.2f} s"  # loose: a loaded machine; the benchmark measures it
    code = "import sys, spotlab.cli.main; spotlab.cli.main.build_parser(); print(sorted(m for m in sys.modules if m in " \
           "('pandas', 'sklearn', 'numpy', 'scipy')))"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout.strip() == "[]"


def test_simulate_of_a_json_trace_does_not_import_pandas(cbl_args):
    """`spotlab simulate` on a sky_spot trace and a windows file needs numpy only: importing pandas alone takes
    longer than the whole start-up budget."""
    args = [str(a) for a in cbl_args] + ["--policy", "uniform_progress", "--no-timings"]
    code = ("import sys, contextlib, io, spotlab.cli.main\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            f"    spotlab.cli.main.main({args!r})\n"
            "print(sorted(m for m in sys.modules if m in ('pandas', 'sklearn', 'scipy')))")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "[]"


def test_simulate_shows_progress_on_request(cbl_args):
    p = run(*cbl_args, "--policy", "greedy", "--progress")
    assert "greedy: slots" in p.stderr and "/312" in p.stderr and json.loads(p.stdout)["runs"] == 300
    assert run(*cbl_args, "--policy", "greedy").stderr == ""  # not a terminal: no bar unless asked
