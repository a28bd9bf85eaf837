"""Throughput profiles: the analytical model's shape, the linear fit, measured CSVs (SPEC §2, §7 item 1)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from spotlab.errors import SpotlabError
from spotlab.jobs import profiles as prof
from spotlab.jobs.job import Job, Throughput

PAIRS = [(m, g) for m in prof.MODELS for g in prof.GPUS]


@pytest.mark.parametrize("model,gpu", PAIRS)
def test_throughput_increases_and_per_gpu_efficiency_does_not(model, gpu):
    df = prof.profile(model, gpu, range(1, 9))
    assert list(df["n"]) == list(range(1, 9))
    assert np.all(np.diff(df["throughput"]) > 0)
    assert np.all(np.diff(df["per_gpu"]) <= 1e-9)
    assert df["efficiency"].iloc[0] == pytest.approx(1.0)
    assert np.all(df["efficiency"] <= 1 + 1e-12)
    assert df["comm_s"].iloc[0] == 0.0 and np.all(df["comm_s"].iloc[1:] > 0)
    parts = df[["compute_s", "sync_s", "comm_s", "overhead_s"]].sum(axis=1)
    np.testing.assert_allclose(parts, df["step_time"])
    np.testing.assert_allclose(df["throughput"], df["n"] * prof.TrainSetup().tokens_per_gpu / df["step_time"])


def test_multi_node_is_still_monotone_but_slower_per_gpu():
    df = prof.profile("llama2-7b", "a100", range(1, 33))
    assert np.all(np.diff(df["throughput"]) > 0)
    assert np.all(np.diff(df["per_gpu"]) <= 1e-9)
    assert df.loc[df["n"] == 9, "comm_s"].item() > df.loc[df["n"] == 8, "comm_s"].item()


def test_lora_flops_and_trainable_params():
    llama = prof.MODELS["llama2-7b"]
    assert llama.trainable_params == 32 * 8 * 2 * (4096 + 4096)  # q_proj, v_proj at rank 8
    glm = prof.MODELS["glm3-6b"]
    assert glm.trainable_params == 28 * 8 * (4096 + 4608)
    s = prof.TrainSetup()
    f = prof.flops_per_token(llama, s)
    # ~4N (frozen weights: no weight gradients), well below the 6N of full fine-tuning
    assert 4 * llama.matmul_params < f < 4.5 * llama.matmul_params
    assert prof.flops_per_token(llama, prof.with_setup(s, recompute=True)) > f
    # H100 is faster than A100 on one GPU, and a higher utilisation is faster still
    h_a = prof.profile("llama2-7b", "a100", [1])["throughput"].item()
    h_h = prof.profile("llama2-7b", "h100", [1])["throughput"].item()
    assert h_h > 2 * h_a
    assert prof.profile("llama2-7b", "a100", [1], prof.TrainSetup(mfu=0.5))["throughput"].item() > h_a


def test_expected_max_normal():
    assert prof.expected_max_normal(1) == 0.0
    assert prof.expected_max_normal(2) == pytest.approx(1 / np.sqrt(np.pi), abs=1e-6)
    assert prof.expected_max_normal(8) == pytest.approx(1.4236, abs=1e-3)


def test_fit_recovers_exact_line():
    n = np.arange(1, 9)
    df = pd.DataFrame({"n": n, "throughput": 1234.5 * n + 321.0})
    fit = prof.fit_linear(df)
    assert fit.alpha == pytest.approx(1234.5, rel=1e-12)
    assert fit.beta == pytest.approx(321.0, rel=1e-10)
    assert fit.r2 == pytest.approx(1.0)
    assert fit.n_points == 8 and fit.counts == tuple(range(1, 9))
    np.testing.assert_allclose(fit.residuals, 0.0, atol=1e-9)
    assert fit.unit_rate == pytest.approx(1234.5 + 321.0)
    tp = fit.throughput()
    assert isinstance(tp, Throughput)
    assert float(tp(1)) == pytest.approx(1.0)
    assert tp.alpha == pytest.approx(1234.5 / 1555.5) and tp.beta == pytest.approx(321.0 / 1555.5)
    assert float(fit.throughput(unit_rate=1.0)(2)) == pytest.approx(2 * 1234.5 + 321.0)


def test_fit_with_noise_is_close():
    rng = np.random.default_rng(0)
    n = np.repeat(np.arange(1, 9), 5)
    y = 900.0 * n + 150.0 + rng.normal(0, 20.0, n.size)
    fit = prof.fit_linear(pd.DataFrame({"gpus": n, "throughput": y}))
    assert fit.alpha == pytest.approx(900.0, rel=0.01)
    assert fit.beta == pytest.approx(150.0, abs=30.0)
    assert fit.r2 > 0.99
    assert len(fit.residuals) == n.size
    assert abs(np.mean(fit.residuals)) < 1e-8  # least squares with an intercept: residuals sum to 0


def test_fit_needs_two_counts():
    with pytest.raises(prof.ProfileError, match="2 distinct"):
        prof.fit_linear(pd.DataFrame({"n": [4, 4], "throughput": [1.0, 2.0]}))
    with pytest.raises(prof.ProfileError, match="columns"):
        prof.fit_linear(pd.DataFrame({"x": [1, 2], "throughput": [1.0, 2.0]}))


def test_load_measured_and_fit(tmp_path):
    p = tmp_path / "m.csv"
    p.write_text("gpus,throughput,note\n4,410,a\n1,100,b\n2,205,c\n8,800,d\n")
    df = prof.load_measured(p)
    assert list(df.columns) == ["n", "throughput"]
    assert list(df["n"]) == [1, 2, 4, 8]
    fit = prof.fit_linear(df)
    assert fit.unit_rate == 100.0  # the n = 1 point
    assert fit.r2 > 0.99
    tp = prof.job_throughput(measured=p)
    assert tp == fit.throughput()


@pytest.mark.parametrize("text,match", [
    ("n,throughput\n1,100\n2,200\n", "missing column.*gpus"),
    ("gpus,speed\n1,100\n2,200\n", "missing column.*throughput"),
    ("gpus,throughput\n1,100\n2,0\n", "must be > 0"),
    ("gpus,throughput\n1,100\n2,-5\n", "must be > 0"),
    ("gpus,throughput\n0,100\n2,200\n", "integers >= 1"),
    ("gpus,throughput\n1.5,100\n2,200\n", "integers >= 1"),
    ("gpus,throughput\n1,100\n2,abc\n", "non-numeric"),
    ("gpus,throughput\n1,100\n2,200\n2,210\n", "duplicate GPU counts \\[2\\]"),
    ("gpus,throughput\n1,100\n", "at least 2"),
    ("", "cannot read"),
])
def test_load_measured_errors(tmp_path, text, match):
    p = tmp_path / "bad.csv"
    p.write_text(text)
    with pytest.raises(prof.ProfileError, match=match) as exc:
        prof.load_measured(p)
    assert isinstance(exc.value, SpotlabError)


def test_load_measured_missing_file(tmp_path):
    with pytest.raises(prof.ProfileError, match="nope.csv: no such file; expected a measured throughput CSV"):
        prof.load_measured(tmp_path / "nope.csv")
    with pytest.raises(prof.ProfileError, match="is a folder; expected a measured throughput CSV"):
        prof.load_measured(tmp_path)


def test_paper_profiles_four_good_fits():
    fits = prof.paper_profiles()
    assert set(fits) == {("glm3-6b", "a100"), ("glm3-6b", "h100"), ("llama2-7b", "a100"), ("llama2-7b", "h100")}
    for key, fit in fits.items():
        assert fit.r2 > 0.95, key
        assert fit.alpha > 0 and fit.n_points == 8
        tp = fit.throughput()
        assert float(tp(1)) == pytest.approx(1.0, abs=0.02)  # one-GPU-hours of work per hour
        assert 0.8 < tp.alpha <= 1.0 and tp.beta >= 0  # sub-linear: a little below ideal scaling
    table = prof.fits_table(fits)
    assert len(table) == 4 and {"alpha", "beta", "r2", "alpha_norm", "beta_norm"} <= set(table.columns)
    # H100 processes more tokens per second than A100 for the same model
    assert fits[("llama2-7b", "h100")].alpha > fits[("llama2-7b", "a100")].alpha


def test_job_throughput_feeds_a_job():
    tp = prof.job_throughput("llama2-7b", "a100")
    assert tp == prof.paper_profiles()[("llama2-7b", "a100")].throughput()
    job = Job.from_gpu_hours(10.0, deadline_h=24.0, n_min=1, n_max=8, throughput=tp)
    assert job.max_rate == pytest.approx(float(tp(8)))
    with pytest.raises(prof.ProfileError, match="unknown model"):
        prof.job_throughput("gpt-5", "a100")
    with pytest.raises(prof.ProfileError, match="unknown GPU"):
        prof.job_throughput("llama2-7b", "tpu")


def test_memory_check():
    big = prof.TrainSetup(micro_batch=64, seq_len=4096, flash_attention=False)
    with pytest.raises(prof.ProfileError, match="GB per GPU"):
        prof.profile("llama2-7b", "a100", [1, 2], big)
    assert prof.memory_gb("llama2-7b", prof.with_setup(big, recompute=True)) < prof.memory_gb("llama2-7b", big)


def test_bad_setup():
    with pytest.raises(prof.ProfileError):
        prof.TrainSetup(mfu=1.5)
    with pytest.raises(prof.ProfileError):
        prof.step_breakdown("llama2-7b", "a100", 0)
