"""Every number that someone else published and spotlab compares itself with, typed once, with its source.

Experiments, notebooks and the claims report import these: a number read off a paper or a README must not
be retyped (and mistyped) in a second place. What *we* measure never goes here.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Mapping

# ------------------------------------------------------------------------------ Kong et al. (the paper)

# "increasing utility by up to 54.8%" over the best baseline. Source: the paper's abstract (arXiv 2512.20967),
# as quoted in the design notes ../shared/design/SPEC.md §7 item 7.
PAPER_BEST_IMPROVEMENT = 0.548

# ------------------------------------------------------------------- Can't Be Late known answers (SPEC §3.2)

# Mean cost (USD) over the 300 random-start windows of env us-west-2a_v100_1, as measured with the Can't Be
# Late simulator; "optimal" is that simulator's Omniscient policy. Source: the README of
# sky_spot_traces/adrs-cant-be-late-traces ("Known answers"), data from UCB-ADRS/ADRS-Leaderboard
# @ f856497ded0c34c97323730f2012a2767b1caa92, problems/cant_be_late (Wu et al., NSDI'24).
CANT_BE_LATE_MEAN_COST: Mapping[tuple[int, str], float] = MappingProxyType({
    (52, "on_demand"): 147.39,
    (52, "greedy"): 117.87,
    (52, "uniform_progress"): 96.98,
    (52, "optimal"): 79.63,
    (70, "on_demand"): 147.39,
    (70, "greedy"): 81.05,
    (70, "uniform_progress"): 66.16,
    (70, "optimal"): 57.69,
})
# The setting of those means (same README): 48 h of work, restart overhead 0.1 h, on-demand $3.06/h, spot
# $0.9731/h, 300 windows.
CANT_BE_LATE_SETUP: Mapping[str, float] = MappingProxyType(
    {"work_hours": 48.0, "overhead": 0.1, "od_price": 3.06, "spot_price": 0.9731, "runs": 300})
# How close a re-implementation must come to them: SPEC §3.2 ("within 1%").
CANT_BE_LATE_TOLERANCE = 0.01

# ------------------------------------------------------------- the ADRS leaderboard's Can't Be Late benchmark

# The benchmark and its score, from the README of sky_spot_traces/adrs-cant-be-late-traces ("The ADRS
# leaderboard's Can't Be Late benchmark"): 6 envs x 30 windows x these deadlines and restart overheads, a 48 h
# job at these prices; score = clip((146.88 - mean cost) / (146.88 - 46.7088)) x 100.
LEADERBOARD_DEADLINES = (52.0, 70.0)
LEADERBOARD_OVERHEADS = (0.02, 0.05, 0.1)
LEADERBOARD_WORK_HOURS = 48.0
LEADERBOARD_OD_PRICE = 3.06
LEADERBOARD_SPOT_PRICE = 0.9731
LEADERBOARD_SCORE_HIGH = 146.88  # the all-on-demand anchor (score 0)
LEADERBOARD_SCORE_LOW = 46.7088  # the all-spot anchor (score 100): 48 h x $0.9731

# The peers' mean cost over the 1,080 runs and the fraction of runs that met the deadline (None: not
# reported), every entry measured with the Can't Be Late simulator on one machine (2026-11). Source: the same
# README (data from UCB-ADRS/ADRS-Leaderboard @ f856497ded0c34c97323730f2012a2767b1caa92).
LEADERBOARD_PEERS: Mapping[str, tuple[float, float | None]] = MappingProxyType({
    "all on demand": (147.39, None),
    "Greedy": (119.03, None),
    "Uniform Progress": (101.68, None),
    "OpenEvolve": (104.30, None),
    "ShinkaEvolve": (101.18, None),
    "GEPA": (95.35, 0.939),
    "LEVI": (95.07, 0.941),
})

# ------------------------------------------------------------------------------ across zones (SPEC §9)

# The multi-region Can't Be Late leaderboard (UCB-ADRS/ADRS-Leaderboard @ f856497, `cant_be_late_multi`): mean cost
# per scenario (windows as its evaluator takes them) and AvgCost, the unmodified evaluator run; source: the README of
# ../shared/data/sky_spot_traces/adrs-cant-be-late-multi/. None: not given per scenario.
MULTI_LEADERBOARD_SCENARIOS = ("2_zones_same_region", "2_regions_east_west", "3_regions_diverse",
                               "3_zones_same_region", "5_regions_high_diversity", "all_9_regions")
MULTI_LEADERBOARD_PEERS: Mapping[str, tuple[tuple[float, ...] | None, float]] = MappingProxyType({
    "baseline": ((135.77, 62.57, 67.15, 127.23, 52.41, 47.99), 82.19),
    "OpenEvolve": (None, 80.06),
    "ShinkaEvolve": (None, 79.02),
    "GEPA": ((131.36, 61.82, 52.98, 127.82, 46.79, 47.39), 78.03),
    "LEVI": ((127.79, 51.52, 52.61, 119.73, 46.97, 47.84), 74.41),
})

# SkyNomad's GCP H100 benchmark, "shared six" zones, mean cost over windows 0-5 at deadline ratios 1.5 and 1.2, from
# its simulator (andylizf/skynomad-artifact @ 62b9aaa) run unmodified; source: the README of
# ../shared/data/sky_spot_traces/skynomad-gcp-h100/. Keys are its strategies, named as spotlab's policies where
# spotlab has one.
SKYNOMAD_SHARED_SIX: Mapping[str, tuple[float, float]] = MappingProxyType({
    "optimal": (520.98, 664.15),
    "SkyNomad(o)": (548.36, 687.97),
    "SkyNomad": (573.92, 729.01),
    "up_failover": (601.18, 761.00),
    "up_probe_cost": (662.90, 835.25),
    "up_probe": (839.86, 1076.37),
    "uniform_progress, one zone, mean of six": (1488.55, 1954.33),
})
SKYNOMAD_ONE_ZONE_UP_15: Mapping[str, float] = MappingProxyType({
    "us-east4-b": 633.30, "us-central1-a": 754.61, "us-west1-a": 1379.57, "asia-southeast1-b": 1475.03,
    "europe-west3-c": 2253.60, "asia-south2-b": 2435.20})
# The SkyNomad paper (arXiv 2601.06520), on a scenario of other zones at ratio 1.5.
SKYNOMAD_PAPER: Mapping[str, float] = MappingProxyType({"optimal": 571.38, "SkyNomad": 606.38, "up_failover": 795.01})


# ------------------------------------------------------------------------- the other seeds (SPEC §8)

# CoTune (Jansen et al.): validity error 4.2%, throughput (performance) error 9.4%, ~11% at 600 samples,
# configurations differing up to 40x in throughput. Source: ../shared/design/COTUNE_RLTUNE.md and SPEC §8.
COTUNE_PREDICTION: Mapping[str, float] = MappingProxyType(
    {"validity_error": 0.042, "throughput_error": 0.094, "throughput_error_at_600": 0.11, "spread": 40.0})
# CoTune: mean job completion time -78% under FIFO and -70% under Sia with predicted configuration knowledge.
# Source: ../shared/design/COTUNE_RLTUNE.md and SPEC §8.
COTUNE_JCT_CHANGE: Mapping[str, float] = MappingProxyType({"fifo": -0.78, "sia": -0.70})

# RLTune (Dongare et al., arXiv 2512.10271): GPU utilisation up to +20%, queueing delay up to -81%, job
# completion time up to -70%. Source: ../shared/design/SPEC.md §8 and COTUNE_RLTUNE.md.
RLTUNE: Mapping[str, float] = MappingProxyType(
    {"utilisation_change": 0.20, "queueing_delay_change": -0.81, "jct_change": -0.70})
