# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
The pure parts of the safety envelope (no DDS): stamp policy, input limits.

Also: configuration errors in one line with exit code 2, exit codes passed
through by the runner, the command-source guard.
"""

import math
from types import SimpleNamespace
from typing import Any

from hil_bridge.bridge.sources import Endpoint, SourceGuard
from hil_bridge.interface.codecs.image_size import compressed_size, jpeg_size
from hil_bridge.interface.freshness import (check_stamp, ClockWatch, FUTURE_TOLERANCE,
                                            InputGate, RateLimit, Throttle)
from hypothesis import given, settings, strategies as st
import numpy as np
import pytest


# ------------------------------------------------------------ stamp policy
def test_check_stamp_rejects_future_stale_and_non_finite() -> None:
    """Ahead by more than the tolerance, behind by more than the timeout, NaN: rejected."""
    assert check_stamp(10.0, 10.0, 0.5).ok
    assert check_stamp(10.0 + FUTURE_TOLERANCE, 10.0, 0.5).ok
    assert check_stamp(10.3, 10.0, 0.5).reason == 'future'
    assert check_stamp(9.4, 10.0, 0.5).reason == 'stale'
    assert check_stamp(math.nan, 10.0, 0.5).reason == 'non-finite'
    assert check_stamp(1.0, math.inf, 0.5).reason == 'non-finite'


def test_gate_warns_throttled_naming_topic_and_offset() -> None:
    """A flood of bad stamps gives one warning per reason and period, with topic and offset."""
    wall = [0.0]
    seen = []
    gate = InputGate('cmd_vel', 0.5, warn=seen.append,
                     throttle=Throttle(2.0, wall=lambda: wall[0]))
    for k in range(1000):
        gate.admit(1010.0, 10.0)
        gate.admit(2.0, 10.0)
        wall[0] += 0.001
    assert len(seen) == 2 and gate.rejected == {'future': 1000, 'stale': 1000}
    assert 'cmd_vel' in seen[0] and '1000.000 s ahead' in seen[0]
    assert '8.000 s behind' in seen[1]
    wall[0] += 2.0
    gate.admit(1010.0, 10.0)
    assert len(seen) == 3


@settings(max_examples=200, deadline=None, derandomize=True)
@given(events=st.lists(st.tuples(st.one_of(st.floats(-1e7, 1e7), st.just(math.nan)),
                                 st.floats(0.0, 1.0)), min_size=1, max_size=40))
def test_freshness_is_by_arrival_never_by_stamp(events: list) -> None:
    """
    Whatever stamps arrive, the gate is fresh only within timeout of an accepted arrival.

    (Issue 14 findings 1 and 2: one message stamped far ahead kept
    watchdogs quiet forever.)
    """
    gate = InputGate('x', 0.5, monotonic=True, throttle=Throttle(0.0))
    now = 100.0
    last_arrival = None
    for stamp, dt in events:
        now += dt
        if gate.admit(now + stamp if math.isfinite(stamp) else stamp, now):
            last_arrival = now
            offset = gate.stamp - now
            assert -0.5 <= offset <= FUTURE_TOLERANCE
        fresh = last_arrival is not None and now - last_arrival <= 0.5
        assert gate.fresh(now) == fresh
    assert not gate.fresh(now + 0.51)


def test_clock_watch_and_rate_limit() -> None:
    """A jump back is reported once; a flood above the rate is dropped."""
    watch = ClockWatch()
    assert not any(watch.jumped_back(t) for t in (0.0, 0.5, 1.0, 0.95))
    assert watch.jumped_back(0.2) and not watch.jumped_back(0.25)
    wall = [0.0]
    rate = RateLimit(100.0, burst=10, wall=lambda: wall[0])
    allowed = sum(rate.allow() for _ in range(1000))  # 1000 at one instant
    assert allowed == 10 and rate.dropped == 990
    wall[0] += 1.0
    assert sum(rate.allow() for _ in range(1000)) == 10  # burst refilled, no more


# ------------------------------------------------------------ input limits
@pytest.mark.parametrize('size', [(64, 48), (1288, 964), (4000, 3000), (7, 5)])
def test_jpeg_and_png_sizes_read_from_headers_match_opencv(size: tuple) -> None:
    """The header parser agrees with what OpenCV writes (JPEG with and without EXIF, PNG)."""
    import cv2
    w, h = size
    img = (np.arange(w * h * 3) % 251).astype(np.uint8).reshape(h, w, 3)
    for ext, params in (('.jpg', [cv2.IMWRITE_JPEG_QUALITY, 80]),
                        ('.jpg', [cv2.IMWRITE_JPEG_PROGRESSIVE, 1]),
                        ('.png', [])):
        ok, data = cv2.imencode(ext, img, params)
        assert ok
        assert compressed_size(data.tobytes()) == (w, h)


def test_jpeg_header_bomb_rejected_without_decoding() -> None:
    """
    Issue 14 finding 7: a 5 KB JPEG claiming 30000x30000 is refused before decoding.

    The header check takes microseconds, not the 5.5 s / 1.4 GB a decode took.
    """
    import time
    from fuzz_inputs import jpeg_header_bomb
    from hil_bridge.interface.codecs import images
    from hil_bridge.interface.codecs.stamps import fill_uint8
    from sensor_msgs.msg import CompressedImage
    data = jpeg_header_bomb()
    assert jpeg_size(data) == (30000, 30000)
    msg = CompressedImage(format='jpeg', data=fill_uint8(np.frombuffer(data, np.uint8)))
    started = time.perf_counter()
    with pytest.raises(ValueError, match='30000x30000'):
        images.compressed_to_image(msg, 2, max_pixels=8_294_400)
    assert time.perf_counter() - started < 0.05
    with pytest.raises(ValueError, match='CameraInfo'):
        images.compressed_to_image(msg, 2, expected_size=(1288, 964))
    with pytest.raises(ValueError):
        jpeg_size(b'\xff\xd8\xff\xda' + bytes(100))  # scan before any frame header


# --------------------------------------------------------- command sources
def test_source_guard_alarms_and_strict_filter() -> None:
    """
    Issue 14 finding 3: anyone on the domain could drive the car.

    Publishers other than the contract's raise one alarm each; with strict
    only the expected node's gid is used; services are refused while an
    unexpected client exists.
    """
    planner = Endpoint('cone_drive_planner', '/', b'P' * 16)
    intruder = Endpoint('intruder', '/', b'I' * 16)
    for strict in (False, True):
        guard = SourceGuard({'/cmd': ['cone_drive_planner']}, strict=strict)
        assert guard.update('/cmd', [planner]) == []
        alarms = guard.update('/cmd', [planner, intruder])
        assert len(alarms) == 1 and '/intruder' in alarms[0]
        assert guard.update('/cmd', [planner, intruder]) == []  # once per endpoint
        assert guard.allows('/cmd', planner.gid)
        assert guard.allows('/cmd', intruder.gid) is (not strict)
        assert guard.allows('/cmd', None) is (not strict)  # no gid: refuse while intruders
        assert guard.allows('/cmd', b'?' * 16) is (not strict)  # unknown publisher
        assert guard.update_service('/hil_bridge/pause', [Endpoint('cli')])
        assert (guard.service_allowed('/hil_bridge/pause') is None) is (not strict)
    trusted = SourceGuard({'/cmd': ['cone_drive_planner']}, trusted=['operator'], strict=True)
    trusted.update('/cmd', [Endpoint('operator', '/', b'O' * 16)])
    assert trusted.allows('/cmd', b'O' * 16)
    assert trusted.update_service('/hil_bridge/pause', [Endpoint('operator')]) == []
    assert trusted.service_allowed('/hil_bridge/pause') is None


def test_a_publisher_whose_node_is_not_discovered_yet_is_not_an_intruder() -> None:
    """
    On Jazzy the planner's endpoint can show before its node name (unnamed).

    No alarm while it is named within UNNAMED_UPDATES graph updates; one
    that stays unnamed is an intruder. Strict mode never uses its messages
    while it is unnamed.
    """
    from hil_bridge.bridge.sources import UNNAMED_NODE, UNNAMED_UPDATES
    unnamed = Endpoint(UNNAMED_NODE, '_NODE_NAMESPACE_UNKNOWN_', b'P' * 16)
    named = Endpoint('cone_drive_planner', '/', b'P' * 16)
    guard = SourceGuard({'/cmd': ['cone_drive_planner']}, strict=True)
    for _ in range(UNNAMED_UPDATES - 1):
        assert guard.update('/cmd', [unnamed]) == []
    assert not guard.allows('/cmd', unnamed.gid)
    assert guard.update('/cmd', [named]) == [] and guard.allows('/cmd', named.gid)
    assert guard.alarms == 0
    stays = SourceGuard({'/cmd': ['cone_drive_planner']})
    alarms = [a for _ in range(UNNAMED_UPDATES) for a in stays.update('/cmd', [unnamed])]
    assert len(alarms) == 1 and UNNAMED_NODE in alarms[0], alarms


# ------------------------------------------------------ configuration errors
def _node_error(rclpy_context: Any, node_cls: Any, **params: Any) -> str:
    from hil_bridge.interface.params import ParamError
    from inprocess import NodeUnderTest
    with pytest.raises(ParamError) as err:
        NodeUnderTest(node_cls, rclpy_context, params)
    return str(err.value)


def test_bad_parameters_are_one_line_errors_not_tracebacks(rclpy_context: Any) -> None:
    """
    Issue 14 finding 10: out-of-range or wrongly typed values killed nodes with tracebacks.

    Now: one ParamError line naming node, parameter and what is allowed;
    unknown parameters refused (with a suggestion); an integer for a
    double parameter is that double.
    """
    from hil_bridge.bridge.bridge_node import BridgeNode
    from inprocess import NodeUnderTest
    from path_planning.planner_node import ConeDrivePlannerNode, NODE_MODES
    from hil_bridge.interface.config import node_params
    from path_planning.planner_node import PARAMS as PLANNER_PARAMS
    text = _node_error(rclpy_context, ConeDrivePlannerNode, max_sped=20.0)
    assert "unknown parameter 'max_sped'" in text and "did you mean 'max_speed'" in text
    text = _node_error(rclpy_context, ConeDrivePlannerNode, max_speed=100.0)
    assert 'max_speed=100.0' in text and '[0.1, 40]' in text and '\n' not in text
    text = _node_error(rclpy_context, ConeDrivePlannerNode, max_speed='fast')
    assert 'expected a number' in text
    text = _node_error(rclpy_context, ConeDrivePlannerNode, mode='nope')
    # the modes allowed are those of the code (one source of truth)
    modes = next(spec.choices for spec in PLANNER_PARAMS if spec.name == 'mode')
    assert tuple(modes) == NODE_MODES
    assert node_params('cone_drive_planner')['mode'] in modes  # the YAML default
    assert "mode='nope'" in text and 'one of ' + ', '.join(modes) in text, text
    h = NodeUnderTest(BridgeNode, rclpy_context, {'real_time_factor': 0, 'cmd_timeout': 1,
                                                  'render_cameras': False,
                                                  'scenario': 'acceleration'})
    assert h.node.values['real_time_factor'] == 0.0
    assert isinstance(h.node.values['cmd_timeout'], float)
    h.close()


def _run(capsys: pytest.CaptureFixture, *argv: str) -> tuple:
    from hil_bridge.tools import cli
    code = cli.main(['run', '--no-report', '--duration', '1', *argv])
    return code, capsys.readouterr().err


def test_runner_config_errors_exit_2_in_one_line(tmp_path: Any,
                                                 capsys: pytest.CaptureFixture) -> None:
    """
    Issue 14 finding 10 (runner): scenario typos and garbage track files gave tracebacks.

    Each bad configuration stops the runner before any process starts:
    one line naming file, line, key and allowed values; exit code 2.
    """
    from hil_bridge.interface.config import config_path
    src = open(config_path('scenarios', 'acceleration.yaml'), encoding='utf-8').read()
    typo = tmp_path / 'typo.yaml'
    typo.write_text(src.replace('mission:', 'misson:', 1), encoding='utf-8')
    garbage = tmp_path / 'garbage.csv'
    garbage.write_text('this,is\nnot a track\n', encoding='utf-8')
    track = tmp_path / 'bad_track.yaml'
    track.write_text('name: bad\nmission: autocross\nego: {profile: fs_car, pose: car_start}\n'
                     f'track: {{track_file: {garbage}}}\n', encoding='utf-8')
    cases = [((f'--scenario={typo}',), ["'misson'", 'expected one of', 'typo.yaml:']),
             ((f'--scenario={track}',), ['garbage.csv', 'bad_track.yaml:4']),
             (('--scenario=nosuch',), ['not found', 'acceleration']),
             (('--set', 'cone_drive_planner.max_sped=20'), ["did you mean 'max_speed'"]),
             (('--set', 'hil_bridge.cmd_timeout=100'), ['[0.01, 60]']),
             (('--set', 'hil_bridge.real_time_factor=fast'), ['not a number']),
             (('--peers', 'not a host!'), ['--peers']),
             # Fast DDS cannot resolve it: every node died with an rclpy traceback
             (('--peers', '999.1.1.1'), ["'999.1.1.1' does not resolve"]),
             # a bad rig stopped the bridge only after every node had started
             (('--scenario=acceleration', '--set', f'hil_bridge.rig={garbage}'),
              ['garbage.csv', 'sensors'])]
    for argv, words in cases:
        code, err = _run(capsys, *argv)
        assert code == 2, (argv, err)
        lines = [ln for ln in err.splitlines() if ln.strip()]
        assert len(lines) == 1 and 'Traceback' not in err, err
        for word in words:
            assert word in lines[0], (argv, lines[0])


def test_cli_tools_bad_input_exit_2_in_one_line(tmp_path: Any,
                                                capsys: pytest.CaptureFixture) -> None:
    """
    The other carla-hil commands with bad files and option values.

    Found in the fault sweep: a garbage file was played as a bag of 0
    messages (exit 1) and reported on (an empty report, exit 0); ``play
    --rate nan`` / ``-1`` played unpaced; ``scenarios run`` of an unknown
    suite exited 1 (a failed run); ``serve --port -1`` gave an
    OverflowError traceback and ``--time-factor nan`` served. Each is now
    one line and exit code 2.
    """
    from hil_bridge.tools import cli
    garbage = tmp_path / 'garbage.mcap'
    garbage.write_bytes(b'not an mcap file\n' * 10)
    cases = [(['play', str(garbage)], 'neither an MCAP nor a sqlite3 file'),
             (['report', str(garbage), '--out', str(tmp_path / 'r')],
              'neither an MCAP nor a sqlite3 file'),
             (['play', str(garbage), '--rate', 'nan'], 'expected a finite number >= 0'),
             (['play', str(garbage), '--rate', '-1'], 'expected a finite number >= 0'),
             (['scenarios', 'run', 'nosuchsuite'], "unknown suite 'nosuchsuite'"),
             (['scenarios', 'run', '--scenarios', 'nosuch'], "scenario 'nosuch' not found"),
             (['serve', '--port', '-1'], '--port must be in [0, 65535]'),
             (['serve', '--port', '0', '--time-factor', 'nan'], '--time-factor must be a finite'),
             (['serve', '--port', '0', '--rate', 'inf'], '--rate must be a finite')]
    for argv, words in cases:
        try:
            code = cli.main(argv)
        except SystemExit as err:  # argparse: usage and one error line
            code = err.code
        err_text = capsys.readouterr().err
        lines = [ln for ln in err_text.splitlines() if ln.strip() and
                 not ln.startswith(('usage:', ' '))]
        assert code == 2, (argv, code, err_text)
        assert len(lines) == 1 and 'Traceback' not in err_text, (argv, err_text)
        assert words in lines[0], (argv, lines[0])
    assert not (tmp_path / 'r' / 'report.html').exists()


def test_runner_passes_node_exit_codes_through() -> None:
    """0 / 1 from the mission, 2 / 3 / 130 from any node as they are, a crash is 2."""
    from hil_bridge.tools.cli import run_exit_code
    done, dnf = {'status': 'finished'}, {'status': 'dnf'}
    assert run_exit_code('hil_bridge', 0, done, False) == 0
    assert run_exit_code('hil_bridge', 0, dnf, False) == 1
    assert run_exit_code('hil_bridge', 3, None, False) == 3
    assert run_exit_code('hil_bridge', 2, None, False) == 2
    assert run_exit_code('vision_cone_detector', 2, None, False) == 2
    assert run_exit_code('aeb_controller', 130, None, False) == 130
    assert run_exit_code('cone_fusion', 1, None, False) == 2   # a Python traceback
    assert run_exit_code('cone_fusion', -9, None, False) == 2  # killed
    assert run_exit_code('cone_fusion', 0, None, False) == 2   # ended early


def test_runner_keeps_discovery_local_unless_peers(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 14 finding 3: the runner set nothing; now local unless --peers names hosts."""
    from hil_bridge.interface.config import dds_environment, parse_peers
    for var in ('ROS_AUTOMATIC_DISCOVERY_RANGE', 'ROS_STATIC_PEERS', 'ROS_DISTRO',
                'FASTDDS_DEFAULT_PROFILES_FILE', 'FASTRTPS_DEFAULT_PROFILES_FILE'):
        monkeypatch.delenv(var, raising=False)
    env = dds_environment()
    assert env['ROS_AUTOMATIC_DISCOVERY_RANGE'] == 'LOCALHOST'
    assert env['FASTDDS_DEFAULT_PROFILES_FILE'].endswith('fastdds.xml')
    assert env.get('FASTRTPS_DEFAULT_PROFILES_FILE', '') in (
        '', env['FASTDDS_DEFAULT_PROFILES_FILE'])  # Fast DDS 2.x's name where set
    env = dds_environment(parse_peers('192.168.10.2,jetson'))
    assert env['ROS_STATIC_PEERS'] == '192.168.10.2;jetson'
    assert env['FASTDDS_DEFAULT_PROFILES_FILE'].endswith('fastdds_udp.xml')
    assert env.get('FASTRTPS_DEFAULT_PROFILES_FILE', '') in (
        '', env['FASTDDS_DEFAULT_PROFILES_FILE'])  # Fast DDS 2.x's name where set
    monkeypatch.setenv('ROS_DISTRO', 'humble')
    assert dds_environment()['ROS_LOCALHOST_ONLY'] == '1'
    monkeypatch.setenv('ROS_AUTOMATIC_DISCOVERY_RANGE', 'SUBNET')
    monkeypatch.delenv('ROS_DISTRO')
    assert 'ROS_AUTOMATIC_DISCOVERY_RANGE' not in dds_environment()  # the user's wins


class _ClockNode:
    """A node stand-in: a sim clock at ``t`` s and a ``use_sim_time`` parameter."""

    def __init__(self, t: float, sim_time: bool = True) -> None:
        self.t, self.sim_time, self.warnings = t, sim_time, []

    def get_clock(self) -> Any:
        return SimpleNamespace(now=lambda: SimpleNamespace(nanoseconds=int(self.t * 1e9)))

    def get_parameter(self, name: str) -> Any:
        assert name == 'use_sim_time'
        return SimpleNamespace(value=self.sim_time)

    def get_logger(self) -> Any:
        return SimpleNamespace(warning=self.warnings.append, info=lambda text: None)


def _stamp(t: float) -> Any:
    return SimpleNamespace(sec=int(t), nanosec=int(round((t - int(t)) * 1e9)))


class _BrokenExecutor:
    """An executor whose spin fails as rclpy's does on destroyed entities."""

    def spin(self) -> None:
        raise AttributeError("'NoneType' object has no attribute 'handle'")


def test_sim_clock_not_started_accepts_the_first_frames() -> None:
    """Clock 0 on sim time: stamps of the first 5 s pass, later ones do not."""
    from hil_bridge.interface.node_inputs import CLOCK_START_WINDOW, InputPolicy
    node = _ClockNode(0.0)
    policy = InputPolicy(node)
    gate = policy.gate('cones_lidar', 1.0)
    assert policy.admit(gate, _stamp(0.3)) == pytest.approx(0.3)
    assert policy.admit(gate, _stamp(CLOCK_START_WINDOW + 1.0)) is None
    assert any('ahead of the node clock' in w for w in node.warnings)
    # once the clock runs, the usual policy: 0.3 s ahead is dropped
    node.t = 10.0
    assert policy.admit(gate, _stamp(10.3)) is None
    # a node on wall time whose clock reads 0 is not excused
    wall = InputPolicy(_ClockNode(0.0, sim_time=False))
    assert wall.admit(wall.gate('x', 1.0), _stamp(0.3)) is None


def test_bridge_spin_thread_is_quiet_only_in_teardown() -> None:
    """An error inside spin while the node is torn down is the shutdown."""
    import threading
    from hil_bridge.bridge.bridge_node import _spin

    stopping = threading.Event()
    with pytest.raises(AttributeError):
        _spin(_BrokenExecutor(), stopping)
    stopping.set()
    _spin(_BrokenExecutor(), stopping)
