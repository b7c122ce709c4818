# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
Keyboard teleop: drive without a wheel, publishing ``sensor_msgs/Joy`` on /joy.

Keys (a terminal cannot see key releases, so every key changes a held
value): ``w``/Up throttle +step (releases the brake), ``s``/Down throttle
-step, then brake +step once the throttle is 0; ``a``/Left steer left by
steer_step, ``d``/Right right; ``c`` centre the steering; space full
brake (throttle 0); ``t`` toggles takeover (manual mode); ``x`` all to
neutral; ``q``, Ctrl-C or SIGTERM quits, and the last message hands
control back (neutral, takeover released; a signal used to shut rclpy
down first, so that message was never sent). The Joy layout is the bridge's
``keyboard`` preset (``hil_bridge.interface.joy.JOY_PRESETS``): axes
[steer (+1 = full left), throttle 0..1, brake 0..1], buttons [takeover].
The terminal is switched to cbreak mode (no echo, no line buffering) and
restored on every exit path. Parameters: ``config/keyboard_teleop.yaml``.
"""

from dataclasses import dataclass, replace
import select
import sys
from typing import Any, List, Optional, Sequence, Tuple

from hil_bridge.interface.params import declare_params, ParamSpec

NODE_NAME = 'keyboard_teleop'

PARAMS = [
    ParamSpec('rate_hz', 'Joy publish rate (Hz)', lo=1.0, hi=200.0),
    ParamSpec('step', 'throttle/brake change per key press (0..1)', lo=0.01, hi=1.0),
    ParamSpec('steer_step', 'steering change per key press (0..1)', lo=0.01, hi=1.0),
]

_ARROWS = {'A': 'up', 'B': 'down', 'C': 'right', 'D': 'left'}

HELP = ('keyboard teleop: w/s or Up/Down throttle-brake, a/d or Left/Right '
        'steer, c centre, space brake, t takeover, x neutral, q quit')


@dataclass(frozen=True)
class TeleopState:
    """Held teleop values: steer -1..1 (+ left), throttle and brake 0..1."""

    steer: float = 0.0
    throttle: float = 0.0
    brake: float = 0.0
    takeover: bool = False
    done: bool = False


def parse_keys(data: str) -> List[str]:
    """
    Split terminal input into key names.

    Arrow escape sequences (``ESC [ A`` .. ``ESC [ D``, also ``ESC O A``)
    become 'up', 'down', 'right', 'left'; ' ' becomes 'space', Ctrl-C
    'ctrl-c'; letters are lower-cased; unknown escapes are dropped.
    """
    keys: List[str] = []
    i = 0
    while i < len(data):
        ch = data[i]
        if ch == '\x1b':
            j = i + 1
            if j < len(data) and data[j] in '[O':
                j += 1
                while j < len(data) and data[j] in '0123456789;':
                    j += 1
                if j < len(data):
                    if j == i + 2 and data[j] in _ARROWS:
                        keys.append(_ARROWS[data[j]])
                    j += 1
            i = j
            continue
        if ch == ' ':
            keys.append('space')
        elif ch == '\x03':
            keys.append('ctrl-c')
        else:
            keys.append(ch.lower())
        i += 1
    return keys


def _clip(value: float, lo: float, hi: float) -> float:
    return min(max(value, lo), hi)


def apply_key(state: TeleopState, key: str, step: float = 0.1,
              steer_step: float = 0.1) -> TeleopState:
    """Return the state after one key press (unknown keys change nothing)."""
    if key in ('w', 'up'):
        return replace(state, throttle=_clip(state.throttle + step, 0.0, 1.0),
                       brake=0.0)
    if key in ('s', 'down'):
        if state.throttle > 0.0:
            return replace(state, throttle=_clip(state.throttle - step, 0.0, 1.0))
        return replace(state, brake=_clip(state.brake + step, 0.0, 1.0))
    if key in ('a', 'left'):
        return replace(state, steer=_clip(state.steer + steer_step, -1.0, 1.0))
    if key in ('d', 'right'):
        return replace(state, steer=_clip(state.steer - steer_step, -1.0, 1.0))
    if key == 'c':
        return replace(state, steer=0.0)
    if key == 'space':
        return replace(state, throttle=0.0, brake=1.0)
    if key == 't':
        return replace(state, takeover=not state.takeover)
    if key == 'x':
        return TeleopState(takeover=state.takeover)
    if key in ('q', 'ctrl-c'):
        return replace(state, done=True)
    return state


def apply_keys(state: TeleopState, keys: Sequence[str], step: float = 0.1,
               steer_step: float = 0.1) -> TeleopState:
    """Apply several key presses in order."""
    for key in keys:
        state = apply_key(state, key, step, steer_step)
    return state


def to_joy_arrays(state: TeleopState) -> Tuple[List[float], List[int]]:
    """Return (axes, buttons) in the ``keyboard`` Joy preset layout."""
    return ([float(state.steer), float(state.throttle), float(state.brake)],
            [1 if state.takeover else 0])


def status_line(state: TeleopState) -> str:
    """Return a one-line summary for the terminal."""
    mode = 'MANUAL' if state.takeover else 'auto  '
    return (f'\r{mode} steer {state.steer:+.2f} throttle {state.throttle:.2f} '
            f'brake {state.brake:.2f}   ')


def _read_available(stream: Any, timeout: float) -> str:
    ready, _, _ = select.select([stream], [], [], timeout)
    if not ready:
        return ''
    import os
    return os.read(stream.fileno(), 64).decode('utf-8', errors='ignore')


def main(args: Optional[list] = None) -> int:
    """Run the teleop in this terminal until q / Ctrl-C / SIGTERM."""
    import termios
    import time
    import tty

    import rclpy
    from rclpy.node import Node
    from rclpy.signals import SignalHandlerOptions
    from sensor_msgs.msg import Joy

    from hil_bridge.interface.contract import create_publisher
    from hil_bridge.interface.node_main import StopRequest

    if not sys.stdin.isatty():
        print('keyboard_teleop needs an interactive terminal (stdin is not a tty)',
              file=sys.stderr)
        return 1
    rclpy.init(args=args, signal_handler_options=SignalHandlerOptions.NO)
    stop = StopRequest()  # SIGINT/SIGTERM end the loop; rclpy stays up to hand back
    node = Node(NODE_NAME)
    values = declare_params(node, PARAMS, NODE_NAME)
    pub = create_publisher(node, 'joy')
    fd = sys.stdin.fileno()
    saved = termios.tcgetattr(fd)
    state = TeleopState()
    period = 1.0 / float(values['rate_hz'])
    print(HELP)
    try:
        tty.setcbreak(fd)
        next_pub = time.monotonic()
        while rclpy.ok() and not state.done and not stop.requested:
            data = _read_available(sys.stdin, max(next_pub - time.monotonic(), 0.0))
            if data:
                state = apply_keys(state, parse_keys(data), float(values['step']),
                                   float(values['steer_step']))
                sys.stdout.write(status_line(state))
                sys.stdout.flush()
            if time.monotonic() >= next_pub:
                msg = Joy()
                msg.header.stamp = node.get_clock().now().to_msg()
                msg.axes, msg.buttons = to_joy_arrays(state)
                pub.publish(msg)
                next_pub += period
                rclpy.spin_once(node, timeout_sec=0.0)
    except KeyboardInterrupt:
        pass
    finally:
        termios.tcsetattr(fd, termios.TCSADRAIN, saved)
        if rclpy.ok():  # hand control back: neutral, takeover released
            from rclpy.duration import Duration
            msg = Joy()
            msg.header.stamp = node.get_clock().now().to_msg()
            msg.axes, msg.buttons = to_joy_arrays(TeleopState())
            pub.publish(msg)
            pub.wait_for_all_acked(Duration(seconds=0.5))  # reliable: delivered
        print()
        stop.restore()
        node.destroy_node()
        if rclpy.ok():
            rclpy.shutdown()
        stop.done()
    return 0


if __name__ == '__main__':
    sys.exit(main())
