# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
Test helper process for test_dds_profile.py: one end of a camera stream.

``python test/dds_profile_peer.py pub N RATE`` publishes N full-size
(1288x964 bgr8) images on the contract's left-camera topic with its QoS at
RATE Hz, once a subscriber has matched, and prints ``PUBLISHED n wall_s``.
``python test/dds_profile_peer.py sub N`` prints ``READY`` once subscribed,
counts the images that arrive intact until its standard input closes and
then prints ``RECEIVED n broken m segment_mb s seqs ...`` (``s``: the
largest Fast DDS shared-memory segment it maps). Image ``seq`` is filled with
the byte ``seq % 256`` and stamped ``seq`` seconds, so every byte is checked.
"""

import os
import sys
import threading
import time
from typing import Dict

from hil_bridge.interface import contract
from hil_bridge.interface.codecs import images
import numpy as np
import rclpy

H, W = 964, 1288


def shm_segment_mb() -> float:
    """
    Return the largest Fast DDS shared-memory segment this process maps (MB).

    A participant maps its own segment (``/dev/shm/fastrtps_<id>`` on 2.x,
    ``fastdds_<id>`` on 3.x; ``*_port*`` files are the port queues) and those
    of the writers it reads from: the profile's is 64 MB, the default 0.5 MB.
    """
    sizes: Dict[str, int] = {}
    with open('/proc/self/maps', encoding='ascii') as maps:
        for line in maps:
            fields = line.split()
            name = fields[5] if len(fields) > 5 else ''
            base = os.path.basename(name)
            if name.startswith('/dev/shm/') and base.startswith(('fastrtps_', 'fastdds_')) \
                    and '_port' not in base:
                lo, hi = (int(x, 16) for x in fields[0].split('-'))
                sizes[name] = sizes.get(name, 0) + hi - lo
    return max(sizes.values(), default=0) / 2 ** 20


def publish(count: int, rate_hz: float) -> None:
    """Publish ``count`` images at ``rate_hz`` once a subscriber matched."""
    node = rclpy.create_node('dds_profile_pub')
    pub = contract.create_publisher(node, 'camera_left')
    deadline = time.monotonic() + 30.0
    while pub.get_subscription_count() < 1 and time.monotonic() < deadline:
        rclpy.spin_once(node, timeout_sec=0.05)
    time.sleep(0.5)  # let the subscriber's side of discovery finish too
    img = np.empty((H, W, 3), np.uint8)
    start = time.monotonic()
    for seq in range(count):
        img.fill(seq % 256)
        pub.publish(images.image_to_msg(img, float(seq), 'cam'))
        wait = start + (seq + 1) / rate_hz - time.monotonic()
        if wait > 0:
            time.sleep(wait)
    wall = time.monotonic() - start
    time.sleep(1.0)  # samples in flight
    print(f'PUBLISHED {count} {wall:.3f}', flush=True)
    node.destroy_node()


def subscribe() -> None:
    """Count intact images until standard input closes."""
    node = rclpy.create_node('dds_profile_sub')
    seqs = []
    broken = [0]

    def on_image(msg) -> None:
        seq = int(msg.header.stamp.sec)
        data = np.frombuffer(msg.data, np.uint8)
        if (msg.height, msg.width) == (H, W) and data.size == H * W * 3 and \
                bool(np.all(data == seq % 256)):
            seqs.append(seq)
        else:
            broken[0] += 1

    # the contract's QoS (best effort), with a history for the whole stream so
    # that a subscriber process starved of CPU for a while loses nothing
    # the transport delivered
    contract.create_subscription(node, 'camera_left', on_image, depth=int(sys.argv[2]))
    done = threading.Event()
    threading.Thread(target=lambda: (sys.stdin.read(), done.set()), daemon=True).start()
    print('READY', flush=True)
    while not done.is_set():
        rclpy.spin_once(node, timeout_sec=0.05)
    print(f'RECEIVED {len(seqs)} broken {broken[0]} segment_mb {shm_segment_mb():.1f} seqs ' +
          ' '.join(map(str, seqs)), flush=True)
    node.destroy_node()


def main() -> None:
    """Run the end named on the command line."""
    rclpy.init()
    try:
        if sys.argv[1] == 'pub':
            publish(int(sys.argv[2]), float(sys.argv[3]))
        else:
            subscribe()
    finally:
        rclpy.try_shutdown()


if __name__ == '__main__':
    main()
