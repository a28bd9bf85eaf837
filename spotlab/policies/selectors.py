"""The selection algorithms of A3 (`policies.select`, SPEC §6) over a pool of K scheduling policies: FlipFlop (the
default), AdaHedge, Hedge and EXP3, and `SELECTORS`, their registry by name.

A *round* is one job run on one market window. The market is exogenous, so after each round every pool
member can be replayed on the same window and its utility is known: that is the full-information
(experts) setting, where Hedge is the right tool. EXP3 is the bandit ablation, in which only the chosen
member's utility is seen; comparing the two shows what the replays buy.

These are the pure algorithms: each takes the matrix of member utilities ``U`` (rounds × K), already computed,
and says which member each round would have run (a `selection_run.SelectionRun`). Utilities become losses in
[0, 1] through a known range ``[lo, hi]`` so that the regret bounds (`policies.regret`), which assume losses in
[0, 1], apply. A new algorithm is a function here and a line in `SELECTORS`.

References:
- N. Cesa-Bianchi, G. Lugosi, *Prediction, Learning, and Games*, Cambridge UP 2006, Thm 2.2 (fixed η)
  and Thm 2.3 (time-varying η_t).
- S. Bubeck, N. Cesa-Bianchi, *Regret Analysis of Stochastic and Nonstochastic Multi-armed Bandit
  Problems*, Found. Trends ML 5(1), 2012, §3.1 (loss-based EXP3, Thm 3.1 and its anytime variant).
- S. de Rooij, T. van Erven, P. Grünwald, W. Koolen, *Follow the Leader If You Can, Hedge If You Must*,
  JMLR 15, 2014 (AdaHedge: the learning rate from the observed mixability gap).
- P. Auer, N. Cesa-Bianchi, Y. Freund, R. Schapire, *The Nonstochastic Multiarmed Bandit Problem*,
  SIAM J. Comput. 32(1), 2002 (explicit uniform exploration γ).
"""

from __future__ import annotations

import math
from typing import Callable, Sequence

import numpy as np

from ..errors import PolicyError
from .selection_run import (SelectionRun, check_known_from, check_names, check_positive_int, check_range,
    check_utilities, losses_from_utilities)
from ..params import check_seed

# --------------------------------------------------------------------------------------------- checks


def _eta_schedule(
    eta, horizon, rounds: int, fixed: Callable[[int], float], anytime: Callable[[np.ndarray], np.ndarray]
) -> np.ndarray:
    """One learning rate per round: ``eta`` if given, else the horizon-tuned rate, else the anytime one.

    ``fixed(T)`` is the rate tuned for horizon T and ``anytime(t)`` the per-round schedule; they are passed
    in so that Hedge and EXP3 share the precedence rules and the checks.
    """
    if horizon is not None:
        horizon = check_positive_int(horizon, "horizon")
        if horizon < rounds:
            raise PolicyError(
                f"horizon={horizon} is shorter than the {rounds} rounds given; the tuned learning rate "
                "and its regret bound only hold up to the horizon"
            )
    if eta is not None:
        try:
            eta_f = float(eta)
        except (TypeError, ValueError):
            raise PolicyError(f"eta must be a number, got {eta!r}") from None
        if not (math.isfinite(eta_f) and eta_f > 0):
            raise PolicyError(f"eta must be a finite positive number, got {eta!r}")
        return np.full(rounds, eta_f)
    if horizon is not None:
        return np.full(rounds, fixed(horizon))
    return anytime(np.arange(1, rounds + 1, dtype=float))


# ------------------------------------------------------------------------------------------ primitives


def _prepare(U, lo, hi, seed, names) -> tuple[float, float, np.ndarray, int, tuple[str, ...]]:
    """The checks every algorithm starts with: range, utilities, seed, member names."""
    lo, hi = check_range(lo, hi)
    arr = check_utilities(U)
    return lo, hi, arr, check_seed(seed, PolicyError), check_names(names, arr.shape[1])


def _result(algorithm: str, U: np.ndarray, p: np.ndarray, chosen: np.ndarray, etas: np.ndarray, seed: int,
            lo: float, hi: float, names: tuple[str, ...], gamma: float = 0.0) -> SelectionRun:
    rounds = U.shape[0]
    return SelectionRun(algorithm=algorithm, member_utilities=U, probabilities=p, chosen=chosen,
                        utility_chosen=U[np.arange(rounds), chosen], utility_expected=np.einsum("tk,tk->t", p, U),
                        eta=etas, seed=seed, lo=lo, hi=hi, gamma=gamma, names=names)


def _arrivals(known: np.ndarray) -> dict[int, list[int]]:
    """Round r -> the earlier rounds whose outcomes become known just before r is chosen."""
    out: dict[int, list[int]] = {}
    for i, r in enumerate(known.tolist()):
        out.setdefault(r, []).append(i)
    return out


def _known_before(loss: np.ndarray, known_from: np.ndarray) -> np.ndarray:
    """Per round r, the cumulative losses of the rounds whose outcome is known when r is chosen."""
    rounds, k = loss.shape
    add = np.zeros((rounds + 1, k))
    np.add.at(add, np.minimum(known_from, rounds), loss)
    return np.cumsum(add, axis=0)[:rounds]


def _softmax_neg(eta: np.ndarray, L: np.ndarray) -> np.ndarray:
    """Rows of ``exp(-eta * L)`` normalised, via log-sum-exp (the least loss gets exponent 0)."""
    z = -np.asarray(eta)[..., None] * L
    z = z - z.max(axis=-1, keepdims=True)
    w = np.exp(z)
    return w / w.sum(axis=-1, keepdims=True)


def _draw(p: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Inverse-CDF draw per row: the first member whose cumulative probability exceeds ``u``.

    Explicit uniforms (rather than ``rng.choice``) make Hedge and EXP3 use the same random stream, so a
    seed means the same thing for both; members with probability 0 are never drawn.
    """
    cdf = np.cumsum(p, axis=-1)
    idx = (cdf <= (u * cdf[..., -1])[..., None]).sum(axis=-1)
    return np.minimum(idx, p.shape[-1] - 1)


# ------------------------------------------------------------------------------------------ algorithms


def hedge(
    U,
    lo: float,
    hi: float,
    eta: float | None = None,
    horizon: int | None = None,
    seed: int = 0,
    names: Sequence[str] | None = None,
    known_from: Sequence[int] | None = None,
) -> SelectionRun:
    """Hedge (exponentially weighted forecaster) with full information.

    `known_from[i]` is the first round whose choice may use round i's outcome (default i + 1): when jobs
    overlap in time, a job's utility is known only once it has ended (delayed feedback).

    Round t plays ``p_t ∝ exp(-η_t L_{t-1})``, with ``L_{t-1}`` each member's cumulative loss over the
    earlier rounds (losses from `losses_from_utilities`), computed with log-sum-exp so that large
    cumulative losses do not underflow. Learning rate, in order of precedence:

    - ``eta`` given: that fixed rate (``horizon``, if also given, is only checked against the rounds);
    - ``horizon`` T given: ``η = sqrt(8 ln K / T)``, for which the expected regret after any n <= T rounds
      is at most ``(hi - lo) sqrt(T ln K / 2)`` (Cesa-Bianchi & Lugosi 2006, Thm 2.2);
    - neither: the anytime schedule ``η_t = sqrt(8 ln K / t)``, which needs no horizon and no doubling
      trick, at the price of a constant ~2 in the bound (Thm 2.3; see `regret_bound_hedge`).

    The member run in round t is drawn from ``p_t`` with ``np.random.default_rng(seed)``; the
    probabilities themselves do not depend on the seed (every member's loss is observed).
    """
    lo, hi, arr, seed, names_t = _prepare(U, lo, hi, seed, names)
    rounds, k = arr.shape
    loss = losses_from_utilities(arr, lo, hi)
    ln_k = math.log(k)
    etas = _eta_schedule(
        eta, horizon, rounds,
        fixed=lambda T: math.sqrt(8 * ln_k / T),
        anytime=lambda t: np.sqrt(8 * ln_k / t),
    )
    before = _known_before(loss, check_known_from(known_from, rounds))  # L_{t-1} (what is known)
    p = _softmax_neg(etas, before)
    rng = np.random.default_rng(seed)
    chosen = _draw(p, rng.random(rounds))
    return _result("hedge", arr, p, chosen, etas, seed, lo, hi, names_t, 0.0)


GAP_TOLERANCE = 1e-12  # losses are in [0, 1]


def _mixability_gap(p: np.ndarray, loss: np.ndarray, eta: float, before: np.ndarray) -> float:
    """Expected loss minus mix loss of one round (>= 0), for weights `p` formed with rate `eta` from the
    cumulative losses `before` (de Rooij et al. 2014: the mix loss is the increase of the mix potential
    M(L) = min L - ln(mean exp(-eta (L - min L))) / eta).

    At eta = inf (follow the leader) the mix loss is the increase of the *least cumulative loss over all
    members*, min(before + loss) - min(before): zero while the leader keeps its lead, positive when it is
    overtaken. (Taking the least loss among the weighted members instead keeps the gap at 0 whenever one
    leader is played, so AdaHedge would follow the leader for ever, with its linear regret.) For a finite eta
    the potential's increase is -ln(p . exp(-eta loss)) / eta, summed over the members with weight and shifted
    by their least loss: no term underflows to log(0) or overflows."""
    expected = float(p @ loss)
    if math.isinf(eta):
        mix = float((before + loss).min() - before.min())
    else:
        on = p > 0
        base = float(loss[on].min())
        mix = base - math.log(float(p[on] @ np.exp(-eta * (loss[on] - base)))) / eta
    gap = expected - mix
    return gap if gap > GAP_TOLERANCE else 0.0  # below it: the rounding of the sums above, not a lost round


def adahedge(U, lo: float, hi: float, seed: int = 0, names: Sequence[str] | None = None,
             known_from: Sequence[int] | None = None, prefer: int | None = None,
             evidence: float | None = None) -> SelectionRun:
    """Hedge with the AdaHedge learning rate (de Rooij et al. 2014): ``η_t = ln K / Δ_{t-1}``, where Δ is
    the cumulative mixability gap (expected loss minus mix loss) of the rounds so far.

    Why: the worst-case rates of `hedge` are tuned to losses spread over the whole range [lo, hi], but the
    members of a pool usually differ by a few percent of it, so those rates barely move the weights in a
    few hundred rounds. AdaHedge adapts to the losses actually seen: it plays follow-the-leader while that
    is safe (Δ = 0, η = ∞) and never does worse than a constant times Hedge's bound,
    regret <= 2 sqrt(L* (T - L*) ln K / T) + (16/3) ln K + 2 in [0, 1] losses (L* the best member's loss;
    their Thm 8), scaled by (hi - lo). With delayed feedback (`known_from`, see `hedge`) a round's loss and
    its mixability gap (with the weights and rate it was played with) enter when its outcome is known.

    `prefer`: the member played while following the leader leaves a tie that includes it (before any
    outcome is known, every member ties): a safe default instead of a uniform draw. The bound is unchanged,
    since the mixability gap is measured on the weights actually played: a round played on the leader (or on
    `prefer`) adds the difference between its loss and the increase of the least cumulative loss, so rounds
    where the leader is overtaken (or where `prefer` was not the best) end the following of the leader.

    `evidence` (a confidence level, with `prefer`): `prefer` is played until the outcomes known show, at that
    level, that some member does better than it (`_proven_members`); only then do the weights decide.
    """
    return _adaptive("adahedge", U, lo, hi, seed, names, known_from, prefer, flipflop=False, evidence=evidence)


# FlipFlop's constants (de Rooij et al. 2014, §3): its regret is then at most 5.64 times FTL's plus 3.73,
# and at most a constant times AdaHedge's bound
FLIPFLOP_PHI = 2.37
FLIPFLOP_ALPHA = 1.243


def flipflop(U, lo: float, hi: float, seed: int = 0, names: Sequence[str] | None = None,
             known_from: Sequence[int] | None = None, prefer: int | None = None,
             evidence: float | None = None) -> SelectionRun:
    """FlipFlop (de Rooij et al. 2014): follow the leader while that costs little, AdaHedge once it costs more.

    Why: AdaHedge's rate collapses after a few costly rounds (a blind start on the preferred member, one
    leader change) and stays low, so on data where one member is steadily best it keeps spreading weight for
    many rounds; follow-the-leader locks on at once there but loses every round on data made to fool it.
    FlipFlop alternates between the two regimes: it keeps the mixability gaps each regime has accumulated,
    Δ_ftl and Δ_ah (AdaHedge's rate is ln K / Δ_ah, from its own rounds only), and leaves follow-the-leader
    when Δ_ftl > (φ/α) Δ_ah and AdaHedge when Δ_ah > α Δ_ftl. Its regret is within a constant factor of the
    better of the two. `known_from`, `prefer` and `evidence` as in `adahedge` (a round's gap counts for the
    regime it was played in, when its outcome is known)."""
    return _adaptive("flipflop", U, lo, hi, seed, names, known_from, prefer, flipflop=True, evidence=evidence)


def _proven_members(n: int, sum_d: np.ndarray, sum_d2: np.ndarray, anchor: int, critical: np.ndarray) -> np.ndarray:
    """The members that n known rounds show to do better than `anchor`, and the anchor: a one-sided paired t-test
    of the anchor's loss minus each member's (`sum_d`, `sum_d2`: the sums of those differences and of their
    squares over the n rounds) against `critical[n]`, the Student-t quantile. Paired, because every member runs
    on the same market windows; an advantage seen on every round alike (no spread) counts once two rounds show it."""
    out = np.zeros(sum_d.size, dtype=bool)
    out[anchor] = True
    if n < 2:
        return out
    mean = sum_d / n
    sd = np.sqrt(np.maximum(sum_d2 - n * mean * mean, 0.0) / (n - 1))
    flat = sd <= 1e-12
    return out | np.where(flat, mean > 1e-12, mean > critical[n] * sd / math.sqrt(n))


def _critical_values(level: float, rounds: int) -> np.ndarray:
    """One-sided Student-t quantiles at `level` for n = 0..rounds known rounds (n - 1 degrees of freedom)."""
    from scipy.stats import t as student

    out = np.full(rounds + 1, np.inf)
    if rounds >= 2:
        out[2:] = student.ppf(level, np.arange(1, rounds))
    return out


def _adaptive(name: str, U, lo: float, hi: float, seed: int, names, known_from, prefer, flipflop: bool,
              evidence: float | None = None) -> SelectionRun:
    """AdaHedge, or FlipFlop's alternation of follow-the-leader and AdaHedge regimes."""
    lo, hi, arr, seed, names_t = _prepare(U, lo, hi, seed, names)
    rounds, k = arr.shape
    loss = losses_from_utilities(arr, lo, hi)
    ln_k = math.log(k)
    arrivals = _arrivals(check_known_from(known_from, rounds))
    if evidence is not None and not (0.0 < float(evidence) < 1.0):
        raise PolicyError(f"evidence must be a confidence level in (0, 1), got {evidence!r}")
    gate = prefer is not None and evidence is not None
    critical = _critical_values(float(evidence), rounds) if gate else None
    n_known, sum_d, sum_d2 = 0, np.zeros(k), np.zeros(k)  # the paired differences to `prefer` known so far
    cum = np.zeros(k)
    # the mixability gaps of the rounds played in each regime (rounds the evidence gate held on `prefer` count
    # for neither, so that the rate is learnt from the rounds the algorithm decided)
    gaps = {"ftl": 0.0, "ah": 0.0}
    regime = "ftl" if flipflop else "ah"
    played: list[str | None] = []  # the regime of each round (None: held on `prefer` by the evidence gate)
    p = np.empty((rounds, k))
    etas = np.empty(rounds)
    seen = np.empty((rounds, k))  # the cumulative losses each round's weights were formed from
    for t in range(rounds):
        for i in arrivals.get(t, ()):  # outcomes that became known before round t
            if played[i] is not None:
                gaps[played[i]] += _mixability_gap(p[i], loss[i], etas[i], seen[i])
            cum += loss[i]
            if gate:
                d = loss[i, prefer] - loss[i]
                n_known, sum_d, sum_d2 = n_known + 1, sum_d + d, sum_d2 + d * d
        if flipflop:
            if regime == "ftl" and gaps["ftl"] > FLIPFLOP_PHI / FLIPFLOP_ALPHA * gaps["ah"]:
                regime = "ah"
            elif regime == "ah" and gaps["ah"] > FLIPFLOP_ALPHA * gaps["ftl"]:
                regime = "ftl"
        seen[t] = cum
        eta = math.inf if regime == "ftl" or gaps["ah"] <= 0 else ln_k / gaps["ah"]
        allowed = _proven_members(n_known, sum_d, sum_d2, prefer, critical) if gate else np.ones(k, dtype=bool)
        if math.isinf(eta):
            best = cum[allowed].min()
            lead = (allowed & (cum <= best + 1e-12)).astype(float)
            if prefer is not None and lead[prefer]:
                lead = np.zeros(k)
                lead[prefer] = 1.0
            pt = lead / lead.sum()
        else:
            z = np.zeros(k)
            z[allowed] = np.exp(-eta * (cum[allowed] - cum[allowed].min()))
            pt = z / z.sum()
        p[t], etas[t] = pt, eta
        played.append(None if gate and allowed.sum() == 1 else regime)
    rng = np.random.default_rng(seed)
    chosen = _draw(p, rng.random(rounds))
    return _result(name, arr, p, chosen, etas, seed, lo, hi, names_t, 0.0)


def exp3(
    U,
    lo: float,
    hi: float,
    gamma: float | None = None,
    eta: float | None = None,
    horizon: int | None = None,
    seed: int = 0,
    names: Sequence[str] | None = None,
    known_from: Sequence[int] | None = None,
) -> SelectionRun:
    """EXP3, the bandit ablation: only the chosen member's utility is used (`known_from` as in `hedge`).

    This is the *loss-based* EXP3 of Bubeck & Cesa-Bianchi (2012, §3.1): ``q_t ∝ exp(-η_t L̂_{t-1})`` with
    importance-weighted loss estimates ``l̂_{i,t} = l_{i,t} 1{I_t = i} / p_{i,t}`` (unbiased, and
    non-negative, so no explicit exploration is needed). Learning rate, in order of precedence: ``eta``
    fixed; ``horizon`` T → ``η = sqrt(2 ln K / (T K))``, pseudo-regret <= ``(hi-lo) sqrt(2 T K ln K)``
    (their Thm 3.1); neither → anytime ``η_t = sqrt(ln K / (t K))``, pseudo-regret <=
    ``(hi-lo) 2 sqrt(T K ln K)``.

    ``gamma`` (default 0) mixes in uniform exploration as in Auer et al. (2002):
    ``p_t = (1 - γ) q_t + γ / K``. It caps the importance weights at K/γ and adds at most ``γ T (hi-lo)``
    to the regret; it is there for ablations, not needed by the bound above.

    The draws use ``np.random.default_rng(seed)`` with the same stream as `hedge`; unlike Hedge, the
    probabilities depend on the seed (they depend on what was drawn).
    """
    lo, hi, arr, seed, names_t = _prepare(U, lo, hi, seed, names)
    rounds, k = arr.shape
    if gamma is None:
        gamma_f = 0.0
    else:
        try:
            gamma_f = float(gamma)
        except (TypeError, ValueError):
            raise PolicyError(f"gamma must be a number in [0, 1], got {gamma!r}") from None
        if not (0.0 <= gamma_f <= 1.0):
            raise PolicyError(f"gamma must be in [0, 1], got {gamma!r}")
    loss = losses_from_utilities(arr, lo, hi)
    ln_k = math.log(k)
    etas = _eta_schedule(
        eta, horizon, rounds,
        fixed=lambda T: math.sqrt(2 * ln_k / (T * k)),
        anytime=lambda t: np.sqrt(ln_k / (t * k)),
    )
    rng = np.random.default_rng(seed)
    u = rng.random(rounds)
    arrivals = _arrivals(check_known_from(known_from, rounds))
    L_hat = np.zeros(k)
    p = np.empty((rounds, k))
    chosen = np.empty(rounds, dtype=np.int64)
    for r in range(rounds):
        for j in arrivals.get(r, ()):
            L_hat[chosen[j]] += loss[j, chosen[j]] / p[j, chosen[j]]
        q = _softmax_neg(etas[r], L_hat)
        p[r] = (1.0 - gamma_f) * q + gamma_f / k
        chosen[r] = int(_draw(p[r], u[r]))
    return _result("exp3", arr, p, chosen, etas, seed, lo, hi, names_t, gamma_f)


def warm_started(algorithm: Callable[..., SelectionRun], warm, U, lo: float, hi: float,
                 known_from: Sequence[int] | None = None, **kwargs) -> SelectionRun:
    """Run `algorithm` (`hedge`, `adahedge` or `exp3`) on the rounds `U` after the warm-up rounds `warm`.

    The warm-up rounds are jobs that ended before the first round started (the trace's past, where every
    member can be replayed too): the selector starts from what they teach instead of from uniform weights,
    which is the same as having run it on them. Their outcomes are all known by the first round; the
    result covers the rounds of `U` only (choices, weights and regret), so the regret is still measured
    against the best fixed member on those rounds. `known_from` indexes the rounds of `U` as in `hedge`.
    With no warm-up rows this is `algorithm` itself.
    """
    arr = check_utilities(U)
    w = np.asarray(warm, dtype=float).reshape(-1, arr.shape[1]) if warm is not None else np.empty((0, arr.shape[1]))
    n0, rounds = w.shape[0], arr.shape[0]
    if n0 == 0:
        return algorithm(arr, lo, hi, known_from=known_from, **kwargs)
    if not np.all(np.isfinite(w)):
        raise PolicyError("warm-up utilities must be finite numbers")
    known = check_known_from(known_from, rounds)
    full_known = np.concatenate([np.arange(1, n0 + 1), known + n0])
    run = algorithm(np.vstack([w, arr]), lo, hi, known_from=full_known, **kwargs)
    p = run.probabilities[n0:]
    return SelectionRun(algorithm=run.algorithm, member_utilities=arr, probabilities=p, chosen=run.chosen[n0:],
                        utility_chosen=run.utility_chosen[n0:], utility_expected=run.utility_expected[n0:],
                        eta=run.eta[n0:], seed=run.seed, lo=run.lo, hi=run.hi, gamma=run.gamma, names=run.names)


# The selectors by name (`select(algorithm=...)`), and those that set their own rate (they take `prefer`, no eta)
SELECTORS: dict[str, Callable[..., SelectionRun]] = {"flipflop": flipflop, "adahedge": adahedge, "hedge": hedge,
                                                     "exp3": exp3}
OWN_RATE = ("flipflop", "adahedge")
