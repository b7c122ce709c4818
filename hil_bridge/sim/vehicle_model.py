# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
Bicycle model with actuator dynamics for the built-in simulator (no rclpy).

State in REP-103 ``map`` (x forward, y left, z up; metres, radians): the
vehicle frame origin is the rear-axle centre on the ground. Kinematics are
the kinematic bicycle about the rear axle (turning radius L / tan(delta)),
with the path curvature limited by tyre grip (``max_lat_accel``) at speed,
so the car understeers instead of exceeding the lateral limit.

Actuators, from a :class:`hil_bridge.interface.vehicle_profile.VehicleProfile`:

* steering: first-order lag (``steer_time_constant``) and rate limit
  (``max_steer_rate``); CARLA ``steer > 0`` turns RIGHT, i.e. a negative
  REP-103 road-wheel angle, ``steer = 1`` is ``max_steer``;
* brake: dead time (``brake_dead_time``) then a pressure ramp
  (``brake_ramp_time`` from 0 to full), deceleration ``brake *
  max_decel``; the hand brake gives half of ``max_decel`` at once;
* drive: ``throttle * min(max_drive_force, max_power / |v|)``, cut off at
  ``top_speed``, limited to the grip (``max_decel``); ``reverse`` flips it;
* resistance: aerodynamic drag ``drag_coefficient * v^2`` and rolling
  resistance ``rolling_resistance * m * g``.

One step costs a few microseconds (scalar ``math`` only).
"""

from collections import deque
from dataclasses import dataclass
import math
from typing import Deque, Optional, Tuple

from hil_bridge.bridge.backend import ActorState, VehicleControl
from hil_bridge.interface.frames import Pose
from hil_bridge.interface.vehicle_profile import VehicleProfile
import numpy as np

GRAVITY = 9.81
#: The hand brake's deceleration as a fraction of ``max_decel``.
HAND_BRAKE_FRACTION = 0.5


@dataclass
class VehicleState:
    """
    The state of the model in ``map`` (REP-103).

    ``x, y`` (m) rear-axle position, ``yaw`` (rad), ``v`` (m/s, signed
    along body x, negative when reversing), ``yaw_rate`` (rad/s), ``steer``
    road-wheel angle (rad, > 0 left), ``ax, ay`` body accelerations
    (m/s^2, without gravity), ``brake`` effective brake level (0..1).
    """

    x: float = 0.0
    y: float = 0.0
    yaw: float = 0.0
    v: float = 0.0
    yaw_rate: float = 0.0
    steer: float = 0.0
    ax: float = 0.0
    ay: float = 0.0
    brake: float = 0.0


class VehicleModel:
    """
    Kinematic bicycle with actuator dynamics; call :meth:`step` each tick.

    ``pose`` is the initial REP-103 pose of the rear-axle frame;
    ``initial_speed`` (m/s) is along the heading (like CARLA's
    ``set_target_velocity`` at spawn).
    """

    def __init__(self, profile: VehicleProfile, pose: Optional[Pose] = None,
                 initial_speed: float = 0.0) -> None:
        pose = pose if pose is not None else Pose()
        for name, value in (('pose.x', pose.x), ('pose.y', pose.y),
                            ('pose.yaw', pose.yaw),
                            ('initial_speed', initial_speed)):
            if not math.isfinite(float(value)):
                raise ValueError(f'VehicleModel: {name} must be finite, got '
                                 f'{value}')
        self.profile = profile
        self.state = VehicleState(x=float(pose.x), y=float(pose.y),
                                  yaw=float(pose.yaw), v=float(initial_speed))
        self.control = VehicleControl()
        self.time = 0.0
        # (time, commanded brake) history for the dead time
        self._brake_cmds: Deque[Tuple[float, float]] = deque()
        self._brake_cmds.append((-1e9, 0.0))

    # ---------------------------------------------------------- control
    def apply_control(self, control: VehicleControl) -> None:
        """Set the command used from the next step on (clamped, NaN-safe)."""
        self.control = control.clamped()

    def set_speed(self, v: float) -> None:
        """Force the speed (m/s) along the heading, e.g. after a crash."""
        self.state.v = float(v)

    # ------------------------------------------------------------- step
    def step(self, dt: float) -> VehicleState:
        """
        Advance the model by ``dt`` seconds and return the new state.

        Raises ``ValueError`` for a non-finite or non-positive ``dt``.
        """
        if not (dt > 0.0 and math.isfinite(dt)):
            raise ValueError(f'VehicleModel.step: dt must be finite and > 0, '
                             f'got {dt}')
        p = self.profile
        c = self.control
        st = self.state
        t_new = self.time + dt
        # steering: first-order lag towards the command, rate limited
        target = -c.steer * p.max_steer
        tau = p.steer_time_constant
        alpha = 1.0 - math.exp(-dt / tau) if tau > 0.0 else 1.0
        d_steer = (target - st.steer) * alpha
        lim = p.max_steer_rate * dt if p.max_steer_rate > 0.0 else math.inf
        d_steer = min(max(d_steer, -lim), lim)
        steer = min(max(st.steer + d_steer, -p.max_steer), p.max_steer)
        # brake: dead time, then ramp of the pressure
        self._brake_cmds.append((self.time, c.brake))
        delayed_t = t_new - p.brake_dead_time
        cmds = self._brake_cmds
        while len(cmds) > 1 and cmds[1][0] <= delayed_t + 1e-12:
            cmds.popleft()
        brake_cmd = cmds[0][1]
        ramp = dt / p.brake_ramp_time if p.brake_ramp_time > 0.0 \
            else math.inf
        brake = st.brake + min(max(brake_cmd - st.brake, -ramp), ramp)
        # longitudinal forces
        v = st.v
        speed = abs(v)
        grip_a = p.max_decel
        if c.throttle > 0.0 and speed < p.top_speed:
            force = c.throttle * min(p.max_drive_force,
                                     p.max_power / max(speed, 1e-3))
            a_drive = min(force / p.mass, grip_a)
            a_drive *= min(1.0, (p.top_speed - speed) / 0.5)
        else:
            a_drive = 0.0
        if c.reverse:
            a_drive = -a_drive
        decel = (p.drag_coefficient * v * v / p.mass
                 + p.rolling_resistance * GRAVITY * (1.0 if speed > 1e-3
                                                     or a_drive != 0.0
                                                     else 0.0)
                 + min(brake * p.max_decel, grip_a))
        if c.hand_brake:
            decel += HAND_BRAKE_FRACTION * p.max_decel
        v1 = v + a_drive * dt
        dv = decel * dt
        if abs(v1) <= dv:
            v1 = 0.0
        else:
            v1 -= math.copysign(dv, v1)
        # lateral: kinematic curvature, limited by grip
        kappa = math.tan(steer) / p.wheelbase
        v_mid = 0.5 * (v + v1)
        v_ref = max(abs(v_mid), abs(v1))
        if v_ref * v_ref * abs(kappa) > p.max_lat_accel:
            kappa = math.copysign(p.max_lat_accel / (v_ref * v_ref), kappa)
        yaw_rate = v_mid * kappa
        ds = v_mid * dt
        dyaw = yaw_rate * dt
        yaw0 = st.yaw
        if abs(dyaw) > 1e-9:
            r = ds / dyaw
            dx = r * (math.sin(yaw0 + dyaw) - math.sin(yaw0))
            dy = -r * (math.cos(yaw0 + dyaw) - math.cos(yaw0))
        else:
            dx = ds * math.cos(yaw0 + 0.5 * dyaw)
            dy = ds * math.sin(yaw0 + 0.5 * dyaw)
        yaw = math.atan2(math.sin(yaw0 + dyaw), math.cos(yaw0 + dyaw))
        self.state = VehicleState(x=st.x + dx, y=st.y + dy, yaw=yaw, v=v1,
                                  yaw_rate=yaw_rate, steer=steer,
                                  ax=(v1 - v) / dt, ay=v1 * yaw_rate,
                                  brake=brake)
        self.time = t_new
        return self.state

    # ------------------------------------------------------------ output
    def actor_state(self, role_name: str = 'ego_vehicle') -> ActorState:
        """
        Return the ground truth as an :class:`ActorState`.

        Velocity in ``map``, angular velocity and acceleration (no gravity)
        in the body frame, ``size`` and ``box_offset`` from the profile.
        """
        st = self.state
        p = self.profile
        c, s = math.cos(st.yaw), math.sin(st.yaw)
        return ActorState(
            role_name=role_name,
            pose=Pose(x=st.x, y=st.y, z=0.0, yaw=st.yaw),
            velocity=np.array([st.v * c, st.v * s, 0.0]),
            angular_velocity=np.array([0.0, 0.0, st.yaw_rate]),
            acceleration=np.array([st.ax, st.ay, 0.0]),
            size=np.array([p.length, p.width, p.height]),
            box_offset=p.box_offset, steer_angle=st.steer)
