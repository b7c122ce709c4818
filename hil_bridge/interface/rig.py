# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
Sensor rigs: load ``config/sensors/<name>.yaml`` into ``SensorSpec`` lists.

A rig file lists sensors under ``sensors:``; each has an ``id``, a CARLA
``blueprint``, a ``mount`` pose (REP-103, relative to the vehicle frame:
metres and radians) and ``attributes`` with CARLA's names and units (fov
in degrees). Attributes that are not given get CARLA 0.9.16's defaults, so
the built-in simulator and a CARLA server see the same sensor.

Everything is checked here, at set-up: an unknown blueprint, an unknown
attribute or mount key, a value of the wrong type or out of range raises
``ValueError`` naming the file, the sensor id and the attribute.

Attributes whose name starts with ``sim_`` are built-in-simulator options
without a CARLA counterpart (e.g. ``sim_noise_stddev``, Gaussian pixel
noise of a camera); :func:`carla_attributes` leaves them out.
"""

from dataclasses import dataclass
import math
import os
from typing import Any, Callable, Dict, List, Optional, Tuple

from hil_bridge.interface.config import config_path, read_yaml, YamlLines
from hil_bridge.interface.frames import Pose

LIDAR = 'sensor.lidar.ray_cast'
CAMERA_RGB = 'sensor.camera.rgb'


@dataclass
class SensorSpec:
    """
    One sensor of a rig: CARLA blueprint, attributes and mount pose.

    ``attributes`` keep CARLA's names and units (fov in degrees);
    ``mount`` is REP-103 relative to the vehicle frame.
    """

    sensor_id: str
    blueprint: str
    mount: Pose
    attributes: Dict[str, Any]


#: CARLA 0.9.16 defaults of ``sensor.lidar.ray_cast``.
LIDAR_DEFAULTS: Dict[str, Any] = {
    'channels': 32,
    'range': 10.0,
    'points_per_second': 56000,
    'rotation_frequency': 10.0,
    'upper_fov': 10.0,
    'lower_fov': -30.0,
    'horizontal_fov': 360.0,
    'atmosphere_attenuation_rate': 0.004,
    'dropoff_general_rate': 0.45,
    'dropoff_intensity_limit': 0.8,
    'dropoff_zero_intensity': 0.4,
    'noise_stddev': 0.0,
    'sensor_tick': 0.0,
}

#: CARLA 0.9.16 defaults of ``sensor.camera.rgb`` (the attributes the
#: built-in renderer uses) plus the built-in ``sim_`` options.
CAMERA_DEFAULTS: Dict[str, Any] = {
    'image_size_x': 800,
    'image_size_y': 600,
    'fov': 90.0,
    'sensor_tick': 0.0,
    'sim_noise_stddev': 0.0,
}

#: Further ``sensor.camera.rgb`` attributes CARLA accepts (lens, exposure,
#: post-processing). They are passed through to CARLA; the built-in
#: renderer ignores them.
CAMERA_PASSTHROUGH = (
    'bloom_intensity', 'fstop', 'iso', 'gamma', 'lens_flare_intensity',
    'shutter_speed', 'lens_circle_falloff', 'lens_circle_multiplier',
    'lens_k', 'lens_kcube', 'lens_x_size', 'lens_y_size', 'min_fstop',
    'blade_count', 'exposure_mode', 'exposure_compensation',
    'exposure_min_bright', 'exposure_max_bright', 'exposure_speed_up',
    'exposure_speed_down', 'calibration_constant', 'focal_distance',
    'blur_amount', 'blur_radius', 'motion_blur_intensity',
    'motion_blur_max_distortion', 'motion_blur_min_object_screen_size',
    'slope', 'toe', 'shoulder', 'black_clip', 'white_clip', 'temp', 'tint',
    'chromatic_aberration_intensity', 'chromatic_aberration_offset',
    'enable_postprocess_effects')

DEFAULTS: Dict[str, Dict[str, Any]] = {LIDAR: LIDAR_DEFAULTS,
                                       CAMERA_RGB: CAMERA_DEFAULTS}
MOUNT_KEYS = ('x', 'y', 'z', 'roll', 'pitch', 'yaw')

_Check = Callable[[Dict[str, Any]], Optional[Tuple[str, str]]]


def rig_path(name_or_path: str) -> str:
    """
    Return the file of a rig given by name or path.

    ``'hil_rig'``, ``'hil_rig.yaml'`` and ``'sensors/hil_rig.yaml'`` name
    ``config/sensors/hil_rig.yaml``; an existing or absolute path is used
    as is.
    """
    if not isinstance(name_or_path, str) or not name_or_path.strip():
        raise ValueError(f'rig name must be a non-empty string, got '
                         f'{name_or_path!r}')
    if os.path.isabs(name_or_path) or os.path.isfile(name_or_path):
        return os.path.abspath(name_or_path)
    name = name_or_path
    if not name.endswith(('.yaml', '.yml')):
        name += '.yaml'
    if name.startswith('sensors/'):
        name = name[len('sensors/'):]
    return config_path('sensors', name)


def _number(value: Any, integer: bool) -> Optional[float]:
    """Return ``value`` as a finite number, or None when it is not one."""
    if isinstance(value, bool):
        return None
    if integer:
        if isinstance(value, int):
            return value
        if isinstance(value, float) and value.is_integer():
            return int(value)
        return None
    if isinstance(value, (int, float)) and math.isfinite(float(value)):
        return float(value)
    return None


# (attribute, integer?, lo, hi, lo inclusive?, hi inclusive?)
_LIDAR_RANGES = (
    ('channels', True, 1, None, True, True),
    ('range', False, 0.0, None, False, True),
    ('points_per_second', True, 1, None, True, True),
    ('rotation_frequency', False, 0.0, None, False, True),
    ('upper_fov', False, -90.0, 90.0, True, True),
    ('lower_fov', False, -90.0, 90.0, True, True),
    ('horizontal_fov', False, 0.0, 360.0, False, True),
    ('atmosphere_attenuation_rate', False, 0.0, None, True, True),
    ('dropoff_general_rate', False, 0.0, 1.0, True, True),
    ('dropoff_intensity_limit', False, 0.0, 1.0, True, True),
    ('dropoff_zero_intensity', False, 0.0, 1.0, True, True),
    ('noise_stddev', False, 0.0, None, True, True),
    ('sensor_tick', False, 0.0, None, True, True),
)
_CAMERA_RANGES = (
    ('image_size_x', True, 1, 16384, True, True),
    ('image_size_y', True, 1, 16384, True, True),
    ('fov', False, 0.0, 180.0, False, False),
    ('sensor_tick', False, 0.0, None, True, True),
    ('sim_noise_stddev', False, 0.0, 255.0, True, True),
)
_RANGES = {LIDAR: _LIDAR_RANGES, CAMERA_RGB: _CAMERA_RANGES}


def _interval(lo: Any, hi: Any, lo_inc: bool, hi_inc: bool) -> str:
    left = ('[' if lo_inc else '(') + ('-inf' if lo is None else str(lo))
    right = ('inf' if hi is None else str(hi)) + (']' if hi_inc else ')')
    return f'{left}, {right}'


def _check_blueprint(blueprint: Any, prefix: str) -> None:
    """Raise ``ValueError`` (``prefix`` first) for a blueprint we cannot build."""
    if not isinstance(blueprint, str) or blueprint not in DEFAULTS:
        raise ValueError(f'{prefix}unknown blueprint {blueprint!r}; the '
                         f'built-in simulator supports {sorted(DEFAULTS)}')


def validate_attributes(blueprint: str, attributes: Dict[str, Any],
                        where: str = '',
                        where_of: Optional[Callable[[str], str]] = None
                        ) -> Dict[str, Any]:
    """
    Return ``attributes`` completed with CARLA defaults and checked.

    ``where`` prefixes error messages (file and sensor id), ``where_of(key)``
    when given those about attribute ``key`` (its line). Raises
    ``ValueError`` for an unknown blueprint or attribute, a value of the
    wrong type, out of its range, or ``upper_fov < lower_fov``.
    """
    prefix = f'{where}: ' if where else ''

    def at(key: str) -> str:
        return f'{where_of(key)}: ' if where_of is not None else prefix
    _check_blueprint(blueprint, prefix)
    if not isinstance(attributes, dict):
        raise ValueError(f'{prefix}attributes must be a mapping')
    defaults = DEFAULTS[blueprint]
    accepted = set(defaults)
    if blueprint == CAMERA_RGB:
        accepted.update(CAMERA_PASSTHROUGH)
    for key in attributes:
        if key not in accepted:
            raise ValueError(
                f'{at(key)}unknown attribute {key!r} for {blueprint}; '
                f'accepted: {sorted(accepted)}')
    out = dict(defaults)
    out.update(attributes)
    for key, integer, lo, hi, lo_inc, hi_inc in _RANGES[blueprint]:
        value = _number(out[key], integer)
        kind = 'an integer' if integer else 'a finite number'
        if value is None:
            raise ValueError(f'{at(key)}attribute {key!r} must be {kind}, '
                             f'got {out[key]!r}')
        bad = ((lo is not None and (value < lo or (value == lo
                                                   and not lo_inc)))
               or (hi is not None and (value > hi or (value == hi
                                                      and not hi_inc))))
        if bad:
            raise ValueError(
                f'{at(key)}attribute {key!r} = {value!r} out of range '
                f'{_interval(lo, hi, lo_inc, hi_inc)}')
        out[key] = value
    if blueprint == LIDAR and out['upper_fov'] < out['lower_fov']:
        raise ValueError(
            f'{at("upper_fov")}attribute \'upper_fov\' = {out["upper_fov"]} is below '
            f'\'lower_fov\' = {out["lower_fov"]}')
    return out


def _mount(raw: Any, where: str) -> Pose:
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise ValueError(f'{where}: mount must be a mapping of {MOUNT_KEYS}')
    for key in raw:
        if key not in MOUNT_KEYS:
            raise ValueError(f'{where}: unknown mount key {key!r}; accepted: '
                             f'{list(MOUNT_KEYS)} (metres, radians)')
    values = {}
    for key in MOUNT_KEYS:
        value = _number(raw.get(key, 0.0), False)
        if value is None:
            raise ValueError(f'{where}: mount {key!r} must be a finite '
                             f'number, got {raw.get(key)!r}')
        values[key] = value
    return Pose(**values)


def parse_rig(data: Any, source: str = '<rig>',
              lines: Optional[YamlLines] = None) -> List[SensorSpec]:
    """
    Return the sensors of a parsed rig mapping (see :func:`load_rig`).

    ``source`` names the file in error messages, ``lines`` (the file's
    line map) adds the line of the sensor at fault.
    """
    if not isinstance(data, dict) or 'sensors' not in data:
        raise ValueError(f'{source}: expected a mapping with a "sensors" '
                         f'list')
    unknown = set(map(str, data)) - {'sensors'}
    if unknown:
        raise ValueError(f'{source}: unknown top-level keys {sorted(unknown)}')
    sensors = data['sensors']
    if not isinstance(sensors, list) or not sensors:
        raise ValueError(f'{source}: "sensors" must be a non-empty list')
    specs: List[SensorSpec] = []
    seen = set()
    for index, entry in enumerate(sensors):
        at = lines.where(('sensors', index)) if lines is not None else source
        where = f'{at}: sensors[{index}]'
        if not isinstance(entry, dict):
            raise ValueError(f'{where}: expected a mapping')
        extra = set(map(str, entry)) - {'id', 'blueprint', 'mount', 'attributes'}
        if extra:
            raise ValueError(f'{where}: unknown keys {sorted(extra)}; '
                             f'accepted: id, blueprint, mount, attributes')
        for key in ('id', 'blueprint'):
            if key not in entry:
                raise ValueError(f'{where}: missing {key!r}')
        sensor_id = entry['id']
        if not isinstance(sensor_id, str) or not sensor_id:
            raise ValueError(f'{where}: id must be a non-empty string')
        where = f'{at}: sensor {sensor_id!r}'
        if sensor_id in seen:
            raise ValueError(f'{where}: duplicate sensor id')
        seen.add(sensor_id)
        blueprint = entry['blueprint']

        def where_of(*keys: str, i: int = index, sid: Any = sensor_id) -> str:
            at = lines.where(('sensors', i) + keys) if lines is not None else source
            return f'{at}: sensor {sid!r}'
        _check_blueprint(blueprint, where_of('blueprint') + ': ')
        attributes = validate_attributes(
            blueprint, entry.get('attributes') or {}, where_of('attributes'),
            lambda key: where_of('attributes', key))
        specs.append(SensorSpec(sensor_id=sensor_id, blueprint=blueprint,
                                mount=_mount(entry.get('mount'), where_of('mount')),
                                attributes=attributes))
    return specs


def load_rig(name_or_path: str) -> List[SensorSpec]:
    """
    Load and validate a sensor rig.

    ``name_or_path`` is a rig name (``'hil_rig'`` or ``'hil_rig.yaml'``,
    looked up in ``config/sensors``) or a path to a YAML file. Returns the
    sensors in file order, attributes completed with CARLA defaults. Raises
    ``ValueError`` naming the file, sensor id and attribute on bad input,
    ``FileNotFoundError`` when the file does not exist.
    """
    path = rig_path(name_or_path)
    if not os.path.isfile(path):
        raise FileNotFoundError(f'sensor rig not found: {path}')
    data, lines = read_yaml(path)
    return parse_rig(data, path, lines)


def carla_attributes(spec: SensorSpec) -> Dict[str, str]:
    """
    Return the attributes to set on a CARLA blueprint, as strings.

    Built-in-only ``sim_`` options are left out; integers print without a
    decimal point.
    """
    out = {}
    for key, value in spec.attributes.items():
        if key.startswith('sim_'):
            continue
        if isinstance(value, bool):
            out[key] = 'true' if value else 'false'
        elif isinstance(value, float) and value.is_integer() and key in (
                'channels', 'points_per_second', 'image_size_x',
                'image_size_y'):
            out[key] = str(int(value))
        else:
            out[key] = str(value)
    return out
