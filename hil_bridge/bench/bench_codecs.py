# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
Benchmark the message codecs against the naive paths, in one run.

``python -m hil_bridge.bench.bench_codecs [--repeat N]`` prints, for a 1288x964
bgr8 image and a 100k-point x/y/z/intensity cloud: encode + decode time of
``hil_bridge.interface.codecs``, of a plain ``numpy.copy`` of the same bytes (the
floor), and of the naive paths: ``bytes`` assignment with rclpy field checks
on (the Humble/Jazzy default) and per-point ``struct.pack_into`` /
``struct.unpack_from`` as carla-ros-bridge does for lidar.
"""

import argparse
import struct
import time
from typing import Callable, List, Tuple

from hil_bridge.interface.codecs import clouds, images
import numpy as np
from sensor_msgs.msg import Image, PointCloud2


def best_of(fn: Callable[[], object], repeat: int) -> float:
    """Return the fastest wall time of ``repeat`` calls, in seconds."""
    best = float('inf')
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def naive_image_round_trip(img: np.ndarray) -> np.ndarray:
    """Encode with ``bytes`` + field checks, decode element by element."""
    msg = Image(check_fields=True)
    msg.height, msg.width, msg.encoding = img.shape[0], img.shape[1], 'bgr8'
    msg.step = img.shape[1] * 3
    msg.data = img.tobytes()
    return np.array(msg.data, dtype=np.uint8).reshape(img.shape)


def naive_cloud_round_trip(pts: np.ndarray) -> np.ndarray:
    """Pack and unpack point by point with ``struct`` (carla-ros-bridge)."""
    fmt = struct.Struct('<ffff')
    buf = bytearray(fmt.size * pts.shape[0])
    for i, p in enumerate(pts.tolist()):
        fmt.pack_into(buf, i * fmt.size, *p)
    msg = PointCloud2(check_fields=True)
    msg.fields = clouds.XYZI_FIELDS
    msg.height, msg.width, msg.point_step = 1, pts.shape[0], fmt.size
    msg.row_step = fmt.size * pts.shape[0]
    msg.data = bytes(buf)
    raw = bytes(msg.data)
    out = [fmt.unpack_from(raw, i * fmt.size) for i in range(pts.shape[0])]
    return np.array(out, dtype=np.float32)


def run(repeat: int = 5) -> List[Tuple[str, float, float, float, float]]:
    """Return rows (case, codec ms, numpy.copy ms, naive ms, speed-up)."""
    rng = np.random.default_rng(0)
    img = rng.integers(0, 256, (964, 1288, 3), dtype=np.uint8)
    pts = rng.standard_normal((100_000, 4)).astype(np.float32)

    def codec_img() -> np.ndarray:
        return images.msg_to_image(images.image_to_msg(img, 1.0, 'cam'))

    def codec_cloud() -> np.ndarray:
        return clouds.cloud_to_xyzi(clouds.xyzi_to_cloud(pts, 1.0, 'lidar'))

    assert np.array_equal(codec_img(), img)
    assert np.array_equal(codec_cloud(), pts)
    rows = []
    for name, data, codec, naive, naive_repeat in (
            ('image 1288x964 bgr8', img, codec_img,
             lambda: naive_image_round_trip(img), 1),
            ('cloud 100k x,y,z,i', pts, codec_cloud,
             lambda: naive_cloud_round_trip(pts), 1)):
        t_codec = best_of(codec, repeat)
        t_copy = best_of(lambda d=data: (np.copy(d), np.copy(d)), repeat)
        t_naive = best_of(naive, naive_repeat)
        rows.append((name, t_codec * 1e3, t_copy * 1e3, t_naive * 1e3,
                     t_naive / t_codec))
    return rows


def main() -> None:
    """Print the benchmark table."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[1])
    parser.add_argument('--repeat', type=int, default=5)
    args = parser.parse_args()
    rows = run(args.repeat)
    print('| encode + decode | codec ms | 2x numpy.copy ms | codec / copy '
          '| naive ms | naive / codec |')
    print('|---|---|---|---|---|---|')
    for name, t_codec, t_copy, t_naive, speedup in rows:
        print(f'| {name} | {t_codec:.2f} | {t_copy:.2f} | '
              f'{t_codec / t_copy:.1f}x | {t_naive:.0f} | {speedup:.0f}x |')


if __name__ == '__main__':
    main()
