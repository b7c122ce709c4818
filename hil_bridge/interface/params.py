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
import sys
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


class ParamError(ValueError):
    """A bad parameter value or name: one line naming node, parameter, source, allowed values."""


def allowed_text(spec: ParamSpec, default: Any) -> str:
    """Return what ``spec`` allows, for error messages (type, range, choices)."""
    if spec.choices is not None:
        return 'one of ' + ', '.join(str(c) for c in spec.choices)
    kind = _type_name(default)
    if spec.lo is not None or spec.hi is not None:
        lo = '-inf' if spec.lo is None else f'{spec.lo:g}'
        hi = 'inf' if spec.hi is None else f'{spec.hi:g}'
        return f'{kind} in [{lo}, {hi}]'
    return kind


def _type_name(value: Any) -> str:
    if isinstance(value, bool):
        return 'a bool (true/false)'
    if isinstance(value, int):
        return 'an integer'
    if isinstance(value, float):
        return 'a number'
    if isinstance(value, list):
        return 'a list' + (f' of {_type_name(value[0])[2:]}s' if value else '')
    return 'a string'


def override_sources(argv: Optional[Sequence[str]] = None) -> str:
    """Return where parameter overrides come from (``--params-file`` names, ``-p``)."""
    args = list(sys.argv if argv is None else argv)
    files = [args[i + 1] for i, a in enumerate(args[:-1]) if a == '--params-file']
    out = ', '.join(files)
    if '-p' in args or '--param' in args:
        out = (out + ' or -p') if out else '-p'
    return out or "the node's overrides"


def _coerce_override(node: Any, name: str, default: Any) -> None:
    """
    Respell an integer override of a double parameter as a double.

    ROS reads ``real_time_factor:=0`` (or ``cmd_timeout: 1`` in a YAML
    file) as an integer, which rclpy refuses for a double parameter.
    """
    overrides = getattr(node, '_parameter_overrides', None)
    if not isinstance(overrides, dict) or name not in overrides:
        return
    from rclpy.parameter import Parameter
    param = overrides[name]
    value = param.value
    if isinstance(default, float) and isinstance(value, int) \
            and not isinstance(value, bool):
        overrides[name] = Parameter(name, Parameter.Type.DOUBLE, float(value))
    elif isinstance(default, list) and default and isinstance(default[0], float) \
            and isinstance(value, (list, tuple)) and value \
            and all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        overrides[name] = Parameter(name, Parameter.Type.DOUBLE_ARRAY,
                                    [float(v) for v in value])


def declare_params(node: Any, specs: List[ParamSpec], node_name: str,
                   file_name: str = '',
                   defaults: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
    """
    Declare ``specs`` on an rclpy node with defaults from config.

    Returns the effective values (overrides from ``--params-file`` or launch
    files applied by rclpy; an integer given for a double parameter counts
    as that double). A value of the wrong type or outside its range, and an
    override naming no declared parameter, raise :class:`ParamError` with
    one line naming the node, the parameter, where overrides come from and
    what is allowed (never an rclpy traceback). ``defaults`` replaces the
    config file's values as declared defaults for the names it lists (a
    mirrored upstream node: upstream's defaults bare, the config file's
    when passed as params file); names it does not list (our additions to
    a mirrored node) keep the file's values, and every name it lists must
    be declared.
    """
    from rcl_interfaces.msg import FloatingPointRange, IntegerRange, ParameterDescriptor
    from rclpy.exceptions import (InvalidParameterTypeException,
                                  InvalidParameterValueException,
                                  ParameterUninitializedException)
    from_file = check_specs(specs, node_name, file_name)
    if defaults is not None and not set(defaults) <= set(from_file):
        raise ValueError(f'{node_name}: defaults name {sorted(set(defaults) - set(from_file))}, '
                         f'which are not among the parameters {sorted(from_file)}')
    defaults = dict(from_file, **(defaults or {}))
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
        _coerce_override(node, spec.name, default)
        if isinstance(default, list) and not default:
            from rclpy.parameter import Parameter
            default = Parameter.Type.STRING_ARRAY
        try:
            node.declare_parameter(spec.name, default, desc)
            try:
                value = node.get_parameter(spec.name).value
            except ParameterUninitializedException:
                value = []  # an empty list default without an override
            check_value(spec, value)
        except (InvalidParameterTypeException, InvalidParameterValueException,
                ValueError) as err:
            given = getattr(node, '_parameter_overrides', {}).get(spec.name)
            shown = given.value if given is not None else defaults[spec.name]
            raise ParamError(
                f'{node_name}: parameter {spec.name}={shown!r} (from '
                f'{override_sources()}): expected '
                f'{allowed_text(spec, defaults[spec.name])}') from err
        values[spec.name] = value
    _refuse_unknown(node, node_name, [s.name for s in specs])
    return values


def _refuse_unknown(node: Any, node_name: str, names: List[str]) -> None:
    """Raise ParamError for an override that names no parameter of the node."""
    overrides = getattr(node, '_parameter_overrides', None)
    if not isinstance(overrides, dict):
        return
    declared = set(names) | set(IMPLICIT)
    has = getattr(node, 'has_parameter', None)
    unknown = sorted(n for n in overrides
                     if n not in declared and not n.startswith('qos_overrides.')
                     and not (has is not None and has(n)))
    if unknown:
        import difflib
        hint = difflib.get_close_matches(unknown[0], names, n=1)
        raise ParamError(
            f'{node_name}: unknown parameter {unknown[0]!r} (from {override_sources()})'
            + (f'; did you mean {hint[0]!r}?' if hint else '')
            + f' parameters: {", ".join(sorted(names))}')


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
