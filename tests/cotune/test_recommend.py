"""CoTune knowledge sources, recommender, per-source jobs of the cluster experiment, and the two CLI commands."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spotlab.cluster.alibaba_philly_workload import TraceJob
from spotlab.cluster.simulate import simulate
from spotlab.cluster.state import Cluster, Option, SimJob
from spotlab.cotune.jobs import (
    fine_tune_jobs,
    offered_load,
    outcome,
    scaled,
    sim_jobs,
    time_scale_for_load,
)
from spotlab.cotune.knowledge import NoisyKnowledge, OracleKnowledge
from spotlab.cotune.perf import DEFAULT
from spotlab.cotune.recommend import Recommender, rank
from spotlab.cotune.space import VALUES, enumerate_space, rule_violations, space_frame
from spotlab.errors import ConfigError
from spotlab.experiments.cotune_cluster import Settings, compare, train_knowledge
from spotlab.jobs.job import Throughput

CLUSTER = Cluster.parse("A100-80GB:2x8,L40S-48GB:4x4")
JOB = dict(model_name="llama2-7b", method="full", tokens_per_sample=2048, batch_size=16)


@pytest.fixture(scope="module")
def predicted():
    return train_knowledge(1200, seed=3)


def trace(n=40, seed=0):
    rng = np.random.default_rng(seed)
    t = np.cumsum(rng.exponential(600.0, n))
    return [TraceJob(i, float(t[i]), int(rng.choice([1, 1, 2, 4, 8])), float(rng.uniform(600, 7200)))
            for i in range(n)]


# ------------------------------------------------------------------------------------------ knowledge + recommend
@pytest.mark.parametrize("objective", ["fewest_gpus", "throughput_per_gpu", "throughput"])
def test_oracle_recommendation_is_the_best_valid_completion(objective):
    rec = Recommender(OracleKnowledge()).recommend(JOB, objective)
    assert DEFAULT.fits(rec.config) and DEFAULT.oom_probability(rec.config) == 0
    assert all(getattr(rec.config, k) == v for k, v in JOB.items())
    every = [c for c in enumerate_space(**JOB) if DEFAULT.oom_probability(c) == 0]
    tps = {c: DEFAULT.throughput(c) for c in every}
    if objective == "fewest_gpus":
        assert rec.config.number_gpus == min(c.number_gpus for c in every)
    elif objective == "throughput_per_gpu":
        assert tps[rec.config] / rec.config.number_gpus == pytest.approx(max(v / c.number_gpus for c, v in tps.items()))
    else:
        assert tps[rec.config] == pytest.approx(max(tps.values()))
    assert rec.tokens_per_second == pytest.approx(tps[rec.config])


def test_job_throughput_feeds_the_job_model():
    r = Recommender(OracleKnowledge())
    tp = r.job_throughput(r.recommend(JOB).config)
    assert isinstance(tp, Throughput) and tp.alpha > 0
    h = [tp.alpha * n + tp.beta for n in (2, 4, 8)]
    assert h == sorted(h)  # more GPUs, more work per hour
    with pytest.raises(ConfigError, match="fewer than 2 GPU counts"):
        r.job_throughput(dict(JOB, model_name="granite-13b", tokens_per_sample=8192, batch_size=128,
                              gpu_model="L40S-48GB", software_version="v1", number_gpus=8))


def test_recommender_errors():
    r = Recommender(OracleKnowledge())
    with pytest.raises(ConfigError, match="unknown parameter"):
        r.recommend({"gpus": 2})
    with pytest.raises(ConfigError, match="not in the space"):
        r.recommend({"model_name": "gpt-5"})
    with pytest.raises(ConfigError, match="unknown objective"):
        r.recommend(JOB, "cheapest")
    with pytest.raises(ConfigError, match="predicted valid"):
        r.recommend(dict(model_name="granite-13b", method="full", tokens_per_sample=8192, batch_size=128,
                         gpu_model="L40S-48GB", software_version="v1"))


@settings(max_examples=25, deadline=None)
@given(model=st.sampled_from(VALUES["model_name"]), method=st.sampled_from(VALUES["method"]),
       tokens=st.sampled_from(VALUES["tokens_per_sample"]), batch=st.sampled_from(VALUES["batch_size"]))
def test_predicted_valid_configurations_respect_the_rules(predicted, model, method, tokens, batch):
    cands = Recommender(predicted).candidates(dict(model_name=model, method=method, tokens_per_sample=tokens,
                                                   batch_size=batch))
    broken = np.array([bool(rule_violations(dict(r))) for r in cands[list(VALUES)].to_dict(orient="records")])
    assert not cands["valid"].to_numpy()[broken].any()
    for r in rank(cands).to_dict(orient="records"):
        assert not rule_violations({k: r[k] for k in VALUES})


def test_noisy_knowledge():
    frame = space_frame(enumerate_space(model_name="llama2-7b"))
    exact = NoisyKnowledge(sigma=0.0, flip=0.0).assess(frame)
    oracle = OracleKnowledge().assess(frame)
    assert (exact["valid"] == oracle["valid"]).all()
    np.testing.assert_allclose(exact["tokens_per_second"], oracle["tokens_per_second"])
    a = NoisyKnowledge(sigma=0.3, flip=0.2, seed=5).assess(frame)
    b = NoisyKnowledge(sigma=0.3, flip=0.2, seed=5).assess(frame.iloc[::-1].reset_index(drop=True))
    pd.testing.assert_frame_equal(a, b.iloc[::-1].reset_index(drop=True))  # per configuration, not per row
    flipped = NoisyKnowledge(flip=1.0).assess(frame)
    rules_ok = np.array([not rule_violations(r) for r in frame.to_dict(orient="records")])
    assert (flipped["valid"][rules_ok] != oracle["valid"][rules_ok]).all() and not flipped["valid"][~rules_ok].any()
    with pytest.raises(ConfigError, match="sigma"):
        NoisyKnowledge(sigma=-1)


# ------------------------------------------------------------------------------------------ jobs per source
def test_sources_share_what_really_happens(predicted):
    jobs = fine_tune_jobs(trace(), CLUSTER, seed=1)
    for j in jobs:
        assert j.work == pytest.approx(j.runtime_s * DEFAULT.throughput(j.best))
        assert DEFAULT.oom_probability(j.best) == 0
    seen: dict = {}
    for src in ("user", "profiling", "oracle", predicted, NoisyKnowledge(0.2, 0.1)):
        for sj in sim_jobs(jobs, CLUSTER, src, seed=1):
            for o in sj.options:
                key = (sj.job_id, o.label, o.gpus)
                assert seen.setdefault(key, (o.fails, o.true_rate)) == (o.fails, o.true_rate)
            if src == "oracle":  # its own options never fail; the user's trial and error only as fallback
                assert sj.primary > 0 and not any(o.fails for o in sj.options[:sj.primary]) and sj.setup_s == 0
                assert all(o.est_rate == 0 for o in sj.options[sj.primary:])
            if src == "user":
                assert sj.primary == 0
            if src == "profiling":
                assert sj.setup_s > 0
    j = jobs[0]
    cfg = dict(j.best)
    assert outcome(j.job_id, cfg, 1) == outcome(j.job_id, cfg, 1)


def test_fallback_runs_only_after_the_primary_options_failed():
    ok = Option("A100-80GB", 1, 10.0, 10.0, False, "a")
    bad = Option("A100-80GB", 1, 10.0, 0.0, True, "b")
    cl = Cluster.parse("A100-80GB:1x1")
    res = simulate(cl, [SimJob(0, 0.0, 100.0, (bad, ok), primary=1)], "fifo", fail_after_s=5.0)
    att = res.attempts.sort_values("start_s")
    assert list(att["outcome"]) == ["oom", "done"] and res.jobs["finish_s"].item() == pytest.approx(15.0)
    # without the primary split FIFO would take the fallback whenever the primary one does not fit now
    big = Option("A100-80GB", 2, 40.0, 40.0, False, "big")
    res = simulate(Cluster.parse("A100-80GB:1x2"), [SimJob(0, 0.0, 100.0, (big,)),
                                                   SimJob(1, 1.0, 100.0, (big, ok), primary=1)], "fifo")
    assert res.jobs.set_index("job_id").loc[1, "gpus"] == 2  # waited for its own option


def test_oracle_jobs_all_finish_and_user_jobs_waste_gpu_time():
    jobs = scaled(fine_tune_jobs(trace(60), CLUSTER, seed=2), 1.0)
    res = {s: simulate(CLUSTER, sim_jobs(jobs, CLUSTER, s, seed=2), "fifo").summary() for s in ("user", "oracle")}
    assert res["oracle"]["jobs_done"] == 60 and res["oracle"]["gpu_hours_wasted"] == 0
    assert res["user"]["gpu_hours_wasted"] > 0


def test_time_scale_reaches_the_offered_load():
    jobs = fine_tune_jobs(trace(), CLUSTER, seed=0)
    f = time_scale_for_load(jobs, CLUSTER, 0.5)
    assert offered_load(scaled(jobs, f), CLUSTER) == pytest.approx(0.5)
    with pytest.raises(ConfigError, match="load must be > 0"):
        time_scale_for_load(jobs, CLUSTER, 0)
    with pytest.raises(ConfigError, match="unknown configuration source"):
        sim_jobs(jobs, CLUSTER, "guess")
    with pytest.raises(ConfigError, match="none of the space"):
        fine_tune_jobs(trace(), Cluster.parse("H200:1x8"))


def test_compare_resumes_and_never_mixes_setups(tmp_path):
    jobs = fine_tune_jobs(trace(30), CLUSTER, seed=0)
    csv = tmp_path / "runs.csv"
    srcs = {"user": "user", "oracle": "oracle"}
    a = compare(CLUSTER, jobs, srcs, ("fifo",), Settings(), results_csv=csv, progress=False)
    assert len(a) == 2 and a.loc[a["source"] == "user", "jct_change_vs_user"].item() == 0
    b = compare(CLUSTER, jobs, srcs, ("fifo",), Settings(), results_csv=csv, progress=False)
    assert len(pd.read_csv(csv)) == 2  # nothing run again
    pd.testing.assert_frame_equal(a.drop(columns="fingerprint"), b.drop(columns="fingerprint"), check_dtype=False)
    c = compare(CLUSTER, scaled(jobs, 0.5), srcs, ("fifo",), Settings(), results_csv=csv, progress=False)
    assert len(pd.read_csv(csv)) == 4 and len(c) == 2  # another load is another set-up


# ------------------------------------------------------------------------------------------ CLI
def cli(*args, timeout=300):
    return subprocess.run([sys.executable, "-m", "spotlab", *map(str, args)], capture_output=True, text=True,
                          timeout=timeout)


def test_cli_configs(tmp_path):
    p = cli("cotune", "configs", "--n-runs", 400, "--sizes", "100,200", "--repeats", 1, "--out", tmp_path, "--json",
            "--recommend", "model_name=granite-3b-code", "--recommend", "method=lora", "--recommend", "batch_size=16")
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert out["runs"] == 400 and 0 <= out["validity_error"] < 0.3 and out["recommendation"]["method"] == "lora"
    assert out["recommendation"]["batch_size"] == 16  # a number given on the command line is that number
    assert (tmp_path / "learning_curve.csv").is_file() and (tmp_path / "summary.json").is_file()
    p = cli("cotune", "configs", "--runs", tmp_path / "missing.csv")
    assert p.returncode == 2 and "missing.csv" in p.stderr and "Traceback" not in p.stderr
    p = cli("cotune", "configs", "--n-runs", 400, "--sizes", "100", "--repeats", 1, "--recommend", "colour=red")
    assert p.returncode == 2 and "unknown parameter" in p.stderr


def test_cli_cluster(dataset, tmp_path):
    dataset("traces/alibaba-gpu-v2023/openb_pod_list_default.csv")
    dataset("traces/philly/philly_job_runtime_seconds.csv")
    p = cli("cotune", "cluster", "--n-jobs", 80, "--sources", "user,oracle", "--results", tmp_path / "r.csv", "--json")
    assert p.returncode == 0, p.stderr
    rows = json.loads(p.stdout)
    assert {(r["policy"], r["source"]) for r in rows} == {(a, b) for a in ("fifo", "sia") for b in ("user", "oracle")}
    assert all(r["jobs"] == 80 for r in rows)
    for bad, msg in ((["--sources", "guru"], "unknown configuration source"), (["--policies", "lifo"], "unknown policy"),
                     (["--part", "0.5"], "START:END"), (["--cluster", "A100"], "cluster spec")):
        p = cli("cotune", "cluster", "--n-jobs", 10, *bad)
        assert p.returncode == 2 and msg in p.stderr and "Traceback" not in p.stderr, (bad, p.stderr)
