# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
Scenario description shared by every backend (no rclpy).

A scenario (``config/scenarios/<name>.yaml``) names the mission, the ego
vehicle and its sensor rig, the other actors and the track (cones). Poses
are REP-103 in ``map``.
"""

from dataclasses import dataclass, field
import math
import os
from typing import Any, Dict, List, Optional, Tuple

from hil_bridge.interface.config import read_yaml, YamlLines
from hil_bridge.interface.frames import Pose
import numpy as np


@dataclass
class ActorSpec:
    """
    A vehicle or static obstacle to spawn.

    ``profile`` names a vehicle profile (``config/vehicles``) or is empty
    for a static obstacle; ``size`` is (length, width, height) in metres of
    its box; ``initial_speed`` (m/s) is applied along the heading at spawn
    (CARLA ``set_target_velocity``); ``behaviour`` describes scripted
    motion, e.g. ``{'type': 'constant_speed', 'speed': 5.5}`` or
    ``{'type': 'brake', 'at_time': 2.0, 'decel': 6.0}``.
    """

    role_name: str
    blueprint: str
    pose: Pose
    size: np.ndarray
    profile: str = ''
    initial_speed: float = 0.0
    behaviour: Dict[str, Any] = field(default_factory=dict)


@dataclass
class Scenario:
    """
    Everything a backend needs to build a world.

    ``track`` is a ``hil_bridge.interface.track.Track`` (cones, centre line,
    timing lines) or None; ``rig`` is a sensor rig file under
    ``config/sensors``; ``timeout`` is in sim seconds.
    """

    name: str
    mission: str
    ego: ActorSpec
    actors: List[ActorSpec] = field(default_factory=list)
    track: Optional[Any] = None
    rig: str = 'hil_rig.yaml'
    #: the CARLA map the poses belong to (``map:`` in the file; '' = any:
    #: the server's current map); the CARLA backend loads it when the
    #: server has another
    map_name: str = ''
    laps: int = 1
    timeout: float = 120.0
    source: str = ''
    #: node parameters this scenario needs ({node name: {param: value}}),
    #: applied by the runner like ``--set`` (which wins over them)
    node_params: Dict[str, Dict[str, Any]] = field(default_factory=dict)


# ----------------------------------------------------------------- loading
SCENARIO_KEYS = ('name', 'mission', 'ego', 'actors', 'track', 'rig', 'map', 'laps',
                 'timeout', 'description', 'node_params')
ACTOR_KEYS = ('role_name', 'blueprint', 'profile', 'pose', 'size',
              'initial_speed', 'behaviour')
TRACK_KEYS = ('generator', 'seed', 'params', 'track_file', 'format',
              'convention')
MISSIONS = ('acceleration', 'skidpad', 'autocross', 'trackdrive', 'aeb',
            'free')
POSE_KEYS = ('x', 'y', 'z', 'roll', 'pitch', 'yaw')
#: missions driven round a loop: more than one lap (trackdrive: any) needs
#: a closed track
LOOP_MISSIONS = ('autocross', 'trackdrive')
#: Most laps and longest timeout (s) a scenario may ask for (a typo such as
#: ``laps: 1e12`` is a configuration error, not a run that never ends).
MAX_LAPS = 1000
MAX_TIMEOUT = 7 * 24 * 3600.0
#: Laps per FS mission when the scenario does not say (FS rules).
DEFAULT_LAPS = {'trackdrive': 10, 'autocross': 1, 'acceleration': 1,
                'skidpad': 4}


def scenario_path(name_or_path: str) -> str:
    """Return the file of a scenario given by name or path."""
    from hil_bridge.interface.config import config_path
    if os.path.isabs(name_or_path) or os.path.isfile(name_or_path):
        return os.path.abspath(name_or_path)
    name = name_or_path
    if not name.endswith(('.yaml', '.yml')):
        name += '.yaml'
    return config_path('scenarios', name)


def _number(w: YamlLines, keys: Tuple[Any, ...], value: Any, lo: float = -math.inf,
            integer: bool = False, hi: float = math.inf) -> float:
    if isinstance(value, bool) or value is None:
        raise w.error(keys, f'expected a number, got {value!r}')
    try:
        out = float(value)
    except (TypeError, ValueError):
        raise w.error(keys, f'expected a number, got {value!r}') from None
    if not math.isfinite(out):
        raise w.error(keys, f'must be finite, got {value!r}')
    if out < lo:
        raise w.error(keys, f'must be >= {lo}, got {value!r}')
    if out > hi:
        raise w.error(keys, f'must be <= {hi:g}, got {value!r}')
    if integer:
        if out != int(out):
            raise w.error(keys, f'must be an integer, got {value!r}')
        return int(out)
    return out


def _pose(w: YamlLines, keys: Tuple[Any, ...], raw: Any) -> Pose:
    if not isinstance(raw, dict):
        raise w.error(keys, f'expected a mapping with {list(POSE_KEYS)}, got '
                      f'{raw!r}')
    extra = sorted(set(raw) - set(POSE_KEYS))
    if extra:
        raise w.error(keys, f'unknown pose fields {extra}')
    return Pose(**{k: _number(w, keys + (k,), raw[k]) for k in POSE_KEYS
                   if k in raw})


def _actor(w: YamlLines, keys: Tuple[Any, ...], raw: Any, ego: bool,
           track: Any) -> ActorSpec:
    from hil_bridge.interface.vehicle_profile import load_vehicle_profile
    from hil_bridge.sim.actors import check_behaviour
    if not isinstance(raw, dict):
        raise w.error(keys, 'expected a mapping')
    extra = sorted(set(raw) - set(ACTOR_KEYS))
    if extra:
        raise w.error(keys, f'unknown fields {extra} (expected '
                      f'{list(ACTOR_KEYS)})')
    profile_name = str(raw.get('profile', '') or '')
    if ego and not profile_name:
        raise w.error(keys + ('profile',), 'the ego needs a vehicle profile')
    profile = None
    if profile_name:
        try:
            profile = load_vehicle_profile(profile_name)
        except (OSError, ValueError) as exc:
            raise w.error(keys + ('profile',), str(exc)) from None
    pose_raw = raw.get('pose', 'car_start' if ego else None)
    if pose_raw == 'car_start':
        if track is None:
            raise w.error(keys + ('pose',), 'car_start needs a track')
        p = track.car_start
        pose = Pose(p.x, p.y, p.z, p.roll, p.pitch, p.yaw)
    elif pose_raw is None:
        raise w.error(keys + ('pose',), 'missing')
    else:
        pose = _pose(w, keys + ('pose',), pose_raw)
    if 'size' in raw:
        size = raw['size']
        if not isinstance(size, (list, tuple)) or len(size) != 3:
            raise w.error(keys + ('size',), 'expected [length, width, '
                          f'height] in metres, got {size!r}')
        size = np.array([_number(w, keys + ('size', i), v, lo=1e-3)
                         for i, v in enumerate(size)])
    elif profile is not None:
        size = np.array([profile.length, profile.width, profile.height])
    else:
        raise w.error(keys + ('size',), 'a static obstacle needs a size')
    role = str(raw.get('role_name', 'ego_vehicle' if ego else ''))
    if not role:
        raise w.error(keys + ('role_name',), 'missing')
    blueprint = str(raw.get('blueprint', profile.blueprint if profile
                            else 'static.prop.box'))
    speed = _number(w, keys + ('initial_speed',),
                    raw.get('initial_speed', 0.0))
    behaviour = raw.get('behaviour', {}) or {}
    if not isinstance(behaviour, dict):
        raise w.error(keys + ('behaviour',), 'expected a mapping')
    if not ego:
        try:
            behaviour = check_behaviour(behaviour, role)
        except ValueError as exc:
            field_name = str(exc).split(':')[0].split('.')[-1]
            raise w.error(keys + ('behaviour', field_name),
                          str(exc)) from None
    return ActorSpec(role_name=role, blueprint=blueprint, pose=pose,
                     size=size, profile=profile_name, initial_speed=speed,
                     behaviour=dict(behaviour))


def _track(w: YamlLines, raw: Any, path: str, mission: str) -> Any:
    from hil_bridge.sim.track_files import CONVENTIONS, FORMATS
    from hil_bridge.sim.tracks import GENERATORS, make_track
    keys: Tuple[Any, ...] = ('track',)
    if not isinstance(raw, dict):
        raise w.error(keys, 'expected a mapping')
    extra = sorted(set(raw) - set(TRACK_KEYS))
    if extra:
        raise w.error(keys, f'unknown fields {extra} (expected '
                      f'{list(TRACK_KEYS)})')
    spec = dict(raw)
    if 'track_file' in spec:
        spec['mission'] = mission
        for key, allowed in (('format', ('auto', *FORMATS)),
                             ('convention', CONVENTIONS)):
            if key in spec and spec[key] not in allowed:
                raise w.error(keys + (key,), f'{spec[key]!r} is not one of '
                              f'{list(allowed)}')
    elif 'generator' not in spec:
        raise w.error(keys, 'needs generator or track_file')
    elif spec['generator'] not in GENERATORS:
        raise w.error(keys + ('generator',), f'unknown generator '
                      f'{spec["generator"]!r} (expected one of '
                      f'{list(GENERATORS)})')
    elif 'format' in spec or 'convention' in spec:
        raise w.error(keys, 'format and convention go with track_file')
    if 'seed' in spec:
        spec['seed'] = _number(w, keys + ('seed',), spec['seed'], lo=0,
                               integer=True)
    if spec.get('params') is not None and not isinstance(spec['params'],
                                                         dict):
        raise w.error(keys + ('params',), 'expected a mapping')
    if spec.get('generator') in ('random', 'hard'):
        spec.setdefault('params', {})
        spec['params'] = dict(spec['params'] or {})
        spec['params'].setdefault('mission', mission)
    try:
        return make_track(spec, path)
    except TypeError as exc:
        raise w.error(keys + ('params',), str(exc)) from None
    except (OSError, ValueError) as exc:
        field_name = 'track_file' if 'track_file' in spec else 'params'
        raise w.error(keys + (field_name,), str(exc)) from None


def _apply_overrides(data: Dict[str, Any], overrides: Dict[str, Any]
                     ) -> None:
    """Apply ``key=value`` overrides; ``a__b`` sets ``data['a']['b']``."""
    for key, value in overrides.items():
        parts = key.split('__')
        if parts == ['seed']:
            parts = ['track', 'seed']
        node = data
        for part in parts[:-1]:
            if not isinstance(node.get(part), dict):
                node[part] = {}
            node = node[part]
        node[parts[-1]] = value


def load_scenario(name_or_path: str, **overrides: Any) -> Scenario:
    """
    Load and validate ``config/scenarios/<name>.yaml`` (or a path).

    Keyword overrides replace fields before validation: ``laps=2``,
    ``timeout=30``, ``seed=5`` (the track seed), and nested fields with a
    double underscore, e.g. ``ego__initial_speed=8.0`` or
    ``track__params={'length': [200, 260]}``. Raises ``ValueError`` naming
    the file, line and field on bad input, ``FileNotFoundError`` for a
    missing file.
    """
    path = scenario_path(name_or_path)
    if not os.path.isfile(path):
        raise FileNotFoundError(f'scenario not found: {path}')
    data, w = read_yaml(path)
    if not isinstance(data, dict):
        raise ValueError(f'{path}: expected a YAML mapping at top level')
    _apply_overrides(data, overrides)
    extra = sorted(set(data) - set(SCENARIO_KEYS))
    if extra:
        raise w.error((extra[0],), f'unknown field (expected one of '
                      f'{list(SCENARIO_KEYS)})')
    name = data.get('name', os.path.splitext(os.path.basename(path))[0])
    if not isinstance(name, str) or not name.strip():
        raise w.error(('name',), f'expected a non-empty name, got {name!r}')
    mission = data.get('mission')
    if mission not in MISSIONS:
        raise w.error(('mission',), f'{mission!r} is not one of '
                      f'{list(MISSIONS)}')
    track = None
    if data.get('track') is not None:
        track = _track(w, data['track'], path, mission)
    elif mission in DEFAULT_LAPS:
        raise w.error(('track',), f'mission {mission!r} needs a track')
    if 'ego' not in data:
        raise w.error(('ego',), 'missing')
    ego = _actor(w, ('ego',), data['ego'], True, track)
    actors_raw = data.get('actors', []) or []
    if not isinstance(actors_raw, list):
        raise w.error(('actors',), 'expected a list')
    actors = [_actor(w, ('actors', i), a, False, track)
              for i, a in enumerate(actors_raw)]
    seen = {ego.role_name}
    for i, a in enumerate(actors):
        if a.role_name in seen:
            raise w.error(('actors', i, 'role_name'), f'role name '
                          f'{a.role_name!r} is used twice')
        seen.add(a.role_name)
    default_laps = DEFAULT_LAPS.get(mission, 1)
    laps = _number(w, ('laps',), data.get('laps', default_laps), lo=1,
                   integer=True, hi=MAX_LAPS)
    if track is not None and not track.closed and mission in LOOP_MISSIONS \
            and (mission == 'trackdrive' or laps > 1):
        field_name = 'track_file' if 'track_file' in data['track'] else 'generator'
        raise w.error(('track', field_name), f'the track is open (its boundaries do '
                      f'not close into a loop, {track.length:.0f} m of centre line): '
                      f'{mission} with {int(laps)} lap(s) needs a closed track; '
                      'drive it as autocross with laps 1, or complete the file')
    timeout = _number(w, ('timeout',), data.get('timeout', 120.0), lo=1e-3,
                      hi=MAX_TIMEOUT)
    rig = data.get('rig', 'hil_rig.yaml')
    if not isinstance(rig, str) or not rig:
        raise w.error(('rig',), f'expected a rig file name, got {rig!r}')
    map_name = data.get('map', '') or ''
    if not isinstance(map_name, str):
        raise w.error(('map',), f'expected a CARLA map name, got {map_name!r}')
    node_params = data.get('node_params') or {}
    if not isinstance(node_params, dict) or not all(
            isinstance(v, dict) for v in node_params.values()):
        raise w.error(('node_params',), 'expected {node: {param: value}}')
    return Scenario(name=name, mission=mission, ego=ego, actors=actors,
                    track=track, rig=rig, map_name=map_name.strip(), laps=int(laps),
                    timeout=timeout,
                    source=path,
                    node_params={str(k): dict(v)
                                 for k, v in node_params.items()})
