# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
Render the interface contract as Markdown (``docs/interfaces.md``).

``python -m hil_bridge.tools.contract_doc > docs/interfaces.md`` regenerates the
file and ``python -m hil_bridge.tools.contract_doc --readme`` the table in
README.md; a test checks both are up to date.
"""

from typing import List

from hil_bridge.interface.contract import frame_patterns, topics

QOS_TEXT = {
    'sensor': 'SensorDataQoS (best effort, keep last 5)',
    'command': 'reliable, keep last 1',
    'state': 'reliable, keep last 10',
    'clock': 'reliable, keep last 1',
    'latched': 'reliable, transient local, keep last 1',
    'tf': 'reliable, keep last 100',
}


README_BEGIN = '<!-- interfaces:begin (python -m hil_bridge.tools.contract_doc --readme) -->'
README_END = '<!-- interfaces:end -->'


def render_table() -> List[str]:
    """Return the Markdown rows of the topic table (header included)."""
    lines = ['| key | topic | type | QoS | from | to | notes |',
             '|---|---|---|---|---|---|---|']
    for row in topics().values():
        opt = ' (optional)' if row.optional else ''
        lines.append(
            f'| {row.key} | `{row.name}` | {row.msg_type}{opt} | {row.qos} '
            f'| {row.publisher} | {", ".join(row.subscribers)} '
            f'| {row.doc} |')
    return lines


def update_readme(text: str) -> str:
    """Return README text with the table between the markers replaced."""
    if README_BEGIN not in text or README_END not in text:
        raise ValueError('README.md has no interface table markers')
    head, rest = text.split(README_BEGIN, 1)
    _, tail = rest.split(README_END, 1)
    return head + README_BEGIN + '\n' + '\n'.join(render_table()) + \
        '\n' + README_END + tail


def render() -> str:
    """Return the Markdown text of the interface contract."""
    lines: List[str] = [
        '# carla_hil interface contract',
        '',
        'Generated from `config/interfaces.yaml` by '
        '`python -m hil_bridge.tools.contract_doc`; do not edit by hand.',
        '`{role}` is the bridge `role_name` (default `ego_vehicle`), '
        '`{actor}` the role name of another actor. All names can be '
        'remapped with standard ROS 2 remapping.',
        '',
        '## Topics',
        '',
    ]
    lines += render_table()
    lines += ['', '## QoS kinds', '']
    for kind, text in QOS_TEXT.items():
        lines.append(f'- `{kind}`: {text}')
    lines += ['', '## Frames (REP-103 / REP-105)', '']
    for kind, name in frame_patterns().items():
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
    import sys
    if '--readme' in sys.argv:
        path = sys.argv[sys.argv.index('--readme') + 1] \
            if len(sys.argv) > sys.argv.index('--readme') + 1 else 'README.md'
        with open(path, encoding='utf-8') as f:
            new = update_readme(f.read())
        with open(path, 'w', encoding='utf-8') as f:
            f.write(new)
    else:
        print(render(), end='')
