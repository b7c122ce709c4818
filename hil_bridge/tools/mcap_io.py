# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
Read MCAP recordings and rosbag2 bags robustly (no rclpy).

Every function takes a bag directory (``metadata.yaml`` + MCAP file) or
an MCAP file. A recording whose writer was killed has no summary section; the seeking
reader refuses such a file. Reading it as a stream gives every complete
message up to the cut, which is what a user wants after a crash.
"""

import struct
from typing import Dict, Iterator, List, Optional, Tuple

from hil_bridge.tools.bag_metadata import mcap_path
from mcap.exceptions import McapError
from mcap.reader import make_reader, NonSeekingReader
from mcap.records import Channel, Message, Schema


def iter_raw(path: str, problems: Optional[List[str]] = None
             ) -> Iterator[Tuple[Schema, Channel, Message]]:
    """
    Yield (schema, channel, message) in log-time order where possible.

    Finished files are read in log-time order through their index; files
    without a summary (a killed recorder) are streamed in file order up to
    the last complete record. Where the file is cut short or damaged, one
    line saying so is appended to ``problems``.
    """
    path = mcap_path(path)
    count = 0
    with open(path, 'rb') as stream:
        try:
            summary_ok = make_reader(stream).get_summary() is not None
        except (McapError, EOFError, ValueError, struct.error):
            summary_ok = False
        if summary_ok:
            stream.seek(0)
            try:
                for item in make_reader(stream).iter_messages(
                        log_time_order=True):
                    count += 1
                    yield item
            except (McapError, EOFError, ValueError, struct.error,
                    KeyError, OSError) as err:
                _problem(problems, f'{path}: damaged after {count} messages '
                         f'({type(err).__name__}: {err}); read those')
            return
    with open(path, 'rb') as stream:
        reader = NonSeekingReader(stream)
        try:
            for item in reader.iter_messages(log_time_order=False):
                count += 1
                yield item
        except (McapError, EOFError, ValueError, struct.error,
                KeyError, OSError) as err:
            _problem(problems, f'{path}: cut short (no summary; '
                     f'{type(err).__name__}: {str(err) or "end of file"}): '
                     f'read the {count} complete messages before the cut')


def _problem(problems: Optional[List[str]], text: str) -> None:
    if problems is not None:
        problems.append(' '.join(text.split()))


def channels(path: str) -> List[Tuple[str, str, Dict[str, str]]]:
    """
    Return (topic, type, channel metadata) of every channel of a bag.

    From the summary of a finished file, else by streaming the file (a
    killed recorder); [] for a file without channels.
    """
    path = mcap_path(path)
    with open(path, 'rb') as stream:
        try:
            summary = make_reader(stream).get_summary()
        except (McapError, EOFError, ValueError):
            summary = None
    if summary is not None:
        return [(c.topic, summary.schemas[c.schema_id].name
                 if c.schema_id in summary.schemas else '', dict(c.metadata))
                for c in summary.channels.values()]
    out: Dict[str, Tuple[str, str, Dict[str, str]]] = {}
    for schema, channel, _message in iter_raw(path):
        out.setdefault(channel.topic, (channel.topic, schema.name,
                                       dict(channel.metadata)))
    return list(out.values())
