# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
Recording as rosbag2 bags: metadata, type hashes, QoS, an independent reader.

The DDS test records a real bridge (``--profile sim_pc``, lockstep on the
recorder only, the bridge's cruise in place of a planner) through the
runner and checks the bag against the bridge's own published counts and
with ``rosbags`` (an independent pure-Python rosbag2 reader), then replays
it and checks that a late subscriber still gets the latched ground truth.
"""

import json
import os
from pathlib import Path
import subprocess
import sys
import time

from hil_bridge.tools import bag_metadata as bm
from hil_bridge.tools.msg_definitions import rihs01, type_description, type_hash
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]


def test_type_hash_is_rosidls() -> None:
    """RIHS01 hashes computed from the description equal rosidl's own."""
    for name in ('sensor_msgs/msg/PointCloud2', 'rosgraph_msgs/msg/Clock',
                 'nav_msgs/msg/Odometry', 'diagnostic_msgs/msg/DiagnosticArray'):
        desc = type_description(name)
        assert type_hash(name) == desc['type_hashes'][0]['hash_string']
        assert type_hash(name).startswith('RIHS01_') and \
            len(type_hash(name)) == 7 + 64
    changed = json.loads(json.dumps(
        type_description('rosgraph_msgs/msg/Clock')['type_description_msg']))
    changed['type_description']['fields'][0]['name'] = 'clock2'
    assert rihs01(changed) != type_hash('rosgraph_msgs/msg/Clock')
    assert type_hash('nopkg/msg/Nothing') == ''


def test_qos_metadata_round_trip() -> None:
    """Version 9 QoS names are written, version 8 integers are read."""
    entry = bm.qos_entry('best_effort', 'volatile', deadline_ns=None,
                         lifespan_ns=2_500_000_000)
    assert entry['deadline'] == bm.INFINITE
    assert entry['lifespan'] == {'sec': 2, 'nsec': 500_000_000}
    text = bm.qos_string([entry])
    assert bm.parse_qos(text) == [entry]
    old = ('- history: 3\n  depth: 0\n  reliability: 1\n  durability: 1\n'
           '  deadline: {sec: 9223372036, nsec: 854775807}\n'
           '  lifespan: {sec: 9223372036, nsec: 854775807}\n'
           '  liveliness: 1\n'
           '  liveliness_lease_duration: {sec: 9223372036, nsec: 854775807}\n'
           '  avoid_ros_namespace_conventions: false\n')
    parsed = bm.parse_qos(old)[0]
    assert (parsed['reliability'], parsed['durability'], parsed['history'],
            parsed['liveliness']) == ('reliable', 'transient_local',
                                      'unknown', 'automatic')
    assert bm.playback_policies([parsed]) == ('reliable', 'transient_local')
    mixed = [parsed, bm.qos_entry('best_effort', 'volatile')]
    assert bm.playback_policies(mixed) is None
    with pytest.raises(ValueError, match='offered_qos_profiles'):
        bm.parse_qos('just text')


def test_bag_paths(tmp_path: Path) -> None:
    """A bag directory resolves to its MCAP file; bad ones are named."""
    bag = tmp_path / 'run1'
    bag.mkdir()
    assert bm.file_name_for(str(bag)) == 'run1_0.mcap'
    with pytest.raises(FileNotFoundError, match='found 0'):
        bm.mcap_path(str(bag))
    (bag / 'run1_0.mcap').write_bytes(b'x')  # not an MCAP file: named, not read as empty
    with pytest.raises(ValueError, match='not an MCAP file'):
        bm.mcap_path(str(bag))
    (bag / 'run1_0.mcap').write_bytes(bm.MCAP_MAGIC[:3])  # a writer killed at once
    assert bm.mcap_path(str(bag)) == str(bag / 'run1_0.mcap')
    info = bm.bag_info([bm.TopicRecord('/a', 'std_msgs/msg/String',
                                       message_count=3)],
                       'run1_0.mcap', 10, 30)
    bm.write_metadata(str(bag), info)
    assert bm.read_metadata(str(bag))['duration'] == {'nanoseconds': 20}
    assert bm.mcap_path(str(bag)) == str(bag / 'run1_0.mcap')
    (bag / 'metadata.yaml').write_text('rosbag2_bagfile_information: 3\n')
    with pytest.raises(ValueError, match='metadata.yaml'):
        bm.mcap_path(str(bag))
    with pytest.raises(FileNotFoundError, match='nope'):
        bm.mcap_path(str(tmp_path / 'nope'))


def test_recorder_status_kinds() -> None:
    """Acknowledgements and subscription reports are told apart."""
    from diagnostic_msgs.msg import DiagnosticArray
    from hil_bridge.interface import recorder_status as rs
    ack = rs.parse(rs.ack_msg(1_250_000_000, 'bag', 10, 1.5, 0))
    assert ack.ack and ack.stamp == pytest.approx(1.25)
    report = rs.parse(rs.subscriptions_msg('/ns/hil_recorder', [], ['*/image'],
                                           ['/clock', '/a']))
    # stamped before any sim time: never taken for an acknowledgement
    assert not report.ack and report.stamp < 0.0
    assert report.node == '/ns/hil_recorder'
    assert report.matched == ('/a', '/clock')
    assert report.records('/clock')
    assert not report.records('/carla/ego_vehicle/rgb_left/image')
    only = rs.parse(rs.subscriptions_msg('/r', ['/clock'], [], []))
    assert only.records('/clock') and not only.records('/x')
    assert rs.parse(DiagnosticArray()) is None


def _run(argv: list, timeout: float = 600.0) -> subprocess.CompletedProcess:
    return subprocess.run(argv, cwd=str(ROOT), env=dict(os.environ),
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, timeout=timeout)


@pytest.fixture(scope='module')
def bridge_bag(tmp_path_factory: pytest.TempPathFactory, module_ros_domain: int) -> tuple:
    """Record 3 s of a real bridge (lockstep on the recorder) into a bag."""
    bag = tmp_path_factory.mktemp('recording') / 'bridge_bag'
    run = _run([sys.executable, '-m', 'hil_bridge.tools.cli', 'run',
                '--profile', 'sim_pc', '--scenario', 'acceleration',
                '--duration', '3', '--record', str(bag), '--no-report',
                '--set', 'hil_bridge.rig=ci_rig.yaml',
                '--set', 'hil_bridge.cruise=true',
                '--set', 'hil_bridge.wait_for_control=true',
                '--set', 'hil_bridge.lockstep_topics=[recorder_status]',
                '--set', 'hil_bridge.real_time_factor=0'])
    assert run.returncode == 0, run.stdout[-4000:]
    return bag, run.stdout


@pytest.mark.dds
@pytest.mark.slow
def test_bag_read_by_rosbags_and_counts_match(bridge_bag: tuple) -> None:
    """The rosbags reader opens the bag and decodes all of it; 0 lost."""
    from rosbags.rosbag2 import Reader
    from rosbags.typesys import get_types_from_msg, get_typestore, Stores
    bag, out = bridge_bag
    result = json.loads(out.split('REFEREE_RESULT ', 1)[1].splitlines()[0])
    published = result['published']
    # the bridge was in lockstep with the recorder: every frame recorded
    assert 'published on recorded topics: 0 missing' in out, out[-3000:]
    meta = yaml.safe_load((bag / 'metadata.yaml').read_text())
    info = meta['rosbag2_bagfile_information']
    assert info['version'] == 9 and info['storage_identifier'] == 'mcap'
    assert info['relative_file_paths'] == ['bridge_bag_0.mcap']
    # types only from the schemas in the bag: they must be complete
    store = get_typestore(Stores.EMPTY)
    counts = {}
    with Reader(bag) as reader:
        conns = {c.topic: c for c in reader.connections}
        for conn in reader.connections:
            store.register(get_types_from_msg(conn.msgdef.data, conn.msgtype))
        for conn, _t, raw in reader.messages():
            store.deserialize_cdr(raw, conn.msgtype)
            counts[conn.topic] = counts.get(conn.topic, 0) + 1
    assert counts == published
    assert counts['/clock'] == result['frames'] + 1
    for topic, conn in conns.items():
        assert conn.digest == type_hash(conn.msgtype), topic
        assert conn.ext.serialization_format == 'cdr'
        assert conn.ext.offered_qos_profiles, topic
    gt = conns['/carla/ground_truth/cones'].ext.offered_qos_profiles[0]
    assert gt.durability.name == 'TRANSIENT_LOCAL'
    assert gt.reliability.name == 'RELIABLE'
    lidar = conns['/carla/ego_vehicle/lidar'].ext.offered_qos_profiles[0]
    assert lidar.reliability.name == 'BEST_EFFORT'
    # the MCAP channels carry what rosbag2's MCAP plugin reads
    from mcap.reader import make_reader
    with open(bm.mcap_path(str(bag)), 'rb') as f:
        summary = make_reader(f).get_summary()
    for channel in summary.channels.values():
        assert channel.metadata['topic_type_hash'].startswith('RIHS01_')
        assert bm.parse_qos(channel.metadata['offered_qos_profiles'])


@pytest.mark.dds
@pytest.mark.slow
def test_replay_keeps_latched_ground_truth(bridge_bag: tuple,
                                           rclpy_context: object) -> None:
    """A subscriber joining during replay still gets the latched cones."""
    from hil_bridge.interface import contract
    from rclpy.executors import SingleThreadedExecutor
    import rclpy
    from rosgraph_msgs.msg import Clock
    from sensor_msgs.msg import PointCloud2
    bag, _out = bridge_bag
    node = rclpy.create_node('latch_probe', context=rclpy_context)
    executor = SingleThreadedExecutor(context=rclpy_context)
    executor.add_node(node)
    clocks, cones = [], []
    node.create_subscription(Clock, '/clock', clocks.append,
                             contract.qos_profile('clock'))
    player = subprocess.Popen(
        [sys.executable, '-m', 'hil_bridge.tools.player', str(bag),
         '--rate', '0.5', '--settle', '0.5'], cwd=str(ROOT),
        env=dict(os.environ), stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 120.0
        while time.monotonic() < deadline and len(clocks) < 20:
            executor.spin_once(timeout_sec=0.1)
        assert len(clocks) >= 20, 'replay did not start'
        # the cones were published at t = 0, long before this subscription
        node.create_subscription(PointCloud2, '/carla/ground_truth/cones',
                                 cones.append,
                                 contract.qos_profile('latched'))
        deadline = time.monotonic() + 30.0
        while time.monotonic() < deadline and not cones and \
                player.poll() is None:
            executor.spin_once(timeout_sec=0.1)
        out, _ = player.communicate(timeout=120.0)
    finally:
        if player.poll() is None:
            player.kill()
        executor.shutdown()
        node.destroy_node()
    assert player.returncode == 0, out
    assert len(cones) == 1 and cones[0].width > 10


def _pids_of(*words: str) -> list:
    """Return the pids whose command line holds every word."""
    out = []
    for entry in os.listdir('/proc'):
        if not entry.isdigit():
            continue
        try:
            with open(f'/proc/{entry}/cmdline', 'rb') as f:
                argv = f.read().decode(errors='replace').split('\0')
        except OSError:
            continue
        if all(any(w in a for a in argv) for w in words):
            out.append(int(entry))
    return out


def _bag_counts(bag: Path) -> dict:
    """Return messages per topic as rosbags reads them from the bag."""
    from rosbags.rosbag2 import Reader
    counts: dict = {}
    with Reader(bag) as reader:
        for conn, _t, _raw in reader.messages():
            counts[conn.topic] = counts.get(conn.topic, 0) + 1
    return counts


@pytest.mark.dds
@pytest.mark.slow
def test_stalled_recorder_loss_is_reported(ros_domain: int,
                                           tmp_path: Path) -> None:
    """
    A recorder stopped for 6 s in a paced run: the loss is counted, not hidden.

    Paced at real time with no lockstep (``--profile sim_pc`` keeps the
    config), the bridge does not wait for a recorder that is SIGSTOPped, so
    frames are lost in DDS; the runner's table must show the true number:
    per topic, what the bridge published minus what rosbags reads from
    the bag, and the images left out by ``--record-exclude`` as excluded.
    """
    import signal
    import threading
    bag = tmp_path / 'stalled'
    proc = subprocess.Popen(
        [sys.executable, '-m', 'hil_bridge.tools.cli', 'run',
         '--profile', 'sim_pc', '--scenario', 'acceleration',
         '--duration', '10', '--record', str(bag), '--no-report',
         '--record-exclude', '*/rgb_right/image',
         '--set', 'hil_bridge.rig=ci_rig.yaml',
         '--set', 'hil_bridge.cruise=true'],
        cwd=str(ROOT), env=dict(os.environ), stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True)
    lines: list = []
    reader = threading.Thread(target=lambda: lines.extend(proc.stdout),
                              daemon=True)
    reader.start()
    stalled = []
    try:
        deadline = time.monotonic() + 120.0
        while time.monotonic() < deadline and proc.poll() is None and \
                not any('recorder matched' in x for x in lines):
            time.sleep(0.1)
        assert proc.poll() is None, ''.join(lines)[-3000:]
        time.sleep(1.0)  # a second of frames recorded, then stall
        stalled = _pids_of('hil_bridge.tools.recorder', str(bag))
        assert len(stalled) == 1, stalled
        os.kill(stalled[0], signal.SIGSTOP)
        time.sleep(6.0)
        os.kill(stalled[0], signal.SIGCONT)
        proc.wait(timeout=180.0)
    finally:
        for pid in stalled:
            try:
                os.kill(pid, signal.SIGCONT)
            except ProcessLookupError:
                pass
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        reader.join(timeout=10.0)
    out = ''.join(lines)
    assert proc.returncode == 0, out[-4000:]
    result = json.loads(out.split('REFEREE_RESULT ', 1)[1].splitlines()[0])
    published = result['published']
    counts = _bag_counts(bag)
    table = {}
    for line in out.split('[carla-hil] recording', 1)[1].splitlines()[2:]:
        parts = line.split()
        if len(parts) == 4 and parts[0].startswith('/'):
            table[parts[0]] = parts[1:]
    excluded = '/carla/ego_vehicle/rgb_right/image'
    assert table[excluded] == [str(published[excluded]), 'excluded', '-']
    assert excluded not in counts
    missing = 0
    for topic, n in published.items():
        if topic == excluded:
            continue
        # the table's figures are the bag's, read by an independent reader
        want = [str(n), str(counts.get(topic, 0)),
                str(max(0, n - counts.get(topic, 0)))]
        assert table[topic] == want, (topic, table[topic], want)
        missing += n - counts.get(topic, 0)
    # 6 s at 20 Hz is more than the recorder's queues hold: frames lost
    assert published['/carla/ego_vehicle/lidar'] - \
        counts['/carla/ego_vehicle/lidar'] > 20, table
    total = sum(n for t, n in published.items() if t != excluded)
    print(f'[test] recorder stopped 6 s: {missing} of {total} messages '
          'missing, as the table says')
    assert f'recorded {total - missing} of {total} messages the bridge ' \
        f'published on recorded topics: {missing} missing' in out
