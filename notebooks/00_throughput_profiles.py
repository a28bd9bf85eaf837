# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#   kernelspec: {display_name: Python 3, language: python, name: python3}
# ---

# %% [markdown]
# # 00 — Throughput vs number of GPUs, and the linear fit H(n) = αn + β
#
# SPEC §2 and §7 item 1. The paper measures the training throughput of LoRA fine-tuning of a GLM3-6B and a
# LLaMA2-7B model against the number of GPUs and fits a line **H(n) = αn + β** to the measured points; that
# line is the job's throughput in its scheduling model.
#
# **The paper's measurements are not available**, so our points come from a documented analytical model of
# synchronous data-parallel LoRA training (`spotlab.jobs.profiles`, every constant and its public source in the
# module docstring): FLOPs per token (~4N for LoRA: the frozen weights need no weight gradients), the GPU's
# dense BF16 peak (A100 312, H100 989 TFLOPS), an assumed achieved utilisation (0.40 / 0.35), waiting for
# the slowest GPU each step, the ring all-reduce of the (small) LoRA gradients and a fixed per-step
# overhead. Set `measured_csv` to a CSV with columns `gpus,throughput` to fit and plot your own
# measurements as well.
#
# The fitted lines are the one source of α, β for notebooks 03–07 (`spotlab.jobs.profiles.job_throughput`), in
# the job model's unit: one-GPU-hours of work per hour (raw throughput / single-GPU throughput).

# %% tags=["parameters"]
out_dir = "paper_figures"
quick = False  # the analytical profiles take milliseconds: quick changes nothing
max_gpus = 8  # GPU counts 1..max_gpus (one 8-GPU node by default)
measured_csv = None  # path to a CSV with columns gpus,throughput (your measurements), or None
measured_label = "measured"

# %%
from spotlab.experiments.figures import project_path

out_dir = str(project_path(out_dir))  # relative: under the project root, wherever the notebook runs
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns
from IPython.display import display

from spotlab.jobs import profiles as prof
from spotlab.experiments.figures import saver
from spotlab.experiments.outputs import THROUGHPUT as OUT

sns.set_theme(style="whitegrid", context="notebook")
save = saver(out_dir, OUT)
counts = list(range(1, int(max_gpus) + 1))
setup = prof.TrainSetup()

curves = pd.concat(
    [prof.profile(mk, gk, counts, setup).assign(model=mk, gpu=gk) for mk in prof.MODELS for gk in prof.GPUS],
    ignore_index=True,
)
fits = prof.paper_profiles(counts, setup)
measured = measured_fit = None
if measured_csv is not None:
    measured = prof.load_measured(measured_csv)
    measured_fit = prof.fit_linear(measured, label=measured_label)
print(f"setup: {setup}")
for mk, m in prof.MODELS.items():
    print(f"{m.name}: {m.n_params:.3g} params, LoRA rank {m.lora_rank} on "
          f"{', '.join(t for t, _, _ in m.lora_targets)} -> {m.trainable_params / 1e6:.2f} M trainable, "
          f"{prof.flops_per_token(m, setup) / 1e9:.1f} GFLOP/token, ~{prof.memory_gb(m, setup):.0f} GB per GPU")

# %% [markdown]
# ## Throughput vs GPUs with the fitted line
#
# Points: the analytical model (tokens per second over all GPUs); line: the least-squares fit, with α, β
# and R² in the legend; dotted: ideal linear scaling n·H(1). LoRA trains only a few million parameters, so
# the all-reduce is tiny and the loss of efficiency comes mostly from waiting for the slowest GPU.

# %%
palette = dict(zip(prof.GPUS, sns.color_palette(n_colors=len(prof.GPUS))))
fig, axes = plt.subplots(1, len(prof.MODELS) + (measured is not None), figsize=(5.2 * (len(prof.MODELS) + (measured is not None)), 4.2),
                         squeeze=False)
xs = np.linspace(1, max(counts), 100)
for ax, (mk, m) in zip(axes[0], prof.MODELS.items()):
    for gk, g in prof.GPUS.items():
        c = curves[(curves["model"] == mk) & (curves["gpu"] == gk)]
        fit = fits[(mk, gk)]
        ax.scatter(c["n"], c["throughput"] / 1e3, color=palette[gk], zorder=3, label=f"{g.name} (model)")
        ax.plot(xs, fit.predict(xs) / 1e3, color=palette[gk],
                label=f"fit: α={fit.alpha / 1e3:.2f}k, β={fit.beta / 1e3:.2f}k, R²={fit.r2:.5f}")
        ax.plot(xs, xs * fit.unit_rate / 1e3, ":", color=palette[gk], lw=1)
    ax.set_title(f"{m.name}, LoRA r={m.lora_rank}", fontsize=10)
    ax.set_xlabel("GPUs n")
    ax.set_ylabel("throughput (thousand tokens / s)")
    ax.set_xticks(counts)
    ax.legend(fontsize=7, loc="upper left")
if measured is not None:
    ax = axes[0][-1]
    ax.scatter(measured["n"], measured["throughput"], color="k", zorder=3, label=f"{measured_label} (CSV)")
    xm = np.linspace(measured["n"].min(), measured["n"].max(), 100)
    ax.plot(xm, measured_fit.predict(xm), color="k",
            label=f"fit: α={measured_fit.alpha:.4g}, β={measured_fit.beta:.4g}, R²={measured_fit.r2:.4f}")
    ax.set_title(f"{measured_label} ({measured_csv})", fontsize=10)
    ax.set_xlabel("GPUs n")
    ax.set_ylabel("throughput (CSV unit)")
    ax.legend(fontsize=7, loc="upper left")
fig.tight_layout()
save(fig, curves, OUT.throughput_vs_gpus)
plt.show()

# %% [markdown]
# ## Residuals of the linear fit
#
# Measured (here: modelled) minus fitted throughput, as a percentage of the single-GPU throughput. The
# points bend slightly below a line (efficiency falls as n grows), so the fit over-predicts at both ends and
# under-predicts in the middle — by about 1% of one GPU's throughput.

# %%
res_rows = []
for (mk, gk), fit in fits.items():
    for n, r in zip(fit.counts, fit.residuals):
        res_rows.append({"model": mk, "gpu": gk, "n": n, "residual": r, "residual_pct_of_h1": 100 * r / fit.unit_rate})
if measured_fit is not None:
    for n, r in zip(measured_fit.counts, measured_fit.residuals):
        res_rows.append({"model": measured_label, "gpu": "csv", "n": n, "residual": r,
                         "residual_pct_of_h1": 100 * r / measured_fit.unit_rate})
residuals = pd.DataFrame(res_rows)
fig, ax = plt.subplots(figsize=(7, 3.8))
for (mk, gk), g in residuals.groupby(["model", "gpu"], sort=False):
    ax.plot(g["n"], g["residual_pct_of_h1"], marker="o", ms=4, label=f"{mk} / {gk}")
ax.axhline(0, color="k", lw=0.8)
ax.set_xlabel("GPUs n")
ax.set_ylabel("residual (% of H(1))")
ax.set_title("Residuals of H(n) = αn + β", fontsize=10)
ax.legend(fontsize=8)
fig.tight_layout()
save(fig, residuals, OUT.residuals)
plt.show()

# %% [markdown]
# ## Where the time of a step goes
#
# Seconds per optimiser step on 8 GPUs (or `max_gpus`): compute dominates; the straggler wait grows with n;
# the LoRA all-reduce is well below a millisecond.

# %%
last = curves[curves["n"] == max(counts)].copy()
last["label"] = last["model"] + " / " + last["gpu"]
parts = ["compute_s", "sync_s", "comm_s", "overhead_s"]
fig, ax = plt.subplots(figsize=(7, 3.8))
left = np.zeros(len(last))
for part in parts:
    ax.barh(last["label"], last[part], left=left, label=part.removesuffix("_s"))
    left += last[part].to_numpy()
ax.set_xlabel(f"seconds per step on {max(counts)} GPUs")
ax.legend(fontsize=8, loc="lower right")
fig.tight_layout()
save(fig, last[["model", "gpu", "n", "step_time", *parts]], OUT.step_breakdown)
plt.show()

# %% [markdown]
# ## The fitted α, β and R² — the job model's throughput
#
# `alpha`, `beta`: tokens per second (raw fit); `alpha_norm`, `beta_norm`: the same divided by the
# single-GPU throughput `unit_rate`, i.e. H(n) in one-GPU-hours of work per hour, which is what
# `spotlab.jobs.profiles.job_throughput(model, gpu)` gives notebooks 03–07.

# %%
table = prof.fits_table(fits)
if measured_fit is not None:
    table = pd.concat([table, pd.DataFrame([{"model": measured_label, "gpu": "csv", **measured_fit.as_row()}])],
                      ignore_index=True)
table.to_csv(f"{out_dir}/{OUT.fits.csv}", index=False)
table.to_json(f"{out_dir}/{OUT.fits.json}", orient="records", indent=1)
display(table.round(4))
