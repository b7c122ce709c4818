# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
CARLA client code nobody here wrote: the patterns of CARLA's own examples.

Written the way CARLA users write scripts (``tutorial.py``,
``synchronous_mode.py``'s queue-per-sensor context manager,
``sensor_synchronization.py``, ``generate_traffic.py``'s batches), run with
the real carla==0.9.16 client against ``carla-hil serve``: ``world.on_tick``,
``wait_for_tick`` in asynchronous mode, ``save_to_disk`` with colour
converters, blueprint and actor filters, spawn points, ``try_spawn_actor`` on
an occupied point, waypoints, the spectator, weather and debug drawing, and
autopilot requests answered with a clear error instead of a hang.
"""

import queue
import random
import time

from hil_bridge.carla_server.launcher import destroy_all, restore_async, served_world, wait_for
import numpy as np
import pytest

carla = pytest.importorskip('carla')


@pytest.fixture(scope='module')
def server():
    """Run one server for the module (asynchronous until a test switches)."""
    with served_world(delta=None) as served:
        yield served


@pytest.fixture
def world(server):
    """Yield the world; afterwards every actor is destroyed, the server asynchronous."""
    yield server[2]
    restore_async(server[1])
    destroy_all(server[1], server[2])


class SyncMode:
    """
    The synchronous-mode context manager CARLA users write.

    On enter: synchronous settings and one queue fed by ``world.on_tick``
    and one by each sensor's ``listen``; ``tick`` returns the snapshot and
    every sensor's data of the new frame.
    """

    def __init__(self, world, *sensors, dt=0.05):
        self.world, self.sensors, self.dt = world, sensors, dt
        self.queues = []

    def __enter__(self):
        self.settings = self.world.get_settings()
        self.frame = self.world.apply_settings(carla.WorldSettings(
            no_rendering_mode=False, synchronous_mode=True, fixed_delta_seconds=self.dt))
        for register in [self.world.on_tick] + [s.listen for s in self.sensors]:
            q = queue.Queue()
            register(q.put)
            self.queues.append(q)
        return self

    def tick(self, timeout=2.0):
        self.frame = self.world.tick()
        out = []
        for q in self.queues:
            while True:
                data = q.get(timeout=timeout)
                if data.frame == self.frame:
                    out.append(data)
                    break
        return out

    def __exit__(self, *exc):
        for s in self.sensors:
            s.stop()
        self.world.apply_settings(self.settings)


def test_on_tick_and_wait_for_tick_in_asynchronous_mode(world):
    snaps = []
    cb = world.on_tick(snaps.append)
    try:
        first = world.wait_for_tick(2.0).frame
        assert wait_for(lambda: len(snaps) >= 5, 5.0)
    finally:
        world.remove_on_tick(cb)
    frames = [s.frame for s in snaps]
    assert frames == sorted(frames) and len(set(frames)) == len(frames)
    assert frames[-1] > first
    n = len(snaps)
    world.wait_for_tick(2.0)
    world.wait_for_tick(2.0)
    assert len(snaps) <= n + 1                    # removed: at most one in flight


def test_synchronous_mode_loop_with_queues(world, tmp_path):
    """A car, an RGB camera and a lidar; every tick gives each one's data of that frame."""
    lib = world.get_blueprint_library()
    spawn = world.get_map().get_spawn_points()[0]
    car = world.spawn_actor(lib.find('vehicle.tesla.model3'), spawn)
    cam_bp = lib.find('sensor.camera.rgb')
    cam_bp.set_attribute('image_size_x', '128')
    cam_bp.set_attribute('image_size_y', '96')
    cam = world.spawn_actor(cam_bp, carla.Transform(carla.Location(x=-5.5, z=2.8),
                                                    carla.Rotation(pitch=-15)), attach_to=car)
    lidar_bp = lib.find('sensor.lidar.ray_cast')
    lidar_bp.set_attribute('range', '30')
    lidar = world.spawn_actor(lidar_bp, carla.Transform(carla.Location(z=2.0)),
                              attach_to=car)
    car.apply_control(carla.VehicleControl(throttle=0.5))
    with SyncMode(world, cam, lidar) as sync:
        for _ in range(5):
            snapshot, image, scan = sync.tick()
        assert snapshot.frame == image.frame == scan.frame == sync.frame
        assert world.get_settings().synchronous_mode
        image.save_to_disk(str(tmp_path / ('%06d.png' % image.frame)))
        points = np.frombuffer(scan.raw_data, dtype=np.dtype('f4')).reshape(-1, 4)
    assert not world.get_settings().synchronous_mode            # restored
    import cv2
    saved = cv2.imread(str(tmp_path / ('%06d.png' % image.frame)))
    raw = np.frombuffer(image.raw_data, np.uint8).reshape(96, 128, 4)
    np.testing.assert_array_equal(saved, raw[:, :, :3])
    assert len(points) == len(scan) > 100
    assert np.all(np.abs(points[:, 2] + 2.0) < 0.05)   # a flat world: the ground, 2 m down
    assert snapshot.find(car.id).get_velocity().x > 0.1


def test_tutorial_like_script(world, tmp_path):
    """tutorial.py's steps, without the autopilot (see the next test)."""
    lib = world.get_blueprint_library()
    rng = random.Random(3)
    bp = rng.choice(lib.filter('vehicle'))
    if bp.has_attribute('color'):
        bp.set_attribute('color', rng.choice(bp.get_attribute('color').recommended_values))
    transform = rng.choice(world.get_map().get_spawn_points())
    vehicle = world.spawn_actor(bp, transform)
    actors = [vehicle]
    cam = world.spawn_actor(lib.find('sensor.camera.depth'),
                            carla.Transform(carla.Location(x=1.5, z=2.4)), attach_to=vehicle)
    actors.append(cam)
    saved = []

    def save(image):
        path = tmp_path / ('%06d.png' % image.frame)
        image.save_to_disk(str(path), carla.ColorConverter.LogarithmicDepth)
        saved.append(path)
    cam.listen(save)
    location = vehicle.get_location()
    location.x += 40
    vehicle.set_location(location)
    transform.location += carla.Location(x=40, y=-3.2)
    transform.rotation.yaw = -180.0
    for _ in range(10):
        transform.location.x += 8.0
        npc = world.try_spawn_actor(rng.choice(lib.filter('vehicle')), transform)
        if npc is not None:
            actors.append(npc)
    assert len(actors) == 12
    blocked = world.try_spawn_actor(bp, transform)       # where the last one stands
    assert blocked is None
    try:
        assert wait_for(lambda: len(saved) >= 3, 5.0)    # asynchronous: 20 frames/s
    finally:
        cam.stop()
    assert all(p.stat().st_size > 0 for p in saved)
    world.wait_for_tick(2.0)            # get_actors() reads the newest snapshot
    assert world.get_actor(vehicle.id).get_location().x == pytest.approx(location.x, abs=0.5)
    assert len(world.get_actors().filter('vehicle.*')) == 11
    assert len(world.get_actors([a.id for a in actors])) == 12


def test_autopilot_is_a_clear_error_not_a_hang(server, world):
    """generate_traffic.py's batch, set_autopilot and get_trafficmanager: one-line errors."""
    _s, client, _w = server
    lib = world.get_blueprint_library()
    points = world.get_map().get_spawn_points()
    SpawnActor, SetAutopilot, FutureActor = (carla.command.SpawnActor,
                                             carla.command.SetAutopilot,
                                             carla.command.FutureActor)
    batch = [SpawnActor(lib.find('vehicle.tesla.model3'), p).then(
        SetAutopilot(FutureActor, True, 8000)) for p in points[:3]]
    t0 = time.monotonic()
    responses = client.apply_batch_sync(batch, False)
    assert all('traffic manager (autopilot) is not supported' in r.error for r in responses)
    world.wait_for_tick(2.0)
    world.wait_for_tick(2.0)
    assert len(world.get_actors().filter('vehicle.*')) == 0     # nothing left behind
    car = world.spawn_actor(lib.find('vehicle.tesla.model3'), points[0])
    with pytest.raises(RuntimeError, match='traffic manager'):
        car.set_autopilot(True)
    with pytest.raises(RuntimeError, match='traffic manager'):
        client.get_trafficmanager(8000)
    responses = client.apply_batch_sync([SetAutopilot(car.id, True, 8000)])
    assert 'not supported' in responses[0].error
    assert time.monotonic() - t0 < 5.0                   # no traffic manager time-outs


def test_waypoints_on_the_road(world):
    m = world.get_map()
    wp = m.get_waypoint(carla.Location(30.0, 27.0, 0.0), project_to_road=True,
                        lane_type=carla.LaneType.Driving)
    assert wp.transform.location.y == pytest.approx(28.0, abs=1e-3)
    assert wp.lane_width == pytest.approx(3.5) and wp.lane_type == carla.LaneType.Driving
    ahead = wp.next(5.0)[0]
    assert ahead.transform.location.x == pytest.approx(35.0, abs=1e-3)
    left = wp.get_left_lane()
    assert left.transform.location.y == pytest.approx(24.5, abs=1e-3)
    assert left.lane_id * wp.lane_id < 0                 # the opposite direction
    assert wp.left_lane_marking.type == carla.LaneMarkingType.Broken
    assert wp.right_lane_marking.type == carla.LaneMarkingType.Solid
    every = m.generate_waypoints(2.0)
    assert len(every) > 300
    assert {round(w.transform.location.y, 3) for w in every} == {24.5, 28.0}
    assert m.get_topology()
    off = m.get_waypoint(carla.Location(0.0, -50.0, 0.0), project_to_road=False)
    assert off is None


def test_spectator_weather_and_debug(world):
    spectator = world.get_spectator()
    spectator.set_transform(carla.Transform(carla.Location(5.0, 28.0, 30.0),
                                            carla.Rotation(pitch=-90.0)))
    world.wait_for_tick(2.0)
    world.wait_for_tick(2.0)
    assert spectator.get_transform().location.z == pytest.approx(30.0, abs=1e-3)
    world.set_weather(carla.WeatherParameters.ClearNoon)
    assert world.get_weather().sun_altitude_angle == pytest.approx(
        carla.WeatherParameters.ClearNoon.sun_altitude_angle)
    world.debug.draw_point(carla.Location(1.0, 28.0, 1.0), life_time=1.0)
    world.debug.draw_string(carla.Location(1.0, 28.0, 2.0), 'hil', life_time=1.0)
    assert world.wait_for_tick(2.0).frame > 0
