# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
The messages of ``recorder_status`` (``/hil/recorder/status``).

Two kinds of diagnostic_msgs/DiagnosticArray, told apart by the name of
their one status:

* an **acknowledgement** (``recorder``), stamped with the newest
  ``/clock`` the recorder holds; values ``messages``, ``backlog_mb``,
  ``lost``. A bridge or player in lockstep on ``recorder_status`` waits
  for it before the next frame.
* a **subscription report** (``recorder/subscriptions``), sent a few times
  a second until the first acknowledgement, stamped -1 s (before any sim
  time, so a consumer that only compares stamps never takes it for an
  acknowledgement); values ``node`` (the recorder's fully qualified node
  name), ``only`` and ``exclude`` (its ``--topics`` / ``--exclude``
  fnmatch patterns, so a publisher knows which of its topics will be
  recorded, also those the recorder subscribes later) and ``matched`` (the
  topics on which its subscription has matched every publisher it has
  discovered, at least one); lists comma-separated. A bridge publishes its
  first frame only when the recorder has matched its writers and its own
  writers have matched the recorder's readers (DDS matching is per side),
  so no message is sent before the recorder can receive it.
"""

import fnmatch
from typing import Iterable, NamedTuple, Optional, Sequence, Tuple

from builtin_interfaces.msg import Time
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue

ACK_NAME = 'recorder'
SUBSCRIPTIONS_NAME = 'recorder/subscriptions'
#: header stamp of a subscription report (s)
REPORT_STAMP = Time(sec=-1, nanosec=0)


class RecorderStatus(NamedTuple):
    """One parsed recorder_status message."""

    ack: bool
    stamp: float
    node: str = ''
    only: Tuple[str, ...] = ()
    exclude: Tuple[str, ...] = ()
    matched: Tuple[str, ...] = ()

    def records(self, topic: str) -> bool:
        """Return True when the reporting recorder records ``topic``."""
        return selected(topic, self.only, self.exclude)


def selected(topic: str, only: Sequence[str], exclude: Sequence[str]) -> bool:
    """Return True when ``topic`` matches ``only`` (if any) and no ``exclude``."""
    if only and not any(fnmatch.fnmatch(topic, p) for p in only):
        return False
    return not any(fnmatch.fnmatch(topic, p) for p in exclude)


def ack_msg(stamp_ns: int, bag: str, messages: int, backlog_mb: float,
            lost: int) -> DiagnosticArray:
    """Return the acknowledgement of the ``/clock`` stamped ``stamp_ns``."""
    msg = DiagnosticArray()
    msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(int(stamp_ns),
                                                            10**9)
    values = [KeyValue(key='messages', value=str(int(messages))),
              KeyValue(key='backlog_mb', value=f'{backlog_mb:.1f}'),
              KeyValue(key='lost', value=str(int(lost)))]
    msg.status = [DiagnosticStatus(name=ACK_NAME, message=bag,
                                   values=values)]
    return msg


def subscriptions_msg(node: str, only: Sequence[str], exclude: Sequence[str],
                      matched: Iterable[str]) -> DiagnosticArray:
    """Return a subscription report (see the module doc)."""
    msg = DiagnosticArray()
    msg.header.stamp = REPORT_STAMP
    values = [KeyValue(key='node', value=node),
              KeyValue(key='only', value=','.join(only)),
              KeyValue(key='exclude', value=','.join(exclude)),
              KeyValue(key='matched', value=','.join(sorted(matched)))]
    msg.status = [DiagnosticStatus(name=SUBSCRIPTIONS_NAME, values=values)]
    return msg


def parse(msg: DiagnosticArray) -> Optional[RecorderStatus]:
    """Return the parsed message, None for one of neither kind."""
    if not msg.status:
        return None
    status = msg.status[0]
    stamp = float(msg.header.stamp.sec) + float(msg.header.stamp.nanosec) * 1e-9
    if status.name == ACK_NAME:
        return RecorderStatus(True, stamp)
    if status.name != SUBSCRIPTIONS_NAME:
        return None
    values = {kv.key: kv.value for kv in status.values}

    def names(key: str) -> Tuple[str, ...]:
        return tuple(t for t in values.get(key, '').split(',') if t)
    return RecorderStatus(False, stamp, values.get('node', ''), names('only'),
                          names('exclude'), names('matched'))
