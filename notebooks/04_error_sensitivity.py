# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#   kernelspec: {display_name: Python 3, language: python, name: python3}
# ---

# %% [markdown]
# # 04 — Sensitivity to the prediction error
#
# SPEC §7 item 4. How much utility does each algorithm lose as forecasts get worse? The paper shows the
# utility of A1 (several window / commitment levels), A2 and A3 against the forecast error; its claim is
# that A1's advantage shrinks and turns into a loss as the error grows, while A2 (which reads no forecast)
# is flat and A3, which learns from a pool of A1 and A2 variants which one to trust, stays near the best.
#
# The error is dialled with the controlled-error oracle: the forecast of slot t+h is
# truth x (1 + N(0, σ² h)) for availability and price (σ = 0: perfect foresight). The oracle's draws are the
# same standard normals at every σ (same seed), so the curves move with σ only. A1 = `chc` with window `w`
# and commitment `v` (v = 1 receding horizon, v = w fixed horizon). A2 = `prediction_free` with its defaults.
# A3 = `select` (Hedge, full information, rounds = jobs in trace order) over the pool of the A1 variants at
# the same σ plus `a2_pool`. Every method replays the same jobs of each market.

# %% tags=["parameters"]
out_dir = "paper_figures"
quick = False  # quick: the volatile synthetic market, 4 jobs, 3 sigmas, 2 A1 variants
markets = ["h100", "marketplace", "volatile", "calm"]
sigmas = [0.0, 0.2, 0.5, 0.75]  # each sigma is its own cells (about a minute each on 2 cores): add some for a finer curve
chc_variants = [[6, 1], [6, 3], [6, 6], [12, 4]]  # (w, v) of the A1 lines
a2_pool = [{"theta": 0.4, "sigma": 0.8}, {"theta": 0.6, "sigma": 0.8}, {"theta": 0.8, "sigma": 0.9}]
include_select = True
algorithm = "flipflop"
slot_hours = 1.0
hours = 24 * 21
stride_hours = 6.0
max_jobs = None
seed = 0
market_seed = 0
solver = "glpk"
n_jobs = 2
resume = True  # reuse the cells already in out_dir/04_error_sensitivity_jobs.csv

# %%
import json
import time
from pathlib import Path

from spotlab.experiments.figures import project_path

out_dir = str(project_path(out_dir))  # relative: under the project root, wherever the notebook runs
import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns
from IPython.display import display

from spotlab.experiments import figures as figs
from spotlab.experiments import horizon as hz
from spotlab.experiments.setups import JobSpec
from spotlab.experiments.horizon import SENSITIVITY as OUT

sns.set_theme(style="whitegrid", context="notebook")
out = Path(out_dir)
out.mkdir(parents=True, exist_ok=True)
if quick:
    markets, hours, max_jobs = ["volatile"], 24 * 10, 4
    sigmas, chc_variants = [0.0, 0.25, 0.5], [[6, 1], [6, 6]]
save = figs.saver(out, OUT)
jobs_csv = out / OUT.error_sensitivity_jobs.csv
if not resume:
    jobs_csv.unlink(missing_ok=True)
spec = JobSpec()

# %% [markdown]
# ## Run
#
# Each (market, σ, method) cell is appended to `04_error_sensitivity_jobs.csv` (per job, with seed,
# parameters and set-up) as soon as it is done; a re-run reuses it.

# %%
tic = time.perf_counter()
parts = []
for key in markets:
    parts.append(hz.error_sensitivity(key, spec, sigmas=sigmas, chc_variants=[tuple(x) for x in chc_variants],
                                      include_select=include_select, a2_pool=a2_pool, algorithm=algorithm,
                                      solver=solver, seed=seed, n_jobs=n_jobs, out_csv=jobs_csv, verbose=True,
                                      slot_hours=slot_hours, hours=hours, market_seed=market_seed,
                                      stride_hours=stride_hours, max_jobs=max_jobs))
jobs = pd.concat(parts, ignore_index=True)
print(f"{len(jobs)} job results in {time.perf_counter() - tic:.1f} s")
setup = hz.setup_table(jobs)
(out / OUT.setup.json).write_text(json.dumps({"seed": seed, "market_seed": market_seed, "sigmas": sigmas,
                                               "chc_variants": chc_variants, "a2_pool": a2_pool,
                                               "algorithm": algorithm, "solver": solver,
                                               "setups": setup.to_dict(orient="records")}, indent=1, default=str))
display(setup.set_index("label").T)

# %% [markdown]
# ## Utility vs forecast error
#
# Top row: mean utility per job ($) vs σ, with 95% t-interval bands over jobs (wide: jobs differ a lot).
# Bottom row: the same methods paired with A2 on each job — mean of (method − A2) utility ($) with its
# 95% band; above 0 the method beats the prediction-free rule. A2 is flat by construction (it reads no
# forecast; its line is repeated at every σ).

# %%
summ = hz.summarize(jobs, by=("market", "sigma", "method"))
pair = hz.paired(jobs, reference="A2", by=("market", "sigma", "method"))
a1 = [f"A1 w={w_} v={v_}" for w_, v_ in chc_variants]
methods = a1 + ["A2"] + (["A3 select"] if include_select else [])
palette = dict(zip(a1, sns.color_palette("Blues_d", n_colors=len(a1))))
palette.update({"A2": "tab:red", "A3 select": "tab:green"})
style = {m: ("-", "o") for m in a1} | {"A2": ("--", None), "A3 select": ("-", "s")}
fig, axes = plt.subplots(2, len(markets), figsize=(5 * len(markets), 7.5), squeeze=False, sharex=True)
for j, key in enumerate(markets):
    for m in methods:
        s = summ[(summ["market"] == key) & (summ["method"] == m)].sort_values("sigma")
        ls, mk = style[m]
        axes[0][j].plot(s["sigma"], s["utility"], ls=ls, marker=mk, color=palette[m], label=m,
                        lw=2.2 if m.startswith("A3") else 1.5)
        axes[0][j].fill_between(s["sigma"], s["ci_lo"], s["ci_hi"], color=palette[m], alpha=0.08)
        if m == "A2":
            axes[1][j].axhline(0, color=palette[m], ls="--", lw=1.5, label="A2 (reference)")
            continue
        p = pair[(pair["market"] == key) & (pair["method"] == m)].sort_values("sigma")
        axes[1][j].plot(p["sigma"], p["d_utility"], ls=ls, marker=mk, color=palette[m], label=m)
        axes[1][j].fill_between(p["sigma"], p["d_lo"], p["d_hi"], color=palette[m], alpha=0.12)
    n = int(summ[summ["market"] == key]["n"].iloc[0])
    axes[0][j].set_title(f"{key}: {setup.set_index('label').loc[key, 'market']} ({n} jobs)", fontsize=9, loc="left")
    axes[1][j].set_xlabel("forecast error σ (oracle noise std per √slot)")
axes[0][0].set_ylabel("mean utility per job ($)")
axes[1][0].set_ylabel("utility − A2's on the same job ($)")
axes[0][0].legend(fontsize=8)
fig.tight_layout()
save(fig, summ, OUT.utility_vs_sigma)
pair.to_csv(out / OUT.paired_vs_a2.csv, index=False)
plt.show()

# %% [markdown]
# ## Key numbers
#
# Per market: A2's utility, each A1 variant's and A3's at σ = 0 and at the largest σ, the σ at which the
# best A1 variant falls below A2 (if it does), and A3's gap to the best A1 variant at each σ.

# %%
lo, hi = min(sigmas), max(sigmas)
table = summ.pivot_table(index=["market", "method"], columns="sigma", values="utility").round(2)
display(table)
table.reset_index().to_csv(out / OUT.utility_table.csv, index=False)
figs.sweep_result(out, summ[["market", "method", "sigma", "utility"]], ["market", "method", "sigma"])
for key in markets:
    s = summ[summ["market"] == key]
    a2u = float(s[s["method"] == "A2"]["utility"].iloc[0])
    best = s[s["method"].isin(a1)].groupby("sigma")["utility"].max()
    below = best[best < a2u]
    msg = f"{key}: A2 {a2u:.1f} $; best A1 {best.loc[lo]:.1f} $ at σ={lo:g}, {best.loc[hi]:.1f} $ at σ={hi:g}"
    msg += f"; best A1 below A2 from σ={below.index.min():g}" if len(below) else "; best A1 never below A2"
    if include_select:
        a3 = s[s["method"] == "A3 select"].set_index("sigma")["utility"]
        msg += f"; A3 {a3.loc[lo]:.1f} / {a3.loc[hi]:.1f} $ (gap to best A1: " + ", ".join(
            f"σ={x:g}: {a3.loc[x] - best.loc[x]:+.1f}" for x in sorted(a3.index)) + ")"
    print(msg)
