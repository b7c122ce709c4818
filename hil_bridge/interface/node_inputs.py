# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
The stamp policy (:mod:`hil_bridge.interface.freshness`) on an rclpy node.

One :class:`InputPolicy` per node: it reads the node's clock (sim time with
``use_sim_time``), gives every input topic its :class:`InputGate` (warnings
to the node's logger), watches the clock for jumps back and then resets the
gates and calls the node's ``on_reset`` with one info line. Also the
message-size limits every node enforces before it decodes anything
(:func:`cloud_size`, :func:`check_cloud_size`).
"""

from typing import Any, Callable, Dict, Optional

from hil_bridge.interface.freshness import ClockWatch, FUTURE_TOLERANCE, InputGate, Throttle


#: sim seconds from the start in which a node whose sim clock has not
#: started yet accepts stamps (see :meth:`InputPolicy.admit`)
CLOCK_START_WINDOW = 5.0


def stamp_seconds(stamp: Any) -> float:
    """Return the seconds of a ``builtin_interfaces/Time``-like stamp."""
    return float(stamp.sec) + float(stamp.nanosec) * 1e-9


class InputPolicy:
    """The stamp policy, the clock watch and the throttled warnings of one node."""

    def __init__(self, node: Any, on_reset: Optional[Callable[[], None]] = None) -> None:
        self.node = node
        self.on_reset = on_reset
        self.watch = ClockWatch()
        self.throttle = Throttle()
        self.gates: Dict[str, InputGate] = {}
        self.resets = 0
        self._use_sim_time: Optional[bool] = None

    def _warn(self, text: str) -> None:
        self.node.get_logger().warning(text)

    def gate(self, topic: str, timeout: float, future_tolerance: float = FUTURE_TOLERANCE,
             monotonic: bool = False) -> InputGate:
        """Create (or return) the gate of input ``topic`` (timeout in node-clock s)."""
        if topic not in self.gates:
            self.gates[topic] = InputGate(topic, timeout, future_tolerance, monotonic,
                                          warn=self._warn, throttle=self.throttle)
        return self.gates[topic]

    def now(self) -> float:
        """Return the node clock (s); a jump back resets the node's time-based state."""
        now = self.node.get_clock().now().nanoseconds * 1e-9
        last = self.watch.last
        if self.watch.jumped_back(now):
            self.resets += 1
            self.node.get_logger().info(
                f'clock jumped back from {last:.3f} s to {now:.3f} s (replay restarted or '
                'simulator reset): time-based state reset')
            for gate in self.gates.values():
                gate.reset()
            if self.on_reset is not None:
                self.on_reset()
        return now

    def admit(self, gate: InputGate, stamp: Any) -> Optional[float]:
        """
        Return the stamp (s) when ``gate`` accepts it at the node clock, else None.

        A node on sim time whose clock has not started (reads 0: no /clock
        received yet, which at start-up can come after the first sensor
        message of the same frame) judges a stamp of the first
        :data:`CLOCK_START_WINDOW` seconds as current instead of dropping
        it as ahead of the clock (lockstep would wait for that frame's
        commands in vain).
        """
        now = self.now()
        t = stamp_seconds(stamp)
        if now == 0.0 and 0.0 <= t <= CLOCK_START_WINDOW and self._sim_time():
            now = t
        return t if gate.admit(t, now) else None

    def _sim_time(self) -> bool:
        """Return True when the node runs on sim time (``use_sim_time``)."""
        if self._use_sim_time is None:
            try:
                self._use_sim_time = bool(self.node.get_parameter('use_sim_time').value)
            except Exception:  # noqa: B902 - a node without the parameter: wall time
                self._use_sim_time = False
        return self._use_sim_time

    def warn(self, key: str, text: str) -> None:
        """Log ``text`` as a warning at most once per throttle period for ``key``."""
        if self.throttle.ready(key):
            self._warn(text)


def cloud_size(msg: Any) -> int:
    """Return the number of points a PointCloud2 claims (width x height)."""
    return int(msg.width) * int(msg.height)


def check_cloud_size(msg: Any, max_points: int, what: str = 'cloud') -> None:
    """Raise ValueError before decoding when a cloud claims more than ``max_points``."""
    n = cloud_size(msg)
    if n > int(max_points):
        raise ValueError(f'{what} of {msg.width}x{msg.height} = {n} points exceeds '
                         f'max_points {int(max_points)}; dropped undecoded')
