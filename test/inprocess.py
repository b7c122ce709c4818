# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
Test helper: a node class under test in this process, on a settable sim clock.

``NodeUnderTest(NodeClass, context, params)`` builds the node with
``use_sim_time`` and parameter overrides (defaults from its config YAML, as
in a real start), replaces every publisher's ``publish`` with a recorder
(``h.out[topic]``), and sets the node's ROS clock with ``h.at(t)``. Callbacks
are called directly, so no DDS traffic and no spinning is involved: what a
test asserts is the node class's own behaviour, quickly and exactly.
"""

from collections import defaultdict
from typing import Any, Dict, List, Optional

from hil_bridge.interface.codecs import stamps


class NodeUnderTest:
    """One node instance with recorded outputs and a settable clock."""

    def __init__(self, node_cls: Any, context: Any,
                 params: Optional[Dict[str, Any]] = None) -> None:
        from rclpy.parameter import Parameter
        overrides = [Parameter('use_sim_time', value=True)]
        overrides += [Parameter(k, value=v) for k, v in (params or {}).items()]
        self.node = node_cls(context=context, parameter_overrides=overrides)
        self.out: Dict[str, List[Any]] = defaultdict(list)
        for pub in self.node.publishers:
            pub.publish = (lambda msg, name=pub.topic_name: self.out[name].append(msg))
        self.t = 0.0

    def at(self, t: float) -> None:
        """Set the node's clock to sim time ``t`` (s)."""
        from rclpy.time import Time
        self.t = float(t)
        self.node.get_clock().set_ros_time_override(Time(nanoseconds=int(round(t * 1e9))))

    def topic(self, suffix: str) -> List[Any]:
        """Return the messages published on the topic whose name ends with ``suffix``."""
        for name, msgs in self.out.items():
            if name.endswith(suffix):
                return msgs
        return []

    def stamps(self, suffix: str) -> List[float]:
        """Return the header stamp, in seconds, of each message on a topic."""
        return [stamps.sec_from_stamp(m.header.stamp) for m in self.topic(suffix)]

    def close(self) -> None:
        """Destroy the node."""
        self.node.destroy_node()
