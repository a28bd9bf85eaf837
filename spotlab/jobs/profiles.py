"""Throughput vs GPU count of data-parallel LoRA fine-tuning, and the linear fit `H(n) = alpha n + beta`
(SPEC §2 and §7 item 1).

The paper fits `H(n) = alpha n + beta` to *measured* throughput of LoRA fine-tuning (a GLM3-6B and a
LLaMA2-7B model) against the GPU count. Those measurements are not available, so the points here come
from a documented analytical model of synchronous data-parallel training (below); a user's measured CSV
(`load_measured`) can replace them. `paper_profiles()` / `job_throughput()` are the one source of the
job model's throughput in notebooks 03-07.

Units: raw throughput is **tokens per second** summed over all GPUs (`profile(...)["throughput"]`,
`LinearFit.alpha/beta` when fitted to a profile; a measured CSV keeps its own unit). The job model
(`spotlab.jobs.job`) counts work in "what one GPU does in one hour": `LinearFit.throughput()` divides by the raw
single-GPU throughput `H_raw(1)` (its `unit_rate`; pass another GPU's rate to count in that GPU's hours), so
`H(1) ~ 1` and `H(n)` is the speed-up in **one-GPU-hours of work per hour**.

One optimiser step on n GPUs, each processing `tokens_per_gpu` tokens:

    compute_s  = flops_per_token * tokens_per_gpu / (peak * mfu)
    sync_s     = compute_s * jitter_cv * E[max of n standard normals]      (wait for the slowest GPU)
    comm_s     = buckets * 2 (n-1) * latency + 2 (n-1)/n * grad_bytes / bandwidth   (ring all-reduce)
    step_time  = compute_s + sync_s + comm_s + overhead_s
    H_raw(n)   = n * tokens_per_gpu / step_time                              (tokens / s)

FLOPs per token: LoRA 4 N + 6 N_lora + 12 L s d (frozen weights skip their weight gradients), full fine-tuning
6 N + 12 L s d (`TrainSetup(method="full")`, model states FSDP-sharded over the n GPUs, 1.5x the all-reduce's
traffic), plus a forward with `recompute=True`; N excludes the input embedding table. GPU peaks are dense BF16
datasheet figures (`GPUS`). DDP all-reduces the trainable gradients in 25 MB buckets, not overlapped with the
backward pass (conservative), over NVLink within a node (per direction) and the node's network per GPU beyond
`gpus_per_node`. Stragglers: e_n, the expected maximum of n standard normals (e_8 = 1.42). Assumptions:
`mfu` 0.40 on A100 and 0.35 on H100, `jitter_cv = 0.03`, per-hop latencies 5 us (NVLink) and 10 us (InfiniBand),
`overhead_s` 50 ms, and optionally utilisation growing with the micro-batch, `mfu(t) = mfu * t / (t +
mfu_half_tokens)` (0 keeps it constant, as in the paper's profiles). The derivation of each term, its sources
and why each assumption: docs/decisions/throughput-profiles.md.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from typing import Iterable, Mapping

import numpy as np
import pandas as pd

from ..errors import ProfileError
from ..input_paths import input_file
from .job import Throughput

__all__ = [
    "ProfileError", "ModelSpec", "GPUSpec", "TrainSetup", "LinearFit", "MODELS", "GPUS",
    "flops_per_token", "memory_gb", "step_breakdown", "trained_params", "achieved_mfu", "METHODS", "profile", "load_measured", "fit_linear",
    "paper_profiles", "job_throughput", "fits_table", "expected_max_normal", "with_setup", "PAPER_COUNTS",
]


# ----------------------------------------------------------------------------------------------------------
# Specs
# ----------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ModelSpec:
    """A decoder-only transformer and its LoRA adapters.

    `lora_targets`: the adapted linear layers of one transformer block as `(name, d_in, d_out)`; each gets
    `rank * (d_in + d_out)` trainable parameters (A: d_in x r, B: r x d_out) [Hu et al. 2021].
    """

    name: str
    n_params: float
    n_layers: int
    hidden: int
    n_heads: int
    vocab_size: int
    lora_rank: int = 8
    lora_targets: tuple[tuple[str, int, int], ...] = ()
    source: str = ""

    def __post_init__(self) -> None:
        if not (self.n_params > 0 and self.n_layers >= 1 and self.hidden >= 1 and self.n_heads >= 1
                and self.vocab_size >= 1 and self.lora_rank >= 1):
            raise ProfileError(f"model {self.name!r}: sizes and LoRA rank must be positive")
        if not self.lora_targets:
            raise ProfileError(f"model {self.name!r}: name at least one LoRA target layer")

    @property
    def trainable_params(self) -> int:
        """LoRA parameters: layers x rank x sum over targets of (d_in + d_out)."""
        return int(self.n_layers * self.lora_rank * sum(i + o for _, i, o in self.lora_targets))

    @property
    def matmul_params(self) -> float:
        """Parameters that take part in matmuls: all but the input embedding table (a lookup)."""
        return float(self.n_params - self.vocab_size * self.hidden)


@dataclass(frozen=True)
class GPUSpec:
    """One GPU type: dense BF16 peak, memory, intra-node (NVLink) and network bandwidth per GPU."""

    name: str
    peak_tflops: float  # dense BF16 tensor-core TFLOPS (no sparsity)
    memory_gb: float
    nvlink_gbps: float  # GB/s, bidirectional per GPU as on the datasheet
    network_gbps: float  # GB/s per GPU across nodes
    gpus_per_node: int = 8
    mfu: float = 0.40  # default achieved utilisation on this GPU (assumption, module docstring)
    nvlink_latency_us: float = 5.0  # per ring hop (assumption)
    network_latency_us: float = 10.0  # per ring hop (assumption)
    source: str = ""

    def __post_init__(self) -> None:
        if not (self.peak_tflops > 0 and self.memory_gb > 0 and self.nvlink_gbps > 0 and self.network_gbps > 0
                and self.gpus_per_node >= 1 and 0 < self.mfu <= 1):
            raise ProfileError(f"GPU {self.name!r}: peak, memory, bandwidths must be > 0 and 0 < mfu <= 1")


@dataclass(frozen=True)
class TrainSetup:
    """How the job trains: tokens per GPU per step, utilisation, overheads (assumptions in the module doc).

    `mfu=None` uses the GPU's default (`GPUSpec.mfu`).
    """

    seq_len: int = 1024
    micro_batch: int = 4  # sequences per GPU per micro-step
    grad_accum: int = 1  # micro-steps per optimiser step
    mfu: float | None = None
    overhead_s: float = 0.05
    jitter_cv: float = 0.03
    grad_bytes: int = 4  # bytes per trainable-parameter gradient in the all-reduce (fp32 adapters)
    bucket_mb: float = 25.0  # PyTorch DDP default bucket size
    recompute: bool = False  # activation (gradient) checkpointing
    flash_attention: bool = True  # no s x s attention matrices kept for the backward pass
    method: str = "lora"  # "lora" (frozen BF16 weights, trained adapters) or "full" (FSDP-sharded, module doc)
    mfu_half_tokens: float = 0.0  # micro-step tokens at which utilisation is half its peak (0: constant)

    def __post_init__(self) -> None:
        ok = (self.seq_len >= 1 and self.micro_batch >= 1 and self.grad_accum >= 1
              and (self.mfu is None or 0 < self.mfu <= 1) and self.overhead_s >= 0 and self.jitter_cv >= 0
              and self.grad_bytes >= 1 and self.bucket_mb > 0 and self.mfu_half_tokens >= 0)
        if not ok:
            raise ProfileError(f"bad training setup {self}: sizes must be >= 1, 0 < mfu <= 1, overheads >= 0")
        if self.method not in METHODS:
            raise ProfileError(f"unknown fine-tuning method {self.method!r}; use one of {', '.join(METHODS)}")

    @property
    def tokens_per_gpu(self) -> int:
        """Tokens one GPU processes per optimiser step."""
        return int(self.seq_len * self.micro_batch * self.grad_accum)


METHODS = ("lora", "full")

_H = 4096
MODELS: dict[str, ModelSpec] = {
    # ChatGLM3-6B (THUDM/chatglm3-6b model card and config.json): 28 layers, hidden 4096, 32 heads,
    # multi-query attention with 2 KV groups of 128 channels (fused QKV: 4096 -> 4096 + 2*2*128 = 4608),
    # SwiGLU FFN 13696 (fused h->4h: 4096 -> 2*13696), padded vocab 65024, untied output layer: 6.24e9
    # parameters. LoRA: rank 8 on `query_key_value`, as in the ChatGLM3 fine-tuning demo / LLaMA-Factory.
    "glm3-6b": ModelSpec(
        "GLM3-6B-like", 6.24e9, 28, _H, 32, 65024, 8, (("query_key_value", _H, _H + 2 * 2 * 128),),
        source="huggingface.co/THUDM/chatglm3-6b (config.json: num_layers 28, hidden_size 4096, "
               "ffn_hidden_size 13696, multi_query_group_num 2, kv_channels 128, padded_vocab_size 65024)",
    ),
    # Llama 2 7B (meta-llama/Llama-2-7b-hf model card and config.json; Touvron et al. 2023, arXiv:2307.09288
    # Table 1): 6.74e9 parameters, 32 layers, hidden 4096, 32 heads, FFN 11008, vocab 32000. LoRA: rank 8
    # on q_proj and v_proj, the PEFT / LLaMA-Factory default for LLaMA.
    "llama2-7b": ModelSpec(
        "LLaMA2-7B-like", 6.74e9, 32, _H, 32, 32000, 8, (("q_proj", _H, _H), ("v_proj", _H, _H)),
        source="huggingface.co/meta-llama/Llama-2-7b-hf (config.json: num_hidden_layers 32, hidden_size 4096, "
               "intermediate_size 11008, vocab_size 32000); arXiv:2307.09288",
    ),
}

GPUS: dict[str, GPUSpec] = {
    # NVIDIA A100 Tensor Core GPU datasheet (A100 80GB SXM): BF16 312 TFLOPS dense (624 with sparsity),
    # 80 GB HBM2e, NVLink 600 GB/s. DGX A100 user guide: 8 GPUs per node, 8x 200 Gb/s HDR InfiniBand
    # (one per GPU: 25 GB/s).
    "a100": GPUSpec("A100-SXM4-80GB", 312.0, 80.0, 600.0, 25.0, 8, mfu=0.40,
                    source="NVIDIA A100 datasheet; NVIDIA DGX A100 user guide"),
    # NVIDIA H100 Tensor Core GPU datasheet (H100 SXM): BF16 1,979 TFLOPS *with sparsity* = 989 dense,
    # 80 GB HBM3, NVLink 900 GB/s. DGX H100 user guide: 8 GPUs per node, 8x 400 Gb/s NDR InfiniBand
    # (ConnectX-7, one per GPU: 50 GB/s).
    "h100": GPUSpec("H100-SXM5-80GB", 989.0, 80.0, 900.0, 50.0, 8, mfu=0.35,
                    source="NVIDIA H100 datasheet; NVIDIA DGX H100 user guide"),
}


def _model(model: str | ModelSpec) -> ModelSpec:
    if isinstance(model, ModelSpec):
        return model
    key = str(model).lower()
    if key not in MODELS:
        raise ProfileError(f"unknown model {model!r}; use one of {', '.join(MODELS)} or pass a ModelSpec")
    return MODELS[key]


def _gpu(gpu: str | GPUSpec) -> GPUSpec:
    if isinstance(gpu, GPUSpec):
        return gpu
    key = str(gpu).lower()
    if key not in GPUS:
        raise ProfileError(f"unknown GPU {gpu!r}; use one of {', '.join(GPUS)} or pass a GPUSpec")
    return GPUS[key]


# ----------------------------------------------------------------------------------------------------------
# Analytical model
# ----------------------------------------------------------------------------------------------------------


@lru_cache(maxsize=None)
def expected_max_normal(n: int) -> float:
    """E[max of n i.i.d. standard normals] by numerical integration (0 for n = 1)."""
    if n < 1:
        raise ProfileError(f"need n >= 1 GPUs (got {n})")
    if n == 1:
        return 0.0
    from scipy.special import ndtr

    x = np.linspace(-12.0, 12.0, 48001)
    pdf = np.exp(-0.5 * x * x) / math.sqrt(2 * math.pi)
    return float(np.trapezoid(x * n * pdf * ndtr(x) ** (n - 1), x))


def flops_per_token(model: str | ModelSpec, setup: TrainSetup | None = None) -> float:
    """Training FLOPs per token: LoRA 4 N + 6 N_lora + 12 L s d, full 6 N + 12 L s d (+ recompute), module doc."""
    m, s = _model(model), setup or TrainSetup()
    attn = 4.0 * m.n_layers * s.seq_len * m.hidden  # forward QK^T and AV
    fwd = 2.0 * m.matmul_params + attn
    bwd_act = 2.0 * m.matmul_params + 2 * attn  # activation gradients
    if s.method == "full":
        train = 2.0 * m.matmul_params  # weight gradients of every matmul
    else:
        train = 6.0 * m.trainable_params  # frozen weights need no dW; the adapters are trained
    return fwd + bwd_act + train + (fwd if s.recompute else 0.0)


def trained_params(model: str | ModelSpec, setup: TrainSetup | None = None) -> float:
    """Parameters whose gradients are synchronised: all of them (full) or the adapters (LoRA)."""
    m, s = _model(model), setup or TrainSetup()
    return float(m.n_params) if s.method == "full" else float(m.trainable_params)


def achieved_mfu(gpu: str | GPUSpec, setup: TrainSetup | None = None) -> float:
    """Utilisation of the GPU's peak at this setup's micro-step size (module doc)."""
    g, s = _gpu(gpu), setup or TrainSetup()
    mfu = g.mfu if s.mfu is None else s.mfu
    if s.mfu_half_tokens > 0:
        t = s.seq_len * s.micro_batch
        mfu *= t / (t + s.mfu_half_tokens)
    return mfu


def memory_gb(model: str | ModelSpec, setup: TrainSetup | None = None, n: int = 1) -> float:
    """Rough peak memory per GPU (GB) on n GPUs. LoRA: BF16 frozen weights, fp32 adapters with gradients and
    Adam states (16 bytes per trainable parameter); full: 16 bytes per parameter sharded over the n GPUs
    (docs/decisions/throughput-profiles.md). Plus activations per layer `s b d (34 + 5 a s / d)` bytes
    [Korthikanti et al. 2022, "Reducing Activation Recomputation in Large Transformer Models", arXiv:2205.05198
    §4] (without the `5 a s / d` attention-matrix term under FlashAttention; only the `2 s b d` layer inputs
    kept under recomputation)."""
    m, s = _model(model), setup or TrainSetup()
    if int(n) != n or n < 1:
        raise ProfileError(f"GPU count must be an integer >= 1 (got {n})")
    sbh = s.seq_len * s.micro_batch * m.hidden
    if s.recompute:
        act = 2.0 * sbh * m.n_layers
    else:
        per = 34.0 + (0.0 if s.flash_attention else 5.0 * m.n_heads * s.seq_len / m.hidden)
        act = sbh * per * m.n_layers
    states = 16.0 * m.n_params / int(n) if s.method == "full" else 2.0 * m.n_params + 16.0 * m.trainable_params
    return (states + act) / 1e9


def checkpoint_gb(model: str | ModelSpec = "llama2-7b", method: str = "lora") -> float:
    """GB a checkpoint carries to another zone: the trained parameters with their Adam state (a bf16 copy, fp32
    master weights and two fp32 moments: 14 bytes each). Full fine-tuning moves the whole model's (about 94 GB
    for LLaMA-2-7B); LoRA only its adapters' (well under a GB): the frozen base is fetched again where the job
    lands, as at its first start."""
    if method not in ("lora", "full"):
        raise ProfileError(f"method must be 'lora' or 'full', got {method!r}")
    m = _model(model)
    return 14.0 * float(m.n_params if method == "full" else m.trainable_params) / 1e9


def step_breakdown(model: str | ModelSpec, gpu: str | GPUSpec, n: int, setup: TrainSetup | None = None) -> dict:
    """Time of one optimiser step on n GPUs, split into compute, straggler wait, all-reduce and overhead."""
    m, g, s = _model(model), _gpu(gpu), setup or TrainSetup()
    if int(n) != n or n < 1:
        raise ProfileError(f"GPU count must be an integer >= 1 (got {n})")
    n = int(n)
    compute = flops_per_token(m, s) * s.tokens_per_gpu / (g.peak_tflops * 1e12 * achieved_mfu(g, s))
    sync = compute * s.jitter_cv * expected_max_normal(n)
    grad = trained_params(m, s) * s.grad_bytes
    buckets = max(1, math.ceil(grad / (s.bucket_mb * 1e6)))
    if s.method == "full":  # FSDP: reduce-scatter + two all-gathers = 1.5 all-reduces of the same bytes
        grad *= 1.5
    if n == 1:
        comm = 0.0
    elif n <= g.gpus_per_node:
        comm = buckets * 2 * (n - 1) * g.nvlink_latency_us * 1e-6 + 2 * (n - 1) / n * grad / (g.nvlink_gbps / 2 * 1e9)
    else:
        comm = buckets * 2 * (n - 1) * g.network_latency_us * 1e-6 + 2 * (n - 1) / n * grad / (g.network_gbps * 1e9)
    step = compute + sync + comm + s.overhead_s
    return {"n": n, "step_time": step, "compute_s": compute, "sync_s": sync, "comm_s": comm,
            "overhead_s": s.overhead_s, "throughput": n * s.tokens_per_gpu / step}


def profile(model: str | ModelSpec, gpu: str | GPUSpec, counts: Iterable[int] = range(1, 9),
            setup: TrainSetup | None = None, check_memory: bool = True) -> pd.DataFrame:
    """Analytical throughput profile: one row per GPU count with `n, throughput` (tokens/s over all GPUs),
    `step_time, compute_s, sync_s, comm_s, overhead_s` (s per step), `per_gpu` (tokens/s per GPU),
    `efficiency` (per-GPU throughput / single-GPU throughput) and `speedup` (H(n)/H(1), i.e. one-GPU-hours
    of work per hour). Raises if the job does not fit in GPU memory (`memory_gb`)."""
    m, g, s = _model(model), _gpu(gpu), setup or TrainSetup()
    counts = sorted({int(c) for c in counts})
    if not counts:
        raise ProfileError("give at least one GPU count")
    if check_memory and memory_gb(m, s) > g.memory_gb:
        raise ProfileError(f"{m.name} with micro-batch {s.micro_batch} x {s.seq_len} tokens needs ~"
                           f"{memory_gb(m, s):.0f} GB per GPU but {g.name} has {g.memory_gb:g} GB; use a smaller "
                           "micro-batch (more grad_accum) or recompute=True")
    rows = pd.DataFrame([step_breakdown(m, g, c, s) for c in counts])
    h1 = step_breakdown(m, g, 1, s)["throughput"]
    rows["per_gpu"] = rows["throughput"] / rows["n"]
    rows["efficiency"] = rows["per_gpu"] / h1
    rows["speedup"] = rows["throughput"] / h1
    rows.attrs.update(model=m.name, gpu=g.name, unit="tokens/s", unit_rate=h1)
    return rows[["n", "throughput", "step_time", "compute_s", "sync_s", "comm_s", "overhead_s", "per_gpu",
                 "efficiency", "speedup"]]


# ----------------------------------------------------------------------------------------------------------
# Measured profiles and the linear fit
# ----------------------------------------------------------------------------------------------------------


def load_measured(csv: str | Path | pd.DataFrame) -> pd.DataFrame:
    """A user's measured profile: a CSV (or DataFrame) with columns `gpus, throughput` (any consistent
    throughput unit, e.g. tokens/s or samples/h), one row per GPU count. Returns columns `n, throughput`
    sorted by n. Raises `ProfileError` for a missing file or column, non-integer or non-positive GPU
    counts, non-positive or non-numeric throughput, duplicate GPU counts or fewer than 2 points."""
    if isinstance(csv, pd.DataFrame):
        raw, where = csv.copy(), "measured profile"
    else:
        path = input_file(csv, "a measured throughput CSV (columns gpus, throughput)", ProfileError)
        try:
            raw = pd.read_csv(path)
        except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
            raise ProfileError(f"{path}: cannot read as CSV ({exc})") from None
        where = str(path)
    raw.columns = [str(c).strip().lower() for c in raw.columns]
    missing = [c for c in ("gpus", "throughput") if c not in raw.columns]
    if missing:
        raise ProfileError(f"{where}: missing column(s) {', '.join(missing)}; need 'gpus,throughput' "
                           f"(found {', '.join(raw.columns) or 'none'})")
    n = pd.to_numeric(raw["gpus"], errors="coerce")
    h = pd.to_numeric(raw["throughput"], errors="coerce")
    bad = n.isna() | h.isna() | ~np.isfinite(h.fillna(0))
    if bad.any():
        raise ProfileError(f"{where}: non-numeric or missing values in rows {list(raw.index[bad] + 2)} "
                           "(line numbers, header = 1)")
    if ((n < 1) | (n != np.round(n))).any():
        raise ProfileError(f"{where}: GPU counts must be integers >= 1 (got {sorted(n.unique().tolist())})")
    if (h <= 0).any():
        raise ProfileError(f"{where}: throughput must be > 0 (got {h[h <= 0].tolist()} "
                           f"for {n[h <= 0].astype(int).tolist()} GPUs)")
    dup = n[n.duplicated()].astype(int).unique().tolist()
    if dup:
        raise ProfileError(f"{where}: duplicate GPU counts {dup}; give one (e.g. averaged) throughput per count")
    if len(n) < 2:
        raise ProfileError(f"{where}: need at least 2 GPU counts to fit H(n) = alpha n + beta (got {len(n)})")
    out = pd.DataFrame({"n": n.astype(int).to_numpy(), "throughput": h.astype(float).to_numpy()})
    return out.sort_values("n", ignore_index=True)


@dataclass(frozen=True)
class LinearFit:
    """Least-squares fit `H(n) = alpha n + beta` of raw throughput vs GPU count.

    `residuals` are measured - fitted at `counts`; `unit_rate` is the raw single-GPU throughput the job
    model's work unit is based on (the point at n = 1 if there is one, else alpha + beta).
    """

    alpha: float
    beta: float
    r2: float
    residuals: tuple[float, ...]
    n_points: int
    counts: tuple[int, ...] = ()
    unit_rate: float = field(default=float("nan"))
    label: str = ""

    def __post_init__(self) -> None:
        if not np.isfinite(self.unit_rate):
            object.__setattr__(self, "unit_rate", float(self.alpha + self.beta))
        if not self.unit_rate > 0:
            raise ProfileError(f"{self.label or 'fit'}: single-GPU throughput {self.unit_rate:g} must be > 0")

    def predict(self, n: np.ndarray | int) -> np.ndarray:
        """Fitted raw throughput alpha n + beta (no H(0) = 0 special case)."""
        return self.alpha * np.asarray(n, dtype=float) + self.beta

    def throughput(self, unit_rate: float | None = None) -> Throughput:
        """The job model's `Throughput(alpha, beta)` in one-GPU-hours of work per hour: the fit divided by
        `unit_rate` (default: this profile's own single-GPU throughput)."""
        u = self.unit_rate if unit_rate is None else float(unit_rate)
        if not (np.isfinite(u) and u > 0):
            raise ProfileError(f"unit rate must be > 0 (got {unit_rate})")
        return Throughput(self.alpha / u, self.beta / u)

    def as_row(self) -> dict:
        tp = self.throughput()
        return {"alpha": self.alpha, "beta": self.beta, "r2": self.r2, "n_points": self.n_points,
                "unit_rate": self.unit_rate, "alpha_norm": tp.alpha, "beta_norm": tp.beta,
                "max_abs_residual_pct": float(np.max(np.abs(self.residuals)) / self.unit_rate * 100)}


def fit_linear(df: pd.DataFrame, unit_rate: float | None = None, label: str = "") -> LinearFit:
    """Least-squares `H(n) = alpha n + beta` over the rows of `df` (columns `n` or `gpus`, and `throughput`),
    with R^2 and residuals. Needs >= 2 distinct GPU counts."""
    col = "n" if "n" in df.columns else "gpus" if "gpus" in df.columns else None
    if col is None or "throughput" not in df.columns:
        raise ProfileError(f"fit_linear needs columns 'n' (or 'gpus') and 'throughput' (got {list(df.columns)})")
    x = np.asarray(df[col], dtype=float)
    y = np.asarray(df["throughput"], dtype=float)
    if not (np.all(np.isfinite(x)) and np.all(np.isfinite(y))):
        raise ProfileError("fit_linear: GPU counts and throughput must be finite")
    if np.unique(x).size < 2:
        raise ProfileError(f"fit_linear: need at least 2 distinct GPU counts (got {np.unique(x).tolist()})")
    design = np.column_stack([x, np.ones_like(x)])
    (alpha, beta), *_ = np.linalg.lstsq(design, y, rcond=None)
    resid = y - (alpha * x + beta)
    ss_res = float(resid @ resid)
    ss_tot = float(((y - y.mean()) ** 2).sum())
    r2 = 1.0 - ss_res / ss_tot if ss_tot > 0 else (1.0 if ss_res <= 1e-12 * max(1.0, float(y @ y)) else 0.0)
    if unit_rate is None:
        ones = y[x == 1]
        unit_rate = float(ones[0]) if ones.size else float("nan")
    return LinearFit(float(alpha), float(beta), float(r2), tuple(float(r) for r in resid), int(x.size),
                     tuple(int(c) for c in x), float(unit_rate), label)


# ----------------------------------------------------------------------------------------------------------
# The paper's four profiles: the one source of alpha, beta for notebooks 03-07
# ----------------------------------------------------------------------------------------------------------

PAPER_COUNTS = tuple(range(1, 9))


@lru_cache(maxsize=None)
def _paper_profiles(counts: tuple[int, ...], setup: TrainSetup) -> dict[tuple[str, str], LinearFit]:
    fits = {}
    for mk in MODELS:
        for gk in GPUS:
            df = profile(mk, gk, counts, setup)
            fits[(mk, gk)] = fit_linear(df, unit_rate=df.attrs["unit_rate"], label=f"{mk} on {gk}")
    return fits


def paper_profiles(counts: Iterable[int] = PAPER_COUNTS, setup: TrainSetup | None = None
                   ) -> dict[tuple[str, str], LinearFit]:
    """The four (model, GPU) linear fits {("glm3-6b"|"llama2-7b", "a100"|"h100"): LinearFit} of the
    analytical profiles over `counts` (default 1..8 GPUs, one node). Raw alpha, beta in tokens/s; their
    `.throughput()` is the job model's H(n) in one-GPU-hours of work per hour."""
    return dict(_paper_profiles(tuple(sorted({int(c) for c in counts})), setup or TrainSetup()))


def job_throughput(model: str = "llama2-7b", gpu: str = "a100", measured: str | Path | pd.DataFrame | None = None,
                   setup: TrainSetup | None = None) -> Throughput:
    """The job model's `Throughput(alpha, beta)` (one-GPU-hours of work per hour) for `model` on `gpu`:
    from `paper_profiles()`, or from a user's measured CSV when `measured` is given."""
    if measured is not None:
        return fit_linear(load_measured(measured)).throughput()
    key = (str(model).lower(), str(gpu).lower())
    _model(key[0]), _gpu(key[1])  # clear errors for unknown keys
    return paper_profiles(setup=setup)[key].throughput()


def fits_table(fits: Mapping[tuple[str, str], LinearFit]) -> pd.DataFrame:
    """One row per fit: model, gpu, raw alpha/beta (tokens/s), R^2, normalised alpha/beta for the job model."""
    rows = [{"model": mk, "gpu": gk, **fit.as_row()} for (mk, gk), fit in fits.items()]
    return pd.DataFrame(rows)


def with_setup(setup: TrainSetup | None = None, **changes) -> TrainSetup:
    """A copy of `setup` (default `TrainSetup()`) with some fields changed, e.g. `with_setup(mfu=0.3)`."""
    return replace(setup or TrainSetup(), **changes)
