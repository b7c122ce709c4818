# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""Unit tests of the low-level controller emulation (no rclpy)."""

import math

from hil_bridge.bridge.low_level_control import LLCParams, LowLevelController, SOURCE_IDS
from hil_bridge.interface.joy import JOY_PRESETS, JoyState
from hil_bridge.interface.vehicle_profile import load_vehicle_profile
import pytest

PROFILE = load_vehicle_profile('fs_car')
DT = 0.05


def make(**kw: float) -> LowLevelController:
    """Return a controller for the FS car with some parameters changed."""
    return LowLevelController(PROFILE, LLCParams(**kw))


def simulate(llc: LowLevelController, target: float, seconds: float,
             v0: float = 0.0) -> float:
    """Drive a point-mass car with the controller; return the final speed."""
    v = v0
    t = 0.0
    for _ in range(int(seconds / DT)):
        c, src = llc.update(t, v, cmd=(target, 0.0, t))
        assert src == 'cmd_vel'
        force = (c.throttle * PROFILE.max_drive_force
                 - PROFILE.drag_coefficient * v * v
                 - PROFILE.rolling_resistance * PROFILE.mass * 9.81 * (v > 0))
        acc = force / PROFILE.mass - c.brake * PROFILE.max_decel
        v = max(v + acc * DT, 0.0)
        t += DT
    return v


def test_pid_reaches_target_speed() -> None:
    """The speed PID settles within 0.2 m/s of the target and can slow down."""
    assert simulate(make(), 8.0, 20.0) == pytest.approx(8.0, abs=0.2)
    assert simulate(make(), 3.0, 20.0, v0=10.0) == pytest.approx(3.0, abs=0.2)


def test_pid_throttle_and_brake_signs() -> None:
    """Below target: throttle, no brake; far above: brake, no throttle."""
    c, _ = make().update(0.0, 0.0, cmd=(10.0, 0.0, 0.0))
    assert c.throttle > 0.5 and c.brake == 0.0
    c, _ = make().update(0.0, 15.0, cmd=(5.0, 0.0, 0.0))
    assert c.throttle == 0.0 and c.brake > 0.5


def test_anti_windup_limits_integral() -> None:
    """A long saturated phase does not wind the integral up."""
    llc = make(ki=1.0, integral_limit=100.0)
    for k in range(200):  # car blocked: speed stays 0, throttle saturated
        c, _ = llc.update(k * DT, 0.0, cmd=(20.0, 0.0, k * DT))
        assert c.throttle == 1.0
    # once the car reaches the target the output drops at once
    c, _ = llc.update(200 * DT, 20.5, cmd=(20.0, 0.0, 200 * DT))
    assert c.throttle < 0.3


def test_standstill_brake() -> None:
    """Target 0 at rest holds the car with the standstill brake."""
    c, src = make(standstill_brake=0.3).update(0.0, 0.0, cmd=(0.0, 0.0, 0.0))
    assert src == 'cmd_vel' and c.throttle == 0.0 and c.brake == 0.3


def test_steering_formula_and_sign() -> None:
    """Steering: delta = atan(omega L / v); a left turn (omega > 0) is CARLA steer < 0."""
    llc = make()
    v, omega = 5.0, 0.3
    delta = math.atan(omega * PROFILE.wheelbase / v)
    c, _ = llc.update(0.0, v, cmd=(v, omega, 0.0))
    assert c.steer == pytest.approx(-delta / PROFILE.max_steer)
    assert c.steer < 0.0
    c, _ = llc.update(0.05, v, cmd=(v, -omega, 0.05))
    assert c.steer == pytest.approx(delta / PROFILE.max_steer)


def test_steering_at_zero_speed_uses_v_min_and_clamps() -> None:
    """v_cmd = 0 does not divide by zero; a steerable yaw rate past max_steer clamps."""
    llc = make(v_min=1.0)
    c, _ = llc.update(0.0, 0.0, cmd=(0.0, 0.2, 0.0))
    assert c.steer == pytest.approx(
        -math.atan(0.2 * PROFILE.wheelbase / 1.0) / PROFILE.max_steer)
    # 2 m/s: the limit is 2 tan(max_steer) / L (+10 %); just inside it the
    # road-wheel angle exceeds max_steer by a little and clamps
    omega = 0.99 * llc.yaw_rate_limit(2.0)
    c, _ = llc.update(0.05, 2.0, cmd=(2.0, omega, 0.05))
    assert c.steer == -1.0


def test_out_of_range_commands_rejected_not_clamped() -> None:
    """
    Issue 14 finding 4: a cmd_vel of 1e9 m/s was clamped to top speed.

    Speeds outside [0, top_speed] and yaw rates the car cannot steer are
    rejected (counted, warned); the previous valid command stays and the
    watchdog stops the car when nothing valid follows.
    """
    llc = make(cmd_timeout=0.5)
    llc.update(0.0, 0.0, cmd=(5.0, 0.0, 0.0))
    for k, bad in enumerate([(1e9, 0.0), (PROFILE.top_speed + 0.5, 0.0), (-3.0, 0.0),
                             (5.0, 1e3), (5.0, -1.1 * llc.yaw_rate_limit(5.0))]):
        t = 0.05 * (k + 1)
        c, src = llc.update(t, 0.0, cmd=(*bad, t))
        assert llc._cmd.speed == 5.0 and llc._cmd.stamp == 0.0
    assert llc.counters['rejected_cmd'] == 5
    assert llc.counters['clamped_cmd'] == 0
    texts = llc.drain_messages()
    assert any('physical range' in m for m in texts)
    assert any('can steer' in m for m in texts)
    c, src = llc.update(0.6, 0.0, cmd=(1e9, 0.0, 0.6))
    assert src == 'watchdog' and c.throttle == 0.0


def test_out_of_order_commands_dropped() -> None:
    """
    Issue 14 finding 4: out-of-order cmd_vel made throttle and brake flip.

    Commands alternating between an old stamp (target 0) and a new one
    (target 10) stay on the newest: throttle every step, never the brake.
    """
    llc = make()
    outputs = []
    for k in range(20):
        t = 1.0 + 0.05 * k
        stamp, target = (t, 10.0) if k % 2 == 0 else (t - 0.1, 0.0)
        c, src = llc.update(t, 2.0, cmd=(target, 0.0, stamp))
        outputs.append((c.throttle > 0.0, c.brake > 0.0))
    assert all(thr and not brk for thr, brk in outputs), outputs
    assert llc.counters['out_of_order_cmd'] == 10


def test_future_stamped_command_cannot_drive_forever() -> None:
    """
    Issue 14 finding 1: one cmd_vel stamped 1000 s ahead, then silence.

    Before, the command was fresh for 1000 s and the car kept driving. It
    is rejected now (the bridge makes the time: no command comes from its
    future), and any accepted command goes stale by arrival.
    """
    llc = make(cmd_timeout=0.5)
    llc.update(0.0, 0.0, cmd=(5.0, 0.0, 0.0))
    c, src = llc.update(0.05, 0.0, cmd=(20.0, 0.0, 1000.05))
    assert llc.counters['rejected_cmd'] == 1
    assert any('ahead' in m for m in llc.drain_messages())
    sources = [llc.update(0.05 * k, 0.0)[1] for k in range(2, 40)]
    assert sources[-1] == 'watchdog'
    assert sources.index('watchdog') <= 10  # within cmd_timeout of the last valid one


@pytest.mark.parametrize('bad', [(math.nan, 0.0), (1.0, math.inf),
                                 (1.0, -math.inf)])
def test_nan_commands_rejected(bad: tuple) -> None:
    """NaN/inf commands are rejected; the previous valid one stays."""
    llc = make()
    llc.update(0.0, 0.0, cmd=(5.0, 0.1, 0.0))
    c, src = llc.update(0.05, 0.0, cmd=(*bad, 0.05))
    assert src == 'cmd_vel' and c.throttle > 0.0
    assert llc._cmd.speed == 5.0
    assert llc.counters['rejected_cmd'] == 1


def test_malformed_command_rejected() -> None:
    """A command of the wrong shape is counted, not a crash."""
    llc = make()
    c, src = llc.update(0.0, 0.0, cmd=(1.0,))
    assert src == 'watchdog' and llc.counters['rejected_cmd'] == 1


def test_watchdog_without_command() -> None:
    """No command ever: controlled stop at watchdog_decel."""
    llc = make(watchdog_decel=6.0)
    c, src = llc.update(0.0, 5.0)
    assert src == 'watchdog'
    assert c.throttle == 0.0
    assert c.brake == pytest.approx(6.0 / PROFILE.max_decel)


def test_watchdog_after_commands_stop_holds_or_centres_steer() -> None:
    """Commands stop -> after cmd_timeout the car brakes; steer held/centred."""
    for centre in (False, True):
        llc = make(cmd_timeout=0.5, watchdog_centre_steer=centre)
        c, _ = llc.update(0.0, 5.0, cmd=(5.0, 0.5, 0.0))
        steer = c.steer
        assert steer < 0.0
        c, src = llc.update(0.45, 5.0)
        assert src == 'cmd_vel'
        c, src = llc.update(0.55, 5.0)
        assert src == 'watchdog' and c.throttle == 0.0 and c.brake > 0.0
        assert c.steer == (0.0 if centre else steer)
        assert llc.counters['watchdog'] == 1
        # a fresh command resumes
        _, src = llc.update(0.6, 5.0, cmd=(5.0, 0.0, 0.6))
        assert src == 'cmd_vel'


def test_stale_command_counts_as_none() -> None:
    """A command stamped older than cmd_timeout is ignored."""
    llc = make(cmd_timeout=0.5)
    c, src = llc.update(10.0, 3.0, cmd=(5.0, 0.0, 9.0))
    assert src == 'watchdog'
    assert llc.counters['stale_cmd'] == 1


def test_brake_request_overrides_throttle() -> None:
    """AEB: throttle 0 and at least |a| / max_decel of brake."""
    llc = make()
    c, src = llc.update(0.0, 5.0, cmd=(10.0, 0.2, 0.0), brake_request=(-6.0, 0.0))
    assert src == 'brake_request'
    assert c.throttle == 0.0
    assert c.brake == pytest.approx(6.0 / PROFILE.max_decel)
    assert c.steer < 0.0  # steering still follows cmd_vel
    # latched until released
    c, src = llc.update(1.0, 5.0, cmd=(10.0, 0.0, 1.0))
    assert src == 'brake_request'
    c, src = llc.update(1.05, 5.0, cmd=(10.0, 0.0, 1.05), brake_request=(0.0, 1.05))
    assert src == 'cmd_vel' and c.throttle > 0.0


def test_brake_request_bad_values() -> None:
    """Positive or NaN requests are rejected; too strong ones clamp to 1."""
    llc = make()
    llc.update(0.0, 5.0, cmd=(5.0, 0.0, 0.0), brake_request=(2.0, 0.0))
    llc.update(0.0, 5.0, brake_request=(math.nan, 0.0))
    assert llc.counters['rejected_brake'] == 2
    c, src = llc.update(0.05, 5.0, cmd=(5.0, 0.0, 0.05), brake_request=(-50.0, 0.05))
    assert c.brake == 1.0 and llc.counters['clamped_brake'] == 1


def test_brake_request_timeout() -> None:
    """With brake_request_timeout > 0 an old request expires."""
    llc = make(brake_request_timeout=0.5)
    llc.update(0.0, 5.0, cmd=(5.0, 0.0, 0.0), brake_request=(-5.0, 0.0))
    _, src = llc.update(0.6, 5.0, cmd=(5.0, 0.0, 0.6))
    assert src == 'cmd_vel'


def joy(steer: float = 0.0, throttle: float = 0.0, brake: float = 0.0,
        takeover: int = 0, t: float = 0.0) -> JoyState:
    """Return a keyboard-preset Joy state."""
    return JoyState([steer, throttle, brake], [takeover], t)


def test_manual_override_wins_over_cmd_vel() -> None:
    """Takeover held: throttle and steer come from the joystick."""
    llc = make()
    c, src = llc.update(0.0, 2.0, cmd=(10.0, 0.0, 0.0),
                        joy=joy(steer=0.5, throttle=0.4, takeover=1))
    assert src == 'manual'
    assert c.throttle == pytest.approx(0.4) and c.steer == pytest.approx(-0.5)
    # releasing takeover gives control back
    _, src = llc.update(0.05, 2.0, cmd=(10.0, 0.0, 0.05), joy=joy(t=0.05))
    assert src == 'cmd_vel'


def test_brake_pedal_always_wins() -> None:
    """The pedal beats cmd_vel and manual throttle, without takeover too."""
    llc = make()
    c, src = llc.update(0.0, 5.0, cmd=(10.0, 0.0, 0.0), joy=joy(brake=0.7))
    assert src == 'brake_pedal' and c.throttle == 0.0
    assert c.brake == pytest.approx(0.7)
    c, src = llc.update(0.05, 5.0, joy=joy(throttle=1.0, brake=0.3,
                                           takeover=1, t=0.05))
    assert src == 'brake_pedal' and c.throttle == 0.0
    # a stronger AEB request still brakes at least that hard
    c, _ = llc.update(0.1, 5.0, brake_request=(-15.0, 0.1),
                      joy=joy(brake=0.3, t=0.1))
    assert c.brake == 1.0


def test_manual_keeps_aeb_minimum() -> None:
    """In manual mode an AEB request still brakes (source brake_request)."""
    llc = make()
    c, src = llc.update(0.0, 5.0, brake_request=(-7.5, 0.0),
                        joy=joy(throttle=1.0, takeover=1))
    assert src == 'brake_request' and c.throttle == 0.0 and c.brake == 0.5


def test_stale_joy_ignored() -> None:
    """A Joy older than joy_timeout counts as none."""
    llc = make(joy_timeout=0.5)
    llc.update(0.0, 0.0, joy=joy(throttle=1.0, takeover=1))
    _, src = llc.update(1.0, 0.0, cmd=(3.0, 0.0, 1.0))
    assert src == 'cmd_vel'


def test_joy_too_few_axes_ignored_with_one_error() -> None:
    """Too few axes: ignored, one message, every one counted."""
    llc = make()
    for k in range(3):
        _, src = llc.update(k * 0.05, 0.0, cmd=(3.0, 0.0, k * 0.05),
                            joy=JoyState([0.1], [1], k * 0.05))
        assert src == 'cmd_vel'
    assert llc.counters['rejected_joy'] == 3
    msgs = llc.drain_messages()
    assert len([m for m in msgs if 'joy ignored' in m]) == 1


def test_g920_preset_pedal_ranges() -> None:
    """G920 pedals: +1 released, -1 floored."""
    params = LLCParams.from_mapping({'cmd_timeout': 0.5}, preset='g920')
    assert params.joy == JOY_PRESETS['g920']
    llc = LowLevelController(PROFILE, params)
    axes = [0.0, 1.0, -1.0, 1.0]  # brake floored
    buttons = [0] * 8
    c, src = llc.update(0.0, 5.0, joy=JoyState(axes, buttons, 0.0))
    assert src == 'brake_pedal' and c.brake == 1.0
    axes = [0.2, 0.0, 1.0, 1.0]  # half throttle, brake released
    buttons[4] = 1
    c, src = llc.update(0.05, 5.0, joy=JoyState(axes, buttons, 0.05))
    assert src == 'manual' and c.throttle == pytest.approx(0.5)
    assert c.steer == pytest.approx(-0.2)


def test_from_mapping_overrides_and_errors() -> None:
    """joy_* keys override preset fields; bad values raise ValueError."""
    p = LLCParams.from_mapping({'joy_takeover_button': 7, 'joy_brake_axis': -1},
                               preset='gamepad')
    assert p.joy.takeover_button == 7 and p.joy.brake_axis == 2
    with pytest.raises(ValueError, match='preset'):
        LLCParams.from_mapping({}, preset='nope')
    with pytest.raises(ValueError, match='cmd_timeout'):
        LLCParams.from_mapping({'cmd_timeout': -1.0})
    with pytest.raises(ValueError, match='kp'):
        LLCParams.from_mapping({'kp': math.nan})


def test_actuation_delay_fifo() -> None:
    """Controls come out actuation_delay seconds of sim time later."""
    llc = make(actuation_delay=0.2)
    outs = []
    for k in range(10):
        t = k * DT
        throttle_target = 10.0 if k >= 2 else 0.0
        c, src = llc.update(t, 0.0, cmd=(throttle_target, 0.0, t))
        outs.append((c, src))
    # before the delay has passed: the initial stop control
    assert outs[0][1] == 'watchdog' and outs[3][1] == 'watchdog'
    # the command of step 0 (target 0: standstill brake) appears at step 4
    assert outs[4][1] == 'cmd_vel' and outs[4][0].brake > 0.0
    # the first throttle command (step 2) appears at step 6
    assert outs[5][0].throttle == 0.0 and outs[6][0].throttle > 0.0


def test_non_finite_state_full_brake() -> None:
    """A NaN ego speed gives full brake rather than a wrong PID output."""
    c, src = make().update(0.0, math.nan, cmd=(5.0, 0.0, 0.0))
    assert c.brake == 1.0 and src == 'watchdog'


def test_source_ids_unique() -> None:
    """Every source string has a distinct numeric id."""
    assert len(set(SOURCE_IDS.values())) == len(SOURCE_IDS)
