# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""The tutorial's fixed-TTC baseline."""

import math
from typing import Any

from aeb_control.aeb_core import AebCore, AebParams
from aeb_control.fixed_ttc import fixed_ttc_brake, FixedTtcParams, ground_truth_ttc, tutorial_ttc
import numpy as np
import pytest


def test_tutorial_formula() -> None:
    """Ego 5.5 m/s at x=0, target at 50 m standing: TTC = 9.09 s."""
    assert tutorial_ttc(0.0, 5.5, 50.0, 0.0) == pytest.approx(50 / 5.5)
    assert tutorial_ttc(0.0, 5.5, 50.0, 5.5) == math.inf
    assert tutorial_ttc(0.0, 5.0, 50.0, 10.0) < 0.0


def test_rule_window() -> None:
    """Full brake only while 0 < TTC < 3 s."""
    assert fixed_ttc_brake(2.9)
    assert not fixed_ttc_brake(3.0)
    assert not fixed_ttc_brake(0.0)
    assert not fixed_ttc_brake(-1.0)
    assert not fixed_ttc_brake(math.inf)


def test_ground_truth_projection_and_gate() -> None:
    """Projected on the ego heading; no lateral gate unless asked."""
    ttc = ground_truth_ttc([0.0, 0.0], math.pi / 2, 10.0,
                           np.array([[0.0, 20.0], [3.5, 15.0]]),
                           np.zeros((2, 2)))
    assert ttc == pytest.approx(1.5)       # the adjacent-lane car counts
    gated = ground_truth_ttc([0.0, 0.0], math.pi / 2, 10.0,
                             np.array([[0.0, 20.0], [3.5, 15.0]]),
                             np.zeros((2, 2)), lateral_gate=1.5)
    assert gated == pytest.approx(2.0)
    assert ground_truth_ttc([0, 0], 0.0, 10.0, np.zeros((0, 2)),
                            np.zeros((0, 2))) is None
    with pytest.raises(ValueError):
        ground_truth_ttc([0, 0], 0.0, 1.0, np.zeros((2, 2)), np.zeros((3, 2)))
    with pytest.raises(ValueError):
        FixedTtcParams(ttc_threshold=0.0)


def _brake_onset(core: AebCore, v: float) -> Any:
    """Drive at ``v`` m/s towards a car stopped 40 m ahead; return the first braking."""
    for k in range(200):
        t = 0.05 * k
        core.update_odometry(t, v, 0.0)
        d = core.update_ground_truth(t, [v * t, 0.0], 0.0,
                                     np.array([[40.0, 0.0]]), [0.0],
                                     np.zeros((1, 2)), [[4.7, 1.9, 1.5]])
        if d.decel > 0.0:
            return d
    raise AssertionError('no braking')


def test_core_fixed_strategy_brakes_at_3s_ground_truth() -> None:
    """Through AebCore: brakes at TTC < 3 s, which is far too early at 30."""
    core = AebCore(AebParams(strategy='fixed_ttc', mode='ground_truth'))
    v = 30 / 3.6
    onset = _brake_onset(core, v)
    assert 2.8 < onset.ttc < 3.0
    assert onset.ttc > 2.0 * core.last_point_ttc(v)


def test_core_staged_ground_truth_mode() -> None:
    """ttc_staged on ground truth: brakes later than fixed, before impact."""
    core = AebCore(AebParams(mode='ground_truth'))
    v = 30 / 3.6
    onset = _brake_onset(core, v)
    lp = core.last_point_ttc(v)
    assert lp <= onset.ttc <= 1.5 * lp
    assert onset.distance > 0.0
