# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""Vehicle profiles (``config/vehicles/<name>.yaml``) as a typed dataclass."""

from dataclasses import dataclass, fields
import math

from hil_bridge.interface.config import config_path, read_yaml


@dataclass(frozen=True)
class VehicleProfile:
    """
    Physical and actuator limits of one vehicle (SI units, radians).

    The body frame is REP-103 with its origin at the rear-axle centre on
    the ground; the box footprint spans ``-rear_overhang`` to
    ``length - rear_overhang`` along x.
    """

    name: str
    blueprint: str
    mass: float
    wheelbase: float
    track_width: float
    length: float
    width: float
    height: float
    rear_overhang: float
    max_steer: float
    max_steer_rate: float
    steer_time_constant: float
    max_drive_force: float
    max_power: float
    top_speed: float
    max_decel: float
    max_lat_accel: float
    brake_dead_time: float
    brake_ramp_time: float
    drag_coefficient: float
    rolling_resistance: float

    @property
    def box_offset(self) -> float:
        """Return the box centre's x offset from the rear axle (m)."""
        return self.length / 2.0 - self.rear_overhang


def load_vehicle_profile(name_or_path: str) -> VehicleProfile:
    """
    Load a profile by name (``fs_car``) or from a YAML path.

    Raises ``ValueError`` naming the file and field for a missing,
    non-numeric, non-finite or non-positive value.
    """
    rel = name_or_path if name_or_path.endswith('.yaml') else \
        f'{name_or_path}.yaml'
    path = config_path(rel) if rel.startswith('/') else \
        config_path('vehicles', rel)
    data, lines = read_yaml(path)
    if not isinstance(data, dict):
        raise ValueError(f'{path}: expected a YAML mapping at top level')
    values = {}
    for f in fields(VehicleProfile):
        if f.name not in data:
            raise ValueError(f'{path}: missing field {f.name!r}')
        value = data[f.name]
        if f.type in (float, 'float'):
            try:
                value = float(value)
            except (TypeError, ValueError):
                raise ValueError(f'{lines.where((f.name,))}: field {f.name!r} '
                                 f'is not a number: {value!r}') from None
            if not math.isfinite(value) or value < 0.0:
                raise ValueError(f'{lines.where((f.name,))}: field {f.name!r} '
                                 f'must be finite and >= 0, got {value}')
        values[f.name] = value
    for key in ('wheelbase', 'mass', 'max_steer', 'max_decel', 'length',
                'width'):
        if values[key] <= 0.0:
            raise ValueError(f'{lines.where((key,))}: field {key!r} must be > 0')
    return VehicleProfile(**values)
