# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
A CARLA client written like the ROS 2 AEB tutorial, without ROS (plain carla).

The tutorial's scenario node spawns the ego ``vehicle.tesla.model3`` at
(0, 28, 1) and the target ``vehicle.lincoln.mkz_2020`` at (50, 28, 1),
gives the ego 5.5 m/s with ``set_target_velocity`` and reports both
vehicles' ``get_location()`` / ``get_velocity()`` periodically (1 Hz);
its AEB node computes TTC = (x_obj - x_ego) / (v_ego - v_obj) and applies
``carla.VehicleControl(brake=1, steer=0, throttle=0)`` when 0 < TTC < 3 s.
Nothing here knows it talks to ``carla-hil serve``: the world is left in
the server's (asynchronous) mode, as in the tutorial.

    python aeb_tutorial_client.py [--host H] [--port P] [--period S]
                                  [--duration S]

Prints one JSON line: final locations and speeds, whether and at which
TTC it braked, the smallest bumper gap seen (m).
"""

import argparse
import json
import sys
import time

import carla


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument('--host', default='localhost')
    p.add_argument('--port', type=int, default=2000)
    p.add_argument('--period', type=float, default=1.0, help='polling period (s)')
    p.add_argument('--duration', type=float, default=30.0, help='wall seconds')
    args = p.parse_args()

    client = carla.Client(args.host, args.port)
    client.set_timeout(10.0)
    world = client.get_world()
    bp_lib = world.get_blueprint_library()

    # scenario node: spawn both vehicles, give the ego 5.5 m/s
    ego_bp = bp_lib.find('vehicle.tesla.model3')
    ego_bp.set_attribute('role_name', 'ego_vehicle')
    ego = world.spawn_actor(ego_bp, carla.Transform(carla.Location(x=0.0, y=28.0, z=1.0)))
    target_bp = bp_lib.find('vehicle.lincoln.mkz_2020')
    target = world.spawn_actor(target_bp,
                               carla.Transform(carla.Location(x=50.0, y=28.0, z=1.0)))
    ego.set_target_velocity(carla.Vector3D(5.5, 0.0, 0.0))
    world.wait_for_tick()          # both actors are in the world snapshot

    half = ego.bounding_box.extent.x + target.bounding_box.extent.x
    braked_at = None
    min_gap = float('inf')
    t_end = time.monotonic() + args.duration
    try:
        while time.monotonic() < t_end:
            # poses and twists as the scenario node publishes them
            x_ego = ego.get_location().x
            v_ego = ego.get_velocity().x
            x_obj = target.get_location().x
            v_obj = target.get_velocity().x
            min_gap = min(min_gap, x_obj - x_ego - half)
            # AEB node
            if v_ego - v_obj != 0.0:
                ttc = (x_obj - x_ego) / (v_ego - v_obj)
                if 0.0 < ttc < 3.0 and braked_at is None:
                    ego.apply_control(carla.VehicleControl(brake=1.0, steer=0.0,
                                                           throttle=0.0))
                    braked_at = ttc
            if braked_at is not None and abs(v_ego) < 0.01:
                break
            time.sleep(args.period)
        out = {'ego_x': ego.get_location().x, 'ego_y': ego.get_location().y,
               'ego_speed': ego.get_velocity().length(),
               'target_x': target.get_location().x, 'braked_at_ttc': braked_at,
               'min_gap': min_gap}
    finally:
        ego.destroy()
        target.destroy()
    print(json.dumps(out), flush=True)
    return 0


if __name__ == '__main__':
    sys.exit(main())
