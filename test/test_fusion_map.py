# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
Cone map with fusion: the vision colours survive the map.

Core level: lidar cones (no colour, precise) fused with vision cones
(colour, coarse, shorter range, every other frame) over many frames of a
moving and turning ego, accumulated in :class:`ConeMap`. Node level: the
same through ``ConeFusionNode``'s callbacks in-process (no second process),
with ``map_enabled`` on.
"""

import time
from typing import Any, Optional, Tuple

from cone_detection.fusion import ConeSet, fuse, FusionParams
from hil_bridge.interface.cones import (CONE_BIG_ORANGE, CONE_BLUE, CONE_ORANGE, CONE_UNKNOWN,
                                        CONE_YELLOW)
from hil_bridge.interface.frames import se2, transform_xy
import numpy as np
from path_planning.cone_map import ConeMap, ConeMapParams
import pytest

#: cones in ``map`` (m): a gentle left bend, all four colours
_S = np.linspace(4.0, 28.0, 7)
TRUTH = np.vstack((
    np.column_stack((_S, 1.5 + 0.01 * _S ** 2)),
    np.column_stack((_S, -1.5 + 0.01 * _S ** 2)),
    [[2.0, 2.5], [2.0, -2.5], [12.0, 3.9]],
))
TRUTH_CLS = np.concatenate((
    np.full(_S.size, CONE_BLUE), np.full(_S.size, CONE_YELLOW),
    [CONE_BIG_ORANGE, CONE_BIG_ORANGE, CONE_ORANGE])).astype(np.uint8)


def _ego(k: int) -> Tuple[float, float, float]:
    """Return the ego pose (x, y, yaw) of frame ``k`` (10 Hz, ~5 m/s)."""
    x = 0.5 * k
    return x, 0.01 * x ** 2, float(np.arctan(0.02 * x))


def _frame(k: int, rng: np.random.Generator
           ) -> Tuple[ConeSet, Optional[ConeSet]]:
    """Return the lidar and vision cones (vehicle frame) of frame ``k``."""
    x, y, yaw = _ego(k)
    local = transform_xy(np.linalg.inv(se2(x, y, yaw)),
                         np.column_stack((TRUTH, np.zeros(len(TRUTH)))))
    dist = np.hypot(local[:, 0], local[:, 1])
    ahead = local[:, 0] > 0.5
    seen_l = ahead & (dist < 20.0)
    n_l = int(seen_l.sum())
    lid = local[seen_l].copy()
    lid[:, :2] += rng.normal(0.0, 0.03, (n_l, 2))
    lidar = ConeSet(lid, np.zeros(n_l, np.uint8), np.full(n_l, 0.7))
    if k % 2:
        return lidar, None
    seen_v = ahead & (dist < 12.0)
    n_v = int(seen_v.sum())
    vis = local[seen_v].copy()
    vis[:, :2] += rng.normal(0.0, 0.15, (n_v, 2))
    return lidar, ConeSet(vis, TRUTH_CLS[seen_v], np.full(n_v, 0.8))


def _nearest(xy: np.ndarray, cones_xy: np.ndarray) -> Tuple[int, float]:
    """Return the index of the cone nearest ``xy`` and its distance (m)."""
    d = np.hypot(cones_xy[:, 0] - xy[0], cones_xy[:, 1] - xy[1])
    j = int(np.argmin(d))
    return j, float(d[j])


def test_cone_map_keeps_vision_colours_over_frames() -> None:
    """Every mapped cone vision saw keeps its colour; no duplicates."""
    rng = np.random.default_rng(3)
    cmap = ConeMap(ConeMapParams(merge_radius=0.7, min_observations=2))
    params = FusionParams()
    for k in range(50):
        lidar, vision = _frame(k, rng)
        fused = fuse(lidar, vision, params)
        cmap.update(fused.xyz, fused.class_id, _ego(k), fused.confidence)
        # what the node publishes: confirmed map cones near the ego
        _xy, near_cls, _count = cmap.cones_in_vehicle(_ego(k), max_range=25.0)
        if k >= 4:
            coloured = np.mean(near_cls != CONE_UNKNOWN)
            assert coloured >= 0.5, (k, near_cls)
    out = cmap.cones()
    assert len(cmap) == len(TRUTH)
    assert out.confirmed.all()
    for xy, want in zip(TRUTH, TRUTH_CLS):
        j, dist = _nearest(xy, out.xy)
        assert dist < 0.05
        assert out.class_id[j] == want, (xy, out.class_id[j], want)
    assert out.class_id.dtype == np.uint8


def test_cone_map_colour_outvotes_unknown_sightings() -> None:
    """A cone seen coloured once and unknown many times stays coloured."""
    cmap = ConeMap(ConeMapParams(min_observations=2))
    xy = np.array([[5.0, 1.5], [5.0, -1.5], [9.0, 1.5], [9.0, -1.5]])
    cls = np.array([CONE_BLUE, CONE_YELLOW, CONE_ORANGE, CONE_BIG_ORANGE],
                   np.uint8)
    cmap.update(xy, cls, (0.0, 0.0, 0.0), np.full(4, 0.3))
    for _ in range(20):
        cmap.update(xy, np.zeros(4, np.uint8), (0.0, 0.0, 0.0), np.ones(4))
    out = cmap.cones()
    order = [_nearest(p, out.xy)[0] for p in xy]
    assert out.class_id[order].tolist() == cls.tolist()
    _xy, near_cls, _count = cmap.cones_in_vehicle((5.0, 0.0, np.pi / 2), max_range=10.0)
    assert sorted(near_cls.tolist()) == sorted(cls.tolist())


def _odom(t: float, x: float, y: float, yaw: float) -> Any:
    from hil_bridge.interface.codecs import stamps
    from nav_msgs.msg import Odometry
    msg = Odometry()
    msg.header.stamp = stamps.stamp_from_sec(t)
    msg.header.frame_id = 'map'
    msg.pose.pose.position.x = float(x)
    msg.pose.pose.position.y = float(y)
    msg.pose.pose.orientation.z = float(np.sin(0.5 * yaw))
    msg.pose.pose.orientation.w = float(np.cos(0.5 * yaw))
    return msg


def _cloud(cones: ConeSet, t: float) -> Any:
    from hil_bridge.interface.codecs import clouds
    return clouds.cones_to_cloud(cones.xyz.astype(np.float32),
                                 cones.class_id, cones.confidence, t,
                                 'ego_vehicle')


@pytest.mark.dds
def test_fusion_node_map_publishes_colours(rclpy_context, capfd) -> None:
    """
    With map_enabled the published cones keep the vision colours (sim clock).

    The camera here runs at half the lidar's rate, 20 ms ahead of the lidar
    stamp: a lidar message waits (``wait_for_vision``) for a vision
    detection of its stamp or a newer one, so it is fused when the next
    vision comes, and the last one once the wait has run out.
    """
    from cone_detection.fusion_node import ConeFusionNode
    from hil_bridge.interface.codecs import clouds, stamps
    from inprocess import NodeUnderTest
    wait = 0.2
    h = NodeUnderTest(ConeFusionNode, rclpy_context, {'map_enabled': True,
                                                      'wait_for_vision': wait})
    node = h.node
    try:
        assert node.map is not None
        rng = np.random.default_rng(5)
        for k in range(30):
            t = 10.0 + 0.1 * k
            for dt in (-0.05, 0.0, 0.05):
                x, y, yaw = _ego(k + dt / 0.1)
                h.at(t + dt)
                node._on_odom(_odom(t + dt, x, y, yaw))
            lidar, vision = _frame(k, rng)
            h.at(t)
            if vision is not None:
                node._on_vision(_cloud(vision, t - 0.02))
            node._on_lidar(_cloud(lidar, t))
        # the last lidar message (no vision of its stamp) waits, then is fused alone
        assert stamps.sec_from_stamp(h.topic('/perception/cones')[-1].header.stamp) == \
            pytest.approx(12.8)
        time.sleep(wait + 0.05)
        node._on_wait_timer()
        assert node.vision_timeouts == 1
        got = h.topic('/perception/cones')
        assert node.published >= 30 and len(got) >= 30
        xyz, cls, _ = clouds.cloud_to_cones(got[-1])
        assert stamps.sec_from_stamp(got[-1].header.stamp) == \
            pytest.approx(12.9)
        assert len(cls) > 0
        world = transform_xy(se2(*_ego(29)), xyz.astype(np.float64))
        for p, c in zip(world, cls):
            j, dist = _nearest(p, TRUTH)
            assert dist < 0.1
            if np.hypot(*(TRUTH[j] - _ego(29)[:2])) < 10.0:
                assert c == TRUTH_CLS[j], (p, c, TRUTH_CLS[j])
        assert np.mean(cls != CONE_UNKNOWN) >= 0.5, cls
    finally:
        node.destroy_node()
    err = capfd.readouterr().err
    assert 'map on' in err, err
    assert 'no vision detection for the lidar cones at t=12.900 s' in err, err


@pytest.mark.dds
def test_fusion_node_waits_for_the_vision_of_its_stamp(rclpy_context) -> None:
    """
    ``wait_for_vision``: a lidar message is fused once the vision of its stamp has come.

    So its colours do not depend on which detector was faster, from the
    first frame on: at start-up (and on a new time line after a clock jump
    back) the lidar waits too, a re-sent copy of the waiting message waits
    on, a stamp already published passes at once, and a vision result that
    comes before its lidar message is never published alone (the old
    rules judged by wall time: on a loaded machine frame 0 went to the
    planner lidar-only or vision-only, as the processes happened to start).
    """
    from cone_detection.fusion_node import ConeFusionNode, VISION_ALIVE
    from hil_bridge.interface.codecs import clouds, stamps
    from inprocess import NodeUnderTest
    h = NodeUnderTest(ConeFusionNode, rclpy_context, {'wait_for_vision': 30.0})
    node = h.node
    lidar = ConeSet(np.array([[5.0, 1.5, 0.0], [5.0, -1.5, 0.0]]), np.zeros(2, np.uint8),
                    np.full(2, 0.7))
    vision = ConeSet(lidar.xyz.copy(), np.array([CONE_BLUE, CONE_YELLOW], np.uint8),
                     np.full(2, 0.8))
    fused = (pytest.approx(10.0), [CONE_BLUE, CONE_YELLOW])

    def published() -> list:
        return [(stamps.sec_from_stamp(m.header.stamp),
                 sorted(clouds.cloud_to_cones(m)[1].tolist()))
                for m in h.topic('/perception/cones')]
    try:
        h.at(10.0)
        node._on_odom(_odom(10.0, 0.0, 0.0, 0.0))
        node._on_lidar(_cloud(lidar, 10.0))  # start-up, no vision yet: it waits
        time.sleep(0.3)
        node._on_lidar(_cloud(lidar, 10.0))  # the frame re-sent: the copy waits on
        assert published() == []
        node._on_vision(_cloud(vision, 10.0))  # its vision: fused with colours, once
        assert published() == [fused]
        node._on_lidar(_cloud(lidar, 10.0))  # vision of its stamp there: at once
        assert published() == [fused, fused]
        h.at(10.05)
        node._on_vision(_cloud(vision, 10.05))  # vision first (however late the lidar)
        assert len(published()) == 2  # never published alone
        node._on_lidar(_cloud(lidar, 10.05))
        assert published()[-1] == (pytest.approx(10.05), [CONE_BLUE, CONE_YELLOW])
        h.at(10.1)
        node._on_lidar(_cloud(lidar, 10.1))  # the lidar first: it waits
        assert len(published()) == 3
        node._on_vision(_cloud(vision, 10.1))
        assert published()[-1] == (pytest.approx(10.1), [CONE_BLUE, CONE_YELLOW])
        h.at(10.15)
        node._on_lidar(_cloud(lidar, 10.15))  # waits; the clock jumps back
        h.at(2.0)
        node._on_odom(_odom(2.0, 0.0, 0.0, 0.0))
        node._on_lidar(_cloud(lidar, 2.0))  # a new time line: it waits, as at start-up
        assert published()[-1][0] == pytest.approx(10.1)
        node._on_vision(_cloud(vision, 2.0))
        assert published()[-1] == (pytest.approx(2.0), [CONE_BLUE, CONE_YELLOW])
        # the detector falls silent: lidar waits until its stamps run
        # VISION_ALIVE s (sim time) past the last vision, then passes at once
        t = 2.05
        h.at(t)
        node._on_lidar(_cloud(lidar, t))  # waits for its vision
        late = 2.0 + VISION_ALIVE + 0.05
        h.at(late)
        node._on_lidar(_cloud(lidar, late))  # a newer one: the waiting one goes out
        assert [p[0] for p in published()[-2:]] == [pytest.approx(t), pytest.approx(late)]
        assert published()[-1][1] == [0, 0]
        assert node.vision_timeouts == 0
    finally:
        node.destroy_node()


def test_fusion_node_map_counts_a_stamp_once(rclpy_context) -> None:
    """
    Messages of one stamp (a re-sent lockstep frame, an empty second cloud) update the map once.

    Each update counts sightings and misses: three empty clouds of the
    stamp just mapped made the two cones 'missed' three times, and the
    unconfirmed cones were forgotten (Jazzy CI, test_fusion_fuzz).
    """
    from cone_detection.fusion_node import ConeFusionNode
    from inprocess import NodeUnderTest
    h = NodeUnderTest(ConeFusionNode, rclpy_context, {'map_enabled': True,
                                                      'use_vision': False})
    node = h.node
    two = ConeSet(np.array([[5.0, 1.5, 0.0], [5.0, -1.5, 0.0]]), np.zeros(2, np.uint8),
                  np.full(2, 0.7))
    none = ConeSet(np.zeros((0, 3)), np.zeros(0, np.uint8), np.zeros(0))
    try:
        for k in range(4):
            t = 10.0 + 0.05 * k
            h.at(t)
            node._on_odom(_odom(t, 0.1 * k, 0.0, 0.0))
            node._on_lidar(_cloud(two, t))
            for _ in range(3):
                node._on_lidar(_cloud(none, t))       # the same stamp again
            assert node.map.count.tolist() == [k + 1, k + 1]
        assert len(node.map.cones_in_vehicle(_ego(0), max_range=25.0)[0]) == 2
        assert len(h.topic('/perception/cones')) == 16    # every message answered
    finally:
        node.destroy_node()
