# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#   kernelspec: {display_name: Python 3, language: python, name: python3}
# ---

# %% [markdown]
# # 01 — Real spot markets: availability, prices, daily cycles, spells
#
# What a scheduler of fine-tuning jobs faces on real spot markets (SPEC §7 item 2). Four tidy
# traces (`markets/`, see its README): GCP H100 (16 GPUs requested every 10 min, 9 zones), AWS V100
# p3.2xlarge (1 GPU probed every ~195 s with the real spot price, 6 zones), AWS V100 16-node counts
# (3 zones) and GCP A100 counts (0..4, 6 zones, ~32 h); and a GPU-cloud marketplace (H100 SXM5, 30 min
# snapshots for 27 days, zones = the whole market and two providers; last section). All are resampled to one slot length
# (`slot_hours`): availability is the minimum over the slot (a GPU must survive the whole slot),
# price the time-weighted mean. Every figure is saved with the CSV of the numbers it shows.

# %% tags=["parameters"]
out_dir = "paper_figures"
slot_hours = 1 / 6  # hours per slot (10 min)
quick = False  # fewer zones, shorter spans: a smoke run in well under a minute
quick_zones = 3  # zones per file when quick
quick_hours = 72.0  # hours of each trace when quick
acf_max_lag_hours = 48.0
spell_k = 1  # spells: runs with at least spell_k GPUs available, or fewer
a100_slot_hours = None  # the A100 figure at the native 150 s tick (None) like the paper, or a slot length

# %%
from pathlib import Path

from spotlab.experiments.figures import project_path

out_dir = str(project_path(out_dir))  # relative: under the project root, wherever the notebook runs
import matplotlib.dates as mdates
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns
from IPython.display import display

from spotlab.data.locate import dataset_path
from spotlab.experiments import figures as figs
from spotlab.experiments import market_stats as mk
from spotlab.market.load import trace_zones
from spotlab.experiments.outputs import SPOT_MARKETS as OUT

sns.set_theme(style="whitegrid", context="notebook")
out = Path(out_dir)
out.mkdir(parents=True, exist_ok=True)

save = figs.saver(out, OUT)
by_dataset = figs.by_dataset


# %% [markdown]
# ## Load every zone of every file on the common slot grid

# %%
files = mk.MARKET_FILES
markets: dict[str, dict] = {}
for key, f in files.items():
    zones = trace_zones(dataset_path(f.relpath))[:quick_zones] if quick else None
    markets[key] = mk.load_all_zones(f.relpath, slot_hours, zones=zones, max_hours=quick_hours if quick else None)

summary = by_dataset(mk.zone_summary, markets)
summary.to_csv(out / OUT.zone_summary.csv, index=False)
display(summary.round(dict.fromkeys(summary.select_dtypes("number").columns, 3)))

# %% [markdown]
# ## Availability over time
#
# Each row of a panel is a zone; colour is the fraction of the requested GPUs that could be held
# during the slot (dark = none; blank = the zone's trace has ended). Zones of the same cloud and GPU behave very differently, and
# availability comes in long spells rather than independent slots.

# %%
avail = by_dataset(mk.availability_table, markets)
fig, axes = plt.subplots(len(files), 1, figsize=(12, 3 + 0.5 * sum(len(m) for m in markets.values())),
                         layout="constrained", gridspec_kw={"height_ratios": [max(len(markets[k]), 1) for k in files]})
for ax, (key, f) in zip(np.atleast_1d(axes), files.items()):
    sub = avail[avail["dataset"] == key]
    grid = sub.pivot(index="zone", columns="hours", values="frac").reindex(list(markets[key]))
    mesh = ax.pcolormesh(grid.columns.to_numpy(), np.arange(len(grid)), grid.to_numpy(),
                         cmap="viridis", vmin=0, vmax=1, shading="nearest")
    ax.set_yticks(np.arange(len(grid)), grid.index)
    start = next(iter(markets[key].values())).start
    clock = f"from {start:%Y-%m-%d %H:%M} UTC" if f.real_clock else "relative clock"
    ax.set_title(f"{f.title} — {clock}", fontsize=10, loc="left")
    ax.set_xlabel("hours since trace start")
    ax.grid(False)
fig.colorbar(mesh, ax=axes, label="available / requested GPUs", fraction=0.02, pad=0.01)
fig.get_layout_engine().set(h_pad=0.12)
save(fig, avail, OUT.availability_over_time)
plt.show()

# %% [markdown]
# ## Spot prices over time
#
# Left: the AWS V100 spot price per zone (real per-tick prices) against the on-demand price
# (dashed). Right: the GCP H100 prices are list prices, constant over the span, so only the level
# per zone is shown. On GCP H100 spot is 4-6x cheaper than on-demand, except in asia-south2-b (1.4x).

# %%
price_keys = [k for k, f in files.items() if f.has_spot_price]
fig, axes = plt.subplots(1, 2, figsize=(14, 4.2), gridspec_kw={"width_ratios": [2.2, 1]})
v100 = avail[avail["dataset"] == "aws_v100"]
for zone, g in v100.groupby("zone", sort=False):
    axes[0].plot(g["time"], g["spot_price"], lw=1, label=zone)
axes[0].axhline(v100["od_price"].iloc[0], ls="--", color="k", lw=1, label="on-demand")
axes[0].set_title(files["aws_v100"].title, fontsize=10, loc="left")
axes[0].set_ylabel("price (USD per GPU-hour)")
axes[0].set_xlabel("time (UTC)")
axes[0].xaxis.set_major_formatter(mdates.DateFormatter("%m-%d"))
axes[0].legend(fontsize=8, ncol=2)
h100 = (avail[avail["dataset"] == "gcp_h100"].groupby("zone", sort=False)[["spot_price", "od_price"]].mean()
        .rename(columns={"spot_price": "spot", "od_price": "on-demand"}))
h100.plot.barh(ax=axes[1], color=["tab:green", "tab:gray"])
axes[1].set_xlabel("price (USD per GPU-hour)")
axes[1].set_ylabel("")
axes[1].set_title("GCP H100 list prices (constant)", fontsize=10, loc="left")
axes[1].legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8)
fig.tight_layout()
save(fig, avail[avail["dataset"].isin(price_keys)][["dataset", "time", "zone", "gpu", "spot_price", "od_price"]],
     OUT.spot_price_over_time)
plt.show()

# %% [markdown]
# ## Daily profiles (hour of day, UTC)
#
# Mean availability fraction by hour of day, for the two traces with a real clock (the 16-node and
# A100 traces start at a conventional origin, so their hour of day means nothing). A daily cycle
# is what a time-of-day-aware forecaster or a fixed schedule could exploit; flat lines mean the
# current state, not the clock, carries the information. Shaded band: ± one standard error.

# %%
real = [k for k, f in files.items() if f.real_clock]
daily = by_dataset(mk.daily_profile, {k: markets[k] for k in real})
fig, daily = figs.daily_profile_figure(daily, files)
save(fig, daily, OUT.daily_profile)
plt.show()

# %% [markdown]
# ## How often can k GPUs be held?
#
# Share of slots in which at least k spot GPUs were available, for k = 1..requested. A job that
# needs k GPUs at once can only run on spot in that share of the time; the drop from k = 1 to
# k = requested shows how partial the availability usually is.

# %%
kfrac = by_dataset(mk.k_available_fraction, markets)
fig, axes = plt.subplots(1, len(files), figsize=(17, 4), sharey=True)
for ax, (key, f) in zip(axes, files.items()):
    sub = kfrac[kfrac["dataset"] == key]
    if sub["requested"].max() == 1:
        ax.bar(sub["zone"], sub["fraction"], color=sns.color_palette(n_colors=len(sub)))
        ax.set_xlabel("zone (k = 1)")
        ax.tick_params(axis="x", rotation=45, labelsize=8)
    else:
        for zone, g in sub.groupby("zone", sort=False):
            ax.plot(g["k"], g["fraction"], marker="o", ms=3, label=zone)
        ax.set_xlabel("k (GPUs)")
        ax.legend(fontsize=7, loc="best")
    ax.set_title(f.title, fontsize=9, loc="left")
axes[0].set_ylabel("share of slots with ≥ k GPUs available")
fig.tight_layout()
save(fig, kfrac, OUT.k_available)
plt.show()

# %% [markdown]
# ## Spell lengths: lifetime and wait
#
# Durations of uninterrupted runs with at least `spell_k` GPUs available ("up", the spot lifetime)
# and with fewer ("down", the wait), per zone, on a log scale. Runs cut by the ends of the trace
# are included. The table saved alongside gives mean / median / p90 per zone, for `spell_k` and
# for the full request (k = requested).

# %%
sp = by_dataset(mk.spells, markets, k=spell_k)
stats = pd.concat([by_dataset(mk.spell_lengths, markets, k=spell_k)]
                  + [mk.spell_lengths(markets[key], k=next(iter(markets[key].values())).requested).assign(dataset=key)
                     for key in files if next(iter(markets[key].values())).requested > spell_k],
                  ignore_index=True)
fig, axes = plt.subplots(1, len(files), figsize=(18, 4.5), sharey=True)
for ax, (key, f) in zip(axes, files.items()):
    sub = sp[sp["dataset"] == key]
    sns.boxplot(data=sub, x="zone", y="hours", hue="state", hue_order=["up", "down"], ax=ax,
                log_scale=True, fliersize=2, palette={"up": "tab:green", "down": "tab:red"})
    ax.set_title(f.title, fontsize=9, loc="left")
    ax.tick_params(axis="x", rotation=45, labelsize=8)
    ax.set_xlabel("")
    ax.legend(title=f"≥{spell_k} GPU", fontsize=7, title_fontsize=7)
axes[0].set_ylabel("spell length (hours, log scale)")
fig.tight_layout()
save(fig, stats, OUT.spell_lengths)
sp.to_csv(out / OUT.spell_lengths_all_spells.csv, index=False)
plt.show()
display(stats[["dataset", "zone", "k", "state", "mean", "median", "p90", "count"]].round(2))

# %% [markdown]
# ## Autocorrelation of availability
#
# How much the availability fraction now says about it `lag` hours later. A slow decay means the
# current state is a good short-horizon predictor; bumps at 24 h indicate a daily cycle (clear in
# some H100 zones, e.g. us-east4-b, matching its afternoon dip in the daily profile). Lags stop at
# half the trace length.
# Zones whose availability never changes are left out (no defined autocorrelation).

# %%
acf = by_dataset(mk.autocorrelation, markets, max_lag_hours=acf_max_lag_hours)
fig, axes = plt.subplots(1, len(files), figsize=(17, 4), sharey=True)
for ax, (key, f) in zip(axes, files.items()):
    for zone, g in acf[acf["dataset"] == key].groupby("zone", sort=False):
        ax.plot(g["lag_hours"], g["acf"], lw=1.2, label=zone)
    ax.axhline(0, color="k", lw=0.8)
    ax.set_title(f.title, fontsize=9, loc="left")
    ax.set_xlabel("lag (hours)")
    ax.legend(fontsize=7)
axes[0].set_ylabel("autocorrelation of available / requested")
fig.tight_layout()
save(fig, acf, OUT.autocorrelation)
plt.show()

# %% [markdown]
# ## The paper's A100 availability figure
#
# GCP A100-40GB instances obtained (out of 4 requested) over time in each zone, at the trace's
# native 150 s tick (as in the paper's figure). Availability differs across regions and changes
# within hours: one zone never had any, one nearly always had all four. Around hour 10 three zones
# on two continents drop to zero on exactly the same ticks for 80 minutes while europe-west4-a
# loses one or two GPUs: a cross-region event (or a prober artefact), so zones are not independent.

# %%
a100 = mk.load_all_zones(files["gcp_a100"].relpath, a100_slot_hours,
                         zones=list(markets["gcp_a100"]) if quick else None)
a100_tab = mk.availability_table(a100)
fig, axes = plt.subplots(len(a100), 1, figsize=(11, 1.6 * len(a100) + 1), sharex=True, sharey=True)
for ax, (zone, g) in zip(np.atleast_1d(axes), a100_tab.groupby("zone", sort=False)):
    ax.fill_between(g["hours"], g["avail"], step="post", alpha=0.35)
    ax.step(g["hours"], g["avail"], where="post", lw=1)
    ax.set_ylim(0, g["requested"].iloc[0] + 0.3)
    ax.set_yticks(range(0, g["requested"].iloc[0] + 1, 2))
    ax.set_title(zone, loc="left", fontsize=9, weight="bold")
np.atleast_1d(axes)[-1].set_xlabel("hours since trace start")
fig.supylabel("A100 GPUs available (of 4)")
fig.suptitle("GCP A100-40GB spot availability per zone", y=1.0)
fig.tight_layout()
save(fig, a100_tab, OUT.a100_availability)
plt.show()

# %% [markdown]
# ## A GPU-cloud marketplace: prices, listed capacity, providers
#
# The marketplace (`markets/gpu-price-tracker/`, H100 SXM5: Prime Intellect's aggregated listing of about a
# dozen clouds, a snapshot every ~30 min) is a different kind of market: nobody is preempted by a cloud, but
# prices and listed capacity move and providers come and go. `spotlab.market.marketplace` maps it to the spot model
# (its docstring says why): spot = the cheapest offer flagged interruptible, else the cheapest-decile
# price (p10); on-demand = the median listing; spot GPUs = those listed at the spot price, capped at the 8
# requested (the panels above). Here, uncapped and per snapshot: (top) prices, (middle) listed
# configurations and providers, (bottom) which provider lists when. Right: the daily profile (UTC) of the
# listed configurations and of the spot price; shaded ± one standard error over the 27 days.

# %%
from spotlab.market.marketplace import provider_table, snapshot_table

mp_path = dataset_path(files["marketplace_h100"].relpath)
snaps = snapshot_table(mp_path)
provs = provider_table(mp_path)
fig, axes = plt.subplots(3, 2, figsize=(15, 9), gridspec_kw={"width_ratios": [3, 1]}, layout="constrained")
ax = axes[0][0]
for col, style in (("median", dict(color="k", lw=1.2, label="median (on-demand)")),
                   ("p10", dict(color="tab:blue", lw=1, label="p10 (spot proxy)")),
                   ("flagged_spot", dict(color="tab:red", lw=0, marker=".", ms=3, label="flagged spot offer"))):
    ax.plot(snaps["time"], snaps[col], **style)
ax.set_ylabel("USD per GPU-hour")
ax.legend(fontsize=8, ncol=3, loc="upper left")
ax = axes[1][0]
ax.plot(snaps["time"], snaps["offers"], color="tab:green", lw=1, label="listed configurations")
ax.plot(snaps["time"], snaps["tier_gpus"].clip(upper=40), color="tab:purple", lw=0.8,
        label="GPUs at the spot price (clipped at 40)")
ax.set_ylabel("count")
ax2 = ax.twinx()
ax2.step(snaps["time"], snaps["providers"], where="post", color="grey", lw=0.8)
ax2.set_ylabel("providers listing", color="grey")
ax2.grid(False)
ax.legend(fontsize=8, loc="upper left")
ax = axes[2][0]
order = provs["provider"].value_counts().index.tolist()
ax.scatter(provs["time"], provs["provider"].map({p: i for i, p in enumerate(order)}), s=2, c="tab:blue")
ax.set_yticks(range(len(order)), order, fontsize=8)
ax.set_title("provider listed (one dot per snapshot)", fontsize=9, loc="left")
for a in axes[:, 0]:
    a.xaxis.set_major_formatter(mdates.DateFormatter("%m-%d"))
snaps["hour"] = snaps["time"].dt.hour
prof = snaps.groupby("hour").agg(offers=("offers", "mean"), offers_se=("offers", "sem"),
                                 spot=("spot_price", "mean"), spot_se=("spot_price", "sem"),
                                 median=("median", "mean"), n=("offers", "size")).reset_index()
for a, col, label in ((axes[0][1], "spot", "spot price (USD/GPU-h)"), (axes[1][1], "offers", "listed configurations")):
    a.plot(prof["hour"], prof[col], marker="o", ms=3)
    a.fill_between(prof["hour"], prof[col] - prof[f"{col}_se"], prof[col] + prof[f"{col}_se"], alpha=0.3)
    a.set_ylabel(label)
    a.set_xlabel("hour of day (UTC)")
axes[2][1].axis("off")
fig.suptitle(f"{files['marketplace_h100'].title}: {len(snaps)} snapshots, "
             f"{snaps['time'].iloc[0]:%Y-%m-%d} to {snaps['time'].iloc[-1]:%Y-%m-%d}", x=0.01, ha="left")
save(fig, snaps, OUT.marketplace_over_time)
plt.show()
display(prof.round(3))
print(f"flagged spot offer in {snaps['flagged_spot'].notna().mean():.0%} of snapshots; spot/median price "
      f"{(snaps['spot_price'] / snaps['median']).mean():.2f} on average; listed configurations "
      f"{snaps['offers'].min()}-{snaps['offers'].max()}, daily profile from {prof['offers'].min():.1f} to "
      f"{prof['offers'].max():.1f} (hour means)")
