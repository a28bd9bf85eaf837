# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#   kernelspec: {display_name: Python 3, language: python, name: python3}
# ---

# %% [markdown]
# # 11 — Across zones: the multi-region benchmarks, and what a job across zones costs
#
# SPEC §9. A job that may move between zones and regions, on two public benchmarks whose simulators' rules were
# read from their code and checked by running them (the data folders' READMEs):
# - the multi-region Can't Be Late leaderboard (nine AWS V100 zones, six scenarios of 2–9 zones, 48 h of work by
#   52 h): free moves, every zone's availability seen for free, a run billed at the prices of the zone it ends in;
# - SkyNomad's GCP H100 zones (windows of 311 ticks of 600 s, work = deadline / ratio, a 50-GB checkpoint): a move
#   relaunches and pays egress, other zones' spot is found by launching or by paid probes.
#
# Each scenario runs under its own rule set (where the peers' numbers are reproduced) and under spotlab's
# (per-slot billing in the zone used, a restart and egress on every move, the hard deadline guarded): the peers'
# quirks are a compatibility mode, not spotlab's rules (docs/decisions/zone-rule-sets.md). Baselines: the
# leaderboard's round robin, UP(S) (`up_failover`), UP(A) (`up_probe`), UP(AP) (`up_probe_cost`), uniform progress
# in one zone; the hindsight optimum across zones is the floor (docs/decisions/zone-optimum.md). Then, on
# SkyNomad's shared six zones: the cost against the number of zones, the deadline ratio and the checkpoint size.

# %% tags=["parameters"]
out_dir = "paper_figures"
quick = False  # two windows of two leaderboard scenarios and of SkyNomad's, the sweeps' ends only
resume = True  # reuse the cells already in out_dir/11_runs.csv
n_jobs = 2  # worker processes for the cells

# %%
from pathlib import Path

from spotlab.experiments.figures import project_path

out_dir = str(project_path(out_dir))  # relative: under the project root, wherever the notebook runs
import matplotlib.pyplot as plt
import seaborn as sns
from IPython.display import display

from spotlab.experiments import multi_region as mr
from spotlab.experiments.figures import saver, sweep_result
from spotlab.experiments.multi_region import OUTPUTS as OUT
from spotlab.experiments.published import MULTI_LEADERBOARD_PEERS, SKYNOMAD_SHARED_SIX

sns.set_theme(style="whitegrid", context="notebook")
out = Path(out_dir)
out.mkdir(parents=True, exist_ok=True)
save = saver(out_dir, OUT)
rows = mr.run_all(mr.plan(quick), out_dir, resume=resume, n_jobs=n_jobs)

# %% [markdown]
# ## Both benchmarks, spotlab beside the peers
#
# Mean cost per scenario, rule set and policy; `published` is the peers' number for the same strategy under their
# rules on all of the benchmark's windows (blank elsewhere), `rel_diff` ours / theirs − 1. Under the leaderboard's
# rules the round robin is its baseline to the cent; under SkyNomad's, UP(S), UP(A) and one-zone UP reproduce its
# numbers, and the optimum sits at or below its hindsight DP (ours is exact for the simulator's rules).

# %%
table = mr.benchmarks(rows)
display(table.round(4))
table.to_csv(out / OUT.benchmarks.csv, index=False)
table.to_json(out / OUT.benchmarks.json, orient="records", indent=1)

# %% [markdown]
# ## Ours and the peers', per benchmark
#
# Left: the leaderboard's AvgCost (mean over its scenarios) per policy under its rules and spotlab's, with the
# evolved entries' published AvgCost (GEPA, LEVI, ...) as lines. Right: SkyNomad's shared six zones, ratio 1.5,
# with its published strategies (SkyNomad itself, its oracle variant) as lines.

# %%
fig, axes = plt.subplots(1, 2, figsize=(13, 4.6))
lb = table[table.bench == "leaderboard"].groupby(["rules", "policy"], sort=False).mean_cost.mean().reset_index()
sns.barplot(data=lb, x="policy", y="mean_cost", hue="rules", ax=axes[0])
for _, avg in MULTI_LEADERBOARD_PEERS.values():
    axes[0].axhline(avg, ls=":", lw=1, color="grey")
axes[0].text(0.99, 0.99, "published AvgCost (dotted):\n" + "\n".join(
    f"{name} {avg:.2f}" for name, (_, avg) in MULTI_LEADERBOARD_PEERS.items()), transform=axes[0].transAxes,
    ha="right", va="top", fontsize=7, bbox={"facecolor": "white", "alpha": 0.8, "lw": 0})
axes[0].set_ylim(0, 1.35 * lb.mean_cost.max())
axes[0].set_title("multi-region leaderboard: AvgCost over its scenarios", fontsize=10)
axes[0].set_ylabel("mean cost per job (USD)")
sn = table[(table.bench == "skynomad") & (table.x == 1.5) & (table.policy != "uniform_progress")]
sns.barplot(data=sn, x="policy", y="mean_cost", hue="rules", ax=axes[1])
peers = ("SkyNomad", "SkyNomad(o)")
for name in peers:
    axes[1].axhline(SKYNOMAD_SHARED_SIX[name][0], ls=":", lw=1, color="grey")
axes[1].text(0.01, 0.99, "published (dotted):\n" + "\n".join(
    f"{name} {SKYNOMAD_SHARED_SIX[name][0]:.2f}" for name in peers), transform=axes[1].transAxes,
    ha="left", va="top", fontsize=7, bbox={"facecolor": "white", "alpha": 0.8, "lw": 0})
axes[1].set_title("SkyNomad, shared six zones, deadline = 1.5 x work", fontsize=10)
axes[1].set_ylabel("mean cost per job (USD)")
for ax in axes:
    ax.tick_params(axis="x", rotation=15)
fig.tight_layout()
save(fig, table, OUT.peers)
plt.show()

# %% [markdown]
# ## The paper's algorithms across zones
#
# A1 (`chc_zones`: the zones DP from the job's true state on per-zone persistence forecasts, re-planned every 12 slots
# and wherever spot is not as planned), A2 (`prediction_free_zones`: spot in the zone whose price over its seen spot
# lifetime is lowest, on-demand in between, leaving on-demand only for a spell old enough to pay two restarts) and
# A3 (`select` over A1, A2 and UP(S)/UP(A)/UP(AP), its choice made from their runs), beside the baselines, the
# optimum, A1 on perfect forecasts and the best one-zone uniform progress under spotlab's rules. Left: the
# leaderboard's AvgCost per rule set; right: SkyNomad's shared six at ratio 1.5. The bars issue 41 set (dashed):
# $72.00 on the leaderboard, $547 on SkyNomad (docs/decisions/zone-policies.md says which hold).

# %%
alone = mr.one_zone(rows)
alone.to_csv(out / OUT.one_zone.csv, index=False)
display(alone[alone.best].round(2))
algos = table[table.policy.isin(["chc_zones", "prediction_free_zones", "select", "chc_zones_oracle", "up_failover",
                                 "round_robin", "optimal"])]
fig, axes = plt.subplots(1, 2, figsize=(13, 4.6))
lb = algos[algos.bench == "leaderboard"].groupby(["rules", "policy"], sort=False).mean_cost.mean().reset_index()
sns.barplot(data=lb, x="policy", y="mean_cost", hue="rules", ax=axes[0])
axes[0].axhline(72.0, ls="--", lw=1, color="grey")
axes[0].set_title("multi-region leaderboard: AvgCost over its scenarios", fontsize=10)
sn = algos[(algos.bench == "skynomad") & (algos.x == 1.5) & algos.scenario.str.contains("+", regex=False)]
sns.barplot(data=sn, x="policy", y="mean_cost", hue="rules", ax=axes[1])
axes[1].axhline(547.0, ls="--", lw=1, color="grey")
axes[1].axhline(SKYNOMAD_SHARED_SIX["SkyNomad"][0], ls=":", lw=1, color="grey")
axes[1].set_title("SkyNomad, shared six zones, ratio 1.5 (dotted: SkyNomad)", fontsize=10)
for ax in axes:
    ax.set_ylabel("mean cost per job (USD)")
    ax.tick_params(axis="x", rotation=20)
fig.tight_layout()
save(fig, algos, OUT.algorithms)
plt.show()

# %% [markdown]
# ## What a job across zones costs
#
# On SkyNomad's shared six zones, ratio 1.5 unless swept: against the number of zones the job may use (the first k
# in the benchmark's order; the optimum can only gain from a zone more, UP(S) need not), against the deadline ratio
# (deadline = ratio x work at a fixed deadline of 311 ticks: a tighter job leaves less room to wait for spot), and,
# under spotlab's rules, against the checkpoint a move carries (USD 0.02 per GB between regions; a LoRA adapter is
# well under a GB, full fine-tuning of a 70B model about a terabyte of weights and optimiser state).

# %%
sweeps = {"zones": ("zones the job may use", OUT.zones, False),
          "ratio": ("deadline / work", OUT.ratio, False),
          "checkpoint": ("checkpoint carried by a move (GB)", OUT.checkpoint, True)}
for study, (xlabel, output, symlog) in sweeps.items():
    by_x = mr.sweep(rows, study)
    fig, ax = plt.subplots(figsize=(7, 4.2))
    sns.lineplot(data=by_x, x="x", y="mean_cost", hue="policy", marker="o", ax=ax)
    if symlog:
        ax.set_xscale("symlog", linthresh=10)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("mean cost per job (USD)")
    save(fig, by_x, output)
    plt.show()

# %%
keys = ["bench", "scenario", "x", "rules", "policy"]
sweep_result(out_dir, table[[*keys, "mean_cost", "deadlines_met"]], keys)
