# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
Node parameter specs whose defaults live in ``config/<node>.yaml``.

Each node module defines ``PARAMS = [ParamSpec(...), ...]`` (importable
without rclpy, so tests and launch checks can read it) and calls
``declare_params(node, PARAMS, 'node_name')`` at start-up. The default value
of every parameter is read from the node's YAML file in ``config/``, which is
therefore the single source of defaults; a spec carries the description and
the allowed range. ``check_specs`` verifies that file and specs agree.
"""

from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence

from hil_bridge.interface.config import node_params


#: Parameters every rclpy node declares itself (allowed in config files).
IMPLICIT = ('use_sim_time',)


@dataclass(frozen=True)
class ParamSpec:
    """One ROS parameter: name, description and optional numeric range."""

    name: str
    description: str
    lo: Optional[float] = None
    hi: Optional[float] = None
    choices: Optional[Sequence[str]] = None


def check_value(spec: ParamSpec, value: Any) -> None:
    """Raise ``ValueError`` when ``value`` is outside the spec's range."""
    if spec.choices is not None and value not in spec.choices:
        raise ValueError(f'parameter {spec.name}={value!r} not in '
                         f'{list(spec.choices)}')
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if value != value:  # NaN
            raise ValueError(f'parameter {spec.name} is NaN')
        if spec.lo is not None and value < spec.lo:
            raise ValueError(f'parameter {spec.name}={value} < {spec.lo}')
        if spec.hi is not None and value > spec.hi:
            raise ValueError(f'parameter {spec.name}={value} > {spec.hi}')


def check_specs(specs: List[ParamSpec], node_name: str,
                file_name: str = '') -> Dict[str, Any]:
    """
    Check that the YAML file and the specs list the same names.

    Returns the defaults. Raises ``ValueError`` on any mismatch or on a
    default outside its range.
    """
    defaults = node_params(node_name, file_name)
    for implicit in IMPLICIT:
        defaults.pop(implicit, None)
    names = [s.name for s in specs]
    missing = sorted(set(names) - set(defaults))
    extra = sorted(set(defaults) - set(names))
    if missing or extra:
        raise ValueError(f'{node_name}: parameters without a default in '
                         f'config: {missing}; undeclared in config: {extra}')
    for spec in specs:
        check_value(spec, defaults[spec.name])
    return defaults


def declare_params(node: Any, specs: List[ParamSpec], node_name: str,
                   file_name: str = '',
                   defaults: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
    """
    Declare ``specs`` on an rclpy node with defaults from config.

    Returns the effective values (overrides from ``--params-file`` or launch
    files applied by rclpy). A value outside its range raises ``ValueError``
    at start-up, with the parameter's name. ``defaults`` replaces the
    config file's values as declared defaults (a mirrored upstream node:
    its own defaults bare, the config file's when passed as params file);
    the file must still list the same names.
    """
    from rcl_interfaces.msg import FloatingPointRange, IntegerRange, ParameterDescriptor
    from_file = check_specs(specs, node_name, file_name)
    if defaults is not None and set(defaults) != set(from_file):
        raise ValueError(f'{node_name}: defaults {sorted(defaults)} do not name the '
                         f'parameters {sorted(from_file)}')
    defaults = from_file if defaults is None else defaults
    values: Dict[str, Any] = {}
    for spec in specs:
        default = defaults[spec.name]
        desc = ParameterDescriptor(description=spec.description)
        if (spec.lo is not None and spec.hi is not None
                and isinstance(default, (int, float))
                and not isinstance(default, bool)):
            if isinstance(default, int):
                desc.integer_range = [IntegerRange(
                    from_value=int(spec.lo), to_value=int(spec.hi), step=0)]
            else:
                desc.floating_point_range = [FloatingPointRange(
                    from_value=float(spec.lo), to_value=float(spec.hi),
                    step=0.0)]
        if isinstance(default, list) and not default:
            from rclpy.parameter import Parameter
            default = Parameter.Type.STRING_ARRAY
        node.declare_parameter(spec.name, default, desc)
        value = node.get_parameter(spec.name).value
        check_value(spec, value)
        values[spec.name] = value
    return values


def coerce_text(name: str, default: Any, text: str) -> str:
    """
    Return a ``-p name:=text`` value spelled in the type of ``default``.

    ROS parses ``0`` as an integer, which a double parameter refuses
    (InvalidParameterTypeException); the value is respelled to the
    declared (default's) type: ``0`` -> ``0.0`` for doubles, a number
    for a string parameter is quoted, ``2.0`` -> ``2`` for integers,
    and element-wise for arrays. Raises ``ValueError`` with one line
    naming the parameter when the text cannot have that type.
    """
    import yaml
    try:
        value = yaml.safe_load(text) if text.strip() else ''
    except yaml.YAMLError:
        value = text
    if isinstance(default, list):
        items = value if isinstance(value, list) else [value]
        if not default:
            return text
        return '[' + ','.join(coerce_text(name, default[0], _spell(v))
                              for v in items) + ']'
    if isinstance(default, bool):
        if isinstance(value, bool):
            return 'true' if value else 'false'
        raise ValueError(f'parameter {name}: {text!r} is not a bool '
                         '(true/false)')
    if isinstance(default, int):
        if isinstance(value, bool) or not isinstance(value, (int, float)) \
                or value != int(value):
            raise ValueError(f'parameter {name}: {text!r} is not an integer')
        return str(int(value))
    if isinstance(default, float):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ValueError(f'parameter {name}: {text!r} is not a number')
        return repr(float(value))
    if isinstance(default, str) and not isinstance(value, str):
        return "'" + text.replace("'", "''") + "'"
    return text


def _spell(value: Any) -> str:
    if isinstance(value, bool):
        return 'true' if value else 'false'
    return str(value)
