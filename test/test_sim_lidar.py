# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""The built-in ``sensor.lidar.ray_cast``: CARLA counts, sweep, dropoff."""

import math

from hil_bridge.interface.cones import CONE_BLUE, CONE_SIZE, CONE_TOP_RATIO
from hil_bridge.interface.frames import Pose, pose_to_matrix
from hil_bridge.interface.rig import LIDAR, load_rig, SensorSpec, validate_attributes
from hil_bridge.sim.lidar import RayCastLidar
from hil_bridge.sim.sensors import LidarSensor, make_sensor
from hil_bridge.sim.world import WorldGeometry
import numpy as np
import pytest

QUIET = {'dropoff_general_rate': 0.0, 'dropoff_zero_intensity': 0.0,
         'noise_stddev': 0.0}


def lidar(**attributes) -> RayCastLidar:
    """Return a lidar with CARLA defaults, no dropoff, given attributes."""
    attrs = dict(QUIET)
    attrs.update(attributes)
    return RayCastLidar(validate_attributes(LIDAR, attrs))


def enclosure(size: float = 40.0) -> WorldGeometry:
    """Return walls and a roof all around the origin: every ray hits."""
    half, thick = size / 2.0, 0.2
    centres = [[half, 0, 0], [-half, 0, 0], [0, half, 0], [0, -half, 0],
               [0, 0, half], [0, 0, -half]]
    sizes = [[thick, size, size], [thick, size, size], [size, thick, size],
             [size, thick, size], [size, size, thick], [size, size, thick]]
    return WorldGeometry(box_center=np.array(centres, float),
                         box_yaw=np.zeros(6), box_size=np.array(sizes, float),
                         box_color=np.zeros((6, 3), np.uint8),
                         ground_z=-size)


def wall(x: float) -> WorldGeometry:
    """Return a 0.2 m thick wall whose near face is at x, 40 m wide."""
    return WorldGeometry(box_center=np.array([[x + 0.1, 0.0, 2.0]]),
                         box_yaw=np.zeros(1),
                         box_size=np.array([[0.2, 40.0, 4.0]]),
                         box_color=np.zeros((1, 3), np.uint8))


def azimuth(points: np.ndarray) -> np.ndarray:
    """Return the REP-103 azimuths (deg) of sensor-frame points."""
    return np.degrees(np.arctan2(points[:, 1], points[:, 0]))


@pytest.mark.parametrize('channels,pps,dt', [
    (32, 56000, 0.05), (1, 21600, 0.05), (16, 100000, 0.01),
    (64, 1200000, 1 / 30), (3, 1000, 0.1)])
def test_points_per_step_equal_pps_dt(channels: int, pps: int,
                                      dt: float) -> None:
    """Without dropoff every ray hits and N = channels*round(pps*dt/ch)."""
    lid = lidar(channels=channels, points_per_second=pps, range=100.0)
    pts = lid.scan(enclosure(), np.eye(4), dt, np.random.default_rng(0))
    per_channel = math.floor(pps * dt / channels + 0.5)
    assert pts.shape == (channels * per_channel, 4)
    assert pts.dtype == np.float32
    assert abs(pts.shape[0] - pps * dt) <= channels / 2 + 1e-9


def test_range_to_wall_within_noise() -> None:
    """Points on a wall at 10 m lie within noise of the true range."""
    sigma = 0.03
    lid = lidar(channels=1, upper_fov=0.0, lower_fov=0.0, range=20.0,
                horizontal_fov=90.0, rotation_frequency=10.0,
                points_per_second=20000, noise_stddev=sigma)
    pts = lid.scan(wall(10.0), pose_to_matrix(0.0, 0.0, 1.0), 0.1,
                   np.random.default_rng(1))
    assert pts.shape[0] == 2000
    truth = 10.0 / np.cos(np.radians(azimuth(pts)))
    err = np.linalg.norm(pts[:, :3], axis=1) - truth
    assert np.abs(err).max() < 5 * sigma
    assert err.std() == pytest.approx(sigma, rel=0.1)
    assert abs(err.mean()) < 0.005
    np.testing.assert_allclose(pts[:, 2], 0.0, atol=1e-6)


def test_range_to_cone_and_intensity() -> None:
    """A planar lidar sees a cone at 5 m at 5 - r(z); I = exp(-a d)."""
    z = 0.2
    w = WorldGeometry(cone_xy=np.array([[5.0, 0.0]]),
                      cone_class=np.array([CONE_BLUE], np.uint8),
                      cone_up=np.array([True]))
    lid = lidar(channels=1, upper_fov=0.0, lower_fov=0.0, range=20.0,
                horizontal_fov=270.0, rotation_frequency=20.0,
                points_per_second=21600, atmosphere_attenuation_rate=0.004)
    pts = lid.scan(w, pose_to_matrix(0.0, 0.0, z), 0.05,
                   np.random.default_rng(0))
    rb, h = CONE_SIZE[CONE_BLUE][0] / 2, CONE_SIZE[CONE_BLUE][1]
    r = rb - (rb - rb * CONE_TOP_RATIO) * z / h
    d = np.linalg.norm(pts[:, :3], axis=1)
    assert d.min() == pytest.approx(5.0 - r, abs=2e-3)
    # 0.25 deg steps across the cone's angular width at this height.
    expected = 2 * math.degrees(math.asin(r / (5.0 - r))) / 0.25
    assert abs(pts.shape[0] - expected) <= 1.0
    np.testing.assert_allclose(pts[:, 3], np.exp(-0.004 * d), rtol=1e-6)


def test_horizontal_fov_and_sweep_continuity() -> None:
    """Steps sweep rot_freq * hfov * dt, centred on x, and continue."""
    lid = lidar(channels=1, upper_fov=0.0, lower_fov=0.0, range=100.0,
                horizontal_fov=90.0, rotation_frequency=10.0,
                points_per_second=3600)
    rng = np.random.default_rng(0)
    first = azimuth(lid.scan(enclosure(), np.eye(4), 0.05, rng))
    second = azimuth(lid.scan(enclosure(), np.eye(4), 0.05, rng))
    step = 90.0 * 10.0 * 0.05 / 180          # deg between rays
    assert first.size == second.size == 180
    assert first[0] == pytest.approx(45.0)     # starts at the left edge
    # Points are float32: compare angles to 1e-4 deg.
    np.testing.assert_allclose(np.diff(first), -step, atol=1e-4)
    assert second[0] == pytest.approx(first[-1] - step, abs=1e-4)
    both = np.concatenate((first, second))
    assert both.min() >= -45.0 - 1e-4 and both.max() <= 45.0 + 1e-4
    assert both.max() - both.min() == pytest.approx(90.0 - step, abs=1e-4)
    third = azimuth(lid.scan(enclosure(), np.eye(4), 0.05, rng))
    np.testing.assert_allclose(third, first, atol=1e-4)   # wrapped around
    lid.reset()
    np.testing.assert_allclose(
        azimuth(lid.scan(enclosure(), np.eye(4), 0.05, rng)), first,
        atol=1e-4)


def test_channels_elevations() -> None:
    """Channel i is at upper_fov - i (upper - lower) / (channels - 1)."""
    lid = lidar(channels=5, upper_fov=10.0, lower_fov=-30.0, range=100.0,
                points_per_second=5000, rotation_frequency=10.0)
    pts = lid.scan(enclosure(), np.eye(4), 0.1, np.random.default_rng(0))
    elev = np.degrees(np.arctan2(pts[:, 2], np.hypot(pts[:, 0], pts[:, 1])))
    per = pts.shape[0] // 5
    expected = np.repeat([10.0, 0.0, -10.0, -20.0, -30.0], per)
    np.testing.assert_allclose(elev, expected, atol=1e-4)
    # A 360 deg lidar sweeps the whole circle in one revolution.
    az = azimuth(pts[:per])
    assert az.max() - az.min() > 350.0


def test_mount_pose_and_sensor_frame() -> None:
    """Points come out in the sensor frame, whatever its pose in map."""
    w = WorldGeometry(box_center=np.array([[3.0, 12.1, 2.0]]),
                      box_yaw=np.zeros(1),
                      box_size=np.array([[40.0, 0.2, 4.0]]),
                      box_color=np.zeros((1, 3), np.uint8))
    lid = lidar(channels=1, upper_fov=0.0, lower_fov=0.0, range=20.0,
                horizontal_fov=20.0, rotation_frequency=10.0,
                points_per_second=1000)
    T = pose_to_matrix(3.0, 2.0, 1.0, 0.0, 0.0, math.pi / 2)
    pts = lid.scan(w, T, 0.1, np.random.default_rng(0))
    assert pts.shape[0] == 100
    np.testing.assert_allclose(pts[:, 0], 10.0, atol=1e-5)
    assert np.all(np.abs(pts[:, 1]) < 10.0 * math.tan(math.radians(10.5)))


def test_ground_hits_of_tilted_channels() -> None:
    """A ray tilted down by e from height z hits the ground at z / sin e."""
    lid = lidar(channels=1, upper_fov=-10.0, lower_fov=-10.0, range=20.0,
                points_per_second=3600, rotation_frequency=10.0)
    pts = lid.scan(WorldGeometry(), pose_to_matrix(0.0, 0.0, 1.5), 0.1,
                   np.random.default_rng(0))
    assert pts.shape[0] == 360
    np.testing.assert_allclose(np.linalg.norm(pts[:, :3], axis=1),
                               1.5 / math.sin(math.radians(10.0)), rtol=1e-6)
    short = lidar(channels=1, upper_fov=-10.0, lower_fov=-10.0, range=5.0,
                  points_per_second=3600, rotation_frequency=10.0)
    assert short.scan(WorldGeometry(), pose_to_matrix(0.0, 0.0, 1.5), 0.1,
                      np.random.default_rng(0)).shape[0] == 0


def test_general_dropoff_statistics() -> None:
    """dropoff_general_rate drops that fraction of rays at random."""
    lid = lidar(channels=32, points_per_second=200000, range=100.0,
                dropoff_general_rate=0.45)
    pts = lid.scan(enclosure(), np.eye(4), 0.1, np.random.default_rng(2))
    n = 32 * 625
    kept = pts.shape[0] / n
    assert kept == pytest.approx(0.55, abs=4 * math.sqrt(0.25 / n))


def test_intensity_dropoff_statistics() -> None:
    """Low intensity points are kept on CARLA's linear ramp."""
    a = 0.04
    lid = lidar(channels=1, upper_fov=0.0, lower_fov=0.0, range=20.0,
                horizontal_fov=10.0, rotation_frequency=10.0,
                points_per_second=400000, atmosphere_attenuation_rate=a,
                dropoff_intensity_limit=0.8, dropoff_zero_intensity=0.4)
    pts = lid.scan(wall(10.0), pose_to_matrix(0.0, 0.0, 1.0), 0.1,
                   np.random.default_rng(3))
    n = 40000
    intensity = math.exp(-a * 10.0)
    p_keep = 1.0 - 0.4 * (1.0 - intensity / 0.8)
    assert pts.shape[0] / n == pytest.approx(
        p_keep, abs=4 * math.sqrt(p_keep * (1 - p_keep) / n))
    # Above the limit nothing is dropped.
    near = lid.scan(wall(2.0), pose_to_matrix(0.0, 0.0, 1.0), 0.1,
                    np.random.default_rng(3))
    assert near.shape[0] == n


def test_deterministic_per_seed_and_make_sensor() -> None:
    """Same seed, same points; make_sensor builds the rig lidar."""
    spec = load_rig('hil_rig')[2]
    a = make_sensor(spec)
    b = make_sensor(spec)
    assert isinstance(a, LidarSensor)
    spec_noisy = SensorSpec('l', LIDAR, spec.mount,
                            dict(spec.attributes, noise_stddev=0.03,
                                 dropoff_general_rate=0.2))
    a, b = make_sensor(spec_noisy), make_sensor(spec_noisy)
    pa = a.measure(wall(8.0), np.eye(4), 0.0, 0.05, np.random.default_rng(9))
    pb = b.measure(wall(8.0), np.eye(4), 0.0, 0.05, np.random.default_rng(9))
    np.testing.assert_array_equal(pa, pb)
    assert pa.shape[0] > 0


def test_own_vehicle_box_is_not_seen() -> None:
    """A lidar inside its vehicle's box sees out of it (box ignored)."""
    w = wall(10.0)
    w.box_center = np.vstack((w.box_center, [[0.0, 0.0, 0.75]]))
    w.box_yaw = np.zeros(2)
    w.box_size = np.vstack((w.box_size, [[2.9, 1.4, 1.5]]))
    w.box_color = np.zeros((2, 3), np.uint8)
    lid = lidar(channels=1, upper_fov=0.0, lower_fov=0.0, range=20.0,
                horizontal_fov=20.0, rotation_frequency=10.0,
                points_per_second=1000)
    pts = lid.scan(w, pose_to_matrix(0.3, 0.0, 0.5), 0.1,
                   np.random.default_rng(0))
    assert pts.shape[0] == 100
    assert np.all(pts[:, 0] > 9.0)


def test_bad_input() -> None:
    """Bad dt or pose raise ValueError; dt = 0 gives no points."""
    lid = lidar()
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match='dt'):
        lid.scan(enclosure(), np.eye(4), math.nan, rng)
    with pytest.raises(ValueError, match='dt'):
        lid.scan(enclosure(), np.eye(4), -0.1, rng)
    with pytest.raises(ValueError, match='sensor_pose_world'):
        lid.scan(enclosure(), np.full((4, 4), np.nan), 0.1, rng)
    assert lid.scan(enclosure(), np.eye(4), 0.0, rng).shape == (0, 4)
    with pytest.raises(ValueError, match='channels'):
        make_sensor(SensorSpec('l', LIDAR, Pose(), {'channels': 0}))


def test_pitched_sensor_hits_ground() -> None:
    """A lidar pitched down by p from height z hits the ground at z / sin p."""
    lid = lidar(channels=1, upper_fov=0.0, lower_fov=0.0, range=30.0,
                horizontal_fov=2.0, rotation_frequency=10.0,
                points_per_second=100)
    pitch = 0.1
    pts = lid.scan(WorldGeometry(),
                   pose_to_matrix(0.0, 0.0, 1.0, 0.0, pitch, 0.0), 0.1,
                   np.random.default_rng(0))
    assert pts.shape[0] == 10
    np.testing.assert_allclose(pts[:, 0], 1.0 / math.sin(pitch), rtol=2e-4)
