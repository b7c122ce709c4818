# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""BuiltinBackend: frames, sensor scheduling, referee, determinism."""

import math
from typing import Any, List

from hil_bridge.bridge.backend import BackendError, VehicleControl
from hil_bridge.bridge.scenario import load_scenario
from hil_bridge.interface.frames import Pose, pose_to_matrix
from hil_bridge.interface.rig import load_rig, SensorSpec
from hil_bridge.interface.track import arc_length
from hil_bridge.sim import tracks as T
from hil_bridge.sim.builtin_backend import BuiltinBackend
from hil_bridge.sim.reference_lap import reference_lap_times
import numpy as np
from path_planning.pure_pursuit import curvature_to
import pytest


class _Probe:
    """Stand-in sensor: records what the backend hands it."""

    def __init__(self, spec: SensorSpec) -> None:
        self.sensor_tick = float(spec.attributes.get('sensor_tick', 0.0))
        self.mount_matrix = pose_to_matrix(spec.mount)
        self.calls: List[Any] = []

    def measure(self, world, pose, t, dt, rng) -> np.ndarray:
        self.calls.append((world.box_center.copy(), pose.copy(), t, dt,
                           world.cone_up.copy()))
        return np.zeros((int(round(100 * dt)), 4), np.float32)


def _probe_factory(store: dict):
    def make(spec: SensorSpec) -> _Probe:
        store[spec.sensor_id] = _Probe(spec)
        return store[spec.sensor_id]
    return make


def _spec(sensor_id: str, tick: float, mount: Pose = Pose()) -> SensorSpec:
    return SensorSpec(sensor_id, 'sensor.lidar.ray_cast', mount,
                      {'sensor_tick': tick})


def test_frames_poses_and_world_without_ego() -> None:
    """Sensor poses are ego pose @ mount; the world holds only others."""
    probes: dict = {}
    be = BuiltinBackend(sensor_factory=_probe_factory(probes))
    sc = load_scenario('aeb_tutorial')
    mount = Pose(x=2.0, y=0.3, z=1.5, pitch=0.1)
    f0 = be.setup(sc, [_spec('a', 0.0, mount)])
    assert f0.frame == 0 and f0.sim_time == 0.0
    assert f0.ego.role_name == 'ego_vehicle'
    assert f0.ego.speed == pytest.approx(5.5)
    be.apply_control(VehicleControl(steer=0.3, throttle=0.2))
    for _ in range(50):
        f = be.step(0.02)
    assert f.frame == 50 and f.sim_time == pytest.approx(1.0)
    assert f.applied_control.steer == 0.3
    boxes, pose, t, dt, _up = probes['a'].calls[-1]
    assert t == f.sim_time and dt == pytest.approx(0.02)
    e = f.ego.pose
    expected = pose_to_matrix(e.x, e.y, 0.0, 0.0, 0.0, e.yaw) @ \
        pose_to_matrix(mount)
    np.testing.assert_allclose(pose, expected, atol=1e-12)
    assert boxes.shape == (1, 3)       # the target only, never the ego
    (target,) = f.actors
    offset = target.box_offset
    np.testing.assert_allclose(boxes[0], [50.0 + offset, -28.0,
                                          1.44 / 2.0])
    assert target.role_name == 'target' and target.speed == 0.0
    assert f.sensors['a'].data.shape == (2, 4)
    assert f.sensors['a'].frame == 50


def test_sensor_tick_schedule() -> None:
    """A tick of 0 measures every step, 0.05 at dt 0.01 every 5th step."""
    probes: dict = {}
    be = BuiltinBackend(sensor_factory=_probe_factory(probes))
    be.setup(load_scenario('aeb_tutorial'),
             [_spec('fast', 0.0), _spec('slow', 0.05)])
    seen = {'fast': [], 'slow': []}
    for _ in range(20):
        f = be.step(0.01)
        for k in f.sensors:
            seen[k].append(f.frame)
    assert seen['fast'] == list(range(1, 21))
    assert seen['slow'] == [5, 10, 15, 20]
    dts = [c[3] for c in probes['slow'].calls[1:]]
    np.testing.assert_allclose(dts, 0.05)
    assert probes['slow'].calls[0][3] == 0.0       # frame 0: no time yet


def test_real_sensors_and_render_switch() -> None:
    """With C's sensors: lidar (N, 4) float32, cameras bgr8 + K."""
    sc = load_scenario('ci_trackdrive')
    rig = load_rig('hil_rig')
    be = BuiltinBackend(seed=3)
    be.setup(sc, rig)
    f = be.step(1.0 / 30.0)
    lidar = f.sensors['lidar'].data
    assert lidar.dtype == np.float32 and lidar.shape[1] == 4
    cam = f.sensors['rgb_left']
    assert cam.data.shape == (964, 1288, 3) and cam.data.dtype == np.uint8
    assert cam.intrinsics.shape == (3, 3)
    assert cam.intrinsics[0, 2] == pytest.approx(1288 / 2.0)
    fast = BuiltinBackend(seed=3, render_cameras=False)
    fast.setup(sc, rig)
    f2 = fast.step(1.0 / 30.0)
    assert set(f2.sensors) == {'lidar'}
    np.testing.assert_array_equal(f2.sensors['lidar'].data, lidar)


def test_bad_sensor_and_bad_calls() -> None:
    """Bad rigs fail at set-up; bad dt and early calls raise."""
    be = BuiltinBackend()
    assert be.result is None
    with pytest.raises(BackendError):
        be.step(0.01)
    with pytest.raises(BackendError):
        be.apply_control(VehicleControl())
    sc = load_scenario('aeb_tutorial')
    bad = SensorSpec('l', 'sensor.lidar.ray_cast', Pose(), {'channels': 0})
    with pytest.raises(BackendError, match='channels'):
        be.setup(sc, [bad])
    be.setup(sc, [])
    for dt in (0.0, -1.0, float('nan'), float('inf')):
        with pytest.raises(ValueError, match='dt'):
            be.step(dt)
    be.apply_control(VehicleControl(brake=float('nan')))
    assert be.step(0.01).applied_control.brake == 1.0
    be.teardown()
    be.teardown()
    with pytest.raises(ValueError):
        BuiltinBackend(lidar_noise_stddev=-1.0)


def _run(seed: int, steps: int = 40) -> list:
    sc = load_scenario('ci_trackdrive')
    rig = [s for s in load_rig('hil_rig') if s.sensor_id == 'lidar']
    be = BuiltinBackend(seed=seed, lidar_noise_stddev=0.03)
    frames = [be.setup(sc, rig)]
    for k in range(steps):
        be.apply_control(VehicleControl(throttle=0.4, steer=0.1 * math.sin(k)))
        frames.append(be.step(0.02))
    return frames


def test_determinism() -> None:
    """Same seed: identical frames; another seed: other lidar noise."""
    a, b, c = _run(5), _run(5), _run(6)
    for fa, fb in zip(a, b):
        assert fa.ego.pose == fb.ego.pose
        np.testing.assert_array_equal(fa.sensors['lidar'].data,
                                      fb.sensors['lidar'].data)
    la = np.concatenate([f.sensors['lidar'].data for f in a])
    lc = np.concatenate([f.sensors['lidar'].data for f in c])
    assert a[-1].ego.pose == c[-1].ego.pose    # physics has no noise
    assert la.shape == lc.shape and not np.array_equal(la, lc)


def _aeb(brake_ttc: float) -> tuple:
    be = BuiltinBackend()
    f = be.setup(load_scenario('aeb_tutorial'), [])
    events = []
    braking = False
    while not be.referee.finished:
        gap = f.actors[0].pose.x - f.ego.pose.x - 4.69
        ttc = gap / f.ego.speed if f.ego.speed > 0.01 else math.inf
        braking = braking or ttc < brake_ttc     # latched, like an AEB
        be.apply_control(VehicleControl(brake=1.0) if braking
                         else VehicleControl())
        f = be.step(0.01)
        events += f.events
    return be, f, events


def test_aeb_tutorial_collision_and_brake() -> None:
    """No braking: collision at about 4.4 m/s; braking at TTC 3 s: stop."""
    be, f, events = _aeb(0.0)
    col = [e for e in events if e.kind == 'collision']
    assert len(col) == 1
    assert 4.0 < col[0].data['impact_speed'] < 5.5
    assert be.result.status == 'DNF'
    assert f.ego.speed == 0.0
    gap = f.actors[0].pose.x - f.ego.pose.x - 4.69
    assert -0.2 < gap < 0.2
    be, f, events = _aeb(3.0)
    assert not [e for e in events if e.kind == 'collision']
    assert be.result.status == 'finished'
    gap = f.actors[0].pose.x - f.ego.pose.x - 4.69
    print(f'AEB tutorial, brake at TTC < 3 s: stopped {gap:.2f} m short')
    assert 8.0 < gap < 13.0   # v ~ 4.7 m/s: gap 14 m minus ~2.7 m


def test_closed_loop_lap_of_ci_track() -> None:
    """Pure pursuit on the true centre line: one clean lap."""
    sc = load_scenario('ci_trackdrive')
    be = BuiltinBackend()
    f = be.setup(sc, [])
    cl = T.resample(sc.track.centerline, True, 0.25)
    wb = be.profile.wheelbase
    while not be.referee.finished:
        p = f.ego.pose
        i = int(np.argmin(np.hypot(cl[:, 0] - p.x, cl[:, 1] - p.y)))
        kappa = curvature_to(cl[(i + 16) % len(cl)], p.x, p.y, p.yaw)  # 4 m ahead
        steer = -math.atan(wb * kappa) / be.profile.max_steer   # CARLA: > 0 is right
        thr = 0.3 if f.ego.speed < 6.0 else 0.0
        be.apply_control(VehicleControl(throttle=thr, steer=steer))
        f = be.step(0.02)
    r = be.result
    assert r.status == 'finished', r.as_dict()
    assert r.laps == 1 and r.cones_hit == 0 and r.off_courses == 0
    assert sc.track.length / 7.0 < r.lap_times[0] < sc.track.length / 4.0
    # the reference lap of the profile at its limits is far faster
    (ref,) = r.reference_lap_times
    assert ref == pytest.approx(reference_lap_times(sc.track, be.profile,
                                                    1)[0])
    assert r.as_dict()['lap_time_ratio'] == [round(r.lap_times[0] / ref, 4)]
    assert 1.5 < r.lap_times[0] / ref < 4.0


def test_knocked_cone_leaves_the_sensor_world() -> None:
    """Steering into the boundary knocks cones; sensors stop seeing them."""
    probes: dict = {}
    be = BuiltinBackend(sensor_factory=_probe_factory(probes))
    f = be.setup(load_scenario('acceleration'), [_spec('a', 0.0)])
    hits = []
    for k in range(300):
        be.apply_control(VehicleControl(throttle=0.3,
                                        steer=-0.3 if k > 50 else 0.0))
        f = be.step(0.02)
        hits += [e for e in f.events if e.kind == 'cone_hit']
        if hits:
            break
    assert hits
    idx = hits[0].data['index']
    assert f.cones.knocked[idx]
    assert not probes['a'].calls[-1][4][idx]
    assert probes['a'].calls[-2][4][idx]
    assert be.result.penalty_time == pytest.approx(2.0 * len(hits))


def test_scripted_actors() -> None:
    """Constant speed, braking at a time, following the centre line."""
    from hil_bridge.sim.actors import ScriptedActor
    size = np.array([4.0, 2.0, 1.5])
    a = ScriptedActor('a', Pose(yaw=math.pi / 2), size,
                      {'type': 'constant_speed', 'speed': 5.0}, 5.0)
    b = ScriptedActor('b', Pose(), size,
                      {'type': 'brake', 'at_time': 1.0, 'decel': 5.0}, 10.0)
    track = T.random_track(2)
    start = track.centerline[10]
    c = ScriptedActor('c', Pose(x=start[0], y=start[1]), size,
                      {'type': 'constant_speed', 'speed': 4.0,
                       'path': 'centerline'}, 0.0,
                      centerline=track.centerline, closed=True)
    p = ScriptedActor('p', Pose(x=3.0), size, {'type': 'parked'}, 7.0)
    dt = 0.01
    for k in range(1, 401):
        for actor in (a, b, c, p):
            actor.step(k * dt, dt)
    assert a.x == pytest.approx(0.0, abs=1e-9)
    assert a.y == pytest.approx(20.0)
    assert b.v == 0.0 and b.x == pytest.approx(10.0 + 100.0 / 10.0,
                                               abs=0.1)
    # c accelerated at 3 m/s^2 to 4 m/s, then held it: about 13.3 m
    s = arc_length(track.centerline, True)
    from scipy.spatial import cKDTree
    d, i = cKDTree(track.centerline).query([c.x, c.y])
    assert d < 0.26          # on the polyline, vertices 0.5 m apart
    assert s[i] - s[10] == pytest.approx(16.0 - 8.0 / 3.0, abs=0.6)
    assert (p.x, p.v) == (3.0, 0.0)
    with pytest.raises(ValueError, match='behaviour.type'):
        ScriptedActor('x', Pose(), size, {'type': 'teleport'})
    with pytest.raises(ValueError, match='decel'):
        ScriptedActor('x', Pose(), size, {'type': 'brake', 'at_time': 1.0})


def test_acceleration_run_full_throttle() -> None:
    """Full throttle down the acceleration track: finished in 3.5-6 s."""
    be = BuiltinBackend()
    be.setup(load_scenario('acceleration'), [])
    be.apply_control(VehicleControl(throttle=1.0))
    while not be.referee.finished:
        be.step(0.01)
    r = be.result
    print(f'acceleration: 75 m in {r.lap_times[0]:.2f} s')
    assert r.status == 'finished' and r.cones_hit == 0
    assert 3.5 < r.lap_times[0] < 6.0


def test_camera_noise_is_seeded() -> None:
    """Pixel noise: same seed -> same image, other seed -> other image."""
    cam = SensorSpec('cam', 'sensor.camera.rgb', Pose(x=0.5, z=1.0),
                     {'image_size_x': 160, 'image_size_y': 120, 'fov': 90.0})
    sc = load_scenario('ci_trackdrive')
    imgs = []
    for seed, noise in ((1, 10.0), (1, 10.0), (2, 10.0), (1, 0.0)):
        be = BuiltinBackend(seed=seed, camera_noise_stddev=noise)
        be.setup(sc, [cam])
        imgs.append(be.step(0.05).sensors['cam'].data.astype(np.int16))
    np.testing.assert_array_equal(imgs[0], imgs[1])
    assert not np.array_equal(imgs[0], imgs[2])
    diff = imgs[0] - imgs[3]
    assert 5.0 < diff.std() < 15.0


def test_random_lighting_varies_with_seed_and_is_shared() -> None:
    """random_lighting: seeded, one lighting for both cameras, not default."""
    from hil_bridge.bridge.scenario import load_scenario
    from hil_bridge.interface.rig import load_rig
    from hil_bridge.sim.builtin_backend import BuiltinBackend
    rig = load_rig('hil_rig.yaml')
    light = {}
    for seed in (1, 2):
        be = BuiltinBackend(seed=seed, random_lighting=True)
        be.setup(load_scenario('acceleration'), rig)
        cams = [s.sensor for s in be.sensors if hasattr(s.sensor, 'lighting')]
        assert len(cams) == 2 and cams[0].lighting == cams[1].lighting
        light[seed] = cams[0].lighting
        be.teardown()
    assert light[1] != light[2]
    plain = BuiltinBackend(seed=1)
    plain.setup(load_scenario('acceleration'), rig)
    from hil_bridge.sim.camera import Lighting
    assert all(s.sensor.lighting == Lighting() for s in plain.sensors
               if hasattr(s.sensor, 'lighting'))
    plain.teardown()
