# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""Two-host namespace rig: life cycle, link crossing, tbf rate, DDS."""

import json
from pathlib import Path
import subprocess
import sys
import time

from hil_bridge.link.link_monitor_node import STATS_PREFIX
from hil_bridge.tools import netns_rig
from hil_bridge.tools.netns_rig import NetnsRig, PROFILES, ProfileUnavailable
import pytest

OK, WHY = netns_rig.available()
needs_netns = pytest.mark.skipif(not OK, reason=f'no namespaces: {WHY}')

SERVER = r"""
import socket, sys, time
srv = socket.socket(); srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(('10.77.0.2', 5201)); srv.listen(1); srv.settimeout(20)
print('listening', flush=True)
conn, _ = srv.accept(); total = 0; t0 = None
while True:
    buf = conn.recv(1 << 20)
    if not buf:
        break
    if t0 is None:
        t0 = time.monotonic()
    total += len(buf)
print(total, time.monotonic() - t0, flush=True)
"""

CLIENT = r"""
import socket, sys, time
s = socket.create_connection(('10.77.0.2', 5201), timeout=5)
chunk = b'\0' * 65536; end = time.monotonic() + float(sys.argv[1]); sent = 0
while time.monotonic() < end:
    s.sendall(chunk); sent += len(chunk)
s.close(); print(sent, flush=True)
"""

PUB = r"""
import sys, time, rclpy
from std_msgs.msg import String
rclpy.init(); node = rclpy.create_node('rig_pub')
pub = node.create_publisher(String, '/rig_test/chatter', 10)
end = time.monotonic() + float(sys.argv[1]); n = 0
while time.monotonic() < end:
    pub.publish(String(data='x' * 1000)); n += 1
    rclpy.spin_once(node, timeout_sec=0.05)
print('sent', n, flush=True)
"""

SUB = r"""
import sys, time, rclpy
from std_msgs.msg import String
rclpy.init(); node = rclpy.create_node('rig_sub'); got = []
node.create_subscription(String, '/rig_test/chatter',
                         lambda m: got.append(len(m.data)), 10)
end = time.monotonic() + float(sys.argv[1])
while time.monotonic() < end:
    rclpy.spin_once(node, timeout_sec=0.05)
print('received', len(got), flush=True)
"""


def _tcp_transfer(rig: NetnsRig, seconds: float) -> tuple:
    """Send TCP from simpc to onboard for ``seconds``; return (bytes, s)."""
    server = rig.popen('onboard', [sys.executable, '-c', SERVER],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True)
    try:
        assert server.stdout.readline().strip() == 'listening'
        client = rig.run('simpc', [sys.executable, '-c', CLIENT,
                                   str(seconds)], timeout=30)
        assert client.returncode == 0, client.stderr
        out, err = server.communicate(timeout=30)
        total, elapsed = out.split()
        return int(total), float(elapsed)
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()


def test_profiles_and_tc_commands() -> None:
    """Profiles map to tbf (rate only) or netem (delay/loss) commands."""
    gbit = netns_rig.tc_commands(PROFILES['gbit'], 'veth0')
    assert gbit[0][:7] == ['tc', 'qdisc', 'replace', 'dev', 'veth0', 'root',
                           'tbf']
    assert '1000000000bit' in gbit[0]
    wifi = netns_rig.tc_commands(PROFILES['wifi'], 'veth0')[0]
    assert 'netem' in wifi and 'loss' in wifi and '1.0%' in wifi
    assert netns_rig.tc_commands(PROFILES['none'], 'veth0') == []
    bad = netns_rig.LinkProfile('bad', 1e6, loss_pct=150.0)
    with pytest.raises(ValueError, match='loss'):
        netns_rig.tc_commands(bad, 'veth0')
    with pytest.raises(ValueError, match='unknown'):
        NetnsRig('carrier-pigeon')
    with pytest.raises(ValueError, match='suffix'):
        NetnsRig('gbit', suffix='bad name')


def test_dds_env_is_udp_only() -> None:
    """The rig's DDS environment selects a UDP-only Fast DDS profile."""
    env = netns_rig.dds_env('10.77.0.2')
    assert env['FASTDDS_DEFAULT_PROFILES_FILE'].endswith('fastdds_udp.xml')
    assert env.get('FASTRTPS_DEFAULT_PROFILES_FILE', '') in (
        '', env['FASTDDS_DEFAULT_PROFILES_FILE'])  # Fast DDS 2.x's name where set
    assert env['ROS_STATIC_PEERS'] == '10.77.0.2'
    with open(env['FASTDDS_DEFAULT_PROFILES_FILE'], encoding='utf-8') as f:
        text = f.read()
    assert '<type>UDPv4</type>' in text and '<type>SHM</type>' not in text
    assert '<useBuiltinTransports>false</useBuiltinTransports>' in text


@needs_netns
def test_create_and_always_teardown() -> None:
    """Namespaces exist inside the context and are gone after, even on error."""
    rig = NetnsRig('gbit')
    with pytest.raises(RuntimeError, match='boom'):
        with rig:
            assert rig.exists()
            assert 'tbf' in rig.qdisc('simpc') and '1Gbit' in \
                rig.qdisc('onboard')
            raise RuntimeError('boom')
    assert not rig.exists()
    listed = subprocess.run(['ip', 'netns', 'list'], capture_output=True,
                            text=True, check=True).stdout
    assert rig.ns['simpc'] not in listed and rig.ns['onboard'] not in listed
    assert isinstance(netns_rig.cleanup_stale(), list)


@needs_netns
def test_traffic_crosses_veth_and_link_cut() -> None:
    """TCP bytes show up on the veth counters; a cut link carries nothing."""
    with NetnsRig('gbit') as rig:
        before = rig.counters('onboard')['rx_bytes']
        total, _ = _tcp_transfer(rig, 0.5)
        after = rig.counters('onboard')['rx_bytes']
        assert total > 1_000_000
        assert after - before >= total
        rig.link_down()
        probe = rig.run('simpc', [sys.executable, '-c',
                                  'import socket; socket.create_connection('
                                  '("10.77.0.2", 9), timeout=1)'])
        assert probe.returncode != 0
        rig.link_up()
        total2, _ = _tcp_transfer(rig, 0.3)
        assert total2 > 0


@needs_netns
def test_tbf_rate_limit_100mbit() -> None:
    """The 100 Mbit/s profile caps TCP throughput near 100 Mbit/s."""
    with NetnsRig('100mbit') as rig:
        total, elapsed = _tcp_transfer(rig, 2.0)
        mbit = total * 8 / elapsed / 1e6
        print(f'100mbit profile: {mbit:.1f} Mbit/s TCP')
        assert 40.0 < mbit < 110.0


@needs_netns
def test_wifi_profile_needs_netem() -> None:
    """The Wi-Fi profile applies netem or says clearly that it cannot."""
    with NetnsRig('gbit') as rig:
        try:
            rig.set_profile('wifi')
        except ProfileUnavailable as exc:
            assert 'netem' in str(exc)
            pytest.skip(f'wifi profile: {exc}')
        assert 'netem' in rig.qdisc('simpc')


@pytest.mark.dds
@needs_netns
def test_dds_discovery_across_namespaces(ros_domain: int) -> None:
    """A publisher in simpc reaches a subscriber in onboard over the veth."""
    with NetnsRig('gbit') as rig:
        before = rig.counters('onboard')['rx_bytes']
        sub = rig.popen('onboard', [sys.executable, '-c', SUB, '10'],
                        stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                        text=True)
        pub = rig.popen('simpc', [sys.executable, '-c', PUB, '7'],
                        stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                        text=True)
        try:
            pub_out = pub.communicate(timeout=40)[0]
            sub_out = sub.communicate(timeout=40)[0]
        finally:
            for proc in (pub, sub):
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()
        received = int(sub_out.split('received')[-1].split()[0])
        sent = int(pub_out.split('sent')[-1].split()[0])
        assert sent > 20
        assert received > sent // 2, (pub_out, sub_out)
        crossed = rig.counters('onboard')['rx_bytes'] - before
        assert crossed >= received * 1000


ODOM_PUB = r"""
import sys, time, rclpy
from hil_bridge.interface import contract
from nav_msgs.msg import Odometry
rclpy.init(); node = rclpy.create_node('odom_pub')
pub = contract.create_publisher(node, 'odometry')
wait = time.monotonic() + 30.0  # both monitors (one across the link) matched
while pub.get_subscription_count() < 2 and time.monotonic() < wait:
    rclpy.spin_once(node, timeout_sec=0.05)
end = time.monotonic() + float(sys.argv[1]); k = 0
while time.monotonic() < end:
    k += 1
    if k % 20 not in (5, 6):  # two of every 20 frames never sent
        msg = Odometry(); t = k * 0.05
        msg.header.stamp.sec = int(t)
        msg.header.stamp.nanosec = int(round((t % 1) * 1e9)) % 1000000000
        pub.publish(msg)
    time.sleep(0.05)
print('frames', k, flush=True)
"""


STATUS_SUB = r"""
import json, sys, time, rclpy
from hil_bridge.interface import contract
rclpy.init(); node = rclpy.create_node('status_sub'); seen = set()
def on_status(arr):
    for st in arr.status:
        level = st.level[0] if isinstance(st.level, bytes) else int(st.level)
        seen.add((st.name, level, st.message))
contract.create_subscription(node, 'link_status', on_status)
end = time.monotonic() + float(sys.argv[1])
try:
    while time.monotonic() < end:
        rclpy.spin_once(node, timeout_sec=0.05)
except BaseException:  # SIGINT ends the listener
    pass
print(json.dumps(sorted(seen)), flush=True)
"""


@pytest.mark.dds
@needs_netns
def test_link_monitor_across_namespaces(ros_domain: int) -> None:
    """Client/server monitors: offset ~0 on one kernel, RTT, drops counted."""
    base = [sys.executable, '-m', 'hil_bridge.link.link_monitor_node',
            '--ros-args', '--params-file', 'config/hil_link_monitor.yaml',
            '-p', 'use_sim_time:=false', '-p', 'window:=60.0',
            '-p', 'topics:=[odometry]']
    with NetnsRig('gbit') as rig:
        procs = []
        try:
            for host, role in (('onboard', 'server'), ('simpc', 'client')):
                procs.append(rig.popen(host, base + ['-p', f'role:={role}'],
                                       stdout=subprocess.PIPE,
                                       stderr=subprocess.STDOUT, text=True))
            listener = rig.popen('simpc', [sys.executable, '-c', STATUS_SUB,
                                           '60'], stdout=subprocess.PIPE,
                                 stderr=subprocess.STDOUT, text=True)
            procs.append(listener)
            pub = rig.run('simpc', [sys.executable, '-c', ODOM_PUB, '6'],
                          timeout=40)
            assert pub.returncode == 0, pub.stderr
            frames = int(pub.stdout.split()[-1])
            time.sleep(1.5)
            rig.link_down()  # no pongs: the client must report ERROR
            time.sleep(3.5)
            rig.link_up()
            for proc in procs:
                proc.send_signal(2)
            outs = [proc.communicate(timeout=20)[0] for proc in procs]
        finally:
            for proc in procs:
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()
    seen = json.loads(outs[2].strip().splitlines()[-1])
    names = {name for name, _, _ in seen}
    assert 'hil_link_monitor: clock' in names, seen
    assert 'hil_link_monitor: /carla/ego_vehicle/odometry' in names, seen
    assert ['hil_link_monitor: clock', 0, 'ok'] in seen, seen
    assert ['hil_link_monitor: clock', 2, 'link down (no pong)'] in seen, seen
    stats = []
    for out in outs[:2]:
        lines = [ln for ln in out.splitlines() if ln.startswith(STATS_PREFIX)]
        assert lines, out[-2000:]
        stats.append(json.loads(lines[-1][len(STATS_PREFIX):]))
    server, client = stats
    odom = server['topics']['odometry']
    # frame k is stamped k * 0.05 s; the publisher waits for both monitors,
    # but a message sent while the server's reader was still being matched
    # may be lost (volatile): the server counts gaps from the first stamp it
    # heard, so exactly the skipped frames between its first and last count
    sent = [k for k in range(1, frames + 1) if k % 20 not in (5, 6)]
    first, last = (round(odom[key] / 0.05) for key in ('first_stamp', 'last_stamp'))
    assert first in sent and last == sent[-1], (odom, frames)
    expected_missing = sum(1 for k in range(first, last + 1) if k % 20 in (5, 6))
    assert odom['drops'] == expected_missing, (odom, first, last)
    assert odom['count'] == last - first + 1 - expected_missing, (odom, first, last)
    assert odom['count'] >= len(sent) // 2, (odom, frames)  # it waited for the match
    clock = client['clock']
    assert clock['samples'] >= 5
    assert abs(clock['offset']) < 0.005  # one kernel clock: offset ~ 0
    assert 0.0 < clock['rtt_min'] < 0.05


def test_header_stamp_from_serialized_messages() -> None:
    """The raw-CDR stamp decoder agrees with rclpy's serialization."""
    from geometry_msgs.msg import TwistStamped
    from hil_bridge.link.link_monitor_node import header_stamp
    from rclpy.serialization import serialize_message
    from sensor_msgs.msg import CompressedImage
    for msg in (TwistStamped(), CompressedImage(format='jpeg', data=b'xy')):
        msg.header.stamp.sec = 1234
        msg.header.stamp.nanosec = 500_000_000
        stamp, ok = header_stamp(serialize_message(msg))
        assert ok and stamp == pytest.approx(1234.5)
    stamp, ok = header_stamp(b'\x00\x01\x00')  # too short
    assert not ok and stamp != stamp


def test_write_rig_and_result_parsing(tmp_path: Path) -> None:
    """Reduced rigs keep the sensors but resize cameras; results parse."""
    from hil_bridge.interface.rig import load_rig
    from hil_bridge.tools.two_hosts import read_jsonl, result_of, write_rig
    path = write_rig(str(tmp_path / 'rig.yaml'), width=320, height=240)
    rig = load_rig(path)
    cams = [s for s in rig if s.blueprint.startswith('sensor.camera')]
    assert len(cams) == 2 and len(rig) == 3
    assert all(int(s.attributes['image_size_x']) == 320 and
               int(s.attributes['image_size_y']) == 240 for s in cams)
    with pytest.raises(ValueError):
        write_rig(str(tmp_path / 'bad.yaml'), width=-1)
    log = 'x\n[hil_bridge] REFEREE_RESULT {"status": "finished"}\nend'
    assert result_of(log) == {'status': 'finished'}
    assert result_of('no result') is None
    (tmp_path / 'r.jsonl').write_text('{"k": 1}\n{"k": 2\n')
    assert read_jsonl(str(tmp_path / 'r.jsonl')) == [{'k': 1}]
