# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""Minimum-curvature line: the QP against scipy, a ring's outer line, a hard layout's limits."""

from dataclasses import replace
import math

from hil_bridge.bridge.scenario import load_scenario
from hil_bridge.interface.cones import CONE_BIG_ORANGE, CONE_BLUE, CONE_YELLOW
from hil_bridge.interface.vehicle_profile import load_vehicle_profile
from hil_bridge.sim.reference_lap import profile_lap_time
import numpy as np
from path_planning.qp import BandedQP, stencil
from path_planning.raceline import (box_intrusion, compute_raceline, RacelineParams,
                                    signed_curvature)
from path_planning.track_map import build_track_map, TrackMap, TrackMapParams
import pytest
from scipy import sparse
from scipy.optimize import lsq_linear

FS = load_vehicle_profile('fs_car')


@pytest.mark.parametrize('band', [True, False])
def test_qp_matches_scipy_bounded_least_squares(band: bool, monkeypatch) -> None:
    # min |A x - b|^2 with bounds on x: the banded interior point (and its
    # sparse path, used round a closed loop) against scipy's bounded least squares
    rng = np.random.default_rng(4)
    n = 60
    a = sparse.diags([rng.normal(size=n), rng.normal(size=n - 1), rng.normal(size=n - 2)],
                     [0, 1, 2], shape=(n, n)) + sparse.eye(n)
    b = rng.normal(size=n)
    lo, hi = -0.3 * np.ones(n), 0.2 * np.ones(n)
    if not band:
        monkeypatch.setattr('path_planning.qp.SPARSE_BAND', -1)
    g = sparse.vstack([sparse.eye(n), -sparse.eye(n)])
    qp = BandedQP(*stencil(a), -b, *stencil(g), n, reg=1e-12)
    assert qp.sparse != band
    res = qp.solve(np.concatenate([hi, -lo]))
    ref = lsq_linear(a.toarray(), b, bounds=(lo, hi), method='bvls', tol=1e-12).x
    assert res.converged and res.iterations < 40
    np.testing.assert_allclose(res.x, ref, atol=1e-5)
    assert np.count_nonzero(np.isclose(ref, lo) | np.isclose(ref, hi)) > 0


def _ring(radius: float = 20.0, width: float = 3.0) -> TrackMap:
    """Return a ring track driven counter-clockwise (blue inside on the left)."""
    def circle(r: float, n: int) -> np.ndarray:
        t = np.linspace(0.0, 2.0 * math.pi, n, endpoint=False)
        return r * np.column_stack([np.cos(t), np.sin(t)])
    inner, outer = circle(radius - width / 2, 40), circle(radius + width / 2, 50)
    cones = np.vstack([inner, outer])
    cls = np.array([CONE_BLUE] * 40 + [CONE_YELLOW] * 50)
    m = build_track_map(cones, cls, circle(radius, 300), TrackMapParams(min_start_cones=0))
    assert m.ok, m.reason
    return m


def test_ring_line_is_the_widest_circle() -> None:
    p = RacelineParams(margin=0.2)
    line = compute_raceline(_ring(), FS, p)
    r = np.hypot(*line.xy.T)
    # the rear axle keeps off the outer chord polygon (50 cones at 21.5 m)
    # and the front outer corner, sweeping wider, off the cones themselves
    chord = 21.5 * math.cos(math.pi / 50) - 0.5 * FS.width - p.cone_radius - p.margin
    front = FS.length - FS.rear_overhang
    sweep = math.sqrt((21.5 - p.cone_radius - p.margin) ** 2 - front ** 2) - 0.5 * FS.width
    expected = min(chord, sweep)
    assert np.median(r) == pytest.approx(expected, abs=0.05)
    assert r.max() - r.min() < 0.1
    assert line.clearance >= p.margin - 0.02
    np.testing.assert_allclose(line.kappa, 1.0 / np.median(r), rtol=0.05)
    # grip-limited on a ring: v^2 kappa = the used lateral grip
    a_lat = FS.max_lat_accel * p.lat_grip
    np.testing.assert_allclose(line.v ** 2 * np.abs(line.kappa), a_lat, rtol=0.05)


@pytest.fixture(scope='module')
def hard() -> tuple:
    track = load_scenario('track_sweep', seed=4).track
    m = build_track_map(track.cones.xy, track.cones.class_id, track.centerline)
    assert m.ok, m.reason
    return track, m, compute_raceline(m, FS)


def test_hard_layout_line_keeps_the_car_off_the_cones(hard) -> None:
    track, m, line = hard
    assert line.clearance > 0.1 and line.n_pinched == 0
    tang = np.roll(line.xy, -1, axis=0) - np.roll(line.xy, 1, axis=0)
    heading = np.arctan2(tang[:, 1], tang[:, 0])
    small = track.cones.class_id != CONE_BIG_ORANGE
    in_l, in_r = box_intrusion(line.xy, heading, track.cones.xy[small], FS,
                               0.114, 0.114)
    assert in_l.max() == 0.0 and in_r.max() == 0.0   # no cone touches the box
    assert line.length < track.length                  # it cuts the corners


def test_hard_layout_line_beats_the_centre_line_at_the_same_grip(hard) -> None:
    track, _m, line = hard
    p = RacelineParams()
    grip = replace(FS, max_lat_accel=FS.max_lat_accel * p.lat_grip,
                   max_decel=FS.max_decel * p.long_grip, top_speed=p.max_speed)
    centre = profile_lap_time(track.centerline, True, grip)
    assert line.lap_time < 0.95 * centre
    # the profile never asks for more than the used grip
    assert np.all(line.v ** 2 * np.abs(line.kappa) <= FS.max_lat_accel * p.lat_grip * 1.001)
    assert line.v.max() <= p.max_speed + 1e-9


def test_signed_curvature_sign() -> None:
    t = np.linspace(0.0, 2.0 * math.pi, 100, endpoint=False)
    ccw = 5.0 * np.column_stack([np.cos(t), np.sin(t)])
    np.testing.assert_allclose(signed_curvature(ccw), 0.2, rtol=1e-3)
    np.testing.assert_allclose(signed_curvature(ccw[::-1]), -0.2, rtol=1e-3)


def test_incomplete_map_and_bad_params_are_refused() -> None:
    with pytest.raises(ValueError, match='not usable'):
        compute_raceline(TrackMap(False, 'left boundary has 2 cones'), FS)
    with pytest.raises(ValueError, match='lat_grip'):
        RacelineParams(lat_grip=1.5)
    with pytest.raises(ValueError, match='step'):
        RacelineParams(step=0.0)
