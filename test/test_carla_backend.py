# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""Tests of hil_bridge.carla_backend.backend against the fake CARLA server."""

import gc
import logging
import math
import os
import signal
import time
from types import SimpleNamespace
from typing import Any, Dict, Iterator, List

from hil_bridge.bridge.backend import BackendError, VehicleControl
from hil_bridge.bridge.scenario import ActorSpec, load_scenario, Scenario
from hil_bridge.carla_backend.backend import camera_intrinsics, CarlaBackend, FrameAssembler
from hil_bridge.interface import frames
from hil_bridge.interface.cones import CONE_BIG_ORANGE, CONE_BLUE, CONE_ORANGE, CONE_YELLOW
from hil_bridge.interface.frames import Pose
from hil_bridge.interface.rig import carla_attributes, load_rig, parse_rig
from hil_bridge.interface.track import ConeArray
from hil_bridge.interface.vehicle_profile import load_vehicle_profile
import numpy as np
import pytest

import fake_carla  # noqa: I100 - test helper next to this file

carla = pytest.importorskip('carla')

CONE_SMALL = 'static.prop.trafficcone01'
CONE_BIG = 'static.prop.constructioncone'
#: The fake model3's box centre is 0.05 m ahead of its origin; the profile's
#: rear axle is box_offset behind the box centre.
BOX_OFFSET = load_vehicle_profile('passenger_car').box_offset
FRAME_OFFSET = 0.05 - BOX_OFFSET


def small_rig(lidar_tick: float = 0.0, right_tick: float = 0.0) -> List[Any]:
    """Return a rig like hil_rig with small images (fast to fake)."""
    cam = {'image_size_x': 64, 'image_size_y': 48, 'fov': 90.0}
    return parse_rig({'sensors': [
        {'id': 'rgb_left', 'blueprint': 'sensor.camera.rgb',
         'mount': {'x': 0.5, 'y': 0.06, 'z': 1.0},
         'attributes': dict(cam, sensor_tick=0.0)},
        {'id': 'rgb_right', 'blueprint': 'sensor.camera.rgb',
         'mount': {'x': 0.5, 'y': -0.06, 'z': 1.0},
         'attributes': dict(cam, sensor_tick=right_tick)},
        {'id': 'lidar', 'blueprint': 'sensor.lidar.ray_cast',
         'mount': {'x': 1.2, 'y': 0.0, 'z': 0.2, 'yaw': 0.3},
         'attributes': {'channels': 1, 'range': 20.0,
                        'sensor_tick': lidar_tick}},
    ]}, '<test rig>')


def aeb_scenario(target_behaviour: Dict[str, Any] = None,
                 target_speed: float = 0.0, track: Any = None) -> Scenario:
    """Return the ROS 2 AEB tutorial scenario in REP-103 (CARLA y = 28)."""
    ego = ActorSpec(role_name='ego_vehicle', blueprint='vehicle.tesla.model3',
                    pose=Pose(0.0, -28.0, 1.0), size=np.array([4.69, 1.85,
                                                               1.44]),
                    profile='passenger_car', initial_speed=5.5)
    target = ActorSpec(role_name='target',
                       blueprint='vehicle.lincoln.mkz_2020',
                       pose=Pose(50.0, -28.0, 1.0),
                       size=np.array([4.9, 2.1, 1.5]),
                       initial_speed=target_speed,
                       behaviour=target_behaviour or {'type': 'static'})
    return Scenario(name='aeb_tutorial', mission='aeb', ego=ego,
                    actors=[target], track=track)


@pytest.fixture
def fake() -> Iterator[fake_carla.FakeCarla]:
    module = fake_carla.FakeCarla()
    try:
        yield module
    finally:
        module.close()


@pytest.fixture
def server(fake: fake_carla.FakeCarla) -> fake_carla.FakeServer:
    return fake.add_server('localhost', 2000)


def make_backend(fake: Any, **kwargs: Any) -> CarlaBackend:
    kwargs.setdefault('sensor_timeout', 1.0)
    kwargs.setdefault('retry_delay', 0.0)
    kwargs.setdefault('tcp_probe', False)      # the fake has no TCP port
    return CarlaBackend(carla_module=fake, **kwargs)


def spawned(server: fake_carla.FakeServer, type_id: str) -> List[tuple]:
    return [e for e in server.spawn_log if e[1] == type_id]


# --------------------------------------------------------------------------
# set-up


def test_setup_spawns_the_aeb_tutorial(fake: Any, server: Any) -> None:
    rig = load_rig('hil_rig.yaml')
    backend = make_backend(fake)
    try:
        frame = backend.setup(aeb_scenario(), rig)
        ego = spawned(server, 'vehicle.tesla.model3')
        target = spawned(server, 'vehicle.lincoln.mkz_2020')
        assert len(ego) == 1 and len(target) == 1
        # The tutorial's CARLA coordinates, unchanged.
        for entry, x in ((ego[0], 0.0), (target[0], 50.0)):
            loc = entry[3].location
            assert (loc.x, loc.y, loc.z) == pytest.approx((x, 28.0, 1.0))
            assert entry[3].rotation.yaw == pytest.approx(0.0)
        assert ego[0][2]['role_name'] == 'ego_vehicle'
        assert target[0][2]['role_name'] == 'target'
        ego_id = ego[0][0]
        # Ego given 5.5 m/s along its heading with set_target_velocity.
        first = [v for f, i, v in server.target_velocity_log if i == ego_id]
        assert first[0] == pytest.approx((5.5, 0.0, 0.0))
        # The rig: attached to the ego, attributes passed by name as strings.
        sensors = [e for e in server.spawn_log if e[1].startswith('sensor.')
                   and e[1] != 'sensor.other.collision']
        roles = [e[2]['role_name'] for e in sensors]
        assert roles == ['rgb_left', 'rgb_right', 'lidar']
        assert all(e[4] == ego_id for e in sensors)
        for spec, entry in zip(rig, sensors):
            assert entry[1] == spec.blueprint
            for key, value in carla_attributes(spec).items():
                assert entry[2][key] == value
        assert sensors[0][2]['image_size_x'] == '1288'
        assert sensors[2][2]['channels'] == '1'
        assert sensors[2][2]['horizontal_fov'] == '270.0'
        # Mount poses in UE4: left camera (REP-103 y = +0.06) has y = -0.06;
        # x is relative to the vehicle frame (rear axle), CARLA attaches to
        # the actor origin: shifted by FRAME_OFFSET.
        left = sensors[0][3].location
        assert (left.x, left.y, left.z) == pytest.approx(
            (0.5 + FRAME_OFFSET, -0.06, 1.0))
        lidar = sensors[2][3].location
        assert (lidar.x, lidar.y, lidar.z) == pytest.approx(
            (1.2 + FRAME_OFFSET, 0.0, 0.2))
        assert len(spawned(server, 'sensor.other.collision')) == 1
        # World settings: synchronous, fixed step.
        assert server.settings.synchronous_mode is True
        assert server.settings.fixed_delta_seconds == pytest.approx(0.05)
        assert len(server.actors) == 6
        # Frame 0: complete, full-size bgr8 views.
        assert frame.frame == 0 and frame.sim_time == 0.0
        assert set(frame.sensors) == {'rgb_left', 'rgb_right', 'lidar'}
        img = frame.sensors['rgb_left'].data
        assert img.shape == (964, 1288, 3) and img.dtype == np.uint8
    finally:
        backend.teardown()
    assert server.actors == {}


def test_frames_are_rep103(fake: Any, server: Any) -> None:
    backend = make_backend(fake)
    try:
        backend.setup(aeb_scenario(), small_rig())
        frame = backend.step(0.05)
        assert frame.frame == 1
        assert frame.sim_time == pytest.approx(0.05)
        # Camera: a bgr8 view of the BGRA buffer, no copy, K from the fov.
        cam = frame.sensors['rgb_left']
        assert cam.frame == 1 and cam.timestamp == pytest.approx(0.05)
        img = cam.data
        assert img.shape == (48, 64, 3)
        assert not img.flags['C_CONTIGUOUS'] and not img.flags['OWNDATA']
        assert img.strides == (64 * 4, 4, 1)
        expected = np.array([backend.carla_frame % 251, 100, 200], np.uint8)
        assert np.all(img == expected)
        assert np.allclose(cam.intrinsics, [[32, 0, 32], [0, 32, 24],
                                            [0, 0, 1]])
        # The view keeps the CARLA image alive (its memory is not reused).
        del frame
        gc.collect()
        assert np.all(img == expected)
        frame = backend.step(0.05)
        # Lidar: float32 (N, 4), y flipped.
        pts = frame.sensors['lidar'].data
        assert pts.dtype == np.float32 and pts.shape[1] == 4
        assert np.allclose(pts[0], [5.0, -2.0, 0.0, 0.5])
        assert np.allclose(pts[1], [10.0, 1.0, 0.3, 0.25])
        # The target vehicle seen by the lidar lands on its map position.
        ego = frame.ego
        mount = small_rig()[2].mount
        T = frames.pose_to_matrix(ego.pose) @ frames.pose_to_matrix(mount)
        seen = frames.transform_points(T, pts[2:3, :3].astype(np.float64))
        target = frame.actors[0]
        assert target.role_name == 'target'
        assert np.allclose(seen[0], [target.pose.x, target.pose.y,
                                     target.pose.z], atol=1e-3)
        assert (target.pose.x, target.pose.y) == pytest.approx((50.0, -28.0))
        # Ego state in REP-103: moving forward at 5.5 m/s, y = -28.
        assert ego.role_name == 'ego_vehicle'
        assert ego.pose.y == pytest.approx(-28.0)
        # Reported at the vehicle frame (rear axle): the box centre is
        # box_offset ahead, at the actor's box centre.
        assert ego.box_offset == pytest.approx(BOX_OFFSET)
        assert ego.pose.x == pytest.approx(5.5 * 0.05 * 3 + FRAME_OFFSET,
                                           abs=1e-3)
        assert ego.pose.x + ego.box_offset == pytest.approx(
            5.5 * 0.05 * 3 + 0.05, abs=1e-3)
        assert np.allclose(ego.velocity, [5.5, 0.0, 0.0])
        assert ego.size == pytest.approx([2 * 2.3958, 2 * 1.0816,
                                          2 * 0.7443])
    finally:
        backend.teardown()


def test_left_turn_is_positive_yaw(fake: Any, server: Any) -> None:
    backend = make_backend(fake)
    try:
        backend.setup(aeb_scenario(), small_rig())
        backend.apply_control(VehicleControl(throttle=0.5, steer=-0.5))
        for _ in range(10):
            frame = backend.step(0.05)
        ego = frame.ego
        assert ego.angular_velocity[2] > 0.1          # left: +z in REP-103
        assert ego.pose.yaw > 0.05 and ego.pose.y > -28.0
        assert ego.steer_angle > 0.0                   # REP-103: left > 0
        # The fake turns about the actor origin, moving along its heading;
        # the vehicle frame (rear axle, FRAME_OFFSET along x) gets the
        # lateral velocity omega x r.
        c, s = math.cos(ego.pose.yaw), math.sin(ego.pose.yaw)
        lateral = -s * ego.velocity[0] + c * ego.velocity[1]
        assert lateral == pytest.approx(ego.angular_velocity[2] *
                                        FRAME_OFFSET, rel=1e-6)
        last = server.control_log[-1][2]
        # steer is a fraction of the profile's max_steer (0.61 rad); CARLA's
        # of the wheels' max_steer_angle (70 deg in the fake)
        assert (last.throttle, last.steer) == pytest.approx(
            (0.5, -0.5 * 0.61 / math.radians(70.0)))
    finally:
        backend.teardown()


def test_bad_control_is_clamped(fake: Any, server: Any) -> None:
    backend = make_backend(fake)
    try:
        backend.setup(aeb_scenario(), small_rig())
        backend.apply_control(VehicleControl(throttle=float('nan'),
                                             steer=3.0, brake=float('nan')))
        frame = backend.step(0.05)
        c = server.control_log[-1][2]
        assert (c.throttle, c.brake) == (0.0, 1.0)
        assert c.steer == pytest.approx(0.61 / math.radians(70.0))
        assert frame.applied_control.brake == 1.0
        with pytest.raises(ValueError, match='dt'):
            backend.step(float('nan'))
    finally:
        backend.teardown()


@pytest.mark.parametrize('kwargs, match', [
    ({'port': 0}, 'port'), ({'timeout': float('nan')}, 'timeout'),
    ({'fixed_delta_seconds': 0.0}, 'fixed_delta_seconds'),
    ({'retries': 0}, 'retries'), ({'host': ''}, 'host'),
    ({'sensor_timeout': -1.0}, 'sensor_timeout')])
def test_bad_parameters(fake: Any, kwargs: Dict[str, Any], match: str
                        ) -> None:
    with pytest.raises(ValueError, match=match):
        CarlaBackend(carla_module=fake, **kwargs)


def test_step_before_setup(fake: Any, server: Any) -> None:
    with pytest.raises(BackendError, match='before setup'):
        make_backend(fake).step(0.05)


# --------------------------------------------------------------------------
# synchronous frame assembly


def test_sync_waits_for_a_late_sensor(fake: Any, server: Any) -> None:
    backend = make_backend(fake, sensor_timeout=2.0)
    try:
        backend.setup(aeb_scenario(), small_rig())
        server.sensor_delay['lidar'] = 0.3
        t0 = time.monotonic()
        frame = backend.step(0.05)
        assert time.monotonic() - t0 >= 0.29
        assert set(frame.sensors) == {'rgb_left', 'rgb_right', 'lidar'}
        assert all(r.frame == frame.frame for r in frame.sensors.values())
        assert not [e for e in frame.events if e.kind == 'warning']
    finally:
        backend.teardown()


def test_timeout_names_the_sensor_and_drops_stale_data(
        fake: Any, server: Any, caplog: pytest.LogCaptureFixture) -> None:
    backend = make_backend(fake, sensor_timeout=0.5)
    try:
        backend.setup(aeb_scenario(), small_rig())
        late = server.frame + 1
        server.sensor_delay['lidar'] = \
            lambda f: 1.0 if f == late else 0.0
        with caplog.at_level(logging.WARNING):
            frame = backend.step(0.05)
        assert 'lidar' not in frame.sensors
        assert set(frame.sensors) == {'rgb_left', 'rgb_right'}
        warn = [e for e in frame.events if e.kind == 'warning']
        assert warn and warn[0].data['missing_sensors'] == ['lidar']
        assert any('lidar' in r.getMessage() and 'did not deliver' in
                   r.getMessage() for r in caplog.records)
        time.sleep(0.8)                      # the late data arrives now
        frame2 = backend.step(0.05)
        assert frame2.sensors['lidar'].frame == frame2.frame
        assert backend._assembler.stats['stale'] >= 1
    finally:
        backend.teardown()


def test_dead_sensor_is_no_longer_awaited(
        fake: Any, server: Any, caplog: pytest.LogCaptureFixture) -> None:
    backend = make_backend(fake, sensor_timeout=0.6, max_missed=2)
    try:
        backend.setup(aeb_scenario(), small_rig())
        server.sensor_delay['rgb_right'] = None      # never delivers
        with caplog.at_level(logging.WARNING):
            backend.step(0.05)
            backend.step(0.05)
            t0 = time.monotonic()
            frame = backend.step(0.05)
            fast = time.monotonic() - t0
        assert fast < 0.5                            # did not wait 0.6 s
        assert set(frame.sensors) == {'rgb_left', 'lidar'}
        assert any('no longer waiting' in r.getMessage()
                   for r in caplog.records)
        server.sensor_delay['rgb_right'] = 0.0       # back again
        frame = backend.step(0.05)
        frame = backend.step(0.05)
        assert 'rgb_right' in frame.sensors
    finally:
        backend.teardown()


def test_sensors_at_different_rates(fake: Any, server: Any) -> None:
    # dt 0.05: rgb_left every frame, lidar every 2nd, rgb_right every 3rd.
    backend = make_backend(fake, sensor_timeout=3.0)
    try:
        frame = backend.setup(aeb_scenario(),
                              small_rig(lidar_tick=0.1, right_tick=0.15))
        seen = [set(frame.sensors)]
        t0 = time.monotonic()
        for _ in range(6):
            frame = backend.step(0.05)
            seen.append(set(frame.sensors))
            assert all(r.frame == frame.frame
                       for r in frame.sensors.values())
            assert not [e for e in frame.events if e.kind == 'warning']
        assert time.monotonic() - t0 < 2.5           # nobody waited 3 s
        # every 2nd / 3rd frame; the phase is set by the warm-up ticks
        # before frame 0 (each stream's first message)
        lidar = [i for i, s in enumerate(seen) if 'lidar' in s]
        right = [i for i, s in enumerate(seen) if 'rgb_right' in s]
        assert np.all(np.diff(lidar) == 2) and len(lidar) >= 3
        assert np.all(np.diff(right) == 3) and len(right) >= 2
        assert all('rgb_left' in s for s in seen)
        assert all('rgb_left' in s for s in seen)
    finally:
        backend.teardown()


def test_assembler_rules() -> None:
    asm = FrameAssembler({'a': 0.0, 'b': 0.1, 'c': 0.12}, dt=0.05)
    assert asm.due(10, 0.5) == ['a', 'b', 'c']   # never heard of: due
    from hil_bridge.carla_backend.backend import _Payload
    for sid in 'abc':
        assert asm.add(sid, _Payload(np.zeros((0, 4), np.float32), None,
                                     10, 0.5))
    data, missing = asm.wait(10, 0.5, 0.01)
    assert set(data) == {'a', 'b', 'c'} and missing == []
    assert asm.due(11, 0.55) == ['a']
    assert asm.due(12, 0.60) == ['a', 'b']
    assert asm.due(13, 0.65) == ['a', 'b', 'c']
    # c's grid: 0.5, 0.62, 0.74, 0.86: frames at 0.65, 0.75, 0.90 (gaps of
    # 3, 2, 3 frames; ceil(0.12 / 0.05) = 3 would miss 0.75)
    for sid in 'ac':
        asm.add(sid, _Payload(np.zeros((0, 4), np.float32), None, 13, 0.65))
    asm.wait(13, 0.65, 0.01)
    assert asm.due(14, 0.70) == ['a', 'b']
    assert asm.due(15, 0.75) == ['a', 'b', 'c']
    assert asm.stats['reanchored'] == 0
    # Data of an emitted frame is stale.
    assert not asm.add('a', _Payload(np.zeros((0, 4)), None, 10, 0.5))
    assert asm.stats['stale'] == 1


# --------------------------------------------------------------------------
# asynchronous mode


def test_async_latest_returns_the_newest_complete_frame(
        fake: Any, server: Any) -> None:
    backend = make_backend(fake, synchronous=False, fixed_delta_seconds=0.0)
    try:
        frame = backend.setup(aeb_scenario(), small_rig())
        assert frame.frame == 0
        assert server.settings.synchronous_mode is False
        assert backend.latest() is None
        for _ in range(3):
            server.advance()
        deadline = time.monotonic() + 2.0
        while time.monotonic() < deadline:
            time.sleep(0.05)
            frame = backend.latest()
            if frame is not None:
                break
        assert frame is not None and frame.frame == 3
        assert set(frame.sensors) == {'rgb_left', 'rgb_right', 'lidar'}
        assert backend.latest() is None              # nothing newer
        frame = backend.step(0.05)                   # waits for the next
        assert frame.frame == 4
        backend.apply_control(VehicleControl(brake=1.0))
        assert server.control_log[-1][2].brake == 1.0
    finally:
        backend.teardown()


def test_async_without_sensors(fake: Any, server: Any) -> None:
    backend = make_backend(fake, synchronous=False, fixed_delta_seconds=0.0,
                           collision_sensor=False)
    with backend:
        frame = backend.setup(aeb_scenario(), [])
        assert frame.frame == 0 and frame.sensors == {}
        assert backend.latest() is None
        server.advance()
        server.advance()
        assert backend.latest().frame == 2
        assert backend.step(0.05).frame == 3
    assert server.actors == {}


def test_malformed_sensor_data_is_dropped(
        fake: Any, server: Any, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    make_image = fake_carla.FakeServer._image

    def bad_image(self: Any, sensor: Any) -> Any:
        image = make_image(self, sensor)
        if sensor.attributes['role_name'] == 'rgb_left':
            image.width += 1                 # raw_data no longer matches
        return image
    backend = make_backend(fake, sensor_timeout=0.5)
    try:
        backend.setup(aeb_scenario(), small_rig())
        monkeypatch.setattr(fake_carla.FakeServer, '_image', bad_image)
        with caplog.at_level(logging.ERROR):
            frame = backend.step(0.05)
        assert set(frame.sensors) == {'rgb_right', 'lidar'}
        assert backend.stats['bad_data'] == 1
        assert any('rgb_left' in r.getMessage() and 'malformed' in
                   r.getMessage() for r in caplog.records)
    finally:
        backend.teardown()


# --------------------------------------------------------------------------
# cones and other actors


def test_cones_spawn_as_props_and_keep_their_class(fake: Any,
                                                   server: Any) -> None:
    xy = np.array([[10.0, 2.0], [10.0, -2.0], [20.0, 1.5], [30.0, 1.5],
                   [3.3, -28.0]])
    cls = np.array([CONE_BLUE, CONE_YELLOW, CONE_ORANGE, CONE_BIG_ORANGE,
                    CONE_ORANGE], np.uint8)
    track = SimpleNamespace(cones=ConeArray(xy=xy, class_id=cls,
                                            knocked=np.zeros(5, bool)))
    backend = make_backend(fake, cone_z=0.1)
    try:
        frame = backend.setup(aeb_scenario(track=track), small_rig())
        small = spawned(server, CONE_SMALL)
        big = spawned(server, CONE_BIG)
        assert len(small) == 4 and len(big) == 1
        loc = big[0][3].location
        assert (loc.x, loc.y, loc.z) == pytest.approx((30.0, -1.5, 0.1))
        locs = sorted((e[3].location.x, e[3].location.y) for e in small)
        assert locs[1] == pytest.approx((10.0, -2.0))  # blue: left = UE4 -y
        assert np.array_equal(frame.cones.class_id, cls)
        assert np.allclose(frame.cones.xy, xy)
        # The ego drives into the last cone: a cone_hit event, knocked.
        hits = []
        for _ in range(4):
            frame = backend.step(0.05)
            hits += [e for e in frame.events if e.kind == 'cone_hit']
        assert len(hits) == 1 and hits[0].data['index'] == 4
        assert 0.05 <= hits[0].sim_time <= frame.sim_time
        assert hits[0].data['class_id'] == CONE_ORANGE
        assert frame.cones.knocked.tolist() == [False] * 4 + [True]
    finally:
        backend.teardown()
    assert server.alive_actors('static.prop.*') == []


def test_scripted_behaviours(fake: Any, server: Any) -> None:
    backend = make_backend(fake)
    try:
        backend.setup(aeb_scenario({'type': 'brake', 'at_time': 0.1,
                                    'decel': 4.0}, target_speed=3.0),
                      small_rig())
        target_id = spawned(server, 'vehicle.lincoln.mkz_2020')[0][0]
        speeds = []
        for _ in range(5):
            frame = backend.step(0.05)
            speeds.append(frame.actors[0].velocity[0])
        log = [v for f, i, v in server.target_velocity_log if i == target_id]
        assert log[0] == pytest.approx((3.0, 0.0, 0.0))   # initial speed
        # Set before each tick: the speed at the tick's end time (0.05 ..
        # 0.25 s): constant until at_time 0.1 s, then 4 m/s^2 (the built-in
        # simulator's ScriptedActor profile).
        assert [v[0] for v in log[1:]] == pytest.approx(
            [3.0, 3.0, 2.8, 2.6, 2.4])
        assert speeds == pytest.approx([3.0, 3.0, 2.8, 2.6, 2.4])
    finally:
        backend.teardown()


def test_unknown_behaviour_fails_cleanly(fake: Any, server: Any) -> None:
    backend = make_backend(fake)
    with pytest.raises(ValueError, match='target.behaviour'):
        backend.setup(aeb_scenario({'type': 'teleport'}), small_rig())
    assert server.actors == {}


# --------------------------------------------------------------------------
# teardown, failures, signals


def test_teardown_restores_settings_and_destroys_everything(
        fake: Any, server: Any) -> None:
    original = server.world.get_settings()
    backend = make_backend(fake)
    backend.setup(aeb_scenario(), small_rig())
    ids = sorted(server.actors)
    backend.step(0.05)
    backend.teardown()
    assert server.actors == {}
    assert sorted(server.destroyed) == ids
    assert server.settings.synchronous_mode == original.synchronous_mode
    assert server.settings.fixed_delta_seconds == \
        original.fixed_delta_seconds
    backend.teardown()                                 # twice is fine
    assert len(server.destroyed) == len(ids)


@pytest.mark.parametrize('fail', ['vehicle.lincoln.mkz_2020', 'rgb_right'])
def test_failed_setup_leaves_no_zombies(fake: Any, server: Any,
                                        fail: str) -> None:
    original = server.world.get_settings()
    server.fail_spawn.add(fail)
    backend = make_backend(fake)
    with pytest.raises(BackendError):
        backend.setup(aeb_scenario(), small_rig())
    assert len(server.spawn_log) >= 2
    assert server.actors == {}
    assert server.settings.synchronous_mode == original.synchronous_mode


def test_unsupported_sensor_fails_cleanly(fake: Any, server: Any) -> None:
    rig = small_rig()
    rig[2].blueprint = 'sensor.other.gnss'
    backend = make_backend(fake)
    with pytest.raises(BackendError, match='sensor.other.gnss'):
        backend.setup(aeb_scenario(), rig)
    assert server.actors == {}


def test_signals_destroy_the_actors_then_chain(fake: Any,
                                               server: Any) -> None:
    calls = []
    old_term = signal.signal(signal.SIGTERM,
                             lambda s, f: calls.append(s))
    old_int = signal.getsignal(signal.SIGINT)
    backend = make_backend(fake)
    try:
        backend.setup(aeb_scenario(), small_rig())
        backend.install_signal_handlers()
        assert server.actors
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(0.05)
        assert server.actors == {}
        assert calls == [signal.SIGTERM]
        # SIGINT with Python's default handler: KeyboardInterrupt after it.
        backend.setup(aeb_scenario(), small_rig())
        signal.signal(signal.SIGINT, signal.default_int_handler)
        backend.install_signal_handlers()
        with pytest.raises(KeyboardInterrupt):
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.5)
        assert server.actors == {}
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    finally:
        backend.teardown()
        signal.signal(signal.SIGTERM, old_term)
        signal.signal(signal.SIGINT, old_int)


def test_unreachable_server_names_host_and_port(
        fake: Any, caplog: pytest.LogCaptureFixture) -> None:
    backend = make_backend(fake, port=2011, retries=2, timeout=0.5)
    with caplog.at_level(logging.WARNING):
        with pytest.raises(BackendError) as err:
            backend.setup(aeb_scenario(), small_rig())
    text = str(err.value)
    assert 'localhost:2011' in text and '2 attempt' in text
    assert 'running' in text and 'firewall' in text
    assert sum('not reachable' in r.getMessage()
               for r in caplog.records) == 2


def test_version_mismatch_warns(fake: Any,
                                caplog: pytest.LogCaptureFixture) -> None:
    fake.add_server('localhost', 2000, version='0.9.15')
    backend = make_backend(fake)
    with caplog.at_level(logging.WARNING):
        backend.connect()
    assert any('0.9.15' in r.getMessage() and '0.9.16' in r.getMessage()
               for r in caplog.records)


def test_server_lost_mid_run(fake: Any, server: Any,
                             caplog: pytest.LogCaptureFixture) -> None:
    backend = make_backend(fake)
    backend.setup(aeb_scenario(), small_rig())
    server.die_at_frame = server.frame + 3
    backend.step(0.05)
    backend.step(0.05)
    with pytest.raises(BackendError, match='lost the CARLA server at '
                       'localhost:2000'):
        backend.step(0.05)
    with caplog.at_level(logging.ERROR):
        backend.teardown()                       # logs, does not raise
    assert any('may remain' in r.getMessage() for r in caplog.records)


def test_camera_intrinsics() -> None:
    K = camera_intrinsics(1288, 964, 90.0)
    assert K[0, 0] == pytest.approx(644.0) and K[1, 1] == K[0, 0]
    assert (K[0, 2], K[1, 2]) == (644.0, 482.0)
    with pytest.raises(ValueError):
        camera_intrinsics(10, 10, 180.0)


def test_fake_matches_the_real_api() -> None:
    """Every public method of the fake exists on the real carla class."""
    pairs = [(fake_carla.World, carla.World), (fake_carla.Client,
                                               carla.Client),
             (fake_carla.Actor, carla.Actor), (fake_carla.Vehicle,
                                               carla.Vehicle),
             (fake_carla.Sensor, carla.Sensor),
             (fake_carla.BlueprintLibrary, carla.BlueprintLibrary),
             (fake_carla.ActorBlueprint, carla.ActorBlueprint),
             (fake_carla.Image, carla.Image),
             (fake_carla.LidarMeasurement, carla.LidarMeasurement),
             (fake_carla.CollisionEvent, carla.CollisionEvent),
             (fake_carla.WorldSnapshot, carla.WorldSnapshot),
             (fake_carla.ActorList, carla.ActorList),
             (fake_carla.Response, carla.command.Response),
             (fake_carla.SpawnActor, carla.command.SpawnActor)]
    helpers = {'advance', 'world_matrix'}
    for fake_cls, real_cls in pairs:
        own = {n for n in vars(fake_cls) if not n.startswith('_')} - helpers
        missing = [n for n in own if not hasattr(real_cls, n)]
        assert not missing, f'{fake_cls.__name__}: {missing}'


def test_aeb_tutorial_yaml_runs_unchanged(fake: Any, server: Any) -> None:
    """config/scenarios/aeb_tutorial.yaml spawns exactly the tutorial."""
    scenario = load_scenario('aeb_tutorial')
    backend = make_backend(fake)
    try:
        frame = backend.setup(scenario, small_rig())
        ego = spawned(server, 'vehicle.tesla.model3')
        target = spawned(server, 'vehicle.lincoln.mkz_2020')
        assert len(ego) == 1 and len(target) == 1
        for entry, x in ((ego[0], 0.0), (target[0], 50.0)):
            loc = entry[3].location
            assert (loc.x, loc.y, loc.z) == pytest.approx((x, 28.0, 1.0))
        v = [v for f, i, v in server.target_velocity_log if i == ego[0][0]]
        assert v == [pytest.approx((5.5, 0.0, 0.0))]
        # A left turn in REP-103 is a positive y: the target is straight
        # ahead, 50 m box centre to box centre (both mid-size profiles).
        gap = (frame.actors[0].pose.x + frame.actors[0].box_offset) - \
            (frame.ego.pose.x + frame.ego.box_offset)
        assert gap == pytest.approx(50.0 - 5.5 * 0.05, abs=1e-3)
        assert frame.actors[0].pose.y == pytest.approx(-28.0)
        for _ in range(3):
            frame = backend.step(0.05)
        assert frame.ego.velocity[0] == pytest.approx(5.5)
    finally:
        backend.teardown()
    assert server.actors == {}


def test_interpreter_exit_tears_down(fake: Any, server: Any,
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    registered = []
    monkeypatch.setattr('atexit.register', registered.append)
    monkeypatch.setattr('atexit.unregister', lambda f: registered.remove(f)
                        if f in registered else None)
    backend = make_backend(fake)
    backend.setup(aeb_scenario(), small_rig())
    assert registered == [backend.teardown]
    registered[0]()                                  # what atexit would do
    assert server.actors == {} and registered == []
