# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
``carla-hil serve``'s other sensors through the real carla==0.9.16 client.

Each sensor's messages carry its 0.9.16 registry index: the wheel decodes
them as that sensor's class (a wrong index decodes garbage or crashes the
client). What the client decodes is checked against the scene: the IMU
against the snapshot's angular velocity and gravity, the GNSS against the
client's own ``Map.transform_to_geolocation``, radar, obstacle detector,
semantic lidar, depth and semantic cameras against where the actors stand,
the lane invasion detector (the client's own) against the road's marks.
"""

import math

from hil_bridge.carla_server.launcher import (blueprint, destroy_all, record, served_world,
                                              tick_until, wait_for)
from hil_bridge.carla_server.sensor_models import decode_depth
import numpy as np
import pytest

carla = pytest.importorskip('carla')

DT = 0.05
#: the ego's spawn (UE): the right lane of HIL_Flat's road, facing +x (east)
Y = 28.0


@pytest.fixture(scope='module')
def server():
    """Run one server for the module (synchronous, 50 ms steps)."""
    with served_world(delta=DT) as served:
        yield served


@pytest.fixture
def world(server):
    """Yield the world; destroy every actor a test spawned afterwards."""
    yield server[2]
    destroy_all(server[1], server[2])


_bp = blueprint


def _spawn(world, name, x, y=Y, z=0.5, yaw=0.0, **attrs):
    return world.spawn_actor(_bp(world, name, **attrs), carla.Transform(
        carla.Location(x, y, z), carla.Rotation(yaw=yaw)))


def _attach(world, name, parent, x=0.0, y=0.0, z=0.0, pitch=0.0, yaw=0.0, **attrs):
    return world.spawn_actor(_bp(world, name, **attrs), carla.Transform(
        carla.Location(x, y, z), carla.Rotation(pitch=pitch, yaw=yaw)), attach_to=parent)


def _ego(world, **attrs):
    return _spawn(world, 'vehicle.tesla.model3', 0.0, **attrs)


def test_blueprints_have_carla_attributes(server):
    _s, _client, world = server
    lib = world.get_blueprint_library()
    imu = lib.find('sensor.other.imu')
    assert {a.id for a in imu} == {
        'role_name', 'ros_name', 'sensor_tick', 'noise_seed',
        *(f'noise_{p}_{a}' for p in ('accel_stddev', 'gyro_stddev', 'gyro_bias')
          for a in 'xyz')}
    assert list(imu.get_attribute('role_name').recommended_values) == ['default']
    gnss = lib.find('sensor.other.gnss')
    assert gnss.get_attribute('noise_lat_bias').type == carla.ActorAttributeType.Float
    radar = lib.find('sensor.other.radar')
    assert [radar.get_attribute(k).as_float() for k in
            ('horizontal_fov', 'vertical_fov', 'range')] == [30.0, 30.0, 100.0]
    assert radar.get_attribute('points_per_second').as_int() == 1500
    obstacle = lib.find('sensor.other.obstacle')
    assert obstacle.get_attribute('distance').as_float() == 5.0
    assert obstacle.get_attribute('hit_radius').as_float() == 0.5
    assert obstacle.get_attribute('only_dynamics').as_bool() is False
    semantic = lib.find('sensor.lidar.ray_cast_semantic')
    assert semantic.has_attribute('channels') and not semantic.has_attribute('noise_stddev')
    for cam in ('sensor.camera.depth', 'sensor.camera.semantic_segmentation'):
        bp = lib.find(cam)
        assert bp.get_attribute('image_size_x').as_int() == 800
        assert not bp.has_attribute('exposure_mode')          # no post-processing
    assert lib.find('sensor.other.lane_invasion').has_attribute('role_name')


def test_registry_indices_decode_as_the_wheel_s_classes(world):
    """A message of each sensor comes out of the client as that sensor's class."""
    ego = _ego(world)
    expected = {'sensor.other.imu': carla.IMUMeasurement,
                'sensor.other.gnss': carla.GnssMeasurement,
                'sensor.other.radar': carla.RadarMeasurement,
                'sensor.camera.depth': carla.Image,
                'sensor.camera.semantic_segmentation': carla.Image,
                'sensor.lidar.ray_cast_semantic': carla.SemanticLidarMeasurement}
    for name, cls in expected.items():
        extra = {'image_size_x': 32, 'image_size_y': 24} if 'camera' in name else {}
        sensor = _attach(world, name, ego, z=1.5, **extra)
        data = record(world, sensor, 1)[-1]
        assert type(data) is cls, name
        assert data.frame == world.get_snapshot().frame
    lane = _attach(world, 'sensor.other.lane_invasion', ego)
    assert type(lane).__name__ == 'LaneInvasionSensor'      # the client's own sensor


def test_imu(world):
    """
    At rest gravity only; accelerating, turning: the snapshot's motion.

    UE axes: the accelerometer's x is forward, y right; a left turn is a
    negative gyroscope z (the snapshot's angular velocity, in rad/s) and a
    negative lateral acceleration (towards the centre, on the left).
    """
    ego = _ego(world)
    imu = _attach(world, 'sensor.other.imu', ego, x=0.5, z=1.0)
    got = []
    imu.listen(got.append)          # once: a second listen() crashes the 0.9.16 client
    try:
        tick_until(world, lambda: len(got) >= 3)
        rest = got[-1]
        assert (rest.accelerometer.x, rest.accelerometer.y, rest.accelerometer.z) == \
            pytest.approx((0.0, 0.0, 9.81), abs=1e-6)
        assert rest.gyroscope.length() == 0.0
        assert rest.compass == pytest.approx(math.pi / 2.0, abs=1e-6)   # facing east
        assert world.get_imui_sensor_gravity() == pytest.approx(9.81)
        world.set_imui_sensor_gravity(1.62)                         # the Moon's
        frame = world.tick()
        assert wait_for(lambda: got[-1].frame >= frame)
        assert got[-1].accelerometer.z == pytest.approx(1.62, abs=1e-5)
        world.set_imui_sensor_gravity(9.81)
        ego.apply_control(carla.VehicleControl(throttle=1.0))
        for _ in range(10):
            world.tick()
        acc = ego.get_acceleration()
        frame = world.tick()
        assert wait_for(lambda: got[-1].frame >= frame)
        m = got[-1]
        assert m.accelerometer.x > 1.0
        assert m.accelerometer.x == pytest.approx(acc.x, abs=0.5)
        ego.apply_control(carla.VehicleControl(throttle=0.3, steer=-0.5))
        for _ in range(30):
            world.tick()
        w = ego.get_angular_velocity()
        v = ego.get_velocity().length()
        frame = world.tick()
        assert wait_for(lambda: got[-1].frame >= frame)
        m = got[-1]
        assert m.gyroscope.z < -0.1
        assert m.gyroscope.z == pytest.approx(math.radians(w.z), rel=0.05)
        assert m.accelerometer.y < 0.0
        assert m.accelerometer.y == pytest.approx(v * math.radians(w.z), rel=0.25)
        assert m.compass < math.pi / 2.0 - 0.1                  # turned north-ward
    finally:
        imu.stop()


def test_imu_noise_seed_and_sensor_tick(world):
    ego = _ego(world)
    imus = [_attach(world, 'sensor.other.imu', ego, z=1.0, noise_seed=7,
                    noise_accel_stddev_z=0.5, noise_gyro_bias_z=0.2, sensor_tick=0.1)
            for _ in range(2)]
    got = [[], []]
    for imu, out in zip(imus, got):
        imu.listen(out.append)
    try:
        tick_until(world, lambda: all(got))
        for _ in range(80):
            world.tick()
        frame = world.tick()
        assert wait_for(lambda: all(out[-1].frame >= frame - 1 for out in got))
    finally:
        for imu in imus:
            imu.stop()
    a = np.array([m.accelerometer.z for m in got[0]])
    b = np.array([m.accelerometer.z for m in got[1]])
    n = min(len(a), len(b))
    assert n >= 30
    # one seed, one noise sequence (from each one's first measurement: a
    # stream that connects a frame later starts measuring a frame later)
    np.testing.assert_array_equal(a[:n], b[:n])
    assert 0.3 < a.std() < 0.7 and a.mean() == pytest.approx(9.81, abs=0.25)
    assert np.mean([m.gyroscope.z for m in got[0]]) == pytest.approx(0.2, abs=1e-6)
    assert set(np.diff([m.frame for m in got[0]])) == {2}    # every 0.1 s


def test_gnss_is_the_map_s_geolocation(world):
    """Noise-free GNSS equals the client's Map.transform_to_geolocation of the sensor."""
    ego = _ego(world)
    ego.set_target_velocity(carla.Vector3D(0.0, 5.0, 0.0))      # along UE +y
    gnss = _attach(world, 'sensor.other.gnss', ego, x=1.0, z=1.5)
    biased = _attach(world, 'sensor.other.gnss', ego, x=1.0, z=1.5, noise_lat_bias=1e-4,
                     noise_alt_stddev=0.5, noise_seed=3)
    got = record(world, gnss, 5)
    with_bias = record(world, biased, 20)
    m = world.get_map()
    for g in got:
        ref = m.transform_to_geolocation(g.transform.location)
        assert (g.latitude, g.longitude) == pytest.approx((ref.latitude, ref.longitude),
                                                          abs=1e-10)
        assert g.altitude == pytest.approx(ref.altitude, abs=1e-4)
    assert got[0].latitude == pytest.approx(49.3278, abs=1e-3)       # Hockenheim
    ref = [m.transform_to_geolocation(g.transform.location) for g in with_bias]
    dlat = [g.latitude - r.latitude for g, r in zip(with_bias, ref)]
    assert dlat == pytest.approx([1e-4] * len(dlat), abs=1e-10)
    assert 0.2 < np.std([g.altitude - r.altitude for g, r in zip(with_bias, ref)]) < 0.9


def test_radar_sees_the_lead_car(world):
    """
    A lead car 20 m ahead, 1.5 m to the right, driving away at 2 m/s.

    The ego drives at 5 m/s: the car's detections close at 3 m/s
    (velocity -3), lie right of the axis (azimuth > 0) at its depth; the
    ground's close at the ego's own 5 m/s times the cosine of their angle.
    """
    ego = _ego(world)
    lead = _spawn(world, 'vehicle.lincoln.mkz_2020', 25.0, Y + 1.5)
    ego.set_target_velocity(carla.Vector3D(5.0, 0.0, 0.0))
    lead.set_target_velocity(carla.Vector3D(2.0, 0.0, 0.0))
    radar = _attach(world, 'sensor.other.radar', ego, x=2.4, z=1.0, horizontal_fov=30,
                    vertical_fov=10, range=50, points_per_second=40000)
    m = record(world, radar, 3)[-1]
    raw = np.frombuffer(m.raw_data, np.float32).reshape(len(m), 4)
    dets = np.array([[d.velocity, d.azimuth, d.altitude, d.depth] for d in m])
    np.testing.assert_array_equal(raw, dets.astype(np.float32))
    assert m.get_detection_count() == len(m) > 100
    gap = lead.get_location().x - lead.bounding_box.extent.x - \
        (ego.get_location().x + 2.4)
    car = np.abs(dets[:, 0] + 3.0) < 0.05
    assert car.sum() > 20
    assert np.all(dets[car, 1] > 0.0)
    assert dets[car, 3].min() == pytest.approx(gap, abs=0.1)
    ground = ~car
    assert np.all(dets[ground, 2] < 0.0)                   # below the radar
    cos = np.cos(dets[ground, 1]) * np.cos(dets[ground, 2])
    np.testing.assert_allclose(dets[ground, 0], -5.0 * cos, atol=0.05)
    np.testing.assert_allclose(np.sin(-dets[ground, 2]) * dets[ground, 3], 1.0, atol=0.01)


def test_obstacle_detector(world):
    """
    The swept sphere stops at the first thing it touches.

    A traffic cone 8 m ahead of the ego's origin, a car 15 m ahead: the
    sensor at 0.6 m reports the cone, with ``only_dynamics`` the car; one
    at 0.2 m touches the ground at once (``static.road``, distance 0).
    """
    ego = _ego(world)
    cone = _spawn(world, 'static.prop.trafficcone01', 8.0, z=0.0)
    car = _spawn(world, 'vehicle.lincoln.mkz_2020', 15.0)
    ahead = _attach(world, 'sensor.other.obstacle', ego, x=2.4, z=0.6, distance=20)
    dynamic = _attach(world, 'sensor.other.obstacle', ego, x=2.4, z=0.6, distance=20,
                      only_dynamics='true')
    low = _attach(world, 'sensor.other.obstacle', ego, x=2.4, z=0.2)
    ev = record(world, ahead, 1)[-1]
    assert ev.actor.id == ahead.id                    # CARLA reports the sensor itself
    assert ev.other_actor.id == cone.id
    assert 8.0 - 2.4 - 0.5 - 0.12 < ev.distance < 8.0 - 2.4 - 0.5
    ev = record(world, dynamic, 1)[-1]
    assert ev.other_actor.id == car.id
    rear = car.get_location().x - car.bounding_box.extent.x
    assert ev.distance == pytest.approx(rear - 2.4 - 0.5, abs=1e-3)
    ev = record(world, low, 1)[-1]
    assert (ev.other_actor.id, ev.other_actor.type_id, ev.distance) == (0, 'static.road', 0.0)


def _scene(world):
    """Return the ego, a lead car 20 m ahead and a cone 5 m ahead, 0.8 m right."""
    ego = _ego(world)
    lead = _spawn(world, 'vehicle.lincoln.mkz_2020', 20.0)
    cone = _spawn(world, 'static.prop.trafficcone01', 5.0, Y + 0.8, z=0.0)
    return ego, lead, cone


def test_depth_camera(world, tmp_path):
    """
    Planar depth (CARLA's 24-bit encoding): ground, the lead car, sky.

    A camera 1.2 m up, level: a ground pixel dv rows below the centre is
    1.2 f / dv away; the centre pixel sees the car's rear at the gap.
    """
    ego, lead, _cone = _scene(world)
    cam = _attach(world, 'sensor.camera.depth', ego, x=0.5, z=1.2, image_size_x=160,
                  image_size_y=120, fov=90)
    img = record(world, cam, 1)[-1]
    bgra = np.frombuffer(img.raw_data, np.uint8).reshape(120, 160, 4).copy()
    depth = decode_depth(bgra)
    f = 80.0
    assert depth[110, 20] == pytest.approx(1.2 * f / 50.0, abs=2e-3)
    gap = lead.get_location().x - lead.bounding_box.extent.x - 0.5
    assert depth[60, 80] == pytest.approx(gap, abs=2e-3)
    assert depth[2, 80] == pytest.approx(1000.0)               # sky: the far plane
    img.save_to_disk(str(tmp_path / 'depth.png'), carla.ColorConverter.LogarithmicDepth)
    import cv2
    saved = cv2.imread(str(tmp_path / 'depth.png'))
    assert saved.shape == (120, 160, 3)
    assert saved[110, 20, 0] < saved[60, 80, 0] < saved[2, 80, 0]     # grey grows with depth


def test_semantic_segmentation_camera(world, tmp_path):
    """The tag in the red channel: Car, Static (cone), Roads, Sky; CityScapes colours."""
    ego, _lead, _cone = _scene(world)
    cam = _attach(world, 'sensor.camera.semantic_segmentation', ego, x=0.5, z=1.2,
                  image_size_x=160, image_size_y=120, fov=90)
    img = record(world, cam, 1)[-1]
    bgra = np.frombuffer(img.raw_data, np.uint8).reshape(120, 160, 4).copy()
    tags = bgra[:, :, 2]
    assert np.all(bgra[:, :, :2] == 0) and np.all(bgra[:, :, 3] == 255)
    label = carla.CityObjectLabel
    # the cone 4.5 m ahead of the camera, 0.8 m right: u = 80 + 80 * 0.8 / 4.5
    assert tags[79, 94] == int(label.Static)
    assert (tags[60, 80], tags[2, 80], tags[115, 20]) == \
        (int(label.Car), int(label.Sky), int(label.Roads))
    img.convert(carla.ColorConverter.CityScapesPalette)
    palette = np.frombuffer(img.raw_data, np.uint8).reshape(120, 160, 4)
    assert tuple(palette[60, 80, :3]) == (142, 0, 0)           # Car: RGB (0, 0, 142)
    img.save_to_disk(str(tmp_path / 'semantic.png'))
    assert (tmp_path / 'semantic.png').stat().st_size > 0


def test_semantic_lidar(world):
    """Every point names what it hit: the car, the cone (their ids) or the road (0)."""
    ego, lead, cone = _scene(world)
    lidar = _attach(world, 'sensor.lidar.ray_cast_semantic', ego, z=2.0, channels=16,
                    upper_fov=5, lower_fov=-25, range=30, points_per_second=200000,
                    rotation_frequency=20)
    m = record(world, lidar, 1)[-1]
    dt = np.dtype([('x', np.float32), ('y', np.float32), ('z', np.float32),
                   ('CosAngle', np.float32), ('ObjIdx', np.uint32), ('ObjTag', np.uint32)])
    pts = np.frombuffer(m.raw_data, dtype=dt)                # open3d_lidar.py's decoding
    assert len(pts) == len(m) == sum(m.get_point_count(c) for c in range(m.channels))
    first = list(m)[0]
    assert (first.object_idx, first.object_tag) == (pts['ObjIdx'][0], pts['ObjTag'][0])
    label = carla.CityObjectLabel
    on_car = pts['ObjIdx'] == lead.id
    on_cone = pts['ObjIdx'] == cone.id
    road = pts['ObjTag'] == int(label.Roads)
    assert on_car.sum() > 10 and on_cone.sum() > 0 and road.sum() > 100
    assert np.all(pts['ObjTag'][on_car] == int(label.Car))
    assert np.all(pts['ObjTag'][on_cone] == int(label.Static))
    assert np.all(pts['ObjIdx'][road] == 0)
    assert np.all(pts['ObjTag'][~(on_car | on_cone)] == int(label.Roads))
    assert np.all(pts['y'][on_cone] > 0.0)                   # right of the sensor (UE)
    xyz = np.column_stack([pts['x'], pts['y'], pts['z']])[road]
    assert np.all(np.abs(xyz[:, 2] + 2.0) < 1e-3)            # the ground, 2 m below
    r = np.linalg.norm(xyz, axis=1)
    np.testing.assert_allclose(pts['CosAngle'][road], 2.0 / r, atol=1e-4)
    assert np.all((pts['CosAngle'] > 0.0) & (pts['CosAngle'] <= 1.0 + 1e-6))


def test_lane_invasion(world):
    """The client's own detector: crossing HIL_Flat's broken centre line."""
    ego = _ego(world)
    sensor = _attach(world, 'sensor.other.lane_invasion', ego)
    events = []
    sensor.listen(events.append)
    try:
        ego.set_target_velocity(carla.Vector3D(8.0, 0.0, 0.0))
        ego.apply_control(carla.VehicleControl(steer=-0.1))     # to the left lane
        for _ in range(60):
            world.tick()
            if events:
                break
    finally:
        sensor.stop()
    assert events, 'no lane invasion'
    marks = {m.type for m in events[0].crossed_lane_markings}
    assert carla.LaneMarkingType.Broken in marks
    # the parent's transform; (``.actor`` raises in the 0.9.16 client: a
    # client-side event has no episode)
    assert Y - 2.5 < events[0].transform.location.y < Y


def test_camera_rays_equal_the_lidar_geometry():
    """The cameras' per-object ray casting hits what ``cast_rays`` hits, pixel for pixel."""
    from hil_bridge.carla_server.world import World
    from hil_bridge.sim.geometry import cast_rays
    w = World(port=0)
    ego = w.spawn('vehicle.tesla.model3', {}, ((0.0, Y, 0.5), (0.0, 0.0, 0.0)))
    w.spawn('vehicle.lincoln.mkz_2020', {}, ((12.0, Y + 1.0, 0.5), (0.0, 30.0, 0.0)))
    w.spawn('vehicle.lincoln.mkz_2020', {}, ((-1.0, Y + 6.0, 0.5), (0.0, 30.0, 0.0)))
    for k in range(12):                        # cones on both sides, some behind
        w.spawn('static.prop.trafficcone01', {}, ((-4.0 + 3.0 * k, Y + (-2.0) ** (k % 2),
                                                   0.0), (0.0, 0.0, 0.0)))
    for pitch in (0.0, -20.0):
        cam = w.spawn('sensor.camera.depth', {'image_size_x': '200', 'image_size_y': '150'},
                      ((0.5, 0.0, 1.5), (pitch, 0.0, 0.0)), parent=ego.aid)
        scene = w.scene(exclude=ego.aid)
        T = w.world_matrix(cam)
        dev = cam.sensor.device
        t, kind, index = dev.cast(scene.geometry, T)
        rays = np.einsum('ij,kj->ik', dev._rays, T[:3, :3])      # as RayCamera turns them
        t2, kind2, index2 = cast_rays(scene.geometry, T[:3, 3], rays,
                                      1000.0 / dev._forward.min())
        np.testing.assert_array_equal(t, t2)
        np.testing.assert_array_equal(kind, kind2)
        np.testing.assert_array_equal(index, index2)
        assert set(np.unique(kind)) >= {1, 2, 3}           # ground, cones, a car
