"""Per-zone forecasts on a tiny slice of every shared source (skips without the data)."""

from __future__ import annotations

import numpy as np
import pytest

from spotlab.errors import ExperimentError
from spotlab.experiments import zone_forecasts as zf


@pytest.fixture(scope="module")
def have_data(dataset):
    dataset(zf.LEADERBOARD_DIR + "us-east-1a_v100_1__0.json")
    dataset(zf.SKYNOMAD_DIR + "asia-south2-b_h100_16__full.json")
    dataset(zf.SKYPILOT_DIR + zf.SKYPILOT_FILES["us-east-1a"])


def test_a_tiny_slice_of_every_source(have_data):
    rows = zf.zone_forecasts(zones_limit=1, windows=(0, 1), span_slots=1400, horizons=(1, 6), n_jobs=1)
    assert set(rows.source) == set(zf.SOURCES)
    assert set(rows[rows.target == "price"].source) == {"leaderboard"}  # the only source whose price moves
    assert rows.groupby(["source", "target", "zone"]).size().min() > 0
    avail = rows[rows.target == "availability"]
    assert set(avail.model) == set(zf.AVAILABILITY_MODELS)
    assert set(avail.score) == set(zf.LOSSES) and set(avail.h) == {1, 6}
    scored = avail[avail.n > 0]  # a zone with no origin in a down spell has no brier_stay_down
    assert np.isfinite(scored.value).all() and ((scored.value >= 0) & (scored.value <= 1)).all()
    assert avail[avail.n == 0].value.isna().all()
    pers = rows[rows.model == "persistence"]
    assert (pers.skill.dropna() == 0).all()
    one = avail[(avail.source == "leaderboard") & (avail.model == "spells") & (avail.h == 1)].set_index("score")
    assert one.loc["brier_stay_up", "n"] + one.loc["brier_stay_down", "n"] == one.loc["brier", "n"]
    s = zf.summary(rows)
    assert len(s) == len(rows.dropna(subset=["value"]).drop_duplicates(["source", "target", "model", "h", "score"]))


def test_unknown_source():
    with pytest.raises(ExperimentError, match="unknown source 'aws'"):
        zf.zone_forecasts(sources=("aws",))
