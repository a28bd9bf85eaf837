"""The claims report reads the notebooks' files and never fails: tiny fake outputs, one per verdict."""

from __future__ import annotations

import importlib
import json
import re
import tokenize
from pathlib import Path

import pandas as pd
import pytest

from spotlab.experiments import outputs
from spotlab.cli.main import main
from spotlab.notebooks import claims, reproduce


def _fits(path, r2=0.9999):
    pd.DataFrame({"model": ["glm3-6b", "llama2-7b"], "gpu": ["a100", "h100"], "alpha": [4441.0, 10270.0],
                  "beta": [269.0, 578.0], "r2": [r2, 0.99], "alpha_norm": [0.955, 0.958],
                  "beta_norm": [0.058, 0.054]}).to_csv(path / "00_fits.csv", index=False)


def _key_numbers(path, accurate=(True, True), inaccurate=(True, False)):
    pd.DataFrame({"market": ["h100", "volatile"], "jobs": [29, 54], "cost A1 σ=0": [125.7, 98.0],
                  "cost A1 σ=0.5": [147.4, 109.7], "cost A2": [134.6, 116.7],
                  "A1 σ=0 − A2 ($)": [9.0, 18.7], "A1 σ=0.5 − A2 ($)": [-20.5, 1.5],
                  "accurate A1 cheaper than A2": list(accurate),
                  "inaccurate A1 worse than A2": list(inaccurate)}).to_csv(path / "03_key_numbers.csv", index=False)


def _improvement(path, gains=(0.10, 0.05, -0.02)):
    markets = ["calm", "volatile", "h100"][:len(gains)]
    rows = [{"market": m, "method": "A3_select", "best_baseline": "uniform_progress", "best_baseline_utility": 100.0,
             "method_utility": 100.0 * (1 + g), "jobs": 3, "mean_improvement": g, "best_improvement": g + 0.05,
             "share_jobs_better": 0.5, "note": ""} for m, g in zip(markets, gains)]
    rows.append({"market": "all", "method": "A3_select", "best_baseline": "", "jobs": 9,
                 "mean_improvement": max(gains), "best_improvement": max(gains) + 0.05, "share_jobs_better": 0.5,
                 "note": "largest over markets"})
    pd.DataFrame(rows).to_csv(path / "07_improvement.csv", index=False)
    table = [{"market": m, "method": meth, "mean_utility": u, "share_of_optimum": u / 120.0}
             for m in markets for meth, u in (("optimal", 120.0), ("uniform_progress", 100.0), ("A3_select", 105.0))]
    pd.DataFrame(table).to_csv(path / "07_comparison_table.csv", index=False)


def _crosscheck(path, opt_rel=-0.013, greedy_rel=0.0001, runs=300, comparable=True):
    rows = [{"deadline": d, "policy": p, "our_mean_cost": 100.0, "published_mean_cost": 100.0, "rel_diff": rel,
             "runs": runs, "comparable": comparable, "within_tolerance": comparable and abs(rel) <= 0.01}
            for d in (52, 70) for p, rel in (("greedy", greedy_rel), ("uniform_progress", 0.0), ("optimal", opt_rel))]
    pd.DataFrame(rows).to_csv(path / "01b_crosscheck.csv", index=False)


def _selection(path, rounds=270, slope=0.31, regret=50.0):
    summary = [{"algorithm": a, "rounds": rounds, "regret": r, "regret_slope": s, "slope_start": 10,
                "bound_hedge": 5000.0} for a, s, r in (("adahedge", slope, regret), ("hedge", 0.74, 50.0),
                                                       ("exp3", 0.8, 50.0))]
    (path / "06_selection_summary.json").write_text(json.dumps({"params": {}, "summary": summary}))


def test_missing_files_are_not_run(tmp_path):
    got = claims.evaluate(tmp_path)
    assert [c.id for c in got] == ["1", "2", "2m", "3", "4", "5", "6", "7", "7m", "8", "8b", "8c", "Z1", "Z2", "Z3", "C1",
                                   "C2", "R1", "R2", "R3"]
    assert {c.verdict for c in got} == {"not run"}


def test_rl_claims_compare_against_fcfs_and_report_the_best_heuristic(tmp_path):
    from spotlab.experiments.rl_scheduling import OUTPUTS as RL

    rows = [{"metric": "utilisation", "against": "fcfs", "ours_up_to": 0.25, "low": 0.2, "high": 0.3,
             "preset": "helios", "scheduler": "fifo", "published_up_to": 0.2, "holds": True},
            {"metric": "utilisation", "against": "best", "ours_up_to": -0.01, "low": -0.02, "high": 0.0,
             "preset": "helios", "scheduler": "easy", "published_up_to": 0.2, "holds": False},
            {"metric": "wait_h", "against": "fcfs", "ours_up_to": -0.5, "low": -0.6, "high": -0.4,
             "preset": "philly", "scheduler": "fifo", "published_up_to": -0.81, "holds": False}]
    pd.DataFrame(rows).to_csv(tmp_path / RL.seed_claims.csv, index=False)
    got = {c.id: c for c in claims.evaluate(tmp_path) if c.id.startswith("R")}
    assert got["R1"].verdict == "holds" and "+25.0%" in got["R1"].ours and "easy" in got["R1"].ours
    assert got["R2"].verdict == "deviates" and "-50.0%" in got["R2"].ours
    assert got["R3"].verdict == "cannot compare"  # no jct rows in the file


def test_throughput_holds_and_deviates(tmp_path):
    _fits(tmp_path)
    c = claims.throughput_linear(tmp_path)
    assert c.verdict == "holds" and "R²=0.99990" in c.ours and "analytical" in c.detail
    _fits(tmp_path, r2=0.8)
    assert claims.throughput_linear(tmp_path).verdict == "deviates"


def test_malformed_file_cannot_compare(tmp_path):
    (tmp_path / "00_fits.csv").write_text("model,gpu\nx,y\n")
    c = claims.throughput_linear(tmp_path)
    assert c.verdict == "cannot compare" and "r2" in c.detail


def test_motivation_verdicts(tmp_path):
    _key_numbers(tmp_path)
    c = claims.motivation(tmp_path)
    assert c.verdict == "holds" and "h100" in c.ours and "-20.5 $" in c.ours
    _key_numbers(tmp_path, accurate=(True, False))
    assert claims.motivation(tmp_path).verdict == "deviates"
    _key_numbers(tmp_path, inaccurate=(False, False))
    assert claims.motivation(tmp_path).verdict == "deviates"


def test_predictability_counts_cases_beating_persistence(tmp_path):
    best = pd.DataFrame({"dataset": ["a", "a", "b", "b"], "zone": ["z1", "z2", "z1", "z2"], "model":
                         ["ets", "persistence", "persistence", "persistence"],
                         "mae_h1": [0.1, 0.2, 0.3, 0.0], "mae_h12": [0.2, 0.3, 0.4, 0.0],
                         "skill_h1": [0.10, 0.0, 0.0, 0.0], "skill_h12": [0.2, 0.0, 0.0, 0.0]})
    best.to_csv(tmp_path / "02_best_models.csv", index=False)
    c = claims.predictability(tmp_path)
    assert c.ours.startswith("1/3 cases") and c.verdict == "holds"  # the constant zone is left out
    best.assign(skill_h1=0.01, skill_h12=0.02).to_csv(tmp_path / "02_best_models.csv", index=False)
    assert claims.predictability(tmp_path).verdict == "deviates"


def test_sensitivity(tmp_path):
    t = pd.DataFrame({"market": ["m"] * 4, "method": ["A1 w=6 v=1", "A1 w=6 v=6", "A2", "A3 select"],
                      "0.0": [140.0, 135.0, 127.0, 140.0], "0.5": [129.0, 98.0, 127.0, 129.5]})
    t.to_csv(tmp_path / "04_utility_table.csv", index=False)
    assert claims.error_sensitivity(tmp_path).verdict == "holds"
    t.assign(**{"0.5": [129.0, 98.0, 127.0, 110.0]}).to_csv(tmp_path / "04_utility_table.csv", index=False)
    assert claims.error_sensitivity(tmp_path).verdict == "deviates"


def test_regret_needs_rounds(tmp_path):
    _selection(tmp_path)
    assert claims.regret(tmp_path).verdict == "holds"
    _selection(tmp_path, slope=0.9)
    assert claims.regret(tmp_path).verdict == "deviates"
    _selection(tmp_path, rounds=12)
    c = claims.regret(tmp_path)
    assert c.verdict == "cannot compare" and "12 rounds" in c.detail
    _selection(tmp_path, slope=float("nan"), regret=0.0)  # never behind the best member: nothing to fit
    c = claims.regret(tmp_path)
    assert c.verdict == "holds" and "regret of 0.0 $ over 270 rounds" in c.detail and "slope of n/a" not in c.detail


def test_main_comparison_reports_headroom(tmp_path):
    _improvement(tmp_path)
    c = claims.main_comparison(tmp_path)
    assert c.verdict == "holds" and "2/3 markets" in c.ours and "+20.0%" in c.detail
    _improvement(tmp_path, gains=(0.01, -0.05, -0.02))
    assert claims.main_comparison(tmp_path).verdict == "deviates"
    _improvement(tmp_path, gains=(-1e-15, 0.05, 0.04))  # a float-noise tie is neither a win nor a loss
    c = claims.main_comparison(tmp_path)
    assert c.verdict == "holds" and "tied on calm" in c.ours


def test_cant_be_late(tmp_path):
    _crosscheck(tmp_path)
    c = claims.cant_be_late(tmp_path)
    assert c.verdict == "holds" and "Omniscient" in c.detail  # an optimum below the published one is fine
    _crosscheck(tmp_path, greedy_rel=0.03)
    assert claims.cant_be_late(tmp_path).verdict == "deviates"
    _crosscheck(tmp_path, opt_rel=0.02)
    assert claims.cant_be_late(tmp_path).verdict == "deviates"
    _crosscheck(tmp_path, runs=10, comparable=False)
    assert claims.cant_be_late(tmp_path).verdict == "cannot compare"


def test_write_report(tmp_path):
    _fits(tmp_path)
    _key_numbers(tmp_path)
    _improvement(tmp_path, gains=(0.01, -0.05, -0.02))
    (tmp_path / "00_throughput_vs_gpus.png").write_bytes(b"\x89PNG")
    log = {"quick": True, "seconds": 12.3, "notebooks": [{"notebook": "00_x", "status": "ran", "seconds": 12.0}]}
    path = claims.write_report(tmp_path, quick=True, log=log)
    text = path.read_text()
    assert path == tmp_path / "README.md"
    assert "Quick mode" in text and "12 s" in text
    assert "| claim | paper | ours | verdict | figure |" in text
    assert "[00_throughput_vs_gpus.png](00_throughput_vs_gpus.png)" in text
    assert "![" in text and "**deviates**" in text and "**not run**" in text
    rows = [ln for ln in text.splitlines() if ln.startswith("| ") and "**" in ln]
    assert len(rows) == len(claims.CLAIMS) == 20 and all(ln.count(" | ") == 4 for ln in rows)


def test_write_report_reads_log_and_full_mode(tmp_path):
    (tmp_path / "reproduce_log.json").write_text(json.dumps({"quick": False, "seconds": 3600, "notebooks": []}))
    text = claims.write_report(tmp_path, quick=False).read_text()
    assert "Full mode" in text and "3600 s" in text
    (tmp_path / "reproduce_log.json").write_text("{not json")
    assert "wall time is unknown" in claims.write_report(tmp_path, quick=False).read_text()


def test_report_has_a_timing_table(tmp_path):
    """Each notebook's wall time, CPU time, where it ran and whether this call ran it; older logs without `where`
    ran here, and without `cpu_seconds` leave the CPU time (and its total) unknown."""
    log = {"quick": True, "seconds": 9, "scheduler": "tcp://127.0.0.1:8786", "notebooks": [
        {"notebook": "01_b", "status": "ran", "seconds": 4.0, "execution_seconds": 4.0, "cpu_seconds": 7.25,
         "where": "tcp://10.0.0.2:4000"},
        {"notebook": "00_a", "status": "cached", "seconds": 0.0, "execution_seconds": 2.5, "cpu_seconds": 2.0,
         "where": "local"},
        {"notebook": "02_c", "status": "earlier call", "seconds": 1.0}]}
    (tmp_path / "reproduce_log.json").write_text(json.dumps(log))
    text = claims.write_report(tmp_path, quick=True).read_text()
    table = text[text.index("## How long each notebook took"):].splitlines()
    assert "Dask cluster at `tcp://127.0.0.1:8786`" in table[2]
    rows = [ln for ln in table if ln.startswith("| ") and not ln.startswith("| notebook")]
    assert rows == ["| 00_a | 2.5 | 2.0 | local | already ran (same source and parameters) |",
                    "| 01_b | 4.0 | 7.2 | tcp://10.0.0.2:4000 | ran in this call |",
                    "| 02_c | 1.0 |  | local | ran in an earlier call |",
                    "| all | 7.5 |  | | 3 notebooks |"]
    log["notebooks"].pop()
    (tmp_path / "reproduce_log.json").write_text(json.dumps(log))
    text = claims.write_report(tmp_path, quick=True).read_text()
    assert "| all | 6.5 | 9.2 | | 2 notebooks |" in text.splitlines()
    (tmp_path / "reproduce_log.json").write_text("[1, 2]")
    assert "How long" not in claims.write_report(tmp_path, quick=True).read_text()


def test_reproduce_writes_the_report(tmp_path, monkeypatch):
    nbs = tmp_path / "nbs"
    nbs.mkdir()
    (nbs / "00_fake.py").write_text("# fake\n")
    out = tmp_path / "out"

    def fake_run(src, build, out_dir, quick, extra=None, force=False, **kwargs):
        _fits(out_dir)
        return {"notebook": src.stem, "status": "cached", "seconds": 0.0}

    monkeypatch.setattr(reproduce, "run_notebook", fake_run)
    assert main(["reproduce", "--notebooks", str(nbs), "--out", str(out), "--build", str(tmp_path / "b"),
                 "--quick"]) == 0
    text = (out / "README.md").read_text()
    assert "Quick mode" in text and "1 cached" in text and "**holds**" in text


@pytest.mark.parametrize("fn", claims.CLAIMS)
def test_every_claim_survives_garbage(tmp_path, fn):
    for name in ("00_fits.csv", "02_best_models.csv", "03_key_numbers.csv", "04_utility_table.csv",
                 "05_best_cells.csv", "05_utility_heatmap.csv", "07_improvement.csv", "01b_crosscheck.csv",
                 "08_key_numbers.csv", "09_jct_by_source.csv", "01c_leaderboard.csv", "10_seed_claims.csv",
                 "11_benchmarks.csv", "11_one_zone.csv"):
        (tmp_path / name).write_text("a,b\n1,2\n")
    (tmp_path / "06_selection_summary.json").write_text("[1, 2")
    assert fn(tmp_path).verdict == "cannot compare"


def test_cotune_claims(tmp_path):
    key = {"data": "generated", "n_train_full": 3973, "validity_error_full": 0.01, "throughput_error_full": 0.05,
           "size_near_600": 600, "throughput_error_at_600": 0.10}
    pd.DataFrame([key]).to_csv(tmp_path / "08_key_numbers.csv", index=False)
    c = claims.cotune_prediction(tmp_path)
    assert c.verdict == "holds" and "generated" in c.detail and "5.0%" in c.ours
    pd.DataFrame([{**key, "throughput_error_full": 0.2}]).to_csv(tmp_path / "08_key_numbers.csv", index=False)
    assert claims.cotune_prediction(tmp_path).verdict == "deviates"

    def jct(fifo, sia):
        rows = [{"seed": sd, "policy": p, "source": s, "mean_jct_h": 1.0, "jct_change_vs_user": v}
                for sd in (0, 1) for p, ch in (("fifo", fifo), ("sia", sia))
                for s, v in (("user", 0.0), ("predicted", ch), ("oracle", ch))]
        pd.DataFrame(rows).to_csv(tmp_path / "09_jct_by_source.csv", index=False)
        return claims.cotune_jct(tmp_path)

    assert jct(-0.5, -0.4).verdict == "holds"
    c = jct(-0.1, -0.4)
    assert c.verdict == "deviates" and "fifo: predicted -10.0%" in c.ours and "2 seed(s)" in c.detail
    pd.DataFrame([{"policy": "fifo"}]).to_csv(tmp_path / "09_jct_by_source.csv", index=False)
    assert claims.cotune_jct(tmp_path).verdict == "cannot compare"


# ------------------------------------------------------------------------- file names and published numbers

FILE_NAME = re.compile(r"\b\d\d[a-z]?_[a-z0-9_]+\.(csv|json|png)\b")
ROOT = Path(__file__).resolve().parents[2]


def _strings(path: Path) -> list[str]:
    """The string literals of a module or notebook's code (comments and markdown cells are not code)."""
    with open(path, encoding="utf-8") as f:
        return [t.string for t in tokenize.generate_tokens(f.readline) if t.type == tokenize.STRING]


def test_claims_read_only_declared_outputs():
    declared = {nb: set(o.files) for nb, o in outputs.by_notebook().items()}
    every = set().union(*declared.values())
    assert not [s for s in _strings(Path(claims.__file__)) if FILE_NAME.search(s)], "a file name typed in claims.py"
    specs = [v for v in vars(claims).values() if isinstance(v, claims._Spec)]
    assert len(specs) == len(claims.CLAIMS)
    for spec in specs:
        assert set(spec.needs) <= every, spec
        assert spec.figure in every and spec.figure.endswith(".png"), spec
    assert len(every) == sum(map(len, declared.values())), "two notebooks declare the same file"


@pytest.mark.parametrize("notebook", sorted((ROOT / "notebooks").glob("*.py")), ids=lambda p: p.stem)
def test_every_declared_output_is_written_by_its_notebook(notebook):
    """The notebook names its files through the declaration (`OUT`) only, uses only declared names, and
    writes every declared one (or its experiment function does, e.g. the resumable jobs CSV)."""
    nb = notebook.name.split("_")[0]
    module, attr = outputs.DECLARED_IN[nb]
    text = notebook.read_text()
    assert f"from {module} import {attr} as OUT\n" in text
    assert not [s for s in _strings(notebook) if FILE_NAME.search(s)], f"a file name typed in {notebook.name}"
    used = set(re.findall(r"\bOUT\.([a-z0-9_]+)", text))
    declared = {o.name for o in getattr(importlib.import_module(module), attr)}
    assert used <= declared
    source = Path(importlib.import_module(module).__file__).read_text()
    library = set(re.findall(rf"\b{attr}\.([a-z0-9_]+)", source))
    assert declared <= used | library, f"declared but never written: {sorted(declared - used - library)}"


def test_outputs_name_files_once():
    out = outputs.declare("99", table="csv", figure=outputs.FIGURE)
    assert out.table.csv == "99_table.csv" and out.figure.files == ("99_figure.png", "99_figure.csv")
    with pytest.raises(outputs.OutputError, match="declares no output 'tabel'"):
        out.tabel
    with pytest.raises(outputs.OutputError, match="not png"):
        out.table.png
    with pytest.raises(outputs.OutputError, match="kinds are"):
        outputs.declare("99", x="xlsx")


def test_published_numbers_match_their_sources(dataset):
    """Each published number is typed once (`experiments.published`) and appears in the source it cites."""
    from spotlab.data.locate import data_root
    from spotlab.experiments import cant_be_late, comparison, leaderboard
    from spotlab.experiments import published as pub

    readme = dataset("sky_spot_traces/adrs-cant-be-late-traces/README.md").read_text()
    for (deadline, _), cost in pub.CANT_BE_LATE_MEAN_COST.items():
        row = next(ln for ln in readme.splitlines() if ln.startswith(f"| {deadline} h |"))
        assert f" {cost:.2f} " in row
    for name, (cost, met) in pub.LEADERBOARD_PEERS.items():
        assert f"{name} {cost:.2f}" in readme.replace("\n  ", " ")
        assert met is None or f"{100 * met:.1f}%" in readme
    score = f"clip(({pub.LEADERBOARD_SCORE_HIGH:g} - mean cost) / ({pub.LEADERBOARD_SCORE_HIGH:g} - " \
            f"{pub.LEADERBOARD_SCORE_LOW:g}))"
    assert score in readme.replace("\n  ", " ")
    # everything else reads them from there
    assert cant_be_late.PUBLISHED_MEAN_COST is pub.CANT_BE_LATE_MEAN_COST
    assert leaderboard.PEERS is pub.LEADERBOARD_PEERS
    assert comparison.PAPER_BEST_IMPROVEMENT is claims.PAPER_BEST_IMPROVEMENT is pub.PAPER_BEST_IMPROVEMENT
    assert claims.CBL_TOLERANCE is cant_be_late.TOLERANCE is pub.CANT_BE_LATE_TOLERANCE

    design = (data_root() or Path("/nonexistent")).parent / "design"
    if not (design / "SPEC.md").is_file():
        pytest.skip("the design notes are not beside the data")
    spec = (design / "SPEC.md").read_text() + (design / "COTUNE_RLTUNE.md").read_text()
    assert f"up to {pub.PAPER_BEST_IMPROVEMENT:.1%}" in spec
    assert f"within {pub.CANT_BE_LATE_TOLERANCE:.0%}" in spec
    for key in ("validity_error", "throughput_error"):
        assert f"{pub.COTUNE_PREDICTION[key]:.1%} error" in spec
    assert f"~{pub.COTUNE_PREDICTION['throughput_error_at_600']:.0%} at 600" in spec
    assert f"up to {pub.COTUNE_PREDICTION['spread']:.0f}x" in spec
    for policy, label in (("fifo", "FIFO"), ("sia", "Sia")):
        assert f"{-pub.COTUNE_JCT_CHANGE[policy]:.0%} ({label})" in spec
    assert f"utilisation up to +{pub.RLTUNE['utilisation_change']:.0%}" in spec
    assert f"queueing delay up to −{-pub.RLTUNE['queueing_delay_change']:.0%}" in spec


def test_the_committed_full_run_has_a_section_for_every_claim(tmp_path):
    """docs/results/last-full-run/ keeps the last full reproduction's report (`spotlab claims --publish`): it must
    speak of every claim claims.py defines, and be stamped with the commit and date that made it."""
    committed = ROOT / "docs" / "results" / "last-full-run"
    report = (committed / "README.md").read_text()
    assert re.search(r"at commit `[0-9a-f]{7,40}` on \d{4}-\d{2}-\d{2}", report), "the report is not stamped"
    assert "**Quick mode**" not in report and not json.loads((committed / "reproduce_log.json").read_text())["quick"]
    for claim in claims.evaluate(tmp_path):  # an empty folder: every claim, not run, with its id and title
        assert f"## {claim.id}. {claim.title} — " in report, f"no section for claim {claim.id}"
    for figure in re.findall(r"\]\(([\w.-]+\.png)\)", report):
        assert (committed / figure).is_file(), f"the report shows {figure}, which is not committed"


def test_zone_published_numbers_match_their_sources(dataset):
    """The numbers across zones are typed once (`published`) and appear in the data folders' READMEs."""
    from spotlab.experiments import published as pub

    multi = dataset("sky_spot_traces/adrs-cant-be-late-multi/README.md").read_text()
    for name, (per, avg) in pub.MULTI_LEADERBOARD_PEERS.items():
        row = next(ln for ln in multi.splitlines() if ln.startswith(f"| {name}"))
        assert f" {avg:.2f} " in row and all(f" {x:.2f} " in row for x in per or ())
    sky = dataset("sky_spot_traces/skynomad-gcp-h100/README.md").read_text()
    for r15, r12 in pub.SKYNOMAD_SHARED_SIX.values():
        assert f"| {r15:.2f} | {r12:.2f} |" in sky
    for zone, cost in pub.SKYNOMAD_ONE_ZONE_UP_15.items():
        assert f"{zone} {cost:.2f}" in sky
    for key, cost in pub.SKYNOMAD_PAPER.items():
        assert f"{cost:.2f}" in sky


def _zone_benchmarks(tmp_path, up_s=601.18, optimum=520.5, one_zone=633.3):
    rows = [("skynomad", "a+b+c+d+e+f", 1.5, "skynomad", "up_failover", up_s, 601.18),
            ("skynomad", "a+b+c+d+e+f", 1.5, "skynomad", "optimal", optimum, 520.98),
            ("skynomad", "us-east4-b", 1.5, "skynomad", "uniform_progress", one_zone, 633.30),
            ("leaderboard", "all_9_regions", 0.0, "leaderboard", "round_robin", 47.99, 47.99),
            ("leaderboard", "all_9_regions", 0.0, "spotlab", "round_robin", 49.0, float("nan")),
            ("leaderboard", "all_9_regions", 0.0, "spotlab", "optimal", 47.0, float("nan"))]
    t = pd.DataFrame(rows, columns=["bench", "scenario", "x", "rules", "policy", "mean_cost", "published"])
    t["rel_diff"] = t.mean_cost / t.published - 1
    t.to_csv(tmp_path / "11_benchmarks.csv", index=False)


def test_zone_claims(tmp_path):
    _zone_benchmarks(tmp_path)
    z1, z2 = claims.zones_peers(tmp_path), claims.zones_floor(tmp_path)
    assert z1.verdict == "holds" and z1.ours.startswith("4/4 within 0.5%")
    assert z2.verdict == "holds" and "2/2" in z2.ours and "us-east4-b 633.30" in z2.ours
    _zone_benchmarks(tmp_path, up_s=610.0)  # UP(S) 1.5% off
    assert claims.zones_peers(tmp_path).verdict == "deviates"
    _zone_benchmarks(tmp_path, optimum=500.0)  # an optimum below theirs is fine
    assert claims.zones_peers(tmp_path).verdict == "holds"
    _zone_benchmarks(tmp_path, optimum=700.0)  # above a baseline, above theirs
    assert claims.zones_floor(tmp_path).verdict == "deviates" and claims.zones_peers(tmp_path).verdict == "deviates"
    _zone_benchmarks(tmp_path, one_zone=500.0)  # moving did not pay
    assert claims.zones_floor(tmp_path).verdict == "deviates"


def test_the_zone_algorithms_claim_reads_each_bar(tmp_path):
    """Z3 holds only where every bar does: the leaderboard's AvgCost, SkyNomad at both ratios, A3 against UP(S) and
    the best one-zone UP, A1 on perfect forecasts against the optimum."""
    from spotlab.experiments.multi_region import LEADERBOARD_SCENARIOS, SHARED_SIX

    six = "+".join(SHARED_SIX)

    def write(lb_cost, sky15, a3, a1):
        rows = [{"bench": "leaderboard", "scenario": k, "x": 0.0, "rules": "leaderboard", "policy": "select",
                 "windows": 8, "mean_cost": lb_cost, "deadlines_met": 1.0} for k in LEADERBOARD_SCENARIOS]
        for x, cost in ((1.5, sky15), (1.2, 700.0)):
            rows.append({"bench": "skynomad", "scenario": six, "x": x, "rules": "skynomad", "policy": "chc_zones",
                         "windows": 6, "mean_cost": cost, "deadlines_met": 1.0})
            for pol, cost2 in (("select", a3), ("up_failover", 600.0), ("optimal", 520.0), ("chc_zones_oracle", a1)):
                rows.append({"bench": "skynomad", "scenario": six, "x": x, "rules": "spotlab", "policy": pol,
                             "windows": 6, "mean_cost": cost2, "deadlines_met": 1.0})
        pd.DataFrame(rows).to_csv(tmp_path / "11_benchmarks.csv", index=False)
        one = [{"bench": "skynomad", "scenario": six, "x": x, "zone": z, "mean_cost": 580.0 + i}
               for x in (1.5, 1.2) for i, z in enumerate(SHARED_SIX)]
        pd.DataFrame(one).to_csv(tmp_path / "11_one_zone.csv", index=False)
        return claims.zones_algorithms(tmp_path)

    assert write(71.0, 540.0, 570.0, 530.0).verdict == "holds"
    assert write(73.0, 540.0, 570.0, 530.0).verdict == "deviates"  # the leaderboard's bar
    assert write(71.0, 560.0, 570.0, 530.0).verdict == "deviates"  # SkyNomad's
    assert write(71.0, 540.0, 590.0, 530.0).verdict == "deviates"  # A3 above the best one-zone UP (580)
    c = write(71.0, 540.0, 570.0, 560.0)  # A1 on perfect forecasts 7.7% above the optimum
    assert c.verdict == "deviates" and "7.7%" in c.ours
