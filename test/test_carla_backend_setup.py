# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
The CARLA backend's set-up, frames and teardown on the wire.

The real carla==0.9.16 client against ``carla-hil serve`` (one server per
module). What a test checks is read back through a second client (actors,
attributes, parents, settings) or from the frames, not from the backend's
own book-keeping: the AEB tutorial spawned as the tutorial does, the rig
attached with its attributes, REP-103 frames, controls clamped, cones as
props with their classes kept, scripted actors, asynchronous mode,
sub-rate sensors, teardown in every way a run can end, and set-ups that
fail half-way leaving nothing behind.
"""

import atexit
import gc
import logging
import math
import os
import signal
import time
from types import SimpleNamespace
from typing import Any, Dict, List

from hil_bridge.bridge.backend import BackendError, VehicleControl
from hil_bridge.bridge.scenario import load_scenario, Scenario
from hil_bridge.carla_backend.backend import CarlaBackend
from hil_bridge.carla_server.launcher import restore_async, serve, wait_for
from hil_bridge.interface import frames
from hil_bridge.interface.cones import CONE_BIG_ORANGE, CONE_BLUE, CONE_ORANGE, CONE_YELLOW
from hil_bridge.interface.rig import carla_attributes, load_rig, parse_rig
from hil_bridge.interface.track import ConeArray
import numpy as np
import pytest

from test_carla_backend_wire import make  # noqa: I100 - test helper next to this file

carla = pytest.importorskip('carla')
DT = 0.05
MAX_STEER = 0.61                       # passenger_car's max_steer (rad)


@pytest.fixture(scope='module')
def server():
    """Yield a carla-hil serve process on HIL_Flat and a checking client."""
    with serve() as s:
        client = s.client()
        client.get_world().wait_for_tick(5.0)     # its episode stream is connected
        yield s, client
        if s.alive():
            restore_async(client)


def actors(client) -> List[Any]:
    """Return the actors the server has now (but the spectator)."""
    world = client.get_world()
    world.wait_for_tick(2.0) if not world.get_settings().synchronous_mode else None
    return [a for a in world.get_actors() if a.type_id != 'spectator']


@pytest.fixture
def check(server):
    """Yield the checking client; afterwards the server must be clean and asynchronous."""
    s, client = server
    yield client
    world = client.get_world()
    assert not world.get_settings().synchronous_mode
    left = [a.type_id for a in actors(client)]
    if left:        # clean up for the next test, then fail this one
        client.apply_batch_sync([carla.command.DestroyActor(a.id) for a in actors(client)])
    assert left == []


def small_rig(lidar_tick: float = 0.0, right_tick: float = 0.0) -> List[Any]:
    """Return a rig like hil_rig with small images."""
    cam = {'image_size_x': 64, 'image_size_y': 48, 'fov': 90.0}
    return parse_rig({'sensors': [
        {'id': 'rgb_left', 'blueprint': 'sensor.camera.rgb',
         'mount': {'x': 0.5, 'y': 0.06, 'z': 1.0}, 'attributes': dict(cam, sensor_tick=0.0)},
        {'id': 'rgb_right', 'blueprint': 'sensor.camera.rgb',
         'mount': {'x': 0.5, 'y': -0.06, 'z': 1.0},
         'attributes': dict(cam, sensor_tick=right_tick)},
        {'id': 'lidar', 'blueprint': 'sensor.lidar.ray_cast',
         'mount': {'x': 1.2, 'y': 0.0, 'z': 0.2, 'yaw': 0.3},
         'attributes': {'channels': 1, 'range': 60.0, 'upper_fov': 0.0, 'lower_fov': 0.0,
                        'points_per_second': 14400, 'rotation_frequency': 20.0,
                        'horizontal_fov': 90.0, 'dropoff_general_rate': 0.0,
                        'sensor_tick': lidar_tick}},
    ]}, '<test rig>')


def aeb(target_behaviour: Dict[str, Any] = None, target_speed: float = 0.0,
        track: Any = None) -> Scenario:
    """Return the ROS 2 AEB tutorial scenario (CARLA y = 28), target behaviour as asked."""
    s = load_scenario('aeb_tutorial')
    s.actors[0].behaviour = target_behaviour or {'type': 'static'}
    s.actors[0].initial_speed = target_speed
    s.track = track
    return s


def by_role(client, role: str) -> Any:
    found = [a for a in actors(client) if a.attributes.get('role_name') == role]
    assert len(found) == 1, (role, [a.type_id for a in found])
    return found[0]


# ----------------------------------------------------------------- set-up
def test_setup_spawns_the_aeb_tutorial(server, check) -> None:
    """config/scenarios/aeb_tutorial.yaml and hil_rig.yaml, as the tutorial spawns them."""
    rig = load_rig('hil_rig.yaml')
    backend = make(server)
    try:
        frame = backend.setup(load_scenario('aeb_tutorial'), rig)
        client = check
        assert client.get_world().get_settings().synchronous_mode
        assert client.get_world().get_settings().fixed_delta_seconds == pytest.approx(DT)
        ego = by_role(client, 'ego_vehicle')
        target = by_role(client, 'target')
        assert (ego.type_id, target.type_id) == ('vehicle.tesla.model3',
                                                 'vehicle.lincoln.mkz_2020')
        # the tutorial's CARLA coordinates (the ego has moved one frame at 5.5 m/s)
        assert (target.get_location().x, target.get_location().y) == pytest.approx((50.0, 28.0))
        assert ego.get_location().y == pytest.approx(28.0)
        assert ego.get_velocity().x == pytest.approx(5.5, abs=0.05)
        sensors = {a.attributes['role_name']: a for a in actors(client)
                   if a.type_id.startswith('sensor.')}
        assert set(sensors) == {'rgb_left', 'rgb_right', 'lidar', 'hil_collision'}
        assert all(a.parent.id == ego.id for a in sensors.values())
        for spec in rig:
            a = sensors[spec.sensor_id]
            assert a.type_id == spec.blueprint
            for key, value in carla_attributes(spec).items():
                assert a.attributes[key] == value, key
        assert sensors['rgb_left'].attributes['image_size_x'] == '1288'
        assert sensors['lidar'].attributes['horizontal_fov'] == '270.0'
        # REP-103 mounts: the left camera (y = +0.06) is UE y -0.06 of the ego
        left = sensors['rgb_left'].get_transform()
        ego_tf = ego.get_transform()
        rel = ego_tf.get_inverse_matrix()
        local = np.array(rel) @ np.array([left.location.x, left.location.y,
                                          left.location.z, 1.0])
        assert local[1] == pytest.approx(-0.06, abs=1e-3)
        assert local[0] == pytest.approx(0.5 + backend._ego_slot.frame_offset, abs=1e-3)
        # frame 0: every sensor, full-size bgr8 views; 50 m box centre to box centre
        assert frame.frame == 0 and frame.sim_time == 0.0
        assert set(frame.sensors) == {'rgb_left', 'rgb_right', 'lidar'}
        img = frame.sensors['rgb_left'].data
        assert img.shape == (964, 1288, 3) and img.dtype == np.uint8
        gap = (frame.actors[0].pose.x + frame.actors[0].box_offset) - \
            (frame.ego.pose.x + frame.ego.box_offset)
        assert gap == pytest.approx(50.0 - 5.5 * DT, abs=0.01)
    finally:
        backend.teardown()


def test_frames_are_rep103(server, check) -> None:
    """Zero-copy bgr8 views kept alive, K from the fov, lidar points where the target is."""
    backend = make(server)
    try:
        backend.setup(aeb(), small_rig())
        frame = backend.step(DT)
        assert frame.frame == 1 and frame.sim_time == pytest.approx(DT)
        cam = frame.sensors['rgb_left']
        assert cam.frame == 1 and cam.timestamp == pytest.approx(DT)
        img = cam.data
        assert img.shape == (48, 64, 3)
        assert not img.flags['C_CONTIGUOUS'] and not img.flags['OWNDATA']
        assert img.strides == (64 * 4, 4, 1)
        assert np.allclose(cam.intrinsics, [[32, 0, 32], [0, 32, 24], [0, 0, 1]])
        copy = img.copy()
        del frame, cam
        gc.collect()
        backend.step(DT)
        np.testing.assert_array_equal(img, copy)      # the view keeps its image alive
        frame = backend.step(DT)
        pts = frame.sensors['lidar'].data
        assert pts.dtype == np.float32 and pts.shape[1] == 4 and len(pts) > 10
        # the lidar (yaw 0.3 rad left of the axis, 90 deg field) sees the target's
        # rear 47 m ahead: points mapped to the world land on its box
        ego = frame.ego
        mount = small_rig()[2].mount
        T = frames.pose_to_matrix(ego.pose) @ frames.pose_to_matrix(mount)
        world_pts = frames.transform_points(T, pts[:, :3].astype(np.float64))
        target = frame.actors[0]
        assert target.role_name == 'target'
        on = np.abs(world_pts[:, 0] - (target.pose.x + target.box_offset
                                       - target.size[0] / 2.0)) < 0.02
        assert on.sum() > 3
        assert np.all(np.abs(world_pts[on, 1] - target.pose.y) <= target.size[1] / 2.0 + 0.02)
        assert (target.pose.x + target.box_offset, target.pose.y) == pytest.approx((50.0, -28.0))
        assert ego.pose.y == pytest.approx(-28.0) and ego.velocity[0] == pytest.approx(5.5, 0.01)
        assert ego.size == pytest.approx([2 * 2.396, 2 * 1.082, 2 * 0.745])
    finally:
        backend.teardown()


def test_bad_control_is_clamped(server, check) -> None:
    backend = make(server)
    try:
        backend.setup(aeb(), [])
        backend.apply_control(VehicleControl(throttle=float('nan'), steer=3.0,
                                             brake=float('nan')))
        frame = backend.step(DT)
        sent = backend._ego.get_control()                  # what the server applied
        assert (sent.throttle, sent.brake) == (0.0, 1.0)
        # full profile steer (0.61 rad) of the model3's 70 deg wheels at 5.5 m/s
        # (19.8 km/h: the steering curve's factor is 0.901)
        assert sent.steer == pytest.approx(MAX_STEER / (math.radians(70.0) * 0.901),
                                           abs=1e-3)
        assert frame.applied_control.brake == 1.0
        with pytest.raises(ValueError, match='dt'):
            backend.step(float('nan'))
    finally:
        backend.teardown()


# ------------------------------------------------------------------ cones
def test_cones_spawn_as_props_and_keep_their_class(server, check) -> None:
    """Every small cone is a trafficcone01, the big one a constructioncone; the ego hits one."""
    xy = np.array([[10.0, 2.0], [10.0, -2.0], [20.0, 1.5], [30.0, 1.5], [4.0, -28.0]])
    cls = np.array([CONE_BLUE, CONE_YELLOW, CONE_ORANGE, CONE_BIG_ORANGE, CONE_ORANGE],
                   np.uint8)
    track = SimpleNamespace(cones=ConeArray(xy=xy, class_id=cls, knocked=np.zeros(5, bool)))
    backend = make(server, cone_z=0.1)
    try:
        frame = backend.setup(aeb(track=track), [])
        # the checking client sees new actors with its next world snapshot
        # (late on a loaded machine: none yet at the first look in a CI run)
        deadline = time.monotonic() + 10.0
        props = [a for a in actors(check) if a.type_id.startswith('static.prop.')]
        while len(props) < len(xy) and time.monotonic() < deadline:
            time.sleep(0.05)
            props = [a for a in actors(check) if a.type_id.startswith('static.prop.')]
        small = sorted((a.get_location().x, a.get_location().y) for a in props
                       if a.type_id == 'static.prop.trafficcone01')
        big = [a for a in props if a.type_id == 'static.prop.constructioncone']
        assert len(small) == 4 and len(big) == 1
        loc = big[0].get_location()
        assert (loc.x, loc.y, loc.z) == pytest.approx((30.0, -1.5, 0.1))
        assert (10.0, -2.0) in [tuple(np.round(p, 3)) for p in small]   # blue left: UE -y
        assert all(a.attributes['role_name'] == 'hil_cone' for a in props)
        assert np.array_equal(frame.cones.class_id, cls) and np.allclose(frame.cones.xy, xy)
        hits = []
        for _ in range(8):
            frame = backend.step(DT)
            hits += [e for e in frame.events if e.kind == 'cone_hit']
        assert len(hits) == 1 and hits[0].data['index'] == 4
        assert hits[0].data['class_id'] == CONE_ORANGE
        assert frame.cones.knocked.tolist() == [False] * 4 + [True]
        assert backend.result.cones_hit == 1
    finally:
        backend.teardown()


# ------------------------------------------------------------- actors
def test_scripted_behaviours(server, check) -> None:
    """The target brakes at 4 m/s^2 from 0.1 s (the built-in ScriptedActor's profile)."""
    backend = make(server)
    try:
        backend.setup(aeb({'type': 'brake', 'at_time': 0.1, 'decel': 4.0}, target_speed=3.0),
                      [])
        speeds = [backend.step(DT).actors[0].velocity[0] for _ in range(5)]
        assert speeds == pytest.approx([3.0, 3.0, 2.8, 2.6, 2.4], abs=0.02)
        target = by_role(check, 'target')
        assert target.get_velocity().x == pytest.approx(2.4, abs=0.02)
    finally:
        backend.teardown()


def test_unknown_behaviour_fails_cleanly(server, check) -> None:
    backend = make(server)
    with pytest.raises(ValueError, match='target.behaviour'):
        backend.setup(aeb({'type': 'teleport'}), [])


# ------------------------------------------------------ asynchronous mode
def test_async_latest_and_step(server, check) -> None:
    """Frames follow the free-running server; latest() is None when nothing is newer."""
    backend = make(server, synchronous=False, fixed_delta_seconds=0.0)
    try:
        frame = backend.setup(aeb(), small_rig())
        assert frame.frame == 0
        assert not check.get_world().get_settings().synchronous_mode
        seen = [frame.frame]
        for _ in range(4):
            frame = backend.step(DT)
            seen.append(frame.frame)
            assert set(frame.sensors) == {'rgb_left', 'rgb_right', 'lidar'}
        assert seen == sorted(set(seen))
        backend.apply_control(VehicleControl(brake=1.0))    # sent at once, no step
        assert wait_for(lambda: by_role(check, 'ego_vehicle').get_control().brake == 1.0,
                        2.0)
    finally:
        backend.teardown()


def test_async_without_sensors(server, check) -> None:
    backend = make(server, synchronous=False, fixed_delta_seconds=0.0,
                   collision_sensor=False)
    with backend:
        frame = backend.setup(aeb(), [])
        assert frame.frame == 0 and frame.sensors == {}
        nxt = backend.step(DT)
        assert nxt.frame > 0 and nxt.sim_time > 0.0
        assert backend.step(DT).frame > nxt.frame
        assert len(actors(check)) == 2


def test_sensors_at_different_rates(server, check) -> None:
    """At 50 ms frames rgb_left comes every frame, the lidar every 2nd, rgb_right every 3rd."""
    backend = make(server, sensor_timeout=3.0)
    try:
        frame = backend.setup(aeb(), small_rig(lidar_tick=0.1, right_tick=0.15))
        seen = [set(frame.sensors)]
        t0 = time.monotonic()
        for _ in range(7):
            frame = backend.step(DT)
            seen.append(set(frame.sensors))
            assert all(r.frame == frame.frame for r in frame.sensors.values())
            assert not [e for e in frame.events if e.kind == 'warning']
        assert time.monotonic() - t0 < 3.0               # nobody waited 3 s
        lidar = [i for i, s in enumerate(seen) if 'lidar' in s]
        right = [i for i, s in enumerate(seen) if 'rgb_right' in s]
        assert np.all(np.diff(lidar) == 2) and len(lidar) >= 3
        assert np.all(np.diff(right) == 3) and len(right) >= 2
        assert all('rgb_left' in s for s in seen)
    finally:
        backend.teardown()


# --------------------------------------------------------------- teardown
def test_teardown_restores_settings_and_destroys_everything(server, check) -> None:
    before = check.get_world().get_settings()
    backend = make(server)
    backend.setup(aeb(), small_rig())
    assert len(actors(check)) == 6               # ego, target, collision, 2 cameras, lidar
    backend.step(DT)
    backend.teardown()
    after = check.get_world().get_settings()
    assert (after.synchronous_mode, after.fixed_delta_seconds) == \
        (before.synchronous_mode, before.fixed_delta_seconds)
    assert actors(check) == []
    # the client is let go in teardown's thread (freed later by the garbage
    # collector inside one of its own threads, the 0.9.16 client aborts)
    assert backend._client is None and backend._world is None
    backend.teardown()                           # twice is fine
    assert backend.stats['frames'] == 2          # kept


@pytest.mark.parametrize('fail', ['target', 'rig'])
def test_failed_setup_leaves_no_zombies(server, check, fail: str) -> None:
    """The target's spawn point is taken / the rig names a blueprint the server lacks."""
    world = check.get_world()
    blocker = None
    rig = small_rig()
    if fail == 'target':
        bp = world.get_blueprint_library().find('vehicle.audi.a2')
        blocker = world.spawn_actor(bp, carla.Transform(carla.Location(50.0, 28.0, 0.5)))
    else:
        rig[1].blueprint = 'sensor.camera.instance_segmentation'
    backend = make(server)
    try:
        with pytest.raises(BackendError, match='spawning' if fail == 'target' else
                           'instance_segmentation'):
            backend.setup(aeb(), rig)
        left = actors(check)
        assert [a.id for a in left] == ([blocker.id] if blocker else [])
        assert not world.get_settings().synchronous_mode
    finally:
        if blocker is not None:
            check.apply_batch_sync([carla.command.DestroyActor(blocker.id)])


def test_unsupported_sensor_fails_cleanly(server, check) -> None:
    rig = small_rig()
    rig[2].blueprint = 'sensor.other.radar'
    backend = make(server)
    with pytest.raises(BackendError, match='sensor.other.radar'):
        backend.setup(aeb(), rig)


def test_signals_destroy_the_actors_then_chain(server, check) -> None:
    calls = []
    old_term = signal.signal(signal.SIGTERM, lambda s, f: calls.append(s))
    old_int = signal.getsignal(signal.SIGINT)
    backend = make(server)
    try:
        backend.setup(aeb(), [])
        backend.install_signal_handlers()
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(0.05)
        assert actors(check) == [] and calls == [signal.SIGTERM]
        # SIGINT with Python's default handler: KeyboardInterrupt after the teardown
        backend.setup(aeb(), [])
        signal.signal(signal.SIGINT, signal.default_int_handler)
        backend.install_signal_handlers()
        with pytest.raises(KeyboardInterrupt):
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.5)
        assert actors(check) == []
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    finally:
        backend.teardown()
        signal.signal(signal.SIGTERM, old_term)
        signal.signal(signal.SIGINT, old_int)


def test_interpreter_exit_tears_down(server, check, monkeypatch) -> None:
    registered = []
    monkeypatch.setattr(atexit, 'register', registered.append)
    monkeypatch.setattr(atexit, 'unregister',
                        lambda f: registered.remove(f) if f in registered else None)
    backend = make(server)
    backend.setup(aeb(), [])
    assert registered == [backend.teardown]
    registered[0]()                              # what atexit would do
    assert actors(check) == [] and registered == []


def test_unreachable_server_names_host_and_port(caplog) -> None:
    import socket
    with socket.socket() as sock:
        sock.bind(('127.0.0.1', 0))
        port = sock.getsockname()[1]             # nothing listens on it
    backend = CarlaBackend(host='127.0.0.1', port=port, retries=2, timeout=0.5,
                           retry_delay=0.0)
    caplog.set_level(logging.WARNING)
    with pytest.raises(BackendError) as err:
        backend.setup(aeb(), [])
    text = str(err.value)
    assert f'127.0.0.1:{port}' in text and '2 attempt' in text
    assert 'running' in text and 'firewall' in text
    assert sum('not reachable' in r.getMessage() for r in caplog.records) == 2
