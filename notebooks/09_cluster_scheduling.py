# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#   kernelspec: {display_name: Python 3, language: python, name: python3}
# ---

# %% [markdown]
# # 09 — CoTune: job completion time per scheduling policy and configuration source
#
# SPEC §8. The seed reports that feeding *configuration knowledge* into a cluster scheduler cuts the mean job
# completion time (JCT) by 78% under FIFO and by 70% under Sia. Here fine-tuning jobs share a heterogeneous
# cluster (8-GPU A100 nodes and 4-GPU L40S nodes) and the scheduler must fill in each job's GPU model,
# software version and number of GPUs. Four sources of that knowledge are compared (`spotlab.cotune.jobs`):
#
# - **user** — the user's guess: the GPU count the trace asked for, a software version, either GPU model; an
#   out-of-memory failure (after `fail_after_s`) sends the job back to the queue with more GPUs (trial and error);
# - **profiling** — short profiling runs of every candidate configuration (`profile_s` each) before the job;
# - **predicted** — the validity classifier and throughput regressor of notebook 08, trained on historical runs;
# - **oracle** — the analytical ground truth (never fails, knows every throughput).
#
# Whatever a source believes, what happens when a configuration runs is the same for all of them (common
# random numbers from the ground truth, `spotlab.cotune.perf`). Policies (`spotlab.cluster`): **FIFO**
# (strict arrival order, head-of-line blocking) and **Sia-like** (throughput-aware: starts the queued job and
# configuration with the best estimated throughput per GPU relative to that job's best, with backfilling;
# real Sia also re-allocates and preempts).
#
# Workload: arrivals and requested GPU counts of the **Alibaba GPU trace 2023** (first half of its observed
# span; the second half is kept for `spotlab cotune cluster --part 0.5:1`), runtimes drawn from **Philly** job
# runtimes (capped at `max_runtime_h`), and each job's model, method, tokens per sample and batch size drawn
# among those that can run. A job's work is its Philly runtime times its best configuration's throughput.
# Arrival times are scaled so that the offered load (GPU-time of the best configurations over the cluster's
# GPU-time) is `load`: the trace's own pace on this small cluster would be a different experiment.

# %% tags=["parameters"]
out_dir = "paper_figures"
quick = False  # quick: the first 500 jobs, one load, a small sensitivity grid
cluster_spec = "A100-80GB:4x8,L40S-48GB:8x4"  # pools GPU:NODESxGPUS_PER_NODE
part = [0.0, 0.5]  # fraction of the trace's observed span (the rest is held out)
n_jobs = None  # first N jobs of that part (None: all)
max_runtime_h = 48.0  # cap on Philly runtimes
load = 0.4  # offered load of the headline comparison
loads = [0.2, 0.4, 0.6]  # offered loads of the JCT-vs-load figure
seeds = [0, 1, 2]  # replications: job specs, runtimes, failures and training data differ per seed
train_runs = 5000  # historical runs the predicted source learns from (notebook 08)
train_sizes = [100, 600, 5000]  # predicted sources trained on fewer runs (sensitivity)
sigmas = [0.0, 0.2, 0.4]  # throughput error of degraded knowledge (log-normal sigma)
flips = [0.0, 0.1, 0.2]  # share of wrong validity answers of degraded knowledge
fail_after_s = 120.0  # time an out-of-memory run holds its GPUs before it dies
profile_s = 60.0  # one profiling run per candidate configuration
workers = 2  # processes running the seeds' simulations at once

# %%
import time

from spotlab.experiments.figures import project_path

out_dir = str(project_path(out_dir))  # relative: under the project root, wherever the notebook runs
import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns
from IPython.display import display
from joblib import Parallel, delayed

from spotlab.cluster.state import Cluster
from spotlab.experiments.cotune_cluster import Settings, compare, sensitivity, train_knowledge
from spotlab.cotune.jobs import fine_tune_jobs, offered_load, scaled, time_scale_for_load
from spotlab.cluster.alibaba_philly_workload import trace_workload
from spotlab.experiments.figures import saver, sweep_result
from spotlab.experiments.outputs import CLUSTER_SCHEDULING as OUT
from spotlab.experiments.published import COTUNE_JCT_CHANGE as SEED_CLAIMS  # the seed's numbers

sns.set_theme(style="whitegrid", context="notebook")
if quick:
    n_jobs, loads, train_sizes, seeds = n_jobs or 500, [load], [600], seeds[:1]
    sigmas, flips = [0.0, 0.4], [0.0, 0.2]
    workers = 1  # one seed: nothing to share out
save = saver(out_dir, OUT)
POLICIES = ("fifo", "sia")
tic = time.perf_counter()
cluster = Cluster.parse(cluster_spec)
runs = {}  # per seed: the jobs, the settings and the four sources
for sd in seeds:
    trace = trace_workload(part=tuple(part), n_jobs=n_jobs, seed=sd, max_runtime_s=max_runtime_h * 3600)
    jobs = fine_tune_jobs(trace, cluster, seed=sd)
    runs[sd] = (jobs, Settings(seed=sd, fail_after_s=fail_after_s, profile_s=profile_s),
                {"user": "user", "profiling": "profiling", "predicted": train_knowledge(train_runs, seed=sd),
                 "oracle": "oracle"})
first = runs[seeds[0]][0]
print(f"{len(first)} jobs per seed, seeds {seeds}, cluster {cluster} ({cluster.gpus} GPUs); the trace's own pace "
      f"is an offered load of {offered_load(first, cluster):.2f}")
display(pd.DataFrame([dict(j.spec) for j in first]).value_counts(["model_name", "method"]).rename("jobs").reset_index())


def at_load(jobs: list, x: float) -> list:
    return scaled(jobs, time_scale_for_load(jobs, cluster, x))


def over_seeds(*points: tuple) -> list[pd.DataFrame]:
    """`compare` for every seed at each point (offered load x, sources from a seed's, extra columns), run on
    `workers` processes: one frame per point, one row per (seed, policy, source)."""
    tasks = [(x, of, extra, jobs, st, srcs) for x, of, extra in points for jobs, st, srcs in runs.values()]
    parts = Parallel(n_jobs=workers)(
        delayed(compare)(cluster, at_load(jobs, x), of(srcs, st.seed), POLICIES, st, progress=False)
        for x, of, extra, jobs, st, srcs in tasks)
    frames = [part.assign(load=x, **extra) for part, (x, _, extra, *_) in zip(parts, tasks)]
    k = len(runs)
    return [pd.concat(frames[i:i + k], ignore_index=True) for i in range(0, len(frames), k)]


def same(srcs: dict, seed: int) -> dict:
    return srcs


# %% [markdown]
# ## Mean and p95 JCT, and GPU-hours wasted, per policy and source
#
# Per seed, `jct_change_vs_user` is the change of the mean JCT against the user's guesses under the same
# policy — the quantity of the seed's −78% (FIFO) and −70% (Sia); the table averages it over the seeds (and
# gives its range). Bars: mean over seeds of the mean JCT, black ticks the p95; error bars the seeds' spread.

# %%
(per_seed,) = over_seeds((load, same, {}))
order = ["user", "profiling", "predicted", "oracle"]
cols = ["mean_jct_h", "p95_jct_h", "mean_queue_h", "gpu_hours_wasted", "utilisation", "jobs_failed",
        "jct_change_vs_user"]
table = per_seed.groupby(["policy", "source"], sort=False)[cols].mean().reset_index()
spread = per_seed.groupby(["policy", "source"], sort=False)["jct_change_vs_user"].agg(["min", "max"])
table = table.join(spread.rename(columns={"min": "jct_change_min", "max": "jct_change_max"}), on=["policy", "source"])
display(table.round(3))
fig, axes = plt.subplots(1, 2, figsize=(12, 4.2))
sns.barplot(per_seed, x="source", y="mean_jct_h", hue="policy", order=order, ax=axes[0], errorbar=("pi", 100))
for i, pol in enumerate(POLICIES):
    t = table[table["policy"] == pol].set_index("source").loc[order]
    axes[0].scatter([k + (i - 0.5) * 0.4 for k in range(len(order))], t["p95_jct_h"], marker="_", s=300,
                    color="black", zorder=3, label="p95" if i == 0 else None)
axes[0].set(ylabel="JCT (h): bar mean, tick p95", xlabel="", title=f"offered load {load:g}, {len(seeds)} seed(s)")
axes[0].legend()
sns.barplot(per_seed, x="source", y="gpu_hours_wasted", hue="policy", order=order, ax=axes[1], errorbar=("pi", 100))
axes[1].set(ylabel="GPU-hours wasted (failed runs + profiling)", xlabel="")
save(fig, per_seed, OUT.jct_by_source)

# %% [markdown]
# ## JCT against load
#
# The same comparison at several offered loads: knowledge matters more as queues grow, because a failed or
# slow job delays the jobs behind it.

# %%
others = dict(zip([x for x in loads if x != load], over_seeds(*[(x, same, {}) for x in loads if x != load])))
by_load = pd.concat([per_seed if x == load else others[x] for x in loads], ignore_index=True)
g = sns.relplot(by_load, x="load", y="mean_jct_h", hue="source", col="policy", kind="line", marker="o",
                hue_order=order, height=3.8, aspect=1.2, facet_kws={"sharey": False})
g.set_axis_labels("offered load", "mean JCT (h)")
save(g.figure, by_load, OUT.jct_vs_load)

# %% [markdown]
# ## Sensitivity to prediction error
#
# Left: predicted knowledge trained on fewer historical runs (notebook 08's learning curve). Right: the ground
# truth degraded on purpose — throughput off by a log-normal factor (sigma) and a share of validity answers
# flipped — mean JCT relative to the user's guesses under the same policy.

# %%
base = per_seed[per_seed["source"] == "user"].set_index(["seed", "policy"])["mean_jct_h"]


def vs_user(df: pd.DataFrame) -> pd.DataFrame:
    key = pd.MultiIndex.from_arrays([df["seed"].astype(int), df["policy"]])
    return df.assign(jct_change_vs_user=df["mean_jct_h"].to_numpy() / base.reindex(key).to_numpy() - 1)


# trained on `train_runs` runs is the headline's predicted source: its runs are already in per_seed
fewer = [n for n in train_sizes if n != train_runs]
trained = dict(zip(fewer, over_seeds(*[(load, lambda srcs, sd, n=n: {"predicted": train_knowledge(n, seed=sd)},
                                        {"train_runs": n}) for n in fewer])))
trained[train_runs] = per_seed[per_seed["source"] == "predicted"].assign(train_runs=train_runs)
by_size = vs_user(pd.concat([trained[n] for n in train_sizes], ignore_index=True))
# one task per (seed, sigma, flip): three seeds' grids on two workers would leave one idle for a third of the time
noisy = vs_user(pd.concat(Parallel(n_jobs=workers)(
    delayed(sensitivity)(cluster, at_load(jobs, load), [sg], [fl], POLICIES, st, progress=False)
    for jobs, st, _ in runs.values() for sg in sigmas for fl in flips), ignore_index=True))
fig, axes = plt.subplots(1, 3, figsize=(16, 4.2))
sns.lineplot(by_size, x="train_runs", y="jct_change_vs_user", hue="policy", marker="o", ax=axes[0])
axes[0].set(xscale="log", xlabel="historical runs the predictors learn from", ylabel="mean JCT vs user guesses")
for ax, pol in zip(axes[1:], POLICIES):
    piv = noisy[noisy["policy"] == pol].pivot_table(index="flip", columns="sigma", values="jct_change_vs_user")
    sns.heatmap(piv, annot=True, fmt=".0%", cmap="RdYlGn_r", center=0, ax=ax, cbar=False)
    ax.set(title=f"{pol}: mean JCT vs user guesses", xlabel="throughput error sigma", ylabel="validity flipped")
save(fig, pd.concat([by_size.assign(kind="trained"), noisy.assign(kind="degraded")], ignore_index=True),
     OUT.sensitivity)

# %% [markdown]
# ## Against the seed's numbers

# %%
vs = table[table["source"].isin(["predicted", "oracle", "profiling"])][
    ["policy", "source", "mean_jct_h", "p95_jct_h", "gpu_hours_wasted", "jct_change_vs_user", "jct_change_min",
     "jct_change_max"]].copy()
vs["seed_claim"] = vs["policy"].map(SEED_CLAIMS)
display(vs.round(3))
sweep_result(out_dir, table[["policy", "source", "mean_jct_h", "p95_jct_h", "gpu_hours_wasted",
                             "jct_change_vs_user"]], ["policy", "source"])
print(f"notebook 09 took {time.perf_counter() - tic:.0f} s")

# %% [markdown]
# Reading the figures. Under the Sia-like policy, knowledge helps the way the seed says: the scheduler starts
# each job on a configuration that runs and that uses its GPUs well, and no GPU-hours go to out-of-memory
# trials. Under FIFO, compare the p95 with the mean: a user's failed guess sends the job to the back of the
# queue, which in a long FIFO queue works like "shortest job first" for the large jobs that fail most —
# their wait grows (the p95) while many small jobs pass them (the mean). Knowledge removes the failures and with
# them that accidental reordering. A source's wrong predictions end in the user's trial and error, so they cost
# time and GPU-hours, never a lost job. The seed's cluster, workload and users' guesses are not public: the
# size of the gap depends on how often guesses fail and on the load (the JCT-vs-load figure);
# `paper_figures/README.md` (written by `make reproduce`) puts our numbers next to the seed's.
