# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
Manual-override input: which ``sensor_msgs/Joy`` axes and buttons mean what.

Shared by the drive-by-wire emulation on the simulator PC and the AEB on
the onboard computer (a pressed brake pedal suspends the AEB). Axes follow
the ROS joy convention (steering +1 at full left lock).
"""

from dataclasses import dataclass
import math
from typing import Dict, NamedTuple, Sequence


class JoyState(NamedTuple):
    """A ``sensor_msgs/Joy`` as arrays; ``stamp`` is the sim time it arrived."""

    axes: Sequence[float]
    buttons: Sequence[int]
    stamp: float


@dataclass(frozen=True)
class JoyMapping:
    """
    Which Joy axes/buttons mean what, and their value ranges.

    ``steer_axis`` is +1 at full left lock (ROS joy convention) times
    ``steer_sign``; pedal axes map linearly from ``*_released`` (0) to
    ``*_pressed`` (1); ``takeover_button`` is held (level) for manual mode.
    """

    steer_axis: int = 0
    throttle_axis: int = 1
    brake_axis: int = 2
    takeover_button: int = 0
    steer_sign: float = 1.0
    throttle_released: float = 0.0
    throttle_pressed: float = 1.0
    brake_released: float = 0.0
    brake_pressed: float = 1.0

    def _pedal(self, axes: Sequence[float], axis: int, released: float,
               pressed: float) -> float:
        """Return a pedal axis as 0 (released) .. 1 (pressed); 0 if absent/NaN."""
        if axis >= len(axes) or not math.isfinite(axes[axis]):
            return 0.0
        return min(max((axes[axis] - released) / (pressed - released), 0.0), 1.0)

    def brake(self, axes: Sequence[float]) -> float:
        """Return the brake pedal position 0..1 from Joy axes."""
        return self._pedal(axes, self.brake_axis, self.brake_released,
                           self.brake_pressed)

    def throttle(self, axes: Sequence[float]) -> float:
        """Return the throttle pedal position 0..1 from Joy axes."""
        return self._pedal(axes, self.throttle_axis, self.throttle_released,
                           self.throttle_pressed)

    def takeover(self, buttons: Sequence[int]) -> bool:
        """Return whether the takeover button is held."""
        return self.takeover_button < len(buttons) and bool(buttons[self.takeover_button])


#: Documented presets. ``keyboard`` is what ``keyboard_teleop`` publishes.
#: ``g920``: Logitech G920 with the Linux joy driver (axis 0 wheel, +1 left;
#: axis 1 throttle, axis 2 brake, pedals +1 released and -1 floored;
#: button 4 = right paddle). ``gamepad``: Xbox-style pad (axis 0 left stick,
#: axis 5 RT throttle, axis 2 LT brake, triggers +1 released and -1 pressed;
#: button 4 = LB). Check the indices of a given device with a Joy echo.
JOY_PRESETS: Dict[str, JoyMapping] = {
    'keyboard': JoyMapping(),
    'g920': JoyMapping(steer_axis=0, throttle_axis=1, brake_axis=2,
                       takeover_button=4, throttle_released=1.0,
                       throttle_pressed=-1.0, brake_released=1.0,
                       brake_pressed=-1.0),
    'gamepad': JoyMapping(steer_axis=0, throttle_axis=5, brake_axis=2,
                          takeover_button=4, throttle_released=1.0,
                          throttle_pressed=-1.0, brake_released=1.0,
                          brake_pressed=-1.0),
}
