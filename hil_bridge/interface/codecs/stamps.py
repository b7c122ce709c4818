# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
Headers, stamps and the fast buffer fill shared by every message codec.

Assigning ``bytes`` to a ``uint8[]`` field makes rclpy check every element
when field checks are on (the default on Humble/Jazzy), which is orders of
magnitude slower than filling the message's ``array.array`` with one
``memcpy`` (``array.frombytes`` on the numpy buffer), as done here.
"""

import array
import math
from typing import Any

from builtin_interfaces.msg import Time
from std_msgs.msg import Header


def stamp_from_sec(t: float) -> Time:
    """Return a ``builtin_interfaces/Time`` for ``t`` seconds (>= 0)."""
    t = float(t)
    if not math.isfinite(t) or t < 0.0:
        raise ValueError(f'time stamp must be finite and >= 0, got {t}')
    sec = int(math.floor(t))
    nanosec = int(round((t - sec) * 1e9))
    if nanosec >= 1_000_000_000:
        sec, nanosec = sec + 1, nanosec - 1_000_000_000
    return Time(sec=sec, nanosec=nanosec)


def sec_from_stamp(stamp: Time) -> float:
    """Return the seconds of a ``builtin_interfaces/Time``."""
    return float(stamp.sec) + float(stamp.nanosec) * 1e-9


def make_header(t: float, frame_id: str) -> Header:
    """Return a ``std_msgs/Header`` stamped ``t`` seconds in ``frame_id``."""
    return Header(stamp=stamp_from_sec(t), frame_id=str(frame_id))


def fill_array(typecode: str, buf: Any) -> array.array:
    """Copy a C-contiguous buffer into a new ``array(typecode)`` (memcpy)."""
    out = array.array(typecode)
    view = memoryview(buf)
    if view.nbytes:
        out.frombytes(view.cast('B'))
    return out


def fill_uint8(buf: Any) -> array.array:
    """Copy a C-contiguous buffer into a new ``array('B')`` (one memcpy)."""
    return fill_array('B', buf)


def as_header(header_or_t: Any, frame_id: str) -> Header:
    """Return ``header_or_t`` if it is a Header, else a new one stamped with it (s)."""
    if isinstance(header_or_t, Header):
        return header_or_t
    return make_header(header_or_t, frame_id)
