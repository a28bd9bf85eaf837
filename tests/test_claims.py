"""The claims report reads the notebooks' files and never fails: tiny fake outputs, one per verdict."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from spotlab import claims, reproduce


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


def _selection(path, rounds=270, slope=0.31):
    summary = [{"algorithm": a, "rounds": rounds, "regret": 50.0, "regret_slope": s, "slope_start": 10,
                "bound_hedge": 5000.0} for a, s in (("adahedge", slope), ("hedge", 0.74), ("exp3", 0.8))]
    (path / "06_selection_summary.json").write_text(json.dumps({"params": {}, "summary": summary}))


def test_missing_files_are_not_run(tmp_path):
    got = claims.evaluate(tmp_path)
    assert [c.id for c in got] == ["1", "2", "2m", "3", "4", "5", "6", "7", "7m", "8", "8b", "C1", "C2"]
    assert {c.verdict for c in got} == {"not run"}


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
    assert len(rows) == 13 and all(ln.count(" | ") == 4 for ln in rows)


def test_write_report_reads_log_and_full_mode(tmp_path):
    (tmp_path / "reproduce_log.json").write_text(json.dumps({"quick": False, "seconds": 3600, "notebooks": []}))
    text = claims.write_report(tmp_path, quick=False).read_text()
    assert "Full mode" in text and "3600 s" in text
    (tmp_path / "reproduce_log.json").write_text("{not json")
    assert "wall time is unknown" in claims.write_report(tmp_path, quick=False).read_text()


def test_reproduce_writes_the_report(tmp_path, monkeypatch):
    nbs = tmp_path / "nbs"
    nbs.mkdir()
    (nbs / "00_fake.py").write_text("# fake\n")
    out = tmp_path / "out"

    def fake_run(src, build, out_dir, quick, extra=None, force=False, **kwargs):
        _fits(out_dir)
        return {"notebook": src.stem, "status": "cached", "seconds": 0.0}

    monkeypatch.setattr(reproduce, "run_notebook", fake_run)
    assert reproduce.main(["--notebooks", str(nbs), "--out", str(out), "--build", str(tmp_path / "b"), "--quick"]) == 0
    text = (out / "README.md").read_text()
    assert "Quick mode" in text and "1 cached" in text and "**holds**" in text


@pytest.mark.parametrize("fn", claims.CLAIMS)
def test_every_claim_survives_garbage(tmp_path, fn):
    for name in ("00_fits.csv", "02_best_models.csv", "03_key_numbers.csv", "04_utility_table.csv",
                 "05_best_cells.csv", "05_utility_heatmap.csv", "07_improvement.csv", "01b_crosscheck.csv",
                 "08_key_numbers.csv", "09_jct_by_source.csv", "01c_leaderboard.csv"):
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
