# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""Conformance of cloud_to_scan with pointcloud_to_laserscan semantics."""

import math
import sys

from cone_detection.cloud_to_scan import points_to_ranges, ranges_loop, ScanParams
import numpy as np
import pytest

# 8 bins of 45 deg over [-pi, pi): bin k covers [-pi + k pi/4, -pi + (k+1) pi/4)
EIGHT = ScanParams(angle_increment=math.pi / 4, min_height=-1.0, max_height=1.0)


def polar(r: float, deg: float, z: float = 0.0) -> list:
    """Return [x, y, z] of a point at range r, bearing deg."""
    a = math.radians(deg)
    return [r * math.cos(a), r * math.sin(a), z]


def test_defaults_are_upstream() -> None:
    """Defaults: 360 bins of 1 deg, inf fill, min_height tiny positive."""
    p = ScanParams()
    assert p.n_bins == 360
    assert p.min_height == sys.float_info.min > 0.0
    assert p.range_max == sys.float_info.max
    assert p.scan_time == pytest.approx(1 / 30)
    assert p.inf_epsilon == 1.0 and p.use_inf


def test_bins_and_minimum() -> None:
    """Each point lands in int((a - angle_min) / inc); the minimum is kept."""
    pts = np.array([polar(5.0, 0.0 + 10), polar(3.0, 20.0), polar(7.0, 30.0),
                    polar(2.0, -170.0), polar(4.0, 100.0)])
    r = points_to_ranges(pts, EIGHT)
    expected = np.full(8, np.inf, np.float32)
    expected[4] = 3.0   # 10, 20, 30 deg: bin 4 = [0, 45) -> min(5, 3, 7)
    expected[0] = 2.0   # -170 deg
    expected[6] = 4.0   # 100 deg: [90, 135)
    np.testing.assert_allclose(r, expected, rtol=1e-6)
    assert r.dtype == np.float32 and r.shape == (8,)


def test_use_inf_false_fill() -> None:
    """Without use_inf empty bins hold range_max + inf_epsilon."""
    p = ScanParams(angle_increment=math.pi / 4, min_height=-1.0, use_inf=False,
                   range_max=20.0, inf_epsilon=1.0)
    r = points_to_ranges(np.array([polar(5.0, 10.0)]), p)
    assert r[4] == 5.0
    assert np.all(np.delete(r, 4) == 21.0)


def test_default_min_height_drops_z_zero() -> None:
    """Upstream default: z <= 0 is dropped, z > 0 is kept."""
    p = ScanParams(angle_increment=math.pi / 4)
    r = points_to_ranges(np.array([polar(5.0, 10.0, 0.0), polar(6.0, 100.0, -0.1),
                                   polar(7.0, -100.0, 1e-3)]), p)
    assert np.isinf(r[4]) and np.isinf(r[6])
    assert r[1] == pytest.approx(7.0)


def test_height_range_angle_filters() -> None:
    """Points outside the height, range or angle window are dropped."""
    p = ScanParams(angle_min=-math.pi / 2, angle_max=math.pi / 2,
                   angle_increment=math.pi / 4, min_height=-0.5, max_height=0.5,
                   range_min=1.0, range_max=10.0)
    assert p.n_bins == 4
    pts = np.array([polar(5.0, 10.0, 0.6),    # too high
                    polar(5.0, 10.0, -0.6),   # too low
                    polar(0.5, 10.0),         # too near
                    polar(11.0, 10.0),        # too far
                    polar(5.0, 120.0),        # outside the angles
                    polar(1.0, 50.0),         # exactly range_min: kept
                    polar(10.0, -50.0),       # exactly range_max: kept
                    polar(4.0, 10.0, 0.5)])   # exactly max_height: kept
    r = points_to_ranges(pts, p)
    np.testing.assert_allclose(r, [10.0, np.inf, 4.0, 1.0], rtol=1e-6)


def test_nans_and_infs_skipped() -> None:
    """Points with NaN in any coordinate or +-inf coordinates are skipped."""
    pts = np.array([[np.nan, 1.0, 0.0], [1.0, np.nan, 0.0], [1.0, 1.0, np.nan],
                    [np.inf, 0.0, 0.0], [1.0, 0.0, np.inf], [-np.inf, 1.0, 0.0],
                    polar(2.0, 10.0)], dtype=np.float32)
    r = points_to_ranges(pts, EIGHT)
    assert r[4] == pytest.approx(2.0)
    assert np.isinf(np.delete(r, 4)).all()


def test_empty_cloud() -> None:
    """An empty cloud gives a full scan of the fill value."""
    r = points_to_ranges(np.zeros((0, 3), np.float32), EIGHT)
    assert r.shape == (8,) and np.isinf(r).all()


def test_angle_max_edge_goes_to_last_bin() -> None:
    """A point exactly at angle_max lands in the last bin (upstream: past the end)."""
    p = ScanParams(angle_min=-1.0, angle_max=0.0, angle_increment=0.25,
                   min_height=-1.0)
    assert p.n_bins == 4
    r = points_to_ranges(np.array([[2.0, 0.0, 0.0]]), p)  # atan2 = 0 = angle_max
    np.testing.assert_array_equal(r, [np.inf, np.inf, np.inf, 2.0])
    assert ranges_loop(np.array([[2.0, 0.0, 0.0]]), p)[3] == 2.0
    # default parameters: a point straight behind (angle pi) is the same case
    r = points_to_ranges(np.array([[-3.0, 0.0, 0.5]]), ScanParams())
    assert r.shape == (360,) and r[359] == 3.0
    assert np.isinf(r[:359]).all()


def test_fov_not_whole_number_of_increments() -> None:
    """270 deg at 0.25 deg = 1080 bins; 100 deg at 30 deg = ceil -> 4 bins."""
    rig = ScanParams(angle_min=-math.radians(135), angle_max=math.radians(135),
                     angle_increment=math.radians(0.25))
    assert rig.n_bins == 1080
    p = ScanParams(angle_min=0.0, angle_max=math.radians(100),
                   angle_increment=math.radians(30), min_height=-1.0)
    assert p.n_bins == 4
    r = points_to_ranges(np.array([polar(3.0, 95.0)]), p)
    assert r[3] == pytest.approx(3.0)


def test_matches_reference_loop_on_random_clouds() -> None:
    """The vectorised version equals a literal per-point loop."""
    rng = np.random.default_rng(4)
    for params in (EIGHT, ScanParams(min_height=-0.1, max_height=0.5,
                                     angle_min=-2.35, angle_max=2.35,
                                     angle_increment=0.0044, range_min=0.5,
                                     range_max=20.0, use_inf=False)):
        pts = rng.uniform(-25, 25, (3000, 4)).astype(np.float32)
        pts[:, 2] = rng.uniform(-0.5, 1.0, 3000)
        pts[rng.random(3000) < 0.05, 0] = np.nan
        np.testing.assert_array_equal(points_to_ranges(pts, params),
                                      ranges_loop(pts, params))


@pytest.mark.parametrize('kw,match', [
    ({'angle_increment': 0.0}, 'angle_increment'),
    ({'angle_min': 1.0, 'angle_max': 0.5}, 'angle_max'),
    ({'range_min': 5.0, 'range_max': 1.0}, 'range_min'),
    ({'min_height': 1.0, 'max_height': 0.0}, 'max_height'),
    ({'angle_min': math.nan}, 'angle_min'),
])
def test_bad_params(kw: dict, match: str) -> None:
    """Nonsense parameters raise ValueError naming the parameter."""
    with pytest.raises(ValueError, match=match):
        ScanParams.from_mapping(kw)


@pytest.mark.parametrize('shape', [(5,), (5, 2), (2, 3, 3)])
def test_bad_point_arrays(shape: tuple) -> None:
    """Arrays that are not (N, >=3) raise ValueError."""
    with pytest.raises(ValueError, match='points'):
        points_to_ranges(np.zeros(shape), EIGHT)


def test_node_params_match_config() -> None:
    """config/cloud_to_scan.yaml sets the rig: 1080 bins of 0.25 deg, z = 0 kept."""
    from cone_detection.cloud_to_scan_node import NODE_NAME, PARAMS
    from hil_bridge.interface.params import check_specs
    values = check_specs(PARAMS, NODE_NAME, 'cloud_to_scan.yaml')
    p = ScanParams.from_mapping(values)
    assert p.n_bins == 1080 and p.range_max == 20.0
    r = points_to_ranges(np.array([polar(5.0, 0.0, 0.0)]), p)
    assert np.isfinite(r).sum() == 1


def test_bare_node_has_upstream_defaults(rclpy_context) -> None:
    """Run without a params file the node declares upstream's values (360 bins)."""
    from cone_detection.cloud_to_scan_node import CloudToScanNode, UPSTREAM_DEFAULTS
    node = CloudToScanNode(context=rclpy_context)
    try:
        declared = {k: node.get_parameter(k).value for k in UPSTREAM_DEFAULTS}
        assert declared == UPSTREAM_DEFAULTS
        assert node.params.n_bins == 360 and node.params.min_height == sys.float_info.min
        assert declared['queue_size'] == 0 and declared['target_frame'] == ''
    finally:
        node.destroy_node()


@pytest.mark.dds
def test_node_over_dds_lazy(rclpy_context) -> None:
    """The node subscribes lazily and turns a cloud into the expected scan."""
    import os
    from pathlib import Path
    import signal
    import subprocess
    import time

    from hil_bridge.interface.codecs import clouds, stamps
    from node_harness import stop_process
    import rclpy
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.qos import qos_profile_sensor_data
    from sensor_msgs.msg import LaserScan, PointCloud2

    root = Path(__file__).resolve().parents[1]
    child = subprocess.Popen(
        [sys.executable, '-m', 'cone_detection.cloud_to_scan_node', '--ros-args',
         '--params-file', str(root / 'config' / 'cloud_to_scan.yaml'),
         '-p', 'use_sim_time:=true', '-r', 'cloud_in:=/c2s_test/cloud',
         '-r', 'scan:=/c2s_test/scan'], env=dict(os.environ))
    node = rclpy.create_node('c2s_tester', context=rclpy_context)
    pub = node.create_publisher(PointCloud2, '/c2s_test/cloud',
                                qos_profile_sensor_data)
    from hil_bridge.interface.contract import create_publisher
    from rosgraph_msgs.msg import Clock
    clock_pub = create_publisher(node, 'clock')  # sim time for the stamp policy
    executor = SingleThreadedExecutor(context=rclpy_context)
    executor.add_node(node)
    scans = []
    pts = np.array([polar(5.0, 0.1, 0.0) + [1.0], polar(3.0, 0.2, 0.0) + [1.0],
                    polar(4.0, -90.0, 0.0) + [1.0]], np.float32)
    try:
        deadline = time.monotonic() + 20.0
        # nobody listens to the scan: the node must not subscribe the cloud
        while pub.get_subscription_count() == 0 and time.monotonic() < deadline:
            executor.spin_once(timeout_sec=0.1)
            if node.count_publishers('/c2s_test/scan') > 0:
                break
        assert child.poll() is None, 'cloud_to_scan died'
        t_end = time.monotonic() + 1.0
        while time.monotonic() < t_end:
            executor.spin_once(timeout_sec=0.1)
        assert pub.get_subscription_count() == 0, 'subscribed without listeners'
        node.create_subscription(LaserScan, '/c2s_test/scan', scans.append,
                                 qos_profile_sensor_data)
        while not scans and time.monotonic() < deadline:
            clock_pub.publish(Clock(clock=stamps.stamp_from_sec(12.5)))
            if pub.get_subscription_count():
                pub.publish(clouds.xyzi_to_cloud(pts, 12.5, 'ego_vehicle/lidar'))
            executor.spin_once(timeout_sec=0.1)
        assert child.poll() is None, 'cloud_to_scan died'
    finally:
        stop_process(child, signal.SIGINT)
        rc = child.returncode
        executor.shutdown()
        node.destroy_node()
    assert scans, 'no scan received'
    scan = scans[0]
    assert scan.header.frame_id == 'ego_vehicle/lidar'
    assert stamps.sec_from_stamp(scan.header.stamp) == pytest.approx(12.5)
    assert len(scan.ranges) == 1080 and len(scan.intensities) == 0
    assert scan.angle_max == pytest.approx(np.radians(135), abs=1e-6)
    ranges = np.asarray(scan.ranges)
    assert np.isfinite(ranges).sum() == 2
    assert ranges[540] == pytest.approx(3.0, rel=1e-5)  # 0.1 and 0.2 deg: min
    assert ranges[180] == pytest.approx(4.0, rel=1e-5)  # -90 deg
    assert rc == 0
