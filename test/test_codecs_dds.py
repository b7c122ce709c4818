# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""A 1288x964 image and a 100k-point cloud between two real processes."""

import os
from pathlib import Path
import signal
import subprocess
import sys
import time

import codec_publisher
from hil_bridge.interface.codecs import clouds, images, stamps
from node_harness import stop_process
import numpy as np
import pytest

HERE = Path(__file__).resolve().parent


@pytest.mark.dds
def test_image_and_cloud_over_dds(rclpy_context) -> None:
    """Every byte of a full-size image and cloud arrives intact."""
    import rclpy
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.qos import qos_profile_sensor_data
    from sensor_msgs.msg import Image, PointCloud2

    child = subprocess.Popen([sys.executable,
                              str(HERE / 'codec_publisher.py')],
                             env=dict(os.environ))
    node = rclpy.create_node('codec_receiver', context=rclpy_context)
    got = {}

    def on_image(msg: Image) -> None:
        got.setdefault('image', msg)

    def on_cloud(msg: PointCloud2) -> None:
        got.setdefault('cloud', msg)

    node.create_subscription(Image, 'codec_test/image', on_image,
                             qos_profile_sensor_data)
    node.create_subscription(PointCloud2, 'codec_test/cloud', on_cloud,
                             qos_profile_sensor_data)
    executor = SingleThreadedExecutor(context=rclpy_context)
    executor.add_node(node)
    try:
        deadline = time.monotonic() + 30.0
        while len(got) < 2 and time.monotonic() < deadline:
            executor.spin_once(timeout_sec=0.1)
            assert child.poll() is None, 'publisher process died'
    finally:
        stop_process(child, signal.SIGINT)
        executor.shutdown()
        node.destroy_node()
    assert set(got) == {'image', 'cloud'}, f'received only {sorted(got)}'
    img_msg = got['image']
    seq = int(stamps.sec_from_stamp(img_msg.header.stamp))
    img = images.msg_to_image(img_msg)
    assert img.shape == (964, 1288, 3)
    assert np.array_equal(img, codec_publisher.image_for(seq))
    cloud_msg = got['cloud']
    cseq = int(stamps.sec_from_stamp(cloud_msg.header.stamp))
    pts = clouds.cloud_to_xyzi(cloud_msg)
    assert pts.shape == (100_000, 4)
    assert np.array_equal(pts, codec_publisher.cloud_for(cseq))
    assert cloud_msg.header.frame_id == 'lidar'
