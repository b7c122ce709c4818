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
so watching 3.7 MB camera images costs no deserialisation. Publishes a
``diagnostic_msgs/DiagnosticArray`` on ``/hil/link_status`` every
``report_period`` wall seconds and, with ``print_stats``, a line
``LINK_STATS {json}`` on stdout (used by ``bench_link``).
"""

import json
import struct
import sys
import time
from typing import Any, Dict, Optional, Tuple

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from hil_bridge.interface import contract
from hil_bridge.interface.node_main import run_node
from hil_bridge.interface.params import declare_params, ParamSpec
from hil_bridge.link.link_stats import ClockEstimator, TopicWindow
from rclpy.clock import Clock, ClockType
from rclpy.node import Node
from std_msgs.msg import Float64MultiArray

NODE_NAME = 'hil_link_monitor'
STATS_PREFIX = 'LINK_STATS '

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
        self._names: Dict[str, str] = {}
        self._seq = 0
        self._last_pong = time.monotonic()
        self._started = time.monotonic()
        self.pongs = 0
        for key in list(self.p['topics'] or []):
            row = contract.topic(key)
            name = row.resolve(role_name)
            self._names[key] = name
            self.windows[key] = TopicWindow(horizon=float(self.p['window']))
            self.bad[key] = 0
            self.create_subscription(
                row.msg_class(), name, self._make_cb(key),
                contract.qos_profile(row.qos), raw=True)
        self.status_pub = contract.create_publisher(self, 'link_status')
        if self.role == 'client':
            self.ping_pub = contract.create_publisher(self, 'link_ping')
            contract.create_subscription(self, 'link_pong', self._on_pong)
            self.create_timer(1.0 / float(self.p['ping_rate']), self._ping,
                              clock=self._wall)
        else:
            self.pong_pub = contract.create_publisher(self, 'link_pong')
            contract.create_subscription(self, 'link_ping', self._on_ping)
        self.create_timer(float(self.p['report_period']), self._report,
                          clock=self._wall)

    # -- ping-pong -----------------------------------------------------------
    def _ping(self) -> None:
        self._seq += 1
        self.ping_pub.publish(Float64MultiArray(
            data=[float(self._seq), time.time()]))

    def _on_ping(self, msg: Float64MultiArray) -> None:
        t2 = time.time()
        if len(msg.data) < 2:
            self.get_logger().warning('ping with fewer than 2 values ignored',
                                      throttle_duration_sec=5.0)
            return
        seq, t1 = float(msg.data[0]), float(msg.data[1])
        self.pong_pub.publish(Float64MultiArray(
            data=[seq, t1, t2, time.time()]))

    def _on_pong(self, msg: Float64MultiArray) -> None:
        t4 = time.time()
        if len(msg.data) < 4:
            self.get_logger().warning('pong with fewer than 4 values ignored',
                                      throttle_duration_sec=5.0)
            return
        _, t1, t2, t3 = (float(v) for v in msg.data[:4])
        try:
            self.clock_est.add(t1, t2, t3, t4)
        except ValueError as exc:
            self.get_logger().warning(f'bad pong: {exc}',
                                      throttle_duration_sec=5.0)
            return
        self.pongs += 1
        self._last_pong = time.monotonic()

    # -- topics --------------------------------------------------------------
    def _make_cb(self, key: str) -> Any:
        def callback(raw: bytes) -> None:
            stamp, ok = header_stamp(raw)
            if not ok or stamp != stamp:
                self.bad[key] += 1
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
            topics[key] = res
        out: Dict[str, Any] = {'role': self.role, 'topics': topics}
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
