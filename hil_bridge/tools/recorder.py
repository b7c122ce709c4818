# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
Record the graph's topics into a rosbag2 bag (MCAP storage).

``python -m hil_bridge.tools.recorder BAG_DIR [--topics PATTERN ...]
[--exclude PATTERN ...] [--role NAME] [--bag-version V] [--ros-args ...]``
writes ``BAG_DIR/metadata.yaml`` and ``BAG_DIR/<name>_0.mcap`` as
``ros2 bag record -s mcap`` does (:mod:`hil_bridge.tools.bag_writer`):
``ros2msg`` schemas, ``cdr`` messages as received (no decode), the
publishers' offered QoS and the RIHS01 type hash per topic. ``--bag-version``
(default ``auto``: 5 when ``ROS_DISTRO`` is humble, else 9; or a number
5-9, or a distro name) chooses the metadata version: Humble's rosbag2
reads 5 (QoS as text with rmw integers), not 9. Log times are
the node's clock at receipt (sim time with use_sim_time), as rosbag2's;
the publish time is the wall clock at receipt (rosbag2 stores the
sender's wall time there, which rclpy does not hand to raw callbacks; on
one host the two differ by the delivery latency), so a report can measure
wall-time latencies in a sim-time bag.

Every topic of ``config/interfaces.yaml`` is subscribed at start-up, with
the contract's reliability and durability and a deep queue, before any
publisher exists; the line ``[recorder] ready: ...`` says so (the runner
starts the bridge after it). Topics outside the contract (other actors'
odometry) are found by a graph scan every 0.25 s. ``--topics`` keeps only
matching topics, ``--exclude`` drops matching ones (fnmatch patterns,
e.g. ``'*/image'``).

Subscription callbacks only enqueue; one thread writes. Losses are
counted, never hidden: DDS ``message_lost`` events (samples that never
arrived) and messages refused when the write backlog exceeds
``MAX_BACKLOG_BYTES``. The recorder publishes ``recorder_status``
(``/hil/recorder/status``) stamped with the newest ``/clock`` it holds,
held back while its backlog is over ``ACK_BACKLOG_BYTES`` or, before the
first one, until every publisher in the graph is matched; a bridge in
lockstep with ``recorder_status`` among its ``lockstep_topics`` therefore
never runs ahead of the recorder. Until that first acknowledgement it
reports what it records and which subscriptions have matched
(:mod:`hil_bridge.interface.recorder_status`), so the bridge sends
nothing before the recorder can take it. On SIGINT/SIGTERM it keeps
taking what DDS still holds for it until nothing came for
``DRAIN_QUIET`` s (at most ``DRAIN_LIMIT`` s; a second signal ends the
drain at once), closes the bag and prints one line ``RECORDER_RESULT
{json}`` with the messages per topic. Unlike a node it is not ended hard
one second after the signal (that cut bags short while messages still
came): only when draining and closing take longer than ``DRAIN_LIMIT +
CLOSE_LIMIT``.
"""

import argparse
import importlib
import json
import queue
import struct
import sys
import threading
import time
from typing import Any, Dict, List, Optional, Sequence

from hil_bridge.interface import contract, recorder_status
from hil_bridge.interface.node_main import make_executor, STOP_POLL, StopRequest
from hil_bridge.tools import bag_metadata as bm
from hil_bridge.tools.bag_writer import BagWriter
import rclpy
from rclpy.clock import Clock, ClockType
from rclpy.executors import ExternalShutdownException
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from rclpy.signals import SignalHandlerOptions

SKIP = {'/rosout', '/parameter_events', '/hil/recorder/status'}
RESULT_PREFIX = 'RECORDER_RESULT '
READY_TEXT = '[recorder] ready:'
#: messages refused beyond this write backlog (bytes)
MAX_BACKLOG_BYTES = 1024 * 1024 * 1024
#: the lockstep acknowledgement waits while the backlog is above this
ACK_BACKLOG_BYTES = 64 * 1024 * 1024
#: subscription depth: room for stalls of the recorder process
DEPTH = {'sensor': 50, 'clock': 200}
DEFAULT_DEPTH = 100
#: graph scan period for topics outside the contract (wall s)
SCAN_PERIOD = 0.25
#: before the first acknowledgement, wait at most this long (wall s) for
#: every publisher in the graph to be matched
MATCH_WAIT = 5.0
#: subscription reports until the first acknowledgement (wall s)
REPORT_PERIOD = 0.1
#: at a stop, keep taking messages until none came for this long (wall s)
DRAIN_QUIET = 0.3
#: ... but at most this long (wall s)
DRAIN_LIMIT = 10.0
#: longest time to close the bag after the drain before a hard exit (wall s)
CLOSE_LIMIT = 30.0


def msg_class(full_type: str) -> Any:
    """Import the message class of ``pkg/msg/Type``."""
    pkg, kind, name = full_type.split('/')
    return getattr(importlib.import_module(f'{pkg}.{kind}'), name)


def cdr_stamp_ns(data: bytes) -> Optional[int]:
    """
    Return the builtin_interfaces/Time at the start of a CDR message (ns).

    It is ``header.stamp`` of every stamped message and the ``clock`` of
    rosgraph_msgs/Clock: the first two fields after the 4-byte
    encapsulation header, int32 sec and uint32 nanosec, in the byte order
    the header names. None when the data is too short.
    """
    if len(data) < 12:
        return None
    order = '<' if data[1] & 1 else '>'
    sec, nsec = struct.unpack_from(order + 'iI', data, 4)
    return sec * 1_000_000_000 + nsec


def selected(topic: str, topics: Sequence[str], exclude: Sequence[str]
             ) -> bool:
    """Return True when ``topic`` passes ``--topics`` and ``--exclude``."""
    return topic not in SKIP and recorder_status.selected(topic, topics, exclude)


def planned_topics(role: str = contract.DEFAULT_ROLE
                   ) -> Dict[str, contract.Topic]:
    """Return {topic name: contract row} of every concrete contract topic."""
    out = {}
    for row in contract.topics().values():
        if '{actor}' in row.name:
            continue
        try:
            row.msg_class()
        except ImportError:
            continue  # optional package (tf2_msgs) not installed
        out[row.resolve(role)] = row
    return out


def subscriber_qos(kind: str) -> QoSProfile:
    """Return the recorder's subscription QoS for a contract QoS kind."""
    offer = contract.qos_profile(kind)
    return QoSProfile(history=HistoryPolicy.KEEP_LAST,
                      depth=DEPTH.get(kind, DEFAULT_DEPTH),
                      reliability=offer.reliability,
                      durability=offer.durability)


def offered_entry(qos: Any) -> Dict[str, Any]:
    """Return the rosbag2 QoS entry of a publisher's (discovered) profile."""
    return bm.qos_entry(
        reliability=qos.reliability.name.lower(),
        durability=qos.durability.name.lower(),
        history=qos.history.name.lower(), depth=qos.depth,
        deadline_ns=qos.deadline.nanoseconds,
        lifespan_ns=qos.lifespan.nanoseconds,
        liveliness=qos.liveliness.name.lower(),
        lease_ns=qos.liveliness_lease_duration.nanoseconds,
        avoid_ros_namespace_conventions=qos.avoid_ros_namespace_conventions)


class BagRecorder(Node):
    """Subscribe to the contract's topics and write a rosbag2 MCAP bag."""

    def __init__(self, bag_dir: str, topics: Sequence[str] = (),
                 exclude: Sequence[str] = (),
                 role: str = contract.DEFAULT_ROLE,
                 version: int = bm.VERSION) -> None:
        """Create ``bag_dir`` (must not hold files) and subscribe."""
        super().__init__('hil_recorder')
        self._bag = BagWriter(bag_dir, version)
        self.bag_dir = bag_dir
        self._topics, self._exclude = list(topics), list(exclude)
        self._lock = threading.Lock()
        self._ack_lock = threading.Lock()
        self._types: Dict[str, str] = {}
        self._subs: Dict[str, Any] = {}
        self._ignored: set = set()
        self.received: Dict[str, int] = {}
        self.lost: Dict[str, int] = {}
        self.refused = 0
        self._backlog = 0
        self._closing = False
        self._pending_ack: Optional[int] = None
        self._acked = False
        self._first_clock_wall: Optional[float] = None
        #: wall time (monotonic) of the newest message
        self.last_receipt = time.monotonic()
        self._queue: 'queue.Queue' = queue.Queue()
        self._status_pub = contract.create_publisher(self, 'recorder_status',
                                                     role)
        self._thread = threading.Thread(target=self._write_loop, daemon=True)
        self._thread.start()
        for name, row in planned_topics(role).items():
            if selected(name, self._topics, self._exclude):
                self._subscribe(name, row.msg_type,
                                subscriber_qos(row.qos))
        self.planned = len(self._subs)
        self._scan()
        # wall-clock timers: sim time stands still until the first /clock
        steady = Clock(clock_type=ClockType.STEADY_TIME)
        self.create_timer(SCAN_PERIOD, self._scan, clock=steady)
        self.create_timer(0.05, self._try_ack, clock=steady)
        self.create_timer(REPORT_PERIOD, self._report_subscriptions, clock=steady)

    # ---------------------------------------------------------- subscribing
    def _subscribe(self, topic: str, full_type: str, qos: QoSProfile) -> None:
        try:
            cls = msg_class(full_type)
        except (ImportError, AttributeError, ValueError) as exc:
            self.get_logger().warning(f'not recording {topic}: {exc}')
            self._ignored.add(topic)
            return
        from rclpy.event_handler import SubscriptionEventCallbacks
        events = SubscriptionEventCallbacks(
            message_lost=lambda info, t=topic: self._on_lost(t, info))
        self._types[topic] = full_type
        self.received[topic] = 0
        self._subs[topic] = self.create_subscription(
            cls, topic, lambda data, t=topic: self._on_message(t, data), qos,
            raw=True, event_callbacks=events)

    def _scan(self) -> None:
        """Subscribe to new topics outside the contract (graph scan)."""
        for topic, types in self.get_topic_names_and_types():
            if topic in self._subs or topic in self._ignored:
                continue
            if not selected(topic, self._topics, self._exclude) or \
                    len(types) != 1:
                self._ignored.add(topic)
                continue
            infos = self.get_publishers_info_by_topic(topic)
            if not infos:
                continue  # only subscribers so far
            # as rosbag2: reliable / transient local only if every
            # publisher offers it
            reliable = all(i.qos_profile.reliability ==
                           ReliabilityPolicy.RELIABLE for i in infos)
            latched = all(i.qos_profile.durability ==
                          DurabilityPolicy.TRANSIENT_LOCAL for i in infos)
            self._subscribe(topic, types[0], QoSProfile(
                history=HistoryPolicy.KEEP_LAST, depth=DEFAULT_DEPTH,
                reliability=ReliabilityPolicy.RELIABLE if reliable
                else ReliabilityPolicy.BEST_EFFORT,
                durability=DurabilityPolicy.TRANSIENT_LOCAL if latched
                else DurabilityPolicy.VOLATILE))

    # ------------------------------------------------------------ receiving
    def _on_lost(self, topic: str, info: Any) -> None:
        self.lost[topic] = self.lost.get(topic, 0) + int(
            info.total_count_change)

    def _on_message(self, topic: str, data: bytes) -> None:
        if self._closing:
            return
        self.last_receipt = time.monotonic()
        now = self.get_clock().now().nanoseconds
        wall = time.time_ns()
        with self._lock:
            if self._backlog > MAX_BACKLOG_BYTES:
                self.refused += 1
                refused = self.refused
            else:
                refused = 0
                self._backlog += len(data)
        if refused:
            if refused in (1, 100, 1000) or refused % 10000 == 0:
                self.get_logger().warning(
                    f'disk too slow: {refused} messages not recorded')
            return
        self.received[topic] += 1
        self._queue.put((topic, now, wall, data))
        if topic == '/clock':
            stamp = cdr_stamp_ns(data)
            if stamp is not None:
                with self._ack_lock:
                    if self._first_clock_wall is None:
                        self._first_clock_wall = time.monotonic()
                    self._pending_ack = max(stamp, self._pending_ack or 0)
                self._try_ack()

    def _all_matched(self) -> bool:
        for topic, sub in self._subs.items():
            if sub.get_publisher_count() < self.count_publishers(topic):
                return False
        return True

    def _try_ack(self) -> None:
        """Publish the pending acknowledgement when the recorder keeps up."""
        with self._ack_lock:
            stamp = self._pending_ack
            if stamp is None or self._closing:
                return
            with self._lock:
                behind = self._backlog > ACK_BACKLOG_BYTES
            if behind:
                return
            if not self._acked:
                waited = time.monotonic() - (self._first_clock_wall or 0.0)
                if not self._all_matched() and waited < MATCH_WAIT:
                    return
                self._acked = True
            self._pending_ack = None
            self._publish_status(stamp)

    def _publish_status(self, stamp: int) -> None:
        self._status_pub.publish(recorder_status.ack_msg(
            stamp, self.bag_dir, sum(self.received.values()),
            self._backlog / 2**20, sum(self.lost.values()) + self.refused))

    def _report_subscriptions(self) -> None:
        """Until the first acknowledgement: say what is recorded and matched."""
        if self._acked or self._closing:
            return
        matched = [t for t, sub in self._subs.items()
                   if sub.get_publisher_count() >= max(1, self.count_publishers(t))]
        self._status_pub.publish(recorder_status.subscriptions_msg(
            self.get_fully_qualified_name(), self._topics, self._exclude,
            matched))

    # --------------------------------------------------------------- writing
    def _offers(self, topic: str) -> List[Dict[str, Any]]:
        try:
            infos = self.get_publishers_info_by_topic(topic)
        except Exception:  # noqa: B902 - graph query during shutdown
            infos = []
        if infos:
            return [offered_entry(i.qos_profile) for i in infos]
        rows = planned_topics()
        row = rows.get(topic)
        if row is None:
            return []
        offer = contract.qos_profile(row.qos)
        return [bm.qos_entry(offer.reliability.name.lower(),
                             offer.durability.name.lower())]

    def _write_loop(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            topic, now, wall, data = item
            if not self._bag.has_topic(topic):  # offers known by now
                self._bag.add_topic(topic, self._types[topic],
                                    self._offers(topic))
            self._bag.write(topic, now, wall, data)
            with self._lock:
                self._backlog -= len(data)
                drained = self._backlog <= ACK_BACKLOG_BYTES
            if drained and self._pending_ack is not None:
                self._try_ack()

    def close(self) -> Dict[str, Any]:
        """Write what is queued, finish the MCAP file, write metadata.yaml."""
        self._closing = True
        self._queue.put(None)
        self._thread.join()
        info = self._bag.close()
        return {'bag': self.bag_dir, 'version': info['version'],
                'messages': {t: r.message_count for t, r in
                             self._bag.records.items()},
                'lost': {t: n for t, n in self.lost.items() if n},
                'refused': self.refused}


def make_parser() -> argparse.ArgumentParser:
    """Return the recorder's argument parser."""
    parser = argparse.ArgumentParser(
        prog='python -m hil_bridge.tools.recorder',
        description='record the graph into a rosbag2 bag (MCAP)')
    parser.add_argument('bag', help='bag directory to create')
    parser.add_argument('--topics', nargs='+', default=[],
                        metavar='PATTERN', help='record only these topics')
    parser.add_argument('--exclude', action='append', default=[],
                        metavar='PATTERN', help='leave these topics out')
    parser.add_argument('--role', default=contract.DEFAULT_ROLE)
    parser.add_argument('--bag-version', default='auto', metavar='V',
                        help='metadata.yaml version: 5-9, a distro (humble '
                        '= 5, jazzy/kilted = 9) or auto (from ROS_DISTRO)')
    return parser


def main(args: Optional[List[str]] = None) -> int:
    """Record until SIGINT/SIGTERM, then close the bag."""
    argv = list(sys.argv[1:] if args is None else args)
    ros_args = argv[argv.index('--ros-args'):] if '--ros-args' in argv \
        else []
    plain = argv[:argv.index('--ros-args')] if ros_args else argv
    parser = make_parser()
    opts = parser.parse_args(plain)
    try:
        version = bm.version_for(opts.bag_version)
    except ValueError as err:
        parser.error(str(err))
    rclpy.init(args=['recorder'] + ros_args,
               signal_handler_options=SignalHandlerOptions.NO)
    stop = StopRequest(deadline=DRAIN_LIMIT + CLOSE_LIMIT)
    try:
        node = BagRecorder(opts.bag, opts.topics, opts.exclude, opts.role,
                           version)
    except (OSError, ValueError) as err:
        print(f'[recorder] error: {err}', file=sys.stderr, flush=True)
        stop.restore()
        rclpy.try_shutdown()
        return 2
    print(f'{READY_TEXT} {node.planned} contract topics subscribed, '
          f'writing {opts.bag} (metadata version {version})', flush=True)
    summary: Dict[str, Any] = {}
    executor = make_executor()
    executor.add_node(node)
    try:
        while not stop.requested and rclpy.ok():
            executor.spin_once(timeout_sec=STOP_POLL)
        # drain: what DDS holds for us was sent before the stop
        limit = time.monotonic() + DRAIN_LIMIT
        while rclpy.ok() and time.monotonic() < limit and stop.count < 2 and \
                time.monotonic() - node.last_receipt < DRAIN_QUIET:
            executor.spin_once(timeout_sec=0.05)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:
        stop.restore()
        executor.shutdown()
        summary = node.close()
        total = sum(summary['messages'].values())
        lost = sum(summary['lost'].values()) + summary['refused']
        print(f'[recorder] wrote {total} messages on '
              f'{len(summary["messages"])} topics to {opts.bag}; '
              f'{lost} lost in the recorder', flush=True)
        print(RESULT_PREFIX + json.dumps(summary), flush=True)
        node.destroy_node()
        rclpy.try_shutdown()
        stop.done()
    return 0


if __name__ == '__main__':
    sys.exit(main())
