"""Sources of configuration knowledge: what a scheduler believes about a configuration before it runs.

Each source answers one question for a table of configurations (the 7 parameter columns): is it valid (and
how sure), and how many dataset tokens per second will it process. The recommender and the cluster experiment
take any of them, so predicted knowledge can be compared with perfect and with degraded knowledge:

- `PredictedKnowledge`: the scikit-learn predictors trained on historical runs (`spotlab.cotune.config_models`);
- `OracleKnowledge`: the analytical ground truth (`spotlab.cotune.perf`), i.e. perfect knowledge;
- `NoisyKnowledge`: the ground truth with a chosen error (log-normal throughput error, flipped validity), to
  measure how scheduling degrades with the quality of the knowledge.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
import pandas as pd

from .perf import DEFAULT, PerfModel
from .space import PARAMETERS, rule_violations
from ..errors import ConfigError

__all__ = ["Knowledge", "PredictedKnowledge", "OracleKnowledge", "NoisyKnowledge", "ASSESSMENT"]

ASSESSMENT = ("p_valid", "valid", "tokens_per_second")


class Knowledge(Protocol):
    name: str

    def assess(self, configs: pd.DataFrame) -> pd.DataFrame:
        """`configs` plus columns p_valid (0..1), valid (bool) and tokens_per_second (NaN if unknown)."""
        ...


def _check(configs: pd.DataFrame) -> pd.DataFrame:
    missing = [c for c in PARAMETERS if c not in configs.columns]
    if missing:
        raise ConfigError(f"configurations lack column(s) {missing}; need {list(PARAMETERS)}")
    return configs.reset_index(drop=True)


def _rules_ok(configs: pd.DataFrame) -> np.ndarray:
    return np.array([not rule_violations(dict(zip(PARAMETERS, row)))
                     for row in configs[list(PARAMETERS)].itertuples(index=False)], dtype=bool)


@dataclass(frozen=True)
class PredictedKnowledge:
    """Trained validity classifier + throughput regressor (`spotlab.cotune.config_models`)."""

    validity: Any
    throughput: Any
    threshold: float = 0.5  # predicted valid when P(valid) >= threshold
    name: str = "predicted"

    def assess(self, configs: pd.DataFrame) -> pd.DataFrame:
        from .config_models import predict_space

        c = _check(configs)
        pred = predict_space(self.validity, self.throughput, c[list(PARAMETERS)])
        out = c.copy()
        out["p_valid"] = np.asarray(pred["p_valid"], dtype=float)
        out["valid"] = (out["p_valid"] >= self.threshold) & _rules_ok(c)
        out["tokens_per_second"] = np.asarray(pred["predicted_tokens_per_second"], dtype=float)
        return out


@dataclass(frozen=True)
class OracleKnowledge:
    """Perfect knowledge: valid iff the configuration never runs out of memory; the noise-free throughput."""

    perf: PerfModel = field(default=DEFAULT)
    name: str = "oracle"

    def assess(self, configs: pd.DataFrame) -> pd.DataFrame:
        c = _check(configs)
        rows = [dict(zip(PARAMETERS, r)) for r in c[list(PARAMETERS)].itertuples(index=False)]
        p_oom = np.array([self.perf.oom_probability(r) for r in rows])
        out = c.copy()
        out["p_valid"] = 1.0 - p_oom
        out["valid"] = p_oom == 0.0
        out["tokens_per_second"] = [self.perf.throughput(r) if ok else np.nan for r, ok in zip(rows, out["valid"])]
        return out


@dataclass(frozen=True)
class NoisyKnowledge:
    """The truth with errors of a chosen size: throughput times exp(N(0, sigma)), and each configuration's
    validity flipped with probability `flip` (rule violations stay invalid). Seeded per configuration, so
    the same configuration gets the same error wherever it is asked about."""

    sigma: float = 0.1
    flip: float = 0.0
    seed: int = 0
    perf: PerfModel = field(default=DEFAULT)
    name: str = "noisy"

    def __post_init__(self) -> None:
        if not (self.sigma >= 0 and 0 <= self.flip <= 1):
            raise ConfigError(f"noisy knowledge needs sigma >= 0 and 0 <= flip <= 1 (got {self.sigma}, {self.flip})")

    def assess(self, configs: pd.DataFrame) -> pd.DataFrame:
        c = _check(configs)
        out = OracleKnowledge(self.perf).assess(c)
        keys = pd.util.hash_pandas_object(c[list(PARAMETERS)], index=False).to_numpy()
        z = np.empty(len(c))
        u = np.empty(len(c))
        for i, k in enumerate(keys):
            r = np.random.default_rng([self.seed, int(k) & 0xFFFFFFFF, int(k) >> 32])
            z[i], u[i] = r.normal(), r.random()
        flip = (u < self.flip) & _rules_ok(c)
        valid = np.where(flip, ~out["valid"].to_numpy(), out["valid"].to_numpy())
        true_tps = np.array([self.perf.throughput(dict(zip(PARAMETERS, r)))
                             for r in c[list(PARAMETERS)].itertuples(index=False)])
        out["valid"] = valid
        out["p_valid"] = valid.astype(float)
        out["tokens_per_second"] = np.where(valid, true_tps * np.exp(self.sigma * z), np.nan)
        return out
