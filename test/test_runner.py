# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""The carla-hil runner: process lists, supervision, MCAP, reports."""

import json
import math
import os
from pathlib import Path
import re
import signal
import subprocess
import sys
import time

from hil_bridge.interface import contract, graph
from hil_bridge.interface.codecs import clouds, stamps
from hil_bridge.tools import cli
from hil_bridge.tools.msg_definitions import dependencies, full_definition
from hil_bridge.tools.report import write_report
from hil_bridge.tools.supervisor import ProcessSpec, Supervisor
from mcap.reader import make_reader
from mcap.writer import Writer
from mcap_ros2.decoder import DecoderFactory
import pytest

HERE = Path(__file__).resolve().parent


def test_processes_match_graph_and_overrides() -> None:
    """The runner starts the graph's nodes with their files and overrides."""
    procs = cli.build_processes('all', 'builtin', 'ci_trackdrive',
                                duration=12.0,
                                sets={'cone_drive_planner': {'mode': 'midline'}})
    specs = graph.profile('all')
    assert [p.name for p in procs] == [s.name for s in specs]
    for proc, spec in zip(procs, specs):
        assert proc.argv[:3] == [sys.executable, '-m',
                                 graph.module_of(spec.executable)]
        assert spec.params_path in proc.argv
        assert f'__node:={spec.name}' in proc.argv
        assert 'use_sim_time:=true' in proc.argv
    bridge = procs[0].argv
    for item in ('backend:=builtin', 'scenario:=ci_trackdrive',
                 'duration:=12.0', 'exit_on_mission_end:=true'):
        assert item in bridge
    planner = [p for p in procs if p.name == 'cone_drive_planner'][0]
    assert 'mode:=midline' in planner.argv
    with pytest.raises(SystemExit, match='allowed: one of cone_drive'):
        cli.build_processes('all', sets={'cone_drive_planner': {'mode': 'x'}})
    with pytest.raises(SystemExit, match='unknown node'):
        cli.build_processes('all', sets={'nope': {'a': '1'}})
    onboard = cli.build_processes('onboard')
    assert 'hil_bridge' not in [p.name for p in onboard]


def test_mission_exit_codes() -> None:
    """Finished is success, DNF fails, a duration limit allows running."""
    assert cli.mission_exit_code({'status': 'finished'}, False) == 0
    assert cli.mission_exit_code({'status': 'DNF'}, False) == 1
    assert cli.mission_exit_code({'status': 'running'}, True) == 0
    assert cli.mission_exit_code({'status': 'running'}, False) == 1
    assert cli.mission_exit_code({'status': 'timeout'}, True) == 1
    assert cli.mission_exit_code(None, False) == 1


def test_set_parsing() -> None:
    """--set NODE.PARAM=VALUE is parsed; malformed items are refused."""
    parsed = cli._parse_sets(['a.b=1', 'a.c=x=y'])
    assert parsed == {'a': {'b': '1', 'c': 'x=y'}}
    with pytest.raises(SystemExit):
        cli._parse_sets(['novalue'])


def test_supervisor_prefixes_and_stops(capsys) -> None:
    """Logs are prefixed; the first exit is reported; stop_all cleans up."""
    lines = []
    sup = Supervisor(on_line=lambda n, line: lines.append((n, line)))
    sup.start(ProcessSpec('quick', [sys.executable, '-c',
                                    'print("hello"); raise SystemExit(3)']))
    sup.start(ProcessSpec('sleeper', [sys.executable, '-c',
                                      'import time; time.sleep(60)']))
    assert sup.first_exit(timeout=20) == 'quick'
    assert sup.returncode('quick') == 3
    t0 = time.monotonic()
    codes = sup.stop_all(grace=2.0)
    assert time.monotonic() - t0 < 10
    assert codes['sleeper'] is not None and codes['sleeper'] != 0
    assert ('quick', 'hello') in lines
    assert '[quick] hello' in capsys.readouterr().out


def test_stop_all_during_imports_prints_no_traceback(capsys) -> None:
    """
    Issue 14: Ctrl-C while a node still imports printed a traceback.

    A process that has written nothing yet (here: a slow import) gets
    SIGTERM, not SIGINT; one that has spoken still gets SIGINT first.
    """
    sup = Supervisor()
    sup.start(ProcessSpec('importing', [sys.executable, '-c',
                                        'import time; time.sleep(60)']))
    sup.start(ProcessSpec('running', [sys.executable, '-c',
                                      'import signal, sys, time\n'
                                      'signal.signal(signal.SIGINT, lambda *a: sys.exit(7))\n'
                                      'print("up", flush=True)\n'
                                      'time.sleep(60)']))
    deadline = time.monotonic() + 20.0
    while 'running' not in sup.spoken and time.monotonic() < deadline:
        time.sleep(0.05)
    codes = sup.stop_all(grace=5.0)
    out = capsys.readouterr().out
    assert codes['importing'] == -signal.SIGTERM, codes
    assert codes['running'] == 7, codes  # its SIGINT handler ran
    assert 'Traceback' not in out and 'KeyboardInterrupt' not in out, out


def test_schemas_for_every_contract_type_decode(tmp_path) -> None:
    """Every contract type gets a schema that mcap_ros2 can decode."""
    from rclpy.serialization import serialize_message
    path = tmp_path / 'all.mcap'
    with open(path, 'wb') as f:
        w = Writer(f)
        w.start(profile='ros2', library='test')
        for i, row in enumerate(t for t in contract.topics().values()
                                if not t.optional):
            sid = w.register_schema(name=row.msg_type, encoding='ros2msg',
                                    data=full_definition(row.msg_type)
                                    .encode())
            cid = w.register_channel(topic=f'/t{i}', message_encoding='cdr',
                                     schema_id=sid)
            w.add_message(channel_id=cid, log_time=i, publish_time=i,
                          data=serialize_message(row.msg_class()()))
        w.finish()
    with open(path, 'rb') as f:
        reader = make_reader(f, decoder_factories=[DecoderFactory()])
        decoded = [d for _, _, _, d in reader.iter_decoded_messages()]
    assert len(decoded) == len([t for t in contract.topics().values()
                                if not t.optional])
    assert 'std_msgs/msg/Header' in dependencies('nav_msgs/msg/Odometry')


def _synthetic_run(path: Path, chunk_size: int = 1024 * 1024) -> None:
    """Write an MCAP with a 20 m straight drive, cones and events."""
    from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
    from geometry_msgs.msg import TwistStamped
    from nav_msgs.msg import Odometry
    import numpy as np
    from rclpy.serialization import serialize_message
    msgs = []
    for k in range(21):
        t = k * 0.5
        odo = Odometry()
        odo.header = stamps.make_header(t, 'map')
        odo.pose.pose.position.x = float(k)
        odo.pose.pose.position.y = 0.3
        odo.pose.pose.orientation.w = 1.0
        odo.twist.twist.linear.x = 2.0
        msgs.append(('odometry', odo, t))
        ctl = TwistStamped()
        ctl.header = stamps.make_header(t, 'ego_vehicle')
        ctl.twist.linear.x = 0.5
        msgs.append(('applied_control', ctl, t))
        cones = clouds.cones_to_cloud(np.array([[5.0, 1.5, 0.0]]), [1],
                                      [0.9], t, 'ego_vehicle')
        msgs.append(('cones', cones, t))
        aeb = DiagnosticArray()
        aeb.header = stamps.make_header(t, 'ego_vehicle')
        aeb.status = [DiagnosticStatus(name='aeb', message='idle', values=[
            KeyValue(key='state', value='idle'),
            KeyValue(key='ttc', value=str(10.0 - t))])]
        msgs.append(('aeb_status', aeb, t))
    xs = np.arange(0.0, 25.0, 5.0)
    gt_xyz = np.array([[x, side, 0.0] for x in xs for side in (1.5, -1.5)])
    gt = clouds.cones_to_cloud(gt_xyz, [1, 2] * len(xs),
                               [1.0] * len(gt_xyz), 0.0, 'map')
    msgs.append(('ground_truth_cones', gt, 0.0))
    ev = DiagnosticArray()
    ev.header = stamps.make_header(4.0, 'map')
    ev.status = [DiagnosticStatus(name='referee/cone_hit', message='cone_hit',
                                  values=[KeyValue(key='x', value='6.0'),
                                          KeyValue(key='y', value='0.2')])]
    msgs.append(('referee_events', ev, 3.0))
    lap = DiagnosticArray()
    lap.header = stamps.make_header(9.0, 'map')
    lap.status = [DiagnosticStatus(name='referee/lap', message='lap', values=[
        KeyValue(key='sim_time', value='9.0'), KeyValue(key='lap', value='1'),
        KeyValue(key='lap_time', value='6.0'),
        KeyValue(key='total_time', value='6.0')])]
    msgs.append(('referee_events', lap, 9.0))
    with open(path, 'wb') as f:
        w = Writer(f, chunk_size=chunk_size)
        w.start(profile='ros2', library='test')
        chans = {}
        for key, msg, t in msgs:
            row = contract.topic(key)
            if key not in chans:
                sid = w.register_schema(name=row.msg_type, encoding='ros2msg',
                                        data=full_definition(row.msg_type)
                                        .encode())
                chans[key] = w.register_channel(topic=row.resolve(),
                                                message_encoding='cdr',
                                                schema_id=sid)
            w.add_message(channel_id=chans[key], log_time=int(t * 1e9),
                          publish_time=int(t * 1e9),
                          data=serialize_message(msg))
        w.finish()


def test_report_from_recording(tmp_path) -> None:
    """A report has the right figures, its plots and one HTML page."""
    path = tmp_path / 'run.mcap'
    _synthetic_run(path)
    out = tmp_path / 'report'
    html_path = write_report(str(path), str(out), {'status': 'finished'})
    figures = json.loads((out / 'metrics.json').read_text())
    assert figures['distance_m'] == pytest.approx(20.0)
    assert figures['sim_duration_s'] == pytest.approx(10.0)
    assert figures['max_speed_mps'] == pytest.approx(2.0)
    assert figures['aeb_min_ttc_s'] == pytest.approx(0.0)
    assert [e['kind'] for e in figures['events']] == ['cone_hit', 'lap']
    assert figures['cone_messages']['fused'] == 21
    assert figures['referee_result'] == {'status': 'finished'}
    # the car drove 0.3 m left of the centre line between the cone pairs
    assert figures['cross_track_error_m']['mean'] == pytest.approx(0.3)
    # signed: + towards the blue cones (left, y = +1.5)
    assert figures['cross_track_error_m']['mean_signed'] == pytest.approx(0.3)
    lap = figures['laps'][0]
    assert lap['time_s'] == 6.0 and len(lap['splits_s']) == 3
    assert lap['cones_hit'] == 1  # the hit at t = 4 s, in the lap 3-9 s
    # range error of the detection (5, 1.5) m ahead: against the truth
    # cone 5 m on (true range hypot(5, 1.2)) when the car is at x = 0, 5,
    # 10, 15 m; the one 1 m short of it (hypot(6, 1.2)) at x = 4, 9, 14 m
    from hil_bridge.tools import report
    run = report.load_run(str(path))
    row = report.recall_by_range(run, 'fused')[1]  # 5-10 m
    good = math.hypot(5, 1.5) - math.hypot(5, 1.2)
    far = math.hypot(5, 1.5) - math.hypot(6, 1.2)
    assert row['range_error_median_m'] == pytest.approx(good)
    assert row['range_bias_m'] == pytest.approx((4 * good + 3 * far) / 7)
    assert sum(lap['splits_s']) == pytest.approx(6.0, abs=0.01)
    # the track plot fills the truth cones a detection reached: (k + 5,
    # 1.8) in map from x = k falls on the blue cones at 5, 10, 15, 20 m;
    # the other 17 detections have no truth cone within 0.5 m
    _mxy, _mcls, hit, false = report.detected_cones(run)
    gxy = run['ground_truth'][0]
    assert sorted(gxy[hit, 0].tolist()) == [5.0, 10.0, 15.0, 20.0]
    assert (gxy[hit, 1] > 0).all() and int(false.sum()) == 17
    # the one detected cone (5, 1.5 in the car frame) is the truth cone
    # at x = car + 5 while it is in view
    fused = figures['detection']['fused']
    assert sum(r['matched'] for r in fused) > 0
    assert all(r['false'] <= r['detections'] for r in fused)
    text = (out / 'metrics.json').read_text()
    assert re.search(r'\d\.\d{4,}', text) is None  # rounded numbers
    for png in ('track.png', 'timeline.png', 'detection.png'):
        data = (out / png).read_bytes()
        assert data[:4] == b'\x89PNG' and len(data) > 10_000
    page = Path(html_path).read_text()
    assert page.count('data:image/png;base64,') == 3
    assert 'blue cones (truth)' not in page  # legend is in the PNG
    assert '<td>cones hit</td>' in page
    assert 'frames covered' in page and 'range error (m)' in page
    # the command line: `carla-hil report BAG --out DIR`; a bad bag is one line
    assert report.main([str(path), '--out', str(tmp_path / 'cli')]) == 0
    assert (tmp_path / 'cli' / 'report.html').is_file()
    assert report.main([str(tmp_path / 'nope'), '--out', str(tmp_path / 'x')]) == 2


def test_truncated_recording_still_reads(tmp_path) -> None:
    """A recording cut short (killed recorder) yields its whole messages."""
    from hil_bridge.tools.mcap_io import iter_raw
    path = tmp_path / 'run.mcap'
    _synthetic_run(path, chunk_size=2048)
    full = [m.log_time for _, _, m in iter_raw(str(path))]
    data = path.read_bytes()
    cut = tmp_path / 'cut.mcap'
    cut.write_bytes(data[:len(data) // 5])
    part = [m.log_time for _, _, m in iter_raw(str(cut))]
    assert len(full) == 87
    assert 0 < len(part) < len(full)
    from collections import Counter
    have, want = Counter(part), Counter(full)
    assert all(have[k] <= want[k] for k in have)


@pytest.mark.dds
def test_record_and_play_round_trip(ros_domain, tmp_path) -> None:
    """
    The recorder writes what a process publishes; play republishes it.

    Recorded with ``--bag-version humble``: metadata version 5, which
    Humble's rosbag2 reads (bag_metadata.reader_problems), and rosbags.
    """
    import rclpy
    from rclpy.executors import SingleThreadedExecutor
    from sensor_msgs.msg import PointCloud2
    from hil_bridge.tools.bag_metadata import mcap_path
    bag = tmp_path / 'rec'
    rec = subprocess.Popen([sys.executable, '-m', 'hil_bridge.tools.recorder',
                            str(bag), '--bag-version', 'humble'],
                           env=dict(os.environ),
                           stdout=subprocess.PIPE, text=True)
    assert 'ready:' in rec.stdout.readline()  # subscribed
    pub = subprocess.Popen([sys.executable, str(HERE / 'codec_publisher.py')],
                           env=dict(os.environ))
    # on a loaded machine the publisher may take long to start: wait until
    # its topics exist in the graph (the recorder discovers them the same
    # way), then give the recorder 5 s of messages
    probe_ctx = rclpy.context.Context()
    rclpy.init(context=probe_ctx, domain_id=ros_domain)
    probe = rclpy.create_node('rec_probe', context=probe_ctx)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and '/codec_test/cloud' not in dict(
            probe.get_topic_names_and_types()):
        time.sleep(0.2)
    probe.destroy_node()
    rclpy.shutdown(context=probe_ctx)
    time.sleep(5.0)
    pub.terminate()
    pub.wait(timeout=10)
    rec.send_signal(2)
    assert rec.wait(timeout=30) == 0
    with open(mcap_path(str(bag)), 'rb') as f:
        reader = make_reader(f, decoder_factories=[DecoderFactory()])
        topics = [c.topic for _, c, _, _ in reader.iter_decoded_messages()]
    assert topics.count('/codec_test/cloud') >= 3
    assert '/codec_test/image' in topics
    import yaml
    from hil_bridge.tools.bag_metadata import reader_problems
    from rosbags.rosbag2 import Reader
    info = yaml.safe_load((bag / 'metadata.yaml').read_text())[
        'rosbag2_bagfile_information']
    assert info['version'] == 5 and 'ros_distro' not in info
    assert reader_problems(info, 'humble') == []
    with Reader(bag) as reader:
        assert sum(c.msgcount for c in reader.connections
                   if c.topic == '/codec_test/cloud') == \
            topics.count('/codec_test/cloud')
    # play everything back into a subscriber of this process
    context = rclpy.context.Context()
    rclpy.init(context=context, domain_id=ros_domain)
    try:
        node = rclpy.create_node('play_sink', context=context)
        got = []
        node.create_subscription(PointCloud2, '/codec_test/cloud',
                                 got.append, contract.qos_profile('sensor'))
        executor = SingleThreadedExecutor(context=context)
        executor.add_node(node)
        player = subprocess.Popen([sys.executable, '-m', 'hil_bridge.tools.player',
                                   str(bag), '--all', '--rate', '1',
                                   '--wait', '10'],
                                  env=dict(os.environ))
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and player.poll() is None:
            executor.spin_once(timeout_sec=0.1)
        for _ in range(10):
            executor.spin_once(timeout_sec=0.05)
        assert player.wait(timeout=10) == 0
        executor.shutdown()
        node.destroy_node()
    finally:
        rclpy.shutdown(context=context)
    assert got, 'no cloud played back'
    import codec_publisher
    seq = int(stamps.sec_from_stamp(got[0].header.stamp))
    assert (clouds.cloud_to_xyzi(got[0]) ==
            codec_publisher.cloud_for(seq)).all()


def test_track_sweep_suite_and_track_command(capsys) -> None:
    """Suites load (details: test_batch.py); carla-hil track check."""
    from hil_bridge.tools import suites
    assert 'track_sweep' in suites.suites() and 'ci_trackdrive' in \
        suites.scenario_names()
    data = Path(__file__).resolve().parent / 'data' / 'tracks'
    assert cli.main(['track', 'check', str(data / 'fssim_oval.yaml')]) == 0
    assert 'fssim_oval (fssim)' in capsys.readouterr().out


def test_scenario_node_params(tmp_path) -> None:
    """Scenario node_params become overrides; --set wins over them."""
    procs = {p.name: p.argv for p in cli.build_processes(
        'all', scenario='ccrs_30')}
    assert 'cruise:=true' in procs['hil_bridge']
    assert 'rig:=car_rig.yaml' in procs['lidar_cone_detector']
    assert 'vehicle_profile:=passenger_car' in procs['aeb_controller']
    procs = {p.name: p.argv for p in cli.build_processes(
        'onboard', scenario='ccrs_30',
        sets={'lidar_cone_detector': {'mode': 'scan'}})}
    assert 'mode:=scan' in procs['lidar_cone_detector']
    assert 'mode:=cloud' not in procs['lidar_cone_detector']
    assert cli.ros_value([True, 1.5, 'a']) == '[true,1.5,a]'
    bad = tmp_path / 'bad.yaml'
    bad.write_text((Path(__file__).resolve().parents[1] / 'config' /
                    'scenarios' / 'ccrs_30.yaml').read_text()
                   + 'extra_node: 3\n')
    with pytest.raises(ValueError, match='extra_node'):
        cli.scenario_node_params(str(bad))


def test_set_values_take_the_declared_type() -> None:
    """real_time_factor=0 becomes 0.0; wrong types are refused in one line."""
    from hil_bridge.interface.params import coerce_text
    assert coerce_text('rtf', 1.0, '0') == '0.0'
    assert coerce_text('n', 3, '2.0') == '2'
    assert coerce_text('rig', 'a.yaml', '123') == "'123'"
    assert coerce_text('l', [0.5], '[0,1]') == '[0.0,1.0]'
    assert coerce_text('b', True, 'false') == 'false'
    with pytest.raises(ValueError, match='parameter n: .* not an integer'):
        coerce_text('n', 3, '2.5')
    with pytest.raises(ValueError, match='not a number'):
        coerce_text('x', 1.0, 'fast')
    procs = {p.name: p.argv for p in cli.build_processes(
        'sim_pc', sets={'hil_bridge': {'real_time_factor': '0'}})}
    assert 'real_time_factor:=0.0' in procs['hil_bridge']
    with pytest.raises(SystemExit, match='no such parameter'):
        cli.build_processes('sim_pc', sets={'hil_bridge': {'nope': '1'}})
    with pytest.raises(SystemExit, match='hil_bridge.seed'):
        cli.build_processes('sim_pc', sets={'hil_bridge': {'seed': 'x'}})


def test_recording_table_counts_missing() -> None:
    """Missing = published - recorded; excluded topics are not missing."""
    rows = cli.recording_table(
        {'/clock': 10, '/lidar': 10, '/img': 10},
        {'/clock': 10, '/lidar': 7, '/cones': 9}, excluded=['/img'])
    by = {r['topic']: r for r in rows}
    assert by['/lidar']['missing'] == 3 and by['/clock']['missing'] == 0
    assert by['/cones']['published'] is None
    assert by['/img']['recorded'] is None
    text = '\n'.join(cli.format_recording(rows))
    assert 'recorded 17 of 20 messages' in text and '3 missing' in text
    assert 'WARNING' not in text
    # --record-topics: what it leaves out is not missing
    rows = cli.recording_table({'/clock': 10, '/lidar': 10, '/img': 10},
                               {'/clock': 10, '/lidar': 9},
                               only=['/clock', '/l*'])
    by = {r['topic']: r for r in rows}
    assert by['/img']['recorded'] is None and by['/lidar']['missing'] == 1
    assert 'recorded 19 of 20 messages' in '\n'.join(cli.format_recording(rows))
    # more recorded than published: another publisher on the domain
    rows = cli.recording_table({'/clock': 10}, {'/clock': 12})
    assert rows[0]['missing'] == 0 and rows[0]['extra'] == 2
    text = '\n'.join(cli.format_recording(rows))
    assert 'WARNING: 2 messages more than the bridge published on 1 topics ' \
        '(/clock)' in text


@pytest.mark.dds
def test_progress_process_prints_the_line_and_ends_on_sigint(ros_domain: int) -> None:
    """
    The progress line comes from a process of its own, fed over DDS.

    Issue 17: the runner's in-process monitor hung in rclpy
    ``destroy_publisher`` with the GIL held, so a finished run ended only
    when its batch killed it. Now the runner starts
    ``python -m hil_bridge.tools.progress_node`` like a node: its lines reach
    ``on_line`` but not the log, they show what was published (sim time,
    speed, a lap, a cone hit), and SIGINT ends it with 0 within seconds.
    """
    import rclpy
    from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
    from hil_bridge.tools.progress import PROGRESS_PREFIX
    import io
    got: list = []
    log = io.StringIO()
    sup = Supervisor(out=log, on_line=lambda name, line: got.append(line))
    sup.start(ProcessSpec('progress', [sys.executable, '-m', 'hil_bridge.tools.progress_node',
                                       '--laps', '2', '--period', '0.2'],
                          essential=False, hide=PROGRESS_PREFIX))
    ctx = rclpy.context.Context()
    rclpy.init(context=ctx)
    node = rclpy.create_node('progress_feeder', context=ctx)
    try:
        pubs = {k: contract.create_publisher(node, k)
                for k in ('clock', 'odometry', 'referee_events')}
        clock = pubs['clock'].msg_type()
        odom = pubs['odometry'].msg_type()
        events = DiagnosticArray(status=[DiagnosticStatus(
            name='referee/lap', values=[KeyValue(key='lap', value='1'),
                                        KeyValue(key='lap_time', value='41.25'),
                                        KeyValue(key='sim_time', value='42.0')]),
            DiagnosticStatus(name='referee/cone_hit')])
        deadline = time.monotonic() + 60.0
        want = ('lap 2/2', 'last 41.25 s', '36.0 km/h', 'cones hit 1', 'sim   43.0 s')
        line, sent = '', False
        while time.monotonic() < deadline and not all(w in line for w in want):
            clock.clock.sec = 43
            odom.twist.twist.linear.x = 10.0
            pubs['clock'].publish(clock)
            pubs['odometry'].publish(odom)
            if not sent and pubs['referee_events'].get_subscription_count():
                pubs['referee_events'].publish(events)       # once: one cone hit
                sent = True
            time.sleep(0.2)
            lines = [g for g in got if g.startswith(PROGRESS_PREFIX)]
            line = lines[-1] if lines else ''
        assert all(w in line for w in want), (line, got[-5:])
        assert PROGRESS_PREFIX not in log.getvalue()       # not in the run's log
        # and the runner itself never loads rclpy (nothing in it to hang)
        check = subprocess.run(
            [sys.executable, '-c', 'import sys; from hil_bridge.tools import cli; '
             'cli._progress_spec(cli.make_parser().parse_args(["run"])); '
             'print(sorted(m for m in sys.modules if m.startswith("rcl")))'],
            cwd=str(HERE.parent), capture_output=True, text=True, timeout=60)
        assert check.stdout.strip() == '[]', (check.stdout, check.stderr[-2000:])
        t0 = time.monotonic()
        codes = sup.stop_all(grace=10.0)
        assert codes['progress'] == 0, (codes, log.getvalue()[-2000:])
        assert time.monotonic() - t0 < 10.0
    finally:
        node.destroy_node()
        rclpy.try_shutdown(context=ctx)
        sup.stop_all(grace=1.0)


@pytest.mark.parametrize('period', ['0', '-1', 'nan', 'inf'])
def test_progress_process_refuses_a_bad_period(period: str) -> None:
    """``--period`` must be finite and > 0: a clear usage error (exit 2), no node."""
    from hil_bridge.tools import progress_node
    with pytest.raises(SystemExit) as err:
        progress_node.main(['--period', period])
    assert err.value.code == 2


def test_progress_line() -> None:
    """The live line: lap k/N, lap time, speed, cones, sim time, RTF, ETA."""
    from hil_bridge.tools.progress import RunProgress
    p = RunProgress(laps_required=3)
    p.on_clock(0.0, 100.0)
    p.on_speed(5.0)
    assert 'lap 1/3' in p.line() and 'ETA -' in p.line()
    p.on_clock(20.0, 110.0)  # 2x real time
    p.on_event('lap', {'sim_time': '20.0', 'lap': '1', 'lap_time': '20.0'})
    p.on_event('cone_hit', {'sim_time': '20.0'})
    p.on_clock(30.0, 115.0)
    line = p.line()
    assert 'lap 2/3  10.0 s' in line and 'last 20.00 s' in line
    assert '18.0 km/h' in line and 'cones hit 1' in line
    assert 'RTF 2.00' in line
    # 2 laps left at 20 s minus 10 s done = 30 s of sim time at 2x = 15 s
    assert p.eta() == pytest.approx(15.0)
    assert 'ETA 0:15' in line
    # the laps left take as long as the last one (lap 1 explores slowly)
    p.on_clock(36.0, 118.0)
    p.on_event('lap', {'sim_time': '36.0', 'lap': '2', 'lap_time': '16.0'})
    assert p.eta() == pytest.approx(16.0 / 2.0)


def test_run_exit_code_pass_through() -> None:
    """2, 3 and 130 of any node pass through; a crash or a signal is 2."""
    assert cli.run_exit_code('hil_bridge', 0, {'status': 'finished'}, False) == 0
    assert cli.run_exit_code('hil_bridge', 3, None, False) == 3
    assert cli.run_exit_code('vision_cone_detector', 2, None, False) == 2
    assert cli.run_exit_code('cone_fusion', 130, None, False) == 130
    assert cli.run_exit_code('cone_fusion', 1, None, False) == 2
    assert cli.run_exit_code('cone_fusion', -9, None, False) == 2
    assert cli.run_exit_code('cone_fusion', 0, None, False) == 2


#: start-up lines of the onboard nodes (each logs once its imports are done)
_NODES_UP = ('[cone_drive_planner] [', '[lidar_cone_detector] [',
             '[vision_cone_detector] [', '[cone_fusion] [', '[aeb_controller] [')


@pytest.mark.one_distro
@pytest.mark.dds
@pytest.mark.slow
def test_ctrl_c_exits_130_in_every_profile(ros_domain, tmp_path) -> None:
    """
    Ctrl-C (SIGINT to the runner) gives exit code 130 in every profile.

    ``sim_pc`` and ``onboard`` run together in the test's domain (the two
    machines of a HIL rig), ``all`` in a second one; each is interrupted
    once its nodes are up. The ``all`` run still ends with its result table and
    the report of what ran until then.
    """
    import signal
    import threading
    from hil_bridge.tools.domains import lease_domain
    base = [sys.executable, '-m', 'hil_bridge.tools.cli', 'run',
            '--scenario', 'ci_trackdrive', '--progress-every', '1']
    rig = ['--set', 'hil_bridge.rig=ci_rig.yaml',
           '--set', 'vision_cone_detector.rig=ci_rig.yaml']
    other = lease_domain()
    runs = {
        'sim_pc': (base + ['--profile', 'sim_pc', '--no-report'] + rig,
                   ('builtin backend ready',), ros_domain),
        'onboard': (base + ['--profile', 'onboard'] + rig, _NODES_UP,
                    ros_domain),
        'all': (base + ['--profile', 'all', '--out', str(tmp_path / 'all')]
                + rig, _NODES_UP + ('builtin backend ready',), other.domain)}
    procs, lines = {}, {}
    try:
        for name, (argv, _ready, domain) in runs.items():
            env = dict(os.environ, ROS_DOMAIN_ID=str(domain))
            procs[name] = subprocess.Popen(
                argv, cwd=str(HERE.parent), env=env, stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT, text=True, start_new_session=True)
            lines[name] = []
            threading.Thread(target=lambda p=procs[name], out=lines[name]:
                             out.extend(p.stdout), daemon=True).start()
        deadline = time.monotonic() + 120.0
        waiting = set(runs)
        while waiting and time.monotonic() < deadline:
            for name in list(waiting):
                assert procs[name].poll() is None, ''.join(lines[name])[-3000:]
                text = ''.join(lines[name])
                if all(marker in text for marker in runs[name][1]):
                    waiting.discard(name)
            time.sleep(0.2)
        assert not waiting, {n: ''.join(lines[n])[-1500:] for n in waiting}
        time.sleep(1.0)
        for proc in procs.values():
            proc.send_signal(signal.SIGINT)
        codes = {name: proc.wait(timeout=120.0) for name, proc in procs.items()}
    finally:
        for proc in procs.values():
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        other.release()
    time.sleep(0.5)  # the reader threads take the last lines
    outs = {name: ''.join(x) for name, x in lines.items()}
    assert codes == {'sim_pc': 130, 'onboard': 130, 'all': 130}, \
        {n: o[-1500:] for n, o in outs.items()}
    for name, out in outs.items():
        assert '[carla-hil] exit code 130' in out, out[-2000:]
        assert 'Traceback' not in out, out[-3000:]
    assert 'exit code          130' in outs['all']  # in the result table
    assert (tmp_path / 'all' / 'report.html').is_file(), outs['all'][-2000:]
