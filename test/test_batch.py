# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""Scenario batches on Ray: suites, criteria, retry of a killed worker, Ctrl-C."""

import csv
import io
import os
from pathlib import Path
import shutil
import signal
import subprocess
import sys
import tarfile
import time
from typing import Dict, List, NamedTuple
import uuid

from hil_bridge.tools import batch, suites
import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_judge_criteria() -> None:
    """Each criterion can fail on its own; a lost run never passes."""
    row = {'status': 'finished', 'exit_code': 0, 'collisions': 0,
           'brake_requests': 0, 'cones_hit': 1, 'max_lap_time_ratio': 1.4}
    assert batch.judge(row, {'status': 'finished'}) == (True, 'ok')
    assert batch.judge(row, {'status': ['timeout', 'finished'],
                             'no_collision': True, 'no_brake': True,
                             'max_cones_hit': 1,
                             'max_lap_time_ratio': 1.5})[0]
    assert batch.judge(row, {'status': 'DNF'}) == (False, 'status finished')
    assert not batch.judge(dict(row, collisions=1), {'no_collision': True})[0]
    assert not batch.judge(dict(row, collisions=''), {'no_collision': True})[0]
    assert not batch.judge(dict(row, brake_requests=3), {'no_brake': True})[0]
    assert not batch.judge(row, {'max_cones_hit': 0})[0]
    assert not batch.judge(dict(row, max_lap_time_ratio=''),
                           {'max_lap_time_ratio': 2.0})[0]
    ok, why = batch.judge({'lost': 'NodeDiedError'}, {})
    assert not ok and 'NodeDiedError' in why


def test_progress_line() -> None:
    """The one line counts done/failed/running and extrapolates the ETA."""
    p = batch.BatchProgress(total=4, start=100.0)
    assert 'ETA -' in p.line(110.0)
    p.passed, p.failed, p.running, p.retried = 1, 1, 2, 1
    text = p.line(120.0)
    assert text.startswith('batch 2/4 done | 1 passed | 1 failed | 2 running')
    assert '1 retried' in text and 'elapsed 0:20' in text
    assert p.eta(120.0) == pytest.approx(20.0)


def test_pack_unpack(tmp_path: Path) -> None:
    """Run directories travel as tar.gz; big files stay; no path escapes."""
    src = tmp_path / 'run'
    (src / 'bag').mkdir(parents=True)
    (src / 'result.json').write_text('{"status": "finished"}')
    (src / 'bag' / 'data.mcap').write_bytes(b'x' * 10)
    (src / 'huge.bin').write_bytes(b'')
    os.truncate(src / 'huge.bin', batch.MAX_FILE_BYTES + 1)
    archive, left = batch.pack(str(src))
    assert left == 'huge.bin'
    batch.unpack(archive, str(tmp_path / 'out'))
    assert (tmp_path / 'out' / 'bag' / 'data.mcap').read_bytes() == b'x' * 10
    assert not (tmp_path / 'out' / 'huge.bin').exists()
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode='w:gz') as tar:
        info = tarfile.TarInfo('../escaped.txt')
        info.size = 2
        tar.addfile(info, io.BytesIO(b'no'))
    batch.unpack(buf.getvalue(), str(tmp_path / 'out2'))
    assert not (tmp_path / 'escaped.txt').exists()


def test_referee_result_and_row() -> None:
    """The last REFEREE_RESULT line of a run's log becomes the row."""
    log = ('[hil_bridge] REFEREE_RESULT {"status": "DNF"}\nnoise\n'
           '[hil_bridge] REFEREE_RESULT {"status": "finished", "laps": 2, '
           '"lap_times": [20.5, 18.25], "lap_time_ratio": [1.2, null], '
           '"cones_hit": 1, "collisions": [], "penalty_time": 2.0, '
           '"lockstep_timeouts": 1, "resent_frames": 3}\n')
    row = batch.run_row(0, batch.referee_result(log), 0)
    assert row['status'] == 'finished' and row['laps'] == 2
    assert row['lockstep_timeouts'] == 1 and row['resent_frames'] == 3
    assert row['lap_times'] == '20.50 18.25'
    assert row['max_lap_time_ratio'] == 1.2 and row['collisions'] == 0
    assert batch.run_row(2, batch.referee_result('crash'))['status'] == \
        'no result'


def test_suites_expand() -> None:
    """Every suite expands; sweep and NCAP matrix have the expected runs."""
    for name in suites.suites():
        jobs, _ = suites.expand(name)
        assert jobs and all(j.cpus > 0 for j in jobs), name
    jobs, criteria = suites.expand('track_sweep')
    assert len(jobs) == 40 and criteria['status'] == 'finished'
    combos = set()
    for job in jobs:
        sets = dict(item.split('=', 1) for item in job.sets)
        lidar = sets.get('cone_fusion.use_vision') == 'false'
        assert job.name.endswith('_lidar' if lidar else '_fused')
        combos.add((sets['hil_bridge.track_seed'], sets['hil_bridge.seed'],
                    lidar))
    assert len(combos) == 40 and len({c[0] for c in combos}) == 20
    small, _ = suites.expand('track_sweep', {'tracks': 3, 'seeds': [0, 1],
                                             'laps': 1})
    assert len(small) == 12 and 'laps: 1' in small[0].scenario_yaml
    full, _ = suites.expand('ncap_full')
    assert len(full) == 47 and all(j.scenario_yaml for j in full)
    fa = [j for j in full if j.name.startswith('fa_')]
    assert fa and all(j.criteria.get('no_brake') for j in fa)
    assert all(j.criteria['no_collision'] for j in full)
    assert 'cruise: true' in full[0].scenario_yaml
    inproc, criteria = suites.expand('ncap', {'quick': True})
    assert len(inproc) == 20 and {j.kind for j in inproc} == {'ncap'}
    assert suites.select(full, ['ccrs_2?_km_h_100']) == \
        [j for j in full if j.name in ('ccrs_20_km_h_100', 'ccrs_25_km_h_100')]
    with pytest.raises(SystemExit, match='unknown suite'):
        suites.expand('nope')


def test_scenario_jobs(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """--scenarios: names stay names, a file of this host travels as text."""
    own = tmp_path / 'My Test.yaml'
    own.write_text('name: my_test\n')
    named, shipped = suites.scenario_jobs(['acceleration', str(own)])
    assert (named.name, named.scenario, named.scenario_yaml) == \
        ('acceleration', 'acceleration', '')
    assert shipped.name == 'my_test' and shipped.scenario_yaml == 'name: my_test\n'
    assert named.criteria == {'status': 'finished'}
    with pytest.raises(SystemExit, match='not found'):
        suites.scenario_jobs(['no_such_scenario'])
    assert suites.main(['run', 'ci', '--jobs', '0']) == 2  # bad configuration
    assert '--jobs must be at least 1' in capsys.readouterr().err


def test_summary_files(tmp_path: Path) -> None:
    """summary.md names the criteria and verdicts; CSV and PNG are written."""
    rows = [{'name': 'a', 'pass': True, 'why': 'ok', 'status': 'finished',
             'wall_s': 3.0, 'attempts': 1, 'retried': ''},
            {'name': 'b', 'pass': False, 'why': 'status DNF', 'status': 'DNF',
             'wall_s': 5.0, 'attempts': 2, 'retried': 'WorkerCrashedError'}]
    suites.write_summary(rows, str(tmp_path), 'demo', 'status finished', 9.0)
    md = (tmp_path / 'summary.md').read_text()
    assert '2 runs: 1 passed, 1 failed, 1 retried; wall time 9.0 s' in md
    assert 'Pass criteria: status finished.' in md
    assert '| b | FAIL | status DNF | DNF |' in md
    head = (tmp_path / 'summary.csv').read_text().splitlines()[0]
    assert head.startswith('name,pass,why,status,')
    assert (tmp_path / 'summary.png').read_bytes()[:4] == b'\x89PNG'


# ----------------------------------------------------------- on local Ray
def _cli(args: List[str], env: Dict[str, str],
         sigint_ignored: bool = False) -> 'subprocess.Popen[str]':
    """Start ``carla-hil scenarios run ARGS`` (SIGINT ignored: as a background job would)."""
    def ignore() -> None:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    return subprocess.Popen(
        [sys.executable, '-m', 'hil_bridge.tools.cli', 'scenarios', 'run',
         *args], cwd=str(ROOT), env=env, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True, preexec_fn=ignore if sigint_ignored else None)


class _Proc(NamedTuple):
    """A live process as /proc shows it."""

    pid: int
    ppid: int
    environ: bytes
    cmdline: str


def _procs() -> List[_Proc]:
    """Return the live processes but zombies (pid, parent, environment, command line)."""
    found = []
    for pid in os.listdir('/proc'):
        if not pid.isdigit():
            continue
        try:
            with open(f'/proc/{pid}/stat', encoding='utf-8') as f:
                state, ppid = f.read().rsplit(')', 1)[1].split()[:2]
            if state == 'Z':
                continue
            with open(f'/proc/{pid}/environ', 'rb') as f:
                environ = f.read()
            with open(f'/proc/{pid}/cmdline', 'rb') as f:
                cmdline = f.read().replace(b'\0', b' ').decode(errors='replace')
        except (OSError, ValueError):
            continue
        found.append(_Proc(int(pid), int(ppid), environ, cmdline))
    return found


def _tagged(tag: str) -> List[str]:
    """Return the command lines of the live processes carrying ``tag``."""
    return [p.cmdline[:120] for p in _procs() if tag.encode() in p.environ]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    return True


def _env(tag: str, **extra: str) -> Dict[str, str]:
    env = dict(os.environ, CARLA_HIL_TEST_TAG=tag, PYTHONUNBUFFERED='1',
               **extra)
    env.pop('RAY_ADDRESS', None)
    return env


#: the shortest full-stack cases; the second one's worker is killed once
CASES = ['ccrs_30_km_h_100', 'ccrs_20_km_h_100']


@pytest.mark.one_distro
def test_batch_two_concurrent_runs_one_worker_killed(ros_domain: int,
                                                     tmp_path: Path) -> None:
    """Two full-stack runs at once on local Ray; a killed worker's run is retried."""
    tag = uuid.uuid4().hex
    out = tmp_path / 'batch'
    proc = _cli(['ncap_full', '--param', 'quick=true', '--only', *CASES,
                 '--jobs', '2', '--out', str(out)],
                _env(tag, **{batch.KILL_ONCE_ENV: CASES[1],
                             batch.KILL_AFTER_ENV: '1'}))
    text, _ = proc.communicate(timeout=240)
    assert proc.returncode == 0, text[-3000:]
    with open(out / 'summary.csv', encoding='utf-8') as f:
        rows = {r['name']: r for r in csv.DictReader(f)}
    assert sorted(rows) == sorted(CASES)
    kept, killed = rows[CASES[0]], rows[CASES[1]]
    assert kept['attempts'] == '1' and kept['retried'] == ''
    assert killed['attempts'] == '2' and 'WorkerCrashedError' in killed['retried']
    assert all(r['pass'] == 'True' and r['status'] == 'finished'
               for r in rows.values())
    # the two ran at the same time on this host, in different domains
    assert float(kept['started']) < float(killed['ended'])
    assert float(killed['started']) < float(kept['ended'])
    assert kept['domain'] != killed['domain']
    for name in CASES:
        for item in ('report.html', 'result.json', 'log.txt', 'scenario.yaml'):
            assert (out / name / item).is_file(), (name, item)
    assert '1 retried' in (out / 'summary.md').read_text()
    # the killed worker's scratch directory was removed by a later run
    left = [n for n in os.listdir(batch.scratch_dir())
            if n.split('_')[0].isdigit() and not _alive(int(n.split('_')[0]))]
    assert left == []
    time.sleep(0.5)
    assert _tagged(tag) == []


def test_batch_ctrl_c_leaves_no_process(ros_domain: int,
                                        tmp_path: Path) -> None:
    """
    SIGINT while runs are going: exit 130, a summary, no process of the batch left.

    The batch starts with SIGINT ignored, as a background job of a
    non-interactive shell inherits it (Python then installs no
    KeyboardInterrupt handler: the batch ran to its end and exited 0).
    """
    tag = uuid.uuid4().hex
    proc = _cli(['ncap_full', '--param', 'quick=true', '--only', CASES[1],
                 '--out', str(tmp_path / 'batch')], _env(tag), sigint_ignored=True)
    deadline = time.monotonic() + 90.0
    running: List[str] = []
    while time.monotonic() < deadline and proc.poll() is None:
        running = [c for c in _tagged(tag) if 'aeb_controller' in c]
        if running:
            break
        time.sleep(0.3)
    assert running, 'the run never started its nodes'
    proc.send_signal(signal.SIGINT)
    text, _ = proc.communicate(timeout=60)
    assert proc.returncode == 130, text[-2000:]
    # the summary names the run that was cancelled
    summary = (tmp_path / 'batch' / 'summary.md').read_text(encoding='utf-8')
    assert 'interrupted: 0 of 1 runs done' in summary, summary
    assert f'{CASES[1]}' in summary and 'cancelled (Ctrl-C)' in summary, summary
    assert (tmp_path / 'batch' / 'summary.csv').is_file()
    deadline = time.monotonic() + 15.0
    while _tagged(tag) and time.monotonic() < deadline:
        time.sleep(0.3)
    assert _tagged(tag) == []


def _cluster_pids(temp: str) -> List[int]:
    """
    Return the processes of the Ray cluster in ``temp`` and their children.

    A cluster's processes carry its temp directory in their command line;
    never this process or its ancestors.
    """
    procs = _procs()
    parents = {p.pid: p.ppid for p in procs}
    mine = {p.pid for p in procs if temp in p.cmdline}
    grown = True
    while grown:
        more = {pid for pid, ppid in parents.items() if ppid in mine} - mine
        mine |= more
        grown = bool(more)
    pid = os.getpid()
    while pid > 1:
        mine.discard(pid)
        pid = parents.get(pid, 1)
    return sorted(mine)


def _stop_cluster(temp: str, grace: float = 10.0) -> None:
    """SIGTERM the cluster's processes, SIGKILL what is left after ``grace`` s."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        pids = _cluster_pids(temp)
        for pid in pids:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + grace
        while pids and _cluster_pids(temp) and time.monotonic() < deadline:
            time.sleep(0.2)


@pytest.mark.one_distro
def test_batch_on_a_cluster_by_address(ros_domain: int, tmp_path: Path) -> None:
    """
    ``--address``: a cluster started as on a head node runs a full-stack case.

    ``ray start --head`` (its own processes, not the driver's instance,
    token authentication on as Ray 2.60 sets it); the batch connects by
    address (it failed on the token before: Ray's client does not send it
    without ``RAY_AUTH_MODE=token``), the worker imports the project
    through the runtime environment, runs the whole graph, the run
    directory comes back. Its processes are stopped at the end (not by
    ``ray stop``, which ends every Ray instance on the machine).
    """
    import socket
    import tempfile
    ray_bin = str(Path(sys.executable).with_name('ray'))
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        port = s.getsockname()[1]
    temp = tempfile.mkdtemp(prefix='rayc', dir='/tmp')  # short socket paths
    tag = uuid.uuid4().hex
    env = _env(tag, RAY_USAGE_STATS_ENABLED='0')
    env.pop('PYTHONPATH', None)  # the cluster gets it from the batch
    head = subprocess.run(
        [ray_bin, 'start', '--head', '--port', str(port), '--num-cpus', '2',
         '--include-dashboard=false', '--temp-dir', temp,
         '--disable-usage-stats'], env=env, cwd=temp, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True,
        timeout=180)
    try:
        assert head.returncode == 0, head.stdout[-3000:]
        out = tmp_path / 'batch'
        proc = _cli(['ncap_full', '--param', 'quick=true', '--only', CASES[1],
                     '--address', f'127.0.0.1:{port}', '--out', str(out)],
                    _env(tag))
        text, _ = proc.communicate(timeout=300)
        assert proc.returncode == 0, text[-3000:]
        with open(out / 'summary.csv', encoding='utf-8') as f:
            rows = list(csv.DictReader(f))
        assert [r['name'] for r in rows] == [CASES[1]], rows
        assert rows[0]['pass'] == 'True' and rows[0]['status'] == 'finished'
        for item in ('report.html', 'result.json', 'log.txt'):
            assert (out / CASES[1] / item).is_file(), item
    finally:
        # not `ray stop`: it ends every Ray instance on the machine (it killed
        # a sweep running beside the tests), only this cluster's processes go
        _stop_cluster(temp)
        shutil.rmtree(temp, ignore_errors=True)
    deadline = time.monotonic() + 15.0
    while _tagged(tag) and time.monotonic() < deadline:
        time.sleep(0.3)
    assert _tagged(tag) == [], _tagged(tag)


def test_a_run_past_its_timeout_dumps_its_stacks_then_stops(tmp_path: Path) -> None:
    """Timed out: SIGUSR1 (every thread's stack into the log), SIGINT, exit 124."""
    log = tmp_path / 'log.txt'
    child = ('import faulthandler, signal, time\n'
             'faulthandler.register(signal.SIGUSR1, all_threads=True)\n'
             'def hung_here():\n'
             '    time.sleep(60)\n'
             'hung_here()\n')
    code = batch._spawn([sys.executable, '-c', child], dict(os.environ), str(log),
                        timeout=2.0, dump=True)
    assert code == 124
    text = log.read_text(encoding='utf-8', errors='replace')
    assert 'most recent call first' in text and 'hung_here' in text, text


def _python_child(code: str) -> 'subprocess.CompletedProcess[str]':
    """Run ``code`` in a Python child in the checkout; its output captured."""
    return subprocess.run([sys.executable, '-c', code], capture_output=True, text=True,
                          timeout=60, cwd=str(Path(__file__).resolve().parents[1]))


def test_carla_hil_writes_its_stacks_on_sigusr1() -> None:
    """carla-hil registers SIGUSR1 (the batch's timeout signal); captured stderr is no error."""
    from hil_bridge.tools import cli
    child = ('import os, signal, time\n'
             'from hil_bridge.tools import cli\n'
             'cli._dump_stacks_on_sigusr1()\n'
             'os.kill(os.getpid(), signal.SIGUSR1)\n'
             'time.sleep(0.2)\n'
             'print("alive")\n')
    run = _python_child(child)
    assert run.returncode == 0 and 'alive' in run.stdout, run.stderr
    assert 'most recent call first' in run.stderr
    cli._dump_stacks_on_sigusr1()   # pytest's captured stderr has no fileno: no error


def test_carla_hil_writes_its_stacks_when_it_crashes() -> None:
    """A segmentation fault in the runner leaves its stack in the log (not one silent -11)."""
    child = ('import ctypes\n'
             'from hil_bridge.tools import cli\n'
             'cli._dump_stacks_on_sigusr1()\n'
             'def crashed_here():\n'
             '    ctypes.string_at(0)\n'
             'crashed_here()\n')
    run = _python_child(child)
    assert run.returncode == -signal.SIGSEGV, (run.returncode, run.stderr)
    assert 'Segmentation fault' in run.stderr and 'crashed_here' in run.stderr, run.stderr
