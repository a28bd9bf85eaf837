# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#   kernelspec: {display_name: Python 3, language: python, name: python3}
# ---

# %% [markdown]
# # 06 — Online policy selection (A3): weights and regret over rounds
#
# SPEC §6 (A3) and §7 item 6. Jobs run one after another on one market (a round is a job, a new job every
# `stride_hours`); before each round A3 picks a member of the pool (CHC variants and prediction-free
# variants) from the rounds before it. Because the market is exogenous, every member is replayed on
# every round (full information) and Hedge learns from all of them; EXP3, the bandit ablation, sees only
# the member it ran. `select` uses FlipFlop by default (de Rooij et al. 2014: it follows the leader while
# that costs little and switches to the AdaHedge learning rate when it does); AdaHedge alone (its rate
# adapts to how far apart the members' utilities actually are, but stays low for long after a few costly
# rounds) and Hedge with the anytime worst-case rate η_t = sqrt(8 ln K / t) are shown next to it; the latter
# moves its weights much more slowly because members differ by a few percent of the worst-case utility
# range that normalises the losses. The paper claims a regret of O(√T) against the best fixed pool member in hindsight:
# on log-log axes the regret should grow with a slope of at most about 0.5.
#
# Every selector first replays the pool on the jobs of the week before the first round (the warm-up, what
# `select` does by default) and starts from what they teach; `flipflop-cold` is FlipFlop from uniform
# weights, to show what the warm-up buys.
#
# Default: a 30-day synthetic market in the volatile regime at 1 h slots, a job every 2 h, the 4-member
# default pool (CHC on persistence forecasts, A2, uniform progress, greedy): about 270 rounds. A real trace works too (`market =
# "v100_prices"`, the one with real per-tick spot prices, about 450 rounds at a 2 h stride), but there the
# CHC members' window solves take seconds each (GLPK, some reach the 10 s limit), so the replay of the pool
# takes hours. Quick: the calm synthetic market, the 5-member quick pool, a dozen rounds.

# %% tags=["parameters"]
out_dir = "paper_figures"
quick = False  # synthetic calm market, quick pool, 12 rounds: a smoke run in seconds
market = "volatile"  # a named market (spotlab.market.named.MARKET_SPECS)
hours = 24 * 30  # length of a synthetic market (real traces: ignored)
pool = "default"  # "default" (5 members), "wide" (11), "quick" (5) or a list of (policy, params)
algorithms = ["flipflop", "flipflop-cold", "adahedge", "hedge", "exp3"]  # the first drives the replay; "-cold": no warm-up
stride_hours = 2.0  # a new job every stride_hours
max_jobs = None  # None: every job window of the trace
slot_hours = 1.0
seed = 0
n_jobs = 2  # parallel workers replaying the pool members
deadline_h = 12.0  # the job (setups.JobSpec): soft deadline, the rest default
resume = True  # reuse 06_selection_rounds.csv when it was written with the same parameters

# %%
import json
import time
from pathlib import Path

from spotlab.experiments.figures import project_path

out_dir = str(project_path(out_dir))  # relative: under the project root, wherever the notebook runs
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns
from IPython.display import display

from spotlab.experiments import comparison as cmp
from spotlab.experiments import figures as figs
from spotlab.experiments import setups
from spotlab.experiments.comparison import SELECTION as OUT

sns.set_theme(style="whitegrid", context="notebook")
out = Path(out_dir)
out.mkdir(parents=True, exist_ok=True)
if quick:
    market, pool, stride_hours, max_jobs, hours = "calm", "quick", 6.0, 12, 24 * 11
spec = setups.JobSpec(deadline_h=deadline_h)
save = figs.saver(out, OUT)
params = {"market": market, "pool": pool, "algorithms": list(algorithms), "stride_hours": stride_hours,
          "max_jobs": max_jobs, "slot_hours": slot_hours, "seed": seed, "deadline_h": deadline_h,
          "hours": hours}

# %% [markdown]
# ## Run the selection
#
# The per-round frame (weights before each round, member drawn, every member's utility, cumulative
# expected regret) is written to `06_selection_rounds.csv`, the summary to `06_selection_summary.json`.
# A re-run with the same parameters reads them back instead of replaying the pool.

# %%
rounds_csv, summary_json = out / OUT.selection_rounds.csv, out / OUT.selection_summary.json
cached = (resume and rounds_csv.exists() and summary_json.exists()
          and json.loads(summary_json.read_text()).get("params") == json.loads(json.dumps(params)))
tic = time.perf_counter()
if cached:
    frame = pd.read_csv(rounds_csv)
    summary = pd.DataFrame(json.loads(summary_json.read_text())["summary"])
else:
    frame, summary = cmp.selection_runs(market, spec, pool=pool, algorithms=algorithms, stride_hours=stride_hours,
                                        max_jobs=max_jobs, seed=seed, n_jobs=n_jobs, slot_hours=slot_hours,
                                        hours=params["hours"])
    frame.to_csv(rounds_csv, index=False)
    summary_json.write_text(json.dumps({"params": params, "summary": summary.to_dict(orient="records")},
                                       indent=1, default=str))
print(f"{'read back' if cached else 'computed'} in {time.perf_counter() - tic:.1f} s")
figs.sweep_result(out, summary[["algorithm", "rounds", "regret", "regret_slope", "selector_mean_utility",
                                 "best_member_mean_utility"]], ["algorithm"])  # for `spotlab sweep`
for r in summary.itertuples():
    print(f"{r.algorithm:6s}: {r.rounds} rounds, final expected regret {r.regret:.1f} USD "
          f"({r.regret_per_round:.2f} per round), log-log slope {r.regret_slope:.2f}, "
          f"anytime Hedge bound at T {r.bound_hedge:.0f}; best member {r.best_member}")
display(summary[["algorithm", "rounds", "members", "regret", "regret_per_round", "regret_slope", "bound_hedge",
                 "best_member", "best_member_mean_utility", "selector_mean_utility", "most_chosen"]].round(3))

# %% [markdown]
# ## Weights over rounds (the first algorithm, FlipFlop by default)
#
# Stacked: the probability the selector gives each pool member before each round (members labelled; CHC
# variants in blues, prediction-free variants in oranges). Early on the weights are near uniform; as
# the cumulative losses separate they concentrate on the members that have done best so far. The
# black dots (top) mark the member of each round that is best in hindsight so far.

# %%
algo0 = algorithms[0]
hf = frame[frame["algorithm"] == algo0].sort_values("round")
wcols = [c for c in hf.columns if c.startswith("weight_")]
names = [c.removeprefix("weight_") for c in wcols]
n_chc = sum(n.startswith("chc") for n in names)
colors = (sns.color_palette("Blues_d", max(n_chc, 1))[:n_chc]
          + sns.color_palette("Oranges_d", max(len(names) - n_chc, 1))[:len(names) - n_chc])
order = [i for i, n in enumerate(names) if n.startswith("chc")] + [i for i, n in enumerate(names)
                                                                  if not n.startswith("chc")]
fig, ax = plt.subplots(figsize=(11, 4.8))
ax.stackplot(hf["round"], *[hf[wcols[i]] for i in order], labels=[names[i] for i in order], colors=colors,
             alpha=0.9)
ax.set_xlim(hf["round"].min(), hf["round"].max())
ax.set_ylim(0, 1)
ax.set_xlabel("round (job)")
ax.set_ylabel(f"{algo0} probability before the round")
row0 = summary.iloc[0]
ax.set_title(f"A3 ({algo0}) weights over {int(row0['rounds'])} jobs on {market} "
             f"(stride {stride_hours:g} h, pool {pool if isinstance(pool, str) else 'custom'})", fontsize=10)
ax.legend(loc="center left", bbox_to_anchor=(1.01, 0.5), fontsize=7)
fig.tight_layout()
weights = hf[["round", "window", "member", "best_member_so_far"] + wcols]
save(fig, weights, OUT.weights)
plt.show()

# %% [markdown]
# ## Regret vs rounds, log-log: FlipFlop, AdaHedge, Hedge, EXP3
#
# Cumulative expected regret against the best fixed member so far (USD; rounds where it is not positive
# are not drawn on log axes). Dashed: a √T reference line through the first algorithm's regret at the
# last round (slope 0.5); dotted: the anytime Hedge worst-case bound (Cesa-Bianchi & Lugosi Thm 2.3), which holds for any
# market but is loose. The legend gives each algorithm's least-squares log-log slope; the paper's claim
# is O(√T), i.e. a slope of at most about 0.5 (a slope well below 0.5 means the selector has locked onto
# the best member and its regret stopped growing).

# %%
fig, ax = plt.subplots(figsize=(7.5, 5))
pal = dict(zip(algorithms, sns.color_palette(n_colors=len(algorithms))))
for algo in algorithms:
    g = frame[frame["algorithm"] == algo].sort_values("round")
    s = summary.set_index("algorithm").loc[algo]
    pos = g["regret"] > 0
    if np.isfinite(s["regret_slope"]):
        label = f"{algo}: slope {s['regret_slope']:.2f} (fit from round {int(s['slope_start'])})"
    else:  # never (or hardly ever) behind the best member: nothing to draw on log axes
        label = f"{algo}: regret {s['regret']:.1f} USD, no slope to fit"
    ax.plot(g.loc[pos, "round"], g.loc[pos, "regret"], marker="o" if len(g) < 40 else None, ms=3,
            color=pal[algo], label=label)
T = hf["round"].to_numpy(dtype=float)
last = hf["regret"].iloc[-1]
if last > 0:
    ax.plot(T, last * np.sqrt(T / T[-1]), ls="--", color="k", lw=1, label=r"$\sqrt{T}$ reference (slope 0.5)")
ax.plot(T, hf["bound_hedge"], ls=":", color="grey", lw=1.2, label="Hedge worst-case bound (anytime)")
ax.set_xscale("log")
ax.set_yscale("log")
ax.set_xlabel("rounds T (jobs)")
ax.set_ylabel("cumulative expected regret (USD)")
ax.set_title(f"Regret of A3 vs the best fixed pool member, {market}", fontsize=10)
ax.legend(fontsize=8)
fig.tight_layout()
regret = frame[["algorithm", "round", "regret", "regret_realised", "utility_expected", "bound_hedge"]]
save(fig, regret, OUT.regret_loglog)
plt.show()

# %% [markdown]
# ## Which members were run
#
# How often each algorithm ran each member, next to each member's mean utility over all rounds: the
# full-information selectors concentrate on the best members; EXP3, which only sees what it runs, spreads its choices more.

# %%
counts = pd.DataFrame({r.algorithm: pd.Series(r.chosen_counts) for r in summary.itertuples()})
ucols = [f"utility_{n}" for n in names]
counts["mean_utility"] = hf[ucols].mean().to_numpy()
counts.index.name = "member"
counts = counts.reset_index().sort_values("mean_utility", ascending=False)
fig, ax = plt.subplots(figsize=(9, 0.35 * len(counts) + 1.5))
y = np.arange(len(counts))
h = 0.8 / len(algorithms)
for i, algo in enumerate(algorithms):
    ax.barh(y + i * h, counts[algo], height=h, color=pal[algo], label=algo)
ax.set_yticks(y + 0.4 - h / 2, [f"{m}  (mean U {u:.0f})" for m, u in zip(counts["member"], counts["mean_utility"])],
              fontsize=7)
ax.invert_yaxis()
ax.set_xlabel("rounds in which the member was run")
ax.legend(fontsize=8)
fig.tight_layout()
save(fig, counts, OUT.member_choices)
plt.show()
display(counts.round(2))
