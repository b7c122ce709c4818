# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
Built-in maps of ``carla-hil serve`` through the real 0.9.16 client.

``--scenario ci_trackdrive`` starts on ``HIL_ci_trackdrive``: its spawn
point is the track's car start (the actor origin, CARLA's frame), its
track cones are level geometry that the lidar sees where the scenario put
them and that a car knocks over (a collision event names the cone's class,
the cone then vanishes from the sensors). ``--fs-cones`` adds the
Formula Student cone blueprints (an extension, not in stock CARLA), drawn
in their colours. ``load_world`` switches maps (a new episode).
"""

import math

from hil_bridge.bridge.scenario import load_scenario
from hil_bridge.carla_server.launcher import record, serve, synchronous
from hil_bridge.interface.vehicle_profile import load_vehicle_profile
import numpy as np
import pytest

carla = pytest.importorskip('carla')


@pytest.fixture(scope='module')
def server():
    """Run a server on the ci_trackdrive map with the FS cone extension."""
    with serve('--scenario', 'ci_trackdrive', '--fs-cones') as s:
        client = s.client()
        world = client.get_world()
        synchronous(world, 0.05)
        yield s, client, world


def _lidar_bp(world):
    bp = world.get_blueprint_library().find('sensor.lidar.ray_cast')
    for k, v in (('channels', '1'), ('range', '20'), ('points_per_second', '21600'),
                 ('rotation_frequency', '20'), ('upper_fov', '0'), ('lower_fov', '0'),
                 ('horizontal_fov', '270'), ('dropoff_general_rate', '0'),
                 ('dropoff_zero_intensity', '0')):
        bp.set_attribute(k, v)
    return bp


def test_track_cones_are_map_props_the_lidar_sees(server):
    _s, _client, world = server
    sc = load_scenario('ci_trackdrive')
    m = world.get_map()
    assert m.name == 'Carla/Maps/HIL_ci_trackdrive'
    start = m.get_spawn_points()[0]
    car = sc.track.car_start
    offset = load_vehicle_profile(sc.ego.profile).box_offset
    assert start.location.x == pytest.approx(car.x + offset * math.cos(car.yaw), abs=1e-3)
    assert start.location.y == pytest.approx(-(car.y + offset * math.sin(car.yaw)), abs=1e-3)
    assert start.rotation.yaw == pytest.approx(-math.degrees(car.yaw), abs=1e-3)
    assert len(world.get_actors().filter('static.*')) == 0      # not actors
    ego = world.spawn_actor(world.get_blueprint_library().find('vehicle.tesla.model3'),
                            start)
    lidar = world.spawn_actor(_lidar_bp(world), carla.Transform(carla.Location(1.5, 0, 0.1)),
                              attach_to=ego)
    meas = record(world, lidar, 3)[-1]
    pts = np.frombuffer(meas.raw_data, np.float32).reshape(-1, 4)
    assert len(pts) > 50
    world_pts = [meas.transform.transform(carla.Location(*map(float, p[:3]))) for p in pts]
    cones_ue = np.column_stack([sc.track.cones.xy[:, 0], -sc.track.cones.xy[:, 1]])
    for p in world_pts:
        d = np.hypot(cones_ue[:, 0] - p.x, cones_ue[:, 1] - p.y).min()
        assert d < 0.15                                 # on a cone of the track
    lidar.destroy()
    ego.destroy()


def test_a_car_knocks_a_map_cone_over(server):
    _s, _client, world = server
    sc = load_scenario('ci_trackdrive')
    xy = sc.track.cones.xy[0]
    # a car 6 m before the first cone, pointing at it
    ego = world.spawn_actor(world.get_blueprint_library().find('vehicle.tesla.model3'),
                            carla.Transform(carla.Location(float(xy[0]) - 6.0,
                                                           -float(xy[1]), 0.5)))
    col = world.spawn_actor(world.get_blueprint_library().find('sensor.other.collision'),
                            carla.Transform(), attach_to=ego)
    ego.apply_control(carla.VehicleControl(throttle=0.6))
    events = record(world, col, 100, until=bool)
    assert events, 'no collision with the map cone'
    names = {'blue', 'yellow', 'orange', 'big_orange'}
    other = events[0].other_actor.type_id
    assert other.startswith('static.prop.fs_cone_') and other.split('fs_cone_')[1] in names
    assert events[0].actor.id == ego.id
    x_hit = ego.get_location().x
    for _ in range(10):
        world.tick()
    assert ego.get_location().x > x_hit + 0.2             # knocked over: the car drives on
    col.destroy()
    ego.destroy()


def test_fs_cone_extension_is_drawn_blue(server):
    _s, _client, world = server
    lib = world.get_blueprint_library()
    assert {'static.prop.fs_cone_blue', 'static.prop.fs_cone_yellow',
            'static.prop.fs_cone_orange', 'static.prop.fs_cone_big_orange'} <= \
        {bp.id for bp in lib.filter('static.prop.fs_cone_*')}
    origin = carla.Location(0.0, 300.0, 0.5)                  # away from the track
    ego = world.spawn_actor(lib.find('vehicle.tesla.model3'), carla.Transform(origin))
    cone = world.spawn_actor(lib.find('static.prop.fs_cone_blue'),
                             carla.Transform(carla.Location(4.0, 300.0, 0.0)))
    assert cone.bounding_box.extent.z == pytest.approx(0.325 / 2.0)
    cam_bp = lib.find('sensor.camera.rgb')
    cam_bp.set_attribute('image_size_x', '160')
    cam_bp.set_attribute('image_size_y', '120')
    cam = world.spawn_actor(cam_bp, carla.Transform(carla.Location(0.5, 0.0, 0.6)),
                            attach_to=ego)
    img = np.frombuffer(record(world, cam, 3)[-1].raw_data, np.uint8).reshape(120, 160, 4)
    centre = img[55:90, 75:85, :3].astype(int)
    blue = (centre[..., 0] > 150) & (centre[..., 2] < 80)
    assert blue.sum() > 10
    for a in (cam, cone, ego):
        a.destroy()


def test_load_world_switches_maps(server):
    _s, client, world = server
    old_id = world.id
    flat = client.load_world('HIL_Flat')
    assert flat.id != old_id
    assert flat.get_map().name == 'Carla/Maps/HIL_Flat'
    assert not flat.get_settings().synchronous_mode             # reset_settings
    back = client.load_world('/Game/Carla/Maps/HIL_ci_trackdrive')
    assert back.get_map().name == 'Carla/Maps/HIL_ci_trackdrive'
    assert len(back.get_actors()) == 1                          # the spectator
    car = back.spawn_actor(back.get_blueprint_library().find('vehicle.tesla.model3'),
                           back.get_map().get_spawn_points()[0])
    again = client.reload_world()                               # same map, new episode
    assert again.id != back.id and again.get_map().name == back.get_map().name
    assert [a.type_id for a in again.get_actors()] == ['spectator']
    other = again.spawn_actor(again.get_blueprint_library().find('vehicle.tesla.model3'),
                              again.get_map().get_spawn_points()[0])
    assert other.id > car.id                                    # ids never repeat
