# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
Benchmark of the vision cone detector on 1288x964 frames (no rclpy).

``python -m cone_detection.tools.bench_vision [--frames 30] [--reference-frames 2]``

Renders frames of a generated track with the built-in camera, then prints
the per-frame time (median, 90th percentile) of a plain ``cv2.cvtColor``
to HSV (the same-run baseline), the fast mode's colour proposals alone,
the fast mode on the full-size image (every proposal, no ``max_range``),
a full-size JPEG decode, what the node does by default (``image_reduce``
2: JPEG decoded at half size, fast mode on it, ``max_range`` 20 m), and
the reference mode (the paper's sliding window): wall and process CPU
time, the CPU-time ratio to the baseline, frames per second of one core
and cones found. Single-threaded OpenCV
(``cv2.setNumThreads(1)``) so the figures are per core.
"""

import argparse
import math
import sys
import time
from typing import Callable, List, Optional

from cone_detection.tools.train_vision import SimViews
from cone_detection.vision_fast import propose
from cone_detection.vision_pipeline import VisionConeDetector
import cv2
from hil_bridge.interface.codecs import images
import numpy as np


def _time(fn: Callable[[int], int], n: int) -> tuple:
    """
    Return per-call seconds and the last result of fn(i).

    Gives (wall median, wall p90, CPU median, result); the process CPU
    time is what one core spends, the wall time adds waiting for a core
    on a loaded machine.
    """
    wall: List[float] = []
    cpu: List[float] = []
    out = 0
    for i in range(n):
        t0, c0 = time.perf_counter(), time.process_time()
        out = fn(i)
        wall.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    arr = np.array(wall)
    return (float(np.median(arr)), float(np.percentile(arr, 90)),
            float(np.median(cpu)), out)


def main(argv: Optional[List[str]] = None) -> int:
    """Run the benchmark and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--frames', type=int, default=30)
    parser.add_argument('--reference-frames', type=int, default=2)
    parser.add_argument('--threads', type=int, default=1, help='cv2.setNumThreads')
    args = parser.parse_args(argv)
    cv2.setNumThreads(args.threads)
    views = list(SimViews(seed=11, tracks=[21], noise_share=0.0).take(max(args.frames, 1)))
    h, w = views[0].image.shape[:2]
    fast = VisionConeDetector(max_range=math.inf)   # full image, no range cut
    half = VisionConeDetector(model=fast.model, image_reduce=2)
    ref = VisionConeDetector(model=fast.model, mode='reference')
    jpegs = [images.image_to_compressed(v.image, 0.0, quality=80) for v in views]
    half_k = [images.reduce_intrinsics(v.K, 2) for v in views]

    def hsv(i: int) -> int:
        cv2.cvtColor(views[i % len(views)].image, cv2.COLOR_BGR2HSV)
        return 0

    def proposals(i: int) -> int:
        v = views[i % len(views)]
        return int(propose(v.image, v.K, v.T_vehicle_camera)[0].shape[0])

    def run_fast(i: int) -> int:
        v = views[i % len(views)]
        return len(fast.detect(v.image, v.K, v.T_vehicle_camera)[1])

    def decode_full(i: int) -> int:
        images.compressed_to_image(jpegs[i % len(views)])
        return 0

    def run_half(i: int) -> int:
        j = i % len(views)
        img = images.compressed_to_image(jpegs[j], 2)
        return len(half.detect(img, half_k[j], views[j].T_vehicle_camera)[1])

    def run_ref(i: int) -> int:
        v = views[i % len(views)]
        return len(ref.detect(v.image, v.K, v.T_vehicle_camera)[1])

    rows = [('cv2.cvtColor BGR->HSV (baseline)', hsv, args.frames),
            ('fast: colour proposals only', proposals, args.frames),
            ('fast mode, full-size image', run_fast, args.frames),
            ('JPEG q80 decode, full size', decode_full, args.frames),
            ('node default: half-size decode+fast', run_half, args.frames),
            ('reference mode (sliding window)', run_ref, args.reference_frames)]
    print(f'vision cone detector, {w}x{h} frames, cv2 threads {args.threads}, '
          f'OpenCV {cv2.__version__}')
    print(f'{"step":34s} {"frames":>6s} {"wall ms":>8s} {"p90 ms":>8s} {"cpu ms":>8s} '
          f'{"x baseline":>10s} {"fps(cpu)":>8s} {"found":>6s}')
    base = None
    for name, fn, n in rows:
        if n <= 0:
            continue
        fn(0)  # warm-up (allocations, first-call costs)
        med, p90, cpu, found = _time(fn, n)
        base = max(cpu, 1e-6) if base is None else base
        print(f'{name:34s} {n:6d} {med * 1e3:8.2f} {p90 * 1e3:8.2f} {cpu * 1e3:8.2f} '
              f'{cpu / base:10.1f} {1.0 / max(cpu, 1e-6):8.1f} {found:6d}')
    print('x baseline and fps use the CPU time (one core); wall time includes '
          'waiting for a core on a loaded machine.')
    return 0


if __name__ == '__main__':
    sys.exit(main())
