# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
Benchmark the bridge: per-frame overhead, cloud_to_scan, delivery over DDS.

``python -m hil_bridge.bench.bench_bridge [--frames N] [--rate HZ]`` prints three
tables, each with a baseline measured in the same run:

1. bridge overhead per frame for the full rig (``config/sensors/hil_rig.yaml``:
   two 1288x964 cameras + the lidar): building every message of a frame
   (:class:`hil_bridge.bridge.frame_msgs.FrameConverter`) and publishing it to a
   subscriber in another process, i.e. everything except the backend's own
   step. Baseline: the naive conversion (``bytes`` assignment of the images,
   per-point ``struct`` packing of the lidar, as carla-ros-bridge does).
   Goal <= 5 ms per frame.
2. cloud_to_scan for a 100k-point cloud with the rig's parameters against
   the per-point Python loop. Goal <= 2 ms.
3. delivered frame rate and latency (receive wall time - publish wall time,
   one machine) of the cameras, lidar and odometry at ``--rate`` Hz (30)
   between two processes. Goal: no dropped frames.

Frames come from the built-in simulator (rendered before timing starts and
replayed with new stamps). Both processes use carla_hil's Fast DDS profile
(``config/fastdds.xml``, unless a profile variable is set). Run
it on a quiet machine; figures on a loaded one are pessimistic.
"""

import argparse
import json
import os
import struct
import subprocess
import sys
import time
from typing import Any, Dict, List, Optional

import numpy as np

RIG = 'hil_rig'
MEASURED = ('camera_left', 'camera_right', 'lidar', 'odometry')


def _pct(values: List[float], q: float) -> float:
    return float(np.percentile(np.asarray(values), q)) if values else float('nan')


def make_frames(count: int) -> List[Any]:
    """Return ``count`` frames of the trackdrive scenario with the full rig."""
    from hil_bridge.bridge.backend import VehicleControl
    from hil_bridge.bridge.scenario import load_scenario
    from hil_bridge.interface.rig import load_rig
    from hil_bridge.sim.builtin_backend import BuiltinBackend
    backend = BuiltinBackend(seed=0)
    frames = [backend.setup(load_scenario('trackdrive'), load_rig(RIG))]
    backend.apply_control(VehicleControl(throttle=0.5))
    while len(frames) < count:
        frames.append(backend.step(1.0 / 30.0))
    backend.teardown()
    return frames


def naive_messages(frame: Any) -> List[Any]:
    """Convert the sensors the naive way (the baseline of table 1)."""
    from hil_bridge.interface.codecs import clouds
    from sensor_msgs.msg import Image, PointCloud2
    out = []
    for reading in frame.sensors.values():
        if reading.blueprint.startswith('sensor.camera'):
            img = reading.data
            msg = Image(check_fields=True)
            msg.height, msg.width, msg.encoding = img.shape[0], img.shape[1], 'bgr8'
            msg.step = img.shape[1] * 3
            msg.data = img.tobytes()
            out.append(msg)
        else:
            fmt = struct.Struct('<ffff')
            buf = bytearray(fmt.size * reading.data.shape[0])
            for i, p in enumerate(reading.data.tolist()):
                fmt.pack_into(buf, i * fmt.size, *p)
            msg = PointCloud2(check_fields=True)
            msg.fields = clouds.XYZI_FIELDS
            msg.height, msg.width, msg.point_step = 1, reading.data.shape[0], fmt.size
            msg.row_step = fmt.size * reading.data.shape[0]
            msg.data = bytes(buf)
            out.append(msg)
    return out


def bench_cloud_to_scan(repeat: int = 20) -> Dict[str, float]:
    """Return cloud_to_scan times (ms) for 100k points: numpy and loop."""
    from cone_detection.cloud_to_scan import points_to_ranges, ranges_loop, ScanParams
    from cone_detection.cloud_to_scan_node import NODE_NAME, PARAMS
    from hil_bridge.interface.params import check_specs
    params = ScanParams.from_mapping(check_specs(PARAMS, NODE_NAME, 'cloud_to_scan.yaml'))
    rng = np.random.default_rng(0)
    pts = rng.uniform(-25.0, 25.0, (100_000, 3)).astype(np.float32)
    pts[:, 2] = rng.uniform(-0.2, 0.3, pts.shape[0])
    points_to_ranges(pts, params)
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fast = points_to_ranges(pts, params)
        times.append(time.perf_counter() - t0)
    t0 = time.perf_counter()
    slow = ranges_loop(pts, params)
    loop = time.perf_counter() - t0
    if not np.array_equal(fast, slow):
        raise RuntimeError('cloud_to_scan: numpy and loop results differ')
    return {'numpy_ms': 1e3 * min(times), 'numpy_median_ms': 1e3 * float(np.median(times)),
            'loop_ms': 1e3 * loop}


# --------------------------------------------------------------- subscriber
def subscriber_main(idle: float, total: float) -> None:
    """Subscribe to the measured topics; print a JSON summary and exit."""
    from hil_bridge.interface import contract
    from hil_bridge.interface.codecs import stamps
    import rclpy
    rclpy.init()
    node = rclpy.create_node('bench_bridge_subscriber')
    got: Dict[str, List[List[float]]] = {k: [] for k in MEASURED}

    def recorder(key: str) -> Any:
        def on_msg(msg: Any) -> None:
            got[key].append([stamps.sec_from_stamp(msg.header.stamp), time.time()])
        return on_msg
    for key in MEASURED:
        contract.create_subscription(node, key, recorder(key))
    print('READY', flush=True)
    start = time.monotonic()
    last = None
    while time.monotonic() - start < total:
        rclpy.spin_once(node, timeout_sec=0.05)
        n = sum(len(v) for v in got.values())
        if n and (last is None or n != last[0]):
            last = (n, time.monotonic())
        if last is not None and time.monotonic() - last[1] > idle:
            break
    print('RESULT ' + json.dumps(got), flush=True)
    node.destroy_node()
    rclpy.shutdown()


# ---------------------------------------------------------------- publisher
def run(frames_count: int = 90, rate: float = 30.0, distinct: int = 6) -> Dict[str, Any]:
    """Run all three benchmarks; return the figures."""
    from hil_bridge.bridge.frame_msgs import FrameConverter
    from hil_bridge.interface import contract
    from hil_bridge.interface.rig import load_rig
    import rclpy
    frames = make_frames(distinct)
    rclpy.init()
    node = rclpy.create_node('bench_bridge_publisher')
    conv = FrameConverter('ego_vehicle', load_rig(RIG))
    pubs: Dict[str, Any] = {}
    for key, name in conv.topic_list():
        row = contract.topic(key)
        pubs[name] = node.create_publisher(row.msg_class(), name,
                                           contract.qos_profile(row.qos))
    child = subprocess.Popen([sys.executable, '-m', 'hil_bridge.bench.bench_bridge',
                              '--subscriber'], stdout=subprocess.PIPE, text=True,
                             env=dict(os.environ))
    try:
        assert child.stdout is not None
        if child.stdout.readline().strip() != 'READY':
            raise RuntimeError('benchmark subscriber did not start')
        names = {k: contract.topic(k).resolve('ego_vehicle') for k in MEASURED}
        deadline = time.monotonic() + 30.0
        while any(pubs[n].get_subscription_count() == 0 for n in names.values()):
            if time.monotonic() > deadline:
                raise RuntimeError('subscriber not discovered within 30 s')
            time.sleep(0.05)
        time.sleep(1.0)
        convert_ms: List[float] = []
        publish_ms: List[float] = []
        sent = 0
        period = 1.0 / rate
        t_next = time.monotonic()
        for k in range(frames_count):
            frame = frames[k % distinct]
            frame.sim_time = time.time()
            t0 = time.perf_counter()
            msgs = conv.messages(frame, 'cmd_vel')
            t1 = time.perf_counter()
            for (_, name), msg in msgs.items():
                pubs[name].publish(msg)
            t2 = time.perf_counter()
            convert_ms.append(1e3 * (t1 - t0))
            publish_ms.append(1e3 * (t2 - t1))
            sent += 1
            t_next += period
            time.sleep(max(0.0, t_next - time.monotonic()))
        naive = []
        for frame in frames[:3]:
            t0 = time.perf_counter()
            naive_messages(frame)
            naive.append(1e3 * (time.perf_counter() - t0))
        out_text, _ = child.communicate(timeout=60)
    finally:
        if child.poll() is None:
            child.kill()
        node.destroy_node()
        rclpy.shutdown()
    line = [ln for ln in out_text.splitlines() if ln.startswith('RESULT ')]
    got = json.loads(line[0][len('RESULT '):]) if line else {}
    delivery = {}
    for key in MEASURED:
        rows = got.get(key, [])
        lat = [1e3 * (rx - st) for st, rx in rows]
        rx_times = sorted(rx for _, rx in rows)
        span = rx_times[-1] - rx_times[0] if len(rx_times) > 1 else float('nan')
        delivery[key] = {'sent': sent, 'received': len({st for st, _ in rows}),
                         'rate_hz': (len(rx_times) - 1) / span if span == span and span > 0
                         else float('nan'),
                         'latency_mean_ms': float(np.mean(lat)) if lat else float('nan'),
                         'latency_p95_ms': _pct(lat, 95), 'latency_max_ms':
                         float(np.max(lat)) if lat else float('nan')}
    total = [c + p for c, p in zip(convert_ms, publish_ms)]
    return {'overhead': {'convert_median_ms': float(np.median(convert_ms)),
                         'publish_median_ms': float(np.median(publish_ms)),
                         'total_median_ms': float(np.median(total)),
                         'total_p95_ms': _pct(total, 95),
                         'naive_convert_ms': float(np.median(naive))},
            'cloud_to_scan': bench_cloud_to_scan(),
            'delivery': delivery, 'rate': rate,
            'lidar_points': int(frames[1].sensors['lidar'].data.shape[0])
            if 'lidar' in frames[1].sensors else 0}


def print_tables(res: Dict[str, Any]) -> None:
    """Print the three tables."""
    o = res['overhead']
    print('\n1. bridge overhead per frame, full rig (2 x 1288x964 bgr8 + lidar '
          f'{res["lidar_points"]} pts), subscriber in another process')
    print(f'   {"case":38s} {"ms":>9s} {"vs goal 5 ms":>13s}')
    print(f'   {"convert (FrameConverter), median":38s} {o["convert_median_ms"]:9.2f}')
    print(f'   {"publish all topics, median":38s} {o["publish_median_ms"]:9.2f}')
    print(f'   {"convert + publish, median":38s} {o["total_median_ms"]:9.2f} '
          f'{o["total_median_ms"] / 5.0:12.2f}x')
    print(f'   {"convert + publish, p95":38s} {o["total_p95_ms"]:9.2f} '
          f'{o["total_p95_ms"] / 5.0:12.2f}x')
    print(f'   {"baseline: naive convert (bytes, struct)":38s} {o["naive_convert_ms"]:9.2f}'
          f'   speed-up {o["naive_convert_ms"] / max(o["convert_median_ms"], 1e-9):.1f}x')
    c = res['cloud_to_scan']
    print('\n2. cloud_to_scan, 100k points, rig parameters (1080 bins)')
    print(f'   {"numpy (best)":38s} {c["numpy_ms"]:9.2f} ms  (goal 2 ms: '
          f'{c["numpy_ms"] / 2.0:.2f}x)')
    print(f'   {"numpy (median)":38s} {c["numpy_median_ms"]:9.2f} ms')
    print(f'   {"baseline: per-point Python loop":38s} {c["loop_ms"]:9.2f} ms  '
          f'speed-up {c["loop_ms"] / max(c["numpy_ms"], 1e-9):.0f}x')
    print(f'\n3. delivery at {res["rate"]:g} Hz to another process')
    print(f'   {"topic":16s} {"sent":>5s} {"recv":>5s} {"rate Hz":>8s} '
          f'{"lat mean":>9s} {"p95":>7s} {"max":>7s} ms')
    for key, d in res['delivery'].items():
        print(f'   {key:16s} {d["sent"]:5d} {d["received"]:5d} {d["rate_hz"]:8.1f} '
              f'{d["latency_mean_ms"]:9.2f} {d["latency_p95_ms"]:7.2f} '
              f'{d["latency_max_ms"]:7.2f}')


def main(argv: Optional[List[str]] = None) -> None:
    """Parse arguments and run the benchmark (or its subscriber side)."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[1])
    parser.add_argument('--frames', type=int, default=90)
    parser.add_argument('--rate', type=float, default=30.0)
    parser.add_argument('--json', action='store_true', help='print JSON too')
    parser.add_argument('--subscriber', action='store_true', help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    from hil_bridge.interface.config import dds_environment
    os.environ.update(dds_environment())  # carla_hil's Fast DDS profile (big SHM)
    if args.subscriber:
        subscriber_main(idle=2.0, total=120.0)
        return
    res = run(args.frames, args.rate)
    print_tables(res)
    if args.json:
        print(json.dumps(res))


if __name__ == '__main__':
    main()
