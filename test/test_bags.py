# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
``play`` and ``report`` on bags nobody here made, and on broken ones.

The bags are written by ``rosbags`` as ``ros2 bag record`` lays them out
(test/rosbag2_bags.py): MCAP and sqlite3, metadata versions 5 (Humble), 8
and 9, zstd per file, per message and in MCAP chunks, split into several
files; carla-ros-bridge's topics and types, one of them (carla_msgs) not
installed here. Broken bags must end ``play``/``report`` with exit code 2
and one line naming the file and the fault; bags that are only partly
readable (cut short, no metadata.yaml) are read with a warning.
"""

import json
import math
import os
from pathlib import Path
import shutil
import subprocess
import sys
import time

from hil_bridge.tools import bag_metadata as bm
from hil_bridge.tools import player, report
from hil_bridge.tools.bag_io import Bag
from hil_bridge.tools.bag_writer import BagWriter
import pytest
from rosbag2_bags import PERIOD_NS, write_bag
import yaml

ROOT = Path(__file__).resolve().parents[1]
#: messages per frame (clock, odometry, lidar, tf, status) + camera every 2nd
FRAMES = 20
TOTAL = FRAMES * 5 + FRAMES // 2

LAYOUTS = {
    'mcap v9 (jazzy)': {},
    'mcap v8': {'version': 8},
    'mcap v5 (humble)': {'humble': True},
    'mcap zstd chunks': {'compression': 'chunk'},
    'mcap zstd file, split in 2': {'compression': 'file', 'parts': 2},
    'mcap zstd message': {'compression': 'message'},
    'sqlite3 v9': {'storage': 'sqlite3'},
    'sqlite3 v5 schema 3 (humble)': {'storage': 'sqlite3', 'humble': True},
    'sqlite3 zstd file': {'storage': 'sqlite3', 'compression': 'file'},
    'sqlite3 zstd message': {'storage': 'sqlite3', 'compression': 'message'},
    'sqlite3 split in 3': {'storage': 'sqlite3', 'parts': 3, 'version': 8},
}


@pytest.fixture(scope='module')
def bags(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """Write every layout once (a few hundred ms in all)."""
    root = tmp_path_factory.mktemp('rosbag2')
    return {name: write_bag(root / f'bag{k}', frames=FRAMES, **kw)
            for k, (name, kw) in enumerate(LAYOUTS.items())}


def _rosbags_read(path: Path) -> list:
    from rosbags.rosbag2 import Reader
    with Reader(path) as reader:
        return sorted((c.topic, t, bytes(raw))
                      for c, t, raw in reader.messages())


@pytest.mark.parametrize('layout', list(LAYOUTS))
def test_reads_every_rosbag2_layout(bags: dict, layout: str) -> None:
    """Every layout reads as rosbags reads it, in log-time order."""
    path = bags[layout]
    with Bag(str(path)) as bag:
        msgs = list(bag.messages())
        assert bag.warnings == []
        assert bag.message_count == TOTAL
        lidar = bag.topics['/carla/ego_vehicle/lidar']
        status = bag.topics['/carla/ego_vehicle/vehicle_status']
    assert [m.log_time for m in msgs] == sorted(m.log_time for m in msgs)
    assert sorted((m.topic, m.log_time, m.data) for m in msgs) == \
        _rosbags_read(path)
    assert lidar.msg_type == 'sensor_msgs/msg/PointCloud2'
    assert lidar.message_count == FRAMES
    assert [(q['reliability'], q['durability'])
            for q in lidar.offered_qos] == [('reliable', 'volatile')]
    assert status.msg_type == 'carla_msgs/msg/CarlaEgoVehicleStatus'


def test_single_storage_files_and_humble_metadata(bags: dict) -> None:
    """A .db3 or .mcap alone is a bag; Humble's metadata is valid for Humble."""
    for layout, ext in (('sqlite3 v5 schema 3 (humble)', 'db3'),
                        ('mcap v9 (jazzy)', 'mcap')):
        path = bags[layout]
        with Bag(str(path / f'{path.name}_0.{ext}')) as bag:
            assert len(list(bag.messages())) == TOTAL and not bag.warnings
    info = yaml.safe_load((bags['sqlite3 v5 schema 3 (humble)'] /
                           'metadata.yaml').read_text())
    info = info['rosbag2_bagfile_information']
    assert info['version'] == 5
    assert bm.reader_problems(info, 'humble') == []
    assert bm.reader_problems(info, 'jazzy') == []


def test_version_3_paths_are_relative_to_the_parent(tmp_path: Path) -> None:
    """Before version 4 file paths start with the bag's name; no QoS yet."""
    bag = write_bag(tmp_path / 'old', storage='sqlite3', frames=4)
    meta = yaml.safe_load((bag / 'metadata.yaml').read_text())
    info = meta['rosbag2_bagfile_information']
    info.update(version=3, relative_file_paths=['old/old_0.db3'])
    for key in ('files', 'custom_data', 'ros_distro'):
        del info[key]
    for topic in info['topics_with_message_count']:
        del topic['topic_metadata']['offered_qos_profiles']
        del topic['topic_metadata']['type_description_hash']
    (bag / 'metadata.yaml').write_text(yaml.safe_dump(meta))
    assert bm.reader_problems(info, 'humble') == []
    with Bag(str(bag)) as opened:
        assert len(list(opened.messages())) == 4 * 5 + 2
        assert opened.warnings == [] and opened.version == 3


def test_report_of_a_carla_ros_bridge_bag(tmp_path: Path, capsys) -> None:
    """
    A Humble sqlite3 bag of carla-ros-bridge, role hero: a report of what it has.

    No ground truth, no referee, no cmd_vel: the driven line, speed and
    the messages per topic (each with its type, the uninstalled
    carla_msgs one too); the role is found in the topic names.
    """
    bag = write_bag(tmp_path / 'hero', storage='sqlite3', humble=True,
                    compression='message', role='hero', frames=FRAMES,
                    resend_first=True)
    out = tmp_path / 'report'
    assert report.main([str(bag), '--out', str(out)]) == 0
    err = capsys.readouterr().err
    assert 'role hero (from the topic names in the bag' in err
    assert 'Traceback' not in err
    figures = json.loads((out / 'metrics.json').read_text())
    # 19 chords of 5 m/s x 50 ms on a 10 m circle
    chord = 2 * 10.0 * math.sin(5.0 * PERIOD_NS * 1e-9 / 10.0 / 2)
    assert figures['distance_m'] == pytest.approx(19 * chord, abs=0.002)
    assert figures['frames'] == FRAMES
    assert figures['detection'] == {'lidar': [], 'vision': [], 'fused': []}
    rows = {r['topic']: r for r in figures['messages']}
    status = rows['/carla/hero/vehicle_status']
    assert status['type'] == 'carla_msgs/msg/CarlaEgoVehicleStatus'
    assert status['recorded'] == FRAMES
    # no expectation for another recorder's topics
    assert all(r['published'] is None for r in rows.values())
    # frames covered counts distinct stamps: the re-sent frame 0 is not a
    # 21st frame (21 of 20 before), the 10 Hz camera covers half
    assert rows['/carla/hero/lidar']['recorded'] == FRAMES + 1
    assert rows['/carla/hero/lidar']['per_frame'] == 1.0
    assert rows['/carla/hero/rgb_front/image']['per_frame'] == 0.5
    page = (out / 'report.html').read_text()
    assert 'no result in the bag' in page and 'Warnings' in page
    for png in ('track.png', 'timeline.png', 'detection.png'):
        assert (out / png).read_bytes()[:4] == b'\x89PNG'


def _one_line_error(capsys, main, path: str, out: Path) -> str:
    code = main([path, '--out', str(out)]) if main is report.main else \
        main([path, '--wait', '0'])
    err = capsys.readouterr().err.strip()
    assert code == 2, err
    assert len(err.splitlines()) == 1 and 'Traceback' not in err, err
    return err


def _broken(tmp_path: Path) -> dict:
    """Return {name: (path, expected text)} of broken bags."""
    good = write_bag(tmp_path / 'good', frames=4)
    out = {'missing path': (tmp_path / 'nope', 'no such bag directory')}
    empty_dir = tmp_path / 'emptydir'
    empty_dir.mkdir()
    out['directory without bag files'] = (empty_dir, 'not a bag: no '
                                          'metadata.yaml and no .mcap or .db3')
    bad_yaml = shutil.copytree(good, tmp_path / 'badyaml')
    (bad_yaml / 'metadata.yaml').write_text('rosbag2_bagfile_information: [\n')
    out['metadata not YAML'] = (bad_yaml, 'metadata.yaml: not YAML')
    lost = shutil.copytree(good, tmp_path / 'lostfile')
    (lost / 'good_0.mcap').unlink()
    out['listed file missing'] = (lost, 'lists good_0.mcap, which is missing')
    garbage = tmp_path / 'garbage.mcap'
    garbage.write_bytes(b'this is not a bag at all')
    out['not a storage file'] = (garbage, 'neither an MCAP nor a sqlite3')
    zero = tmp_path / 'zero.db3'
    zero.write_bytes(b'')
    out['empty file'] = (zero, 'empty file')
    db = write_bag(tmp_path / 'db', storage='sqlite3', frames=4)
    cut_db = tmp_path / 'cut.db3'
    data = (db / 'db_0.db3').read_bytes()
    cut_db.write_bytes(data[:200])
    out['truncated sqlite3'] = (cut_db, 'unreadable sqlite3 bag file')
    lz4 = shutil.copytree(good, tmp_path / 'lz4')
    meta = yaml.safe_load((lz4 / 'metadata.yaml').read_text())
    meta['rosbag2_bagfile_information'].update(
        {'compression_mode': 'file', 'compression_format': 'lz4'})
    (lz4 / 'metadata.yaml').write_text(yaml.safe_dump(meta))
    out['unsupported compression'] = (lz4, "compression format 'lz4'")
    ros1 = shutil.copytree(good, tmp_path / 'ros1')
    meta['rosbag2_bagfile_information'].update(
        {'compression_mode': '', 'storage_identifier': 'rosbag_v2'})
    (ros1 / 'metadata.yaml').write_text(yaml.safe_dump(meta))
    out['unknown storage'] = (ros1, "storage 'rosbag_v2' is not supported")
    out['no messages'] = (write_bag(tmp_path / 'nothing', frames=0),
                          'the bag holds no messages')
    from mcap.writer import Writer
    silent = tmp_path / 'silent.mcap'  # a topic was found, nothing came
    with open(silent, 'wb') as f:
        writer = Writer(f)
        writer.start('ros2', 'test')
        writer.register_channel('/clock', 'cdr', writer.register_schema(
            'rosgraph_msgs/msg/Clock', 'ros2msg', b'builtin_interfaces/Time '
            b'clock'))
        writer.finish()
    out['topics without messages'] = (silent, 'the bag holds no messages')
    return out


def test_broken_bags_give_one_line_and_exit_2(tmp_path: Path,
                                              capsys) -> None:
    """Report and play: exit code 2, one line naming the file and fault."""
    for name, (path, text) in _broken(tmp_path).items():
        for main in (report.main, player.main):
            err = _one_line_error(capsys, main, str(path),
                                  tmp_path / 'out')
            assert text in err and str(path.name) in err, (name, err)


def test_unwritable_report_directory_is_one_line(
        bags: dict, tmp_path: Path, capsys) -> None:
    """An --out that is a file: exit code 2, one line, no traceback."""
    blocker = tmp_path / 'file'
    blocker.write_text('x')
    err = _one_line_error(capsys, report.main, str(bags['mcap v9 (jazzy)']),
                          blocker)
    assert 'File exists' in err or 'Not a directory' in err, err


def test_cut_short_and_unclosed_bags_are_read_with_a_warning(
        tmp_path: Path, capsys) -> None:
    """A cut MCAP gives its whole messages; no metadata.yaml: the files."""
    # 200 x 150 bgra8 images: 2.4 MB in 1 MiB chunks
    bag = write_bag(tmp_path / 'cut', frames=40, image=(200, 150))
    mcap = bag / 'cut_0.mcap'
    data = mcap.read_bytes()
    (bag / 'metadata.yaml').unlink()  # a recorder killed before closing
    mcap.write_bytes(data[:int(len(data) * 0.6)])
    with Bag(str(bag)) as opened:
        msgs = list(opened.messages())
        text = ' | '.join(opened.warnings)
    assert 0 < len(msgs) < 40 * 5 + 20
    assert 'no metadata.yaml' in text and 'cut short' in text
    assert report.main([str(bag), '--out', str(tmp_path / 'r')]) == 0
    err = capsys.readouterr().err
    assert '[report] WARNING: ' in err and 'cut short' in err
    figures = json.loads((tmp_path / 'r' / 'metrics.json').read_text())
    assert figures['frames'] == sum(m.topic == '/clock' for m in msgs)
    split = write_bag(tmp_path / 'split', storage='sqlite3', parts=3,
                      frames=12)
    (split / 'metadata.yaml').unlink()
    with Bag(str(split)) as opened:
        assert len(list(opened.messages())) == 12 * 5 + 6
        assert len(opened.files) == 3


def test_play_plan_names_what_it_cannot_replay(bags: dict) -> None:
    """Uninstalled types and type clashes are named, not published."""
    with Bag(str(bags['sqlite3 v9'])) as bag:
        plan = player.plan(bag, 'ego_vehicle', replay_all=True)
        assert 'carla_msgs/msg/CarlaEgoVehicleStatus not installed' in \
            plan.unusable['/carla/ego_vehicle/vehicle_status']
        assert '/carla/ego_vehicle/lidar' in plan.topics
        default = player.plan(bag, 'ego_vehicle')
        assert set(default.topics) == {'/clock', '/carla/ego_vehicle/lidar',
                                       '/carla/ego_vehicle/odometry'}
        assert '/carla/ego_vehicle/rgb_front/image' in default.skipped
        # a contract topic recorded with another type is not published
        bag.topics['/carla/ego_vehicle/odometry'].msg_type = \
            'geometry_msgs/msg/PoseStamped'
        clash = player.plan(bag, 'ego_vehicle')
        assert 'the contract has nav_msgs/msg/Odometry' in \
            clash.unusable['/carla/ego_vehicle/odometry']
        # the report leaves it out too, and says so
        run = report.load_run(bag, 'ego_vehicle')
        assert len(run['odometry']) == 0
        assert '/carla/ego_vehicle/odometry not used: geometry_msgs/msg/' \
            'PoseStamped, the report reads nav_msgs/msg/Odometry' in \
            run['warnings']


def test_undecodable_messages_are_left_out_with_a_warning(
        bags: dict, tmp_path: Path) -> None:
    """Metadata that hides the message compression: nothing decodes, no crash."""
    bag = shutil.copytree(bags['sqlite3 zstd message'], tmp_path / 'lie')
    meta = yaml.safe_load((bag / 'metadata.yaml').read_text())
    meta['rosbag2_bagfile_information']['compression_mode'] = ''
    (bag / 'metadata.yaml').write_text(yaml.safe_dump(meta))
    run = report.load_run(str(bag))
    assert len(run['odometry']) == 0 and run['counts']['/clock'] == FRAMES
    assert f'/carla/ego_vehicle/odometry: {FRAMES} messages do not decode ' \
        'as nav_msgs/msg/Odometry: left out' in run['warnings']


def test_replay_order_uses_stamps_only_near_the_log_time() -> None:
    """Stamps reorder within the window; far ones (wall-time logs, 0) do not."""
    from hil_bridge.tools.bag_io import BagMessage
    from rosgraph_msgs.msg import Clock
    from rclpy.serialization import serialize_message
    from std_msgs.msg import Header

    def msg(topic: str, stamp_s: float, log_s: float) -> BagMessage:
        m = Clock() if topic == '/clock' else Header()
        t = m.clock if topic == '/clock' else m.stamp
        t.sec, t.nanosec = int(stamp_s), int(stamp_s % 1 * 1e9)
        return BagMessage(topic, 'rosgraph_msgs/msg/Clock' if topic ==
                          '/clock' else 'std_msgs/msg/Header',
                          int(log_s * 1e9), int(log_s * 1e9),
                          serialize_message(m))
    # sim-time bag: a frame-2 message logged before the /clock of frame 2
    sim = [msg('/clock', 1.0, 1.0), msg('/x', 2.0, 1.98),
           msg('/clock', 2.0, 2.0), msg('/y', 0.0, 2.5)]
    order = [(m.topic, t * 1e-9) for t, m in player.ordered(sim)]
    assert order == [('/clock', 1.0), ('/clock', 2.0), ('/x', 2.0),
                     ('/y', 2.5)]
    # wall-time log, sim stamps: replayed as logged, at the logged times
    wall = [msg('/x', 5.0, 1.7e9), msg('/y', 4.0, 1.7e9 + 0.1)]
    assert [t for t, _m in player.ordered(wall)] == [m.log_time
                                                     for m in wall]


@pytest.mark.parametrize('version', bm.WRITE_VERSIONS)
def test_writer_versions_read_by_rosbag2_rules_and_rosbags(
        tmp_path: Path, version: int) -> None:
    """
    Each metadata version the recorder writes passes rosbag2's decoders.

    Version 5 (``--record-version humble``) has what Humble's reader and
    player require: QoS as text with rmw integers, no version 9 list
    (which Humble cannot parse). rosbags reads every version back with
    the QoS and the type hash.
    """
    from rosbags.rosbag2 import Reader
    from rosgraph_msgs.msg import Clock
    from rclpy.serialization import serialize_message
    bag = tmp_path / f'v{version}'
    writer = BagWriter(str(bag), version, ros_distro='kilted')
    latched = bm.qos_entry('reliable', 'transient_local')
    writer.add_topic('/clock', 'rosgraph_msgs/msg/Clock', [latched])
    for k in range(3):
        msg = Clock()
        msg.clock.sec = k
        writer.write('/clock', k * 10**9, k * 10**9 + 5,
                     serialize_message(msg))
    info = writer.close()
    on_disk = yaml.safe_load((bag / 'metadata.yaml').read_text())[
        'rosbag2_bagfile_information']
    assert on_disk == info and info['version'] == version
    assert bm.reader_problems(info, 'jazzy') == []
    humble = bm.reader_problems(info, 'humble')
    if version < 9:
        assert humble == []
        qos = info['topics_with_message_count'][0]['topic_metadata'][
            'offered_qos_profiles']
        assert isinstance(qos, str) and 'reliability: 1' in qos \
            and 'durability: 1' in qos
    else:
        assert humble == ['topic /clock: offered_qos_profiles is list, not '
                          'text']
    with Reader(bag) as reader:
        conn = reader.connections[0]
        assert conn.msgcount == 3
        assert conn.ext.offered_qos_profiles[0].durability.name == \
            'TRANSIENT_LOCAL'
        if version >= 7:
            assert conn.digest.startswith('RIHS01_')
    with Bag(str(bag)) as ours:
        assert [m.publish_time for m in ours.messages()] == \
            [5, 10**9 + 5, 2 * 10**9 + 5]
        assert ours.topics['/clock'].offered_qos[0]['durability'] == \
            'transient_local'


def test_runner_passes_the_record_version() -> None:
    """--record-version reaches each recorder; a bad one is one line, exit 2."""
    from hil_bridge.tools.cli import _recorder_spec
    argv = _recorder_spec('recorder', 'bag', [], [], '', 'humble').argv
    assert argv[argv.index('--bag-version') + 1] == 'humble'
    run = subprocess.run([sys.executable, '-m', 'hil_bridge.tools.cli', 'run',
                          '--record-version', '4', '--no-report'],
                         cwd=str(ROOT), capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 2, run.stderr
    assert run.stderr.strip() == 'carla-hil run: --record-version: bag ' \
        'version 4: the recorder writes 5-9'


def test_reader_problems_follow_rosbag2() -> None:
    """Missing fields per version are found; Humble ignores newer ones."""
    info = bm.bag_info([bm.TopicRecord('/a', 'std_msgs/msg/String', [
        bm.qos_entry('reliable', 'volatile')], 'RIHS01_x', 1)],
        'a_0.mcap', 0, 10, version=8)
    assert bm.reader_problems(info) == []
    del info['ros_distro']
    assert bm.reader_problems(info) == ['ros_distro missing (version 8)']
    assert bm.reader_problems(info, 'humble') == []  # Humble stops at 5
    del info['files']
    assert 'files missing (version 8)' in bm.reader_problems(info, 'humble')
    info['version'] = 4
    assert bm.reader_problems(info, 'humble') == []
    text = info['topics_with_message_count'][0]['topic_metadata']
    text['offered_qos_profiles'] = bm.qos_string([bm.qos_entry(
        'reliable', 'volatile')])
    assert bm.reader_problems(info, 'humble') == [
        'topic /a: offered_qos_profiles has policy names, not rmw integers: '
        'history, reliability, durability, liveliness']
    assert bm.version_for('humble') == 5 and bm.version_for('kilted') == 9
    with pytest.raises(ValueError, match='writes 5-9'):
        bm.version_for('4')


@pytest.mark.dds
def test_play_a_carla_ros_bridge_bag(ros_domain: int, tmp_path: Path,
                                     rclpy_context: object) -> None:
    """
    A zstd-compressed split sqlite3 bag of role hero replays into a subscriber.

    The player offers the recorded QoS (reliable), so a reliable
    subscriber with a deep queue gets every cloud of an unpaced replay,
    with the recorded points and stamps; the player says which role it
    took and which topics it leaves out, and ends with exit code 0.
    """
    from hil_bridge.interface.codecs import clouds
    from rclpy.executors import SingleThreadedExecutor
    import rclpy
    from rclpy.qos import QoSProfile, ReliabilityPolicy
    from rclpy.serialization import deserialize_message
    from sensor_msgs.msg import PointCloud2
    bag = write_bag(tmp_path / 'hero', storage='sqlite3', parts=2,
                    compression='file', role='hero', frames=FRAMES)
    with Bag(str(bag)) as opened:
        want = [deserialize_message(m.data, PointCloud2)
                for m in opened.messages(['/carla/hero/lidar'])]
    node = rclpy.create_node('hero_sink', context=rclpy_context)
    executor = SingleThreadedExecutor(context=rclpy_context)
    executor.add_node(node)
    got: list = []
    node.create_subscription(PointCloud2, '/carla/hero/lidar', got.append,
                             QoSProfile(depth=100,
                                        reliability=ReliabilityPolicy.RELIABLE))
    proc = subprocess.Popen(
        [sys.executable, '-m', 'hil_bridge.tools.player', str(bag),
         '--rate', '0', '--settle', '0.5', '--wait', '30'], cwd=str(ROOT),
        env=dict(os.environ), stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 60.0
        while time.monotonic() < deadline and proc.poll() is None:
            executor.spin_once(timeout_sec=0.1)
        for _ in range(20):
            executor.spin_once(timeout_sec=0.05)
        out, _ = proc.communicate(timeout=30.0)
    finally:
        if proc.poll() is None:
            proc.kill()
        executor.shutdown()
        node.destroy_node()
    assert proc.returncode == 0, out
    assert 'role hero (from the topic names in the bag' in out
    assert 'not replayed (not published by the simulator PC' in out and \
        '/carla/hero/vehicle_status' in out
    assert 'Traceback' not in out
    assert len(got) == len(want) == FRAMES, out
    for have, rec in zip(got, want):
        assert have.header.stamp == rec.header.stamp
        assert (clouds.cloud_to_xyzi(have) == clouds.cloud_to_xyzi(rec)).all()
