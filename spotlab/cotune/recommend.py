"""Fill in a fine-tuning job's missing parameters from configuration knowledge.

A user names what defines the job (e.g. model, method, tokens per sample, batch size); the recommender
enumerates the completions of that partial configuration in the space, asks a knowledge source
(`spotlab.cotune.knowledge`) which are valid and how fast they run, and ranks the valid ones by an objective:

- `"fewest_gpus"`: the fewest GPUs predicted valid (try 1, 2, 4, 8 ...), then the best predicted throughput
  among those — what a shared cluster wants (small jobs start sooner);
- `"throughput_per_gpu"`: the best predicted tokens per second per GPU, i.e. per GPU-hour paid;
- `"throughput"`: the best predicted tokens per second (fastest job, whatever it costs).

`job_throughput` turns the predicted throughput over GPU counts into spotlab's job model `Throughput(alpha,
beta)` (a linear fit, as for the measured profiles), so a recommended configuration can be scheduled on the
spot market by the rest of spotlab.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

import numpy as np
import pandas as pd

from ..jobs.job import Throughput
from ..jobs.profiles import fit_linear
from .knowledge import Knowledge
from .space import NUMERIC, PARAMETERS, VALUES, Config, as_config, enumerate_space, space_frame
from ..errors import ConfigError

__all__ = ["OBJECTIVES", "Recommendation", "Recommender", "rank"]

OBJECTIVES = ("fewest_gpus", "throughput_per_gpu", "throughput")


def rank(assessed: pd.DataFrame, objective: str = "throughput_per_gpu") -> pd.DataFrame:
    """The valid rows of an assessment, best first under `objective` (stable for equal scores)."""
    if objective not in OBJECTIVES:
        raise ConfigError(f"unknown objective {objective!r}; use one of {', '.join(OBJECTIVES)}")
    v = assessed[assessed["valid"].astype(bool) & np.isfinite(assessed["tokens_per_second"])].copy()
    v["tokens_per_gpu"] = v["tokens_per_second"] / v["number_gpus"]
    if objective == "fewest_gpus":
        keys, asc = ["number_gpus", "tokens_per_second"], [True, False]
    elif objective == "throughput_per_gpu":
        keys, asc = ["tokens_per_gpu", "tokens_per_second"], [False, False]
    else:
        keys, asc = ["tokens_per_second", "number_gpus"], [False, True]
    return v.sort_values(keys, ascending=asc, kind="mergesort")


@dataclass(frozen=True)
class Recommendation:
    """The chosen configuration, what the knowledge source expects of it, and the ranked alternatives."""

    config: Config
    p_valid: float
    tokens_per_second: float
    objective: str
    source: str
    ranked: pd.DataFrame = field(repr=False, compare=False)


@dataclass(frozen=True)
class Recommender:
    """Completes partial configurations using one knowledge source over a configuration space."""

    knowledge: Knowledge
    values: Mapping[str, tuple[Any, ...]] = field(default_factory=lambda: dict(VALUES))

    def candidates(self, partial: Mapping[str, Any]) -> pd.DataFrame:
        """Every completion of `partial` in the space, assessed by the knowledge source."""
        unknown = sorted(set(partial) - set(PARAMETERS))
        if unknown:
            raise ConfigError(f"unknown parameter(s) {unknown}; the parameters are {list(PARAMETERS)}")
        # a number given as text (the command line's KEY=VALUE) is that number
        partial = {k: int(v) if k in NUMERIC and isinstance(v, str) and v.strip().isdigit() else v
                   for k, v in partial.items()}
        for k, v in partial.items():
            if v not in self.values[k]:
                raise ConfigError(f"{k}={v!r} is not in the space; choose one of {list(self.values[k])}")
        return self.knowledge.assess(space_frame(enumerate_space(self.values, **partial)))

    def recommend(self, partial: Mapping[str, Any], objective: str = "throughput_per_gpu") -> Recommendation:
        """The best completion of `partial`; raises `ConfigError` if the source predicts none valid."""
        ranked = rank(self.candidates(partial), objective)
        if ranked.empty:
            raise ConfigError(f"no configuration completing {dict(partial)} is predicted valid by the "
                              f"{getattr(self.knowledge, 'name', 'knowledge')} source (try fewer fixed parameters)")
        best = ranked.iloc[0]
        return Recommendation(as_config({k: best[k] for k in PARAMETERS}), float(best["p_valid"]),
                              float(best["tokens_per_second"]), objective,
                              getattr(self.knowledge, "name", "knowledge"), ranked.reset_index(drop=True))

    def job_throughput(self, config: Config | Mapping[str, Any]) -> Throughput:
        """spotlab's job model `Throughput(alpha, beta)` for `config`'s job over the GPU counts the source
        predicts valid: a linear fit of predicted tokens/s vs GPUs, in units of the fit's single-GPU rate
        (one-GPU-hours of work per hour, as `spotlab.jobs.profiles.LinearFit.throughput`)."""
        c = as_config(config)
        fixed = {k: v for k, v in c.as_dict().items() if k != "number_gpus"}
        a = self.candidates(fixed)
        a = a[a["valid"].astype(bool) & np.isfinite(a["tokens_per_second"])]
        if a["number_gpus"].nunique() < 2:
            raise ConfigError(f"{c.label()}: fewer than 2 GPU counts predicted valid "
                              f"({sorted(a['number_gpus'].unique().tolist())}), so no H(n) = alpha n + beta fit")
        df = pd.DataFrame({"n": a["number_gpus"].to_numpy(), "throughput": a["tokens_per_second"].to_numpy()})
        return fit_linear(df, label=c.label()).throughput()  # unit: the 1-GPU point, else alpha + beta
