# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#   kernelspec: {display_name: Python 3, language: python, name: python3}
# ---

# %% [markdown]
# # 03 — Motivation: predictions help when accurate and hurt when not
#
# SPEC §7 item 3. The paper's motivating claim: **with accurate predictions the prediction-based
# algorithm A1 is cheaper than the prediction-free A2; with inaccurate ones it can be worse.**
#
# Here A1 is committed horizon control (`chc`, window `w`, commitment `v`) fed by the controlled-error
# oracle (truth x (1 + N(0, σ² h)) at horizon h, for availability and price): σ = 0 is perfect foresight,
# σ = `sigmas[-1]` an inaccurate forecast. A2 is the prediction-free rule with its default parameters
# (θ = 0.6, progress line to 0.8 d). Uniform Progress (Can't Be Late) is the strongest simple baseline and
# the hindsight optimum (`optimal`, `must_finish=False`, re-simulated) the upper bound. Each market is cut
# into jobs one after another (`spotlab.market.windows.cut_windows`: a job every `stride_hours`, each with a week of
# history); every method replays the same jobs, so per-job differences are paired.
#
# Markets: the real GCP H100 trace (availability varies, list prices constant — the forecast matters for
# availability only) and the synthetic calm/volatile regimes (both availability and price move). The AWS
# V100 p3.2xlarge trace has real spot prices but spot is obtainable in only 65 of its 1093 hourly slots, so
# every policy runs on on-demand there and there is nothing to compare; add `"v100_prices"` to `markets` to
# see it.

# %% tags=["parameters"]
out_dir = "paper_figures"
quick = False  # quick: the two synthetic markets, 4 jobs each, 10 days
markets = ["h100", "marketplace", "calm", "volatile"]
sigmas = [0.0, 0.5]  # forecast error of the oracle: accurate, inaccurate
w = 6  # A1 window (slots)
v = 2  # A1 commitment level (slots)
slot_hours = 1.0
hours = 24 * 21  # length of the synthetic markets
stride_hours = 6.0  # a new job every stride_hours
max_jobs = None  # jobs per market (None: all that fit)
seed = 0  # simulation seed (drives the oracle's noise)
market_seed = 0  # seed of the synthetic markets
solver = "glpk"
n_jobs = 2  # parallel workers (one (market, method) cell each)
resume = True  # reuse the cells already in out_dir/03_motivation_jobs.csv

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

from spotlab.experiments import figures as figs
from spotlab.experiments import horizon as hz
from spotlab.experiments.setups import JobSpec
from spotlab.experiments.horizon import MOTIVATION as OUT

sns.set_theme(style="whitegrid", context="notebook")
out = Path(out_dir)
out.mkdir(parents=True, exist_ok=True)
if quick:
    markets, hours, max_jobs = ["calm", "volatile"], 24 * 10, 4
save = figs.saver(out, OUT)
jobs_csv = out / OUT.motivation_jobs.csv
if not resume:
    jobs_csv.unlink(missing_ok=True)
spec = JobSpec()

# %% [markdown]
# ## Run
#
# Each (market, method) cell is appended to `03_motivation_jobs.csv` (one row per job, with the seed,
# the policy parameters and the set-up) as soon as it is done; an interrupted run resumes from there.

# %%
tic = time.perf_counter()
jobs = hz.motivation(markets, spec, sigmas=sigmas, w=w, v=v, solver=solver, seed=seed, n_jobs=n_jobs,
                     out_csv=jobs_csv, verbose=True, slot_hours=slot_hours, hours=hours,
                     market_seed=market_seed, stride_hours=stride_hours, max_jobs=max_jobs)
print(f"{len(jobs)} job results in {time.perf_counter() - tic:.1f} s")
setup = hz.setup_table(jobs)
(out / OUT.setup.json).write_text(json.dumps({"seed": seed, "market_seed": market_seed, "w": w, "v": v,
                                               "sigmas": sigmas, "solver": solver,
                                               "setups": setup.to_dict(orient="records")}, indent=1, default=str))
display(setup.set_index("label").T)

# %% [markdown]
# ## Utility and cost per method
#
# Top: mean utility per job (value of finishing − rental cost, $) with its 95% t-interval over jobs;
# bottom: mean cost ($). The intervals are wide because jobs differ (a job in a spot drought costs
# several times one in a glut); the paired differences below remove that spread.

# %%
summ = hz.summarize(jobs, by=("market", "method"))
order = ["optimum"] + [f"A1 σ={s:g}" for s in sigmas] + ["A2", "uniform_progress"]
order = [m for m in order if m in set(summ["method"])]
colors = dict(zip(order, sns.color_palette(n_colors=len(order))))
keys = list(dict.fromkeys(summ["market"]))
fig, axes = plt.subplots(2, len(keys), figsize=(4.6 * len(keys), 7), squeeze=False)
for j, key in enumerate(keys):
    sub = summ[summ["market"] == key].set_index("method").reindex(order)
    x = np.arange(len(order))
    ax = axes[0][j]
    ax.bar(x, sub["utility"], color=[colors[m] for m in order], width=0.65)
    ax.errorbar(x, sub["utility"], yerr=[sub["utility"] - sub["ci_lo"], sub["ci_hi"] - sub["utility"]],
                fmt="none", ecolor="k", capsize=3, lw=1)
    for xi, u in zip(x, sub["utility"]):
        ax.text(xi, u / 2, f"{u:.0f}", ha="center", va="center", fontsize=8, color="white")
    title = setup.set_index("label").loc[key, "market"]
    ax.set_title(f"{key}: {title}\n{int(sub['n'].iloc[0])} jobs", fontsize=9, loc="left")
    ax.set_xticks(x, [])
    ax = axes[1][j]
    ax.bar(x, sub["cost"], color=[colors[m] for m in order], width=0.65)
    ax.errorbar(x, sub["cost"], yerr=sub["cost_ci"], fmt="none", ecolor="k", capsize=3, lw=1)
    ax.set_xticks(x, order, rotation=30, ha="right")
axes[0][0].set_ylabel("mean utility per job ($)")
axes[1][0].set_ylabel("mean cost per job ($)")
fig.suptitle(f"A1 = CHC (w={w}, v={v}) on oracle forecasts with error σ; A2 = prediction-free", fontsize=10)
fig.tight_layout()
save(fig, summ, OUT.utility_by_method)
plt.show()

# %% [markdown]
# ## Paired with A2, job by job
#
# Mean over jobs of (method − A2) in utility ($), with the 95% t-interval of that mean difference, and the
# share of jobs where the method is at least as good as A2. The claim holds on a market when A1 at σ = 0
# is above zero (cheaper, hence higher utility, since both finish in time) and A1 at the inaccurate σ is
# below A1 at σ = 0, possibly below zero.

# %%
pair = hz.paired(jobs, reference="A2", by=("market", "method"))
pair = pair[pair["method"].isin(order)]
fig, axes = plt.subplots(1, len(keys), figsize=(4.6 * len(keys), 3.6), sharey=False, squeeze=False)
others = [m for m in order if m != "A2"]
for ax, key in zip(axes[0], keys):
    sub = pair[pair["market"] == key].set_index("method").reindex(others)
    y = np.arange(len(others))
    ax.errorbar(sub["d_utility"], y, xerr=[sub["d_utility"] - sub["d_lo"], sub["d_hi"] - sub["d_utility"]],
                fmt="none", ecolor="grey", capsize=3)
    ax.scatter(sub["d_utility"], y, c=[colors[m] for m in others], zorder=3)
    ax.axvline(0, color="k", lw=0.8)
    ax.set_yticks(y, others)
    ax.invert_yaxis()
    ax.set_xlabel("utility − A2's utility, same job ($)")
    ax.set_title(key, fontsize=10, loc="left")
fig.tight_layout()
save(fig, pair, OUT.paired_vs_a2)
plt.show()

# %% [markdown]
# ## Key numbers
#
# Per market: mean cost and utility of A1 with accurate and inaccurate forecasts and of A2, and whether
# the paper's two statements hold on these jobs.

# %%
acc, inacc = f"A1 σ={sigmas[0]:g}", f"A1 σ={sigmas[-1]:g}"
rows = []
for key in keys:
    s = summ[summ["market"] == key].set_index("method")
    p = pair[pair["market"] == key].set_index("method")
    rows.append({"market": key, "jobs": int(s.loc["A2", "n"]),
                 f"cost {acc}": s.loc[acc, "cost"], f"cost {inacc}": s.loc[inacc, "cost"],
                 "cost A2": s.loc["A2", "cost"],
                 f"utility {acc}": s.loc[acc, "utility"], f"utility {inacc}": s.loc[inacc, "utility"],
                 "utility A2": s.loc["A2", "utility"],
                 "utility optimum": s.loc["optimum", "utility"] if "optimum" in s.index else np.nan,
                 f"{acc} − A2 ($)": p.loc[acc, "d_utility"], f"{inacc} − A2 ($)": p.loc[inacc, "d_utility"],
                 "accurate A1 cheaper than A2": bool(s.loc[acc, "cost"] < s.loc["A2", "cost"]),
                 "inaccurate A1 worse than A2": bool(s.loc[inacc, "utility"] < s.loc["A2", "utility"])})
key_numbers = pd.DataFrame(rows)
key_numbers.to_csv(out / OUT.key_numbers.csv, index=False)
figs.sweep_result(out, key_numbers, ["market"])  # headline numbers for `spotlab sweep`
display(key_numbers.round(2).set_index("market").T)
for r in rows:
    print(f"{r['market']}: A1 at σ={sigmas[0]:g} costs {r[f'cost {acc}']:.1f} $ vs A2 {r['cost A2']:.1f} $; "
          f"at σ={sigmas[-1]:g} {r[f'cost {inacc}']:.1f} $ (utility {r[f'utility {acc}']:.1f} / "
          f"{r[f'utility {inacc}']:.1f} vs A2 {r['utility A2']:.1f} $)")
