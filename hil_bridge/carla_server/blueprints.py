# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
The blueprint library of ``carla-hil serve`` (``get_actor_definitions``).

Definitions follow CARLA's ``ActorBlueprintFunctionLibrary`` (UE4 plugin):
every blueprint gets the modifiable ``role_name`` (String) and ``ros_name``
variations; sensors their ``sensor_tick``; then the blueprint's own ones,
in CARLA's order, with CARLA's recommended (default) values. Non-modifiable
attributes (``is_modifiable`` False) are the vehicles' ``object_type``,
``base_type``, ``special_type``, ``number_of_wheels``, ``generation``,
``has_dynamic_doors``, ``has_lights`` and the props' ``size``.

The blueprints are the ones this project and the ROS 2 AEB tutorial use:
``vehicle.tesla.model3``, ``vehicle.lincoln.mkz_2020``,
``vehicle.micro.microlino`` (what ``fs_car`` runs as), three more stock
cars CARLA's examples and tutorials name (``vehicle.lincoln.mkz_2017``,
``vehicle.audi.a2``, ``vehicle.toyota.prius``),
``static.prop.trafficcone01``, ``static.prop.trafficcone02``,
``static.prop.constructioncone``, ``sensor.camera.rgb``,
``sensor.camera.depth``, ``sensor.camera.semantic_segmentation``,
``sensor.lidar.ray_cast``, ``sensor.lidar.ray_cast_semantic``,
``sensor.other.collision``, ``sensor.other.imu``, ``sensor.other.gnss``,
``sensor.other.radar``, ``sensor.other.obstacle`` and
``sensor.other.lane_invasion`` (whose attributes follow CARLA's
``Make*Definition`` functions of ``ActorBlueprintFunctionLibrary.cpp``). The vehicles'
catalogue facts (generation 2, car, lights; the MKZ has opening doors) are
CARLA 0.9.16's; their recommended colours, bounding boxes and physics
(:data:`VEHICLES`) are approximations of the stock assets (which live in
binary UE packages), documented in ``docs/carla_server.md``.

:data:`FS_CONE_BLUEPRINTS` (``static.prop.fs_cone_*``) are an explicit
extension, not in stock CARLA: blue, yellow, orange and big orange
Formula Student cones, offered only with ``carla-hil serve --fs-cones``.
"""

from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Tuple

from hil_bridge.carla_server.wire_types import (ATTR_BOOL, ATTR_FLOAT, ATTR_INT, ATTR_RGB,
                                                ATTR_STRING)
from hil_bridge.interface.cones import (CONE_BIG_ORANGE, CONE_BLUE, CONE_ORANGE, CONE_SIZE,
                                        CONE_YELLOW)

CAMERA_RGB = 'sensor.camera.rgb'
CAMERA_DEPTH = 'sensor.camera.depth'
CAMERA_SEMANTIC = 'sensor.camera.semantic_segmentation'
LIDAR = 'sensor.lidar.ray_cast'
LIDAR_SEMANTIC = 'sensor.lidar.ray_cast_semantic'
COLLISION = 'sensor.other.collision'
IMU = 'sensor.other.imu'
GNSS = 'sensor.other.gnss'
RADAR = 'sensor.other.radar'
OBSTACLE = 'sensor.other.obstacle'
LANE_INVASION = 'sensor.other.lane_invasion'
SENSOR_ROLES = ('front', 'back', 'left', 'right', 'front_left', 'front_right',
                'back_left', 'back_right')


@dataclass(frozen=True)
class Attribute:
    """One ActorAttribute: ``name`` (CARLA's id), ``kind`` (type code), values."""

    name: str
    kind: int
    recommended: Tuple[str, ...]
    modifiable: bool = True
    restricted: bool = False

    @property
    def value(self) -> str:
        """Return the default, the first recommended value."""
        return self.recommended[0] if self.recommended else ''

    def as_wire(self) -> list:
        """Return the ActorAttribute array."""
        return [self.name, self.kind, self.value, list(self.recommended),
                self.modifiable, self.restricted]


def _var(aid: str, atype: int, *values: str, restricted: bool = False
         ) -> Attribute:
    return Attribute(aid, atype, tuple(values), True, restricted)


def _const(aid: str, atype: int, value: str) -> Attribute:
    return Attribute(aid, atype, (value,), False, False)


#: CARLA's stock 4-wheel steering set-up: 70 deg front wheels, the steer
#: reduced with speed (km/h, factor) by the blueprint's steering curve.
STOCK_STEERING: Dict[str, Any] = {
    'max_steer_angle': 70.0,
    'steering_curve': ((0.0, 1.0), (20.0, 0.9), (60.0, 0.8), (120.0, 0.7))}


@dataclass(frozen=True)
class VehicleFacts:
    """
    What the server knows of a stock vehicle (CARLA's frame, metres, deg).

    ``extent`` is the bounding box half size and ``box_z`` its centre
    height above the actor origin (which is on the ground); ``wheelbase``
    (m) for the built-in bicycle model; ``max_steer_angle`` (deg) of each
    front wheel (rear wheels 0); ``steering_curve`` the (speed km/h,
    factor) keys CARLA scales the steer with; ``mass`` (kg);
    ``wheel_radius`` (cm).
    """

    make: str
    model: str
    colors: Tuple[str, ...]
    special_type: str
    has_dynamic_doors: bool
    extent: Tuple[float, float, float]
    box_z: float
    wheelbase: float
    max_steer_angle: float
    steering_curve: Tuple[Tuple[float, float], ...]
    mass: float
    wheel_radius: float


#: Stock vehicles (approximate geometry and physics, see module doc).
VEHICLES: Dict[str, VehicleFacts] = {
    'vehicle.tesla.model3': VehicleFacts(
        make='tesla', model='model3',
        colors=('140,0,0', '255,255,255', '0,0,0', '21,28,89', '128,128,128'),
        special_type='electric', has_dynamic_doors=False,
        extent=(2.396, 1.082, 0.745), box_z=0.745, wheelbase=2.875,
        **STOCK_STEERING,
        mass=1845.0, wheel_radius=36.0),
    'vehicle.lincoln.mkz_2020': VehicleFacts(
        make='lincoln', model='mkz_2020',
        colors=('25,25,25', '255,255,255', '120,0,0', '60,60,60'),
        special_type='', has_dynamic_doors=True,
        extent=(2.450, 1.064, 0.755), box_z=0.755, wheelbase=2.850,
        **STOCK_STEERING,
        mass=1800.0, wheel_radius=35.0),
    # Older stock cars CARLA's own examples and many tutorials name
    # (lidar_to_camera.py spawns the 2017 MKZ): real cars' sizes.
    'vehicle.lincoln.mkz_2017': VehicleFacts(
        make='lincoln', model='mkz_2017',
        colors=('0,0,0', '255,255,255', '90,90,90'),
        special_type='', has_dynamic_doors=False,
        extent=(2.450, 1.064, 0.755), box_z=0.755, wheelbase=2.850,
        **STOCK_STEERING,
        mass=1800.0, wheel_radius=35.0),
    'vehicle.audi.a2': VehicleFacts(
        make='audi', model='a2',
        colors=('255,255,255', '0,0,0', '120,120,120'),
        special_type='', has_dynamic_doors=False,
        extent=(1.852, 0.898, 0.767), box_z=0.767, wheelbase=2.405,
        **STOCK_STEERING,
        mass=1100.0, wheel_radius=31.0),
    'vehicle.toyota.prius': VehicleFacts(
        make='toyota', model='prius',
        colors=('255,255,255', '0,0,0', '200,0,0'),
        special_type='electric', has_dynamic_doors=False,
        extent=(2.257, 1.003, 0.748), box_z=0.748, wheelbase=2.700,
        **STOCK_STEERING,
        mass=1400.0, wheel_radius=32.0),
    # The smallest stock car (CARLA's catalogue: vehicle.micro.microlino,
    # generation 2): 2.52 m x 1.47 m, 1.69 m wheelbase, close to a
    # Formula Student car (fs_car runs as it on CARLA).
    'vehicle.micro.microlino': VehicleFacts(
        make='micro', model='microlino',
        colors=('255,255,255', '177,38,27', '43,95,117', '30,30,30'),
        special_type='electric', has_dynamic_doors=False,
        extent=(1.260, 0.735, 0.750), box_z=0.750, wheelbase=1.690,
        **STOCK_STEERING,
        mass=513.0, wheel_radius=27.0),
}

#: Props and the built-in world's cone class each one is drawn as.
PROP_CONES: Dict[str, int] = {
    'static.prop.trafficcone01': CONE_ORANGE,
    'static.prop.trafficcone02': CONE_ORANGE,
    'static.prop.constructioncone': CONE_BIG_ORANGE,
}
#: The extension (not stock CARLA): Formula Student cones by colour.
FS_CONE_BLUEPRINTS: Dict[str, int] = {
    'static.prop.fs_cone_blue': CONE_BLUE,
    'static.prop.fs_cone_yellow': CONE_YELLOW,
    'static.prop.fs_cone_orange': CONE_ORANGE,
    'static.prop.fs_cone_big_orange': CONE_BIG_ORANGE,
}

#: The id a map's own cone (level geometry, not an actor) has as the other
#: actor of a collision event: the extension's name of its class.
FS_CONE_NAMES: Dict[int, str] = {cls: name for name, cls in FS_CONE_BLUEPRINTS.items()}
FS_CONE_UNKNOWN = 'static.prop.fs_cone_unknown'

_CAMERA_COMMON = (
    _var('image_size_x', ATTR_INT, '800'), _var('image_size_y', ATTR_INT, '600'),
    _var('fov', ATTR_FLOAT, '90.0'),
    _var('lens_circle_falloff', ATTR_FLOAT, '5.0'),
    _var('lens_circle_multiplier', ATTR_FLOAT, '0.0'),
    _var('lens_k', ATTR_FLOAT, '-1.0'), _var('lens_kcube', ATTR_FLOAT, '0.0'),
    _var('lens_x_size', ATTR_FLOAT, '0.08'),
    _var('lens_y_size', ATTR_FLOAT, '0.08'))
_CAMERA_POST = (
    _var('exposure_mode', ATTR_STRING, 'histogram', 'manual', restricted=True),
    _var('exposure_compensation', ATTR_FLOAT, '0.0'),
    _var('shutter_speed', ATTR_FLOAT, '200.0'), _var('iso', ATTR_FLOAT, '100.0'),
    _var('fstop', ATTR_FLOAT, '1.4'),
    _var('enable_postprocess_effects', ATTR_BOOL, 'true'),
    _var('gamma', ATTR_FLOAT, '2.2'),
    _var('motion_blur_intensity', ATTR_FLOAT, '0.45'),
    _var('motion_blur_max_distortion', ATTR_FLOAT, '0.35'),
    _var('lens_flare_intensity', ATTR_FLOAT, '0.1'),
    _var('bloom_intensity', ATTR_FLOAT, '0.675'),
    _var('motion_blur_min_object_screen_size', ATTR_FLOAT, '0.1'),
    _var('exposure_min_bright', ATTR_FLOAT, '10.0'),
    _var('exposure_max_bright', ATTR_FLOAT, '12.0'),
    _var('exposure_speed_up', ATTR_FLOAT, '3.0'),
    _var('exposure_speed_down', ATTR_FLOAT, '1.0'),
    _var('calibration_constant', ATTR_FLOAT, '16.0'),
    _var('focal_distance', ATTR_FLOAT, '1000.0'),
    _var('min_fstop', ATTR_FLOAT, '1.2'), _var('blade_count', ATTR_INT, '5'),
    _var('blur_amount', ATTR_FLOAT, '1.0'), _var('blur_radius', ATTR_FLOAT, '0.0'),
    _var('slope', ATTR_FLOAT, '0.88'), _var('toe', ATTR_FLOAT, '0.55'),
    _var('shoulder', ATTR_FLOAT, '0.26'), _var('black_clip', ATTR_FLOAT, '0.0'),
    _var('white_clip', ATTR_FLOAT, '0.04'), _var('temp', ATTR_FLOAT, '6500.0'),
    _var('tint', ATTR_FLOAT, '0.0'),
    _var('chromatic_aberration_intensity', ATTR_FLOAT, '0.0'),
    _var('chromatic_aberration_offset', ATTR_FLOAT, '0.0'))
_LIDAR = (
    _var('channels', ATTR_INT, '32'), _var('range', ATTR_FLOAT, '10.0'),
    _var('points_per_second', ATTR_INT, '56000'),
    _var('rotation_frequency', ATTR_FLOAT, '10.0'),
    _var('upper_fov', ATTR_FLOAT, '10.0'), _var('lower_fov', ATTR_FLOAT, '-30.0'),
    _var('atmosphere_attenuation_rate', ATTR_FLOAT, '0.004'),
    _var('noise_seed', ATTR_INT, '0'),
    _var('dropoff_general_rate', ATTR_FLOAT, '0.45'),
    _var('dropoff_intensity_limit', ATTR_FLOAT, '0.8'),
    _var('dropoff_zero_intensity', ATTR_FLOAT, '0.4'),
    _var('noise_stddev', ATTR_FLOAT, '0.0'),
    _var('horizontal_fov', ATTR_FLOAT, '360.0'))
#: ``ray_cast_semantic``: no intensity, drop-off or noise attributes.
_LIDAR_SEMANTIC = tuple(a for a in _LIDAR if a.name in (
    'channels', 'range', 'points_per_second', 'rotation_frequency', 'upper_fov',
    'lower_fov', 'horizontal_fov'))
_IMU = (_var('noise_seed', ATTR_INT, '0'),) + tuple(
    _var(f'noise_{part}_{axis}', ATTR_FLOAT, '0.0')
    for part in ('accel_stddev', 'gyro_stddev', 'gyro_bias') for axis in 'xyz')
_GNSS = (_var('noise_seed', ATTR_INT, '0'),) + tuple(
    _var(f'noise_{coord}_{kind}', ATTR_FLOAT, '0.0')
    for coord in ('lat', 'lon', 'alt') for kind in ('stddev', 'bias'))
_RADAR = (_var('horizontal_fov', ATTR_FLOAT, '30'), _var('vertical_fov', ATTR_FLOAT, '30'),
          _var('range', ATTR_FLOAT, '100'), _var('points_per_second', ATTR_INT, '1500'),
          _var('noise_seed', ATTR_INT, '0'))
_OBSTACLE = (_var('distance', ATTR_FLOAT, '5.0'), _var('hit_radius', ATTR_FLOAT, '0.5'),
             _var('only_dynamics', ATTR_BOOL, 'false'),
             _var('debug_linetrace', ATTR_BOOL, 'false'))


@dataclass(frozen=True)
class Blueprint:
    """An ActorDefinition: ``name`` (CARLA's id), tags, attributes in order."""

    name: str
    attributes: Tuple[Attribute, ...]

    @property
    def tags(self) -> str:
        """Return the comma-joined parts of the blueprint name."""
        return ','.join(self.name.split('.'))

    def attribute(self, aid: str) -> Optional[Attribute]:
        """Return the attribute ``aid`` or None."""
        for a in self.attributes:
            if a.name == aid:
                return a
        return None

    def defaults(self) -> Dict[str, str]:
        """Return ``{attribute: default value}``."""
        return {a.name: a.value for a in self.attributes}


def _common(*roles: str) -> Tuple[Attribute, ...]:
    return (_var('role_name', ATTR_STRING, *(roles or ('default',))),
            _var('ros_name', ATTR_STRING, ''))


def _vehicle(bp_id: str, v: VehicleFacts) -> Blueprint:
    attrs = _common('autopilot', 'scenario', 'ego_vehicle') + (
        _var('color', ATTR_RGB, *v.colors),
        _var('sticky_control', ATTR_BOOL, 'true'),
        _var('terramechanics', ATTR_BOOL, 'false'),
        _const('object_type', ATTR_STRING, ''),
        _const('base_type', ATTR_STRING, 'car'),
        _const('special_type', ATTR_STRING, v.special_type),
        _const('number_of_wheels', ATTR_INT, '4'),
        _const('generation', ATTR_INT, '2'),
        _const('has_dynamic_doors', ATTR_BOOL,
               'true' if v.has_dynamic_doors else 'false'),
        _const('has_lights', ATTR_BOOL, 'true'))
    return Blueprint(bp_id, attrs)


def _prop(bp_id: str) -> Blueprint:
    return Blueprint(bp_id, _common('prop') + (_const('size', ATTR_STRING, 'small'),))


def _sensor(bp_id: str, *extra: Attribute, tick: bool = True,
            roles: Tuple[str, ...] = SENSOR_ROLES) -> Blueprint:
    attrs = _common(*roles)
    if tick:
        attrs += (_var('sensor_tick', ATTR_FLOAT, '0.0'),)
    return Blueprint(bp_id, attrs + tuple(extra))


def library(fs_cones: bool = False) -> List[Blueprint]:
    """Return every blueprint (with the FS cone extension if asked)."""
    bps = [_vehicle(k, v) for k, v in VEHICLES.items()]
    bps += [_prop(k) for k in PROP_CONES]
    if fs_cones:
        bps += [_prop(k) for k in FS_CONE_BLUEPRINTS]
    bps += [_sensor(CAMERA_RGB, *(_CAMERA_COMMON + _CAMERA_POST)),
            _sensor(CAMERA_DEPTH, *_CAMERA_COMMON),
            _sensor(CAMERA_SEMANTIC, *_CAMERA_COMMON),
            _sensor(LIDAR, *_LIDAR), _sensor(LIDAR_SEMANTIC, *_LIDAR_SEMANTIC),
            _sensor(COLLISION, tick=False), _sensor(LANE_INVASION, tick=False),
            _sensor(OBSTACLE, *_OBSTACLE),
            # IMU, GNSS and radar: role_name without the sensor roles (CARLA's)
            _sensor(IMU, *_IMU, roles=()), _sensor(GNSS, *_GNSS, roles=()),
            _sensor(RADAR, *_RADAR, roles=())]
    return bps


def definitions(bps: Sequence[Blueprint]) -> list:
    """Return the ActorDefinition arrays of ``bps`` (uids from 1)."""
    return [[uid, bp.name, bp.tags, [a.as_wire() for a in bp.attributes]]
            for uid, bp in enumerate(bps, start=1)]


def cone_class(bp_id: str) -> Optional[int]:
    """Return the cone class a prop blueprint is drawn as (None: not a cone)."""
    if bp_id in PROP_CONES:
        return PROP_CONES[bp_id]
    return FS_CONE_BLUEPRINTS.get(bp_id)


def cone_extent(cls: int) -> Tuple[float, float, float]:
    """Return the half extent (m) of a cone class's bounding box."""
    width, height = CONE_SIZE.get(cls, CONE_SIZE[CONE_ORANGE])
    return width / 2.0, width / 2.0, height / 2.0
