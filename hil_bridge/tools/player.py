# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
Republish an MCAP recording (``carla-hil play FILE.mcap``).

Messages are published serialized, in log-time order, paced by ``--rate``
(1.0 = as recorded, 0 = as fast as possible), ``/clock`` included, so the
onboard stack can run on recorded CARLA (or built-in) data without a
simulator. By default only what the simulator PC publishes is replayed
(the contract topics whose publisher is ``hil_bridge``, plus other actors'
odometry), so the onboard nodes recompute everything downstream;
``--all`` replays every recorded topic.
"""

import argparse
import fnmatch
import sys
import time
from typing import Dict, List, Optional

from hil_bridge.interface import contract
from hil_bridge.tools.mcap_io import iter_raw
from hil_bridge.tools.recorder import msg_class


def sim_pc_topics(role: str = contract.DEFAULT_ROLE) -> List[str]:
    """Return topic patterns the simulator PC publishes (contract)."""
    out = []
    for row in contract.topics().values():
        if row.publisher == 'hil_bridge':
            out.append(row.name.format(role=role, actor='*'))
    return out


def _qos_for(topic: str, role: str):
    for row in contract.topics().values():
        if fnmatch.fnmatch(topic, row.name.format(role=role, actor='*')):
            return contract.qos_profile(row.qos)
    return contract.qos_profile('state')


def _recorded_channels(path: str) -> List[tuple]:
    """Return (topic, schema name) of a finished file's channels."""
    from mcap.exceptions import McapError
    from mcap.reader import make_reader
    try:
        with open(path, 'rb') as stream:
            summary = make_reader(stream).get_summary()
    except (McapError, EOFError, ValueError):
        return []
    if summary is None:
        return []
    return [(c.topic, summary.schemas[c.schema_id].name)
            for c in summary.channels.values()]


def play(path: str, rate: float = 1.0, replay_all: bool = False,
         clock: bool = True, role: str = contract.DEFAULT_ROLE,
         context: Optional[object] = None, wait: float = 2.0) -> int:
    """
    Publish the recording once; return the number of messages sent.

    Publishers are created up front (for finished files) and playback
    starts once each has a subscriber, or after ``wait`` seconds.
    """
    import rclpy
    own = context is None
    if own:
        rclpy.init()
    node = rclpy.create_node('mcap_player', context=context)
    patterns = None if replay_all else sim_pc_topics(role)
    pubs: Dict[str, object] = {}

    def wanted(topic: str) -> bool:
        if topic == '/clock' and not clock:
            return False
        return patterns is None or any(fnmatch.fnmatch(topic, p)
                                       for p in patterns)

    def publisher(topic: str, type_name: str) -> object:
        if topic not in pubs:
            pubs[topic] = node.create_publisher(
                msg_class(type_name), topic, _qos_for(topic, role))
        return pubs[topic]

    for topic, type_name in _recorded_channels(path):
        if wanted(topic):
            publisher(topic, type_name)
    deadline = time.monotonic() + wait
    while pubs and time.monotonic() < deadline and not all(
            p.get_subscription_count() > 0 for p in pubs.values()):
        time.sleep(0.05)
    sent = 0
    try:
        t_first, w_first = None, time.monotonic()
        for schema, channel, message in iter_raw(path):
            if not wanted(channel.topic):
                continue
            pub = publisher(channel.topic, schema.name)
            if t_first is None:
                t_first = message.log_time
            if rate > 0:
                due = w_first + (message.log_time - t_first) * 1e-9 / rate
                delay = due - time.monotonic()
                if delay > 0:
                    time.sleep(delay)
            pub.publish(message.data)
            sent += 1
    finally:
        node.destroy_node()
        if own:
            rclpy.try_shutdown()
    return sent


def main(argv: Optional[List[str]] = None) -> int:
    """Entry point of ``carla-hil play``."""
    parser = argparse.ArgumentParser(prog='carla-hil play',
                                     description=__doc__.split('\n')[1])
    parser.add_argument('file')
    parser.add_argument('--rate', type=float, default=1.0)
    parser.add_argument('--all', action='store_true', dest='replay_all')
    parser.add_argument('--no-clock', action='store_true')
    parser.add_argument('--role', default=contract.DEFAULT_ROLE)
    parser.add_argument('--wait', type=float, default=2.0,
                        help='seconds to wait for subscribers first')
    args = parser.parse_args(argv)
    sent = play(args.file, args.rate, args.replay_all, not args.no_clock,
                args.role, wait=args.wait)
    print(f'[play] published {sent} messages from {args.file}')
    return 0 if sent else 1


if __name__ == '__main__':
    sys.exit(main())
