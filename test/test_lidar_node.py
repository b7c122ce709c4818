# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""lidar_cone_detector over DDS: scan in, cone cloud and markers out."""

import os
from pathlib import Path
import subprocess
import sys
import time

from cone_detection.lidar_node import cloud_params, NODE_NAME, PARAMS, \
    scan_params
from cone_detection.lidar_scan import cone_radius_at
from cone_detection.synthetic import synthetic_scan
from hil_bridge.params import check_specs
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
    from hil_bridge import codecs
    return codecs.scan_to_msg(ranges, a0, inc, t, 'ego_vehicle/lidar',
                              range_min=0.1, range_max=20.0)


@pytest.mark.dds
def test_scan_to_cones_over_dds(rclpy_context) -> None:
    """Cones come back in the vehicle frame with the scan's stamp."""
    import rclpy
    from rclpy.executors import SingleThreadedExecutor
    from hil_bridge import codecs, contract
    proc = subprocess.Popen(
        [sys.executable, '-m', 'cone_detection.lidar_node', '--ros-args',
         '--params-file', str(CONFIG), '-p', 'use_sim_time:=false'],
        env=dict(os.environ), stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True)
    node = rclpy.create_node('lidar_node_test', context=rclpy_context)
    ex = SingleThreadedExecutor(context=rclpy_context)
    ex.add_node(node)
    got, markers = [], []
    try:
        pub = contract.create_publisher(node, 'scan')
        contract.create_subscription(node, 'cones_lidar', got.append)
        contract.create_subscription(node, 'cone_markers', markers.append)
        truth = np.array([[5.0, 1.5], [9.0, -1.5], [14.0, 2.0]])
        ranges, a0, inc = synthetic_scan(truth, cone_radius_at(0.2))
        bad = _scan_msg(ranges, a0, inc, 1.0)
        bad.angle_increment = 0.0
        mismatched = _scan_msg(ranges, a0, inc, 1.5)
        mismatched.intensities = [1.0, 2.0]
        good = _scan_msg(ranges, a0, inc, 2.25)
        deadline = time.monotonic() + 30.0
        while time.monotonic() < deadline and not got:
            pub.publish(bad)
            pub.publish(mismatched)
            pub.publish(good)
            ex.spin_once(timeout_sec=0.2)
            assert proc.poll() is None, proc.stdout.read()
        assert got, 'no cones received'
        end = time.monotonic() + 2.0
        while time.monotonic() < end and not markers:
            ex.spin_once(timeout_sec=0.1)
        msg = got[-1]
        assert msg.header.frame_id == 'ego_vehicle'
        assert codecs.sec_from_stamp(msg.header.stamp) == pytest.approx(2.25)
        xyz, cls, conf = codecs.cloud_to_cones(msg)
        assert xyz.shape == (3, 3) and not cls.any()
        expect = truth + [1.2, 0.0]  # lidar mounted 1.2 m ahead
        for p in expect:
            assert np.min(np.hypot(*(xyz[:, :2] - p).T)) < 0.05
        assert np.all(xyz[:, 2] == 0.0)
        assert markers and any(m.ns == 'lidar' for m in markers[-1].markers)
        assert proc.poll() is None  # bad scans did not kill it
    finally:
        node.destroy_node()
        proc.terminate()
        try:
            out, _ = proc.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, _ = proc.communicate()
    assert 'angle_increment' in out and 'intensities' in out, out


@pytest.mark.dds
def test_cloud_mode_over_dds(rclpy_context) -> None:
    """In mode cloud the raw PointCloud2 of the rig lidar gives the cones."""
    from rclpy.executors import SingleThreadedExecutor
    import rclpy
    from cone_detection.evaluate import pose_matrix
    from hil_bridge import codecs, contract
    from hil_bridge.rig import load_rig
    from hil_bridge.sim.lidar import RayCastLidar
    from hil_bridge.sim.world import WorldGeometry
    spec = next(s for s in load_rig('hil_rig.yaml') if s.sensor_id == 'lidar')
    truth = np.array([[6.0, 1.5], [10.0, -1.5]])
    world = WorldGeometry(cone_xy=truth, cone_class=np.ones(2, np.uint8),
                          cone_up=np.ones(2, bool))  # vehicle at the origin
    pts = RayCastLidar(spec.attributes).scan(
        world, pose_matrix(spec.mount), 0.05, np.random.default_rng(0))
    proc = subprocess.Popen(
        [sys.executable, '-m', 'cone_detection.lidar_node', '--ros-args',
         '--params-file', str(CONFIG), '-p', 'use_sim_time:=false',
         '-p', 'mode:=cloud'],
        env=dict(os.environ), stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True)
    node = rclpy.create_node('lidar_cloud_test', context=rclpy_context)
    ex = SingleThreadedExecutor(context=rclpy_context)
    ex.add_node(node)
    got = []
    try:
        pub = contract.create_publisher(node, 'lidar')
        contract.create_subscription(node, 'cones_lidar', got.append)
        msg = codecs.xyzi_to_cloud(pts, 3.0, 'ego_vehicle/lidar')
        deadline = time.monotonic() + 30.0
        while time.monotonic() < deadline and not got:
            pub.publish(msg)
            ex.spin_once(timeout_sec=0.2)
            assert proc.poll() is None, proc.stdout.read()
        assert got, 'no cones received'
        xyz, _, _ = codecs.cloud_to_cones(got[-1])
        assert xyz.shape[0] == 2
        for p in truth:
            assert np.min(np.hypot(*(xyz[:, :2] - p).T)) < 0.05
    finally:
        node.destroy_node()
        proc.terminate()
        try:
            proc.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
