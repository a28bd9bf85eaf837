"""The configuration space of a fine-tuning job: 7 parameters and the rules that make a configuration invalid.

The 7 parameters and their values follow the public fine-tuning benchmark data of the CoTune group (IBM's
fine-tuning runs: model, method, GPU model, software version, number of GPUs, batch size, tokens per sample):
3 models x 2 methods x 2 GPU models x 2 software versions x 4 GPU counts x 8 batch sizes x 5 sequence lengths
= 3,840 configurations. A configuration is invalid for one of two reasons:

- **rules** (`rule_violations`): the global batch must split evenly over the GPUs (each data-parallel rank
  gets `batch_size / number_gpus` samples), so `batch_size % number_gpus != 0` is invalid; a job larger than a
  node (8 GPUs) is out of this space;
- **memory** (`spotlab.cotune.perf`): the per-GPU memory the analytical model predicts exceeds the GPU's.

Column names are those of the public schema (`model_name, method, gpu_model, number_gpus, batch_size,
tokens_per_sample`) plus `software_version`, so a real file drops in (`spotlab.cotune.run_history.load_runs`).
"""

from __future__ import annotations

import itertools
from dataclasses import asdict, dataclass, fields
from typing import Any, Iterable, Mapping

import pandas as pd

from ..errors import ConfigError

__all__ = ["ConfigError", "Config", "PARAMETERS", "CATEGORICAL", "NUMERIC", "VALUES", "rule_violations",
           "enumerate_space", "space_frame", "as_config"]


CATEGORICAL = ("model_name", "method", "gpu_model", "software_version")
NUMERIC = ("number_gpus", "batch_size", "tokens_per_sample")
PARAMETERS = CATEGORICAL[:3] + ("software_version",) + NUMERIC

# The values of the published 3,840-configuration space (see module doc); software versions are ours: "v1"
# without FlashAttention and fused kernels, "v2" with them (see `spotlab.cotune.perf.SOFTWARE`).
VALUES: dict[str, tuple[Any, ...]] = {
    "model_name": ("granite-3b-code", "llama2-7b", "granite-13b"),
    "method": ("lora", "full"),
    "gpu_model": ("A100-80GB", "L40S-48GB"),
    "software_version": ("v1", "v2"),
    "number_gpus": (1, 2, 4, 8),
    "batch_size": (1, 2, 4, 8, 16, 32, 64, 128),
    "tokens_per_sample": (512, 1024, 2048, 4096, 8192),
}


@dataclass(frozen=True)
class Config:
    """One complete configuration of a fine-tuning job (field names = the public schema's columns)."""

    model_name: str
    method: str
    gpu_model: str
    software_version: str
    number_gpus: int
    batch_size: int
    tokens_per_sample: int

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def per_gpu_batch(self) -> int:
        """Samples per GPU per step (the data-parallel split of the global batch)."""
        return self.batch_size // self.number_gpus

    def label(self) -> str:
        return (f"{self.model_name}/{self.method}/{self.gpu_model}/{self.software_version} "
                f"{self.number_gpus}gpu b{self.batch_size} s{self.tokens_per_sample}")


def as_config(values: Config | Mapping[str, Any], known: Mapping[str, Iterable[Any]] | None = None) -> Config:
    """A `Config` from a mapping with the 7 parameters; unknown names or (with `known`) values are errors."""
    if isinstance(values, Config):
        return values
    names = {f.name for f in fields(Config)}
    extra = sorted(set(values) - names)
    missing = [n for n in PARAMETERS if n not in values]
    if extra:
        raise ConfigError(f"unknown configuration parameter(s) {extra}; the parameters are {list(PARAMETERS)}")
    if missing:
        raise ConfigError(f"configuration lacks {missing}")
    out = {}
    for n in PARAMETERS:
        v = values[n]
        if n in NUMERIC:
            try:
                iv = int(v)
            except (TypeError, ValueError):
                raise ConfigError(f"{n} must be an integer (got {v!r})") from None
            if iv != v or iv < 1:
                raise ConfigError(f"{n} must be an integer >= 1 (got {v!r})")
            v = iv
        else:
            v = str(v)
        if known is not None and n in known and v not in known[n]:
            raise ConfigError(f"{n}={v!r} is not one of {list(known[n])}")
        out[n] = v
    return Config(**out)


def rule_violations(config: Config | Mapping[str, Any], max_gpus_per_node: int = 8) -> list[str]:
    """Why a configuration is invalid before it runs (empty list: the rules allow it; memory is separate)."""
    c = as_config(config)
    why = []
    if c.batch_size % c.number_gpus:
        why.append(f"batch size {c.batch_size} is not divisible by {c.number_gpus} GPUs")
    if c.number_gpus > max_gpus_per_node:
        why.append(f"{c.number_gpus} GPUs exceed one node ({max_gpus_per_node})")
    return why


def enumerate_space(values: Mapping[str, Iterable[Any]] | None = None, **fixed: Any) -> list[Config]:
    """Every configuration of the space (`VALUES`, or `values`), optionally with some parameters fixed."""
    vals = {k: tuple(v) for k, v in (values or VALUES).items()}
    unknown = sorted(set(fixed) - set(PARAMETERS))
    if unknown:
        raise ConfigError(f"unknown configuration parameter(s) {unknown}; the parameters are {list(PARAMETERS)}")
    for k, v in fixed.items():
        vals[k] = (v,)
    missing = [n for n in PARAMETERS if n not in vals]
    if missing:
        raise ConfigError(f"the space lacks values for {missing}")
    return [as_config(dict(zip(PARAMETERS, combo))) for combo in itertools.product(*(vals[n] for n in PARAMETERS))]


def space_frame(configs: Iterable[Config]) -> pd.DataFrame:
    """Configurations as a DataFrame with the schema's columns (the predictors' input)."""
    return pd.DataFrame([c.as_dict() for c in configs], columns=list(PARAMETERS))
