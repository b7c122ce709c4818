# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
One source for every default: the node's YAML in config/.

Each node's core objects are built from its YAML the way the node builds
them, and compared field by field (nested dataclasses too) with the
objects the core makes without arguments; keyword defaults of the core
functions and classes a node calls with a parameter are compared with
that parameter. A difference fails with the field, the code's default and
the YAML's value. Fields that the node derives from the vehicle profile or
the rig file are not defaults of a parameter; they are listed with the
reason. ``pointcloud_to_laserscan`` is the one node whose code defaults
are another package's (upstream's, test_cloud_to_scan checks them) and
whose YAML holds the rig's values.
"""

from dataclasses import fields, is_dataclass, make_dataclass
import inspect
import math
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, List, Tuple

from hil_bridge.interface.config import node_params
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]

#: Derived from the vehicle profile (``vehicle_profile``) or the rig
#: (``rig`` + ``lidar_id``) by the node, so not a parameter's default.
PROFILE = 'from the vehicle profile'
RIG = 'from the rig file'


def _differences(built: Any, default: Any, skip: Dict[str, str],
                 path: str = '') -> List[str]:
    """Return ``'field: code default != YAML'`` for every differing field."""
    out = []
    for f in fields(built):
        name = path + f.name
        if name in skip:
            continue
        a, b = getattr(built, f.name), getattr(default, f.name)
        if is_dataclass(a):
            out += _differences(a, b, skip, name + '.')
        elif not _same(a, b):
            out.append(f'{name}: code default {b!r} != YAML {a!r}')
    return out


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, float) or isinstance(b, float):
        return math.isclose(float(a), float(b), rel_tol=1e-9, abs_tol=1e-12)
    return a == b


def _keyword_default(fn: Callable, name: str) -> Any:
    return inspect.signature(fn).parameters[name].default


def _keywords(fn: Callable, names: Dict[str, str], y: Dict[str, Any]) -> Tuple[Any, Any, Dict]:
    """Return (YAML, code) keyword defaults of ``fn`` (keyword -> YAML key) as dataclasses."""
    cls = make_dataclass(fn.__name__, list(names))
    return (cls(**{k: y[key] for k, key in names.items()}),
            cls(**{k: _keyword_default(fn, k) for k in names}), {})


def _aeb(y: Dict[str, Any]) -> Iterable[Tuple[Any, Any, Dict[str, str]]]:
    from aeb_control.aeb_core import AebParams, resolve_params
    skip = {'vehicle_width': PROFILE, 'front': PROFILE, 'dead_time': PROFILE,
            'staging.max_decel': PROFILE, 'fixed.decel': PROFILE,
            **{f'mount_{k}': RIG for k in ('x', 'y', 'z', 'roll', 'pitch', 'yaw')}}
    yield resolve_params(y), AebParams(), skip
    from aeb_control.corridor import closest_in_corridor, predict_corridor
    from aeb_control.obstacle import ObstacleTracker, required_deceleration
    yield _keywords(predict_corridor, {k: k for k in ('horizon_time', 'min_length',
                                                      'max_length', 'z_min', 'z_max')}, y)
    yield _keywords(closest_in_corridor, {k: k for k in ('min_points', 'cluster_depth',
                                                         'voxel_size')}, y)
    yield _keywords(ObstacleTracker, {'window': 'speed_window', 'min_samples': 'min_samples',
                                      'decel_window': 'decel_window',
                                      'jump_distance': 'jump_distance'}, y)
    yield _keywords(required_deceleration, {'margin': 'stop_margin'}, y)


def _planner(y: Dict[str, Any]) -> Iterable[Tuple[Any, Any, Dict[str, str]]]:
    from hil_bridge.interface.vehicle_profile import load_vehicle_profile
    from path_planning.planner import PlannerConfig
    skip = {f'cone_drive.{k}': PROFILE for k in ('wheelbase', 'max_steer', 'half_width',
                                                 'front')}
    skip.update({'pursuit.wheelbase': PROFILE, 'pursuit.max_steer': PROFILE})
    skip.update({f'line.{k}': PROFILE for k in ('wheelbase', 'max_steer', 'half_width',
                                                'front', 'rear')})
    profile = load_vehicle_profile(str(y['vehicle_profile']))
    yield PlannerConfig.from_mapping(y, profile), PlannerConfig(), skip


def _lidar(y: Dict[str, Any]) -> Iterable[Tuple[Any, Any, Dict[str, str]]]:
    from cone_detection.lidar_cloud import CloudConeParams
    from cone_detection.lidar_node import cloud_params, scan_params
    from cone_detection.lidar_scan import ScanConeParams
    yield scan_params(y, ScanConeParams().scan_height), ScanConeParams(), \
        {'scan_height': RIG + ' (the lidar mount height)'}
    yield cloud_params(y), CloudConeParams(), {}


def _fusion(y: Dict[str, Any]) -> Iterable[Tuple[Any, Any, Dict[str, str]]]:
    from cone_detection.fusion import FusionParams
    from path_planning.cone_map import ConeMapParams
    yield FusionParams.from_mapping(y), FusionParams(), {}
    yield ((y['map_merge_radius'], y['map_min_observations']),
           (ConeMapParams().merge_radius, ConeMapParams().min_observations), {})


def _vision(y: Dict[str, Any]) -> Iterable[Tuple[Any, Any, Dict[str, str]]]:
    from cone_detection.vision_node import detector_options
    from cone_detection.vision_pipeline import VisionConeDetector
    opts = detector_options(y)
    # image_reduce says how the caller reduced its images (the node decodes
    # JPEGs at reduced size); in-process callers pass full-size images.
    reduce = opts.pop('image_reduce')
    built = VisionConeDetector(**opts)
    default = VisionConeDetector(mode=opts['mode'])
    assert reduce in (1, 2, 4)
    yield built.fast_params, default.fast_params, {}
    yield built.reference_params, default.reference_params, {}
    yield built.thresholds, default.thresholds, {}
    yield built.stereo_gate, default.stereo_gate, {}


def _link(y: Dict[str, Any]) -> Iterable[Tuple[Any, Any, Dict[str, str]]]:
    from hil_bridge.link.link_stats import ClockEstimator, TopicWindow
    yield ((y['clock_window'], y['window'], y['max_stamp_gap']),
           (_keyword_default(ClockEstimator, 'window'),
            _keyword_default(TopicWindow, 'horizon'),
            _keyword_default(TopicWindow, 'max_gap')), {})


def _teleop(y: Dict[str, Any]) -> Iterable[Tuple[Any, Any, Dict[str, str]]]:
    from hil_bridge.bridge.keyboard_teleop import apply_key, apply_keys
    for fn in (apply_key, apply_keys):
        yield ((y['step'], y['steer_step']),
               (_keyword_default(fn, 'step'), _keyword_default(fn, 'steer_step')), {})


def _bridge(y: Dict[str, Any]) -> Iterable[Tuple[Any, Any, Dict[str, str]]]:
    from hil_bridge.bridge.low_level_control import LLCParams
    yield LLCParams.from_mapping(y, preset=y['joy_preset']), LLCParams(), {}


def _cloud_to_scan(y: Dict[str, Any]) -> Iterable[Tuple[Any, Any, Dict[str, str]]]:
    """Upstream's defaults in code, the rig's in YAML (test_cloud_to_scan)."""
    return ()


#: node name -> the builders above.
NODES: Dict[str, Callable[[Dict[str, Any]], Iterable[Tuple[Any, Any, Dict[str, str]]]]] = {
    'aeb_controller': _aeb,
    'cone_drive_planner': _planner,
    'lidar_cone_detector': _lidar,
    'cone_fusion': _fusion,
    'vision_cone_detector': _vision,
    'hil_link_monitor': _link,
    'keyboard_teleop': _teleop,
    'hil_bridge': _bridge,
    'pointcloud_to_laserscan': _cloud_to_scan,
}
FILES = {'pointcloud_to_laserscan': 'cloud_to_scan.yaml'}


def test_every_node_is_checked() -> None:
    """Every node parameter file of config/ has a check here."""
    found = {}
    for path in sorted((ROOT / 'config').glob('*.yaml')):
        doc = yaml.safe_load(path.read_text(encoding='utf-8')) or {}
        for name, body in doc.items():
            if isinstance(body, dict) and 'ros__parameters' in body:
                found[name] = path.name
    assert len(found) >= 9, found
    assert set(found) == set(NODES), sorted(set(found) ^ set(NODES))
    assert all(found[n] == FILES.get(n, n + '.yaml') for n in found), found


@pytest.mark.parametrize('node', sorted(NODES))
def test_code_defaults_equal_yaml(node: str) -> None:
    """The core's defaults are the YAML's values (derived fields listed)."""
    yaml_values = node_params(node, FILES.get(node, ''))
    problems = []
    for built, default, skip in NODES[node](yaml_values):
        if is_dataclass(built):
            problems += _differences(built, default, skip)
        elif not _same(built, default):
            problems.append(f'code default {default!r} != YAML {built!r}')
    assert not problems, f'{node} (config/{FILES.get(node, node + ".yaml")}): ' + \
        '; '.join(problems)


def test_the_check_sees_a_drift() -> None:
    """A changed default is reported with the field name (it can fail)."""
    from aeb_control.aeb_core import AebParams, resolve_params
    y = node_params('aeb_controller')
    built = resolve_params(dict(y, z_min=y['z_min'] + 0.1))
    assert any(p.startswith('z_min:') for p in _differences(built, AebParams(), {}))
