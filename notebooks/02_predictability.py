# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#   kernelspec: {display_name: Python 3, language: python, name: python3}
# ---

# %% [markdown]
# # 02 — Availability and price predictability on real spot markets
#
# How well can the availability and the price of spot GPUs be forecast a few slots ahead (SPEC §5 and
# §7 item 2; the paper forecasts with ARIMA)? On the four real traces of `markets/` (see notebook 01),
# resampled to each slot length of `slot_hours_list`: (a) autocorrelation and daily profiles, (b) forecast
# error (MAE, RMSE) vs horizon per model from a rolling-origin evaluation that never looks ahead, (c) the
# best model per (file, zone, slot, target) and its skill against persistence, (d) what the errors mean in
# GPUs and dollars. Price is forecast only where it moves: the AWS V100 p3.2xlarge trace has real per-tick
# spot prices, the GCP H100 prices are constant list prices and the other two traces have no price. A fifth
# file is a GPU-cloud marketplace (`marketplace_h100`, H100 SXM5, market-wide: `spotlab.market.marketplace`), whose
# price and listed capacity both move, snapshotted every ~30 min: at 10-min slots h = 3 and 6 are 30 min and
# 1 h ahead (claim 2m of the report), and seasonal naive (same time yesterday) tests its daily cycle.
# Every figure is saved with the CSV of the numbers it shows.

# %% tags=["parameters"]
out_dir = "paper_figures"
quick = False  # 2 zones per file, ~4 days, four fast models: a smoke run in well under a minute
slot_hours_list = [1 / 6, 1.0]  # slot lengths (hours) to evaluate: 10 min and 1 h
horizons = [1, 2, 3, 6, 12]  # forecast horizons in slots
models = None  # None: all six models (quick: persistence, seasonal_naive, ets, duration)
n_jobs = 2  # parallel workers for the rolling evaluation
train_hours = 72.0  # training window of every refit (shortened on short traces, see the plan table)
refit_hours = 24.0  # refit period; between refits the models are fed each new observation
quick_zones = 2  # zones per file when quick
quick_hours = 96.0  # hours of each trace when quick
acf_max_lag_hours = 48.0
job_gpu_hours = 100.0  # job size used to express the price error in dollars
quantiles = [0.5, 0.9]  # probabilities of the assured forecasts whose calibration is checked

# %%
import time
from pathlib import Path

from spotlab.experiments.figures import project_path

out_dir = str(project_path(out_dir))  # relative: under the project root, wherever the notebook runs
import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns
from IPython.display import display

from spotlab.experiments import figures as figs
from spotlab.experiments import market_stats as mk
from spotlab.experiments import predictability as pr
from spotlab.experiments.predictability import OUTPUTS as OUT

sns.set_theme(style="whitegrid", context="notebook")
out = Path(out_dir)
out.mkdir(parents=True, exist_ok=True)
files = mk.MARKET_FILES
zones_limit = quick_zones if quick else None
span_hours = quick_hours if quick else None
model_list = list(models) if models is not None else list(pr.QUICK_MODELS if quick else pr.ALL_MODELS)

save = figs.saver(out, OUT)
by_dataset = figs.by_dataset


def slot_label(s: float) -> str:
    return f"{s * 60:.0f} min" if s < 1 else f"{s:g} h"


def horizon_axis(ax) -> None:
    """Log-scale horizon axis with readable ticks in hours."""
    ax.set_xscale("log")
    ticks = [1 / 6, 0.5, 1, 2, 6, 12, 24]
    ax.set_xticks(ticks, ["10 min", "30 min", "1", "2", "6", "12", "24"])
    ax.minorticks_off()
    ax.set_xlabel("horizon (hours, log scale)")


# %% [markdown]
# ## (a) Autocorrelation of availability and price
#
# At the finest slot length: how much the availability fraction (and the V100 spot price) now says about
# itself `lag` hours later. A slow decay is what makes persistence hard to beat at short horizons; a bump at
# 24 h is a daily cycle. Zones whose series never changes have no autocorrelation and are left out.

# %%
slot0 = min(slot_hours_list)
markets = pr.load_markets(files, slot0, zones_limit, span_hours)
acf = by_dataset(mk.autocorrelation, markets, max_lag_hours=acf_max_lag_hours).assign(target="availability")
pacf = by_dataset(pr.price_autocorrelation, {k: markets[k] for k, f in files.items() if f.has_spot_price},
                  max_lag_hours=acf_max_lag_hours).assign(target="price")
acf_all = pd.concat([acf, pacf], ignore_index=True)
panels = [(k, "availability") for k in files] + [(k, "price") for k in pacf["dataset"].unique()]
fig, axes = plt.subplots(1, len(panels), figsize=(4 * len(panels), 4), sharey=True, squeeze=False)
for ax, (key, target) in zip(axes[0], panels):
    sub = acf_all[(acf_all["dataset"] == key) & (acf_all["target"] == target)]
    for zone, g in sub.groupby("zone", sort=False):
        ax.plot(g["lag_hours"], g["acf"], lw=1.2, label=zone)
    ax.axhline(0, color="k", lw=0.8)
    ax.set_title(f"{files[key].title}\n{target}", fontsize=9, loc="left")
    ax.set_xlabel("lag (hours)")
    if len(sub):
        ax.legend(fontsize=7)
axes[0][0].set_ylabel(f"autocorrelation ({slot_label(slot0)} slots)")
fig.tight_layout()
save(fig, acf_all, OUT.autocorrelation)
plt.show()
print("price ACF: only", ", ".join(pacf["dataset"].unique()) or "none",
      "- GCP H100 prices are constant list prices; the 16-node and A100 traces have no price")

# %% [markdown]
# ## (a) Daily profiles (hour of day, UTC)
#
# Only for the traces with a real clock (GCP H100, AWS V100 p3): the 16-node and A100 traces start at a
# made-up origin, so their hour of day means nothing and they are skipped. Shaded: ± one standard error.

# %%
real = [k for k, f in files.items() if f.real_clock]
print("daily profiles skipped (made-up clock):", ", ".join(k for k in files if k not in real))
daily = by_dataset(mk.daily_profile, {k: markets[k] for k in real})
fig, daily = figs.daily_profile_figure(daily, files)
save(fig, daily, OUT.daily_profile)
plt.show()

# %% [markdown]
# ## (b) Forecast error vs horizon
#
# Rolling-origin evaluation per zone: every `refit_hours` each model is refitted on the last `train_hours`
# (shortened on short traces), in between it is fed each new observation, and it forecasts h = 1..12 slots
# ahead from every origin. The plan says which (file, slot, target) combinations were evaluated and why the
# others were skipped.

# %%
tic = time.perf_counter()
errors, plan = pr.forecast_errors(files, slot_hours_list, model_list, horizons, zones_limit, span_hours, quantiles=quantiles,
                                  n_jobs=n_jobs, train_hours=train_hours, refit_hours=refit_hours)
elapsed = time.perf_counter() - tic
print(f"rolling evaluation: {elapsed:.1f} s, {len(errors)} rows, models: {', '.join(model_list)}")
plan.to_csv(out / OUT.evaluation_plan.csv, index=False)
errors.to_csv(out / OUT.forecast_errors_by_zone.csv, index=False)
for r in plan[plan["reason"].fillna("") != ""].itertuples():
    print(f"{r.status} {r.dataset} @ {slot_label(r.slot_hours)} {r.target}: {r.reason}")
display(plan[plan["status"] == "ok"].drop(columns="reason").round(2))

# %% [markdown]
# Mean over zones of MAE (solid) and RMSE (dotted) vs the horizon in hours, one panel per (file, target);
# colours are models, markers the slot length. Availability errors are in GPUs (requested: H100 16,
# V100 p3 1, V100 16-node 16, A100 4, marketplace 8); price errors in USD per GPU-hour.

# %%
errors["horizon_hours"] = errors["h"] * errors["slot_hours"]
curve = (errors.groupby(["dataset", "target", "slot_hours", "model", "h", "horizon_hours"], sort=False)
         [["mae", "rmse", "skill_mae"]].mean().reset_index())
combos = list(curve[["dataset", "target"]].drop_duplicates().itertuples(index=False, name=None))
palette = dict(zip(model_list, sns.color_palette(n_colors=len(model_list))))
palette["persistence"] = "black"  # drawn wide and pale: models that equal it sit on top of it
markers = dict(zip(sorted(slot_hours_list), "osD^"))
fig, axes = plt.subplots(1, len(combos), figsize=(4.3 * len(combos), 4.2), squeeze=False)
for ax, (key, target) in zip(axes[0], combos):
    sub = curve[(curve["dataset"] == key) & (curve["target"] == target)]
    for (model, s), g in sub.groupby(["model", "slot_hours"], sort=False):
        base = model == "persistence"
        ax.plot(g["horizon_hours"], g["mae"], marker=markers[s], ms=6 if base else 4, color=palette[model],
                lw=3 if base else 1.3, alpha=0.35 if base else 1.0, label=f"{model} ({slot_label(s)})")
        ax.plot(g["horizon_hours"], g["rmse"], ls=":", color=palette[model], lw=1)
    horizon_axis(ax)
    ax.set_ylabel("error (GPUs)" if target == "availability" else "error (USD per GPU-hour)")
    ax.set_title(f"{files[key].title}\n{target}: MAE (solid), RMSE (dotted)", fontsize=9, loc="left")
handles, labels = axes[0][0].get_legend_handles_labels()
fig.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, 0.0), ncol=min(len(labels), 6), fontsize=8)
fig.tight_layout()
save(fig, curve, OUT.forecast_error_vs_horizon)
plt.show()

# %% [markdown]
# ## (c) Best model per (file, zone, slot, target)
#
# The model with the lowest MAE averaged over the horizons, its MAE per horizon and its skill against
# persistence (1 - MAE / persistence MAE; > 0 beats persistence). Ties, e.g. zones whose availability
# never changes, go to persistence.

# %%
best = pr.best_models(errors)
skill_cols = [c for c in best.columns if c.startswith("skill_h")]
display(best.round(3))
headline = (best.groupby(["target", "slot_hours"])["model"].value_counts().rename("zones").reset_index())
display(headline)
beats = best[best["model"] != "persistence"]
print(f"{len(beats)} of {len(best)} (file, zone, slot, target) cases have a best model other than persistence; "
      f"median skill of those at h=1: {beats[skill_cols[0]].median() if len(beats) else float('nan'):.2f}")
best["case"] = (best["dataset"] + " " + best["zone"] + " " + best["slot_hours"].map(slot_label) + " "
                + best["target"] + " [" + best["model"] + "]")
heat = best.set_index("case")[skill_cols].rename(columns=lambda c: "h=" + c.removeprefix("skill_h"))
fig, ax = plt.subplots(figsize=(7, 0.28 * len(heat) + 1.5))
sns.heatmap(heat.clip(-1, 1), annot=heat.round(2), fmt="", cmap="RdBu", center=0, vmin=-1, vmax=1, ax=ax,
            annot_kws={"fontsize": 6}, cbar_kws={"label": "skill vs persistence (1 - MAE / MAE persistence)"})
ax.set_xlabel("horizon (slots)")
ax.set_ylabel("file, zone, slot, target [best model]")
ax.tick_params(axis="y", labelsize=7)
fig.tight_layout()
save(fig, best, OUT.best_models)
plt.show()

# %% [markdown]
# ## (d) What the errors mean
#
# For the best model of each case, mean over zones: the availability MAE in GPUs and as a fraction of the
# requested GPUs, and the price MAE in USD per GPU-hour with the dollar error it makes on pricing a job of
# `job_gpu_hours` GPU-hours.

# %%
meaning = pr.error_meaning(errors, job_gpu_hours)
usd_col = f"usd_error_{job_gpu_hours:g}_gpu_h_job"
summ = (meaning.groupby(["dataset", "target", "slot_hours", "h", "horizon_hours"], sort=False)
        [["mae_gpus", "mae_frac_requested", "mae_usd_per_gpu_h", "mae_frac_price", usd_col]].mean().reset_index())
fig, axes = plt.subplots(1, 2, figsize=(13, 4.2))
for (key, s), g in summ[summ["target"] == "availability"].groupby(["dataset", "slot_hours"], sort=False):
    axes[0].plot(g["horizon_hours"], g["mae_frac_requested"], marker=markers[s], ms=4,
                 label=f"{key} ({slot_label(s)}, {files[key].title.split('(')[1].split(',')[0]})")
axes[0].set_ylabel("availability MAE / requested GPUs")
axes[0].set_title("availability: error as a fraction of the request (best model)", fontsize=10, loc="left")
price = summ[summ["target"] == "price"]
for (key, s), g in price.groupby(["dataset", "slot_hours"], sort=False):
    axes[1].plot(g["horizon_hours"], g[usd_col], marker=markers[s], ms=4, label=f"{key} ({slot_label(s)})")
axes[1].set_ylabel(f"USD error on a {job_gpu_hours:g} GPU-hour job")
axes[1].set_title("price: MAE x job size (best model)", fontsize=10, loc="left")
for ax in axes:
    horizon_axis(ax)
    ax.legend(fontsize=7)
fig.tight_layout()
save(fig, summ, OUT.error_meaning)
meaning.to_csv(out / OUT.error_meaning_by_zone.csv, index=False)
plt.show()
display(summ.round(4))

# %% [markdown]
# ## (e) Calibration of the quantile forecasts
#
# A scheduler may plan on the GPUs it can count on with probability q ("assured" availability: the model's
# (1 - q)-quantile, rounded down) or on the price that is not exceeded with probability q. Calibrated
# forecasts are achieved in a share q of the outcomes: the dashed lines. Coverage above q is a safe but
# wasteful forecast, below q an over-confident one. Mean over zones, per model, horizon and slot length.

# %%
cover_cols = [f"cover_q{q:g}" for q in quantiles]
cal = (errors.melt(id_vars=["dataset", "target", "slot_hours", "model", "h", "horizon_hours"],
                   value_vars=cover_cols, var_name="level", value_name="coverage")
       .assign(q=lambda d: d["level"].str.removeprefix("cover_q").astype(float))
       .groupby(["dataset", "target", "slot_hours", "model", "q", "h", "horizon_hours"], sort=False)["coverage"]
       .mean().reset_index())
fig, axes = plt.subplots(1, len(combos), figsize=(4.3 * len(combos), 4.0), squeeze=False)
for ax, (key, target) in zip(axes[0], combos):
    sub = cal[(cal["dataset"] == key) & (cal["target"] == target)]
    for (model, q), g in sub.groupby(["model", "q"], sort=False):
        g = g.groupby("horizon_hours")["coverage"].mean()
        ax.plot(g.index, g.values, color=palette[model], ls="-" if q == max(quantiles) else "-.", lw=1.2,
                label=f"{model} q={q:g}")
    for q in quantiles:
        ax.axhline(q, color="grey", ls="--", lw=0.8)
    horizon_axis(ax)
    ax.set_ylim(0, 1.02)
    ax.set_ylabel("share of outcomes achieved")
    ax.set_title(f"{files[key].title}\n{target}: coverage of assured forecasts", fontsize=9, loc="left")
handles, labels = axes[0][0].get_legend_handles_labels()
fig.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, 0.0), ncol=min(len(labels), 6), fontsize=8)
fig.tight_layout()
save(fig, cal, OUT.quantile_calibration)
plt.show()
display(cal.groupby(["target", "model", "q"])["coverage"].mean().unstack("q").round(3))
