# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
``hil_link_monitor``: health of the link between simulator PC and car.

Run one instance per host: ``role: server`` on one (it answers pings on
``/hil/pong``) and ``role: client`` on the other (it pings on ``/hil/ping``
at ``ping_rate`` and estimates the clock offset server - client and the
round-trip time NTP-style, ``hil_bridge.link.link_stats.ClockEstimator``). Both
roles watch the contract topics in ``topics``: rate, bandwidth, drops
(stamp gaps at the median period) and latency = receipt time on the node's
clock - header stamp. With ``use_sim_time`` (the default) that is the age
of the data in simulated time when it arrives: it needs no host clock
agreement at all, since the stamps and ``/clock`` both come from the
simulator. Wall-clock stamps from the other host would need the offset.

Subscriptions are raw (serialized CDR): only the header stamp is decoded,
so watching 3.7 MB camera images costs no deserialisation. Limits, as in
every node: a watched message larger than ``max_bytes`` is counted as
``oversized`` and left out of the statistics; a ping or pong larger than
:data:`PING_MAX_BYTES` (a few values) is dropped before it is decoded; a
pong that answers no ping of this client (a second server, a replay) is
dropped, so it cannot bend the clock estimate; a stamp step beyond
``max_stamp_gap`` is a ``jump`` (a restart or one bad stamp), not millions
of lost messages. Every rejection is counted and warned about at most once
per topic and 5 s. Publishes a
``diagnostic_msgs/DiagnosticArray`` on ``/hil/link_status`` every
``report_period`` wall seconds and, with ``print_stats``, a line
``LINK_STATS {json}`` on stdout (used by ``bench_link``).
"""

import collections
import json
import math
import struct
import sys
import time
from typing import Any, Dict, List, Optional, Tuple

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from hil_bridge.interface import contract
from hil_bridge.interface.node_main import run_node
from hil_bridge.interface.params import declare_params, ParamSpec
from hil_bridge.link.link_stats import ClockEstimator, TopicWindow
from rclpy.clock import Clock, ClockType
from rclpy.node import Node
from rclpy.serialization import deserialize_message
from std_msgs.msg import Float64MultiArray

NODE_NAME = 'hil_link_monitor'
STATS_PREFIX = 'LINK_STATS '
#: Largest serialized ping or pong (bytes): 4 float64 values need 48.
PING_MAX_BYTES = 256
#: Pings remembered for matching their pongs (a pong of an older one is dropped).
PINGS_KEPT = 1024
#: Wall seconds between two warnings of one kind and topic.
WARN_PERIOD = 5.0

PARAMS = [
    ParamSpec('role', 'client pings and estimates the clock offset; '
              'server answers pings', choices=('client', 'server')),
    ParamSpec('role_name', 'ego vehicle role name ({role} in topics)'),
    ParamSpec('topics', 'contract keys of the topics to watch (messages '
              'with a std_msgs/Header first)'),
    ParamSpec('ping_rate', 'client: pings per wall second', lo=0.1, hi=100.0),
    ParamSpec('report_period', 'wall seconds between reports', lo=0.05,
              hi=60.0),
    ParamSpec('window', 'wall seconds of receipts per topic summary',
              lo=0.5, hi=600.0),
    ParamSpec('clock_window', 'ping-pong exchanges kept for the offset',
              lo=1, hi=100000),
    ParamSpec('link_timeout', 'client: wall seconds without a pong before '
              'the link is reported down (ERROR)', lo=0.1, hi=600.0),
    ParamSpec('rtt_warn', 'client: median RTT (s) above which to warn',
              lo=0.0, hi=10.0),
    ParamSpec('print_stats', 'print LINK_STATS {json} lines on stdout'),
    ParamSpec('max_bytes', 'watched messages larger than this (bytes) are '
              'counted as oversized, not in the statistics', lo=12, hi=2**31 - 1),
    ParamSpec('max_stamp_gap', 'stamp steps larger than this (s) are jumps '
              '(a restart, a bad stamp), not lost messages', lo=0.001, hi=1e6),
]


def header_stamp(raw: bytes) -> Tuple[float, bool]:
    """
    Return (stamp seconds, ok) from a serialized message with a Header first.

    ``raw`` is CDR: 4 bytes encapsulation (byte 1 odd = little endian), then
    int32 sec, uint32 nanosec. ``ok`` is False for a too-short buffer.
    """
    if len(raw) < 12:
        return float('nan'), False
    endian = '<' if raw[1] & 1 else '>'
    sec, nsec = struct.unpack_from(endian + 'iI', raw, 4)
    return sec + nsec * 1e-9, True


class LinkMonitorNode(Node):
    """Ping-pong clock estimation plus per-topic link statistics."""

    def __init__(self, **kwargs: Any) -> None:
        """Declare parameters, create subscriptions, timers and publishers."""
        super().__init__(NODE_NAME, **kwargs)
        self.p = declare_params(self, PARAMS, NODE_NAME)
        self.role = str(self.p['role'])
        role_name = str(self.p['role_name'])
        self._wall = Clock(clock_type=ClockType.STEADY_TIME)
        self.clock_est = ClockEstimator(window=int(self.p['clock_window']))
        self.windows: Dict[str, TopicWindow] = {}
        self.bad: Dict[str, int] = {}
        self.oversized: Dict[str, int] = {}
        self.max_bytes = int(self.p['max_bytes'])
        #: rejected pings / pongs by reason
        self.rejected: Dict[str, int] = collections.Counter()
        self._warned: Dict[str, float] = {}
        self._sent: 'collections.OrderedDict[float, float]' = collections.OrderedDict()
        self._names: Dict[str, str] = {}
        self._seq = 0
        self._last_pong = time.monotonic()
        self._started = time.monotonic()
        self.pongs = 0
        for key in list(self.p['topics'] or []):
            row = contract.topic(key)
            name = row.resolve(role_name)
            self._names[key] = name
            self.windows[key] = TopicWindow(horizon=float(self.p['window']),
                                            max_gap=float(self.p['max_stamp_gap']))
            self.bad[key] = 0
            self.oversized[key] = 0
            self.create_subscription(
                row.msg_class(), name, self._make_cb(key),
                contract.qos_profile(row.qos), raw=True)
        self.status_pub = contract.create_publisher(self, 'link_status')
        if self.role == 'client':
            self.ping_pub = contract.create_publisher(self, 'link_ping')
            self._raw_subscription('link_pong', self._on_pong)
            self.create_timer(1.0 / float(self.p['ping_rate']), self._ping,
                              clock=self._wall)
        else:
            self.pong_pub = contract.create_publisher(self, 'link_pong')
            self._raw_subscription('link_ping', self._on_ping)
        self.create_timer(float(self.p['report_period']), self._report,
                          clock=self._wall)

    def _raw_subscription(self, key: str, callback: Any) -> None:
        """Subscribe contract topic ``key`` serialized: size checked before decoding."""
        row = contract.topic(key)
        self.create_subscription(row.msg_class(), row.resolve(contract.DEFAULT_ROLE),
                                 callback, contract.qos_profile(row.qos), raw=True)

    def _reject(self, what: str, reason: str) -> None:
        """Count a rejected ``what`` and warn at most once per WARN_PERIOD and kind."""
        key = f'{what} {reason}'
        self.rejected[key] += 1
        now = time.monotonic()
        if now - self._warned.get(key, -WARN_PERIOD) >= WARN_PERIOD:
            self._warned[key] = now
            self.get_logger().warning(f'{what} dropped: {reason} '
                                      f'({self.rejected[key]} so far)')

    def _values(self, what: str, raw: bytes, needed: int) -> Optional[List[float]]:
        """Return the first ``needed`` values of a serialized ping/pong, or None."""
        if len(raw) > PING_MAX_BYTES:
            self._reject(what, f'{len(raw)} bytes exceed {PING_MAX_BYTES}')
            return None
        try:
            data = [float(v) for v in deserialize_message(raw, Float64MultiArray).data]
        except Exception:  # noqa: B902 - any undecodable buffer is one bad message
            self._reject(what, 'undecodable')
            return None
        if len(data) < needed:
            self._reject(what, f'fewer than {needed} values')
            return None
        if not all(math.isfinite(v) for v in data[:needed]):
            self._reject(what, 'non-finite values')
            return None
        return data[:needed]

    # -- ping-pong -----------------------------------------------------------
    def _ping(self) -> None:
        self._seq += 1
        t1 = time.time()
        self._sent[float(self._seq)] = t1
        while len(self._sent) > PINGS_KEPT:
            self._sent.popitem(last=False)
        self.ping_pub.publish(Float64MultiArray(data=[float(self._seq), t1]))

    def _on_ping(self, raw: bytes) -> None:
        t2 = time.time()
        values = self._values('ping', raw, 2)
        if values is None:
            return
        seq, t1 = values
        self.pong_pub.publish(Float64MultiArray(
            data=[seq, t1, t2, time.time()]))

    def _on_pong(self, raw: bytes) -> None:
        t4 = time.time()
        values = self._values('pong', raw, 4)
        if values is None:
            return
        seq, t1, t2, t3 = values
        if self._sent.get(seq) != t1:
            self._reject('pong', 'answers no ping of this client (a second server, '
                         'a duplicate or a replay)')
            return
        del self._sent[seq]
        try:
            self.clock_est.add(t1, t2, t3, t4)
        except ValueError as exc:
            self._reject('pong', str(exc))
            return
        self.pongs += 1
        self._last_pong = time.monotonic()

    # -- topics --------------------------------------------------------------
    def _make_cb(self, key: str) -> Any:
        def callback(raw: bytes) -> None:
            if len(raw) > self.max_bytes:
                self.oversized[key] += 1
                self._reject(self._names[key], f'{len(raw)} bytes exceed max_bytes '
                             f'{self.max_bytes}')
                return
            stamp, ok = header_stamp(raw)
            if not ok or stamp != stamp:
                self.bad[key] += 1
                self._reject(self._names[key], 'no header stamp')
                return
            now = self.get_clock().now().nanoseconds * 1e-9
            self.windows[key].add(time.monotonic(), stamp, len(raw),
                                  age=now - stamp)
        return callback

    # -- report --------------------------------------------------------------
    def summary(self) -> Dict[str, Any]:
        """Return the current statistics as a JSON-able dict."""
        now = time.monotonic()
        topics = {}
        for key, win in self.windows.items():
            res = win.summary(now)
            res['bad'] = self.bad[key]
            res['oversized'] = self.oversized[key]
            topics[key] = res
        out: Dict[str, Any] = {'role': self.role, 'topics': topics,
                               'rejected': dict(self.rejected)}
        if self.role == 'client':
            out['clock'] = self.clock_est.estimate()
            out['since_pong'] = now - self._last_pong if self.pongs else \
                now - self._started
        return out

    def _report(self) -> None:
        res = self.summary()
        arr = DiagnosticArray()
        arr.header.stamp = self.get_clock().now().to_msg()
        for key, stats in res['topics'].items():
            level = DiagnosticStatus.OK
            message = 'ok'
            if stats['count'] == 0:
                level, message = DiagnosticStatus.WARN, 'no messages'
            elif stats['drops'] > 0:
                level, message = DiagnosticStatus.WARN, \
                    f'{stats["drops"]} dropped'
            elif stats['jumps'] > 0:
                level, message = DiagnosticStatus.WARN, \
                    f'{stats["jumps"]} stamp jumps'
            arr.status.append(_status(f'{NODE_NAME}: {self._names[key]}',
                                      level, message, stats))
        if 'clock' in res:
            clock = dict(res['clock'], since_pong=res['since_pong'])
            level, message = DiagnosticStatus.OK, 'ok'
            if res['since_pong'] > float(self.p['link_timeout']):
                level, message = DiagnosticStatus.ERROR, 'link down (no pong)'
            elif clock['rtt_p50'] > float(self.p['rtt_warn']) > 0.0:
                level, message = DiagnosticStatus.WARN, 'high round-trip time'
            arr.status.append(_status(f'{NODE_NAME}: clock', level, message,
                                      clock))
        self.status_pub.publish(arr)
        if self.p['print_stats']:
            print(STATS_PREFIX + json.dumps(res, allow_nan=True), flush=True)


def _status(name: str, level: bytes, message: str,
            values: Dict[str, Any]) -> DiagnosticStatus:
    return DiagnosticStatus(
        level=level, name=name, message=message, hardware_id='hil_link',
        values=[KeyValue(key=k, value=f'{v:.6g}' if isinstance(v, float)
                         else str(v)) for k, v in values.items()])


def main(args: Optional[list] = None) -> int:
    """Run the node until SIGINT/SIGTERM."""
    return run_node(LinkMonitorNode, args)


if __name__ == '__main__':
    sys.exit(main())
