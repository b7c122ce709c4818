# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""3D lidar cone detector on clouds ray-cast by the built-in lidar."""

import math

from cone_detection.lidar_cloud import (_expected_points, CloudConeDetector, CloudConeParams,
                                        cone_radius, ransac_ground)
from cone_detection.tools.evaluate import LIDAR3D_ATTRIBUTES, LIDAR3D_MOUNT
from hil_bridge.interface.cones import CONE_BIG_ORANGE, CONE_BLUE, CONE_YELLOW
from hil_bridge.interface.frames import pose_to_matrix
from hil_bridge.interface.rig import validate_attributes
from hil_bridge.sim.lidar import RayCastLidar
from hil_bridge.sim.world import WorldGeometry
import numpy as np
import pytest
from scipy.spatial import cKDTree


def _cloud(cones_xy, cones_cls, boxes=(), noise=0.0, seed=0):
    """Ray-cast one 20 Hz sweep of the 3D lidar; return (N, 4) and detector."""
    attrs = validate_attributes('sensor.lidar.ray_cast',
                                dict(LIDAR3D_ATTRIBUTES, noise_stddev=noise))
    cones_xy = np.asarray(cones_xy, dtype=np.float64).reshape(-1, 2)
    n = cones_xy.shape[0]
    b = np.asarray([bx[0] for bx in boxes], dtype=np.float64).reshape(-1, 3)
    world = WorldGeometry(
        cone_xy=cones_xy, cone_class=np.asarray(cones_cls, np.uint8),
        cone_up=np.ones(n, bool), box_center=b,
        box_yaw=np.zeros(b.shape[0]),
        box_size=np.asarray([bx[1] for bx in boxes],
                            dtype=np.float64).reshape(-1, 3),
        box_color=np.zeros((b.shape[0], 3), np.uint8))
    lidar = RayCastLidar(attrs)
    pts = lidar.scan(world, pose_to_matrix(LIDAR3D_MOUNT), 0.05,
                     np.random.default_rng(seed))
    return pts, CloudConeDetector.for_lidar(LIDAR3D_MOUNT, attrs)


def test_cone_radius_profile() -> None:
    """Frustum radius: base at z = 0, smaller higher up, 0 above the top."""
    r = cone_radius(np.array([0.0, 0.2, 0.4]), CONE_BLUE)
    assert r[0] == pytest.approx(0.114) and 0.0 < r[1] < r[0] and r[2] == 0
    assert cone_radius(0.4, CONE_BIG_ORANGE) > 0.0


@pytest.mark.parametrize('noise', [0.0, 0.03])
def test_cones_found_and_centred(noise: float) -> None:
    """A row of cones 2-19 m: all found, none invented, <= 5 cm RMS."""
    xs = np.arange(2.0, 19.5, 2.5)
    truth = np.vstack((np.column_stack((xs, np.full(xs.size, 1.6))),
                       np.column_stack((xs + 1.2, np.full(xs.size, -1.6)))))
    cls = [CONE_BLUE] * xs.size + [CONE_YELLOW] * xs.size
    truth = np.vstack((truth, [[6.0, 0.0]]))
    cls.append(CONE_BIG_ORANGE)
    pts, det = _cloud(truth, cls, noise=noise)
    out = det.detect(pts[:, :3])
    assert len(out) == truth.shape[0]
    d, _ = cKDTree(out.xyz[:, :2]).query(truth)
    assert np.sqrt(np.mean(d ** 2)) <= 0.05, d
    assert np.all(out.class_id == 0) and np.all(out.xyz[:, 2] == 0.0)


def test_vehicle_pole_and_crate_rejected() -> None:
    """A car, a 2 m pole and a 0.8 m crate are no cones; the cone is."""
    boxes = [((8.0, 3.0, 0.7), (4.5, 1.8, 1.4)),
             ((6.0, -2.0, 1.0), (0.1, 0.1, 2.0)),
             ((4.0, 2.0, 0.15), (0.8, 0.8, 0.3))]
    pts, det = _cloud([[5.0, -0.5]], [CONE_BLUE], boxes)
    out = det.detect(pts[:, :3])
    assert len(out) == 1
    assert np.hypot(*(out.xyz[0, :2] - [5.0, -0.5])) < 0.05


def test_expected_count_matches_cloud() -> None:
    """The modelled point count of a cone agrees with the ray cast (+-50%)."""
    for dist in (3.0, 8.0, 14.0):
        pts, det = _cloud([[dist, 0.0]], [CONE_BLUE])
        c = det.cluster(pts[:, :3])
        assert c['count'].size == 1
        model = _expected_points(np.array([dist - 1.2]), CONE_BLUE,
                                 LIDAR3D_MOUNT.z, det.elevations, det.h_res,
                                 det.params.ground_margin)
        assert 0.5 * model[0] <= c['count'][0] <= 1.5 * model[0] + 2


def test_ransac_ground_on_tilted_plane() -> None:
    """RANSAC recovers a 3 deg slope 0.1 m up and removes it."""
    rng = np.random.default_rng(1)
    xy = rng.uniform(-10.0, 10.0, (3000, 2))
    slope = math.tan(math.radians(3.0))
    z = 0.1 + slope * xy[:, 0] + rng.normal(0.0, 0.01, 3000)
    ground = np.column_stack((xy, z))
    plane = ransac_ground(ground, CloudConeParams(ground='ransac'))
    assert plane is not None
    n = plane[:3]
    assert math.degrees(math.acos(n[2])) == pytest.approx(3.0, abs=0.5)
    assert -plane[3] / n[2] == pytest.approx(0.1, abs=0.02)  # z at origin
    assert ransac_ground(np.zeros((2, 3)), CloudConeParams()) is None


def test_ransac_mode_with_raised_ground() -> None:
    """Cones on ground 0.15 m higher than assumed: found in ransac mode."""
    pts, det = _cloud([[6.0, 1.0], [9.0, -1.0]], [CONE_BLUE, CONE_BLUE])
    raised = pts[:, :3].copy()
    raised[:, 2] += 0.15  # as if the car sat 0.15 m lower
    det.params = CloudConeParams(ground='ransac')
    out = det.detect(raised)
    assert len(out) == 2
    det.params = CloudConeParams()
    assert len(det.detect(raised)) != 2  # height mode sees ground clutter


def test_bad_input() -> None:
    """Malformed arrays are ValueErrors; NaN points are dropped."""
    pts, det = _cloud([[5.0, 0.0]], [CONE_BLUE])
    with pytest.raises(ValueError, match='shape'):
        det.detect(np.zeros((5, 2)))
    with pytest.raises(ValueError, match='numeric'):
        det.detect([['a', 'b', 'c']])
    assert len(det.detect(np.zeros((0, 3)))) == 0
    dirty = np.vstack((pts[:, :3], np.full((10, 3), np.nan)))
    assert len(det.detect(dirty)) == 1
    with pytest.raises(ValueError, match='ground'):
        CloudConeParams(ground='plane')
    with pytest.raises(ValueError, match='cluster_tolerance'):
        CloudConeParams(cluster_tolerance=0.0)
    with pytest.raises(ValueError, match='resolution'):
        CloudConeDetector(LIDAR3D_MOUNT, np.zeros(4), 0.0)


@pytest.mark.parametrize('seed', [0, 1, 2])
def test_big_cone_close_and_diagonal_with_noise(seed: int) -> None:
    """A big orange cone 2 m away at 47 deg, 30 mm noise: found, centred."""
    pts, det = _cloud([[2.6, 1.5], [2.6, -1.5]], [CONE_BIG_ORANGE] * 2,
                      noise=0.03, seed=seed)
    out = det.detect(pts[:, :3])
    assert len(out) == 2
    for p in ([2.6, 1.5], [2.6, -1.5]):
        assert np.min(np.hypot(*(out.xyz[:, :2] - p).T)) < 0.03
