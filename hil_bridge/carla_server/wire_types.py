# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
CARLA 0.9.16 RPC value types as msgpack arrays (``MSGPACK_DEFINE_ARRAY``).

Field orders (LibCarla ``rpc/*.h``, ``geom/*.h``; CARLA's frame: x forward,
y right, z up, metres, degrees):

* Location / Vector3D ``[x, y, z]``; Rotation ``[pitch, yaw, roll]``;
  Transform ``[location, rotation]``; BoundingBox ``[location, extent,
  rotation, actor_id]``; Vector2D ``[x, y]``;
* stream Token ``[bin 24]``: u32 stream id, u16 port, u8 protocol (1 TCP),
  u8 address type (0: the client uses the RPC host), 16 address bytes;
* ActorAttribute ``[id, type, value, recommended_values, is_modifiable,
  restrict_to_recommended]`` (types Bool 1, Int 2, Float 3, String 4,
  RGBColor 5); ActorDefinition ``[uid, id, tags, attributes]``;
  ActorDescription ``[uid, id, [[id, type, value], ...]]``;
* rpc::Actor ``[id, parent_id, description, bounding_box, semantic_tags
  (bin), stream_token (bin)]`` (a list where bin is expected makes the
  client fail with ``std::bad_cast``);
* EpisodeSettings (11 fields), VehicleControl (7 fields in 0.9.16; a later
  8th, the timestamp, is accepted and ignored), WheelPhysicsControl (10),
  VehiclePhysicsControl (17), GearPhysicsControl (3);
* ``boost::optional<T>`` ``[False]`` or ``[True, v]``.

Decoders check what the client sent and raise :class:`WireError` (a
``ValueError``) naming the field.
"""

import math
import struct
from typing import Any, Dict, List, Optional, Sequence, Tuple

from hil_bridge.bridge.backend import VehicleControl

ATTR_BOOL = 1
ATTR_INT = 2
ATTR_FLOAT = 3
ATTR_STRING = 4
ATTR_RGB = 5
PROTOCOL_TCP = 1
TOKEN_SIZE = 24


class WireError(ValueError):
    """A value from the client that does not have CARLA's layout."""


# ------------------------------------------------------------- encoders
def vec3(x: float, y: float, z: float) -> List[float]:
    """Return a Location / Vector3D."""
    return [float(x), float(y), float(z)]


def transform(loc: Sequence[float], rot: Sequence[float]) -> list:
    """Return a Transform from ``(x, y, z)`` and ``(pitch, yaw, roll)``."""
    return [vec3(*loc), vec3(*rot)]


def bounding_box(loc: Sequence[float], extent: Sequence[float],
                 actor_id: int = 0,
                 rot: Sequence[float] = (0.0, 0.0, 0.0)) -> list:
    """Return a BoundingBox (``actor_id`` 0 unless it names an actor)."""
    return [vec3(*loc), vec3(*extent), vec3(*rot), int(actor_id)]


def token_bytes(stream_id: int, port: int) -> bytes:
    """Return the 24 token bytes of a TCP stream on the RPC host."""
    return struct.pack('<IHBB16s', int(stream_id), int(port), PROTOCOL_TCP, 0,
                       b'\0' * 16)


def token(stream_id: int, port: int) -> list:
    """Return a ``streaming::Token``."""
    return [token_bytes(stream_id, port)]


def optional(value: Any) -> list:
    """Return a ``boost::optional`` of ``value`` (None: empty)."""
    return [False] if value is None else [True, value]


def vehicle_control(c: VehicleControl, manual_gear_shift: bool = False,
                    gear: int = 0) -> list:
    """Return a VehicleControl (7 fields, 0.9.16)."""
    return [float(c.throttle), float(c.steer), float(c.brake),
            bool(c.hand_brake), bool(c.reverse), bool(manual_gear_shift),
            int(gear)]


# ------------------------------------------------------------- decoders
def _seq(obj: Any, n: int, name: str, at_least: bool = False) -> list:
    if not isinstance(obj, (list, tuple)):
        raise WireError(f'{name}: expected an array, got {type(obj).__name__}')
    if (len(obj) < n) if at_least else (len(obj) != n):
        raise WireError(f'{name}: expected {"at least " if at_least else ""}'
                        f'{n} fields, got {len(obj)}')
    return list(obj)


def number(v: Any, name: str) -> float:
    """Return a finite float from a msgpack number."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise WireError(f'{name}: expected a number, got {v!r:.40}')
    f = float(v)
    if not math.isfinite(f):
        raise WireError(f'{name}: must be finite, got {f}')
    return f


def integer(v: Any, name: str) -> int:
    """Return an int from a msgpack integer."""
    if isinstance(v, bool) or not isinstance(v, int):
        raise WireError(f'{name}: expected an integer, got {v!r:.40}')
    return int(v)


def boolean(v: Any, name: str) -> bool:
    """Return a bool from a msgpack boolean."""
    if not isinstance(v, bool):
        raise WireError(f'{name}: expected a boolean, got {v!r:.40}')
    return v


def text(v: Any, name: str) -> str:
    """Return a str from a msgpack str (or bin holding UTF-8)."""
    if isinstance(v, bytes):
        try:
            return v.decode('utf-8')
        except UnicodeDecodeError:
            raise WireError(f'{name}: not UTF-8') from None
    if not isinstance(v, str):
        raise WireError(f'{name}: expected a string, got {v!r:.40}')
    return v


def read_vec3(obj: Any, name: str) -> Tuple[float, float, float]:
    """Return ``(x, y, z)`` of a Location / Vector3D."""
    x, y, z = _seq(obj, 3, name)
    return number(x, f'{name}.x'), number(y, f'{name}.y'), number(z, f'{name}.z')


def read_transform(obj: Any, name: str = 'transform'
                   ) -> Tuple[Tuple[float, float, float],
                              Tuple[float, float, float]]:
    """Return ``((x, y, z), (pitch, yaw, roll))`` of a Transform."""
    loc, rot = _seq(obj, 2, name)
    return read_vec3(loc, f'{name}.location'), \
        read_vec3(rot, f'{name}.rotation')


def read_description(obj: Any) -> Tuple[str, Dict[str, str]]:
    """Return ``(blueprint id, {attribute: value})`` of an ActorDescription."""
    _uid, bp_id, attrs = _seq(obj, 3, 'description')
    out: Dict[str, str] = {}
    if not isinstance(attrs, (list, tuple)):
        raise WireError('description.attributes: expected an array')
    for i, a in enumerate(attrs):
        aid, _type, value = _seq(a, 3, f'description.attributes[{i}]')
        out[text(aid, f'attribute[{i}].id')] = text(value, f'attribute {aid}')
    return text(bp_id, 'description.id'), out


def read_vehicle_control(obj: Any) -> VehicleControl:
    """Return the VehicleControl (7 or 8 fields; gear fields ignored)."""
    f = _seq(obj, 7, 'control', at_least=True)
    return VehicleControl(throttle=number(f[0], 'control.throttle'),
                          steer=number(f[1], 'control.steer'),
                          brake=number(f[2], 'control.brake'),
                          hand_brake=boolean(f[3], 'control.hand_brake'),
                          reverse=boolean(f[4], 'control.reverse'))


#: EpisodeSettings fields in 0.9.16 order, with a type check each.
SETTINGS_FIELDS = ('synchronous_mode', 'no_rendering_mode',
                   'fixed_delta_seconds', 'substepping',
                   'max_substep_delta_time', 'max_substeps',
                   'max_culling_distance', 'deterministic_ragdolls',
                   'tile_stream_distance', 'actor_active_distance',
                   'spectator_as_ego')
DEFAULT_SETTINGS: Dict[str, Any] = {
    'synchronous_mode': False, 'no_rendering_mode': False,
    'fixed_delta_seconds': None, 'substepping': True,
    'max_substep_delta_time': 0.01, 'max_substeps': 10,
    'max_culling_distance': 0.0, 'deterministic_ragdolls': True,
    'tile_stream_distance': 3000.0, 'actor_active_distance': 2000.0,
    'spectator_as_ego': True}


def settings_array(s: Dict[str, Any]) -> list:
    """Return an EpisodeSettings array from a settings dict."""
    out = []
    for key in SETTINGS_FIELDS:
        v = s[key]
        if key == 'fixed_delta_seconds':
            out.append(optional(None if v is None else float(v)))
        elif key == 'max_substeps':
            out.append(int(v))
        elif isinstance(DEFAULT_SETTINGS[key], bool):
            out.append(bool(v))
        else:
            out.append(float(v))
    return out


def read_settings(obj: Any) -> Dict[str, Any]:
    """Return a settings dict of an EpisodeSettings array (>= 3 fields)."""
    f = _seq(obj, 3, 'settings', at_least=True)
    out = dict(DEFAULT_SETTINGS)
    for key, v in zip(SETTINGS_FIELDS, f):
        name = f'settings.{key}'
        if key == 'fixed_delta_seconds':
            opt = _seq(v, 1, name, at_least=True)
            if len(opt) == 2 and boolean(opt[0], name):
                delta = number(opt[1], name)
                if delta <= 0.0:
                    raise WireError(f'{name}: must be > 0, got {delta}')
                out[key] = delta
            else:
                out[key] = None
        elif key == 'max_substeps':
            out[key] = integer(v, name)
        elif isinstance(DEFAULT_SETTINGS[key], bool):
            out[key] = boolean(v, name)
        else:
            out[key] = number(v, name)
    return out


def read_command(obj: Any) -> Tuple[int, list]:
    """Return ``(variant index, payload fields)`` of an rpc::Command."""
    (variant,) = _seq(obj, 1, 'command')
    index, payload = _seq(variant, 2, 'command variant')
    if not isinstance(payload, (list, tuple)):
        raise WireError('command payload: expected an array')
    return integer(index, 'command index'), list(payload)


def read_optional(obj: Any, name: str) -> Optional[Any]:
    """Return the value of a ``boost::optional`` (None when empty)."""
    f = _seq(obj, 1, name, at_least=True)
    if len(f) >= 2 and boolean(f[0], name):
        return f[1]
    return None
