# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
``carla-hil serve`` through the real carla==0.9.16 client (synchronous mode).

One server per module (a subprocess: the client holds the GIL while it
waits). Every call a CARLA script issues is exercised, and the data the
client decodes is checked against the simulator: an in-process
:class:`hil_bridge.carla_server.world.World` fed the same requests gives
the same states and the same camera image, lidar points land on the cone
where it stands (mapped to the world with CARLA's own ``Transform``), and
turning left is a negative UE yaw rate.
"""

import math

from hil_bridge.carla_server import sensor_data as sd
from hil_bridge.carla_server.launcher import (blueprint, destroy_all, record, restore_async,
                                              served_world, synchronous)
from hil_bridge.carla_server.world import World
import numpy as np
import pytest

carla = pytest.importorskip('carla')

DT = 0.05


@pytest.fixture(scope='module')
def server():
    """Run one server for the module (synchronous, 50 ms steps)."""
    with served_world(delta=DT) as served:
        yield served


@pytest.fixture
def clean(server):
    """Destroy every actor a test spawned (apply_batch_sync)."""
    yield server
    destroy_all(server[1], server[2])


_bp = blueprint


def test_version_map_and_spawn_points(server):
    s, client, world = server
    assert client.get_server_version() == '0.9.16'
    assert client.get_client_version() == '0.9.16'
    m = world.get_map()
    assert m.name == 'Carla/Maps/HIL_Flat'
    points = [(p.location.x, p.location.y) for p in m.get_spawn_points()]
    assert (0.0, 28.0) in points and (50.0, 28.0) in points
    wp = m.get_waypoint(carla.Location(50.0, 28.0, 0.0))
    assert abs(wp.transform.location.y - 28.0) < 1e-3 and wp.lane_id == -1
    assert '/Game/Carla/Maps/HIL_ci_trackdrive' in client.get_available_maps()


def test_unknown_map_is_a_clear_error(server):
    _s, client, world = server
    with pytest.raises(RuntimeError, match="map 'Town01' not found"):
        client.load_world('Town01')
    assert world.get_map().name == 'Carla/Maps/HIL_Flat'


def test_settings_round_trip_and_extra_frames(server):
    _s, _client, world = server
    f0 = world.get_snapshot().frame
    settings = world.get_settings()
    assert settings.synchronous_mode and abs(settings.fixed_delta_seconds - DT) < 1e-9
    settings.fixed_delta_seconds = 0.1
    world.apply_settings(settings)
    snap = world.get_snapshot()
    # the client ticks until two snapshots show the new delta: 2 frames
    assert snap.frame == f0 + 2
    assert abs(snap.timestamp.delta_seconds - 0.1) < 1e-6
    assert abs(world.get_settings().fixed_delta_seconds - 0.1) < 1e-9
    settings.fixed_delta_seconds = DT
    world.apply_settings(settings)
    assert world.get_snapshot().frame == f0 + 4


def test_tick_advances_one_frame(server):
    _s, _client, world = server
    before = world.get_snapshot()
    frame = world.tick()
    snap = world.get_snapshot()
    assert frame == before.frame + 1 == snap.frame
    assert abs(snap.timestamp.elapsed_seconds - before.timestamp.elapsed_seconds
               - DT) < 1e-6
    assert abs(snap.timestamp.delta_seconds - DT) < 1e-6


def test_blueprint_library(server):
    _s, _client, world = server
    lib = world.get_blueprint_library()
    ids = {bp.id for bp in lib}
    assert {'vehicle.tesla.model3', 'vehicle.lincoln.mkz_2020',
            'static.prop.trafficcone01', 'static.prop.trafficcone02',
            'static.prop.constructioncone', 'sensor.lidar.ray_cast',
            'sensor.camera.rgb', 'sensor.other.collision'} <= ids
    assert not any('fs_cone' in i for i in ids)      # extension is opt-in
    assert len(lib.filter('static.prop.*cone*')) == 3
    car = lib.find('vehicle.tesla.model3')
    role = car.get_attribute('role_name')
    assert role.type == carla.ActorAttributeType.String and role.is_modifiable
    assert list(role.recommended_values) == ['autopilot', 'scenario', 'ego_vehicle']
    assert car.get_attribute('color').type == carla.ActorAttributeType.RGBColor
    wheels = car.get_attribute('number_of_wheels')
    assert wheels.as_int() == 4 and not wheels.is_modifiable
    with pytest.raises(ValueError, match='read-only'):
        car.set_attribute('number_of_wheels', '3')
    cam = lib.find('sensor.camera.rgb')
    assert cam.get_attribute('image_size_x').as_int() == 800
    assert cam.get_attribute('fov').as_float() == pytest.approx(90.0)
    assert cam.get_attribute('sensor_tick').as_float() == 0.0
    with pytest.raises(ValueError, match='invalid bool'):
        cam.set_attribute('enable_postprocess_effects', 'maybe')
    cam.set_attribute('exposure_mode', 'auto')            # the server checks these
    with pytest.raises(RuntimeError, match="'exposure_mode' = 'auto' is not one of"):
        world.spawn_actor(cam, carla.Transform())
    cam.set_attribute('exposure_mode', 'manual')
    cam.set_attribute('image_size_x', 'wide')
    with pytest.raises(RuntimeError, match="'image_size_x' = 'wide' is not a number"):
        world.spawn_actor(cam, carla.Transform())
    lidar = lib.find('sensor.lidar.ray_cast')
    expected = {'channels': 32, 'range': 10.0, 'points_per_second': 56000,
                'rotation_frequency': 10.0, 'upper_fov': 10.0, 'lower_fov': -30.0,
                'horizontal_fov': 360.0, 'dropoff_general_rate': 0.45,
                'noise_stddev': 0.0, 'atmosphere_attenuation_rate': 0.004}
    for key, value in expected.items():
        a = lidar.get_attribute(key)
        assert float(a.as_float() if a.type == carla.ActorAttributeType.Float
                     else a.as_int()) == pytest.approx(value), key
    assert lib.find('sensor.other.collision').has_attribute('role_name')
    assert lib.find('static.prop.trafficcone01').get_attribute('size').as_str() == 'small'


def test_spawn_destroy_and_batches(clean):
    _s, client, world = clean
    cone = world.get_blueprint_library().find('static.prop.trafficcone01')
    batch = [carla.command.SpawnActor(cone, carla.Transform(carla.Location(x, 5.0, 0.0)))
             for x in range(5)]
    responses = client.apply_batch_sync(batch, True)
    assert not any(r.error for r in responses)
    ids = [r.actor_id for r in responses]
    assert len(set(ids)) == 5
    props = world.get_actors().filter('static.prop.trafficcone01')
    assert sorted(a.id for a in props) == sorted(ids)
    assert props.find(ids[3]).get_location().x == pytest.approx(3.0)
    gone = client.apply_batch_sync([carla.command.DestroyActor(i) for i in ids[:2]])
    assert not any(r.error for r in gone)
    again = client.apply_batch_sync([carla.command.DestroyActor(ids[0])])
    assert again[0].error and 'not found' in again[0].error
    world.tick()
    assert len(world.get_actors().filter('static.prop.*')) == 3
    # a vehicle spawned onto another one fails, as in CARLA
    car = world.get_blueprint_library().find('vehicle.tesla.model3')
    first = world.spawn_actor(car, carla.Transform(carla.Location(0.0, 0.0, 1.0)))
    assert world.try_spawn_actor(car, carla.Transform(carla.Location(1.0, 0.5, 1.0))) is None
    with pytest.raises(RuntimeError, match='collision at spawn position'):
        world.spawn_actor(car, carla.Transform(carla.Location(1.0, 0.5, 1.0)))
    # the 0.9.16 client's destroy() asks the server only for an actor of the
    # last snapshot it has (else: "already dead", False): tick first
    world.tick()
    assert first.destroy()
    assert not first.is_alive


def test_snapshot_equals_the_simulator(clean):
    _s, client, world = clean
    car = _bp(world, 'vehicle.tesla.model3', role_name='ego')
    tf = carla.Transform(carla.Location(10.0, -20.0, 1.0), carla.Rotation(yaw=30.0))
    ego = world.spawn_actor(car, tf)
    ego.set_target_velocity(carla.Vector3D(4.0, 2.0, 0.0))
    ego.apply_control(carla.VehicleControl(throttle=0.4, steer=-0.2))
    snaps = []
    for _ in range(20):
        world.tick()
        snaps.append(world.get_snapshot().find(ego.id))
    # the same requests on an in-process world
    from hil_bridge.bridge.backend import VehicleControl
    ref = World(port=0, rate=1.0 / DT)
    ref.settings['fixed_delta_seconds'] = DT
    a = ref.spawn('vehicle.tesla.model3', {'role_name': 'ego'},
                  ((10.0, -20.0, 1.0), (0.0, 30.0, 0.0)))
    v = (4.0, 2.0, 0.0)
    a.vehicle.set_velocity((v[0], -v[1], v[2]))
    a.vehicle.control = VehicleControl(throttle=0.4, steer=-0.2)
    recs = []
    for _ in range(20):
        ref.tick()
        states = ref._states()
        recs.append(states[states['id'] == a.aid][0])
    for snap, rec in zip(snaps, recs):
        t = snap.get_transform()
        got = [t.location.x, t.location.y, t.location.z, t.rotation.pitch,
               t.rotation.yaw, t.rotation.roll]
        np.testing.assert_allclose(got, rec['transform'], atol=1e-4)
        vel = snap.get_velocity()
        np.testing.assert_allclose([vel.x, vel.y, vel.z], rec['velocity'], atol=1e-4)
        w = snap.get_angular_velocity()
        np.testing.assert_allclose([w.x, w.y, w.z], rec['angular_velocity'], atol=1e-3)
        acc = snap.get_acceleration()
        np.testing.assert_allclose([acc.x, acc.y, acc.z], rec['acceleration'], atol=1e-3)
    # steer < 0 turns left: yaw decreases in UE, the yaw rate is negative
    assert snaps[-1].get_transform().rotation.yaw < 30.0 - 5.0
    assert snaps[-1].get_angular_velocity().z < -1.0
    assert ego.get_control().steer == pytest.approx(-0.2)
    assert ego.get_control().throttle == pytest.approx(0.4)
    assert len(world.get_snapshot()) == len(world.get_actors())


def test_transforms_and_velocities(clean):
    _s, _client, world = clean
    ego = world.spawn_actor(_bp(world, 'vehicle.lincoln.mkz_2020'),
                            carla.Transform(carla.Location(0.0, 28.0, 1.0)))
    world.tick()
    assert ego.get_location().z == pytest.approx(0.0)      # on the ground
    box = ego.bounding_box
    assert box.extent.x > 2.0 and box.extent.y > 1.0 and box.location.z > 0.5
    ego.set_transform(carla.Transform(carla.Location(5.0, 30.0, 0.0),
                                      carla.Rotation(yaw=90.0)))
    ego.set_target_velocity(carla.Vector3D(0.0, 3.0, 0.0))   # along +y = its heading
    world.tick()
    t = ego.get_transform()
    assert t.rotation.yaw == pytest.approx(90.0, abs=1e-3)
    assert t.location.x == pytest.approx(5.0, abs=1e-3)
    assert t.location.y == pytest.approx(30.0 + 3.0 * DT, abs=0.01)
    v = ego.get_velocity()
    assert v.y == pytest.approx(3.0, abs=0.05) and abs(v.x) < 1e-3
    ego.set_location(carla.Location(7.0, 30.0, 0.0))
    world.tick()
    assert ego.get_transform().rotation.yaw == pytest.approx(90.0, abs=1e-3)
    assert ego.get_location().x == pytest.approx(7.0, abs=1e-3)
    prop = world.spawn_actor(_bp(world, 'static.prop.constructioncone'),
                             carla.Transform(carla.Location(3.0, 4.0, 0.2)))
    prop.set_target_velocity(carla.Vector3D(5.0, 0.0, 0.0))   # no physics: stays
    world.tick()
    assert (prop.get_location().x, prop.get_location().z) == pytest.approx((3.0, 0.2))


def test_steering_follows_physics_control(clean):
    _s, _client, world = clean
    ego = world.spawn_actor(_bp(world, 'vehicle.tesla.model3'),
                            carla.Transform(carla.Location(0.0, 0.0, 0.5)))
    pc = ego.get_physics_control()
    assert [w.max_steer_angle for w in pc.wheels] == [70.0, 70.0, 0.0, 0.0]
    assert pc.mass > 1000.0 and len(pc.steering_curve) >= 2
    ego.apply_control(carla.VehicleControl(steer=0.5))      # standing: curve 1
    for _ in range(40):
        world.tick()
    fl = ego.get_wheel_steer_angle(carla.VehicleWheelLocation.FL_Wheel)
    assert fl == pytest.approx(35.0, abs=0.3)                # 0.5 x 70 deg
    assert ego.get_wheel_steer_angle(carla.VehicleWheelLocation.BL_Wheel) == 0.0
    wheels = pc.wheels                                       # copies

    wheels[0].max_steer_angle = wheels[1].max_steer_angle = 40.0
    pc.wheels = wheels
    ego.apply_physics_control(pc)
    for _ in range(40):
        world.tick()
    assert [w.max_steer_angle for w in ego.get_physics_control().wheels] == \
        [40.0, 40.0, 0.0, 0.0]
    assert ego.get_wheel_steer_angle(carla.VehicleWheelLocation.FR_Wheel) == \
        pytest.approx(20.0, abs=0.3)
    ego.apply_control(carla.VehicleControl(steer=-1.0))      # full left
    for _ in range(40):
        world.tick()
    assert ego.get_wheel_steer_angle(carla.VehicleWheelLocation.FL_Wheel) == \
        pytest.approx(-40.0, abs=0.3)


def test_lidar_points_land_on_the_cone(clean):
    _s, _client, world = clean
    ego = world.spawn_actor(_bp(world, 'vehicle.tesla.model3'),
                            carla.Transform(carla.Location(0.0, 0.0, 0.5)))
    cone_at = carla.Location(5.0, 1.5, 0.0)       # 1.5 m to the RIGHT in UE
    world.spawn_actor(_bp(world, 'static.prop.trafficcone01'), carla.Transform(cone_at))
    lidar = world.spawn_actor(
        _bp(world, 'sensor.lidar.ray_cast', channels=1, range=20,
            points_per_second=21600, rotation_frequency=20, upper_fov=0,
            lower_fov=0, horizontal_fov=270, dropoff_general_rate=0,
            dropoff_zero_intensity=0),
        carla.Transform(carla.Location(1.2, 0.0, 0.1)), attach_to=ego)
    m = record(world, lidar, 3)[-1]
    assert m.channels == 1 and m.get_point_count(0) == len(m) > 5
    assert len(m.raw_data) == 16 * len(m)
    pts = np.frombuffer(m.raw_data, np.float32).reshape(-1, 4)
    assert np.all(pts[:, 1] > 0.0)                # the cone is on the right
    radius = 0.228 / 2.0
    for x, y, z, intensity in pts:
        p = m.transform.transform(carla.Location(float(x), float(y), float(z)))
        assert math.hypot(p.x - cone_at.x, p.y - cone_at.y) <= radius + 0.01
        assert 0.0 < p.z < 0.325 and 0.0 < intensity <= 1.0


def test_camera_image_equals_the_render(clean):
    _s, _client, world = clean
    ego = world.spawn_actor(_bp(world, 'vehicle.tesla.model3'),
                            carla.Transform(carla.Location(0.0, 0.0, 0.5)))
    world.spawn_actor(_bp(world, 'static.prop.trafficcone01'),
                      carla.Transform(carla.Location(6.0, 0.8, 0.0)))
    world.spawn_actor(_bp(world, 'vehicle.lincoln.mkz_2020'),
                      carla.Transform(carla.Location(20.0, -3.0, 0.5)))
    mount = carla.Transform(carla.Location(0.5, 0.0, 1.0), carla.Rotation(pitch=-5.0))
    cam = world.spawn_actor(_bp(world, 'sensor.camera.rgb', image_size_x=320,
                                image_size_y=240, fov=90), mount, attach_to=ego)
    img = record(world, cam, 2)[-1]
    assert (img.width, img.height, img.fov) == (320, 240, pytest.approx(90.0))
    bgra = np.frombuffer(img.raw_data, np.uint8).reshape(240, 320, 4)
    assert np.all(bgra[:, :, 3] == 255)
    ref = World(port=0)
    e = ref.spawn('vehicle.tesla.model3', {}, ((0.0, 0.0, 0.5), (0.0, 0.0, 0.0)))
    ref.spawn('static.prop.trafficcone01', {}, ((6.0, 0.8, 0.0), (0.0, 0.0, 0.0)))
    ref.spawn('vehicle.lincoln.mkz_2020', {}, ((20.0, -3.0, 0.5), (0.0, 0.0, 0.0)))
    c = ref.spawn('sensor.camera.rgb', {'image_size_x': '320', 'image_size_y': '240'},
                  ((0.5, 0.0, 1.0), (-5.0, 0.0, 0.0)), parent=e.aid)
    render = c.sensor.device.measure(ref.geometry(exclude=e.aid), ref.world_matrix(c),
                                     0.0, 0.0, np.random.default_rng(0))
    np.testing.assert_array_equal(bgra[:, :, :3], render)
    # the cone (UE y = +0.8, right of the axis) is right of the image centre
    u = 160 + 160 * 0.8 / 5.5
    col = bgra[100:200, int(u) - 2:int(u) + 3, :3].astype(int)
    orange = (col[..., 2] > 180) & (col[..., 1] < 160) & (col[..., 0] < 90)
    assert orange.any()
    mirrored = bgra[100:200, 320 - int(u) - 2:320 - int(u) + 3, :3].astype(int)
    assert not ((mirrored[..., 2] > 180) & (mirrored[..., 1] < 160)
                & (mirrored[..., 0] < 90)).any()


def test_collision_with_a_prop(clean):
    _s, _client, world = clean
    ego = world.spawn_actor(_bp(world, 'vehicle.tesla.model3'),
                            carla.Transform(carla.Location(0.0, 0.0, 0.5)))
    prop = world.spawn_actor(_bp(world, 'static.prop.constructioncone'),
                             carla.Transform(carla.Location(6.0, 0.0, 0.0)))
    col = world.spawn_actor(_bp(world, 'sensor.other.collision'), carla.Transform(),
                            attach_to=ego)
    ego.apply_control(carla.VehicleControl(throttle=1.0))
    got = record(world, col, 60, until=bool)
    assert got, 'no collision event'
    ev = got[0]
    assert ev.actor.id == ego.id and ev.other_actor.id == prop.id
    assert ev.other_actor.type_id == 'static.prop.constructioncone'
    assert ev.normal_impulse.x < 0.0                   # pushed back
    # a static prop is a post: full throttle does not get the car through
    for _ in range(20):
        world.tick()
        assert ego.get_location().x < 6.0 - 2.3
    ego.apply_control(carla.VehicleControl(brake=1.0))
    world.tick()
    world.tick()
    assert ego.get_velocity().length() < 1e-3


def test_vehicles_that_touch_both_stop(clean):
    _s, _client, world = clean
    ego = world.spawn_actor(_bp(world, 'vehicle.tesla.model3', sticky_control='false'),
                            carla.Transform(carla.Location(0.0, 0.0, 0.5)))
    lead = world.spawn_actor(_bp(world, 'vehicle.lincoln.mkz_2020'),
                             carla.Transform(carla.Location(12.0, 0.3, 0.5)))
    col = world.spawn_actor(_bp(world, 'sensor.other.collision'), carla.Transform(),
                            attach_to=lead)
    ego.set_target_velocity(carla.Vector3D(8.0, 0.0, 0.0))
    ego.apply_control(carla.VehicleControl(throttle=0.7))    # one tick: not sticky
    world.tick()
    assert ego.get_control().throttle == 0.0
    got = record(world, col, 40, until=bool)
    assert got and got[0].actor.id == lead.id and got[0].other_actor.id == ego.id
    world.tick()
    assert ego.get_velocity().length() < 1e-3 and lead.get_velocity().length() < 1e-3
    gap = lead.get_location().x - ego.get_location().x
    assert gap >= ego.bounding_box.extent.x + lead.bounding_box.extent.x - 0.2


def test_snapshot_layout_counts(clean):
    _s, _client, world = clean
    cone = world.get_blueprint_library().find('static.prop.trafficcone02')
    for i in range(7):
        world.spawn_actor(cone, carla.Transform(carla.Location(i, -9.0, 0.0)))
    world.tick()
    snap = world.get_snapshot()
    assert len(snap) == len(world.get_actors()) == 8      # + the spectator
    assert {a.id for a in snap} == {a.id for a in world.get_actors()}
    assert sd.ACTOR_STATE.itemsize == 119 and sd.SENSOR_HEADER.itemsize == 48


def test_async_mode_wait_for_tick(server):
    _s, client, world = server
    restore_async(client)
    try:
        assert not world.get_settings().synchronous_mode
        frames = [world.wait_for_tick(2.0).frame for _ in range(4)]
        assert frames == sorted(frames) and len(set(frames)) == 4
        # free-running at 20 Hz of sim time
        a, b = world.wait_for_tick(2.0), world.wait_for_tick(2.0)
        assert b.timestamp.elapsed_seconds > a.timestamp.elapsed_seconds
    finally:
        synchronous(world, DT)
