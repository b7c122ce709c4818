# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
rosbag2 bag layout and metadata (no rclpy).

A bag is a directory ``NAME/`` with ``metadata.yaml`` and one MCAP file
``NAME_0.mcap``, as ``ros2 bag record -s mcap`` writes it. Metadata
version 9 (Jazzy and later): ``metadata.yaml`` holds
``rosbag2_bagfile_information`` (times in ns, per-topic name, type,
serialization format ``cdr``, offered QoS profiles as a list of mappings
with policy names, ``type_description_hash`` RIHS01, message count, and the
file list). Each MCAP channel carries the same QoS list as a YAML string
under ``offered_qos_profiles`` and the type hash under ``topic_type_hash``;
an MCAP metadata record ``rosbag2`` repeats the bag metadata as
``serialized_metadata``. Older bags (version <= 8) spell QoS policies as
rmw enum integers; :func:`parse_qos` reads both.
"""

from dataclasses import dataclass, field
import glob
import os
from typing import Any, Dict, List, Optional, Sequence, Tuple

import yaml

VERSION = 9
STORAGE_ID = 'mcap'
METADATA_FILE = 'metadata.yaml'
#: rmw's "infinite" duration (RMW_DURATION_INFINITE) as rosbag2 writes it
INFINITE = {'sec': 9223372036, 'nsec': 854775807}
#: rmw enum values (version <= 8 metadata) -> policy names (version 9)
_HISTORY = {0: 'system_default', 1: 'keep_last', 2: 'keep_all', 3: 'unknown'}
_RELIABILITY = {0: 'system_default', 1: 'reliable', 2: 'best_effort',
                3: 'unknown', 4: 'best_available'}
_DURABILITY = {0: 'system_default', 1: 'transient_local', 2: 'volatile',
               3: 'unknown', 4: 'best_available'}
_LIVELINESS = {0: 'system_default', 1: 'automatic', 2: 'manual_by_node',
               3: 'manual_by_topic', 4: 'unknown', 5: 'best_available'}
#: depth the player offers (rosbag2 offers keep last 10; deeper here, so a
#: slow reliable subscriber loses nothing)
PLAYBACK_DEPTH = 100


def duration_dict(nanoseconds: Optional[int]) -> Dict[str, int]:
    """Return an rmw duration {sec, nsec}; None means infinite."""
    if nanoseconds is None or nanoseconds >= 9223372036854775807:
        return dict(INFINITE)
    return {'sec': int(nanoseconds) // 10**9, 'nsec': int(nanoseconds) % 10**9}


def qos_entry(reliability: str, durability: str, history: str = 'unknown',
              depth: int = 0, deadline_ns: Optional[int] = None,
              lifespan_ns: Optional[int] = None,
              liveliness: str = 'automatic',
              lease_ns: Optional[int] = None,
              avoid_ros_namespace_conventions: bool = False
              ) -> Dict[str, Any]:
    """
    Return one offered QoS profile as rosbag2 version 9 writes it.

    Policies are rmw's lower-case names (``reliable``, ``best_effort``,
    ``transient_local``, ``volatile``, ...); durations in ns, None =
    infinite. A publisher's offer seen through discovery has history
    ``unknown`` and depth 0 (DDS does not announce them).
    """
    return {'history': history, 'depth': int(depth),
            'reliability': reliability, 'durability': durability,
            'deadline': duration_dict(deadline_ns),
            'lifespan': duration_dict(lifespan_ns),
            'liveliness': liveliness,
            'liveliness_lease_duration': duration_dict(lease_ns),
            'avoid_ros_namespace_conventions':
                bool(avoid_ros_namespace_conventions)}


def qos_string(profiles: Sequence[Dict[str, Any]]) -> str:
    """Return the YAML text of a QoS list (MCAP channel metadata)."""
    if not profiles:
        return ''
    return yaml.safe_dump(list(profiles), default_flow_style=False,
                          sort_keys=False).rstrip('\n')


def _name(value: Any, table: Dict[int, str]) -> str:
    if isinstance(value, bool):
        raise ValueError(f'QoS policy {value!r} is not a name or rmw enum')
    if isinstance(value, int):
        return table.get(value, 'unknown')
    return str(value).lower()


def parse_qos(value: Any) -> List[Dict[str, Any]]:
    """
    Return QoS profiles from metadata (YAML text or a list) with names.

    Accepts version 9 names and version <= 8 rmw enum integers; raises
    ``ValueError`` on text that is not a list of mappings.
    """
    if not value:
        return []
    items = yaml.safe_load(value) if isinstance(value, str) else value
    if not isinstance(items, list) or not all(isinstance(i, dict)
                                              for i in items):
        raise ValueError(f'offered_qos_profiles is not a list of mappings: '
                         f'{value!r:.80}')
    out = []
    for item in items:
        entry = dict(item)
        entry['history'] = _name(item.get('history', 3), _HISTORY)
        entry['reliability'] = _name(item.get('reliability', 3), _RELIABILITY)
        entry['durability'] = _name(item.get('durability', 3), _DURABILITY)
        entry['liveliness'] = _name(item.get('liveliness', 4), _LIVELINESS)
        entry['depth'] = int(item.get('depth', 0))
        out.append(entry)
    return out


def playback_policies(profiles: Sequence[Dict[str, Any]]
                      ) -> Optional[Tuple[str, str]]:
    """
    Return (reliability, durability) to offer when replaying a topic.

    As rosbag2's player: the recorded publishers' offer when they all
    agree (keep last ``PLAYBACK_DEPTH``), else None (the caller's
    default).
    """
    pairs = {(p['reliability'], p['durability']) for p in profiles}
    if len(pairs) != 1:
        return None
    pair = pairs.pop()
    if pair[0] not in ('reliable', 'best_effort') or \
            pair[1] not in ('volatile', 'transient_local'):
        return None
    return pair


@dataclass
class TopicRecord:
    """One topic of a bag: what metadata.yaml says about it."""

    name: str
    msg_type: str
    offered_qos_profiles: List[Dict[str, Any]] = field(default_factory=list)
    type_description_hash: str = ''
    message_count: int = 0
    serialization_format: str = 'cdr'

    def as_dict(self) -> Dict[str, Any]:
        """Return the ``topics_with_message_count`` entry."""
        return {'topic_metadata': {
            'name': self.name, 'type': self.msg_type,
            'serialization_format': self.serialization_format,
            'offered_qos_profiles': list(self.offered_qos_profiles),
            'type_description_hash': self.type_description_hash},
            'message_count': int(self.message_count)}


def bag_info(topics: Sequence[TopicRecord], file_name: str, start_ns: int,
             end_ns: int, custom_data: Optional[Dict[str, str]] = None,
             ros_distro: str = '') -> Dict[str, Any]:
    """Return ``rosbag2_bagfile_information`` for a one-file MCAP bag."""
    count = sum(int(t.message_count) for t in topics)
    if count == 0:
        start_ns = end_ns = 0
    start = {'nanoseconds_since_epoch': int(start_ns)}
    duration = {'nanoseconds': max(0, int(end_ns) - int(start_ns))}
    return {
        'version': VERSION, 'storage_identifier': STORAGE_ID,
        'duration': duration, 'starting_time': start,
        'message_count': count,
        'topics_with_message_count': [t.as_dict() for t in topics],
        'compression_format': '', 'compression_mode': '',
        'relative_file_paths': [file_name],
        'files': [{'path': file_name, 'starting_time': dict(start),
                   'duration': dict(duration), 'message_count': count}],
        'custom_data': {str(k): str(v) for k, v in
                        (custom_data or {}).items()} or None,
        'ros_distro': ros_distro}


def dump_info(info: Dict[str, Any]) -> str:
    """Return the YAML text of bag information (no top-level key)."""
    return yaml.safe_dump(info, default_flow_style=False, sort_keys=False)


def write_metadata(bag_dir: str, info: Dict[str, Any]) -> str:
    """Write ``bag_dir/metadata.yaml``; return its path."""
    path = os.path.join(bag_dir, METADATA_FILE)
    tmp = path + '.tmp'
    with open(tmp, 'w', encoding='utf-8') as f:
        yaml.safe_dump({'rosbag2_bagfile_information': info}, f,
                       default_flow_style=False, sort_keys=False)
    os.replace(tmp, path)
    return path


def read_metadata(bag_dir: str) -> Dict[str, Any]:
    """
    Return ``rosbag2_bagfile_information`` of a bag directory.

    Raises ``ValueError`` naming the file when it is not a rosbag2
    metadata file.
    """
    path = os.path.join(bag_dir, METADATA_FILE)
    with open(path, encoding='utf-8') as f:
        try:
            doc = yaml.safe_load(f)
        except yaml.YAMLError as err:
            raise ValueError(f'{path}: not YAML: {err}') from err
    info = doc.get('rosbag2_bagfile_information') if isinstance(doc, dict) \
        else None
    if not isinstance(info, dict):
        raise ValueError(f'{path}: no rosbag2_bagfile_information mapping')
    return info


def file_name_for(bag_dir: str) -> str:
    """Return the MCAP file name rosbag2 uses in ``bag_dir`` (NAME_0.mcap)."""
    name = os.path.basename(os.path.normpath(bag_dir))
    return f'{name}_0.mcap'


def mcap_path(path: str) -> str:
    """
    Return the MCAP file of a bag directory, or ``path`` if it is a file.

    A directory without metadata.yaml (a recorder that was killed) still
    works when it holds exactly one ``.mcap`` file. Raises
    ``FileNotFoundError`` naming the path otherwise, and ``ValueError``
    for a file that does not start with the MCAP magic (a garbage file
    was read as a bag without messages: an empty report, exit code 0).
    """
    if os.path.isfile(path):
        _check_magic(path)
        return path
    if not os.path.isdir(path):
        raise FileNotFoundError(f'{path}: no such bag directory or file')
    if os.path.isfile(os.path.join(path, METADATA_FILE)):
        files = read_metadata(path).get('relative_file_paths') or []
        if files:
            found = os.path.join(path, os.path.basename(str(files[0])))
            if os.path.isfile(found):
                _check_magic(found)
                return found
            raise FileNotFoundError(f'{path}/{METADATA_FILE}: file '
                                    f'{files[0]} is missing')
    found = sorted(glob.glob(os.path.join(path, '*.mcap')))
    if len(found) != 1:
        raise FileNotFoundError(f'{path}: expected metadata.yaml or one '
                                f'.mcap file, found {len(found)}')
    _check_magic(found[0])
    return found[0]


#: The first bytes of every MCAP file (MCAP specification, "Magic").
MCAP_MAGIC = b'\x89MCAP0\r\n'


def _check_magic(path: str) -> None:
    """Raise ValueError when ``path`` does not start with the MCAP magic."""
    try:
        with open(path, 'rb') as f:
            head = f.read(len(MCAP_MAGIC))
    except OSError as err:
        raise FileNotFoundError(f'{path}: {err.strerror}') from None
    if not MCAP_MAGIC.startswith(head):  # empty or cut in the magic: a killed writer
        raise ValueError(f'{path}: not an MCAP file (it does not start with the '
                         'MCAP magic bytes)')
