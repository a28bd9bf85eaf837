"""A1 — committed horizon control (CHC) over the window problem, fed by a forecaster (SPEC §6).

Every `v` slots (the commitment level) the policy solves the window problem of the next `w` slots from
the true state (`spotlab.optimum.window`): slot t's availability and price are observed, slots t+1 ..
t+w-1 are forecast, and a fluid tail from the window's end to the hard deadline prices the work left with
the spot GPU-hours the market's past leads one to expect there (`_tail`), on-demand GPU-hours and the job's
value by completion time. It then commits to the first v planned allocations. v = 1 is receding horizon
control, v = w fixed horizon control. The default is v = 1: with real forecasts a committed plan cannot
react to the availability it did not foresee (notebook 05 maps the whole (w, v) plane).
With `averaging=True` it is the CHC of Chen et al. (SIGMETRICS 2016): v fixed-horizon controllers
re-plan at staggered slots (controller k at t = k mod v) and each slot runs the average of the v
committed plans (rounded to whole GPUs), which smooths the plan's reaction to one bad forecast.

Forecasts come from a registered model (`predictor="arima"`, fitted on the trace before the job's
window plus what has been observed since, refitted every `refit_hours`, updated in between) or, for
sensitivity experiments, from the controlled-error oracle (`predictor="oracle"`, error `sigma`;
sigma = 0 is perfect foresight). `quantile=q` plans on the GPUs available with probability q
instead of the point forecast. The tail after the window (`tail`) comes from the past for a real model, and
from the oracle's forecast of its own slots for the oracle ("auto"; "past" gives the oracle the past's tail).

Why the tail and not a terminal value [ours]: a terminal value prices the work left at one reference
price and values it at the earliest possible completion, so the plan defers work it will later have to
buy on demand, or finish late (on a real H100 zone, CHC with *perfect* window forecasts fell below uniform
progress that way). With the tail, whole-horizon CHC with perfect forecasts is the optimum
(`tests/test_chc_quality.py`), and with w = 12 on 36-h jobs it stays within a few percent of the job's
on-demand cost of the optimum on held-out zones.

Why the oracle's tail reads the future [ours]: perfect forecasts are perfect after the window too. With
`predictor="oracle"` the tail is the oracle's forecast of the tail's slots, slot by slot (with the oracle's error
when sigma > 0), where a real model's tail is the past's profile below. Before, "A1 with perfect forecasts" at
w = 12 saw 12 slots and then the past week, so where the regime changed it fell far below the optimum: GCP H100
us-west1-a, a 68-h job on 2 GPUs (`spotlab heldout --seed 5`, job shape 7): 2 or more spot GPUs in 35% of the past
week's hours and 83% of the first job's, 91.9 $/job against the optimum's 118.3 (116.3 now); europe-west3-c (2% and
then up to 99%) -34.0 against 38.0 (36.5 now). Three things make such a tail work, each measured on the 72 cells of
`spotlab heldout --seed 5 --jobs 8` (nine GCP H100 zones), where the w = 12 bar (within 10% of the optimum, not
below uniform progress) went from 65 cells with the past's tail to 70 and then 72:
- a job that may give up may leave the tail unfinished, since the tail is then a forecast and not the past's
  average (`TailForecast.forecast`);
- each block loses the restart overhead of the spells the forecast starts, changes or ends in it and pays the
  forecast's prices there (`_forecast_tail`); against the tail-wide share the past's tail uses, 21 cells moved
  towards the optimum by up to 17.7 $/job and 11 away by up to 1.7 (mean gap to the optimum 0.94% -> 0.81%);
- the timing bias below stays on, but before such a tail it buys on-demand GPUs earlier, not later
  (`WindowProblem.terms`). Without any bias CHC fell just below uniform progress where there was nothing to gain
  (asia-south2-b, hardly any spot, a cost-only job: 2,828.6 $/job against 2,826.5); with on-demand deferred, the
  plan bought it between later spot spells where the optimum bought it in one block before a drought, and paid
  the restarts (us-east4-a, job shape 7, job 2: 54 on-demand GPU-hours against 52). Bought earlier: the bar went
  from 70 to 72 cells, the mean gap 0.81% -> 0.65% (14 cells up by up to 16.7 $/job, 20 down by up to 7.9).
The tail is still a fluid model: whole GPUs, switches between on-demand and spot, and the net are modelled only in
the window.
`tail="past"` keeps the oracle's window and the past's tail, which is what a real forecaster's plan leans on: the
tests of the tail's own features and the leaderboard's perfect-window line (notebook 01c) use it. The measurements
below that say "perfect window forecasts" were all made with the past's tail.

Why the tail is conditioned on the window [ours]: spot comes in regimes (a zone empty for a day, then full). A tail
expecting the time-of-day average after a window that ends with no spot promises spot that a drought does not
deliver, so the plan waits, then buys late on demand or finishes late. The tail therefore moves the time-of-day
average towards the window's last slot by the least-squares slope the past gives at each lag
(`spotlab.predict.reversion.lag_slopes`, clipped to [0, 1]). On a held-out job (96 GPU-h on 1-8 GPUs, value 400 $,
24/36 h) with perfect window forecasts this took GCP H100 us-west1-a from 29.3 to 39.6 $/job (optimum 40.7) and
us-east4-a from 150.9 to 166.7 (169.3); on synthetic markets of day-long regimes it is within 5% of the optimum
(`tests/test_chc_tail.py`). The tail's work per GPU-hour is the concave envelope of H
(`spotlab.optimum.window.work_segments`), not the best rate alone, which overstated what many GPUs do for beta > 0.

Why the tail's spot hours are discounted by restarts [ours]: each time spot comes back (or changes level)
and each time it goes, a job on it loses the restart overhead. A tail that counts every expected spot hour
as a working hour promises more than flickering spot delivers, so the plan waits for it and finishes late.
`restart_share` is the share of a spot hour left after the restarts that followed spot took in the
market's past; the tail's spot capacity is scaled by it and its price divided by it. For a 200-GPU-hour job
(2-8 GPUs, beta > 0, 0.25-h restarts, 40/60 h) with perfect window forecasts this took GCP H100
us-central1-c from 2.5 to 24.0 $/job (optimum 72.8) and us-east4-a from 226.0 to 230.8 (253.8), and none
of the six zones measured before and after lost; on the 96-GPU-hour job above no zone moved by more than
0.8 $/job.

Why the tail's blocks lose the hours restarts stall [ours]: a restart stops the whole job, its on-demand GPUs
included, so spot that comes and goes takes time from a block, not only spot GPU-hours. Discounting spot alone
left the block N_max GPU-hours an hour to fill with on-demand, so a tight plan counted on finishing the tail
at full speed, deferred work, and finished late. Each block now loses (1 - `restart_share`) of the hours spot
is expected there (its expected spot GPU-hours over spot's mean level while there), `TailForecast.stalled_hours`.
On the 200-GPU-hour job above, with perfect window forecasts: us-central1-c 24.0 -> 49.4 $/job (optimum 72.8),
us-east4-b 138.5 -> 157.7 (185.6), us-central1-a 499.6 -> 503.1, us-east4-a 230.8 -> 232.0; us-west1-a
-343.6 -> -347.0, europe-west3-c -1531.0 -> -1536.7 and us-west1-b -1247.7 -> -1252.1 (within 0.4% of the
optimum's magnitude); the 96-GPU-hour job did not move on any of nine zones. On synthetic markets where spot
comes in spells of about two hours (`tests/test_chc_quality.py`), every one of eleven seeds of a tight job
gained; on twelve random jobs there (1-8 GPUs, beta of either sign, 0.1/0.25-h restarts, any value) nine did
not move, two gained 0.5% and 2.5% of the job's all-on-demand cost and one lost 0.35%.

Why the tail counts spot below N_min [ours]: a job that needs N_min GPUs runs on a < N_min spot GPUs beside
N_min - a on-demand ones (the window problem mixes them), so such an hour offers N_min GPU-hours at their blended
price. A tail that counted no spot there expected to buy much of the job on demand and mixed on-demand GPUs in at
once, where the market later had spot for the whole job. They are a tier of their own (`TailForecast.mixed_gpu_hours`),
dearer than spot: pooled with spot at one average price they looked as cheap as spot at the margin, and a plan
idled through hours it could have mixed in (on synthetic markets of spot at 2..8 GPUs, a cost-only job on exactly
8 GPUs: 612 $/job against the optimum's 514; 543 as a tier of its own, 572 without counting them). On GCP H100
with perfect window forecasts (w = 12, 20 jobs a zone), as a tier: a cost-only job of 157 GPU-hours on exactly 4
GPUs with 80 h to finish, us-west1-a, cost 923.9 $/job instead of 942.7 (optimum 853.1); 102 GPU-hours on 4 GPUs,
54 h: 729.9 instead of 739.6 (696.0); 266 GPU-hours on 6-8 GPUs (beta 0.51, value 1,201 $): -1032.4 $/job instead
of -1058.6 (-874.9), and on us-east4-b 266.2 instead of 242.3 (309.0). Jobs with N_min = 1 have no such hours.

Why a plan that cannot finish still works, and why the tail leaves the net's margin alone [ours]: on the Can't Be
Late leaderboard's runs (one instance, 48 h of work, 52 or 70 h to do it, 10-min slots, so a 12-slot window is 2 h)
CHC with *perfect* window forecasts cost more than uniform progress. Two things made it idle through its slack
while the window showed no spot. (1) When the tail's stalled hours left no room to finish, every plan of the window
problem earned the same "unfinished" constant, so doing nothing was the cheapest: work left beyond what the window
and the tail can do is now priced (`WindowProblem.shortfall_price`), above what any unit of work costs. (2) The
tail counted as its own the last slack before the hard deadline, which the deadline net claims: below a restart of
slack (the Can't Be Late guard: a restart and a slot) the net runs the job on on-demand GPUs to the end, so a plan
that idled into it lost every later spot spell; the tail now leaves that margin out (`WindowProblem.net_margin`).
On the first two windows of each of the six traces, both deadlines, 0.02- and 0.1-h restarts (48 runs), perfect
window forecasts: 100.4 $ a run before (1), 92.5 with (1), 88.8 with both (the optimum 84.7, uniform progress 93.7,
`slack_reserve` 88.4); on the next two windows (0.05-h restarts, 24 runs) (2) took it from 72.7 to 70.5 (optimum
64.5, uniform progress 75.1, `slack_reserve` 66.5) and CHC on persistence forecasts from 76.9 to 74.6. A margin a
slot wider gained little more there (88.4, 70.4; on persistence forecasts 73.3) and cost CHC on persistence
forecasts up to 23 $/job on a 12-h GCP job of 2-8 GPUs, whose window reaches all but its last slot. The GCP H100
jobs above did not move (the 96-GPU-hour job on nine zones, the 200-GPU-hour one on the four measured), and neither
change touches a window that reaches the job's end. On start ticks not used to choose it (every 31st from 11, the
first four of each trace, both deadlines, three overheads: 144 runs, perfect window forecasts) the margin took CHC
from 99.37 to 95.20 $ a run (optimum 88.63, uniform progress 100.57): lower on 84 runs, higher on 39 (by 6.98 $ at
most). The rest of the gap is the tail's certainty: it expects the
spells of the past week, so where spot then flickers more it still idles at first while its window shows none.
A reserve of one more slot while the plan leans on the past's tail (scaled down on tails shorter than the window,
so that a 12-h job keeps its last slot) did not settle it on GCP H100 either: as A3's CHC member on persistence
forecasts it gained 5.2 $/job against uniform progress on the 72 cells of `spotlab heldout --seed 5 --jobs 8`
(e.g. a 59-h cost-only job on one GPU on europe-west3-c, which idled through a drought into the net and then ran on
demand through 22 h of spot: -227.9 -> -190.1) and 1.0 on the 30 of `--seed 9`, but A3's bar went from 62 to 63 and
from 24 to 24 cells (twice the selector left the member, whose outcomes had hardly moved, and lost 53.8 and
57.6 $/job); not adopted.

Why a job that may give up plans to stop [ours]: with the net's give-up (`make_policy(..., give_up=True)`) the
window problem need not finish (`must_finish=False`) and may stop the job where the net would take it over, as the
net then does when finishing on demand costs more than the job's value and penalty (`WindowTerms.may_stop`). Before,
the plan knew only the net's on-demand rescue: with no spot in sight it drove such a job to the end on on-demand
GPUs. On a 12-h job of 2-8 GPUs worth 0.63 x its on-demand cost (`spotlab heldout`, seed 5, job shape 2; nine GCP
H100 zones), CHC with perfect forecasts over the whole job went from 39.1 to 126.4 $/job on europe-west3-c (optimum
126.5), 39.5 to 103.4 on us-east4-a (104.0), 108.5 to 141.3 on us-west1-a (142.4) and -174.6 to -3.7 on us-west1-b
(-3.7); with w = 12 (all but the job's last slot) it is now within 1% of the optimum on all nine. Whether to stop is
decided at the true prices: the timing bias below made a job worth slightly less than its spot cost look worth
finishing (asia-south2-b: -69.4 $/job against -56.0 for stopping). The plan stops only where the net would take the
job over, as late as the net itself decides, and its tail still must finish: a tail that could stop on its
expectations (the past's spot, pessimistic after a drought) idled through spot in hand. On an 86-h job on one GPU
worth 0.66 x its on-demand cost (w = 12; job shape 1 of `spotlab heldout --seed 5`), a tail that may stop against
this: europe-west3-c 138.7 against 163.1 $/job (optimum 167.0), us-east4-a 89.6 against 94.9 (112.8), us-west1-b 1.8
against 15.3 (25.2). Known limit: on the held-out job of issue 11 (96 GPU-h, value and penalty 400 $) on
europe-west3-c, where spot hardly ever comes, the plan buys on-demand GPUs early to meet the soft deadline and then
finishes a job the optimum leaves: -80.5 $/job against the optimum's -44.9 (a tail that may stop: -46.7). Both ways
the tail's expectation decides, and it is only the past's average. A job that no price the plan sees could make pay
(its work at the cheapest price, no restart, costs more than its value and penalty) stops at once
(`WindowProblem._hopeless`).

Restart reserve (`restart_reserve`, on by default) [ours]: a plan that reads the rest of the job from the past's
tail buys on-demand GPUs as late as it can (the timing bias below), and after a drought it may have to run N_max
GPUs right up to the soft deadline. Spot that then comes back and changes level every few hours restarts the whole
job each time; persistence forecasts show none of those restarts, and the plan has no room left for them. With the
reserve the plan reads the job's value `reserve_h` hours late: the share of a spot hour that the past week's
restarts took (`restart_share`), times the hours left to the soft deadline, i.e. what restarts would cost if the
job ran on spot from now to the deadline. It applies only to a job with a value (a cost-only job loses nothing by
finishing after its soft deadline) and only before a tail read from the past (a forecast tail, the oracle's, places
its own restarts); whether to stop a job that may give up is decided without it. The measurements in the paragraphs
above were made before it existed (as `restart_reserve=False`). Measured as A3's CHC member (the held-out bar: A3
at least the better of uniform progress and greedy), without and with it: on a 7,551-$ job on GCP H100
europe-west3-c (`spotlab heldout --seed 9`, shape 3; N_min 3, N_max 8, 20 h of slack) the member finished 0.07 to
4.5 h late in eight of nine rounds and earned 4,441.9 $/job against uniform progress's 4,668.0; with the reserve it
earns 4,910.6. Over the four held-out runs of the README (158 cells, nine zones) A3's bar holds on 140 cells
instead of 137: `--seed 5` 63 of 72 instead of 62 (mean margin over the better baseline 54.4 $/job instead of 56.3,
worst cell -33.3 instead of -21.9: a spot-rich zone's value job kept further behind greedy), `--seed 9` 26 of 30
instead of 24 (93.9 instead of 66.0; worst -3.4 instead of -226.1), `--seed 13` four zones 28 of 32 either way
(39.5 instead of 30.7; worst -9.5 instead of -15.1), `--seed 21` 23 of 24 either way (62.5 instead of 51.6); on the
issue-11 job (96 GPU-h, value 400 $) A3 is at or above the better baseline on all nine zones either way (40.7
instead of 41.6 $/job above on average). The cost: in notebook 07 (full parameters) A3 is ahead of the best
baseline on 4 of 7 markets instead of 5 (v100_16: 131.8 $/job against uniform progress's 132.6, 136.8 without the
reserve; mean over markets +4.0% instead of +6.0%; A3/optimum on the synthetic volatile market 89% instead of 94%):
there it buys on-demand GPUs that restarts never needed. The reserve was designed on seed 9's worst cell; on the
runs measured only after it (seeds 13 and 21, 56 cells) it holds as many cells, with a better mean and worst
margin, and the held-out bar is what a new market asks of the defaults: so it is on. `tests/test_chc_reserve.py`
has a small market where it decides the deadline.

Why `urgency = 0.1` [ours]: the tail's spot capacity is what the past leads one to expect, not a forecast, and spot
expected later is worth less than spot in hand. With a mere tie-break (0.005) and a 1% gap, a plan could defer the
spot it had for the tail's and lose the job's value when that spot never came (GCP H100 us-east4-a, the held-out job
of issue 11, perfect window forecasts: 139 $/job against the optimum's 169). So spot in the window's first slot
looks 10% cheaper, falling to 0 at its end, and on-demand 10% dearer: on all eight GCP H100 zones CHC with perfect
forecasts gained (e.g. 139 -> 151, 21 -> 29, 30 -> 35 $/job) and none lost; with the conditioned tail above, urgency
0 still loses on all seven zones measured (e.g. us-west1-a 39.6 -> 26.3, us-east4-b 247.9 -> 228.7). On persistence
forecasts too: as A3's CHC member on the 72 cells of `spotlab heldout --seed 5 --jobs 8`, urgency 0 held A3's bar on
45 cells against 62 (the member 42.4 $/job above uniform progress on average against 61.4), although it wins where
the bias defers on-demand GPUs through a drought and the job then finishes late (a 7,551-$ job on europe-west3-c,
`--seed 9`, shape 3: 4,858.8 $/job against 4,441.9; uniform progress 4,668.0). Nor does its on-demand half turn
round there as it does before a forecast tail: as A3's member, on-demand unbiased held the bar on 59 of the 72
cells, bought early on 34; scaled by the share of the tail's capacity it expects from spot (the chance that waiting
keeps), on 61 (47.9 $/job above the better baseline against 56.3), though on the 30 cells of `--seed 9` on 26
against 24 (90.5 against 66.0; that europe-west3-c job 4,856.5): on the zones where spot is scarce it won cells at
one seed and lost them at the other; not adopted. Only while the plan leans on a tail: when the window reaches the
job's end and its forecasts are exact (`predictor="oracle"`, sigma = 0) the plan is the exact optimum (the bias is
off). On any other forecasts a window reaching the job's end still gets a 1% bias, a tie-break: persistence
forecasts every later slot at the price and availability of now, so without it the plan is indifferent to when the
work is done, may idle while spot is there and lose the job's value when it goes (a 3-GPU-hour job, 6-h deadline,
value below its on-demand cost: 1.92 per job against uniform progress's 2.92; 2.92 with the tie-break, the optimum
2.97). On 24 random synthetic markets and jobs (five regimes, one without spot; N_max 1-8, deadlines 6-24 h, value
0.6-1.5x the on-demand cost) the tie-break raised the mean utility of CHC (w = 12, persistence) by 0.75% of the
job's value, lowered it by at most 0.3% on 2 and raised it on 7 (by up to 15%); the full 10% there raised it by
0.47% on average but lowered it on 11. On the held-out job of issue 11 (36-h windows, the bias only matters in the
last 12 h) no zone moved by more than 1 $/job with persistence, seasonal-naive or ARIMA forecasts.

Window problems are solved to a 1% gap by default: the plan is only as good as its forecasts. `method="auto"`
(the default) solves them by the dynamic programme of `spotlab.optimum.window_dp`, which proves its plan
within the gap as the MILP does, in milliseconds instead of branch and bound's tenths of a second
(`benchmarks/bench_chc.py`), and leaves to the MILP (`solver`) only jobs of negative value, where it does not
apply, and the rare window it cannot prove; `method="milp"` is the MILP alone, `method="dp"` the DP alone.
The window problem is always feasible (finishing is a soft constraint), so a solver error is raised as a
`PolicyError`, never hidden; a time limit without any schedule falls back to Uniform Progress for that
slot and is counted (`report()["fallback_rate"]`, also in the simulator's metrics). The deadline safety net
of the simulator applies to every slot, and the plans respect it. `report()` says how many solves, how
long they took and how often the fallback was used.
"""

from __future__ import annotations

import math
import time
from numbers import Integral, Real
from typing import Any, Callable

import numpy as np

from ..errors import PolicyError, PredictionError, SolverError
from ..params import Boolean, Interval, Options, positive_hours
from ..optimum.window import METHODS, TailForecast, WindowProblem, WindowState
from ..predict.forecaster import Forecaster
from ..predict.registry import make_predictor, model_names
from ..predict.oracle import AvailabilityOracle, NoisyOracle
from ..predict.reversion import daily_profile, lag_slopes
from ..simulation.interface import Context, Observation
from .base import OnlinePolicy
from .uniform_progress import UniformProgress


# the timing bias on forecast window slots with no tail after them (see the module docstring)
WINDOW_TIE_BREAK = 0.01
# where the tail's spot comes from: "auto" (the oracle's future with predictor="oracle", else the past), the
# past ("past"), or the oracle's forecast of the slots after the window ("oracle")
TAILS = ("auto", "past", "oracle")


class CHC(OnlinePolicy):
    """Committed horizon control: plan w slots ahead from forecasts, commit to the first v."""

    name = "chc"

    def __init__(
        self,
        w: int = 12,
        v: int = 1,
        predictor: str = "arima",
        sigma: float = 0.0,
        quantile: float | None = None,
        averaging: bool = False,
        urgency: float = 0.1,
        tail: str = "auto",
        restart_reserve: bool = True,
        refit_hours: float = 24.0,
        train_hours: float = 168.0,
        blocks: int = 24,
        method: str = "auto",
        solver: str = "glpk",
        time_limit: float = 5.0,
        mip_gap: float = 1e-2,
        seed: int = 0,
    ) -> None:
        self.w = w
        self.v = v
        self.predictor = predictor
        self.sigma = sigma
        self.quantile = quantile
        self.averaging = averaging
        self.urgency = urgency
        self.tail = tail
        self.restart_reserve = restart_reserve
        self.refit_hours = refit_hours
        self.train_hours = train_hours
        self.blocks = blocks
        self.method = method
        self.solver = solver
        self.time_limit = time_limit
        self.mip_gap = mip_gap
        self.seed = seed

    # ------------------------------------------------------------------------------------- checks

    _parameter_constraints = {
        "w": [Interval(Integral, 1, None)],
        "v": [Interval(Integral, 1, None)],
        "predictor": [lambda p: "" if p == "oracle" or p in model_names()
                      else f"'oracle' or one of {', '.join(model_names())}"],
        "sigma": [Interval(Real, 0, None)],
        "quantile": [None, Interval(Real, 0, 1, closed="neither")],
        "averaging": [Boolean()],
        "urgency": [Interval(Real, 0, 1, closed="left")],
        "tail": [Options(*TAILS)],
        "restart_reserve": [Boolean()],
        "refit_hours": [positive_hours],
        "train_hours": [positive_hours],
        "blocks": [Interval(Integral, 0, None)],
        "method": [Options(*METHODS)],
        "solver": [Options("glpk", "highs")],
        "time_limit": [Interval(Real, 0, None, closed="neither")],
        "mip_gap": [Interval(Real, 0, 1, closed="left")],
        "seed": [Interval(Integral, 0, None)],
    }

    def _check_together(self) -> None:
        if self.v > self.w:
            raise PolicyError(f"chc: the commitment level v={self.v} cannot exceed the window w={self.w}")
        if self.sigma and self.predictor != "oracle":
            raise PolicyError("chc: sigma is the error of predictor='oracle'; a real model has its own error")
        if self.tail == "oracle" and self.predictor != "oracle":
            raise PolicyError("chc: tail='oracle' reads the future, so it needs predictor='oracle'; "
                              "a real model's tail comes from the past (tail='past' or 'auto')")

    # -------------------------------------------------------------------------------------- reset

    def reset(self, ctx: Context) -> None:
        super().reset(ctx)
        ep, job = ctx.episodes, ctx.job
        self.dt_ = ep.slot_hours
        self.problem_ = WindowProblem(job, int(self.w), self.dt_, int(self.blocks))
        n_ctrl = int(self.v) if self.averaging else 1
        W, span = ep.n, ctx.horizon + int(self.w) + 1
        self.plan_o_ = np.full((n_ctrl, W, span), -1, dtype=np.int64)
        self.plan_s_ = np.full((n_ctrl, W, span), -1, dtype=np.int64)
        self.fallback_ = UniformProgress()
        self.fallback_.reset(ctx)
        self.requested_ = np.maximum(1, np.nanmax(ep.avail, axis=1)).astype(int)
        if ep.history_avail is not None:
            self.requested_ = np.maximum(self.requested_, np.nan_to_num(np.nanmax(
                np.where(np.isfinite(ep.history_avail), ep.history_avail, 0), axis=1)).astype(int))
        self.forecasters_: dict[tuple[int, str], dict[str, Any]] = {}
        self.stats_ = {"solves": 0, "solves_dp": 0, "solve_s": [], "fallbacks": 0, "decisions": 0, "time_limit": 0,
                       "no_schedule": 0, "forecast_s": 0.0, "fit_failures": 0}
        self.base_seed_ = int(ctx.seed) * 1_000_003 + int(self.seed)

    # --------------------------------------------------------------------------------- forecasts

    def _history(self, i: int, t: int, target: str) -> np.ndarray:
        ep = self.ctx_.episodes
        now = ep.avail[i, :t + 1].astype(float) if target == "availability" else ep.spot_price[i, :t + 1]
        past = ep.history_avail if target == "availability" else ep.history_price
        if past is None:
            return np.asarray(now, dtype=float)
        before = past[i]
        finite = np.flatnonzero(~np.isfinite(before))
        before = before[finite[-1] + 1:] if finite.size else before  # the gap-free tail only
        return np.concatenate([before, now])

    def _model_forecast(self, i: int, t: int, target: str, k: int) -> np.ndarray:
        """h = 1..k forecasts of `target` for window i at origin t, from the registered model."""
        y = self._history(i, t, target)
        if np.ptp(y) == 0:  # a constant history (a count trace's fixed price, an always-full zone)
            return np.full(k, y[-1])
        key = (i, target)
        st = self.forecasters_.get(key)
        refit = max(1, int(round(self.refit_hours / self.dt_)))
        train = max(1, int(round(self.train_hours / self.dt_)))
        if st is None or t - st["fit_t"] >= refit:
            model = make_predictor(self.predictor)
            requested = int(self.requested_[i]) if target == "availability" else None
            fc = Forecaster(model, target, requested)
            lo = max(0, y.size - train)
            try:
                fc.fit(y[lo:], t0=0, slot_hours=self.dt_)
            except PredictionError:
                self.stats_["fit_failures"] += 1  # too little history yet: hold the last value
                return np.full(k, y[-1])
            st = {"fc": fc, "fit_t": t, "seen": y.size}
            self.forecasters_[key] = st
        elif y.size > st["seen"]:
            st["fc"].update(y[st["seen"]:])
            st["seen"] = y.size
        fc = st["fc"]
        if target == "availability" and self.quantile is not None:
            return fc.predict_quantile(k, self.quantile)
        return fc.predict(k)

    def _oracle_forecast(self, i: int, t: int, target: str, k: int) -> np.ndarray:
        ep = self.ctx_.episodes
        series = ep.avail[i] if target == "availability" else ep.spot_price[i]
        truth = np.asarray(series[t + 1:t + 1 + k], dtype=float)
        truth = np.nan_to_num(truth, nan=0.0)
        if truth.size < k:  # past the end of the trace: nothing can run there anyway
            truth = np.concatenate([truth, np.full(k - truth.size, truth[-1] if truth.size else 0.0)])
        seed = (self.base_seed_ * 7919 + i * 2 + (target == "price")) % (2**63)
        if target == "availability":
            f = AvailabilityOracle(float(self.sigma), seed, requested=int(self.requested_[i])).forecast(truth, t)
            if self.quantile is not None and self.sigma > 0:  # the oracle's own q-assured value
                z = abs(_normal_quantile(self.quantile))
                f = np.floor(np.clip(truth * (1 - z * self.sigma * np.sqrt(np.arange(1, k + 1))), 0, None))
            return f
        return NoisyOracle(float(self.sigma), seed).forecast(truth, t)

    def forecast(self, i: int, t: int, obs: Observation) -> tuple[np.ndarray, np.ndarray]:
        """Availability and spot price of window i for slots t..t+w-1 (slot t observed)."""
        k = int(self.w) - 1
        tic = time.perf_counter()
        a, p = np.array([float(obs.avail[i])]), np.array([float(obs.spot_price[i])])
        if k:
            get = self._oracle_forecast if self.predictor == "oracle" else self._model_forecast
            a = np.concatenate([a, get(i, t, "availability", k)])
            p = np.concatenate([p, np.maximum(get(i, t, "price", k), 0.0)])
        self.stats_["forecast_s"] += time.perf_counter() - tic
        return a, p

    # ------------------------------------------------------------------------------------------ act

    def _plan(self, i: int, t: int, obs: Observation) -> tuple[np.ndarray, np.ndarray] | None:
        ep, w = self.ctx_.episodes, int(self.w)
        a, p = self.forecast(i, t, obs)
        od_row = ep.od_price[i]
        od = np.asarray(od_row[t:t + w], dtype=float)
        if od.size < w or not np.all(np.isfinite(od)):
            last = od_row[np.isfinite(od_row)][-1]
            od = np.concatenate([od[np.isfinite(od)], np.full(w, last)])[:w]
        state = WindowState(time_h=float(obs.time_h), remaining=float(obs.remaining[i]),
                            prev_o=int(obs.prev_o[i]), prev_s=int(obs.prev_s[i]), pending_h=float(obs.pending_h[i]))
        tail = self._tail(i, t, self.problem_.tail_for(state), float(od[-1]), a)
        try:
            plan = self.problem_.solve(state, a, p, od, tail, slots_left=self.ctx_.horizon - t,
                                       solver=self.solver, time_limit=float(self.time_limit),
                                       mip_gap=float(self.mip_gap), urgency=float(self.urgency),
                                       must_finish=not self.ctx_.give_up,
                                       net=self.ctx_.safety_net, method=self.method,
                                       window_urgency=self._window_urgency(),
                                       reserve_h=self._reserve(i, t, state.time_h))
        except SolverError as exc:  # the window problem is always feasible: a failure is a bug, not a fallback
            raise PolicyError(f"chc: window {i}, slot {t}: {exc}") from None
        if plan is None:  # time limit without a schedule: counted, reported as the fallback rate
            self.stats_["no_schedule"] += 1
            return None
        self.stats_["solves"] += 1
        self.stats_["solves_dp"] += plan.method == "dp"
        self.stats_["solve_s"].append(plan.seconds)
        self.stats_["time_limit"] += plan.status != "optimal"
        return plan.o, plan.s

    def _tail_source(self) -> str:
        """"past" or "oracle": what the tail's spot is read from (`tail`, with "auto" resolved)."""
        if self.tail == "auto":
            return "oracle" if self.predictor == "oracle" else "past"
        return self.tail

    def _reserve(self, i: int, t: int, time_h: float) -> float:
        """Hours before the soft deadline the plan keeps for restarts it cannot place: the share of a spot hour
        that the past's restarts took (`restart_share`), times the hours left to the soft deadline. Only while the
        plan reads the rest of the job from the past (a forecast tail places its own restarts), and only for a job
        with a value (a cost-only job loses nothing by finishing late, before the hard deadline)."""
        job = self.job
        if not self.restart_reserve or job.value <= 0 or self._tail_source() != "past":
            return 0.0
        left = job.deadline_h - float(time_h)
        if left <= 0:
            return 0.0
        return (1.0 - self._useful_share(self._recent(i, t, "availability"))) * left

    def _recent(self, i: int, t: int, target: str) -> np.ndarray:
        """The last `train_hours` observed of `target` (the history before the job included): the past that the
        tail and the reserve read."""
        return self._history(i, t, target)[-max(1, int(round(self.train_hours / self.dt_))):]

    def _useful_share(self, avail: np.ndarray) -> float:
        """`restart_share` of a job following the spot of `avail` (GPUs; not finite: none), up to N_max."""
        a = np.where(np.isfinite(avail), avail, 0.0)
        return restart_share(np.where(a > 0, np.minimum(a, self.job.n_max), 0.0), self.dt_, self.job.overhead_h)

    def _window_urgency(self) -> float:
        """The timing bias once the window reaches the job's end: none on exact forecasts, a tie-break else."""
        exact = self.predictor == "oracle" and not self.sigma
        return 0.0 if exact else min(float(self.urgency), WINDOW_TIE_BREAK)

    def _tail(self, i: int, t: int, bounds: np.ndarray, od: float,
              window_avail: np.ndarray) -> TailForecast | None:
        """Expected spot GPU-hours and prices in each tail block, from the last `train_hours` observed (the
        history before the job included) and the window's own availability, in two tiers: spot GPUs usable alone
        (min(a, N_max) where a >= N_min) at the mean spot price there, and hours of 0 < a < N_min spot GPUs, run
        beside N_min - a on-demand ones, as N_min GPU-hours at their mean blended price (`_profile` for each:
        by time of day, moved towards the window's last slot as far as the past says a level persists). Only the
        share of a spot hour left after the restarts that following spot took in the past (`restart_share`)
        counts as work, at the price of the whole hour, and the rest of those hours stalls the job
        (`stalled_hours`). Certainty-equivalent on
        purpose: the plan is re-solved every slot, so what the tail promises and the market does not deliver is
        re-planned, on-demand included, before the deadline. With the oracle's tail (`tail`) the same tiers come
        from the oracle's forecast of the tail's own slots, with their restarts and prices block by block
        (`_forecast_tail`)."""
        if bounds.size < 2:
            return None
        job, dt = self.job, self.dt_
        first = int(math.floor(bounds[0] / dt + 1e-9))
        last = int(math.ceil(bounds[-1] / dt - 1e-9))
        k = np.arange(first, last) - t  # slots ahead of now (>= w)
        oracle = self._tail_source() == "oracle"
        if oracle:  # the oracle's forecast of the tail's own slots (k is never empty: the blocks span time)
            a = self._oracle_forecast(i, t, "availability", int(k[-1]))[k - 1]
            p = self._oracle_forecast(i, t, "price", int(k[-1]))[k - 1]
        else:
            a = self._recent(i, t, "availability")
            p = self._recent(i, t, "price")
        ok = np.isfinite(a)
        a, p = np.where(ok, a, 0.0), np.where(np.isfinite(p), p, np.nan)
        # spot below N_min still runs the job beside N_min - a on-demand GPUs (the window problem mixes them too):
        # such an hour offers N_min GPU-hours at their blended price, a dearer tier of its own
        pure = np.where(a >= job.n_min, np.minimum(a, job.n_max), 0.0)
        mixed = np.where((a > 0) & (a < job.n_min), float(job.n_min), 0.0)
        # integral of the per-slot capacity (GPUs) over each block, in GPU-hours
        edges = np.arange(first, last + 1) * dt

        def per_block(cap: np.ndarray) -> np.ndarray:
            cum = np.concatenate([[0.0], np.cumsum(cap * dt)])
            return np.maximum(np.diff(np.interp(bounds, edges, cum)), 0.0)

        if oracle:  # the forecast's own restarts, in the blocks where they fall, and its prices there
            return self._forecast_tail(bounds, per_block, a, p, pure, mixed, od)
        seen = float(np.nan_to_num(np.asarray(window_avail, dtype=float)[-1], nan=0.0))
        cap_pure = self._profile(pure, k, min(seen, float(job.n_max)) if seen >= job.n_min else 0.0)
        cap_mixed = self._profile(mixed, k, float(job.n_min) if 0 < seen < job.n_min else 0.0) \
            if mixed.any() or 0 < seen < job.n_min else np.zeros(k.size)  # N_min = 1: never any
        ok_p = np.isfinite(p)
        good = (pure > 0) & ok_p
        spot_price = float(np.mean(p[good])) if good.any() else od
        blend = (mixed > 0) & ok_p
        mixed_price = float(np.mean((a[blend] * p[blend] + (job.n_min - a[blend]) * od) / job.n_min)) \
            if blend.any() else od
        # a spot hour in the tail pays for the restarts its spells need: only the share `useful` does work
        # (counted on the spot GPUs held: a mixed hour whose spot count changes restarts too)
        useful = self._useful_share(a)  # a > 0 exactly where pure + mixed > 0
        raw, raw_mixed = per_block(cap_pure), per_block(cap_mixed)
        n = bounds.size - 1
        # ... and a restart stalls the whole job: the share 1 - useful of the hours spot is there (its GPU-hours
        # over its mean level while there) is time the job cannot work in, on-demand GPUs included
        on = pure > 0
        level = float(pure[on].mean()) if on.any() else float(job.n_max)
        stalled = (1.0 - useful) * (raw / level + raw_mixed / float(job.n_min))  # capped at a block's length later

        def price(c: float) -> np.ndarray:
            return np.full(n, c / useful if useful > 0 else od)

        return TailForecast(hours=np.diff(bounds), spot_gpu_hours=raw * useful, spot_price=price(spot_price),
                            od_price=np.full(n, od), stalled_hours=stalled,
                            mixed_gpu_hours=raw_mixed * useful, mixed_price=price(mixed_price))

    def _forecast_tail(self, bounds: np.ndarray, per_block: Callable[[np.ndarray], np.ndarray], a: np.ndarray,
                       p: np.ndarray, pure: np.ndarray, mixed: np.ndarray, od: float) -> TailForecast:
        """The tail of a slot-by-slot forecast (the oracle's): each block loses the restart overhead of the
        spells that start, change or end in it (`restart_slots`), and pays the forecast's prices there. Why
        not the tail-wide share of the past's tail: a forecast says where spot flickers, and a block of one-hour
        spells is worth less than a block of steady spot; averaged over the tail, the plan bought on-demand where
        the optimum waited for steady spot, or waited for flickering spot it then paid restarts on."""
        job, dt = self.job, self.dt_
        held = np.where(pure + mixed > 0, np.minimum(a, job.n_max), 0.0)
        lost = np.minimum(restart_slots(held) * float(job.overhead_h), dt)  # hours each slot stands still
        keep = 1.0 - lost / dt
        spot_hours, mixed_hours = per_block(pure * keep), per_block(mixed * keep)
        price = np.where(np.isfinite(p), p, od)
        paid = per_block(pure * price)  # $ for the whole hours, restarts included
        blend = per_block(np.where(mixed > 0, a * price + (job.n_min - a) * od, 0.0))

        def per_useful_hour(cost: np.ndarray, hours: np.ndarray) -> np.ndarray:
            return np.where(hours > 1e-12, cost / np.maximum(hours, 1e-12), od)  # no capacity: any price

        return TailForecast(hours=np.diff(bounds), spot_gpu_hours=spot_hours,
                            spot_price=per_useful_hour(paid, spot_hours), od_price=np.full(bounds.size - 1, od),
                            stalled_hours=per_block(np.where(held > 0, lost / dt, 0.0)),
                            mixed_gpu_hours=mixed_hours, mixed_price=per_useful_hour(blend, mixed_hours),
                            forecast=True)

    def _profile(self, usable: np.ndarray, k: np.ndarray, level: float) -> np.ndarray:
        """Expected GPUs of `usable` k slots ahead: its time-of-day mean when two days or more are known, else
        its mean, moved towards `level` (the window's last slot) as far as the past says a level persists."""
        dt = self.dt_
        day = int(round(24.0 / dt))
        period = day if abs(day * dt - 24.0) < 1e-6 else 1  # slots that do not tile a day: no daily cycle
        profile = daily_profile(usable, period)
        cap = profile[(usable.size - 1 + k) % profile.size]
        beta, mean = lag_slopes(usable, k - (int(self.w) - 1))
        return np.clip(cap + beta * (level - mean), 0.0, float(self.job.n_max))

    def act(self, obs: Observation):
        t, v = obs.t, int(self.v)
        W = obs.remaining.size
        n_ctrl = self.plan_o_.shape[0]
        for c in range(n_ctrl):
            if (t - c) % v != 0 or t < c:
                continue
            for i in np.flatnonzero(obs.active):
                plan = self._plan(int(i), t, obs)
                if plan is None:
                    self.plan_o_[c, i, t:t + v] = -1
                    self.plan_s_[c, i, t:t + v] = -1
                else:
                    self.plan_o_[c, i, t:t + v] = plan[0][:v]
                    self.plan_s_[c, i, t:t + v] = plan[1][:v]
        po, ps = self.plan_o_[:, :, t], self.plan_s_[:, :, t]
        have = po >= 0
        count = have.sum(axis=0)
        o = np.zeros(W, dtype=np.int64)
        s = np.zeros(W, dtype=np.int64)
        ok = count > 0
        if ok.any():
            mean_o = np.where(have, po, 0).sum(axis=0) / np.maximum(count, 1)
            mean_s = np.where(have, ps, 0).sum(axis=0) / np.maximum(count, 1)
            o = np.where(ok, np.round(mean_o), 0).astype(np.int64)
            s = np.where(ok, np.round(mean_s), 0).astype(np.int64)
            total = o + s
            over = total > self.job.n_max
            o = np.where(over, self.job.n_max - s, o)
        missing = obs.active & ~ok
        self.stats_["decisions"] += int(obs.active.sum())
        if missing.any():
            self.stats_["fallbacks"] += int(missing.sum())
            fo, fs = self.fallback_.act(obs)
            o = np.where(missing, fo, o)
            s = np.where(missing, fs, s)
        return o, s

    def report(self) -> dict:
        st = getattr(self, "stats_", None)
        if not st:
            return {}
        secs = np.asarray(st["solve_s"], dtype=float)
        return {
            "solves": int(st["solves"]),
            "solves_dp": int(st["solves_dp"]),
            "solve_mean_s": float(secs.mean()) if secs.size else 0.0,
            "solve_median_s": float(np.median(secs)) if secs.size else 0.0,
            "solve_p90_s": float(np.percentile(secs, 90)) if secs.size else 0.0,
            "solve_max_s": float(secs.max()) if secs.size else 0.0,
            "solve_total_s": float(secs.sum()),
            "time_limit_hits": int(st["time_limit"]),
            "time_limit_no_schedule": int(st["no_schedule"]),
            "fallback_slots": int(st["fallbacks"]),
            "fallback_rate": float(st["fallbacks"] / max(1, st["decisions"])),
            "forecast_s": float(st["forecast_s"]),
            "fit_failures": int(st["fit_failures"]),
        }


def restart_slots(usable: np.ndarray) -> np.ndarray:
    """Restarts a job following `usable` spot pays in each slot: one where spot starts or changes level, one
    where it ends (the job moves back to on-demand GPUs); a spell under way at either end of the series none."""
    u = np.asarray(usable, dtype=float)
    on = u > 0
    before = np.concatenate([u[:1], u[:-1]])
    after = np.concatenate([u[1:], u[-1:]])
    return (on & (before != u)).astype(float) + (on & (after == 0)).astype(float)


def restart_share(usable: np.ndarray, slot_hours: float, overhead_h: float) -> float:
    """The share of a spot hour that does work when a job follows spot: 1 - overhead x restarts per spot
    hour in the past `usable` (a restart where usable spot starts or changes level, one where it ends and
    the job goes back to on-demand), floored at 0. Why: the fluid tail has no restarts, so spot that comes
    in spells of an hour or two looked as good as a steady supply, and a plan deferred work to it and
    finished late (see the module docstring for what the discount gained). 1 where the past has no spot
    hours or restarts cost nothing."""
    u = np.asarray(usable, dtype=float)
    on = u > 0
    if not on.any() or overhead_h <= 0:
        return 1.0
    restarts = float(restart_slots(u).sum())
    return max(0.0, 1.0 - overhead_h * restarts / (on.sum() * slot_hours))


def _normal_quantile(q: float) -> float:
    from scipy.stats import norm

    return float(norm.ppf(q))
