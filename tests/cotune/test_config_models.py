"""CoTune historical runs (generator, loader) and the validity / throughput predictors."""

from __future__ import annotations

import importlib.util

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.base import clone

from spotlab.cotune.config_models import (
    ThroughputRegressor,
    ValidityClassifier,
    config_split,
    evaluate,
    learning_curve,
    predict_space,
    throughput_error,
    unseen_model_error,
    validity_error,
)
from spotlab.cotune.run_history import (
    SCHEMA,
    UNKNOWN_SOFTWARE,
    generate_runs,
    load_runs,
    write_runs,
)
from spotlab.cotune.space import (
    PARAMETERS,
    VALUES,
    Config,
    enumerate_space,
    rule_violations,
    space_frame,
)
from spotlab.errors import (
    PredictorError,
    PredictorNotFittedError,
    RunsError,
    SpotlabError,
)

N_RUNS = 1500


@pytest.fixture(scope="module")
def runs() -> pd.DataFrame:
    return generate_runs(N_RUNS, seed=0)


@pytest.fixture(scope="module")
def split(runs):
    return config_split(runs, test_size=0.25, seed=0)


@pytest.fixture(scope="module")
def fitted(split):
    train, _ = split
    return ValidityClassifier().fit(train), ThroughputRegressor().fit(train)


# ------------------------------------------------------------------------------------------------ generator
def test_generator_is_deterministic_per_seed():
    a, b, c = generate_runs(300, seed=5), generate_runs(300, seed=5), generate_runs(300, seed=6)
    pd.testing.assert_frame_equal(a, b)
    assert a.attrs["seed"] == 5 and c.attrs["seed"] == 6
    assert not a[list(PARAMETERS)].equals(c[list(PARAMETERS)])


def test_generated_runs_have_the_schema_and_time_order(runs):
    assert list(runs.columns) == list(SCHEMA) + ["software_version", "timestamp_days"]
    t = runs["timestamp_days"].to_numpy()
    assert np.all(np.diff(t) >= 0) and t[0] >= 0 and t[-1] < 220.0
    valid = runs["is_valid"].to_numpy()
    tps = runs["dataset_tokens_per_second"].to_numpy()
    assert np.all(tps[valid] > 0) and np.all(np.isnan(tps[~valid]))
    broken = np.array([bool(rule_violations(r)) for r in runs[list(PARAMETERS)].to_dict("records")])
    assert not valid[broken].any()


def test_fraction_valid_is_plausible(runs):
    frac = runs["is_valid"].mean()
    print(f"fraction of generated runs valid: {frac:.3f} (public data: 959/3840 = {959 / 3840:.3f})")
    assert 0.12 < frac < 0.35


def test_generator_rejects_bad_arguments():
    with pytest.raises(RunsError, match="n_runs"):
        generate_runs(0)
    with pytest.raises(RunsError, match="days"):
        generate_runs(10, days=0)


# -------------------------------------------------------------------------------------------------- loader
SUFFIXES = [".csv", ".csv.gz"] + ([".parquet"] if importlib.util.find_spec("pyarrow") else [])


@pytest.mark.parametrize("suffix", SUFFIXES)
def test_write_load_round_trip(tmp_path, suffix):
    df = generate_runs(200, seed=1)
    back = load_runs(write_runs(df, tmp_path / f"runs{suffix}"))
    pd.testing.assert_frame_equal(df, back, check_exact=False)
    assert back.attrs["software_version_filled"] is False


def test_loader_normalises_flexible_input(tmp_path):
    path = tmp_path / "runs.csv"
    path.write_text("model_name,method,gpu_model,number_gpus,batch_size,tokens_per_sample,is_valid,"
                    "dataset_tokens_per_second,note\n"
                    "llama2-7b,lora,A100-80GB,2,8,1024,true,1234.5,a\n"
                    "llama2-7b,full,A100-80GB,2,8,1024,0,,b\n"
                    "granite-13b,lora,L40S-48GB,1.0,4,512,TRUE,99,c\n")
    df = load_runs(path)
    assert df["is_valid"].tolist() == [True, False, True]
    assert df["number_gpus"].dtype == np.int64 and df["number_gpus"].tolist() == [2, 2, 1]
    assert (df["software_version"] == UNKNOWN_SOFTWARE).all() and df.attrs["software_version_filled"]
    assert df["note"].tolist() == ["a", "b", "c"]  # unknown columns kept
    assert np.isnan(df.loc[1, "dataset_tokens_per_second"])


HEADER = ",".join(SCHEMA)
GOOD = "llama2-7b,lora,A100-80GB,2,8,1024,true,1234.5"


@pytest.mark.parametrize("name, content, expected", [
    ("empty.csv", "", ["empty"]),
    ("header.csv", HEADER + "\n", ["no runs"]),
    ("cols.csv", "model_name,method,batch_size\nx,y,1\n", ["missing", "gpu_model", "found", "batch_size"]),
    ("gpus.csv", f"{HEADER}\n{GOOD}\nllama2-7b,lora,A100-80GB,two,8,1024,true,5\n", ["number_gpus", "two", "[3]"]),
    ("zero.csv", f"{HEADER}\nllama2-7b,lora,A100-80GB,2,0,1024,true,5\n", ["batch_size", ">= 1", "[2]"]),
    ("valid.csv", f"{HEADER}\n{GOOD}\nllama2-7b,lora,A100-80GB,2,8,1024,maybe,5\n", ["is_valid", "maybe", "[3]"]),
    ("notps.csv", f"{HEADER}\n{GOOD}\nllama2-7b,lora,A100-80GB,2,8,1024,true,\n", ["valid run", "[3]"]),
    ("negtps.csv", f"{HEADER}\nllama2-7b,lora,A100-80GB,2,8,1024,1,-3\n", ["dataset_tokens_per_second", "-3"]),
    ("text.csv", f"{HEADER}\nllama2-7b,lora,A100-80GB,2,8,1024,0,fast\n", ["not a number", "fast"]),
    ("runs.xlsx", "whatever", ["unknown file type"]),
])
def test_loader_rejects_malformed_files(tmp_path, name, content, expected):
    path = tmp_path / name
    path.write_text(content)
    with pytest.raises(RunsError) as err:
        load_runs(path)
    assert name in str(err.value)
    for text in expected:
        assert text in str(err.value)


@pytest.mark.skipif(any(importlib.util.find_spec(m) for m in ("pyarrow", "fastparquet")),
                    reason="a Parquet engine is installed")
def test_parquet_without_engine_is_a_clear_error(tmp_path):
    with pytest.raises(RunsError, match="needs pyarrow or fastparquet"):
        write_runs(generate_runs(5), tmp_path / "runs.parquet")
    (tmp_path / "old.parquet").write_bytes(b"PAR1")
    with pytest.raises(RunsError, match="needs pyarrow or fastparquet"):
        load_runs(tmp_path / "old.parquet")


def test_loader_missing_file(tmp_path):
    with pytest.raises(RunsError, match="nope.csv: no such file; expected a runs file"):
        load_runs(tmp_path / "nope.csv")
    with pytest.raises(RunsError, match="is a folder; expected a runs file"):
        load_runs(tmp_path)


# ---------------------------------------------------------------------------------------------- predictors
def test_split_holds_out_configurations(split):
    train, test = split
    key = lambda f: set(f[list(PARAMETERS)].astype(str).agg("|".join, axis=1))  # noqa: E731
    assert not key(train) & key(test)


def test_predictors_beat_trivial_baselines(split):
    res = evaluate(*split)
    print({k: round(v, 4) for k, v in res.items()})
    assert res["validity_error"] < 0.5 * res["validity_error_majority"]
    assert res["throughput_error"] < 0.5 * res["throughput_error_median"]
    assert res["throughput_error"] < 0.3


_NUMERIC = {"number_gpus": (1, 2, 3, 4, 8, 16), "batch_size": (1, 2, 3, 6, 8, 64, 128),
            "tokens_per_sample": VALUES["tokens_per_sample"]}
CONFIGS = st.builds(lambda **kw: Config(**kw), **{p: st.sampled_from(_NUMERIC.get(p, VALUES[p])) for p in PARAMETERS})


@settings(max_examples=25, deadline=None)
@given(st.lists(CONFIGS, min_size=1, max_size=40))
def test_valid_predictions_respect_the_rules(fitted, configs):
    clf, _ = fitted
    pred = clf.predict(configs)
    proba = clf.predict_proba(configs)[:, 1]
    for c, ok, p in zip(configs, pred, proba):
        if rule_violations(c):
            assert not ok and p == 0.0


def test_predict_space(fitted):
    clf, reg = fitted
    configs = enumerate_space(model_name="llama2-7b", method="lora", gpu_model="A100-80GB", software_version="v2")
    out = predict_space(clf, reg, configs)
    assert len(out) == len(configs)
    assert {"p_valid", "predicted_valid", "predicted_tokens_per_second"} <= set(out.columns)
    broken = np.array([bool(rule_violations(c)) for c in configs])
    assert out["predicted_tokens_per_second"][broken].isna().all()
    assert (out["predicted_tokens_per_second"][~broken] > 0).all()
    assert out["p_valid"].between(0, 1).all()
    framed = predict_space(clf, reg, space_frame(configs).assign(extra=1))
    assert "extra" in framed.columns and np.allclose(framed["p_valid"], out["p_valid"])


def test_learning_curve_errors_fall(runs):
    lc = learning_curve(runs, sizes=(50, 300, 5000), repeats=2, seed=0)
    assert set(lc.columns) >= {"size", "repeat", "seed", "validity_error", "throughput_error"}
    assert lc.attrs["clipped_sizes"] == [5000] and lc["size"].max() == lc.attrs["n_train_pool"]
    mean = lc.groupby("size")[["validity_error", "throughput_error"]].mean()
    print(mean)
    assert mean["validity_error"].iloc[-1] < mean["validity_error"].iloc[0]
    assert mean["throughput_error"].iloc[-1] < mean["throughput_error"].iloc[0]


def test_unseen_model_rows(runs):
    res = unseen_model_error(runs)
    print(res[["held_out_model", "validity_error", "throughput_error"]])
    assert sorted(res["held_out_model"]) == sorted(VALUES["model_name"])
    assert np.isfinite(res[["validity_error", "throughput_error"]].to_numpy()).all()


# ------------------------------------------------------------------------------------------- errors, sklearn
def test_predict_before_fit_is_an_error():
    cfg = enumerate_space()[:3]
    for est in (ValidityClassifier(), ThroughputRegressor()):
        with pytest.raises(PredictorNotFittedError, match="not fitted"):
            est.predict(cfg)


def test_bad_training_data(runs):
    with pytest.raises(PredictorError, match="no rows"):
        ValidityClassifier().fit(runs.iloc[:0])
    with pytest.raises(PredictorError, match="missing column"):
        ValidityClassifier().fit(runs.drop(columns=["batch_size"]))
    with pytest.raises(PredictorError, match="all .* runs are valid; need both"):
        ValidityClassifier().fit(runs[runs["is_valid"]])
    with pytest.raises(PredictorError, match="need at least 2"):
        ThroughputRegressor().fit(runs[~runs["is_valid"]])
    with pytest.raises(PredictorError, match="unknown model"):
        ValidityClassifier(model="svm").fit(runs)
    with pytest.raises(PredictorError, match="bad parameter"):
        ThroughputRegressor(no_such_option=1).fit(runs)
    assert isinstance(PredictorError("x"), SpotlabError)


def test_sklearn_conventions():
    est = ThroughputRegressor(model="hgb", random_state=3, max_iter=7)
    assert est.get_params()["max_iter"] == 7 and est.get_params()["random_state"] == 3
    twin = clone(est)
    assert twin.get_params() == est.get_params() and "max_iter=7" in repr(twin)


def test_metrics():
    assert validity_error([True, False, True, True], [True, True, True, True]) == 0.25
    assert throughput_error([100.0, 200.0], [110.0, 180.0]) == pytest.approx(0.1)
    with pytest.raises(PredictorError):
        validity_error([], [])
