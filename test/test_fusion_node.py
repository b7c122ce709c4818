# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""cone_fusion over DDS: lidar-only, fused and vision-only fallback."""

import os
from pathlib import Path
import subprocess
import sys
import time

from cone_detection.fusion_node import NODE_NAME, PARAMS
from hil_bridge.backend import CONE_BLUE, CONE_YELLOW
from hil_bridge.params import check_specs
import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / 'config' / 'cone_fusion.yaml'


def test_params_match_config() -> None:
    """Every parameter has a default in config/cone_fusion.yaml."""
    values = check_specs(PARAMS, NODE_NAME)
    assert values['use_vision'] is True


def _cones(xy, cls, t, frame='ego_vehicle'):
    from hil_bridge import codecs
    xy = np.asarray(xy, dtype=np.float32)
    xyz = np.column_stack((xy, np.zeros(len(xy), np.float32)))
    return codecs.cones_to_cloud(xyz, np.asarray(cls, np.uint8),
                                 np.full(len(xy), 0.8, np.float32), t, frame)


@pytest.mark.dds
def test_fusion_over_dds(rclpy_context) -> None:
    """Vision-only fallback, fused colours, lidar-only pass-through."""
    import rclpy
    from rclpy.executors import SingleThreadedExecutor
    from hil_bridge import codecs, contract
    proc = subprocess.Popen(
        [sys.executable, '-m', 'cone_detection.fusion_node', '--ros-args',
         '--params-file', str(CONFIG), '-p', 'use_sim_time:=false'],
        env=dict(os.environ), stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True)
    node = rclpy.create_node('fusion_node_test', context=rclpy_context)
    ex = SingleThreadedExecutor(context=rclpy_context)
    ex.add_node(node)
    got = []
    try:
        pub_l = contract.create_publisher(node, 'cones_lidar')
        pub_v = contract.create_publisher(node, 'cones_vision')
        contract.create_subscription(node, 'cones', got.append)

        def wait_for(stamp: float, send) -> object:
            deadline = time.monotonic() + 20.0
            while time.monotonic() < deadline:
                send()
                ex.spin_once(timeout_sec=0.1)
                for msg in got:
                    if codecs.sec_from_stamp(msg.header.stamp) == \
                            pytest.approx(stamp):
                        return msg
                assert proc.poll() is None, proc.stdout.read()
            raise AssertionError(f'no cones with stamp {stamp}')

        lidar_xy = [[5.0, 1.5], [5.0, -1.5], [10.0, 1.6]]
        vision_xy = [[5.2, 1.4], [4.9, -1.6]]
        # 1) no lidar yet: vision cones are passed on (own stamp)
        msg = wait_for(1.0, lambda: pub_v.publish(
            _cones(vision_xy, [CONE_BLUE, CONE_YELLOW], 1.0)))
        xyz, cls, _ = codecs.cloud_to_cones(msg)
        assert sorted(cls.tolist()) == [CONE_BLUE, CONE_YELLOW]

        # 2) lidar + vision 20 ms apart: lidar positions, vision colours
        msg = wait_for(2.0, lambda: pub_v.publish(
            _cones(vision_xy, [CONE_BLUE, CONE_YELLOW], 2.0)))

        def lidar() -> None:
            pub_l.publish(_cones([[0.0, 0.0]], [0], 0.5, 'wrong_frame'))
            pub_l.publish(_cones(lidar_xy, [0, 0, 0], 2.02))
        msg = wait_for(2.02, lidar)
        assert msg.header.frame_id == 'ego_vehicle'
        xyz, cls, _ = codecs.cloud_to_cones(msg)
        assert xyz.shape[0] == 3
        for p, want in zip(lidar_xy, (CONE_BLUE, CONE_YELLOW, 0)):
            j = int(np.argmin(np.hypot(*(xyz[:, :2] - p).T)))
            np.testing.assert_allclose(xyz[j, :2], p, atol=1e-5)
            assert cls[j] == want

        # 3) lidar with no vision near its stamp: unknown pass-through
        msg = wait_for(9.0, lambda: pub_l.publish(
            _cones(lidar_xy, [0, 0, 0], 9.0)))
        _, cls, _ = codecs.cloud_to_cones(msg)
        assert cls.tolist() == [0, 0, 0]
        assert proc.poll() is None
    finally:
        node.destroy_node()
        proc.terminate()
        try:
            out, _ = proc.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, _ = proc.communicate()
    assert 'wrong_frame' in out, out
