"""The Brier score, on a case computed by hand."""

from __future__ import annotations

import numpy as np
import pytest

from spotlab.predict import metrics


def test_brier():
    assert metrics.brier(np.array([1.0, 0.5, 0.2]), np.array([1, 0, 1])) == pytest.approx((0 + 0.25 + 0.64) / 3)
    assert np.isnan(metrics.brier(np.array([]), np.array([])))
