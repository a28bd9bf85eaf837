# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#   kernelspec: {display_name: Python 3, language: python, name: python3}
# ---

# %% [markdown]
# # 05 — Commitment level and window
#
# SPEC §7 item 5. A1 (committed horizon control) plans the next `w` slots from forecasts and commits to
# the first `v` ≤ w of them: v = 1 is receding horizon control (re-plan every slot), v = w fixed horizon
# control (re-plan once per window). The commitment level is the paper's key parameter: committing longer
# saves re-planning and dampens the reaction to one noisy forecast, but executes stale plans; a longer
# window sees further but relies on forecasts of far slots, which are the least accurate. The paper's
# point is that the best (w, v) depends on how accurate the forecasts are.
#
# Heatmaps of A1's mean utility per job ($) over (w, v), one panel per forecast error σ of the oracle
# (truth x (1 + N(0, σ² h)) at horizon h), one row per market; A2 (prediction-free, defaults) is the
# reference printed in each title. Cells with v > w do not exist (blank).

# %% tags=["parameters"]
out_dir = "paper_figures"
quick = False  # quick: the volatile synthetic market, 4 jobs, w in {2, 4, 6}
markets = ["h100", "marketplace", "volatile", "calm"]
ws = [1, 2, 4, 6, 8, 12]  # windows (slots)
vs = []  # commitment levels (slots); empty: the values of ws (only v up to w)
sigmas = [0.0, 0.3]
slot_hours = 1.0
hours = 24 * 21
stride_hours = 6.0
max_jobs = None
seed = 0
market_seed = 0
solver = "glpk"
n_jobs = 2
resume = True  # reuse the cells already in out_dir/05_commitment_jobs.csv

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
from spotlab.experiments.horizon import COMMITMENT as OUT

sns.set_theme(style="white", context="notebook")
out = Path(out_dir)
out.mkdir(parents=True, exist_ok=True)
if quick:
    markets, hours, max_jobs, ws = ["volatile"], 24 * 10, 4, [2, 4, 6]
save = figs.saver(out, OUT)
jobs_csv = out / OUT.commitment_jobs.csv
if not resume:
    jobs_csv.unlink(missing_ok=True)
spec = JobSpec()

# %% [markdown]
# ## Run
#
# Each (market, σ, w, v) cell is appended to `05_commitment_jobs.csv` (per job, with seed, parameters and
# set-up) as soon as it is done; a re-run reuses it.

# %%
tic = time.perf_counter()
parts = [hz.commitment_grid(key, spec, ws=ws, vs=vs or None, sigmas=sigmas, solver=solver, seed=seed, n_jobs=n_jobs,
                            out_csv=jobs_csv, verbose=True, slot_hours=slot_hours, hours=hours,
                            market_seed=market_seed, stride_hours=stride_hours, max_jobs=max_jobs)
         for key in markets]
jobs = pd.concat(parts, ignore_index=True)
print(f"{len(jobs)} job results in {time.perf_counter() - tic:.1f} s")
setup = hz.setup_table(jobs)
(out / OUT.setup.json).write_text(json.dumps({"seed": seed, "market_seed": market_seed, "ws": ws, "vs": vs,
                                               "sigmas": sigmas, "solver": solver,
                                               "setups": setup.to_dict(orient="records")}, indent=1, default=str))
display(setup.set_index("label").T)

# %% [markdown]
# ## Mean utility over (w, v)
#
# Rows of each heatmap: window w; columns: commitment v (slots of `slot_hours` h). Colour and number: mean
# utility per job ($); the colour scale is shared within a market. The black box marks the best cell of
# each panel.

# %%
summ = hz.summarize(jobs, by=("market", "sigma", "method"))
grid = summ[summ["family"] == "A1"].copy()
grid["w"], grid["v"] = grid["w"].astype(int), grid["v"].astype(int)
fig, axes = plt.subplots(len(markets), len(sigmas), figsize=(4.6 * len(sigmas) + 1, 3.9 * len(markets)),
                         squeeze=False)
for i, key in enumerate(markets):
    g = grid[grid["market"] == key]
    vmin, vmax = g["utility"].min(), g["utility"].max()
    a2u = float(summ[(summ["market"] == key) & (summ["method"] == "A2")]["utility"].iloc[0])
    for j, x in enumerate(sigmas):
        ax = axes[i][j]
        heat = g[np.isclose(g["sigma"], x)].pivot(index="w", columns="v", values="utility")
        sns.heatmap(heat, annot=True, fmt=".0f", cmap="viridis", vmin=vmin, vmax=vmax, ax=ax,
                    annot_kws={"fontsize": 8}, cbar_kws={"label": "mean utility per job ($)"})
        r, c = np.unravel_index(np.nanargmax(heat.to_numpy()), heat.shape)
        ax.add_patch(plt.Rectangle((c, r), 1, 1, fill=False, ec="k", lw=2))
        ax.set_title(f"{key}, σ={x:g} — A2: {a2u:.0f} $", fontsize=10, loc="left")
        ax.set_xlabel("commitment level v (slots)")
        ax.set_ylabel("window w (slots)")
fig.tight_layout()
save(fig, grid, OUT.utility_heatmap)
plt.show()

# %% [markdown]
# ## Key numbers
#
# Per market and σ: the best (w, v), its utility, the receding-horizon (v = 1) and fixed-horizon (v = w)
# utilities at the largest window, and A2's utility.

# %%
rows = []
wmax = max(ws)
for key in markets:
    a2u = float(summ[(summ["market"] == key) & (summ["method"] == "A2")]["utility"].iloc[0])
    for x in sigmas:
        g = grid[(grid["market"] == key) & np.isclose(grid["sigma"], x)]
        b = g.loc[g["utility"].idxmax()]
        at = g.set_index(["w", "v"])["utility"]
        rows.append({"market": key, "sigma": x, "best_w": int(b["w"]), "best_v": int(b["v"]),
                     "best_utility": b["utility"], f"rhc_w{wmax}": at.get((wmax, 1), np.nan),
                     f"fhc_w{wmax}": at.get((wmax, wmax), np.nan), "worst_utility": g["utility"].min(),
                     "A2_utility": a2u, "jobs": int(b["n"])})
best = pd.DataFrame(rows)
best.to_csv(out / OUT.best_cells.csv, index=False)
figs.sweep_result(out, best, ["market", "sigma"])  # headline numbers for `spotlab sweep`
display(best.round(2))
for r in rows:
    print(f"{r['market']} σ={r['sigma']:g}: best (w={r['best_w']}, v={r['best_v']}) {r['best_utility']:.1f} $, "
          f"worst {r['worst_utility']:.1f} $, A2 {r['A2_utility']:.1f} $")
