# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
``carla-hil serve`` with the HIL rig through the real carla client.

    python -m hil_bridge.bench.bench_carla_server [--frames 60]
        [--scenario ci_trackdrive] [--rig hil_rig] [--dt 0.05]

Synchronous mode, the ego driving at 6 m/s among the scenario's track
cones, the rig's sensors (``hil_rig``: two 1288x964 RGB cameras and the
270 deg lidar) attached and listening. One table, frames per second of

* ``server only``: the server's world in this process, every sensor
  rendered and serialised each frame (no sockets) - what the server can
  produce;
* ``through the client``: ``world.tick()`` on the real carla==0.9.16
  client plus the wait until every sensor's data of that frame has
  arrived in its ``listen`` callback (each callback copies the buffer into
  numpy, as a bridge does) - a server subprocess on local TCP;
* ``CARLA backend``: ``CarlaBackend.step`` (the bridge's backend: tick,
  wait for the due sensors, zero-copy bgr8/lidar conversion, actor states
  incl. the wheel angle read back, referee) with the same rig and
  scenario against a server subprocess; its wall time per frame minus the
  raw client's is the bridge overhead per frame;
* ``built-in backend``: ``BuiltinBackend.step`` with the same rig (the
  project's simulator without any wire), the reference;

each with its ratio to the client figure, measured in the same run
(interleaved ``--repeats`` times, the best of each kept), and the CPU time
per frame of each (for the client path: the server process and the client
process), which depends much less on the machine's load than frames per
second. When the server's CPU per frame is at or below the built-in
backend's, the server adds no cost of its own beyond the renderers. Also
prints the bytes per frame on the wire.
"""

import argparse
import math
import os
import threading
import time
from typing import Dict, List

from hil_bridge.bridge.backend import VehicleControl
from hil_bridge.bridge.scenario import load_scenario
from hil_bridge.carla_server import maps as maplib
from hil_bridge.carla_server.launcher import serve, synchronous
from hil_bridge.carla_server.ue import rotation_to_ue
from hil_bridge.carla_server.world import World
from hil_bridge.interface.rig import carla_attributes, load_rig, SensorSpec
from hil_bridge.sim.builtin_backend import BuiltinBackend
import numpy as np


def _cpu_seconds(pid: int) -> float:
    """Return a process's user + system CPU time (s) from /proc."""
    with open(f'/proc/{pid}/stat', 'r', encoding='ascii') as f:
        fields = f.read().rsplit(')', 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf('SC_CLK_TCK')


def _mount_ue(spec: SensorSpec):
    m = spec.mount
    return (m.x, -m.y, m.z), rotation_to_ue(m.roll, m.pitch, m.yaw)


def server_only(scenario: str, rig: List[SensorSpec], frames: int, dt: float
                ) -> Dict[str, float]:
    """Return frames/s and CPU ms per frame of the server's world in this process."""
    w = World(port=0, map_name=maplib.PREFIX + scenario)
    w.settings['fixed_delta_seconds'] = dt
    ego = w.spawn('vehicle.tesla.model3', {}, w.map.spawn_points[0])
    for spec in rig:
        w.spawn(spec.blueprint, carla_attributes(spec), _mount_ue(spec), parent=ego.aid)
    ego.vehicle.set_velocity((6.0, 0.0, 0.0))
    w.tick()
    t0, c0 = time.perf_counter(), time.process_time()
    for _ in range(frames):
        w.tick()
    fps = frames / (time.perf_counter() - t0)
    cpu = (time.process_time() - c0) / frames * 1e3
    w.pool.shutdown()
    return {'fps': fps, 'cpu': cpu}


def through_client(scenario: str, rig: List[SensorSpec], frames: int, dt: float
                   ) -> Dict[str, float]:
    """Return frames/s, bytes/frame and CPU ms/frame (server, client) via the client."""
    import carla
    with serve('--scenario', scenario) as s:
        client = s.client(20.0)
        world = client.get_world()
        synchronous(world, dt)
        lib = world.get_blueprint_library()
        start = world.get_map().get_spawn_points()[0]
        ego = world.spawn_actor(lib.find('vehicle.tesla.model3'), start)
        latest: Dict[int, int] = {}
        nbytes: Dict[int, int] = {}
        cond = threading.Condition()
        sensors = []
        for spec in rig:
            bp = lib.find(spec.blueprint)
            for k, v in carla_attributes(spec).items():
                bp.set_attribute(k, v)
            loc, rot = _mount_ue(spec)
            sensor = world.spawn_actor(bp, carla.Transform(carla.Location(*loc),
                                                           carla.Rotation(*rot)),
                                       attach_to=ego)

            def callback(data, sid=sensor.id):
                arr = np.frombuffer(data.raw_data, np.uint8).copy()
                with cond:
                    latest[sid] = data.frame
                    nbytes[sid] = arr.nbytes
                    cond.notify_all()
            sensor.listen(callback)
            sensors.append(sensor)
        ego.set_target_velocity(carla.Vector3D(6.0 * math.cos(math.radians(
            start.rotation.yaw)), 6.0 * math.sin(math.radians(start.rotation.yaw)), 0.0))
        time.sleep(0.5)

        def step() -> None:
            frame = world.tick()
            with cond:
                ok = cond.wait_for(lambda: all(latest.get(x.id, -1) >= frame
                                               for x in sensors), timeout=10.0)
            if not ok:
                raise RuntimeError(f'sensor data of frame {frame} missing')
        for _ in range(3):
            step()
        t0, c0, s0 = time.perf_counter(), time.process_time(), _cpu_seconds(s.proc.pid)
        for _ in range(frames):
            step()
        fps = frames / (time.perf_counter() - t0)
        client_cpu = (time.process_time() - c0) / frames * 1e3
        server_cpu = (_cpu_seconds(s.proc.pid) - s0) / frames * 1e3
        for sensor in sensors:
            sensor.stop()
            sensor.destroy()
        ego.destroy()
        synchronous(world, None)
    return {'fps': fps, 'bytes': float(sum(nbytes.values())), 'cpu': server_cpu,
            'client_cpu': client_cpu}


def through_backend(scenario: str, rig: List[SensorSpec], frames: int, dt: float
                    ) -> Dict[str, float]:
    """Return frames/s and CPU ms/frame (server, client) of ``CarlaBackend.step``."""
    from hil_bridge.carla_backend.backend import CarlaBackend
    with serve() as s:
        be = CarlaBackend(host='127.0.0.1', port=s.port, timeout=20.0,
                          fixed_delta_seconds=dt)
        try:
            be.setup(load_scenario(scenario), rig)
            be.apply_control(VehicleControl(throttle=0.3))
            for _ in range(3):
                be.step(dt)
            t0, c0, s0 = time.perf_counter(), time.process_time(), _cpu_seconds(s.proc.pid)
            for _ in range(frames):
                frame = be.step(dt)
            fps = frames / (time.perf_counter() - t0)
            client_cpu = (time.process_time() - c0) / frames * 1e3
            server_cpu = (_cpu_seconds(s.proc.pid) - s0) / frames * 1e3
            if set(frame.sensors) != {spec.sensor_id for spec in rig}:
                raise RuntimeError(f'frame {frame.frame} lacks sensors: {sorted(frame.sensors)}')
        finally:
            be.teardown()
    return {'fps': fps, 'cpu': server_cpu, 'client_cpu': client_cpu}


def builtin(scenario: str, rig: List[SensorSpec], frames: int, dt: float
            ) -> Dict[str, float]:
    """Return steps/s and CPU ms per step of the built-in backend with the same rig."""
    be = BuiltinBackend(seed=0)
    be.setup(load_scenario(scenario), rig)
    be.apply_control(VehicleControl(throttle=0.3))
    t0, c0 = time.perf_counter(), time.process_time()
    for _ in range(frames):
        be.step(dt)
    return {'fps': frames / (time.perf_counter() - t0),
            'cpu': (time.process_time() - c0) / frames * 1e3}


def main(argv=None) -> int:
    """Run the three measurements and print the table."""
    p = argparse.ArgumentParser(description=__doc__.split('\n')[1])
    p.add_argument('--frames', type=int, default=60)
    p.add_argument('--scenario', default='ci_trackdrive')
    p.add_argument('--rig', default='hil_rig')
    p.add_argument('--dt', type=float, default=0.05)
    p.add_argument('--repeats', type=int, default=2)
    args = p.parse_args(argv)
    rig = load_rig(args.rig)
    cams = sum(1 for s in rig if s.blueprint == 'sensor.camera.rgb')
    sizes = [(s.attributes.get('image_size_x'), s.attributes.get('image_size_y'))
             for s in rig if s.blueprint == 'sensor.camera.rgb']
    print(f'rig {args.rig}: {cams} cameras {sizes}, {len(rig) - cams} lidar; '
          f'scenario {args.scenario}; dt {args.dt} s; {args.frames} frames')
    runs: Dict[str, List[Dict[str, float]]] = {'client': [], 'server': [], 'builtin': [],
                                               'backend': []}
    for _ in range(args.repeats):        # interleaved: the machine's load varies
        runs['client'].append(through_client(args.scenario, rig, args.frames, args.dt))
        runs['backend'].append(through_backend(args.scenario, rig, args.frames, args.dt))
        runs['server'].append(server_only(args.scenario, rig, args.frames, args.dt))
        runs['builtin'].append(builtin(args.scenario, rig, args.frames, args.dt))
    best = {k: max(v, key=lambda r: r['fps']) for k, v in runs.items()}
    print(f'load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; best of '
          f'{args.repeats} runs')
    print(f'{"measurement":<26}{"frames/s":>10}{"x client":>10}{"CPU ms/frame":>14}')
    for name, key in (('through the client', 'client'), ('CARLA backend', 'backend'),
                      ('server only', 'server'), ('built-in backend', 'builtin')):
        r = best[key]
        print(f'{name:<26}{r["fps"]:>10.1f}{r["fps"] / best["client"]["fps"]:>10.2f}'
              f'{r["cpu"]:>14.1f}')
    print(f'  (through the client: server process {best["client"]["cpu"]:.1f} + client '
          f'process {best["client"]["client_cpu"]:.1f} CPU ms per frame)')
    print(f'  (CARLA backend: server process {best["backend"]["cpu"]:.1f} + bridge '
          f'process {best["backend"]["client_cpu"]:.1f} CPU ms per frame)')
    wall = 1e3 / best['backend']['fps'] - 1e3 / best['client']['fps']
    cpu = best['backend']['client_cpu'] - best['client']['client_cpu']
    print(f'bridge overhead per frame (CARLA backend - raw client): {wall:+.1f} ms wall, '
          f'{cpu:+.1f} ms CPU in the client process')
    print(f'sensor bytes per frame through the client: {best["client"]["bytes"] / 1e6:.2f} MB')
    return 0


if __name__ == '__main__':
    raise SystemExit(main())
