# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
Benchmark the two-host link (network namespaces, root needed).

``python -m hil_bridge.bench.bench_link [--seconds S] [--skip-loop] [--skip-cpu]``
prints four tables:

1. camera throughput across the 1 Gbit/s link (and 100 Mbit/s for JPEG):
   two 1288x964 bgr8 cameras at 30 Hz published in ``simpc`` as raw
   ``Image`` versus JPEG ``CompressedImage`` (``images.image_to_compressed``,
   encoded per frame by the sender, decoded by the receiver in
   ``onboard``): offered and delivered frame rate, drops, payload and wire
   MB/s (veth counters), latency (receive - publish wall time: one kernel
   clock) and the encode / decode cost. Images are rendered by the built-in
   simulator (realistic JPEG sizes).
2. clock offset and round-trip time from the ``hil_link_monitor`` pair
   (client in simpc, server in onboard), idle and under camera load.
3. end-to-end loop latency: sim frame (odometry receipt in simpc) to the
   command built from it arriving back in simpc, per frame, p50/p95/max,
   with the bridge asynchronous (``wait_for_control`` false) and in
   lockstep, and an echo onboard stage that decodes each JPEG camera image
   and answers with a ``cmd_vel`` carrying its stamp.
4. CPU budget: the onboard nodes pinned to one core (``taskset -c 0``),
   CPU % of each (``/proc/<pid>/stat`` utime + stime over the window) and
   CPU ms per sim frame, with the real stack (frames every ``--cpu-dt``,
   1/30 s), the message counts of its inputs and outputs (does it keep
   up?) from a ``hil_link_monitor`` in onboard, and the loop latency the
   planner's commands see; first a machine reference from the same run
   (rclpy CPU per received message, per executor), since this machine's
   speed varies about twofold from day to day.

Figures on a loaded machine are pessimistic; re-run on a quiet one.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from typing import Any, Dict, List, Optional, Sequence

from hil_bridge.interface.config import config_path, source_root
from hil_bridge.interface.node_main import (EXECUTOR_ENV, executor_kind, EXECUTOR_KINDS,
                                            make_executor)
from hil_bridge.link.link_stats import count_gaps, percentiles
from hil_bridge.tools.netns_rig import NetnsRig, ProfileUnavailable
import numpy as np

FPS = 30.0
CAMS = ('camera_left', 'camera_right')
RESULT = 'BENCH_RESULT '
LINK_SETS = ('hil_bridge.publish_compressed=true',
             'hil_bridge.publish_raw_images=false',
             'vision_cone_detector.use_compressed=true')


# -- camera publisher / subscriber (run inside the namespaces) ---------------
def _pub_main(images_file: str, mode: str, seconds: float, quality: int) -> None:
    from hil_bridge.interface import contract
    from hil_bridge.interface.codecs import images
    import rclpy
    data = np.load(images_file)
    left, right = data['left'], data['right']
    rclpy.init()
    node = rclpy.create_node('bench_link_pub')
    suffix = '_compressed' if mode == 'jpeg' else ''
    pubs = [contract.create_publisher(node, key + suffix) for key in CAMS]
    time.sleep(2.0)  # discovery
    sent, enc = 0, []
    start = time.monotonic()
    k = 0
    while time.monotonic() - start < seconds:
        k += 1
        t = time.time()
        for pub, img, key in zip(pubs, (left, right), CAMS):
            frame = f'ego_vehicle/{key}/optical'
            if mode == 'jpeg':
                t0 = time.perf_counter()
                msg = images.image_to_compressed(img, t, frame, quality)
                enc.append(time.perf_counter() - t0)
            else:
                msg = images.image_to_msg(img, t, frame)
            pub.publish(msg)
        sent += 1
        delay = start + k / FPS - time.monotonic()
        if delay > 0:
            time.sleep(delay)
    elapsed = time.monotonic() - start
    time.sleep(1.0)
    print(RESULT + json.dumps({'sent': sent, 'offered_hz': sent / elapsed,
                               'encode_ms': 1e3 * float(np.median(enc))
                               if enc else 0.0}), flush=True)
    node.destroy_node()
    rclpy.shutdown()


def _sub_main(mode: str, seconds: float) -> None:
    from hil_bridge.interface import contract
    from hil_bridge.interface.codecs import images, stamps
    import rclpy
    rclpy.init()
    node = rclpy.create_node('bench_link_sub')
    suffix = '_compressed' if mode == 'jpeg' else ''
    rec: Dict[str, Dict[str, List[float]]] = {
        k: {'stamp': [], 'lat': [], 'size': [], 'dec': []} for k in CAMS}

    def make_cb(key: str) -> Any:
        def on_msg(msg: Any) -> None:
            now = time.time()
            r = rec[key]
            t0 = time.perf_counter()
            if mode == 'jpeg':
                images.compressed_to_image(msg)
            else:
                images.msg_to_image(msg, 'passthrough')
            r['dec'].append(time.perf_counter() - t0)
            stamp = stamps.sec_from_stamp(msg.header.stamp)
            r['stamp'].append(stamp)
            r['lat'].append(now - stamp)
            r['size'].append(float(len(msg.data)))
        return on_msg

    for key in CAMS:
        contract.create_subscription(node, key + suffix, make_cb(key))
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        rclpy.spin_once(node, timeout_sec=0.05)
    out = {}
    for key, r in rec.items():
        lat = percentiles(r['lat']) * 1e3
        ts = np.asarray(r['stamp'])
        span = float(ts.max() - ts.min()) if ts.size > 1 else 0.0
        out[key] = {'received': len(r['stamp']),
                    'gaps': count_gaps(ts, 1.0 / FPS),
                    'delivered_hz': (len(ts) - 1) / span if span else 0.0,
                    'mbyte_s': float(np.sum(r['size'][1:]) / span / 1e6)
                    if span else 0.0,
                    'lat_p50': lat[0], 'lat_p95': lat[1], 'lat_max': lat[2],
                    'decode_ms': 1e3 * float(np.median(r['dec']))
                    if r['dec'] else 0.0}
    print(RESULT + json.dumps(out), flush=True)
    node.destroy_node()
    rclpy.shutdown()


def _result(text: str) -> Dict[str, Any]:
    for line in reversed(text.splitlines()):
        if line.startswith(RESULT):
            return json.loads(line[len(RESULT):])
    raise RuntimeError('no result line in output:\n' + text[-3000:])


def render_images(path: str) -> str:
    """Render one trackdrive frame of the full rig; save left/right npz."""
    from hil_bridge.bench.bench_bridge import make_frames
    frame = make_frames(3)[-1]
    np.savez(path, left=frame.sensors['rgb_left'].data,
             right=frame.sensors['rgb_right'].data)
    return path


def _monitor_argv(role: str, rate: float = 10.0) -> List[str]:
    return [sys.executable, '-m', 'hil_bridge.link.link_monitor_node',
            '--ros-args', '--params-file', config_path('hil_link_monitor.yaml'),
            '-p', f'role:={role}', '-p', 'use_sim_time:=false',
            '-p', 'topics:=[odometry]', '-p', f'ping_rate:={rate}',
            '-p', 'window:=60.0', '-p', 'clock_window:=1000']


def _stop(procs: List[subprocess.Popen]) -> List[str]:
    outs = []
    for proc in procs:
        if proc.poll() is None:
            proc.send_signal(2)
    for proc in procs:
        try:
            outs.append(proc.communicate(timeout=15)[0] or '')
        except subprocess.TimeoutExpired:
            proc.kill()
            outs.append(proc.communicate()[0] or '')
    return outs


def _clock(text: str) -> Dict[str, float]:
    from hil_bridge.link.link_monitor_node import STATS_PREFIX
    lines = [ln for ln in text.splitlines() if ln.startswith(STATS_PREFIX)]
    if not lines:
        return {}
    return json.loads(lines[-1][len(STATS_PREFIX):]).get('clock', {})


def bench_cameras(images: str, seconds: float, profile: str, mode: str,
                  quality: int = 80) -> Dict[str, Any]:
    """One camera run (raw or jpeg) across a fresh rig with ``profile``."""
    with NetnsRig(profile) as rig:
        before = rig.counters('onboard')['rx_bytes']
        mon = [rig.popen('onboard', _monitor_argv('server'),
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         text=True),
               rig.popen('simpc', _monitor_argv('client'),
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         text=True)]
        me = [sys.executable, '-m', 'hil_bridge.bench.bench_link']
        sub = rig.popen('onboard', me + ['_sub', mode, str(seconds + 4.0)],
                        stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                        text=True)
        t0 = time.monotonic()
        pub = rig.run('simpc', me + ['_pub', images, mode, str(seconds),
                                     str(quality)], timeout=seconds + 60)
        wall = time.monotonic() - t0
        sub_out = sub.communicate(timeout=seconds + 60)[0]
        wire = rig.counters('onboard')['rx_bytes'] - before
        outs = _stop(mon)
    res = {'pub': _result(pub.stdout + pub.stderr), 'sub': _result(sub_out),
           'wire_mbyte_s': wire / seconds / 1e6, 'wall': wall,
           'clock': _clock(outs[1])}
    return res


def bench_clock_idle(seconds: float) -> Dict[str, float]:
    """Clock offset / RTT of the monitor pair on an idle 1 Gbit/s link."""
    with NetnsRig('gbit') as rig:
        mon = [rig.popen('onboard', _monitor_argv('server', 20.0),
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         text=True),
               rig.popen('simpc', _monitor_argv('client', 20.0),
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         text=True)]
        time.sleep(seconds)
        outs = _stop(mon)
    return _clock(outs[1])


# -- machine reference: rclpy cost of one received message ------------------
#: Rate (Hz) and length (s) of the reference Odometry stream.
REF_HZ, REF_SECONDS = 100.0, 6.0


def _ref_pub_main(seconds: float) -> None:
    from nav_msgs.msg import Odometry
    import rclpy
    rclpy.init()
    node = rclpy.create_node('bench_ref_pub')
    pub = node.create_publisher(Odometry, 'bench_ref', 10)
    msg, start, k = Odometry(), time.monotonic(), 0
    while time.monotonic() - start < seconds:
        k += 1
        msg.header.stamp.sec = k
        pub.publish(msg)
        time.sleep(max(0.0, start + k / REF_HZ - time.monotonic()))
    node.destroy_node()
    rclpy.shutdown()


def _ref_sub_main(kind: str, seconds: float) -> None:
    from nav_msgs.msg import Odometry
    import rclpy
    rclpy.init()
    node = rclpy.create_node('bench_ref_sub')
    count = [0]
    node.create_subscription(Odometry, 'bench_ref',
                             lambda _m: count.__setitem__(0, count[0] + 1), 10)
    executor = make_executor(kind)
    executor.add_node(node)
    end = time.monotonic() + 1.5  # discovery and the first messages
    while time.monotonic() < end:
        executor.spin_once(timeout_sec=0.1)
    n0, c0, w0 = count[0], time.process_time(), time.monotonic()
    while time.monotonic() - w0 < seconds:
        executor.spin_once(timeout_sec=0.1)
    cpu, n = time.process_time() - c0, count[0] - n0
    print(RESULT + json.dumps({'messages': n, 'ms_per_msg': 1e3 * cpu / max(n, 1),
                               'cpu_pct': 100.0 * cpu / seconds}), flush=True)
    executor.shutdown()
    node.destroy_node()
    rclpy.shutdown()


def bench_message_cost(kind: str) -> Dict[str, float]:
    """
    CPU of one rclpy subscriber receiving Odometry at 100 Hz on core 0.

    The publisher runs on the other core; ``kind`` is the executor
    (``node_main.EXECUTOR_KINDS``). A machine reference for section 4:
    the same code costs about twice as much on a loaded shared host.
    """
    env = dict(os.environ, ROS_DOMAIN_ID=str(150 + os.getpid() % 50),
               ROS_AUTOMATIC_DISCOVERY_RANGE='LOCALHOST')
    me = [sys.executable, '-m', 'hil_bridge.bench.bench_link']
    pin = ['taskset', '-c', OTHER_CORE] if OTHER_CORE else []
    pub = subprocess.Popen(pin + me + ['_ref_pub', str(REF_SECONDS + 4.0)],
                           env=env)
    try:
        out = subprocess.run(['taskset', '-c', '0'] + me + [
            '_ref_sub', kind, str(REF_SECONDS)], env=env, text=True,
            capture_output=True, timeout=60)
        pub.wait(timeout=REF_SECONDS + 30.0)  # it ends on its own
    finally:
        if pub.poll() is None:
            pub.kill()
            pub.wait()
    lines = [ln for ln in out.stdout.splitlines() if ln.startswith(RESULT)]
    if not lines:
        raise RuntimeError(f'reference subscriber failed: {out.stderr[-500:]}')
    return json.loads(lines[-1][len(RESULT):])


def _loop_latency(recs: List[Dict[str, Any]]) -> Dict[str, float]:
    """Frame (odometry receipt) to cmd_vel receipt, same stamp, in ms."""
    odom = {r['s']: r['w'] for r in recs if r['k'] == 'odometry'}
    first: Dict[float, float] = {}
    for r in recs:  # the first command per frame stamp
        if r['k'] == 'cmd_vel' and r.get('s') in odom and \
                r['s'] not in first:
            first[r['s']] = r['w']
    lat = [(w - odom[s]) * 1e3 for s, w in first.items()]
    p50, p95, top = percentiles(lat)
    sim = [r['s'] for r in recs if r['k'] == 'odometry']
    wall = [r['w'] for r in recs if r['k'] == 'odometry']
    rtf = (sim[-1] - sim[0]) / (wall[-1] - wall[0]) if len(sim) > 1 else 0.0
    return {'frames': len(odom), 'answered': len(lat), 'p50': p50,
            'p95': p95, 'max': top, 'rtf': rtf}


def _cpu_ticks(pid: int) -> int:
    with open(f'/proc/{pid}/stat', 'r', encoding='ascii') as stream:
        fields = stream.read().rsplit(')', 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime + stime


#: The core the simulator PC side runs on in the CPU run (onboard: core 0).
OTHER_CORE = '1' if (os.cpu_count() or 1) > 1 else ''

WATCHED = ('camera_left_compressed', 'lidar', 'cones_lidar', 'cones_vision',
           'cones', 'cmd_vel', 'brake_request')


def bench_loop(lockstep: bool, duration: float, stack: bool,
               work: str, dt: float = 0.05,
               onboard_sets: Sequence[str] = (),
               lidar_hz: float = 0.0,
               sim_sets: Sequence[str] = ()) -> Dict[str, Any]:
    """
    Bridge in simpc (full rig, JPEG on the link) and an onboard side.

    ``onboard_sets`` are extra ``NODE.PARAM=VALUE`` overrides of the
    onboard nodes (e.g. one camera only); ``lidar_hz`` > 0 gives the
    lidar that capture rate (``sensor_tick``; 0: a sweep every frame);
    ``sim_sets`` are extra overrides of the simulator PC side.
    """
    from hil_bridge.tools.two_hosts import TwoHostRun, write_rig
    sets = list(LINK_SETS[:2]) + [f'hil_bridge.fixed_delta_seconds={dt}']
    if lidar_hz > 0.0:
        os.makedirs(work, exist_ok=True)
        rig_file = write_rig(os.path.join(work, 'rig.yaml'),
                             ticks={'lidar': 1.0 / lidar_hz})
        sets.append(f'hil_bridge.rig={rig_file}')
    sets += list(sim_sets)
    if lockstep:
        sets += ['hil_bridge.wait_for_control=true',
                 'hil_bridge.real_time_factor=0.0']
    out: Dict[str, Any] = {}
    with NetnsRig('gbit') as rig:
        run = TwoHostRun(rig, work)
        try:
            if stack:
                run.start_onboard_nodes(
                    sets=list(LINK_SETS) + list(onboard_sets), cpus='0')
                run.start('monitor', 'onboard', [
                    sys.executable, '-m', 'hil_bridge.link.link_monitor_node',
                    '--ros-args', '--params-file',
                    config_path('hil_link_monitor.yaml'), '-p',
                    f'topics:=[{",".join(WATCHED)}]', '-p', 'window:=600.0'],
                    cpus=OTHER_CORE)
            else:
                run.start('echo', 'onboard', [
                    sys.executable, '-m', 'hil_bridge.bench.link_probe_node',
                    'echo', '--source', 'camera_compressed', '--speed',
                    '0.0'], cpus='0')
            # the simulator PC (and the measuring monitor) stay off the
            # onboard core, as on two real machines
            run.start_sim_pc('ci_trackdrive', duration=duration, sets=sets,
                             cpus=OTHER_CORE if stack else '')
            onboard = [n for n, h in run.hosts.items()
                       if h == 'onboard' and n != 'monitor']
            # CPU window: from the loop being closed (the first cmd_vel
            # back in simpc, every node imported and subscribed) plus a
            # settling second until the bridge ends; start-up (imports,
            # model loading) is not steady-state load.
            first = 'cmd_vel' if stack else 'odometry'
            run.wait_for(lambda r: any(x['k'] == first for x in r), 120.0)
            time.sleep(1.0)
            t0 = time.monotonic()
            ticks0 = {n: _cpu_ticks(run.procs[n].pid) for n in onboard}
            recs0 = len(run.records())
            run.wait('sim_pc', duration * 30 + 60)
            wall = time.monotonic() - t0
            ticks1 = {}
            for n in onboard:
                try:
                    ticks1[n] = _cpu_ticks(run.procs[n].pid)
                except OSError:
                    ticks1[n] = ticks0[n]
            recs = run.records()
            frames = sum(1 for r in recs[recs0:] if r['k'] == 'odometry')
            hz = os.sysconf('SC_CLK_TCK')
            out['cpu'] = {n: {'cpu_pct': 100.0 * (ticks1[n] - ticks0[n]) /
                              hz / wall,
                              'ms_per_frame': 1e3 * (ticks1[n] - ticks0[n]) /
                              hz / max(frames, 1)} for n in onboard}
            out['latency'] = _loop_latency(recs)
            out['sim_s'] = frames * dt
            if stack:
                from hil_bridge.link.link_monitor_node import STATS_PREFIX
                run.kill('monitor', 2)
                lines = [ln for ln in run.log('monitor').splitlines()
                         if ln.startswith(STATS_PREFIX)]
                out['topics'] = json.loads(lines[-1][len(STATS_PREFIX):])[
                    'topics'] if lines else {}
            out['wire_mbyte_s'] = rig.counters('onboard')['rx_bytes'] / \
                max(wall, 1e-9) / 1e6
        finally:
            run.stop_all()
    return out


# -- report ------------------------------------------------------------------
def _fmt(v: Any, nd: int = 1) -> str:
    if isinstance(v, float):
        return 'nan' if v != v else f'{v:.{nd}f}'
    return str(v)


#: The CPU run's variants: (label, extra simulator PC overrides).
CLOCK_VARIANTS = (('/clock every frame', ()),
                  ('/clock every 0.1 s', ('hil_bridge.clock_period=0.1',)))


def report_cpu(args: argparse.Namespace, tmp: str) -> None:
    """Section 4: print the onboard CPU table for each of CLOCK_VARIANTS."""
    print('\n## 4. Onboard stack pinned to one core (taskset -c 0), '
          'asynchronous bridge, JPEG on the link\n')
    if args.executor:
        os.environ[EXECUTOR_ENV] = args.executor
    kind = executor_kind()
    kinds = ['single'] + (['events'] if executor_kind('auto') == 'events' else [])
    print('Machine reference (same run): one rclpy subscriber on core 0 '
          f'receiving Odometry at {REF_HZ:g} Hz costs ' + ', '.join(
              f'{k} executor {_fmt(bench_message_cost(k)["ms_per_msg"], 2)}'
              ' ms CPU per message' for k in kinds) + '.')
    print(f'Onboard nodes spin with the {kind} executor ({EXECUTOR_ENV}).')
    if args.set or args.sim_set:
        print('Overrides: ' + ', '.join(args.set + args.sim_set))
    lidar = (f'lidar at {args.lidar_hz:g} Hz' if args.lidar_hz > 0
             else 'a lidar sweep every frame')
    print(f'Frames (camera pair, odometry) every {args.cpu_dt * 1e3:.1f} ms of '
          f'sim time, {lidar}.\n')
    runs = []
    for label, extra in CLOCK_VARIANTS:
        res = bench_loop(False, args.cpu_duration, True,
                         os.path.join(tmp, f'stack_{len(runs)}'), dt=args.cpu_dt,
                         onboard_sets=args.set, lidar_hz=args.lidar_hz,
                         sim_sets=list(extra) + list(args.sim_set))
        runs.append((label, res))
    print('| node | ' + ' | '.join(
        f'{label}: CPU ms per sim frame | {label}: CPU % of one core at real time'
        for label, _r in runs) + ' |')
    print('|---|' + '---|---|' * len(runs))
    totals = [0.0] * len(runs)
    for name in runs[0][1]['cpu']:
        cells = []
        for i, (_label, res) in enumerate(runs):
            c = res['cpu'].get(name, {'ms_per_frame': float('nan')})
            real_time = c['ms_per_frame'] / args.cpu_dt / 10.0
            totals[i] += real_time
            cells += [_fmt(c['ms_per_frame']), _fmt(real_time)]
        print(f'| {name} | ' + ' | '.join(cells) + ' |')
    print('| all onboard | ' + ' | '.join(f'| **{_fmt(t)}**' for t in totals) + ' |')
    print('\n"At real time" = CPU per sim frame x frames per sim second: the '
          'load if the simulator delivered these rates in real time (every '
          'rate scales with sim time). Over 100 % means one core cannot '
          'keep up.\n')
    for label, res in runs:
        lat = res['latency']
        counts = {k: t['total'] for k, t in res.get('topics', {}).items()}
        print(f'- {label}: {res["sim_s"]:.1f} sim s measured, bridge at '
              f'{_fmt(lat["rtf"], 2)} x real time; planner loop latency '
              f'(frame -> cmd_vel back in simpc) p50 {_fmt(lat["p50"])} / p95 '
              f'{_fmt(lat["p95"])} / max {_fmt(lat["max"])} ms over '
              f'{lat["answered"]} of {lat["frames"]} frames; messages seen '
              'onboard since start: ' + ', '.join(
                  f'{k} {v}' for k, v in counts.items()))


def main(argv: Optional[List[str]] = None) -> int:
    """Run the benchmark (or a helper role) and print the tables."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == '_pub':
        _pub_main(argv[1], argv[2], float(argv[3]), int(argv[4]))
        return 0
    if argv and argv[0] == '_ref_pub':
        _ref_pub_main(float(argv[1]))
        return 0
    if argv and argv[0] == '_ref_sub':
        _ref_sub_main(argv[1], float(argv[2]))
        return 0
    if argv and argv[0] == '_sub':
        _sub_main(argv[1], float(argv[2]))
        return 0
    ap = argparse.ArgumentParser(prog='bench_link',
                                 description=__doc__.split('\n')[1])
    ap.add_argument('--seconds', type=float, default=6.0,
                    help='camera run length (wall s)')
    ap.add_argument('--duration', type=float, default=4.0,
                    help='sim seconds per loop run')
    ap.add_argument('--cpu-duration', type=float, default=15.0,
                    help='sim seconds of the CPU run')
    ap.add_argument('--lidar-hz', type=float, default=10.0,
                    help='lidar capture rate of the CPU run (0: every frame)')
    ap.add_argument('--cpu-dt', type=float, default=1.0 / 30.0,
                    help='fixed_delta_seconds of the CPU run (1/30: a '
                    'camera frame every tick)')
    ap.add_argument('--executor', choices=EXECUTOR_KINDS, default=None,
                    help='executor of the onboard nodes in the CPU run '
                    f'(sets {EXECUTOR_ENV}; default: the environment, else auto)')
    ap.add_argument('--skip-cameras', action='store_true')
    ap.add_argument('--skip-loop', action='store_true')
    ap.add_argument('--skip-cpu', action='store_true')
    ap.add_argument('--set', action='append', default=[],
                    metavar='NODE.PARAM=VALUE',
                    help='onboard override for the CPU run (repeatable)')
    ap.add_argument('--sim-set', action='append', default=[],
                    metavar='NODE.PARAM=VALUE',
                    help='simulator PC override for the CPU run (repeatable), '
                    'e.g. hil_bridge.clock_period=0.1')
    args = ap.parse_args(argv)
    os.environ.setdefault('ROS_DOMAIN_ID', str(100 + os.getpid() % 100))
    root = source_root()
    path = os.environ.get('PYTHONPATH', '')
    os.environ['PYTHONPATH'] = root + (os.pathsep + path if path else '')
    tmp = tempfile.mkdtemp(prefix='bench_link_')
    if not args.skip_cameras:
        images = render_images(os.path.join(tmp, 'images.npz'))
        print('\n## 1. Two 1288x964 bgr8 cameras at 30 Hz across the link '
              '(simpc -> onboard)\n')
        print('| link | payload | offered Hz | delivered Hz (L/R) | drops '
              '(L/R) | payload MB/s (both) | wire MB/s (all) | latency p50/p95/max '
              'ms | encode / decode ms |')
        print('|---|---|---|---|---|---|---|---|---|')
        loaded = {}
        for profile, mode in (('gbit', 'raw'), ('gbit', 'jpeg'),
                              ('100mbit', 'raw'), ('100mbit', 'jpeg')):
            try:
                res = bench_cameras(images, args.seconds, profile, mode)
            except ProfileUnavailable as exc:
                print(f'| {profile} | {mode} | skipped: {exc} |')
                continue
            loaded[(profile, mode)] = res['clock']
            left, right = (res['sub'][k] for k in CAMS)
            sent = res['pub']['sent']
            print(f'| {profile} | {mode} | {_fmt(res["pub"]["offered_hz"])} '
                  f'| {_fmt(left["delivered_hz"])} / '
                  f'{_fmt(right["delivered_hz"])} | {sent - left["received"]} '
                  f'/ {sent - right["received"]} of {sent} | '
                  f'{_fmt(left["mbyte_s"] + right["mbyte_s"])} | '
                  f'{_fmt(res["wire_mbyte_s"])} | {_fmt(left["lat_p50"])} / '
                  f'{_fmt(left["lat_p95"])} / {_fmt(left["lat_max"])} | '
                  f'{_fmt(res["pub"]["encode_ms"])} / '
                  f'{_fmt(left["decode_ms"])} |')
        print('\nRaw need: 2 x 1288 x 964 x 3 B x 30 Hz = '
              f'{2 * 1288 * 964 * 3 * 30 / 1e6:.0f} MB/s; 1 Gbit/s carries '
              '125 MB/s.')
        print('\n## 2. Clock offset (server - client) and RTT, hil_link_monitor'
              '\n')
        print('| condition | samples | offset ms | spread ms | RTT min / p50 '
              '/ p95 / max ms |')
        print('|---|---|---|---|---|')
        conds = [('idle 1 Gbit/s', bench_clock_idle(args.seconds))]
        conds += [(f'{p} {m} cameras', c) for (p, m), c in loaded.items()]
        for name, c in conds:
            if not c:
                print(f'| {name} | 0 | | | |')
                continue
            print(f'| {name} | {c["samples"]} | '
                  f'{_fmt(c["offset"] * 1e3, 3)} | '
                  f'{_fmt(c["offset_spread"] * 1e3, 3)} | '
                  f'{_fmt(c["rtt_min"] * 1e3, 2)} / '
                  f'{_fmt(c["rtt_p50"] * 1e3, 2)} / '
                  f'{_fmt(c["rtt_p95"] * 1e3, 2)} / '
                  f'{_fmt(c["rtt_max"] * 1e3, 2)} |')
    if not args.skip_loop:
        print('\n## 3. Loop latency, frame -> command back at the bridge '
              '(full rig, JPEG on the link, echo onboard stage on one core)\n')
        print('| mode | frames | answered | p50 ms | p95 ms | max ms | '
              'sim/wall |')
        print('|---|---|---|---|---|---|---|')
        for lockstep in (False, True):
            res = bench_loop(lockstep, args.duration, False,
                             os.path.join(tmp, f'echo_{lockstep}'))
            lat = res['latency']
            print(f'| {"lockstep" if lockstep else "asynchronous"} | '
                  f'{lat["frames"]} | {lat["answered"]} | {_fmt(lat["p50"])} '
                  f'| {_fmt(lat["p95"])} | {_fmt(lat["max"])} | '
                  f'{_fmt(lat["rtf"], 2)} |')
    if not args.skip_cpu:
        report_cpu(args, tmp)
    return 0


if __name__ == '__main__':
    sys.exit(main())
