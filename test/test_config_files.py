# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
Broken configuration files: scenarios, vehicle profiles, sensor rigs.

A user's edited file with a YAML syntax error, a bad value or a wrong
type gets one error line naming the file and, where the file has one,
the line and field; mutated copies of the shipped files either load or
fail that way (never a traceback from deep inside, never several lines).
"""

from pathlib import Path
import re
from typing import Any, Callable

from file_mutations import mutate, OPS
from hil_bridge.bridge.scenario import load_scenario
from hil_bridge.interface.rig import load_rig
from hil_bridge.interface.vehicle_profile import load_vehicle_profile
from hypothesis import given, HealthCheck, settings, strategies as st
import pytest

CONFIG = Path(__file__).resolve().parent.parent / 'config'
LOADERS: 'list[tuple[Path, Callable[[str], Any]]]' = (
    [(p, load_scenario) for p in sorted((CONFIG / 'scenarios').glob('*.yaml'))]
    + [(p, load_vehicle_profile) for p in sorted((CONFIG / 'vehicles').glob('*.yaml'))]
    + [(p, load_rig) for p in sorted((CONFIG / 'sensors').glob('*.yaml'))])
FUZZ = settings(max_examples=150, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.function_scoped_fixture,
                                       HealthCheck.too_slow])
#: YAML-shaped mutations beside the text ones
YAML_OPS = OPS + ('indent', 'listify')


def yaml_mutate(text: str, op: str, at: float) -> str:
    """Return ``text`` with one YAML-shaped or text mutation (see OPS)."""
    lines = text.split('\n')
    i = min(int(at * len(lines)), len(lines) - 1)
    if op == 'indent':
        lines[i] = '   ' + lines[i]
        return '\n'.join(lines)
    if op == 'listify':
        lines[i] = re.sub(r':\s*([^#\s][^#]*?)\s*(#.*)?$', r': [\1, 1]', lines[i])
        return '\n'.join(lines)
    return mutate(text, op, at)


def one_line_error(load: Callable[[str], Any], path: Path) -> str:
    """Load ``path``; return its one-line error message ('' if it loads)."""
    try:
        load(str(path))
    except (ValueError, OSError) as exc:
        msg = str(exc)
        assert str(path) in msg, msg
        assert '\n' not in msg.strip(), msg
        return msg
    return ''


@FUZZ
@given(index=st.integers(0, len(LOADERS) - 1), op=st.sampled_from(YAML_OPS),
       at=st.floats(0.0, 1.0))
def test_a_mutated_config_file_loads_or_names_itself_in_one_line(
        tmp_path_factory, index: int, op: str, at: float) -> None:
    """Every mutant of a shipped scenario, profile or rig: loads, or one line."""
    src, load = LOADERS[index]
    path = tmp_path_factory.mktemp('cfg') / src.name
    path.write_text(yaml_mutate(src.read_text(encoding='utf-8'), op, at),
                    encoding='utf-8', errors='surrogateescape')
    one_line_error(load, path)


@pytest.mark.parametrize('name, load, old, new, line, field', [
    ('vehicles/fs_car.yaml', load_vehicle_profile, 'wheelbase: ', 'wheelbase: abc #', None,
     "'wheelbase' is not a number"),
    ('vehicles/fs_car.yaml', load_vehicle_profile, 'wheelbase: ', 'wheelbase: -', None,
     "'wheelbase' must be finite"),
    ('vehicles/fs_car.yaml', load_vehicle_profile, 'mass: ', 'mass: [1, ', None, 'not valid YAML'),
    ('sensors/car_rig.yaml', load_rig, 'blueprint: sensor.lidar.ray_cast',
     'blueprint: [sensor.lidar.ray_cast, 1]', None, 'unknown blueprint'),
    ('sensors/car_rig.yaml', load_rig, 'sensors:', 'sensors: {', None, 'not valid YAML'),
    ('sensors/car_rig.yaml', load_rig, 'channels: ', 'channels: -', None, "'channels'"),
    ('scenarios/trackdrive.yaml', load_scenario, 'mission: ', 'mission: [', None,
     'not valid YAML'),
])
def test_a_broken_config_file_names_file_line_and_field(
        tmp_path: Path, name: str, load: Callable[[str], Any], old: str, new: str,
        line: Any, field: str) -> None:
    """A user's typo: one line with file, the line at fault and what is wrong."""
    text = (CONFIG / name).read_text(encoding='utf-8')
    assert old in text
    path = tmp_path / Path(name).name
    broken = text.replace(old, new, 1)
    path.write_text(broken, encoding='utf-8')
    if line is None:    # the line of the change
        line = broken[:broken.index(new)].count('\n') + 1
    msg = one_line_error(load, path)
    assert msg.startswith(f'{path}:'), msg
    got = int(msg[len(str(path)) + 1:].split(':')[0])
    # a syntax error may be found on the line after the change
    assert got in (line, line + 1), msg
    assert field in msg, msg
