# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
Read MCAP recordings robustly (no rclpy).

A recording whose writer was killed has no summary section; the seeking
reader refuses such a file. Reading it as a stream gives every complete
message up to the cut, which is what a user wants after a crash.
"""

from typing import Iterator, Tuple

from mcap.exceptions import McapError
from mcap.reader import make_reader, NonSeekingReader
from mcap.records import Channel, Message, Schema


def iter_raw(path: str) -> Iterator[Tuple[Schema, Channel, Message]]:
    """
    Yield (schema, channel, message) in log-time order where possible.

    Finished files are read in log-time order through their index; files
    without a summary (a killed recorder) are streamed in file order up to
    the last complete record.
    """
    with open(path, 'rb') as stream:
        try:
            summary_ok = make_reader(stream).get_summary() is not None
        except (McapError, EOFError, ValueError):
            summary_ok = False
        if summary_ok:
            stream.seek(0)
            yield from make_reader(stream).iter_messages(log_time_order=True)
            return
    with open(path, 'rb') as stream:
        reader = NonSeekingReader(stream)
        try:
            yield from reader.iter_messages(log_time_order=False)
        except (McapError, EOFError, ValueError):
            return
