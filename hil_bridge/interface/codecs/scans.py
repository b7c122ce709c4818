# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""LaserScan codec: ranges (m) per bearing bin <-> ``sensor_msgs/LaserScan``."""

import array
import math
from typing import Any, Optional, Tuple

from hil_bridge.interface.codecs.stamps import as_header, fill_array
import numpy as np
from sensor_msgs.msg import LaserScan


def _fill_float32(values: np.ndarray) -> array.array:
    return fill_array('f', np.ascontiguousarray(values, dtype=np.float32))


def scan_to_msg(ranges: np.ndarray, angle_min: float, angle_increment: float,
                t: Any, frame_id: str = '', range_min: float = 0.0,
                range_max: float = float('inf'), scan_time: float = 0.0,
                time_increment: float = 0.0,
                intensities: Optional[np.ndarray] = None) -> LaserScan:
    """Encode ranges (m) of bins starting at ``angle_min`` (rad)."""
    r = np.asarray(ranges, dtype=np.float32).reshape(-1)
    if not math.isfinite(angle_increment) or angle_increment == 0.0:
        raise ValueError(f'angle_increment must be finite and non-zero, '
                         f'got {angle_increment}')
    msg = LaserScan()
    msg.header = as_header(t, frame_id)
    msg.angle_min = float(angle_min)
    msg.angle_increment = float(angle_increment)
    msg.angle_max = float(angle_min + angle_increment * max(r.size - 1, 0))
    msg.range_min, msg.range_max = float(range_min), float(range_max)
    msg.scan_time, msg.time_increment = float(scan_time), float(time_increment)
    msg.ranges = _fill_float32(r)
    if intensities is not None:
        i = np.asarray(intensities, dtype=np.float32).reshape(-1)
        if i.size not in (0, r.size):
            raise ValueError(f'{i.size} intensities for {r.size} ranges')
        msg.intensities = _fill_float32(i)
    return msg


def scan_to_arrays(msg: LaserScan) -> Tuple[np.ndarray, np.ndarray]:
    """
    Decode a ``LaserScan`` to (angles (N,), ranges (N,)) float32.

    ``ranges`` is a zero-copy view; angles are angle_min + i*increment.
    Raises ``ValueError`` for a zero or non-finite angle increment.
    """
    r = np.frombuffer(msg.ranges, dtype=np.float32) if isinstance(
        msg.ranges, array.array) else np.asarray(msg.ranges, np.float32)
    inc = float(msg.angle_increment)
    if r.size and (not math.isfinite(inc) or inc == 0.0
                   or not math.isfinite(msg.angle_min)):
        raise ValueError(f'scan has invalid angles (angle_min '
                         f'{msg.angle_min}, angle_increment {inc})')
    angles = (np.float32(msg.angle_min)
              + np.arange(r.size, dtype=np.float32) * np.float32(inc))
    return angles, r
