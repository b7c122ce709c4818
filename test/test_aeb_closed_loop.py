# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
Closed loop over DDS: bridge (built-in sim, lockstep) + aeb_controller.

Real processes: ``hil_bridge.bridge.bridge_node`` runs a CCRs / adjacent-lane
scenario with the passenger-car rig (lidar cut to a forward 120 deg sector
to keep the test short), ``aeb_control.aeb_node`` brakes, and the test
process plays the speed-keeping driver (``cmd_vel`` stamped with each
odometry stamp). The bridge waits for both ``cmd_vel`` and
``brake_request`` of every frame, so the result does not depend on the
machine's load.
"""

import json
import os
from pathlib import Path
import signal
import subprocess
import sys
import time
from typing import Any, Dict, List, Tuple

from aeb_control.tools.ncap import build_case, Case, forward_lidar, scenario_dict
from hil_bridge.interface.rig import load_rig
from hil_bridge.interface.vehicle_profile import load_vehicle_profile
from node_harness import stop_process
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]


def _write_inputs(tmp_path: Path, case: Case, gap: float) -> Tuple[Path, Path]:
    profile = load_vehicle_profile('passenger_car')
    case = Case(case.family, case.ego_kmh, case.target_kmh, case.overlap,
                gap, case.target_decel, case.kind)
    scenario, _follower, timeout = build_case(case, profile, profile)
    if case.kind == 'adjacent':
        scenario.actors[0].pose.x = gap + 4.7
        timeout = 5.0
    scenario.timeout = timeout
    scn = tmp_path / 'scenario.yaml'
    scn.write_text(yaml.safe_dump(scenario_dict(scenario)), encoding='utf-8')
    rig = forward_lidar(load_rig('car_rig.yaml'), 120.0)
    rig_path = tmp_path / 'rig.yaml'
    rig_path.write_text(yaml.safe_dump({'sensors': [
        {'id': s.sensor_id, 'blueprint': s.blueprint,
         'mount': {k: float(getattr(s.mount, k)) for k in
                   ('x', 'y', 'z', 'roll', 'pitch', 'yaw')},
         'attributes': dict(s.attributes)}
        for s in rig]}), encoding='utf-8')
    return scn, rig_path


def _start(module: str, params: List[str], extra: Dict[str, Any]
           ) -> subprocess.Popen:
    args = [sys.executable, '-m', module, '--ros-args']
    for p in params:
        args += ['--params-file', p]
    for key, value in extra.items():
        if isinstance(value, bool):
            value = 'true' if value else 'false'
        args += ['-p', f'{key}:={value}']
    return subprocess.Popen(args, cwd=str(ROOT), env=dict(os.environ),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True)


def _stop(proc: subprocess.Popen, timeout: float = 10.0) -> str:
    return stop_process(proc, signal.SIGINT, timeout)


def _run(context: Any, tmp_path: Path, case: Case, gap: float
         ) -> Tuple[Dict[str, Any], List[float], str]:
    """Run one scenario; return (referee result, brake decels, aeb log)."""
    from geometry_msgs.msg import TwistStamped
    from hil_bridge.interface.contract import create_publisher, create_subscription
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.node import Node
    scn, rig = _write_inputs(tmp_path, case, gap)
    speed = case.ego_kmh / 3.6
    node = Node('aeb_closed_loop_driver', context=context)
    ex = SingleThreadedExecutor(context=context)
    ex.add_node(node)
    cmd = create_publisher(node, 'cmd_vel')
    brakes: List[float] = []

    def on_odom(msg: Any) -> None:
        out = TwistStamped()
        out.header.stamp = msg.header.stamp
        out.header.frame_id = 'ego_vehicle'
        out.twist.linear.x = speed
        cmd.publish(out)
    create_subscription(node, 'odometry', on_odom)
    brake_sub = create_subscription(node, 'brake_request',
                                    lambda m: brakes.append(-m.accel.linear.x))
    aeb = _start('aeb_control.aeb_node',
                 [str(ROOT / 'config' / 'aeb_controller.yaml')],
                 {'vehicle_profile': 'passenger_car', 'rig': 'car_rig.yaml'})
    # The bridge runs unpaced: the braking is over in about a second of
    # wall time, so this probe must hear the AEB before the bridge starts.
    ready = time.monotonic() + 60.0
    while node.count_publishers(brake_sub.topic_name) < 1 and time.monotonic() < ready:
        ex.spin_once(timeout_sec=0.05)
    if node.count_publishers(brake_sub.topic_name) < 1:
        log = _stop(aeb)
        ex.shutdown()
        node.destroy_node()
        pytest.fail('the AEB never published brake_request\n' + log[-2000:])
    bridge = _start('hil_bridge.bridge.bridge_node',
                    [str(ROOT / 'config' / 'hil_bridge.yaml')],
                    {'scenario': str(scn), 'rig': str(rig),
                     'render_cameras': False, 'wait_for_control': True,
                     'lockstep_topics': "['cmd_vel','brake_request']",
                     'lockstep_startup_timeout': 40.0,
                     'lockstep_timeout': 5.0, 'real_time_factor': 0.0,
                     'publish_raw_images': False})
    try:
        end = time.monotonic() + 50.0
        while bridge.poll() is None and time.monotonic() < end:
            ex.spin_once(timeout_sec=0.02)
        out = _stop(bridge, 5.0)
    finally:
        log = _stop(aeb)
        ex.shutdown()
        node.destroy_node()
    lines = [ln for ln in out.splitlines() if ln.startswith('REFEREE_RESULT ')]
    assert len(lines) == 1, out[-3000:] + log[-2000:]
    return json.loads(lines[0][len('REFEREE_RESULT '):]), brakes, log


@pytest.mark.dds
@pytest.mark.parametrize('kmh,gap', [(30.0, 25.0), (50.0, 35.0)])
def test_ccrs_avoided_over_dds(ros_domain: int, rclpy_context: Any,
                               tmp_path: Path, kmh: float, gap: float) -> None:
    """At CCRs 30 and 50 km/h the AEB stops the car without a collision."""
    result, brakes, log = _run(rclpy_context, tmp_path, Case('CCRs', kmh),
                               gap)
    assert not result.get('collisions'), result
    assert result.get('status') == 'finished', result   # stopped, not DNF
    assert max(brakes, default=0.0) > 5.0, log[-2000:]
    assert result.get('lockstep_timeouts', 0) == 0, result
    assert 'Traceback' not in log, log[-3000:]


@pytest.mark.dds
def test_adjacent_lane_silent_over_dds(ros_domain: int, rclpy_context: Any,
                                       tmp_path: Path) -> None:
    """A stopped car in the next lane: every brake request is a release."""
    result, brakes, log = _run(rclpy_context, tmp_path,
                               Case('FA', 50.0, kind='adjacent'), 30.0)
    assert not result.get('collisions'), result
    assert len(brakes) > 20
    assert max(brakes) == 0.0, log[-2000:]
    assert 'Traceback' not in log, log[-3000:]
