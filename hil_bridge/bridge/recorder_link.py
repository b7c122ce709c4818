# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
The bridge's side of ``recorder_status``: no frame before the recorder can take it.

DDS matches a writer and a reader on each side separately, each when its
participant has discovered the other's endpoint; a message published
before the writer has matched a reader never reaches that reader (best
effort or reliable alike; latched topics are delivered on matching). So
before its first frame the bridge waits (:meth:`RecorderLink.wait_matched`)
until, on every topic it publishes that the recorder records (from the
recorder's subscription report, :mod:`hil_bridge.interface.recorder_status`):
the recorder's subscription has matched the bridge's writer, the graph
shows the recorder's reader, and the writer has matched every compatible
reader the graph shows. At the end it waits for the acknowledgement of its
last frame (:meth:`RecorderLink.wait_ack`), so a recorder that is behind
holds the whole run before the bridge goes away.
"""

import math
import threading
import time
from typing import Any, Callable, Dict, List, Optional

from hil_bridge.interface import contract, recorder_status
from rclpy.qos import DurabilityPolicy, ReliabilityPolicy


def _fqn(namespace: str, name: str) -> str:
    return namespace.rstrip('/') + '/' + name


def compatible(writer: Any, reader: Any) -> bool:
    """
    Return False when a reader's QoS can never match the writer's.

    Only the policies the graph reports reliably (reliability, durability):
    a reliable reader needs a reliable writer, a transient-local reader a
    transient-local writer. (rclpy's ``qos_check_compatible`` takes the
    graph's infinite deadline for a set one and reports every reader as
    incompatible.)
    """
    if reader.reliability == ReliabilityPolicy.RELIABLE and \
            writer.reliability != ReliabilityPolicy.RELIABLE:
        return False
    return not (reader.durability == DurabilityPolicy.TRANSIENT_LOCAL and
                writer.durability != DurabilityPolicy.TRANSIENT_LOCAL)


class RecorderLink:
    """Subscribe to ``recorder_status``; keep the newest report and acknowledgement."""

    def __init__(self, node: Any, role: str, on_ack: Callable[[float], None]) -> None:
        """Subscribe on ``node``; ``on_ack(stamp s)`` runs for every acknowledgement."""
        self.node = node
        self._on_ack = on_ack
        self._cond = threading.Condition()
        self.report: Optional[recorder_status.RecorderStatus] = None
        #: newest acknowledged /clock stamp (s)
        self.acked = -math.inf
        self.topic = contract.topic('recorder_status').resolve(role)
        contract.create_subscription(node, 'recorder_status', self._on_msg, role)

    def _on_msg(self, msg: Any) -> None:
        status = recorder_status.parse(msg)
        if status is None:
            return
        with self._cond:
            if status.ack:
                self.acked = max(self.acked, status.stamp)
            else:
                self.report = status
            self._cond.notify_all()
        if status.ack:
            self._on_ack(status.stamp)

    def unmatched(self, publishers: Dict[str, Any]) -> List[str]:
        """Return the topics of ``{name: publisher}`` the recorder cannot take yet."""
        report = self.report
        if report is None:
            return ['(no report from the recorder yet)']
        out = []
        for name, pub in sorted(publishers.items()):
            if not report.records(name):
                continue
            readers = [i for i in self.node.get_subscriptions_info_by_topic(name)
                       if compatible(pub.qos_profile, i.qos_profile)]
            theirs = any(_fqn(i.node_namespace, i.node_name) == report.node
                         for i in readers)
            if name not in report.matched or not theirs or \
                    pub.get_subscription_count() < len(readers):
                out.append(name)
        return out

    def wait_matched(self, publishers: Dict[str, Any], running: Callable[[], bool],
                     timeout: float) -> List[str]:
        """
        Wait until :meth:`unmatched` is empty (or an acknowledgement came).

        Returns what is still unmatched after ``timeout`` wall s (0 =
        forever) or when ``running()`` turns false; [] when all matched.
        """
        deadline = time.monotonic() + (timeout if timeout > 0.0 else math.inf)
        while True:
            if self.acked > -math.inf:
                return []
            pending = self.unmatched(publishers)
            if not pending or not running() or time.monotonic() >= deadline:
                return pending
            with self._cond:
                self._cond.wait(timeout=0.05)

    def wait_ack(self, stamp: float, timeout: float,
                 running: Callable[[], bool] = lambda: True) -> bool:
        """
        Wait until the recorder acknowledged ``stamp`` (s).

        False after ``timeout`` wall s, when ``running()`` turns false or
        when no recorder is left in the graph.
        """
        deadline = time.monotonic() + timeout
        while True:
            with self._cond:
                if self.acked >= stamp - 1e-6:
                    return True
                left = deadline - time.monotonic()
                if left <= 0.0 or not running():
                    return False
                self._cond.wait(timeout=min(left, 0.05))
            if not self.node.count_publishers(self.topic):
                return self.acked >= stamp - 1e-6
