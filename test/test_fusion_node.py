# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""cone_fusion over DDS: lidar-only, fused and vision-only fallback."""

from pathlib import Path

from cone_detection.fusion_node import NODE_NAME, PARAMS
from hil_bridge.interface.cones import CONE_BLUE, CONE_YELLOW
from hil_bridge.interface.params import check_specs
from node_harness import node_under_test
import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]

CONFIG = ROOT / 'config' / 'cone_fusion.yaml'


def test_params_match_config() -> None:
    """Every parameter has a default in config/cone_fusion.yaml."""
    values = check_specs(PARAMS, NODE_NAME)
    assert values['use_vision'] is True


def _cones(xy, cls, t, frame='ego_vehicle'):
    from hil_bridge.interface.codecs import clouds
    xy = np.asarray(xy, dtype=np.float32)
    xyz = np.column_stack((xy, np.zeros(len(xy), np.float32)))
    return clouds.cones_to_cloud(xyz, np.asarray(cls, np.uint8),
                                 np.full(len(xy), 0.8, np.float32), t, frame)


@pytest.mark.dds
def test_fusion_over_dds(rclpy_context) -> None:
    """Vision-only fallback, fused colours, lidar-only pass-through."""
    from hil_bridge.interface import contract
    from hil_bridge.interface.codecs import clouds, stamps
    with node_under_test('cone_detection.fusion_node', CONFIG,
                         rclpy_context, probe_name='fusion_node_test') as h:
        got = []
        pub_l = contract.create_publisher(h.node, 'cones_lidar')
        pub_v = contract.create_publisher(h.node, 'cones_vision')
        contract.create_subscription(h.node, 'cones', got.append)

        def wait_for(stamp: float, send) -> object:
            def found() -> list:
                return [m for m in got if stamps.sec_from_stamp(
                    m.header.stamp) == pytest.approx(stamp)]
            if not h.spin_until(lambda: bool(found()), 20.0, send,
                                period=0.1):
                raise AssertionError(f'no cones with stamp {stamp}')
            return found()[0]

        lidar_xy = [[5.0, 1.5], [5.0, -1.5], [10.0, 1.6]]
        vision_xy = [[5.2, 1.4], [4.9, -1.6]]
        # 1) no lidar: vision cones stamped more than lidar_timeout (0.5 s)
        # after the earliest vision are passed on (own stamp); the first
        # ones are not (their lidar may be on its way)
        h.now = 1.0  # sim time: inputs within the stamp policy

        def vision_only() -> None:
            for t in (0.4, 0.9, 1.0):
                pub_v.publish(_cones(vision_xy, [CONE_BLUE, CONE_YELLOW], t))
        msg = wait_for(1.0, vision_only)
        assert not [m for m in got if stamps.sec_from_stamp(m.header.stamp) < 0.95]
        xyz, cls, _ = clouds.cloud_to_cones(msg)
        assert sorted(cls.tolist()) == [CONE_BLUE, CONE_YELLOW]

        # 2) lidar + vision 20 ms apart: lidar positions, vision colours
        h.now = 2.02
        msg = wait_for(2.0, lambda: pub_v.publish(
            _cones(vision_xy, [CONE_BLUE, CONE_YELLOW], 2.0)))

        def lidar() -> None:
            pub_l.publish(_cones([[0.0, 0.0]], [0], 2.0, 'wrong_frame'))
            pub_l.publish(_cones(lidar_xy, [0, 0, 0], 2.02))
        msg = wait_for(2.02, lidar)
        assert msg.header.frame_id == 'ego_vehicle'
        xyz, cls, _ = clouds.cloud_to_cones(msg)
        assert xyz.shape[0] == 3
        for p, want in zip(lidar_xy, (CONE_BLUE, CONE_YELLOW, 0)):
            j = int(np.argmin(np.hypot(*(xyz[:, :2] - p).T)))
            np.testing.assert_allclose(xyz[j, :2], p, atol=1e-5)
            assert cls[j] == want

        # 3) lidar with no vision near its stamp: unknown pass-through
        h.now = 9.0
        msg = wait_for(9.0, lambda: pub_l.publish(
            _cones(lidar_xy, [0, 0, 0], 9.0)))
        _, cls, _ = clouds.cloud_to_cones(msg)
        assert cls.tolist() == [0, 0, 0]
        assert h.proc.poll() is None
    assert 'wrong_frame' in h.output, h.output
