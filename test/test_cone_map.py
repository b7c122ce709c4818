# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
The cone map and its boundaries (path_planning.cone_map, track_walk).

Accumulation: noisy sightings from a moving, turning car merge into one
map cone each with the voted colour. Boundaries: a car driven along the
centre line of hard generated layouts (lanes side by side 4-6 m apart,
9 m hairpins, chicanes, 5 m gaps), seeing the cones a 2D lidar would
(20 m, +-90 deg, 3 cm noise, no colours), never has a cone of the wrong
side or of a neighbouring section in a boundary within 12 m of it, and
at the end of the lap both boundaries hold every cone of the lane.
"""

import math
from typing import Tuple

from hil_bridge.interface.cones import CONE_BIG_ORANGE, CONE_BLUE, CONE_UNKNOWN, CONE_YELLOW
from hil_bridge.sim.track_gen_hard import hard_layout
from hil_bridge.sim.tracks import tangents
import numpy as np
from path_planning.cone_map import ConeMap, ConeMapParams, to_map, to_vehicle
import pytest


def test_sightings_merge_and_vote() -> None:
    """Repeated noisy sightings merge to one cone with the voted colour."""
    rng = np.random.default_rng(0)
    truth = np.array([[5.0, 1.5], [10.0, 1.5], [5.0, -1.5]])
    m = ConeMap(ConeMapParams(merge_radius=0.5, min_observations=3))
    for k in range(30):
        pose = (0.1 * k, 0.0, 0.01 * k)
        local = to_vehicle(truth, pose) + rng.normal(0.0, 0.05, (3, 2))
        cls = np.array([CONE_BLUE, CONE_BLUE, CONE_YELLOW])
        if k % 5 == 0:
            cls[0] = CONE_YELLOW  # occasional wrong colour
        if k % 3 == 0:
            cls[1] = CONE_UNKNOWN
        m.update(local, cls, pose, np.full(3, 0.9))
    out = m.cones()
    assert len(out) == 3 and out.confirmed.all()
    assert (out.count == 30).all()
    for xy, want in zip(truth, (CONE_BLUE, CONE_BLUE, CONE_YELLOW)):
        j = int(np.argmin(np.hypot(*(out.xy - xy).T)))
        assert np.hypot(*(out.xy[j] - xy)) < 0.05
        assert out.class_id[j] == want
    near, _cls, count = m.cones_in_vehicle((3.0, 0.0, 0.0), max_range=5.0)
    assert len(near) == 2 and (count == 30).all()
    assert math.isclose(float(np.min(near[:, 0])), 2.0, abs_tol=0.05)


def test_confirmation_bad_input_and_memory_bound() -> None:
    """Unconfirmed cones are not reported; bad rows dropped; memory bounded."""
    m = ConeMap(ConeMapParams(min_observations=2, max_cones=50))
    m.update([[1.0, 1.0]], [0], (0.0, 0.0, 0.0))
    assert len(m) == 1 and not m.confirmed().any()
    assert len(m.cones_in_vehicle((0.0, 0.0, 0.0))[0]) == 0
    m.update([[1.05, 1.0], [np.nan, 2.0], [40.0, 0.0]], [0, 0, 0], (0.0, 0.0, 0.0))
    assert len(m) == 1 and m.confirmed().all()  # NaN row and far cone dropped
    with pytest.raises(ValueError, match='pose'):
        m.update([[1.0, 1.0]], [0], (0.0, float('inf'), 0.0))
    with pytest.raises(ValueError, match='class ids'):
        m.update([[1.0, 1.0]], [0, 1], (0.0, 0.0, 0.0))
    with pytest.raises(ValueError, match='shape'):
        m.update(np.zeros((2, 1)), [0, 0], (0.0, 0.0, 0.0))
    with pytest.raises(ValueError, match='merge_radius'):
        ConeMapParams(merge_radius=0.0)
    rng = np.random.default_rng(1)
    for k in range(20):  # clutter: 10 new one-off cones each time
        m.update(rng.uniform(-15.0, 15.0, (10, 2)), np.zeros(10), (0.0, 0.0, 0.0))
    assert len(m) <= 50
    assert m.confirmed()[0]  # the confirmed cone survives the clutter
    left, right = m.boundaries()
    assert len(left) == len(right) == 0  # never seeded on clutter


def _truth_side(track) -> np.ndarray:
    """+1 for left-boundary cones, -1 right (blue/yellow; big orange by geometry)."""
    cl, tan = track.centerline, tangents(track.centerline, True)
    xy = track.cones.xy
    j = np.argmin(np.hypot(*(xy[:, None] - cl[None]).transpose(2, 0, 1)), axis=1)
    rel = xy - cl[j]
    geo = np.sign(tan[j, 0] * rel[:, 1] - tan[j, 1] * rel[:, 0])
    cls = track.cones.class_id
    return np.where(cls == CONE_BLUE, 1, np.where(cls == CONE_YELLOW, -1, geo))


def _drive(seed: int, colours: bool) -> Tuple[ConeMap, int, np.ndarray]:
    """Drive the centre line of hard layout ``seed``; return the map and errors."""
    track = hard_layout(seed).track
    side = _truth_side(track)
    cl, tan = track.centerline, tangents(track.centerline, True)
    rng = np.random.default_rng(seed)
    cmap = ConeMap()
    i = int(np.argmin(np.hypot(*(cl - [track.car_start.x, track.car_start.y]).T)))
    wrong = 0
    for _ in range(len(cl) // 4 + 10):  # 1 m steps, a bit more than a lap
        k = i % len(cl)
        pose = (cl[k, 0], cl[k, 1], math.atan2(tan[k, 1], tan[k, 0]))
        local = to_vehicle(track.cones.xy, pose)
        seen = (np.hypot(*local.T) < 20.0) & (np.abs(np.arctan2(local[:, 1], local[:, 0]))
                                              < 0.5 * math.pi)
        obs = local[seen] + rng.normal(0.0, 0.03, (int(seen.sum()), 2))
        cls = track.cones.class_id[seen] if colours else np.zeros(int(seen.sum()))
        cmap.update(obs, cls, pose)
        for line, want in zip(cmap.boundaries(), (1, -1)):
            if len(line) == 0:
                continue
            truth = np.argmin(np.hypot(*(line.xy[:, None] - track.cones.xy[None])
                                       .transpose(2, 0, 1)), axis=1)
            near = np.hypot(*(line.xy - cl[k]).T) < 12.0
            wrong += int(np.count_nonzero(near & (side[truth] != want)))
        i += 4
    return cmap, wrong, side


@pytest.mark.parametrize('seed,colours', [(11, False), (3, True)])
def test_boundaries_of_hard_layouts(seed: int, colours: bool) -> None:
    """No cone of the wrong side near the car; the loop closes with every cone."""
    cmap, wrong, side = _drive(seed, colours)
    assert wrong == 0
    left, right = cmap.boundaries()
    assert cmap.closed
    assert len(left) == int(np.count_nonzero(side > 0))
    assert len(right) == int(np.count_nonzero(side < 0))
    assert left.n_final == len(left) and right.n_final == len(right)
    assert (left.count >= 2).all() and (right.count >= 2).all()
    if colours:
        assert not np.isin(left.class_id, [CONE_YELLOW]).any()
        assert not np.isin(right.class_id, [CONE_BLUE]).any()


def test_a_cone_beside_the_loop_start_does_not_close_the_other_chain() -> None:
    """
    The walk coming back to the loop's start: a cone of the left pair is not a right cone.

    Geometry of a ci_trackdrive run (map frame, m): both chains start at
    the timing line's big orange pairs, the left chain's first cone has
    its twin 0.8 m away, still in no chain. The right chain took it (a
    gate 1.6 m wide across the lane; the lane mode steered into the
    pair); now no cone within ``min_width`` of the other chain's first
    (or last) cones may join a chain, and the loop closes.
    """
    from path_planning.track_walk import _step, closes, WalkParams, WalkState
    left = [(-15.21, 34.24), (-11.2, 35.87), (-7.51, 37.2), (-25.74, 29.69), (-22.14, 31.38),
            (-18.46, 32.9)]
    right = [(-14.08, 31.51), (-13.31, 31.82), (-10.05, 33.14), (-24.63, 26.88),
             (-21.02, 28.59), (-17.33, 30.12)]
    xy = np.array(left + right + [(-14.44, 34.56)])
    cls = np.zeros(len(xy), np.uint8)
    cls[[0, 6, 7, 12]] = CONE_BIG_ORANGE
    st = WalkState(left=list(range(6)), right=list(range(6, 12)),
                   gates=[(k, k) for k in range(1, 7)], widths=[2.92] * 6,
                   length=[40.0 * k for k in range(6)])
    p = WalkParams()
    assert _step(st, xy, cls, np.array([12]), p)[0] == -1
    assert closes(st, xy, p)
    # the right pair's twin in its place still joins the right chain
    xy[12] = (-14.75, 31.25)
    assert _step(st, xy, cls, np.array([12]), p)[:2] == (12, -1)


def test_false_positives_and_dropouts() -> None:
    """
    One-off false cones are forgotten, real cones missed one cycle in five stay.

    From a car creeping along a straight lane (cones every 3 m, 1.5 m
    either side), each cone is missed with probability 0.2 per update and
    two false cones appear anywhere in the sensor's field each time.
    """
    rng = np.random.default_rng(3)
    x = np.arange(0.0, 40.0, 3.0)
    truth = np.vstack([np.column_stack([x, np.full(x.size, 1.5)]),
                       np.column_stack([x, np.full(x.size, -1.5)])])
    m = ConeMap()
    for k in range(60):
        pose = (0.1 * k, 0.0, 0.0)
        local = to_vehicle(truth, pose)
        keep = (rng.random(len(truth)) >= 0.2) & (np.hypot(*local.T) <= 20.0)
        fake = np.column_stack([rng.uniform(0.0, 18.0, 2), rng.uniform(-8.0, 8.0, 2)])
        obs = np.vstack([local[keep] + rng.normal(0.0, 0.05, (int(keep.sum()), 2)), fake])
        m.update(obs, np.zeros(len(obs)), pose)
    out = m.cones()
    d = np.min(np.hypot(*(out.xy[:, None] - truth[None]).transpose(2, 0, 1)), axis=1)
    assert (d[out.confirmed] < 0.2).all()           # no false cone confirmed
    near = np.hypot(*(truth - [6.0, 0.0]).T) <= 12.0
    seen = np.min(np.hypot(*(truth[near][:, None] - out.xy[out.confirmed][None])
                           .transpose(2, 0, 1)), axis=1)
    assert (seen < 0.2).all()                        # every real cone near the car kept
    assert len(out) < len(truth) + 10                # false ones do not pile up


def test_seed_gate_is_square_to_the_car() -> None:
    """The right cone beside the car missed: the walk starts at the next square pair."""
    from path_planning.track_walk import seed_gate, WalkParams, WalkState
    x = np.arange(0.0, 15.0, 3.0)
    xy = np.vstack([np.column_stack([x, np.full(x.size, 1.5)]),
                    np.column_stack([x, np.full(x.size, -1.5)]), [[-3.0, -1.5]]])
    ok = np.ones(len(xy), bool)
    ok[x.size] = False          # the right cone at x = 0 not confirmed yet
    st = WalkState()
    seed_gate(st, xy, np.zeros(len(xy), np.uint8), ok, (0.2, 0.0, 0.0), WalkParams())
    assert st.widths[0] == pytest.approx(3.0)
    assert xy[st.left[0], 0] == xy[st.right[0], 0]


def test_frames_round_trip() -> None:
    """to_map and to_vehicle are inverse (REP-103 poses)."""
    pts = np.array([[1.0, 2.0], [-3.0, 0.5]])
    pose = (4.0, -1.0, 0.7)
    np.testing.assert_allclose(to_vehicle(to_map(pts, pose), pose), pts, atol=1e-12)
    np.testing.assert_allclose(to_map(np.array([[1.0, 0.0]]), (0.0, 0.0, math.pi / 2)),
                               [[0.0, 1.0]], atol=1e-12)
