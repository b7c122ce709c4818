# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
Who may command the car: the bridge's check of its command sources (no rclpy).

The interface contract names the one node that publishes each command topic
(``config/interfaces.yaml``, column ``from``: ``cmd_vel`` from
``cone_drive_planner``, ``brake_request`` from ``aeb_controller``, ``/joy``
from ``keyboard_teleop``); ``trusted_nodes`` (bridge parameter) adds nodes
allowed on every command topic and on the bridge's services (``~/pause``,
``~/step``, ``~/advance``; no node of the graph calls them). The bridge
feeds :class:`SourceGuard` the graph's publishers of each topic (rclpy
``get_publishers_info_by_topic``: node name and endpoint gid) and the
clients of its services, every second:

* any other publisher or client raises an alarm (one error line per new
  endpoint, counted); a publisher whose node is not discovered yet (rclpy
  names it ``_NODE_NAME_UNKNOWN_``: its endpoint came before its
  participant's node list, as at every start-up on Jazzy) is alarmed only
  when it stays unnamed for ``UNNAMED_UPDATES`` updates;
* with ``strict`` a message is used only when its publisher gid (rclpy
  MessageInfo ``publisher_gid``) belongs to an expected node; where the
  middleware gives no gid, messages on a topic are ignored while an
  unexpected publisher is on it; service requests are refused while an
  unexpected client exists.

Node names are not authentication: any process can call itself
``cone_drive_planner``. The guard catches mistakes and casual intruders on
the domain; SROS2 (docs/security.md) is what authenticates.
"""

from dataclasses import dataclass
from typing import Dict, Iterable, List, Optional, Sequence, Set

#: Node name rclpy gives an endpoint whose node is not discovered yet.
UNNAMED_NODE = '_NODE_NAME_UNKNOWN_'

#: Graph updates (1 s apart) an unnamed publisher gets before its alarm.
UNNAMED_UPDATES = 3


@dataclass(frozen=True)
class Endpoint:
    """A publisher (or service client) on the graph: node name, namespace, gid."""

    node: str
    namespace: str = '/'
    gid: bytes = b''

    @property
    def fqn(self) -> str:
        """Return the fully qualified node name."""
        ns = self.namespace.rstrip('/')
        return f'{ns}/{self.node}'


class SourceGuard:
    """Expected publishers per command topic and clients per service; alarms."""

    def __init__(self, expected: Dict[str, Sequence[str]], trusted: Iterable[str] = (),
                 strict: bool = False, own_node: str = 'hil_bridge') -> None:
        self.trusted: Set[str] = {str(n) for n in trusted if str(n)}
        self.expected: Dict[str, Set[str]] = {
            topic: set(nodes) | self.trusted for topic, nodes in expected.items()}
        self.strict = bool(strict)
        self.own_node = own_node
        self._endpoints: Dict[str, List[Endpoint]] = {t: [] for t in self.expected}
        self._allowed_gids: Dict[str, Set[bytes]] = {t: set() for t in self.expected}
        self._alarmed: Set[tuple] = set()
        self._unnamed: Dict[tuple, int] = {}  # updates each unnamed endpoint was seen
        self._service_intruders: Dict[str, List[str]] = {}
        self.alarms = 0
        self.ignored: Dict[str, int] = dict.fromkeys(self.expected, 0)

    def _is_expected(self, topic: str, node: str) -> bool:
        return node in self.expected.get(topic, set())

    def unexpected(self, topic: str) -> List[Endpoint]:
        """Return the publishers on ``topic`` that are not expected."""
        return [e for e in self._endpoints.get(topic, [])
                if not self._is_expected(topic, e.node)]

    def update(self, topic: str, endpoints: Sequence[Endpoint]) -> List[str]:
        """Record the publishers of ``topic``; return alarm lines for new intruders."""
        self._endpoints[topic] = list(endpoints)
        self._allowed_gids[topic] = {e.gid for e in endpoints
                                     if self._is_expected(topic, e.node) and e.gid}
        out = []
        seen = {(topic, e.fqn, e.gid) for e in endpoints if e.node == UNNAMED_NODE}
        self._unnamed = {k: n for k, n in self._unnamed.items() if k[0] != topic or k in seen}
        for e in endpoints:
            key = (topic, e.fqn, e.gid)
            if self._is_expected(topic, e.node) or key in self._alarmed:
                continue
            if e.node == UNNAMED_NODE:
                self._unnamed[key] = self._unnamed.get(key, 0) + 1
                if self._unnamed[key] < UNNAMED_UPDATES:
                    continue  # its node name is still being discovered
            self._alarmed.add(key)
            self.alarms += 1
            allowed = ', '.join(sorted(self.expected.get(topic, ()))) or 'nobody'
            action = ('its messages are ignored (strict_sources)' if self.strict
                      else 'its messages are still used (set strict_sources to ignore them)')
            out.append(f'unexpected publisher {e.fqn} on {topic} (expected: {allowed}): '
                       f'{action}')
        return out

    def allows(self, topic: str, gid: Optional[bytes]) -> bool:
        """
        Return True when a message on ``topic`` from publisher ``gid`` may be used.

        Not strict: always. Strict: the gid must belong to an expected node
        (an unknown gid is a publisher the last graph update did not see:
        refused until it is known); ``gid`` None (no publisher info):
        allowed only while no unexpected publisher is on the topic.
        """
        if not self.strict:
            return True
        if gid is None:
            ok = not self.unexpected(topic)
        else:
            ok = bytes(gid) in self._allowed_gids.get(topic, set())
        if not ok:
            self.ignored[topic] = self.ignored.get(topic, 0) + 1
        return ok

    def update_service(self, service: str, clients: Sequence[Endpoint]) -> List[str]:
        """Record the clients of a bridge service; return alarm lines for new ones."""
        bad = [c for c in clients if c.node not in self.trusted and c.node != self.own_node]
        self._service_intruders[service] = [c.fqn for c in bad]
        out = []
        for c in bad:
            key = (service, c.fqn)
            if key in self._alarmed:
                continue
            self._alarmed.add(key)
            self.alarms += 1
            action = ('requests are refused (strict_sources)' if self.strict
                      else 'requests are still served (set strict_sources to refuse them)')
            out.append(f'unexpected client {c.fqn} of {service} (trusted_nodes: '
                       f'{", ".join(sorted(self.trusted)) or "none"}): {action}')
        return out

    def service_allowed(self, service: str) -> Optional[str]:
        """Return None when ``service`` may be served, else why it is refused."""
        intruders = self._service_intruders.get(service, [])
        if self.strict and intruders:
            return (f'refused: unexpected client(s) {", ".join(intruders)} of {service} '
                    '(strict_sources; add trusted_nodes)')
        return None

    def summary(self) -> Dict[str, object]:
        """Return counters for the run's result (alarms, ignored messages)."""
        return {'alarms': self.alarms, 'ignored': dict(self.ignored),
                'unexpected': {t: [e.fqn for e in self.unexpected(t)] for t in self.expected}}
