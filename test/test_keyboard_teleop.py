# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""Key parsing and key -> Joy mapping of the keyboard teleop."""

from hil_bridge.bridge.keyboard_teleop import (apply_key, apply_keys, NODE_NAME, PARAMS,
                                               parse_keys, TeleopState, to_joy_arrays)
from hil_bridge.bridge.low_level_control import LLCParams, LowLevelController
from hil_bridge.interface.joy import JoyState
from hil_bridge.interface.params import check_specs
from hil_bridge.interface.vehicle_profile import load_vehicle_profile
import pytest


def test_parse_keys_arrows_letters_and_escapes() -> None:
    """Arrow sequences become names; unknown escapes are dropped."""
    assert parse_keys('\x1b[A\x1b[B\x1b[C\x1b[D') == ['up', 'down', 'right', 'left']
    assert parse_keys('\x1bOA') == ['up']
    assert parse_keys('W a\x03') == ['w', 'space', 'a', 'ctrl-c']
    assert parse_keys('\x1b[15~s') == ['s']   # F5 dropped
    assert parse_keys('\x1b') == []
    assert parse_keys('') == []


def test_throttle_brake_keys() -> None:
    """W raises throttle and releases brake; S lowers it, then brakes."""
    s = apply_keys(TeleopState(), ['w', 'up', 'w'], step=0.25)
    assert s.throttle == pytest.approx(0.75) and s.brake == 0.0
    s = apply_keys(s, ['s'] * 5, step=0.25)
    assert s.throttle == 0.0 and s.brake == pytest.approx(0.5)
    s = apply_key(s, 'w', step=0.25)
    assert s.brake == 0.0 and s.throttle == 0.25
    s = apply_keys(TeleopState(), ['w'] * 20)
    assert s.throttle == 1.0


def test_steer_keys_clamp_and_centre() -> None:
    """A/Left steer left (+), D/Right right (-), clamped to +-1; C centres."""
    s = apply_keys(TeleopState(), ['a', 'left'], steer_step=0.3)
    assert s.steer == pytest.approx(0.6)
    s = apply_keys(s, ['d'] * 10, steer_step=0.3)
    assert s.steer == -1.0
    assert apply_key(s, 'c').steer == 0.0


def test_space_takeover_neutral_quit() -> None:
    """Space brakes fully; t toggles takeover; x neutral; q quits."""
    s = apply_keys(TeleopState(), ['w', 'w', 'space'])
    assert s.throttle == 0.0 and s.brake == 1.0
    s = apply_key(s, 't')
    assert s.takeover
    s = apply_keys(s, ['a', 'x'])
    assert s == TeleopState(takeover=True)
    assert not apply_key(s, 't').takeover
    assert apply_key(s, 'q').done and apply_key(s, 'ctrl-c').done
    assert apply_key(s, 'z') == s


def test_joy_layout_drives_llc_keyboard_preset() -> None:
    """The Joy arrays mean the same thing to the bridge's keyboard preset."""
    s = apply_keys(TeleopState(), ['t', 'w', 'w', 'w', 'a'])
    axes, buttons = to_joy_arrays(s)
    assert axes == pytest.approx([0.1, 0.3, 0.0]) and buttons == [1]
    llc = LowLevelController(load_vehicle_profile('fs_car'),
                             LLCParams.from_mapping({}, preset='keyboard'))
    c, src = llc.update(0.0, 0.0, joy=JoyState(axes, buttons, 0.0))
    assert src == 'manual'
    assert c.throttle == pytest.approx(0.3) and c.steer == pytest.approx(-0.1)
    axes, buttons = to_joy_arrays(apply_key(s, 'space'))
    c, src = llc.update(0.05, 0.0, joy=JoyState(axes, buttons, 0.05))
    assert src == 'brake_pedal' and c.brake == 1.0


def test_params_in_config() -> None:
    """config/keyboard_teleop.yaml holds every parameter."""
    values = check_specs(PARAMS, NODE_NAME)
    assert values['rate_hz'] > 0


@pytest.mark.dds
def test_teleop_in_a_pty_publishes_joy_and_restores_terminal(rclpy_context) -> None:
    """Run the teleop on a pseudo terminal: keys -> /joy, q quits, tty restored."""
    import os
    import pty
    import subprocess
    import sys
    import termios
    import time

    import rclpy
    from rclpy.executors import SingleThreadedExecutor

    from hil_bridge.interface.contract import create_subscription

    master, slave = pty.openpty()
    before = termios.tcgetattr(slave)
    child = subprocess.Popen([sys.executable, '-m', 'hil_bridge.bridge.keyboard_teleop',
                              '--ros-args', '-p', 'use_sim_time:=false'],
                             stdin=slave, stdout=slave, stderr=slave,
                             env=dict(os.environ))
    node = rclpy.create_node('teleop_tester', context=rclpy_context)
    got = []
    create_subscription(node, 'joy', got.append)
    executor = SingleThreadedExecutor(context=rclpy_context)
    executor.add_node(node)
    try:
        deadline = time.monotonic() + 20.0
        while not got and time.monotonic() < deadline:
            executor.spin_once(timeout_sec=0.1)
        assert got, 'no Joy from the teleop'
        os.write(master, b't\x1b[Aw')
        while time.monotonic() < deadline and not (
                got[-1].buttons and got[-1].buttons[0] == 1 and got[-1].axes[1] > 0.15):
            executor.spin_once(timeout_sec=0.1)
        assert list(got[-1].buttons) == [1]
        assert got[-1].axes[1] == pytest.approx(0.2)
        os.write(master, b'q')
        rc = child.wait(timeout=10)
    finally:
        if child.poll() is None:
            child.kill()
        executor.shutdown()
        node.destroy_node()
    after = termios.tcgetattr(slave)
    os.close(master)
    os.close(slave)
    assert rc == 0
    assert after[3] == before[3], 'terminal local modes not restored'
