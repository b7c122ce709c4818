# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
Test helper process: publish a known image and cloud until killed.

Run as ``python test/codec_publisher.py`` by test_codecs_dds.py; the
content is a deterministic function of the sequence number so the receiver
can check every byte.
"""

import sys

from hil_bridge.interface.codecs import clouds, images
import numpy as np
import rclpy
from rclpy.executors import ExternalShutdownException
from rclpy.qos import qos_profile_sensor_data
from sensor_msgs.msg import Image, PointCloud2

H, W, N = 964, 1288, 100_000


def image_for(seq: int) -> np.ndarray:
    """Return the bgr8 test image of sequence number ``seq``."""
    row = (np.arange(W, dtype=np.uint16) + seq) % 256
    img = np.empty((H, W, 3), np.uint8)
    img[...] = row.astype(np.uint8)[None, :, None]
    img[:, :, 1] = (np.arange(H) % 256).astype(np.uint8)[:, None]
    return img


def cloud_for(seq: int) -> np.ndarray:
    """Return the (N, 4) float32 test cloud of sequence number ``seq``."""
    pts = np.arange(N * 4, dtype=np.float32).reshape(N, 4) * 1e-3
    pts[:, 3] = seq
    return pts


def main() -> None:
    """Publish image + cloud at 5 Hz with stamps t = seq."""
    rclpy.init()
    node = rclpy.create_node('codec_publisher')
    pub_i = node.create_publisher(Image, 'codec_test/image',
                                  qos_profile_sensor_data)
    pub_c = node.create_publisher(PointCloud2, 'codec_test/cloud',
                                  qos_profile_sensor_data)
    seq = [0]

    def tick() -> None:
        s = seq[0]
        pub_i.publish(images.image_to_msg(image_for(s), float(s), 'cam'))
        pub_c.publish(clouds.xyzi_to_cloud(cloud_for(s), float(s), 'lidar'))
        seq[0] += 1

    node.create_timer(0.2, tick)
    try:
        rclpy.spin(node)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:
        node.destroy_node()
        rclpy.try_shutdown()


if __name__ == '__main__':
    sys.exit(main())
