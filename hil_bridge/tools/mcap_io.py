# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
Read MCAP recordings and rosbag2 bags robustly (no rclpy).

:func:`iter_raw` takes a bag directory (``metadata.yaml`` + one MCAP
file) or an MCAP file; :mod:`hil_bridge.tools.bag_io` reads every other
rosbag2 layout (sqlite3, split, compressed) and uses it for MCAP files.
A recording whose writer was killed has no summary section; the seeking
reader refuses such a file. Reading it as a stream gives every complete
message up to the cut, which is what a user wants after a crash.
"""

import struct
from typing import Iterator, List, Optional, Tuple

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
