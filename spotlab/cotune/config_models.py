"""Configuration knowledge from historical runs: will a configuration run, and how fast.

Two scikit-learn estimators over the 7 parameters of `spotlab.cotune.space`:

- `ValidityClassifier`: probability that a run of the configuration completes (no rule violation, no
  out-of-memory). Known rules (`space.rule_violations`) override the learned model: a configuration that
  breaks one is predicted invalid with probability 0, so a "valid" prediction always respects the rules.
- `ThroughputRegressor`: dataset tokens per second of a completed run, fitted on valid runs only to
  log(tokens/s), so the loss is on relative error and configurations 100x apart weigh the same.

Features (`parameter_features`) come from the 7 parameters alone: the categoricals one-hot encoded (unknown
values at predict time encode as all zeros), log2 of the numeric ones, and derived quantities that drive
memory and speed — samples per GPU per step, tokens per GPU per step, tokens per step, attention elements per
GPU (per-GPU batch x tokens^2) and whether the batch splits evenly over the GPUs. Never the analytical model's
memory or throughput: the predictors must learn what a real history would teach them.

Errors (as in the seed): validity error = 1 - accuracy over test runs; throughput error = mean absolute
percentage error, mean(|predicted - measured| / measured), over the test runs measured valid.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping, Sequence

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin, clone
from sklearn.compose import ColumnTransformer
from sklearn.ensemble import (HistGradientBoostingClassifier, HistGradientBoostingRegressor,
                              RandomForestClassifier, RandomForestRegressor)
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.model_selection import GroupShuffleSplit
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import FunctionTransformer, OneHotEncoder, StandardScaler
from threadpoolctl import threadpool_limits

from ..errors import PredictorError, PredictorNotFittedError
from ..processes import at_most_cores
from .space import CATEGORICAL, NUMERIC, PARAMETERS, Config, rule_violations

__all__ = ["PredictorError", "PredictorNotFittedError", "MODELS", "DERIVED", "parameter_features",
           "ValidityClassifier", "ThroughputRegressor", "validity_error", "throughput_error", "config_split",
           "fit_predictors", "evaluate", "learning_curve", "unseen_model_error", "predict_space"]

VALID, TPS = "is_valid", "dataset_tokens_per_second"


MODELS = ("hgb", "rf", "linear")
DERIVED = ("log2_number_gpus", "log2_batch_size", "log2_tokens_per_sample", "log2_per_gpu_batch",
           "log2_tokens_per_gpu_step", "log2_tokens_per_step", "log2_attention_per_gpu", "batch_divisible")

# Defaults of the learned models (overridable through **params). Boosting: many trees of 4 leaves each, i.e.
# mostly low-order interactions. log(tokens/s) and the memory boundary are close to additive in the (log)
# features, and shallow trees extrapolate far better from a few hundred runs than sklearn's 31-leaf default
# (measured on generated histories: throughput error at 600 runs ~10% instead of ~20%, at ~4,000 ~5% vs ~6%).
_SHALLOW = {"max_leaf_nodes": 4, "max_iter": 1000, "min_samples_leaf": 3, "learning_rate": 0.1}
_DEFAULTS: dict[tuple[str, str], dict[str, Any]] = {
    ("hgb", "classifier"): _SHALLOW,
    ("hgb", "regressor"): _SHALLOW,
    ("rf", "classifier"): {"n_estimators": 200, "min_samples_leaf": 1},
    ("rf", "regressor"): {"n_estimators": 200, "min_samples_leaf": 1},
    ("linear", "classifier"): {"C": 10.0, "max_iter": 2000},
    ("linear", "regressor"): {"alpha": 1.0},
}


# ------------------------------------------------------------------------------------------------- features
def parameter_features(X: pd.DataFrame) -> pd.DataFrame:
    """The categorical parameters as strings plus the numeric features of `DERIVED` (from parameters only)."""
    g = X["number_gpus"].to_numpy(dtype=float)
    b = X["batch_size"].to_numpy(dtype=float)
    s = X["tokens_per_sample"].to_numpy(dtype=float)
    per_gpu = b / g
    out = pd.DataFrame({c: X[c].astype(str).to_numpy() for c in CATEGORICAL}, index=X.index)
    out["log2_number_gpus"] = np.log2(g)
    out["log2_batch_size"] = np.log2(b)
    out["log2_tokens_per_sample"] = np.log2(s)
    out["log2_per_gpu_batch"] = np.log2(per_gpu)
    out["log2_tokens_per_gpu_step"] = np.log2(per_gpu * s)
    out["log2_tokens_per_step"] = np.log2(b * s)
    out["log2_attention_per_gpu"] = np.log2(per_gpu * s * s)
    out["batch_divisible"] = (X["batch_size"].to_numpy() % X["number_gpus"].to_numpy() == 0).astype(float)
    return out


def _encoder(scale: bool) -> ColumnTransformer:
    numeric: Any = StandardScaler() if scale else "passthrough"
    onehot = OneHotEncoder(handle_unknown="ignore", sparse_output=False)
    return ColumnTransformer([("onehot", onehot, list(CATEGORICAL)), ("numeric", numeric, list(DERIVED))])


def _where(rows: np.ndarray, limit: int = 10) -> str:
    pos = np.flatnonzero(rows)
    return f"{[int(p) for p in pos[:limit]]}" + (f" and {len(pos) - limit} more" if len(pos) > limit else "")


def _params_frame(X: Any, what: str) -> pd.DataFrame:
    """Configurations (a frame, or Configs / mappings) as a frame with checked parameter columns."""
    if isinstance(X, pd.DataFrame):
        frame = X.reset_index(drop=True)
    elif isinstance(X, (Config, Mapping)):
        frame = pd.DataFrame([X.as_dict() if isinstance(X, Config) else dict(X)])
    else:
        try:
            items = list(X)
        except TypeError:
            raise PredictorError(f"{what}: expected a DataFrame or a list of configurations, "
                                 f"got {type(X).__name__}") from None
        frame = pd.DataFrame([c.as_dict() if isinstance(c, Config) else dict(c) for c in items])
    if frame.empty:
        raise PredictorError(f"{what}: no rows (need at least one configuration)")
    missing = [c for c in PARAMETERS if c not in frame.columns]
    if missing:
        raise PredictorError(f"{what}: missing column(s) {missing}; found {list(frame.columns)}")
    for c in NUMERIC:
        num = pd.to_numeric(frame[c], errors="coerce")
        bad = (num.isna() | (num < 1) | (num != np.floor(num))).to_numpy()
        if bad.any():
            raise PredictorError(f"{what}: column {c!r} must hold whole numbers >= 1; got "
                                 f"{frame[c][bad].astype(str).unique().tolist()[:5]} in rows {_where(bad)}")
    for c in CATEGORICAL:
        bad = frame[c].isna().to_numpy()
        if bad.any():
            raise PredictorError(f"{what}: column {c!r} is missing in rows {_where(bad)}")
    return frame


def _rule_broken(frame: pd.DataFrame) -> np.ndarray:
    """True where `space.rule_violations` rejects the configuration (evaluated once per distinct one)."""
    keys = frame[list(PARAMETERS)].astype(str).agg("|".join, axis=1)
    first = ~keys.duplicated()
    verdict = {k: bool(rule_violations(dict(zip(PARAMETERS, row))))
               for k, row in zip(keys[first], frame.loc[first, list(PARAMETERS)].itertuples(index=False))}
    return keys.map(verdict).to_numpy(dtype=bool)


# ------------------------------------------------------------------------------------------------ estimators
def _one_thread() -> threadpool_limits:
    """One OpenMP/BLAS thread while fitting or predicting: on histories of a few thousand rows the boosting's
    per-iteration thread start-up costs more than it saves (10-50x slower on a busy 2-core machine), and
    `learning_curve(n_jobs=...)` parallelises over repeats instead. Scoped: limits are restored on exit."""
    return threadpool_limits(limits=1)


class _Predictor(BaseEstimator):
    """Shared parts: model choice, extra estimator parameters through **params, the pipeline, fit checks."""

    _task = ""

    def __init__(self, model: str | BaseEstimator = "hgb", random_state: int | None = 0, **params: Any):
        self.model = model
        self.random_state = random_state
        self._params = dict(params)

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        return {**super().get_params(deep=deep), **self._params}

    def set_params(self, **params: Any) -> "_Predictor":
        for k, v in params.items():
            if k in ("model", "random_state"):
                setattr(self, k, v)
            else:
                self._params[k] = v
        return self

    def _pipeline(self) -> Pipeline:
        if not isinstance(self.model, str):
            try:
                est, scale = clone(self.model).set_params(**self._params), False
            except (TypeError, ValueError) as exc:
                raise PredictorError(f"cannot use {self.model!r} with parameters {self._params}: {exc}") from None
        else:
            if self.model not in MODELS:
                raise PredictorError(f"unknown model {self.model!r}; choose one of {list(MODELS)} or pass an estimator")
            kwargs = {**_DEFAULTS[(self.model, self._task)], **self._params}
            cls = {("hgb", "classifier"): HistGradientBoostingClassifier,
                   ("hgb", "regressor"): HistGradientBoostingRegressor,
                   ("rf", "classifier"): RandomForestClassifier, ("rf", "regressor"): RandomForestRegressor,
                   ("linear", "classifier"): LogisticRegression,
                   ("linear", "regressor"): Ridge}[(self.model, self._task)]
            if self.model != "linear" or self._task == "classifier":
                kwargs.setdefault("random_state", self.random_state)
            try:
                est = cls(**kwargs)
            except TypeError as exc:
                raise PredictorError(f"bad parameter for model {self.model!r} ({cls.__name__}): {exc}") from None
            scale = self.model == "linear"
        return Pipeline([("features", FunctionTransformer(parameter_features)), ("encode", _encoder(scale)),
                         ("model", est)])

    def _check_fitted(self) -> None:
        if not hasattr(self, "pipeline_"):
            raise PredictorNotFittedError(f"{type(self).__name__} is not fitted yet; call fit(runs) first")


class ValidityClassifier(ClassifierMixin, _Predictor):
    """P(a run of the configuration completes); known rules override the learned model (module doc).

    `model`: "hgb" (HistGradientBoostingClassifier, default), "rf" (random forest), "linear" (logistic
    regression) or an unfitted scikit-learn classifier; `**params` go to that estimator.
    """

    _task = "classifier"

    def fit(self, X: pd.DataFrame, y: Iterable[Any] | None = None) -> "ValidityClassifier":
        """Fit on runs (`y` None: the `is_valid` column) or on configurations `X` with outcomes `y`."""
        frame = _params_frame(X, "validity training data")
        if y is None:
            if VALID not in frame.columns:
                raise PredictorError(f"validity training data: no {VALID!r} column and no y given; "
                                     f"found {list(frame.columns)}")
            y = frame[VALID]
        target = np.asarray(pd.Series(list(y)).astype(bool))
        if len(target) != len(frame):
            raise PredictorError(f"validity training data: {len(frame)} configurations but {len(target)} outcomes")
        if target.all() or not target.any():
            raise PredictorError(f"validity training data: all {len(target)} runs are "
                                 f"{'valid' if target.all() else 'invalid'}; need both valid and invalid runs")
        with _one_thread():
            self.pipeline_ = self._pipeline().fit(frame, target)
        self.classes_ = np.array([False, True])
        self.n_train_ = len(frame)
        return self

    def predict_proba(self, X: Any) -> np.ndarray:
        """Columns P(invalid), P(valid) per configuration; 0 for P(valid) where a rule is broken."""
        self._check_fitted()
        frame = _params_frame(X, "configurations to predict")
        with _one_thread():
            proba = self.pipeline_.predict_proba(frame)
        p = proba[:, list(self.pipeline_.classes_).index(True)]
        p = np.where(_rule_broken(frame), 0.0, p)
        return np.column_stack([1.0 - p, p])

    def predict(self, X: Any) -> np.ndarray:
        """True where P(valid) >= 0.5."""
        return self.predict_proba(X)[:, 1] >= 0.5


class ThroughputRegressor(RegressorMixin, _Predictor):
    """Tokens per second of a completed run, learned as log(tokens/s) from valid runs only (module doc).

    `model`: "hgb" (HistGradientBoostingRegressor, default), "rf", "linear" (ridge regression) or an
    unfitted scikit-learn regressor; `**params` go to that estimator.
    """

    _task = "regressor"

    def fit(self, X: pd.DataFrame, y: Iterable[float] | None = None) -> "ThroughputRegressor":
        """Fit on runs (`y` None: the valid rows' `dataset_tokens_per_second`) or on `X` with throughputs `y`."""
        frame = _params_frame(X, "throughput training data")
        if y is None:
            missing = [c for c in (VALID, TPS) if c not in frame.columns]
            if missing:
                raise PredictorError(f"throughput training data: missing column(s) {missing} and no y given; "
                                     f"found {list(frame.columns)}")
            frame = frame[frame[VALID].astype(bool).to_numpy()].reset_index(drop=True)
            y = frame[TPS]
        target = pd.to_numeric(pd.Series(list(y), dtype=object), errors="coerce").to_numpy(dtype=float)
        if len(target) != len(frame):
            raise PredictorError(f"throughput training data: {len(frame)} configurations but {len(target)} throughputs")
        bad = ~(np.isfinite(target) & (target > 0))
        if bad.any():
            raise PredictorError("throughput training data: throughput must be finite and > 0; "
                                 f"bad in rows {_where(bad)}")
        if len(target) < 2:
            raise PredictorError(f"throughput training data: {len(target)} valid run(s); need at least 2")
        with _one_thread():
            self.pipeline_ = self._pipeline().fit(frame, np.log(target))
        self.n_train_ = len(frame)
        return self

    def predict(self, X: Any) -> np.ndarray:
        """Predicted tokens per second (the exponential of the predicted log; no rule check here)."""
        self._check_fitted()
        frame = _params_frame(X, "configurations to predict")
        with _one_thread():
            return np.exp(self.pipeline_.predict(frame))


# -------------------------------------------------------------------------------------------------- metrics
def validity_error(y_true: Iterable[Any], y_pred: Iterable[Any]) -> float:
    """1 - accuracy: the fraction of runs whose validity is predicted wrongly."""
    t, p = np.asarray(list(y_true), dtype=bool), np.asarray(list(y_pred), dtype=bool)
    if len(t) == 0 or len(t) != len(p):
        raise PredictorError(f"validity_error: need equally long, non-empty outcomes (got {len(t)} and {len(p)})")
    return float(np.mean(t != p))


def throughput_error(measured: Iterable[float], predicted: Iterable[float]) -> float:
    """Mean absolute percentage error as a fraction: mean(|predicted - measured| / measured)."""
    m, p = np.asarray(list(measured), dtype=float), np.asarray(list(predicted), dtype=float)
    if len(m) == 0 or len(m) != len(p) or not (np.all(m > 0) and np.all(np.isfinite(p))):
        raise PredictorError("throughput_error: need equally long, non-empty throughputs, measured > 0")
    return float(np.mean(np.abs(p - m) / m))


# --------------------------------------------------------------------------------------------- experiments
def _config_keys(runs: pd.DataFrame) -> pd.Series:
    return runs[list(PARAMETERS)].astype(str).agg("|".join, axis=1)


def _with_outcomes(runs: Any, what: str) -> pd.DataFrame:
    """Runs with parameters and the two measured columns (`is_valid`, `dataset_tokens_per_second`)."""
    frame = _params_frame(runs, what)
    missing = [c for c in (VALID, TPS) if c not in frame.columns]
    if missing:
        raise PredictorError(f"{what}: missing column(s) {missing}; found {list(frame.columns)}")
    return frame


def config_split(runs: pd.DataFrame, test_size: float = 0.2, seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Train/test split **by configuration**: all runs of a configuration land on the same side, so the test
    set holds configurations never seen in training (`test_size` is the fraction of distinct configurations)."""
    frame = _params_frame(runs, "runs to split")
    if not 0 < test_size < 1:
        raise PredictorError(f"test_size must be in (0, 1) (got {test_size!r})")
    keys = _config_keys(frame)
    if keys.nunique() < 2:
        raise PredictorError("runs to split: need at least 2 distinct configurations")
    tr, te = next(GroupShuffleSplit(n_splits=1, test_size=test_size, random_state=seed).split(frame, groups=keys))
    return frame.iloc[np.sort(tr)].reset_index(drop=True), frame.iloc[np.sort(te)].reset_index(drop=True)


def fit_predictors(runs: pd.DataFrame, model: str = "hgb", random_state: int | None = 0
                   ) -> tuple[ValidityClassifier, ThroughputRegressor]:
    """Both predictors fitted on the same runs."""
    return (ValidityClassifier(model, random_state).fit(runs), ThroughputRegressor(model, random_state).fit(runs))


def evaluate(train: pd.DataFrame, test: pd.DataFrame, model: str = "hgb", random_state: int | None = 0) -> dict:
    """Fit on `train`, score on `test` (module doc's errors), next to trivial baselines fitted on `train`:
    the majority outcome for validity and the training median throughput for every configuration."""
    test = _with_outcomes(test, "test runs")
    train = _with_outcomes(train, "training runs")
    clf, reg = fit_predictors(train, model, random_state)
    y = test[VALID].astype(bool).to_numpy()
    valid = test[y]
    tv = train[train[VALID].astype(bool).to_numpy()]
    out = {"n_train": int(len(train)), "n_train_valid": int(len(tv)), "n_test": int(len(test)),
           "n_test_valid": int(len(valid)),
           "validity_error": validity_error(y, clf.predict(test)),
           "validity_error_majority": validity_error(y, np.full(len(y), bool(train[VALID].astype(bool).mean() >= 0.5)))}
    if len(valid):
        out["throughput_error"] = throughput_error(valid[TPS], reg.predict(valid))
        out["throughput_error_median"] = throughput_error(valid[TPS], np.full(len(valid), float(tv[TPS].median())))
    else:
        out["throughput_error"] = out["throughput_error_median"] = float("nan")
    return out


def learning_curve(runs: pd.DataFrame, sizes: Sequence[int] = (50, 100, 200, 400, 600, 1000, 2000, 4000),
                   repeats: int = 5, seed: int = 0, test_size: float = 0.2, model: str = "hgb",
                   n_jobs: int = 1) -> pd.DataFrame:
    """Errors vs number of training runs on one fixed held-out set of configurations.

    One `config_split(runs, test_size, seed)` (held-out configurations, so a repeated configuration is never
    on both sides); for repeat r, the training runs are shuffled with seed (seed, r) and each size takes the
    first `size` of that order (nested subsets: the curve's steps are not noise from different draws). Sizes
    at or above the training split's size become one point using all of it (`size` = the runs used; the
    requested sizes so merged are in `attrs["clipped_sizes"]`).
    Every (size, repeat) is a pure function of its arguments, so `n_jobs` (joblib) does not change the result.
    """
    train, test = config_split(_with_outcomes(runs, "runs"), test_size, seed)
    want = sorted({int(s) for s in sizes})
    if not want or want[0] < 2 or repeats < 1:
        raise PredictorError(f"learning_curve: need sizes >= 2 and repeats >= 1 "
                             f"(got sizes={list(sizes)}, repeats={repeats})")
    clipped = [s for s in want if s >= len(train)]
    keep = [s for s in want if s < len(train)] + ([len(train)] if clipped else [])
    orders = [np.random.default_rng([seed, r]).permutation(len(train)) for r in range(repeats)]

    def one(size: int, r: int) -> dict:
        sub = train.iloc[np.sort(orders[r][:size])]
        try:
            res = evaluate(sub, test, model, seed)
        except PredictorError as exc:
            raise PredictorError(f"learning_curve size={size} repeat={r}: {exc}") from None
        return {"size": size, "repeat": r, "seed": seed, **res}

    jobs = [(s, r) for s in keep for r in range(repeats)]
    if n_jobs == 1:
        rows = [one(s, r) for s, r in jobs]
    else:
        from joblib import Parallel, delayed

        rows = Parallel(n_jobs=at_most_cores(n_jobs))(delayed(one)(s, r) for s, r in jobs)
    out = pd.DataFrame(rows)
    out.attrs = {"seed": seed, "test_size": test_size, "model": model, "n_train_pool": len(train),
                 "n_test": len(test), "clipped_sizes": clipped}
    return out


def unseen_model_error(runs: pd.DataFrame, seed: int = 0, model: str = "hgb") -> pd.DataFrame:
    """Leave-one-model-out: for each `model_name`, train on the runs of the other models and test on its runs.
    The held-out model's one-hot column is unknown to the predictors (all zeros), so this measures how far
    the other parameters alone carry over to a new model."""
    frame = _with_outcomes(runs, "runs")
    names = list(dict.fromkeys(frame["model_name"].astype(str)))
    if len(names) < 2:
        raise PredictorError(f"unseen_model_error: need runs of at least 2 models (got {names})")
    rows = []
    for name in names:
        held = (frame["model_name"].astype(str) == name).to_numpy()
        try:
            res = evaluate(frame[~held], frame[held], model, seed)
        except PredictorError as exc:
            raise PredictorError(f"unseen_model_error, held-out model {name!r}: {exc}") from None
        rows.append({"held_out_model": name, "seed": seed, **res})
    return pd.DataFrame(rows)


def predict_space(classifier: ValidityClassifier, regressor: ThroughputRegressor,
                  configs: pd.DataFrame | Sequence[Config | Mapping[str, Any]]) -> pd.DataFrame:
    """The configurations (with any other columns of a frame) plus `p_valid`, `predicted_valid` and
    `predicted_tokens_per_second` (the regressor's estimate if it ran; NaN where a rule is broken)."""
    frame = _params_frame(configs, "configurations to predict")
    p = classifier.predict_proba(frame)[:, 1]
    tps = regressor.predict(frame)
    out = frame.copy()
    out["p_valid"] = p
    out["predicted_valid"] = p >= 0.5
    out["predicted_tokens_per_second"] = np.where(_rule_broken(frame), np.nan, tps)
    return out
