# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
Track data types shared by the simulator, the tools and the onboard planner.

Everything is REP-103 in ``map`` (x forward, y left, z up; metres,
radians). When a car drives along ``Track.centerline`` (in the order of its
rows) the blue cones are on its left and the yellow cones on its right; big
orange cones mark the timing lines. File formats, generators and rule
checks live in the simulator (``hil_bridge.sim.tracks``).
"""

from dataclasses import dataclass, field
import math
from typing import Dict

from hil_bridge.interface.frames import Pose
import numpy as np

#: Minimum track width of the Formula Student rules (m).
MIN_WIDTH = 3.0
#: Skidpad of the Formula Student rules (m): ring diameters, centre distance.
SKIDPAD_INNER_DIAMETER = 15.25
SKIDPAD_OUTER_DIAMETER = 21.25
SKIDPAD_CENTRE_DISTANCE = 18.25
#: The car starts this far past the beginning of the skidpad entry (m).
SKIDPAD_START_AFTER_ENTRY = 2.0


@dataclass
class ConeArray:
    """
    Cones in ``map``.

    Positions (N, 2) in metres, class ids (N,) uint8 and a mask of the
    cones knocked over (hit by a vehicle).
    """

    xy: np.ndarray = field(default_factory=lambda: np.zeros((0, 2)))
    class_id: np.ndarray = field(
        default_factory=lambda: np.zeros(0, dtype=np.uint8))
    knocked: np.ndarray = field(
        default_factory=lambda: np.zeros(0, dtype=bool))

    def __len__(self) -> int:
        """Return the number of cones."""
        return int(self.xy.shape[0])


@dataclass
class TimingLine:
    """
    A timing line: segment ``a``-``b`` in ``map`` (m).

    ``direction`` is the unit vector of the driving direction through the
    line; a crossing counts only when the car moves along it.
    """

    name: str
    a: np.ndarray
    b: np.ndarray
    direction: np.ndarray


@dataclass
class Track:
    """
    A Formula Student track in ``map`` (REP-103, metres, radians).

    ``centerline`` (K, 2) runs in the driving direction (for a closed track
    the last row connects back to the first, which is not repeated);
    ``width`` is the nominal track width; ``timing_lines`` holds ``start``
    and ``finish`` (the same line on closed tracks).
    """

    name: str
    cones: ConeArray
    car_start: Pose
    centerline: np.ndarray
    closed: bool
    width: float = MIN_WIDTH
    timing_lines: Dict[str, TimingLine] = field(default_factory=dict)
    mission: str = ''

    @property
    def length(self) -> float:
        """Return the centre-line arc length in metres (whole loop if closed)."""
        return float(arc_length(self.centerline, self.closed)[-1])


def arc_length(pts: np.ndarray, closed: bool) -> np.ndarray:
    """Return cumulative arc length (K,) or (K+1,) for a closed polyline."""
    if closed:
        pts = np.vstack([pts, pts[:1]])
    seg = np.hypot(*np.diff(pts, axis=0).T)
    return np.concatenate([[0.0], np.cumsum(seg)])


def skidpad_route(entry_length: float = 15.0, exit_length: float = 20.0,
                  laps_per_side: int = 2, step: float = 0.5) -> np.ndarray:
    """
    Return the standard skidpad route (K, 2) with its crossing at the origin.

    The centre line of the FS skidpad lane: entry along +x from
    ``-entry_length``, ``laps_per_side`` clockwise laps of the right circle
    (centre (0, -9.125)), as many counter-clockwise laps of the left one
    (centre (0, 9.125)), exit along +x to ``exit_length``; points about
    ``step`` metres apart, in driving order.
    """
    rc = (SKIDPAD_INNER_DIAMETER + SKIDPAD_OUTER_DIAMETER) / 4.0
    d = SKIDPAD_CENTRE_DISTANCE / 2.0
    ex_x = np.arange(-entry_length, 0.0, step)
    entry = np.column_stack([ex_x, np.zeros(len(ex_x))])
    n_circ = int(math.ceil(2 * math.pi * rc / step))
    t = np.linspace(0.0, 2 * math.pi * laps_per_side, n_circ * laps_per_side,
                    endpoint=False)
    right = np.array([0.0, -d]) + rc * np.column_stack(
        [np.cos(math.pi / 2 - t), np.sin(math.pi / 2 - t)])
    left = np.array([0.0, d]) + rc * np.column_stack(
        [np.cos(-math.pi / 2 + t), np.sin(-math.pi / 2 + t)])
    out_x = np.arange(0.0, exit_length + 1e-9, step)
    exit_ = np.column_stack([out_x, np.zeros(len(out_x))])
    return np.vstack([entry, right, left, exit_])
