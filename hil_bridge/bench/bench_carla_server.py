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
* ``built-in backend``: ``BuiltinBackend.step`` with the same rig (the
  project's simulator without any wire), the reference;

each with its ratio to the client figure, measured in the same run
(interleaved ``--repeats`` times, the best of each kept). When
``server only`` is well above ``through the client`` the server is not the
bottleneck (client decode and the GIL are). Also prints the bytes per
frame on the wire.
"""

import argparse
import math
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


def _mount_ue(spec: SensorSpec):
    m = spec.mount
    return (m.x, -m.y, m.z), rotation_to_ue(m.roll, m.pitch, m.yaw)


def server_only(scenario: str, rig: List[SensorSpec], frames: int, dt: float) -> float:
    """Return frames/s of the server's world in this process."""
    w = World(port=0, map_name=maplib.PREFIX + scenario)
    w.settings['fixed_delta_seconds'] = dt
    ego = w.spawn('vehicle.tesla.model3', {}, w.map.spawn_points[0])
    for spec in rig:
        w.spawn(spec.blueprint, carla_attributes(spec), _mount_ue(spec), parent=ego.aid)
    ego.vehicle.set_velocity((6.0, 0.0, 0.0))
    w.tick()
    t0 = time.perf_counter()
    for _ in range(frames):
        w.tick()
    fps = frames / (time.perf_counter() - t0)
    w.pool.shutdown()
    return fps


def through_client(scenario: str, rig: List[SensorSpec], frames: int, dt: float
                   ) -> Dict[str, float]:
    """Return frames/s and bytes/frame through the real client."""
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
        t0 = time.perf_counter()
        for _ in range(frames):
            step()
        fps = frames / (time.perf_counter() - t0)
        for sensor in sensors:
            sensor.stop()
            sensor.destroy()
        ego.destroy()
        synchronous(world, None)
    return {'fps': fps, 'bytes': float(sum(nbytes.values()))}


def builtin(scenario: str, rig: List[SensorSpec], frames: int, dt: float) -> float:
    """Return steps/s of the built-in backend with the same rig."""
    be = BuiltinBackend(seed=0)
    be.setup(load_scenario(scenario), rig)
    be.apply_control(VehicleControl(throttle=0.3))
    t0 = time.perf_counter()
    for _ in range(frames):
        be.step(dt)
    return frames / (time.perf_counter() - t0)


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
    best = {'client': 0.0, 'server': 0.0, 'builtin': 0.0}
    wire = {}
    for _ in range(args.repeats):        # interleaved: the machine's load varies
        wire = through_client(args.scenario, rig, args.frames, args.dt)
        best['client'] = max(best['client'], wire['fps'])
        best['server'] = max(best['server'], server_only(args.scenario, rig,
                                                         args.frames, args.dt))
        best['builtin'] = max(best['builtin'], builtin(args.scenario, rig,
                                                       args.frames, args.dt))
    print(f'{"measurement (best of " + str(args.repeats) + ")":<26}{"frames/s":>10}'
          f'{"x client":>10}')
    for name, key in (('through the client', 'client'), ('server only', 'server'),
                      ('built-in backend', 'builtin')):
        print(f'{name:<26}{best[key]:>10.1f}{best[key] / best["client"]:>10.2f}')
    print(f'sensor bytes per frame through the client: {wire["bytes"] / 1e6:.2f} MB')
    return 0


if __name__ == '__main__':
    raise SystemExit(main())
