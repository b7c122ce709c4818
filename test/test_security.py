# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
Who may command the car, over real DDS; what the shipped profile exposes.

Also the fact docs/security.md states about SROS2 with these wheels.
"""

import os
from pathlib import Path
import subprocess
import sys
import time
from typing import Any, List

from hil_bridge.interface import contract
from hil_bridge.interface.codecs import stamps
import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.dds
def test_strict_sources_ignores_an_intruder_and_refuses_its_services(
        ros_domain: int, rclpy_context: Any) -> None:
    """
    Issue 14 finding 3: an unauthenticated publisher drove the car to 21.9 m/s.

    With strict_sources the bridge raises an alarm for a cmd_vel publisher
    and a service client the contract does not name, ignores its commands
    (the car stays put, watchdog) and refuses its ~/pause; a node of the
    expected name then drives the car.
    """
    import rclpy
    from geometry_msgs.msg import TwistStamped
    from rclpy.executors import SingleThreadedExecutor
    from std_srvs.srv import SetBool
    bridge = subprocess.Popen(
        [sys.executable, '-m', 'hil_bridge.bridge.bridge_node', '--ros-args',
         '--params-file', str(ROOT / 'config' / 'hil_bridge.yaml'),
         '-p', 'scenario:=acceleration', '-p', 'render_cameras:=false',
         '-p', 'strict_sources:=true', '-p', 'duration:=60.0'],
        cwd=str(ROOT), env=dict(os.environ), stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True)
    intruder = rclpy.create_node('intruder', context=rclpy_context)
    planner = rclpy.create_node('cone_drive_planner', context=rclpy_context)
    executor = SingleThreadedExecutor(context=rclpy_context)
    for n in (intruder, planner):
        executor.add_node(n)
    speeds: List[float] = []
    last = {'t': 0.0}

    gids: List[bool] = []  # does this rclpy give publisher gids (MessageInfo)?

    def on_odom(msg: Any, info: Any) -> None:
        gids.append('publisher_gid' in info)
        speeds.append(msg.twist.twist.linear.x)
        last['t'] = stamps.sec_from_stamp(msg.header.stamp)
    contract.create_subscription(intruder, 'odometry', on_odom)
    try:
        def drive(node: Any, seconds: float) -> None:
            pub = contract.create_publisher(node, 'cmd_vel')
            pubs.append(pub)
            end = time.monotonic() + seconds
            while time.monotonic() < end:
                msg = TwistStamped()
                msg.header.stamp = stamps.stamp_from_sec(last['t'])
                msg.twist.linear.x = 10.0
                pub.publish(msg)
                executor.spin_once(timeout_sec=0.02)
                assert bridge.poll() is None, bridge.stdout.read()
        pubs: List[Any] = []
        drive(intruder, 6.0)
        assert speeds and max(speeds) < 0.5, max(speeds or [0])
        client = intruder.create_client(SetBool, '/hil_bridge/pause')
        assert client.wait_for_service(timeout_sec=20.0)
        time.sleep(2.5)  # the bridge's graph check (every second) sees the client
        future = client.call_async(SetBool.Request(data=True))
        end = time.monotonic() + 10.0
        while not future.done() and time.monotonic() < end:
            executor.spin_once(timeout_sec=0.05)
        assert future.done() and not future.result().success
        assert 'refused' in future.result().message
        intruder.destroy_client(client)
        if not all(gids):
            # rclpy 7 (Jazzy) gives no publisher gid per message: the bridge
            # ignores the topic while an unexpected publisher is on it
            intruder.destroy_publisher(pubs[0])
        n_before = len(speeds)
        drive(planner, 6.0)
        assert max(speeds[n_before:]) > 1.0, 'the expected node could not drive'
    finally:
        bridge.terminate()
        try:
            out, _ = bridge.communicate(timeout=15)
        except subprocess.TimeoutExpired:
            bridge.kill()
            out, _ = bridge.communicate()
        executor.shutdown()
        intruder.destroy_node()
        planner.destroy_node()
    assert 'unexpected publisher /intruder on /carla/ego_vehicle/cmd_vel' in out, out[-3000:]
    assert 'unexpected client /intruder of /hil_bridge/pause' in out, out[-3000:]


PROBE = """
import os, time, rclpy
from std_msgs.msg import String
rclpy.init()
node = rclpy.create_node('socket_probe')
node.create_publisher(String, '/probe', 1)
time.sleep(1.0)
inodes = set()
for fd in os.listdir('/proc/self/fd'):
    try:
        link = os.readlink(f'/proc/self/fd/{fd}')
    except OSError:
        continue
    if link.startswith('socket:['):
        inodes.add(link[8:-1])
bound = []
for table in ('/proc/self/net/udp',):
    for line in open(table).read().splitlines()[1:]:
        cols = line.split()
        if cols[9] in inodes:
            addr = cols[1].split(':')[0]
            bound.append('.'.join(str(int(addr[i:i + 2], 16)) for i in (6, 4, 2, 0)))
print('BOUND', ' '.join(sorted(set(bound))))
"""


@pytest.mark.dds
def test_host_profile_listens_on_loopback_only(ros_domain: int) -> None:
    """
    config/fastdds.xml: no UDP socket of a participant is bound beyond loopback.

    Even with discovery opened to the subnet, nothing on the network reaches
    a participant that uses the shipped one-host profile (the multicast
    group socket aside, which joins on the loopback interface only).
    """
    profile = str(ROOT / 'config' / 'fastdds.xml')  # both names: Fast DDS 2.x and 3.x
    env = dict(os.environ, ROS_AUTOMATIC_DISCOVERY_RANGE='SUBNET',
               FASTDDS_DEFAULT_PROFILES_FILE=profile, FASTRTPS_DEFAULT_PROFILES_FILE=profile)
    out = subprocess.run([sys.executable, '-c', PROBE], env=env, capture_output=True,
                         text=True, timeout=60)
    line = next(ln for ln in out.stdout.splitlines() if ln.startswith('BOUND'))
    addresses = line.split()[1:]
    assert addresses, out.stdout
    unicast = [a for a in addresses if not 224 <= int(a.split('.')[0]) <= 239]
    assert unicast and set(unicast) == {'127.0.0.1'}, addresses


def test_sros2_keystore_is_refused_by_these_wheels(ros_domain: int, tmp_path: Path) -> None:
    """
    The PyPI Fast DDS wheels (Kilted and Jazzy) are built without DDS security.

    With a keystore and ROS_SECURITY_STRATEGY=Enforce, creating a node
    fails with the middleware's own message instead of running insecure
    (the check comes before any file is read: a keystore made with openssl
    fails alike, see docs/security.md for that and the other evidence); a
    wheel with security would fail this test and then deserves a real
    keystore test.
    """
    enclave = tmp_path / 'keystore' / 'enclaves' / 'probe'
    enclave.mkdir(parents=True)
    for name in ('cert.pem', 'key.pem', 'identity_ca.cert.pem', 'permissions_ca.cert.pem',
                 'governance.p7s', 'permissions.p7s'):
        (enclave / name).write_text('placeholder\n')
    env = dict(os.environ, ROS_SECURITY_ENABLE='true', ROS_SECURITY_STRATEGY='Enforce',
               ROS_SECURITY_KEYSTORE=str(tmp_path / 'keystore'))
    code = ('import rclpy\n'
            "rclpy.init(args=['--ros-args', '--enclave', '/probe'])\n"
            "rclpy.create_node('probe')\n"
            "print('NODE CREATED')\n")
    out = subprocess.run([sys.executable, '-c', code], env=env, capture_output=True,
                         text=True, timeout=60)
    assert 'NODE CREATED' not in out.stdout
    assert "doesn't have the security libraries" in out.stderr, out.stderr[-2000:]
