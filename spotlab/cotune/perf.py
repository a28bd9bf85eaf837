"""The analytical ground truth of a configuration: does it fit, and how fast does it run.

It is the throughput-profile model of `spotlab.jobs.profiles` (FLOPs per token, GPU peak, achieved utilisation,
straggler wait, all-reduce, per-step overhead; memory of weights, optimiser state and activations), evaluated
at one configuration: the global batch splits into `batch_size / number_gpus` samples of `tokens_per_sample`
tokens per GPU and step, LoRA or full fine-tuning (FSDP-sharded), one software version. One source of truth:
the run generator (`spotlab.cotune.run_history`) samples measurements around it and the cluster simulator takes its
"true" validity and throughput from it.

Constants beyond `spotlab.jobs.profiles` (each an **assumption** unless a source is named):

- Models. `llama2-7b` is `profiles.MODELS["llama2-7b"]`. `granite-3b-code` is taken as a 3.5e9-parameter
  decoder of 32 layers, hidden 2560, 32 heads, vocabulary 49,152 (assumption: a LLaMA-shaped 3B code model);
  `granite-13b` as LLaMA-2-13B's published shape (Touvron et al. 2023, arXiv:2307.09288 Table 1 and the
  meta-llama/Llama-2-13b-hf config: 13.0e9 parameters, 40 layers, hidden 5120, 40 heads, vocabulary 32,000).
  LoRA rank 8 on the query and value projections for all three (the PEFT default for LLaMA-style models).
- GPUs. A100-80GB is `profiles.GPUS["a100"]`. L40S-48GB: 362 TFLOPS dense BF16, 48 GB GDDR6, no NVLink —
  GPUs talk over PCIe Gen4 x16 (64 GB/s both directions) [NVIDIA L40S datasheet], 4 per server and 200 Gb/s
  (25 GB/s) per GPU between servers (assumption: a common 4-GPU PCIe server); achieved utilisation 0.30
  (assumption: GDDR6 gives it less than half the A100's memory bandwidth, so small steps stay memory-bound).
- Software versions: `v1` keeps the s x s attention matrices for the backward pass (no FlashAttention);
  `v2` uses FlashAttention [Dao et al. 2022, arXiv:2205.14135] and fused kernels: no attention matrices in
  memory and 15% more utilisation (assumption).
- Utilisation vs micro-batch: half of the peak utilisation at 1,024 tokens per GPU and micro-step (assumption;
  `TrainSetup.mfu_half_tokens`).
- Usable memory: the GPU's memory minus 2.5 GB for the CUDA context and allocator fragmentation (assumption).
- Flaky out-of-memory: a run that needs more than 90% of the usable memory fails with a probability rising
  linearly to 50% at 100% (assumption: allocator fragmentation differs between runs); above 100% it always fails.
- Measurement noise: throughput varies from run to run by a log-normal factor with sigma 4% (assumption).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any, Mapping

import numpy as np

from ..jobs import profiles
from ..jobs.profiles import GPUSpec, ModelSpec, TrainSetup
from .space import Config, as_config, rule_violations
from ..errors import ConfigError

__all__ = ["MODELS", "GPUS", "SOFTWARE", "Software", "PerfModel", "DEFAULT"]

_QV = lambda h: (("q_proj", h, h), ("v_proj", h, h))  # noqa: E731 - LoRA targets of a LLaMA-shaped block

MODELS: dict[str, ModelSpec] = {
    "granite-3b-code": ModelSpec("granite-3b-code-like", 3.5e9, 32, 2560, 32, 49152, 8, _QV(2560),
                                 source="assumption: LLaMA-shaped 3B decoder (module doc)"),
    "llama2-7b": profiles.MODELS["llama2-7b"],
    "granite-13b": ModelSpec("granite-13b-like", 13.0e9, 40, 5120, 40, 32000, 8, _QV(5120),
                             source="LLaMA-2-13B shape, arXiv:2307.09288 Table 1 (module doc)"),
}

GPUS: dict[str, GPUSpec] = {
    "A100-80GB": profiles.GPUS["a100"],
    "L40S-48GB": GPUSpec("L40S-48GB", 362.0, 48.0, 64.0, 25.0, 4, mfu=0.30,
                         source="NVIDIA L40S datasheet (BF16 362 TFLOPS dense, 48 GB, PCIe Gen4 x16)"),
}


@dataclass(frozen=True)
class Software:
    """What a software version changes: attention memory and kernel efficiency."""

    flash_attention: bool
    mfu_scale: float


SOFTWARE: dict[str, Software] = {"v1": Software(False, 1.0), "v2": Software(True, 1.15)}


@dataclass(frozen=True)
class PerfModel:
    """Ground truth of the configuration space (assumptions in the module doc).

    `memory_gb`, `fits`, `oom_probability`, `throughput` are deterministic; `measure` draws one run.
    """

    reserve_gb: float = 2.5
    flaky_from: float = 0.90
    flaky_max: float = 0.5
    noise_sigma: float = 0.04
    mfu_half_tokens: float = 1024.0
    overhead_s: float = 0.05

    def __post_init__(self) -> None:
        if not (self.reserve_gb >= 0 and 0 < self.flaky_from <= 1 and 0 <= self.flaky_max <= 1
                and self.noise_sigma >= 0 and self.mfu_half_tokens >= 0 and self.overhead_s >= 0):
            raise ConfigError(f"bad performance model {self}")

    # ---------------------------------------------------------------------------------------------- pieces
    def specs(self, config: Config | Mapping[str, Any]) -> tuple[Config, ModelSpec, GPUSpec, TrainSetup]:
        """The profile model's inputs for a configuration (per-GPU batch = batch_size / number_gpus)."""
        c = as_config(config, {"model_name": MODELS, "gpu_model": GPUS, "software_version": SOFTWARE,
                               "method": profiles.METHODS})
        m, g, sw = MODELS[c.model_name], GPUS[c.gpu_model], SOFTWARE[c.software_version]
        setup = TrainSetup(seq_len=c.tokens_per_sample, micro_batch=max(1, c.per_gpu_batch), grad_accum=1,
                           mfu=min(1.0, g.mfu * sw.mfu_scale), overhead_s=self.overhead_s,
                           grad_bytes=2 if c.method == "full" else 4, flash_attention=sw.flash_attention,
                           method=c.method, mfu_half_tokens=self.mfu_half_tokens)
        return c, m, g, setup

    def memory_gb(self, config: Config | Mapping[str, Any]) -> float:
        """Peak memory per GPU (GB) the configuration needs."""
        return _memory_gb(self, as_config(config))

    def usable_gb(self, gpu_model: str) -> float:
        if gpu_model not in GPUS:
            raise ConfigError(f"unknown GPU model {gpu_model!r}; known: {list(GPUS)}")
        return GPUS[gpu_model].memory_gb - self.reserve_gb

    def memory_ratio(self, config: Config | Mapping[str, Any]) -> float:
        """Needed / usable memory: <= 1 fits (maybe flakily above `flaky_from`), > 1 does not."""
        c = as_config(config)
        return self.memory_gb(c) / self.usable_gb(c.gpu_model)

    def valid_by_rules(self, config: Config | Mapping[str, Any]) -> bool:
        return not rule_violations(config)

    def fits(self, config: Config | Mapping[str, Any]) -> bool:
        """Valid by the rules and within memory (may still fail flakily near the limit)."""
        return self.valid_by_rules(config) and self.memory_ratio(config) <= 1.0

    def oom_probability(self, config: Config | Mapping[str, Any]) -> float:
        """Chance that one run of the configuration fails (1 for rule violations and over-memory)."""
        if not self.valid_by_rules(config):
            return 1.0
        r = self.memory_ratio(config)
        if r > 1.0:
            return 1.0
        if r <= self.flaky_from or self.flaky_from >= 1.0:
            return 0.0
        return self.flaky_max * (r - self.flaky_from) / (1.0 - self.flaky_from)

    def throughput(self, config: Config | Mapping[str, Any]) -> float:
        """Noise-free dataset tokens per second over all GPUs if it runs (NaN if invalid by the rules)."""
        return _throughput(self, as_config(config))

    # ---------------------------------------------------------------------------------------------- a run
    def measure(self, config: Config | Mapping[str, Any], rng: np.random.Generator) -> tuple[bool, float]:
        """One run: (is_valid, measured tokens/s); an invalid run has NaN throughput."""
        c = as_config(config)
        if rng.random() < self.oom_probability(c):
            return False, math.nan
        return True, self.throughput(c) * float(np.exp(rng.normal(0.0, self.noise_sigma)))

    def with_(self, **changes: Any) -> "PerfModel":
        return replace(self, **changes)


@lru_cache(maxsize=65536)
def _throughput(perf: PerfModel, config: Config) -> float:  # pure; cached: schedulers ask the same configs often
    c, m, g, setup = perf.specs(config)
    if rule_violations(c):
        return math.nan
    return float(profiles.step_breakdown(m, g, c.number_gpus, setup)["throughput"])


@lru_cache(maxsize=65536)
def _memory_gb(perf: PerfModel, config: Config) -> float:
    c, m, _, setup = perf.specs(config)
    return profiles.memory_gb(m, setup, c.number_gpus)


DEFAULT = PerfModel()
