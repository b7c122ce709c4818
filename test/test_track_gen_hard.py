# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""Hard layouts: within the rules for many seeds, every feature measured."""

import math
from typing import List

from hil_bridge.interface.cones import CONE_BIG_ORANGE
from hil_bridge.interface.track import arc_length
from hil_bridge.sim import tracks as T
from hil_bridge.sim.reference_lap import path_curvature
from hil_bridge.sim.track_gen_hard import (Feature, HAIRPIN_RADIUS,
                                           hard_layout, hard_track)
import numpy as np
import pytest
from scipy.spatial import cKDTree

SEEDS = range(40)
LAYOUTS = {seed: hard_layout(seed) for seed in SEEDS}


def _window(s: np.ndarray, f: Feature, total: float) -> np.ndarray:
    """Return a mask of the arc positions inside a feature's range."""
    if f.s1 >= f.s0:
        return (s >= f.s0) & (s <= f.s1)
    return (s >= f.s0) | (s <= f.s1)


def _of(kind: str, feats: List[Feature]) -> List[Feature]:
    return [f for f in feats if f.kind == kind]


def test_rules_hold_over_many_seeds() -> None:
    """Every layout passes the rule check, closed, 200-500 m, 3 m wide."""
    lengths, lanes = [], set()
    for seed, lay in LAYOUTS.items():
        track = lay.track
        assert T.check_track_rules(track, tolerance=0.01) == [], seed
        assert track.closed and track.width == 3.0
        lengths.append(track.length)
        lanes.add(len(_of('side_by_side', lay.features)) + 1)
        start = track.timing_lines['start']
        rel = np.array([track.car_start.x, track.car_start.y]) - \
            (start.a + start.b) / 2.0
        assert float(rel @ start.direction) == pytest.approx(-6.0, abs=0.1)
        big = track.cones.xy[track.cones.class_id == CONE_BIG_ORANGE]
        assert len(big) == 4
    assert min(lengths) >= 200.0 and max(lengths) <= 500.0
    assert lanes == {2, 4}                  # both structures appear


def test_deterministic_and_varied() -> None:
    """Same seed, same layout; other seeds, other layouts."""
    a, b = hard_track(7), hard_track(7)
    np.testing.assert_array_equal(a.cones.xy, b.cones.xy)
    np.testing.assert_array_equal(a.centerline, b.centerline)
    lengths = {round(lay.track.length, 3) for lay in LAYOUTS.values()}
    assert len(lengths) == len(LAYOUTS)


def test_hairpins_have_nine_metre_outside_diameter() -> None:
    """Tight hairpins: outer cones 4.55 m from the turn centre."""
    for seed, lay in LAYOUTS.items():
        track = lay.track
        pins = _of('hairpin', lay.features)
        assert pins, seed
        s = arc_length(track.centerline, True)[:-1]
        kappa = path_curvature(T.resample(track.centerline, True, 0.25),
                               True)
        assert 1.0 / kappa.max() == pytest.approx(HAIRPIN_RADIUS, abs=0.03)
        for pin in pins:
            centre = pin.info['centre']
            near = np.hypot(*(track.cones.xy - centre).T)
            # inner cones 1.55 m, outer cones 4.55 m from the centre
            # (9.1 m outside diameter)
            assert (near < 1.6).sum() >= 1, seed
            ring = (near > 4.5) & (near < 4.6)
            assert ring.sum() >= 2, seed
            # no cone of the outer side nearer than that
            _s, lat, _d = T.lateral_position(track, np.vstack([centre, track.cones.xy]))
            outer = (lat[1:] * lat[0] < 0.0) & (near < 6.0)
            assert near[outer].min() > 4.5 - 1e-6, seed
            assert 9.0 <= 2.0 * near[ring].max() <= 9.2
            # the centre line goes round it at the tight radius
            cl = track.centerline[_window(s, pin, s[-1])]
            d = np.hypot(*(cl - centre).T)
            assert d.min() == pytest.approx(HAIRPIN_RADIUS, abs=0.03)


def test_long_straight_leads_into_a_hairpin() -> None:
    """Lane 0 ends in 35-70 m of straight right before a tight hairpin."""
    for seed, lay in LAYOUTS.items():
        (straight,) = _of('long_straight', lay.features)
        first_pin = _of('hairpin', lay.features)[0]
        assert 35.0 <= straight.s1 - straight.s0 <= 70.5, seed
        assert first_pin.s0 - straight.s1 == pytest.approx(0.0, abs=0.5)
        s = arc_length(lay.track.centerline, True)[:-1]
        kappa = path_curvature(lay.track.centerline, True)
        core = Feature('x', straight.s0 + 1.5, straight.s1 - 1.5)
        inside = _window(s, core, s[-1])
        assert np.abs(kappa[inside]).max() < 1e-3, seed


def _boundaries(track: T.Track) -> tuple:
    cl = T.resample(track.centerline, True, 0.25)
    tan = T.tangents(cl, True)
    nrm = np.column_stack([-tan[:, 1], tan[:, 0]])
    s = arc_length(cl, True)[:-1]
    h = track.width / 2.0
    return cl, s, cl + h * nrm, cl - h * nrm


def test_side_by_side_sections_four_to_six_metres_apart() -> None:
    """Facing boundaries of neighbouring lanes: 4-6 m; nothing closer."""
    for seed, lay in LAYOUTS.items():
        cl, s, left, right = _boundaries(lay.track)
        total = s[-1] + 0.25
        pts = np.vstack([left, right])
        arc = np.concatenate([s, s])
        # any two boundary points more than 40 m apart along the track
        # (not the two legs of one hairpin) are at least 4 m apart
        tree = cKDTree(pts)
        pairs = tree.query_pairs(4.0 - 0.05, output_type='ndarray')
        if pairs.size:
            sep = np.abs(arc[pairs[:, 0]] - arc[pairs[:, 1]])
            sep = np.minimum(sep, total - sep)
            assert sep.max() <= 40.0, seed
        for f in _of('side_by_side', lay.features):
            other = Feature('x', *f.info['other'])
            a = pts[np.concatenate([_window(s, f, total)] * 2)]
            b = pts[np.concatenate([_window(s, other, total)] * 2)]
            gap = float(cKDTree(b).query(a)[0].min())
            assert gap == pytest.approx(f.info['gap'], abs=0.1), seed
            assert 3.95 <= gap <= 6.05, seed


def test_slalom_and_chicane_are_present_and_legal() -> None:
    """Each layout has both; they weave / shift by the drawn amounts."""
    for seed, lay in LAYOUTS.items():
        cl = lay.track.centerline
        s = arc_length(cl, True)[:-1]
        kappa = path_curvature(cl, True)
        slaloms = _of('slalom', lay.features)
        chicanes = _of('chicane', lay.features)
        assert slaloms and chicanes, seed
        for f in slaloms + chicanes:
            inside = _window(s, f, s[-1])
            assert 1.0 / kappa[inside].max() >= 3.99, seed
            seg = cl[inside]
            # lateral deviation from the chord of the feature
            chord = seg[-1] - seg[0]
            chord /= np.hypot(*chord)
            lat = (seg - seg[0]) @ np.array([-chord[1], chord[0]])
            amp = f.info['amp']
            if f.kind == 'slalom':
                assert lat.max() == pytest.approx(amp, abs=0.05)
                assert lat.min() == pytest.approx(-amp, abs=0.05)
                signs = np.sign(lat[np.abs(lat) > 0.5 * amp])
                flips = int(np.sum(signs[1:] != signs[:-1]))
                assert flips == f.info['bumps'] - 1, seed
            else:
                assert np.abs(lat).max() == pytest.approx(amp, abs=0.05)
                assert amp >= 2.0


def test_cone_gaps_reach_five_metres_in_turns() -> None:
    """Turn cones are up to 5 m apart; straights 3.5-5 m; never more."""
    widest = []
    for seed, lay in LAYOUTS.items():
        track = lay.track
        s, lat, _d = T.lateral_position(track, track.cones.xy)
        for sign in (1.0, -1.0):
            idx = np.flatnonzero(lat * sign > 0)
            order = idx[np.argsort(s[idx])]
            p = track.cones.xy[order]
            gaps = np.hypot(*np.diff(np.vstack([p, p[:1]]), axis=0).T)
            assert gaps.max() <= T.MAX_CONE_SPACING + 1e-9, seed
            widest.append(gaps.max())
    assert max(widest) > 4.8
    assert np.median(widest) > 4.0


def test_bad_parameters_are_refused() -> None:
    """Width and start offset outside their ranges raise."""
    with pytest.raises(ValueError, match='width'):
        hard_layout(0, width=2.5)
    with pytest.raises(ValueError, match='car_start_offset'):
        hard_layout(0, car_start_offset=0.0)
    assert math.isfinite(hard_track(1, mission='autocross').length)
