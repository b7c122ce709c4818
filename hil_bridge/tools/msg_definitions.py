# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
Full ROS 2 message definitions for MCAP schemas (``ros2msg`` encoding).

A schema is the type's ``.msg`` text followed by every nested type's text,
each after a line of 80 ``=`` and ``MSG: pkg/msg/Type``, the layout
rosbag2's MCAP storage writes and Foxglove and ``ros2 bag`` read. The
``.msg`` files come from each package's ``share/<pkg>/msg`` directory
(AMENT_PREFIX_PATH, or the Python environment's ``share``).

Type hashes (``RIHS01_<sha256>``, REP-2011) are computed from the type
description that rosidl installs beside each ``.msg`` file
(``<Type>.json``): the description with every ``default_value`` removed,
dumped as compact JSON with ``', '`` and ``': '`` separators, hashed with
SHA-256. rosbag2 stores them as ``type_description_hash``.
"""

import copy
import functools
import hashlib
import json
import os
import re
import sys
from typing import List, Tuple

PRIMITIVES = {'bool', 'byte', 'char', 'float32', 'float64', 'int8', 'uint8',
              'int16', 'uint16', 'int32', 'uint32', 'int64', 'uint64',
              'string', 'wstring'}
SEPARATOR = '=' * 80


def _prefixes() -> List[str]:
    out = [p for p in os.environ.get('AMENT_PREFIX_PATH', '').split(
        os.pathsep) if p]
    out.append(sys.prefix)
    return out


@functools.lru_cache(maxsize=None)
def msg_text(full_type: str) -> str:
    """
    Return the ``.msg`` text of ``pkg/msg/Type`` (or ``pkg/Type``).

    Raises ``FileNotFoundError`` naming the type when no file is found.
    """
    pkg, name = _split(full_type)
    for prefix in _prefixes():
        path = os.path.join(prefix, 'share', pkg, 'msg', name + '.msg')
        if os.path.isfile(path):
            with open(path, encoding='utf-8') as f:
                return f.read()
    raise FileNotFoundError(f'no .msg file for {full_type} under '
                            f'{_prefixes()}')


def _share_file(full_type: str, suffix: str) -> str:
    """Return the path of ``share/<pkg>/msg/<Type><suffix>`` or raise."""
    pkg, name = _split(full_type)
    for prefix in _prefixes():
        path = os.path.join(prefix, 'share', pkg, 'msg', name + suffix)
        if os.path.isfile(path):
            return path
    raise FileNotFoundError(f'no {name}{suffix} for {full_type} under '
                            f'{_prefixes()}')


@functools.lru_cache(maxsize=None)
def type_description(full_type: str) -> dict:
    """
    Return the installed type description file of a type as a dict.

    Keys ``type_description_msg`` (the type and every referenced type,
    fields with type ids) and ``type_hashes`` (rosidl's own hashes).
    """
    with open(_share_file(full_type, '.json'), encoding='utf-8') as f:
        return json.load(f)


def rihs01(description_msg: dict) -> str:
    """
    Return the REP-2011 hash ``RIHS01_<hex>`` of a type description.

    ``description_msg`` has ``type_description`` and
    ``referenced_type_descriptions`` as in the installed ``.json`` file.
    """
    hashable = copy.deepcopy(description_msg)
    for desc in [hashable['type_description'],
                 *hashable['referenced_type_descriptions']]:
        for fld in desc['fields']:
            fld.pop('default_value', None)
    text = json.dumps(hashable, ensure_ascii=True, allow_nan=False,
                      indent=None, separators=(', ', ': '), sort_keys=False)
    return 'RIHS01_' + hashlib.sha256(text.encode('utf-8')).hexdigest()


@functools.lru_cache(maxsize=None)
def type_hash(full_type: str) -> str:
    """
    Return the RIHS01 type hash of ``pkg/msg/Type``.

    Computed from the installed type description; '' when the distro
    installs none (Humble has no type hashes, rosbag2 then writes '').
    """
    try:
        return rihs01(type_description(full_type)['type_description_msg'])
    except FileNotFoundError:
        return ''


def _split(full_type: str) -> Tuple[str, str]:
    parts = full_type.split('/')
    if len(parts) == 3:
        return parts[0], parts[2]
    if len(parts) == 2:
        return parts[0], parts[1]
    raise ValueError(f'not a message type: {full_type!r}')


_FIELD = re.compile(r'^\s*([A-Za-z0-9_/]+)(?:<=\d+)?(?:\[[^\]]*\])?\s+\w+')


def dependencies(full_type: str) -> List[str]:
    """Return the nested message types of a type, depth first, unique."""
    pkg, _ = _split(full_type)
    seen: List[str] = []

    def visit(ftype: str, own_pkg: str) -> None:
        for line in msg_text(ftype).splitlines():
            line = line.split('#', 1)[0]
            m = _FIELD.match(line)
            if not m:
                continue
            base = m.group(1)
            if base in PRIMITIVES:
                continue
            dep = base if '/' in base else f'{own_pkg}/{base}'
            dpkg, dname = _split(dep)
            key = f'{dpkg}/msg/{dname}'
            if key not in seen:
                seen.append(key)
                visit(key, dpkg)

    visit(full_type, pkg)
    return seen


def full_definition(full_type: str) -> str:
    """Return the schema text of a type with all nested definitions."""
    parts = [msg_text(full_type).rstrip('\n')]
    for dep in dependencies(full_type):
        parts.append(f'{SEPARATOR}\nMSG: {dep}\n'
                     f'{msg_text(dep).rstrip(chr(10))}')
    return '\n'.join(parts) + '\n'


def stamped_first(full_type: str) -> bool:
    """Return True if a type's first field is a header or a time stamp."""
    try:
        text = msg_text(full_type)
    except (FileNotFoundError, ValueError):
        return False
    for line in text.splitlines():
        line = line.split('#', 1)[0].strip()
        if not line:
            continue
        first = line.split()[0]
        return first in ('std_msgs/Header', 'Header', 'builtin_interfaces/Time')
    return False
