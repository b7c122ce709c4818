# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""lidar_cone_detector over DDS: scan in, cone cloud and markers out."""

from pathlib import Path

from cone_detection.lidar_node import cloud_params, NODE_NAME, PARAMS, scan_params
from cone_detection.lidar_scan import cone_radius_at
from cone_detection.tools.synthetic import synthetic_scan
from hil_bridge.interface.params import check_specs
from node_harness import node_under_test
import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]

CONFIG = ROOT / 'config' / 'lidar_cone_detector.yaml'


def test_params_match_config() -> None:
    """Every parameter has a default in the YAML file and maps to the cores."""
    values = check_specs(PARAMS, NODE_NAME)
    assert scan_params(values, 0.2).max_step == values['max_step']
    cp = cloud_params(values)
    assert cp.range_max == values['cloud_range_max']
    assert cp.count_lo == values['cloud_count_lo']


def _scan_msg(ranges: np.ndarray, a0: float, inc: float, t: float):
    from hil_bridge.interface.codecs import scans
    return scans.scan_to_msg(ranges, a0, inc, t, 'ego_vehicle/lidar',
                             range_min=0.1, range_max=20.0)


@pytest.mark.dds
def test_scan_to_cones_over_dds(rclpy_context) -> None:
    """Cones come back in the vehicle frame with the scan's stamp."""
    from hil_bridge.interface import contract
    from hil_bridge.interface.codecs import clouds, stamps
    with node_under_test('cone_detection.lidar_node', CONFIG,
                         rclpy_context, probe_name='lidar_node_test') as h:
        got, markers = [], []
        pub = contract.create_publisher(h.node, 'scan')
        contract.create_subscription(h.node, 'cones_lidar', got.append)
        contract.create_subscription(h.node, 'cone_markers', markers.append)
        truth = np.array([[5.0, 1.5], [9.0, -1.5], [14.0, 2.0]])
        ranges, a0, inc = synthetic_scan(truth, cone_radius_at(0.2))
        h.now = 2.25  # sim time: every stamp within the stamp policy
        bad = _scan_msg(ranges, a0, inc, 2.0)
        bad.angle_increment = 0.0
        mismatched = _scan_msg(ranges, a0, inc, 2.1)
        mismatched.intensities = [1.0, 2.0]
        good = _scan_msg(ranges, a0, inc, 2.25)

        def send_good() -> None:
            pub.publish(good)
            h.spin_once(0.1)
        # first the node's clock must be in effect (until then every scan is
        # "future" and dropped before the checks): wait for cones of a good scan
        assert h.spin_until(lambda: bool(got), 30.0, send_good), \
            'no cones received'
        # then each bad scan a few times, one at a time (the node keeps only
        # the newest scan, depth 1), then good scans again
        for msg in (bad, mismatched):
            for _ in range(5):
                pub.publish(msg)
                h.spin_once(0.2)
        n = len(got)
        assert h.spin_until(lambda: len(got) > n, 30.0, send_good), \
            'no cones after the bad scans'
        h.spin_until(lambda: bool(markers), 2.0, period=0.1)
        msg = got[-1]
        assert msg.header.frame_id == 'ego_vehicle'
        assert stamps.sec_from_stamp(msg.header.stamp) == pytest.approx(2.25)
        xyz, cls, conf = clouds.cloud_to_cones(msg)
        assert xyz.shape == (3, 3) and not cls.any()
        expect = truth + [1.2, 0.0]  # lidar mounted 1.2 m ahead
        for p in expect:
            assert np.min(np.hypot(*(xyz[:, :2] - p).T)) < 0.05
        assert np.all(xyz[:, 2] == 0.0)
        assert markers and any(m.ns == 'lidar' for m in markers[-1].markers)
        assert h.proc.poll() is None  # bad scans did not kill it
    # one error line per input and 5 s (a flood of bad scans must not flood
    # the log): the first bad scan is named, the others are only counted
    lines = [ln for ln in h.output.splitlines() if 'bad scan dropped' in ln]
    assert lines and 'angle_increment' in lines[0], h.output
    assert len(lines) <= 2, lines
    assert all(stamps.sec_from_stamp(m.header.stamp) == pytest.approx(2.25)
               for m in got)  # no output from a bad scan


@pytest.mark.dds
def test_cloud_mode_over_dds(rclpy_context) -> None:
    """In mode cloud the raw PointCloud2 of the rig lidar gives the cones."""
    from hil_bridge.interface.frames import pose_to_matrix
    from hil_bridge.interface import contract
    from hil_bridge.interface.codecs import clouds
    from hil_bridge.interface.rig import load_rig
    from hil_bridge.sim.lidar import RayCastLidar
    from hil_bridge.sim.world import WorldGeometry
    spec = next(s for s in load_rig('hil_rig.yaml') if s.sensor_id == 'lidar')
    truth = np.array([[6.0, 1.5], [10.0, -1.5]])
    world = WorldGeometry(cone_xy=truth, cone_class=np.ones(2, np.uint8),
                          cone_up=np.ones(2, bool))  # vehicle at the origin
    pts = RayCastLidar(spec.attributes).scan(
        world, pose_to_matrix(spec.mount), 0.05, np.random.default_rng(0))
    with node_under_test('cone_detection.lidar_node', CONFIG,
                         rclpy_context, ['mode:=cloud'],
                         probe_name='lidar_cloud_test') as h:
        got = []
        pub = contract.create_publisher(h.node, 'lidar')
        contract.create_subscription(h.node, 'cones_lidar', got.append)
        h.now = 3.0
        msg = clouds.xyzi_to_cloud(pts, 3.0, 'ego_vehicle/lidar')
        assert h.spin_until(lambda: bool(got), 30.0,
                            lambda: pub.publish(msg)), 'no cones received'
        xyz, _, _ = clouds.cloud_to_cones(got[-1])
        assert xyz.shape[0] == 2
        for p in truth:
            assert np.min(np.hypot(*(xyz[:, :2] - p).T)) < 0.05
