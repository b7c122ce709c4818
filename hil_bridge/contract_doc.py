# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
Render the interface contract as Markdown (``docs/interfaces.md``).

``python -m hil_bridge.contract_doc > docs/interfaces.md`` regenerates the
file; a test checks the committed file is up to date.
"""

from typing import List

from hil_bridge.contract import _contract, topics

QOS_TEXT = {
    'sensor': 'SensorDataQoS (best effort, keep last 5)',
    'command': 'reliable, keep last 1',
    'state': 'reliable, keep last 10',
    'clock': 'reliable, keep last 1',
    'latched': 'reliable, transient local, keep last 1',
    'tf': 'reliable, keep last 100',
}


def render() -> str:
    """Return the Markdown text of the interface contract."""
    lines: List[str] = [
        '# carla_hil interface contract',
        '',
        'Generated from `config/interfaces.yaml` by '
        '`python -m hil_bridge.contract_doc`; do not edit by hand.',
        '`{role}` is the bridge `role_name` (default `ego_vehicle`), '
        '`{actor}` the role name of another actor. All names can be '
        'remapped with standard ROS 2 remapping.',
        '',
        '## Topics',
        '',
        '| key | topic | type | QoS | from | to | notes |',
        '|---|---|---|---|---|---|---|',
    ]
    for row in topics().values():
        opt = ' (optional)' if row.optional else ''
        lines.append(
            f'| {row.key} | `{row.name}` | {row.msg_type}{opt} | {row.qos} '
            f'| {row.publisher} | {", ".join(row.subscribers)} '
            f'| {row.doc} |')
    lines += ['', '## QoS kinds', '']
    for kind, text in QOS_TEXT.items():
        lines.append(f'- `{kind}`: {text}')
    lines += ['', '## Frames (REP-103 / REP-105)', '']
    for kind, name in _contract()['frames'].items():
        lines.append(f'- {kind}: `{name}`')
    lines += [
        '',
        'Units: metres, radians, seconds, m/s; x forward, y left, z up. '
        'Cone class ids (field `class_id`, uint8): 0 unknown, 1 blue, '
        '2 yellow, 3 small orange, 4 big orange. Cone clouds carry fields '
        '`x, y, z` (float32), `class_id` (uint8), `confidence` (float32).',
        '',
    ]
    return '\n'.join(lines)


if __name__ == '__main__':
    print(render(), end='')
