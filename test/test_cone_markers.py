# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""Cone MarkerArray builder."""

from cone_detection.markers import CLASS_COLOURS, cone_markers
from hil_bridge.interface.cones import CONE_BIG_ORANGE, CONE_BLUE, CONE_UNKNOWN
import numpy as np
import pytest


def test_one_cylinder_per_cone_coloured_by_class() -> None:
    """A cylinder per cone with class colour/size; stale ids deleted."""
    from visualization_msgs.msg import Marker
    xyz = np.array([[1.0, 2.0, 0.0], [3.0, -1.0, 0.0], [5.0, 0.0, 0.0]])
    cls = np.array([CONE_BLUE, CONE_BIG_ORANGE, 9], dtype=np.uint8)
    arr = cone_markers(xyz, cls, 12.5, 'ego_vehicle', ns='lidar',
                       confidence=np.array([1.0, 0.5, 0.0]), previous_count=5)
    cones = arr.markers[:3]
    gone = arr.markers[3:]
    assert [m.id for m in gone] == [3, 4]
    assert all(m.action == Marker.DELETE and m.ns == 'lidar' for m in gone)
    assert all(m.action == Marker.ADD for m in cones)
    assert all(m.type == Marker.CYLINDER and m.ns == 'lidar' for m in cones)
    assert [m.id for m in cones] == [0, 1, 2]
    assert cones[0].header.frame_id == 'ego_vehicle'
    assert cones[0].header.stamp.sec == 12
    assert cones[0].header.stamp.nanosec == 500000000
    assert cones[0].pose.position.x == 1.0
    assert cones[0].pose.position.z == pytest.approx(0.325 / 2)
    assert cones[1].scale.z > cones[0].scale.z  # big orange is taller
    assert cones[1].scale.x == pytest.approx(0.285)
    assert cones[0].color.b == pytest.approx(CLASS_COLOURS[CONE_BLUE][2])
    grey = CLASS_COLOURS[CONE_UNKNOWN]
    assert (cones[2].color.r, cones[2].color.g) == pytest.approx(grey[:2])
    assert cones[1].color.a < cones[0].color.a
    assert cones[2].color.a > 0.0


def test_empty_and_2d_input() -> None:
    """No cones gives no markers; (N, 2) input stands on z = 0."""
    assert len(cone_markers(np.zeros((0, 3)), np.zeros(0), 0.0, 'm')
               .markers) == 0
    arr = cone_markers(np.array([[1.0, 1.0]]), [0], 0.0, 'm')
    assert arr.markers[0].pose.position.z == pytest.approx(0.325 / 2)


def test_bad_input() -> None:
    """Mismatched or non-finite arrays are ValueErrors."""
    with pytest.raises(ValueError, match='class ids'):
        cone_markers(np.zeros((2, 3)), [1], 0.0, 'm')
    with pytest.raises(ValueError, match='finite'):
        cone_markers(np.array([[np.nan, 0.0, 0.0]]), [1], 0.0, 'm')
    with pytest.raises(ValueError, match='shape'):
        cone_markers(np.zeros((2, 4)), [1, 1], 0.0, 'm')
    with pytest.raises(ValueError, match='confidences'):
        cone_markers(np.zeros((2, 3)), [1, 1], 0.0, 'm', confidence=[1.0])
