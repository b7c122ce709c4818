# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
rosbag2 bag layout and metadata (no rclpy).

A bag is a directory ``NAME/`` with ``metadata.yaml`` and one MCAP file
``NAME_0.mcap``, as ``ros2 bag record -s mcap`` writes it.
``metadata.yaml`` holds ``rosbag2_bagfile_information``; its fields by
version, as rosbag2's ``rosbag2_storage/yaml.hpp`` decodes them (branches
humble, jazzy, rolling; Kilted's are Jazzy's):

* always: ``version``, ``storage_identifier``, ``duration.nanoseconds``,
  ``starting_time.nanoseconds_since_epoch``, ``message_count``,
  ``topics_with_message_count`` (each ``topic_metadata`` with ``name``,
  ``type``, ``serialization_format``, and ``message_count``),
  ``relative_file_paths`` (relative to the bag's parent directory before
  version 4, to the bag directory since);
* 3: ``compression_format``, ``compression_mode``;
* 4: ``topic_metadata.offered_qos_profiles``: YAML text of a list of QoS
  mappings whose policies are rmw enum integers (versions 4-8);
* 5 (Humble writes 5): ``files`` (``path``, ``starting_time``,
  ``duration``, ``message_count`` per file);
* 6: ``custom_data`` (a mapping, may be null); 7:
  ``topic_metadata.type_description_hash``; 8: ``ros_distro``;
* 9 (Jazzy and later): ``offered_qos_profiles`` is a YAML list of
  mappings with policy names (``reliable``, ``transient_local``, ...).

Humble's reader takes any version number but reads
``offered_qos_profiles`` as text (a version 9 list stops it: "Exception
on parsing info file") and its player reads the policies as integers;
:func:`reader_problems` checks a metadata mapping against those rules.
Each MCAP channel carries the QoS text (or, from version 9, the text of
the named list) under ``offered_qos_profiles`` and the type hash under
``topic_type_hash``; an MCAP metadata record ``rosbag2`` repeats the bag
metadata as ``serialized_metadata`` (Jazzy) and the ``ROS_DISTRO``
(Humble). :func:`parse_qos` reads both QoS spellings.
"""

from dataclasses import dataclass, field
import glob
import os
from typing import Any, Dict, List, Optional, Sequence, Tuple

import yaml

VERSION = 9
#: metadata versions the recorder writes (5: Humble, 9: Jazzy and later)
WRITE_VERSIONS = (5, 6, 7, 8, 9)
#: newest version any rosbag2 release writes
NEWEST_VERSION = 9
#: the version each distro's rosbag2 writes (the recorder's --bag-version;
#: the tags' bag_metadata.hpp: Foxy 0.3 and Galactic 0.9 write 4, Humble
#: 0.15 writes 5, Iron 0.22 writes 7, Jazzy 0.26 writes 9)
DISTRO_VERSIONS = {'foxy': 4, 'galactic': 4, 'humble': 5, 'iron': 7,
                   'jazzy': 9, 'kilted': 9, 'rolling': 9}
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
_ENUMS = {'history': (_HISTORY, 3), 'reliability': (_RELIABILITY, 3),
          'durability': (_DURABILITY, 3), 'liveliness': (_LIVELINESS, 4)}
_QOS_KEYS = ('history', 'depth', 'reliability', 'durability', 'deadline',
             'lifespan', 'liveliness', 'liveliness_lease_duration',
             'avoid_ros_namespace_conventions')
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


def qos_as_integers(profiles: Sequence[Dict[str, Any]]
                    ) -> List[Dict[str, Any]]:
    """Return QoS entries with rmw enum integers (metadata version <= 8)."""
    out = []
    for entry in profiles:
        item = dict(entry)
        for key, (table, unknown) in _ENUMS.items():
            value = item.get(key)
            if not isinstance(value, int) or isinstance(value, bool):
                names = {v: k for k, v in table.items()}
                item[key] = names.get(str(value).lower(), unknown)
        out.append(item)
    return out


def qos_for_version(profiles: Sequence[Dict[str, Any]], version: int
                    ) -> Any:
    """
    Return ``offered_qos_profiles`` as metadata version ``version`` has it.

    Version 9: a list of mappings with policy names; 4-8: the YAML text of
    the list with rmw enum integers ('' for no profiles, as rosbag2).
    """
    if version >= 9:
        return [dict(p) for p in profiles]
    return qos_string(qos_as_integers(profiles))


def channel_qos(profiles: Sequence[Dict[str, Any]], version: int) -> str:
    """Return the MCAP channel's ``offered_qos_profiles`` text."""
    if version >= 9:
        return qos_string(profiles)
    return qos_string(qos_as_integers(profiles))


def version_for(spec: str) -> int:
    """
    Return the metadata version for ``--bag-version`` (number or distro).

    ``auto``: the version the ``ROS_DISTRO`` of this environment writes
    (5 on Humble), 9 when it is unset or unknown. Raises ``ValueError``
    for a version the recorder cannot write or an unknown name.
    """
    spec = str(spec).strip().lower()
    if spec in ('', 'auto'):
        return max(5, DISTRO_VERSIONS.get(
            os.environ.get('ROS_DISTRO', '').lower(), VERSION))
    if spec in DISTRO_VERSIONS:
        return max(5, DISTRO_VERSIONS[spec])
    try:
        version = int(spec)
    except ValueError:
        raise ValueError(f'bag version {spec!r}: a number '
                         f'{WRITE_VERSIONS[0]}-{WRITE_VERSIONS[-1]}, auto or '
                         f'a distro ({", ".join(DISTRO_VERSIONS)})') from None
    if version not in WRITE_VERSIONS:
        raise ValueError(f'bag version {version}: the recorder writes '
                         f'{WRITE_VERSIONS[0]}-{WRITE_VERSIONS[-1]}')
    return version


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

    def as_dict(self, version: int = VERSION) -> Dict[str, Any]:
        """Return the ``topics_with_message_count`` entry of a version."""
        meta: Dict[str, Any] = {
            'name': self.name, 'type': self.msg_type,
            'serialization_format': self.serialization_format,
            'offered_qos_profiles': qos_for_version(
                self.offered_qos_profiles, version)}
        if version >= 7:
            meta['type_description_hash'] = self.type_description_hash
        return {'topic_metadata': meta,
                'message_count': int(self.message_count)}


def bag_info(topics: Sequence[TopicRecord], file_name: str, start_ns: int,
             end_ns: int, custom_data: Optional[Dict[str, str]] = None,
             ros_distro: str = '', version: int = VERSION) -> Dict[str, Any]:
    """
    Return ``rosbag2_bagfile_information`` for a one-file MCAP bag.

    With the fields of metadata ``version`` (5-9, see the module doc):
    version 5 is what Humble's rosbag2 writes and reads.
    """
    if version not in WRITE_VERSIONS:
        raise ValueError(f'cannot write metadata version {version}')
    count = sum(int(t.message_count) for t in topics)
    if count == 0:
        start_ns = end_ns = 0
    start = {'nanoseconds_since_epoch': int(start_ns)}
    duration = {'nanoseconds': max(0, int(end_ns) - int(start_ns))}
    info: Dict[str, Any] = {
        'version': version, 'storage_identifier': STORAGE_ID,
        'duration': duration, 'starting_time': start,
        'message_count': count,
        'topics_with_message_count': [t.as_dict(version) for t in topics],
        'compression_format': '', 'compression_mode': '',
        'relative_file_paths': [file_name],
        'files': [{'path': file_name, 'starting_time': dict(start),
                   'duration': dict(duration), 'message_count': count}]}
    if version >= 6:
        info['custom_data'] = {str(k): str(v) for k, v in
                               (custom_data or {}).items()} or None
    if version >= 8:
        info['ros_distro'] = ros_distro
    return info


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and \
        value >= 0


def _qos_text_problems(text: Any, integers: bool) -> List[str]:
    """Problems of a version 4-8 QoS text for a reader (see reader_problems)."""
    if not isinstance(text, str):
        return [f'is {type(text).__name__}, not text']
    if not text.strip():
        return []
    try:
        items = yaml.safe_load(text)
    except yaml.YAMLError:
        return ['is not YAML']
    if not isinstance(items, list):
        return ['is not a list']
    out = []
    for item in items:
        if not isinstance(item, dict):
            return ['holds a non-mapping']
        missing = [k for k in _QOS_KEYS if k not in item]
        if missing:
            out.append('lacks ' + ', '.join(missing))
        if integers:
            named = [k for k in _ENUMS if k in item and
                     not (isinstance(item[k], int) and
                          not isinstance(item[k], bool))]
            if named:
                out.append(f'has policy names, not rmw integers: '
                           f'{", ".join(named)}')
    return sorted(set(out))


def reader_problems(info: Any, reader: str = 'jazzy') -> List[str]:
    """
    Return why rosbag2's reader of a distro would refuse this metadata.

    ``info`` is ``rosbag2_bagfile_information``; ``reader`` is ``humble``
    (rosbag2 0.15: fields up to version 5, QoS as text with integer
    policies, as its player parses them) or ``jazzy`` (also Kilted and
    Rolling: every field of the bag's version, QoS text or, from 9, a
    list). [] when it reads the bag. Follows the decoders in
    ``rosbag2_storage`` (``metadata_io.cpp``/``yaml.hpp``) and
    ``rosbag2_transport/qos.cpp`` (Humble) of each branch.
    """
    if not isinstance(info, dict):
        return ['rosbag2_bagfile_information is not a mapping']
    version = info.get('version')
    if not isinstance(version, int) or isinstance(version, bool):
        return [f'version {version!r} is not an integer']
    out: List[str] = []

    def need(node: Any, key: str, check: Any, where: str = '') -> Any:
        value = node.get(key) if isinstance(node, dict) else None
        if not isinstance(node, dict) or key not in node:
            out.append(f'{where}{key} missing (version {version})')
        elif not check(value):
            out.append(f'{where}{key} is {value!r:.60}')
        return value

    def is_time(key: str) -> Any:
        return lambda v: isinstance(v, dict) and _is_int(v.get(key))
    need(info, 'storage_identifier', lambda v: isinstance(v, str))
    need(info, 'duration', is_time('nanoseconds'))
    need(info, 'starting_time', is_time('nanoseconds_since_epoch'))
    need(info, 'message_count', _is_int)
    need(info, 'relative_file_paths', lambda v: isinstance(v, list) and
         all(isinstance(x, str) for x in v))
    if version >= 3:
        need(info, 'compression_format', lambda v: isinstance(v, str))
        need(info, 'compression_mode', lambda v: isinstance(v, str))
    if version >= 5:
        need(info, 'files', lambda v: isinstance(v, list) and all(
            isinstance(f, dict) and isinstance(f.get('path'), str) and
            is_time('nanoseconds_since_epoch')(f.get('starting_time')) and
            is_time('nanoseconds')(f.get('duration')) and
            _is_int(f.get('message_count')) for f in v))
    newer = reader != 'humble'
    if newer and version >= 6:
        need(info, 'custom_data',
             lambda v: v is None or isinstance(v, dict))
    if newer and version >= 8:
        need(info, 'ros_distro', lambda v: isinstance(v, str))
    topics = need(info, 'topics_with_message_count',
                  lambda v: isinstance(v, list))
    for k, entry in enumerate(topics if isinstance(topics, list) else []):
        where = f'topic {k}: '
        need(entry, 'message_count', _is_int, where)
        meta = need(entry, 'topic_metadata', lambda v: isinstance(v, dict),
                    where)
        if not isinstance(meta, dict):
            continue
        where = f'topic {meta.get("name", k)}: '
        for key in ('name', 'type', 'serialization_format'):
            need(meta, key, lambda v: isinstance(v, str), where)
        if newer and version >= 7:
            need(meta, 'type_description_hash',
                 lambda v: isinstance(v, str), where)
        if version < 4:
            continue
        if 'offered_qos_profiles' not in meta:
            out.append(f'{where}offered_qos_profiles missing '
                       f'(version {version})')
            continue
        qos = meta['offered_qos_profiles']
        if newer and version >= 9:
            problems = _qos_text_problems(qos_string(qos), False) \
                if isinstance(qos, list) else ['is not a list (version 9)']
        else:
            problems = _qos_text_problems(qos, integers=not newer)
        for problem in problems:
            out.append(f'{where}offered_qos_profiles {problem}')
    return out


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
