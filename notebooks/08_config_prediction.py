# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#   kernelspec: {display_name: Python 3, language: python, name: python3}
# ---

# %% [markdown]
# # 08 — CoTune: predicting validity and throughput of fine-tuning configurations
#
# SPEC §8. CoTune learns *configuration knowledge* from historical fine-tuning runs over 7 parameters
# (model, method, GPU model, software version, number of GPUs, batch size, tokens per sample): will a
# configuration run at all (validity: no rule violation, no out-of-memory), and how many tokens per second
# will it process. The seed reports, from 5,000 configurations executed over 220 days: validity error 4.2%,
# performance error 9.4%, diminishing returns with ~11% error at 600 samples, and configurations that differ
# up to 40x in performance.
#
# **CoTune's run history is not available**, so by default the history here is generated
# (`spotlab.cotune.run_history.generate_runs`): configurations drawn uniformly with replacement from the published
# 3,840-configuration space, each measured once on our analytical ground truth (`spotlab.cotune.perf`:
# memory and step-time model of `spotlab.jobs.profiles`, flaky out-of-memory near the memory limit, log-normal
# throughput noise `noise_sigma`). Errors measured on it say how learnable *our* model's space is, not what
# CoTune's regression achieves on real clusters. Set `runs_csv` to a file in the public schema (`model_name,
# method, gpu_model, number_gpus, batch_size, tokens_per_sample, is_valid, dataset_tokens_per_second`,
# optionally `software_version`) to run everything on real runs instead.
#
# Predictors (`spotlab.cotune.config_models`): gradient-boosted trees (scikit-learn `HistGradientBoosting*`) on
# the 7 parameters only — one-hot categoricals, log2 of the numeric ones and derived per-GPU quantities; the
# known rules (batch divisible by the GPUs) always override the learned validity. Validity error = 1 −
# accuracy; throughput error = mean absolute percentage error over runs measured valid. Test runs are always
# **held-out configurations** (no configuration has runs on both sides of the split).

# %% tags=["parameters"]
out_dir = "paper_figures"
quick = False  # quick: 1,500 runs, 2 repeats, sizes up to 1,000
n_runs = 5000  # generated runs (the seed: 5,000 configurations executed)
seed = 0  # generator, split, subsets and models all derive from it
runs_csv = None  # None: generated history; else a CSV/Parquet file in the public schema (load_runs)
noise_sigma = 0.04  # the generator's log-normal throughput noise (run-to-run variation)
days = 220.0  # span of the generated history (the seed: 220 days)
sizes = [50, 100, 200, 400, 600, 1000, 2000, 4000]  # training runs of the learning curve
repeats = 5  # random training subsets per size
test_size = 0.2  # fraction of configurations held out for testing
model = "hgb"  # "hgb" (boosted trees), "rf" (random forest), "linear" (logistic / ridge regression)
n_jobs = 1  # joblib workers over (size, repeat) of the learning curve (the result does not depend on it)

# %%
import json
import time
from pathlib import Path

from spotlab.experiments.figures import project_path

out_dir = str(project_path(out_dir))  # relative: under the project root, wherever the notebook runs
import matplotlib.pyplot as plt
import matplotlib.ticker as mticker
import numpy as np
import pandas as pd
import seaborn as sns
from IPython.display import display

from spotlab.cotune import config_models as cp
from spotlab.cotune.perf import DEFAULT
from spotlab.cotune.run_history import generate_runs, load_runs
from spotlab.cotune.space import PARAMETERS
from spotlab.experiments.figures import saver, sweep_result
from spotlab.experiments.outputs import CONFIG_PREDICTION as OUT
from spotlab.experiments.published import COTUNE_PREDICTION as SEED_CLAIMS  # the seed's numbers

sns.set_theme(style="whitegrid", context="notebook")
out = Path(out_dir)
out.mkdir(parents=True, exist_ok=True)
if quick:
    n_runs, repeats, sizes = 1500, 2, [50, 200, 600, 1000]
save = saver(out, OUT)

tic = time.perf_counter()
if runs_csv is None:
    perf = DEFAULT.with_(noise_sigma=noise_sigma)
    runs = generate_runs(n_runs, seed=seed, perf=perf, days=days)
    data_label = "generated"
else:
    runs = load_runs(runs_csv)
    data_label = "csv"
setup = {"data": data_label, "runs_csv": runs_csv, "n_runs": len(runs), "seed": seed, "noise_sigma": noise_sigma,
         "days": days, "sizes": sizes, "repeats": repeats, "test_size": test_size, "model": model,
         "generator": {k: v for k, v in runs.attrs.items() if k != "source"}}
(out / OUT.setup.json).write_text(json.dumps(setup, indent=1, default=str))
runs.to_csv(out / OUT.runs.csv, index=False)
print(f"{len(runs)} runs ({data_label}), {runs[list(PARAMETERS)].drop_duplicates().shape[0]} distinct configurations, "
      f"{runs['is_valid'].mean():.1%} valid")

# %% [markdown]
# ## The history: which configurations run, and how far apart they are
#
# Left: fraction of runs that completed per model and method, for each GPU. Invalid runs are those breaking a
# rule (batch not divisible by the GPUs) or running out of memory (large models,
# full fine-tuning and long sequences on the 48 GB GPU). Right: throughput of every valid run per model
# (log scale) — the spread between configurations is what makes the choice of configuration matter.

# %%
by_group = (runs.groupby(["gpu_model", "model_name", "method"])["is_valid"]
            .agg(runs="size", valid="sum", fraction_valid="mean").reset_index())
valid_runs = runs[runs["is_valid"]]
per_config = valid_runs.groupby(list(PARAMETERS))["dataset_tokens_per_second"].mean().rename("tps").reset_index()
fixed = ["model_name", "method", "gpu_model", "software_version"]
spread = pd.concat([
    pd.DataFrame([{"scope": "all valid configurations", "min_tps": per_config["tps"].min(),
                   "max_tps": per_config["tps"].max()}]),
    per_config.groupby(fixed)["tps"].agg(min_tps="min", max_tps="max").reset_index()
    .assign(scope=lambda d: d[fixed].astype(str).agg("/".join, axis=1))[["scope", "min_tps", "max_tps"]],
], ignore_index=True)
spread["max_over_min"] = spread["max_tps"] / spread["min_tps"]

fig, axes = plt.subplots(1, 2, figsize=(13, 4.2), gridspec_kw={"width_ratios": [1.2, 1]})
ax = axes[0]
labels = by_group["model_name"] + "\n" + by_group["method"]
sns.barplot(data=by_group.assign(config=labels), x="config", y="fraction_valid", hue="gpu_model",
            hue_order=sorted(runs["gpu_model"].unique()), ax=ax)
ax.axhline(runs["is_valid"].mean(), color="k", ls="--", lw=1, label="all runs")
ax.set_xlabel("")
ax.set_ylabel("fraction of runs valid")
ax.set_title("Validity of the historical runs", fontsize=10, loc="left")
ax.tick_params(axis="x", labelsize=8)
ax.legend(fontsize=8)
ax = axes[1]
sns.stripplot(data=valid_runs, x="model_name", y="dataset_tokens_per_second", hue="method", dodge=True, size=2.5,
              alpha=0.6, order=sorted(runs["model_name"].unique()), hue_order=sorted(runs["method"].unique()), ax=ax)
ax.set_yscale("log")
ax.set_xlabel("")
ax.set_ylabel("dataset tokens / s (valid runs)")
ax.set_title(f"Throughput spread: max/min over configurations = {spread['max_over_min'].iloc[0]:.0f}x",
             fontsize=10, loc="left")
ax.legend(fontsize=8, markerscale=2)
fig.tight_layout()
save(fig, by_group, OUT.data)
spread.to_csv(out / OUT.spread.csv, index=False)
plt.show()
display(by_group.pivot_table(index=["model_name", "method"], columns="gpu_model", values="fraction_valid").round(3))
within = spread.iloc[1:]
print(f"throughput of valid configurations: {spread['min_tps'].iloc[0]:.0f} to "
      f"{spread['max_tps'].iloc[0]:.0f} tokens/s "
      f"({spread['max_over_min'].iloc[0]:.0f}x; the seed: up to {SEED_CLAIMS['spread']:.0f}x); with model, method, GPU "
      f"and software fixed (only GPUs, batch, sequence length free): median {within['max_over_min'].median():.1f}x, "
      f"max {within['max_over_min'].max():.1f}x")

# %% [markdown]
# ## Learning curve: error vs number of historical runs
#
# One fixed split holds out `test_size` of the configurations; for each size, `repeats` random subsets of the
# remaining runs train the two predictors (nested: the larger subset of a repeat contains the smaller). Line:
# mean over repeats; band: min–max over repeats (the largest size uses the whole training split, so its
# repeats coincide). Grey: the seed's numbers — 4.2% validity and 9.4% performance error with its full
# history, ~11% at 600 samples — measured on *its* data, so they are a reference, not a target.

# %%
tic_lc = time.perf_counter()
lc = cp.learning_curve(runs, sizes=sizes, repeats=repeats, seed=seed, test_size=test_size, model=model,
                       n_jobs=n_jobs)
print(f"learning curve: {len(lc)} fits in {time.perf_counter() - tic_lc:.1f} s; "
      f"training pool {lc.attrs['n_train_pool']} "
      f"runs, test {lc.attrs['n_test']} runs; sizes merged into the whole pool: {lc.attrs['clipped_sizes']}")
errors = ["validity_error", "throughput_error", "validity_error_majority", "throughput_error_median"]
curve = lc.groupby("size")[errors].agg(["mean", "min", "max"])
curve.columns = ["_".join(c) for c in curve.columns]
curve = curve.reset_index()

fig, axes = plt.subplots(1, 2, figsize=(12, 4.2))
for ax, col, title in [(axes[0], "validity_error", "validity error (1 − accuracy)"),
                       (axes[1], "throughput_error", "throughput error (MAPE, valid runs)")]:
    ax.plot(curve["size"], 100 * curve[f"{col}_mean"], marker="o", label=f"{model} predictor (mean)")
    ax.fill_between(curve["size"], 100 * curve[f"{col}_min"], 100 * curve[f"{col}_max"], alpha=0.25,
                    label="min–max over repeats")
    ax.axhline(100 * SEED_CLAIMS[col], color="grey", ls="--", lw=1.2,
               label=f"seed, full history: {100 * SEED_CLAIMS[col]:.1f}%")
    if col == "throughput_error":
        ax.scatter([600], [100 * SEED_CLAIMS["throughput_error_at_600"]], marker="*", s=160, color="grey", zorder=4,
                   label="seed: ~11% at 600 samples")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xticks(curve["size"], [str(v) for v in curve["size"]], fontsize=8)
    ax.xaxis.set_minor_locator(mticker.NullLocator())
    ax.yaxis.set_minor_locator(mticker.LogLocator(subs=(2.0, 5.0)))
    ax.yaxis.set_major_formatter(mticker.FormatStrFormatter("%g"))
    ax.yaxis.set_minor_formatter(mticker.FormatStrFormatter("%g"))
    ax.tick_params(axis="y", which="minor", labelsize=7)
    ax.set_xlabel("training runs")
    ax.set_ylabel(f"{title} (%)")
    ax.set_title(title, fontsize=10, loc="left")
    ax.legend(fontsize=8)
fig.tight_layout()
save(fig, lc, OUT.learning_curve)
curve.to_csv(out / OUT.learning_curve_summary.csv, index=False)
plt.show()
display(curve[["size", "validity_error_mean", "throughput_error_mean", "validity_error_majority_mean",
               "throughput_error_median_mean"]].round(4))
print("trivial baselines (majority outcome; training median throughput) are in the last two columns")

# %% [markdown]
# ## Predicted vs measured throughput on held-out configurations
#
# Both predictors trained on the whole training split; every test run measured valid, log-log. The dashed
# lines are ±10%. Points in red are runs the classifier predicted invalid — a recommender would never pick
# them.

# %%
train, test = cp.config_split(runs, test_size=test_size, seed=seed)
full = cp.evaluate(train, test, model=model, random_state=seed)
clf, reg = cp.fit_predictors(train, model=model, random_state=seed)
scored = cp.predict_space(clf, reg, test)
tv = scored[scored["is_valid"]].copy()
measured, predicted = tv["dataset_tokens_per_second"], tv["predicted_tokens_per_second"]
tv["abs_pct_error"] = 100 * (predicted - measured).abs() / measured
confusion = pd.crosstab(scored["is_valid"].rename("measured valid"),
                        scored["predicted_valid"].rename("predicted valid"))

fig, ax = plt.subplots(figsize=(6, 5.5))
sns.scatterplot(data=tv, x="dataset_tokens_per_second", y="predicted_tokens_per_second", hue="model_name",
                style="gpu_model", s=22, alpha=0.8, ax=ax)
missed = tv[~tv["predicted_valid"]]
ax.scatter(missed["dataset_tokens_per_second"], missed["predicted_tokens_per_second"], facecolors="none",
           edgecolors="red", s=70, label="predicted invalid")
lo, hi = tv[["dataset_tokens_per_second", "predicted_tokens_per_second"]].min().min() / 1.3, \
    tv[["dataset_tokens_per_second", "predicted_tokens_per_second"]].max().max() * 1.3
xs = np.geomspace(lo, hi, 50)
ax.plot(xs, xs, color="k", lw=1)
ax.plot(xs, 1.1 * xs, "k--", lw=0.7)
ax.plot(xs, 0.9 * xs, "k--", lw=0.7)
ax.set_xscale("log")
ax.set_yscale("log")
ax.set_xlim(lo, hi)
ax.set_ylim(lo, hi)
ax.set_xlabel("measured tokens / s")
ax.set_ylabel("predicted tokens / s")
ax.set_title(f"held-out configurations: MAPE {100 * full['throughput_error']:.1f}% over {len(tv)} valid runs",
             fontsize=10, loc="left")
ax.legend(fontsize=7, loc="upper left")
fig.tight_layout()
save(fig, tv[list(PARAMETERS) + ["dataset_tokens_per_second", "predicted_tokens_per_second", "p_valid",
                                 "predicted_valid", "abs_pct_error"]], OUT.predicted_vs_measured)
plt.show()
display(confusion)
print(f"full training split ({full['n_train']} runs): validity error {full['validity_error']:.2%} "
      f"(majority baseline {full['validity_error_majority']:.2%}), throughput error {full['throughput_error']:.2%} "
      f"(median baseline {full['throughput_error_median']:.2%}); |error| > 20% on "
      f"{(tv['abs_pct_error'] > 20).mean():.1%} of valid test runs")

# %% [markdown]
# ## A model never seen before (leave one model out)
#
# Train on the runs of the other models, test on all runs of the held-out one. The predictors see the model
# only as a one-hot column, so a new model is "none of the known ones": what carries over is how GPUs, batch
# and sequence length act, not the model's own size. Grey line: the error on held-out configurations of
# known models (the full split above); hatched: the trivial baselines.

# %%
unseen = cp.unseen_model_error(runs, seed=seed, model=model)
fig, axes = plt.subplots(1, 2, figsize=(11, 4))
x = np.arange(len(unseen))
for ax, col, base, title in [(axes[0], "validity_error", "validity_error_majority", "validity error"),
                             (axes[1], "throughput_error", "throughput_error_median", "throughput error (MAPE)")]:
    ax.bar(x - 0.2, 100 * unseen[col], width=0.4, label=f"{model} predictor")
    ax.bar(x + 0.2, 100 * unseen[base], width=0.4, hatch="//", color="none", edgecolor="grey",
           label="baseline (majority / median)")
    ax.axhline(100 * full[col], color="grey", ls="--", lw=1.2, label="known models, held-out configurations")
    for xi, v in zip(x, unseen[col]):
        ax.text(xi - 0.2, 100 * v, f"{100 * v:.0f}%", ha="center", va="bottom", fontsize=8)
    ax.set_xticks(x, unseen["held_out_model"])
    ax.set_ylabel(f"{title} (%)")
    ax.set_title(f"{title}, model held out", fontsize=10, loc="left")
fig.legend(*axes[0].get_legend_handles_labels(), loc="lower center", ncol=3, fontsize=8, bbox_to_anchor=(0.5, -0.06))
fig.tight_layout()
save(fig, unseen, OUT.unseen_model)
plt.show()
display(unseen.round(4))

# %% [markdown]
# ## Key numbers
#
# The headline numbers for `spotlab sweep` (e.g. over `noise_sigma` or `n_runs`): the fraction of valid
# runs, the throughput spread, both errors with the whole training split and at the learning-curve size
# closest to 600 runs, and the mean error for an unseen model — next to the seed's numbers.

# %%
near600 = int(curve["size"].iloc[(curve["size"] - 600).abs().argmin()])
at600 = curve.set_index("size").loc[near600]
key_numbers = pd.DataFrame([{
    "data": data_label, "n_runs": len(runs), "seed": seed, "noise_sigma": noise_sigma if runs_csv is None else None,
    "fraction_valid": float(runs["is_valid"].mean()),
    "throughput_spread_max_over_min": float(spread["max_over_min"].iloc[0]),
    "n_train_full": full["n_train"], "validity_error_full": full["validity_error"],
    "throughput_error_full": full["throughput_error"],
    "validity_error_majority_baseline": full["validity_error_majority"],
    "throughput_error_median_baseline": full["throughput_error_median"],
    "size_near_600": near600, "validity_error_at_600": float(at600["validity_error_mean"]),
    "throughput_error_at_600": float(at600["throughput_error_mean"]),
    "unseen_model_validity_error_mean": float(unseen["validity_error"].mean()),
    "unseen_model_throughput_error_mean": float(unseen["throughput_error"].mean()),
    "seed_validity_error": SEED_CLAIMS["validity_error"], "seed_throughput_error": SEED_CLAIMS["throughput_error"],
    "seed_error_at_600": SEED_CLAIMS["throughput_error_at_600"], "seed_spread": SEED_CLAIMS["spread"],
    "seconds": time.perf_counter() - tic,
}])
key_numbers.to_csv(out / OUT.key_numbers.csv, index=False)
(out / OUT.key_numbers.json).write_text(json.dumps(key_numbers.iloc[0].to_dict(), indent=1, default=str))
sweep_result(out, key_numbers, [])  # headline numbers for `spotlab sweep`
display(key_numbers.T)
k = key_numbers.iloc[0]
print(f"validity error {k['validity_error_full']:.1%} (seed {k['seed_validity_error']:.1%}), throughput error "
      f"{k['throughput_error_full']:.1%} (seed {k['seed_throughput_error']:.1%}) "
      f"with {k['n_train_full']} training runs; "
      f"at {near600} runs {k['validity_error_at_600']:.1%} / {k['throughput_error_at_600']:.1%} (seed ~11% at 600); "
      f"an unseen model: {k['unseen_model_validity_error_mean']:.1%} / {k['unseen_model_throughput_error_mean']:.1%}")

# %% [markdown]
# ## Reading the numbers
#
# - **Validity** is the easier task on this history: apart from the rules (handled exactly), invalid means
#   "needs more memory than the GPU has", a boundary that moves smoothly with per-GPU tokens, model, method
#   and GPU; the only irreducible error is the flaky out-of-memory band near the limit, where a configuration
#   may pass once and fail once.
# - **Throughput** error cannot fall below the run-to-run noise (mean absolute deviation of a log-normal
#   factor ≈ 0.8 `noise_sigma`); the learning curve flattens towards it, so more history buys less and less —
#   the diminishing returns the seed describes. Rerun with another `noise_sigma` to see where the floor goes.
# - The comparison with the seed's numbers is between different data: ours come from an analytical model
#   whose throughput is a smooth function of the parameters, while real runs add effects it lacks (software
#   bugs, node differences, contention), which would raise every error here.
# - A **new model** is where parameter-only knowledge breaks down: without a feature for the model's size the
#   predictors cannot know that it needs more memory or runs slower than the known ones. Describing models by
#   their size (parameters, layers) instead of a name would be the natural next feature.
