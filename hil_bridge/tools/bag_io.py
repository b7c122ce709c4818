# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
Read any rosbag2 bag (no rclpy): what ``ros2 bag record`` of any distro writes.

:class:`Bag` opens a bag directory (``metadata.yaml`` and its storage
files) or a single storage file:

* storage: MCAP (``.mcap``, read with the ``mcap`` library: log and
  publish time, files cut short) and sqlite3 (``.db3``, Humble's default,
  schema versions 1-4, read through ``rosbags``); the kind of each file
  is taken from its first bytes, not its name;
* metadata versions 1-9 (:mod:`hil_bridge.tools.bag_metadata`): file
  paths relative to the bag (version >= 4) or its parent directory
  (older), QoS as text with rmw integers (4-8) or as a list with names (9);
* split bags (several files, read in log-time order across them);
* zstd compression: whole files (``compression_mode: file``,
  ``NAME_0.db3.zstd``, unpacked into a temporary directory) or each
  message (``compression_mode: message``); MCAP chunk compression (lz4,
  zstd) is the ``mcap`` library's.

A bag that cannot be read raises :class:`BagError`, one line naming the
file and what is wrong (no such path, a directory without metadata.yaml
and storage files, metadata that is not YAML or lacks what is needed to
find the files, a listed file missing, a file that is neither MCAP nor
sqlite3, an unsupported compression). What can be read despite a fault
is read, and the fault is one line in :attr:`Bag.warnings`: a directory
without ``metadata.yaml`` (a recorder that was killed: its storage files
are read), an MCAP file cut short (messages up to the cut), metadata that
rosbag2 itself would refuse (:func:`bag_metadata.reader_problems`).
"""

from dataclasses import dataclass, field
import glob
import heapq
import os
import re
import shutil
import struct
import sys
import tempfile
from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional, Tuple
import weakref

from hil_bridge.tools import bag_metadata as bm
from hil_bridge.tools.mcap_io import iter_raw
import yaml

MCAP_MAGIC = b'\x89MCAP0\r\n'
SQLITE_MAGIC = b'SQLite format 3\x00'
ZSTD_MAGIC = b'\x28\xb5\x2f\xfd'
#: storage plugins read here (metadata ``storage_identifier``)
STORAGES = ('mcap', 'sqlite3')
#: storage file name patterns looked for without metadata.yaml
_PATTERNS = ('*.mcap', '*.db3', '*.mcap.zstd', '*.db3.zstd')
#: at most this many metadata problems are listed one by one
_SHOWN = 3


class BagError(Exception):
    """A bag that cannot be read; the message is one line naming the file."""


@dataclass
class TopicInfo:
    """One topic of a bag: its type, QoS offers, hash and message count."""

    name: str
    msg_type: str
    serialization_format: str = 'cdr'
    #: offered QoS profiles with policy names (bag_metadata.parse_qos)
    offered_qos: List[Dict[str, Any]] = field(default_factory=list)
    type_hash: str = ''
    #: messages in the storage files (None: not known before reading)
    message_count: Optional[int] = None


@dataclass(frozen=True)
class BagMessage:
    """One serialized message; times in ns (publish = log time if unknown)."""

    topic: str
    msg_type: str
    log_time: int
    publish_time: int
    data: bytes


def _one_line(text: Any) -> str:
    return ' '.join(str(text).split())


def _split_index(path: str) -> Tuple[str, int, str]:
    """Sort key: a split file's index (NAME_<k>.mcap) in numeric order."""
    base = os.path.basename(path)
    m = re.search(r'_(\d+)\.(?:mcap|db3)(?:\.zstd)?$', base)
    return (os.path.dirname(path), int(m.group(1)) if m else -1, base)


def _sniff(path: str) -> str:
    """Return 'mcap', 'sqlite3' or 'zstd' from a file's first bytes."""
    try:
        with open(path, 'rb') as f:
            head = f.read(16)
    except OSError as err:
        raise BagError(f'{path}: cannot read: {err.strerror or err}') \
            from None
    if not head:
        raise BagError(f'{path}: empty file (0 bytes)')
    if head.startswith(MCAP_MAGIC):
        return 'mcap'
    if head.startswith(SQLITE_MAGIC):
        return 'sqlite3'
    if head.startswith(ZSTD_MAGIC):
        return 'zstd'
    raise BagError(f'{path}: neither an MCAP nor a sqlite3 file (starts '
                   f'with {head[:8]!r})')


def _qos_dicts(profiles: Iterable[Any]) -> List[Dict[str, Any]]:
    """Return rosbags Qos objects as bag_metadata QoS entries."""
    out = []
    for q in profiles:
        def ns(t: Any) -> Optional[int]:
            value = int(t.sec) * 10**9 + int(t.nsec)
            return None if value >= 9223372036854775807 else value
        out.append(bm.qos_entry(
            reliability=q.reliability.name.lower(),
            durability=q.durability.name.lower(),
            history=q.history.name.lower(), depth=int(q.depth),
            deadline_ns=ns(q.deadline), lifespan_ns=ns(q.lifespan),
            liveliness=q.liveliness.name.lower(),
            lease_ns=ns(q.liveliness_lease_duration),
            avoid_ros_namespace_conventions=bool(
                q.avoid_ros_namespace_conventions)))
    return out


class Bag:
    """A rosbag2 bag opened for reading (see the module doc)."""

    def __init__(self, path: str) -> None:
        """Open ``path`` (bag directory or storage file); raise BagError."""
        self.path = str(path)
        self.warnings: List[str] = []
        self.metadata: Optional[Dict[str, Any]] = None
        self.version: Optional[int] = None
        self.compression = ''  # '', 'file' or 'message' (zstd)
        #: MCAP header's library of the first MCAP file ('' for sqlite3)
        self.library = ''
        self.ros_distro = ''
        self.topics: Dict[str, TopicInfo] = {}
        self._tmp: Optional[str] = None
        self._cleanup: Optional[Any] = None
        listed = self._locate()
        self.files: List[Tuple[str, str]] = []  # (readable path, kind)
        for name in listed:
            self.files.append(self._prepare(name))
        for path_, kind in self.files:
            self._merge_topics(path_, kind)
        if self.metadata is not None:
            self._apply_metadata()

    # -------------------------------------------------------------- opening
    def _locate(self) -> List[str]:
        """Return the storage files of the bag (metadata or a scan)."""
        path = self.path
        if os.path.isfile(path):
            return [path]
        if not os.path.isdir(path):
            raise BagError(f'{path}: no such bag directory or file')
        meta = os.path.join(path, bm.METADATA_FILE)
        if not os.path.isfile(meta):
            found = sorted({f for p in _PATTERNS
                            for f in glob.glob(os.path.join(path, p))},
                           key=_split_index)
            if not found:
                raise BagError(f'{path}: not a bag: no {bm.METADATA_FILE} '
                               'and no .mcap or .db3 file')
            self.warnings.append(
                f'{path}: no {bm.METADATA_FILE} (a recording that was not '
                f'closed?): reading the {len(found)} storage file(s) found')
            return found
        return self._from_metadata(meta)

    def _from_metadata(self, meta: str) -> List[str]:
        try:
            with open(meta, encoding='utf-8') as f:
                doc = yaml.safe_load(f)
        except (OSError, UnicodeDecodeError) as err:
            raise BagError(f'{meta}: cannot read: {_one_line(err)}') from None
        except yaml.YAMLError as err:
            raise BagError(f'{meta}: not YAML: {_one_line(err)}') from None
        info = doc.get('rosbag2_bagfile_information') \
            if isinstance(doc, dict) else None
        if not isinstance(info, dict):
            raise BagError(f'{meta}: no rosbag2_bagfile_information mapping')
        version = info.get('version')
        if not isinstance(version, int) or isinstance(version, bool) or \
                version < 1:
            raise BagError(f'{meta}: version {version!r} is not a rosbag2 '
                           'metadata version')
        self.metadata, self.version = info, version
        self.ros_distro = str(info.get('ros_distro') or '')
        storage = info.get('storage_identifier')
        if storage not in STORAGES:
            raise BagError(f'{meta}: storage {storage!r} is not supported '
                           f'(supported: {", ".join(STORAGES)})')
        mode = str(info.get('compression_mode') or '').lower()
        fmt = str(info.get('compression_format') or '').lower()
        if mode in ('file', 'message'):
            if fmt != 'zstd':
                raise BagError(f'{meta}: compression format {fmt!r} is not '
                               'supported (zstd)')
            self.compression = mode
        elif mode not in ('', 'none'):
            raise BagError(f'{meta}: compression mode {mode!r} is not '
                           'supported (file, message)')
        rel = info.get('relative_file_paths')
        if not isinstance(rel, list) or not rel or \
                not all(isinstance(r, str) for r in rel):
            raise BagError(f'{meta}: relative_file_paths is {rel!r:.60}, '
                           'not a list of files')
        if version > bm.NEWEST_VERSION:
            self.warnings.append(f'{meta}: metadata version {version} is '
                                 f'newer than {bm.NEWEST_VERSION}: read as '
                                 f'{bm.NEWEST_VERSION}')
        problems = bm.reader_problems(info, 'jazzy')
        if problems:
            more = len(problems) - _SHOWN
            self.warnings.append(
                f'{meta}: rosbag2 would refuse this metadata: ' +
                '; '.join(problems[:_SHOWN]) +
                (f' (and {more} more)' if more > 0 else ''))
        # before version 4 the paths start with the bag directory's name
        base = self.path if version >= 4 else os.path.dirname(
            os.path.abspath(self.path))
        out = []
        for name in rel:
            found = name if os.path.isabs(name) else os.path.join(base, name)
            if not os.path.isfile(found):
                alt = os.path.join(self.path, os.path.basename(name))
                if not os.path.isfile(alt):
                    raise BagError(f'{meta}: lists {name}, which is missing')
                found = alt
            out.append(found)
        return out

    def _prepare(self, name: str) -> Tuple[str, str]:
        """Return (readable path, 'mcap' or 'sqlite3') of a storage file."""
        kind = _sniff(name)
        if kind == 'zstd':
            name = self._unpack(name)
            kind = _sniff(name)
            if kind == 'zstd':
                raise BagError(f'{name}: compressed twice')
        elif self.compression == 'file':
            self.warnings.append(f'{name}: not zstd-compressed although the '
                                 'metadata says so: read as it is')
        if self.metadata is not None:
            storage = self.metadata.get('storage_identifier')
            if storage != kind:
                self.warnings.append(f'{name}: a {kind} file in a bag of '
                                     f'storage {storage}: read as {kind}')
        if kind == 'mcap' and not self.library:
            self.library = self._mcap_library(name)
        return name, kind

    def _unpack(self, name: str) -> str:
        """Decompress a zstd file into this bag's temporary directory."""
        import zstandard
        if self._tmp is None:
            self._tmp = tempfile.mkdtemp(prefix='carla_hil_bag_')
            self._cleanup = weakref.finalize(self, shutil.rmtree, self._tmp,
                                             True)
        base = os.path.basename(name)
        out = os.path.join(self._tmp, base[:-5] if base.endswith('.zstd')
                           else base + '.raw')
        try:
            with open(name, 'rb') as src, open(out, 'wb') as dst:
                zstandard.ZstdDecompressor().copy_stream(src, dst)
        except zstandard.ZstdError as err:
            raise BagError(f'{name}: damaged zstd file: {_one_line(err)}') \
                from None
        except OSError as err:
            raise BagError(f'{name}: cannot unpack: {_one_line(err)}') \
                from None
        return out

    @staticmethod
    def _mcap_library(name: str) -> str:
        from mcap.reader import make_reader
        try:
            with open(name, 'rb') as f:
                return str(make_reader(f).get_header().library)
        except Exception:  # noqa: B902 - only a label; damage is seen later
            return ''

    # --------------------------------------------------------------- topics
    def _add_topic(self, topic: TopicInfo) -> None:
        have = self.topics.get(topic.name)
        if have is None:
            self.topics[topic.name] = topic
            return
        if have.msg_type != topic.msg_type:
            self.warnings.append(f'{topic.name}: type {topic.msg_type} in one '
                                 f'file, {have.msg_type} in another: read as '
                                 f'{have.msg_type}')
        if topic.message_count is not None:
            have.message_count = (have.message_count or 0) + \
                topic.message_count
        have.offered_qos = have.offered_qos or topic.offered_qos
        have.type_hash = have.type_hash or topic.type_hash

    def _merge_topics(self, name: str, kind: str) -> None:
        if kind == 'mcap':
            for topic in self._mcap_topics(name):
                self._add_topic(topic)
        else:
            reader = self._sqlite(name)
            try:
                for conn in reader.connections:
                    self._add_topic(TopicInfo(
                        conn.topic, conn.msgtype,
                        conn.ext.serialization_format,
                        _qos_dicts(conn.ext.offered_qos_profiles),
                        conn.digest or '', int(conn.msgcount)))
            finally:
                reader.close()

    def _mcap_topics(self, name: str) -> List[TopicInfo]:
        from mcap.exceptions import McapError
        from mcap.reader import make_reader
        with open(name, 'rb') as f:
            try:
                summary = make_reader(f).get_summary()
            except (McapError, EOFError, ValueError, struct.error):
                summary = None
        if summary is not None:
            stats = summary.statistics
            counts = dict(stats.channel_message_counts) if stats else {}
            return [TopicInfo(
                c.topic, summary.schemas[c.schema_id].name
                if c.schema_id in summary.schemas else '',
                c.message_encoding, self._channel_qos(c.metadata),
                c.metadata.get('topic_type_hash', ''),
                counts.get(c.id, 0) if stats else None)
                for c in summary.channels.values()]
        # no summary (cut short): stream the file once
        found: Dict[str, TopicInfo] = {}
        problems: List[str] = []
        for schema, channel, _msg in iter_raw(name, problems):
            info = found.get(channel.topic)
            if info is None:
                info = found[channel.topic] = TopicInfo(
                    channel.topic, schema.name if schema else '',
                    channel.message_encoding,
                    self._channel_qos(channel.metadata),
                    channel.metadata.get('topic_type_hash', ''), 0)
            info.message_count = (info.message_count or 0) + 1
        self.warnings.extend(problems)
        return list(found.values())

    def _channel_qos(self, metadata: Dict[str, str]) -> List[Dict[str, Any]]:
        try:
            return bm.parse_qos(metadata.get('offered_qos_profiles', ''))
        except (ValueError, yaml.YAMLError):
            return []

    def _sqlite(self, name: str) -> Any:
        from pathlib import Path
        from rosbags.rosbag2.errors import ReaderError
        from rosbags.rosbag2.storage_sqlite3 import Sqlite3Reader
        reader = Sqlite3Reader(Path(name))
        try:
            reader.open()
        except (ReaderError, ValueError, KeyError) as err:
            text = _one_line(err).replace(f'Cannot open database {name}: ', '')
            raise BagError(f'{name}: unreadable sqlite3 bag file: {text}') \
                from None
        return reader

    def _apply_metadata(self) -> None:
        """Take QoS, hashes and formats from metadata.yaml where present."""
        for entry in self.metadata.get('topics_with_message_count') or []:
            meta = entry.get('topic_metadata') if isinstance(entry, dict) \
                else None
            if not isinstance(meta, dict) or 'name' not in meta:
                continue
            topic = self.topics.get(str(meta['name']))
            if topic is None:
                continue  # listed, but no file holds it
            try:
                offers = bm.parse_qos(meta.get('offered_qos_profiles'))
            except (ValueError, yaml.YAMLError):
                offers = []
            topic.offered_qos = offers or topic.offered_qos
            topic.type_hash = str(meta.get('type_description_hash') or
                                  topic.type_hash)
            topic.serialization_format = str(meta.get(
                'serialization_format') or topic.serialization_format)

    # ------------------------------------------------------------- reading
    @property
    def message_count(self) -> Optional[int]:
        """Return the messages in the storage (None if not known)."""
        counts = [t.message_count for t in self.topics.values()]
        if any(c is None for c in counts):
            return None
        return sum(counts)  # type: ignore[arg-type]

    def roles(self) -> List[str]:
        """Return the vehicle role names in the topic names (/carla/<role>/...)."""
        out = set()
        for name in self.topics:
            parts = name.split('/')
            if len(parts) >= 4 and parts[1] == 'carla' and \
                    parts[2] not in ('ground_truth', 'referee', 'actors'):
                out.add(parts[2])
        return sorted(out)

    def role(self, default: str, given: Optional[str] = None
             ) -> Tuple[str, str]:
        """
        Return (vehicle role, note) to read the bag with.

        ``given`` when set; else ``default`` when the bag has topics of it
        (or several or no roles), else the bag's only role with a note
        saying so (carla-ros-bridge's ``hero``, for one).
        """
        if given:
            return given, ''
        roles = self.roles()
        if default in roles or len(roles) != 1:
            return default, ''
        return roles[0], (f'role {roles[0]} (from the topic names in the '
                          'bag; --role to choose)')

    def messages(self, topics: Optional[Iterable[str]] = None
                 ) -> Iterator[BagMessage]:
        """
        Yield the bag's messages in log-time order (``topics``: only those).

        Faults met while reading (a file cut short, a damaged message) end
        that file or skip the message and are added to ``warnings``.
        """
        wanted = None if topics is None else set(topics)
        streams = [self._file_messages(path_, kind, wanted)
                   for path_, kind in self.files]
        if len(streams) == 1:
            yield from streams[0]
        else:
            yield from heapq.merge(*streams, key=lambda m: m.log_time)

    def _file_messages(self, name: str, kind: str,
                       wanted: Optional[set]) -> Iterator[BagMessage]:
        unpack = self._unpacker() if self.compression == 'message' else None
        bad = 0
        for msg in (self._mcap_messages(name, wanted) if kind == 'mcap'
                    else self._sqlite_messages(name, wanted)):
            if unpack is not None:
                try:
                    data = unpack(msg.data)
                except Exception:  # noqa: B902 - zstd raises its own type
                    bad += 1
                    continue
                msg = BagMessage(msg.topic, msg.msg_type, msg.log_time,
                                 msg.publish_time, data)
            yield msg
        if bad:
            self.warnings.append(f'{name}: {bad} messages not zstd-'
                                 'decompressible: left out')

    @staticmethod
    def _unpacker() -> Any:
        import zstandard

        def unpack(data: bytes) -> bytes:
            return zstandard.ZstdDecompressor().decompressobj().decompress(
                bytes(data))
        return unpack

    def _mcap_messages(self, name: str, wanted: Optional[set]
                       ) -> Iterator[BagMessage]:
        problems: List[str] = []
        for schema, channel, msg in iter_raw(name, problems):
            if wanted is not None and channel.topic not in wanted:
                continue
            yield BagMessage(channel.topic, schema.name if schema else '',
                             msg.log_time, msg.publish_time, msg.data)
        for text in problems:  # a file without summary warned at open
            if text not in self.warnings:
                self.warnings.append(text)

    def _sqlite_messages(self, name: str, wanted: Optional[set]
                         ) -> Iterator[BagMessage]:
        import apsw
        from rosbags.rosbag2.errors import ReaderError
        reader = self._sqlite(name)
        count = 0
        try:
            conns = [c for c in reader.connections
                     if wanted is None or c.topic in wanted]
            if not conns:
                return
            for conn, stamp, data in reader.messages(conns):
                count += 1
                yield BagMessage(conn.topic, conn.msgtype, int(stamp),
                                 int(stamp), bytes(data))
        except (apsw.Error, ReaderError) as err:
            self.warnings.append(f'{name}: damaged after {count} messages '
                                 f'({_one_line(err)}); read those')
        finally:
            reader.close()

    def close(self) -> None:
        """Remove unpacked files (also done when the object is collected)."""
        if self._cleanup is not None:
            self._cleanup()

    def __enter__(self) -> 'Bag':
        """Return the bag."""
        return self

    def __exit__(self, *_exc: Any) -> None:
        """Close the bag."""
        self.close()


def guarded(tag: str, bag: str, work: Callable[[], int]) -> int:
    """
    Run a command on a bag: its exit code, never a traceback.

    A :class:`BagError` or any other error is one line on stderr
    (``[tag] error: ...``) and exit code 2; Ctrl-C is exit code 130.
    """
    try:
        return work()
    except BagError as err:
        print(f'[{tag}] error: {err}', file=sys.stderr)
    except KeyboardInterrupt:
        print(f'[{tag}] interrupted', file=sys.stderr)
        return 130
    except Exception as err:  # noqa: B902 - one line, never a traceback
        print(f'[{tag}] error: {bag}: {type(err).__name__}: '
              f'{_one_line(err)}', file=sys.stderr)
    return 2


def open_bag(path: str) -> Bag:
    """Open a bag (see :class:`Bag`); raise :class:`BagError`."""
    return Bag(path)
