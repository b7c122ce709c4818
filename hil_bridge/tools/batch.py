# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
Scenario batches on Ray: every run of a suite is one Ray task.

A :class:`Job` is one run: the whole multi-process graph of ``carla-hil
run`` (kind ``run``), one Euro NCAP case of the in-process runner
(``ncap``) or a module's own command line (``module``). :func:`execute`
does one job on whichever host Ray picked: it leases a ROS_DOMAIN_ID on
that host (:mod:`hil_bridge.tools.domains`, so no two concurrent runs on
one host share a domain; DDS discovery stays on the host), runs the job in
a scratch directory and returns its summary row with the run directory
packed as a tar archive, which :func:`run_batch` unpacks under the batch's
output directory on the driver's host.

:func:`run_batch` starts a local Ray instance in-process (quiet, no
dashboard, small object store) unless ``address`` or ``RAY_ADDRESS``
names a cluster, keeps at most ``parallel`` runs in flight, prints one
progress line, retries a run once when its worker died, its node was lost
or the task raised (not when the run itself failed its mission: that is a
result), and on Ctrl-C (or SIGTERM) cancels every task, which kills the
workers; the runs' processes die with them (PR_SET_PDEATHSIG).

Forced failure, for tests and drills: ``CARLA_HIL_BATCH_KILL_ONCE=NAME[,NAME]``
makes the worker of each named run kill itself with SIGKILL on its first
attempt, ``CARLA_HIL_BATCH_KILL_AFTER`` seconds (default 2) after the run
started (at the latest when the run ends).
"""

from dataclasses import dataclass, field
import io
import json
import math
import os
import signal
import socket
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
from typing import Any, Callable, Dict, List, Optional, TextIO, Tuple

from hil_bridge.tools import domains
from hil_bridge.tools.supervisor import die_with_parent

RESULT_PREFIX = 'REFEREE_RESULT '
KILL_ONCE_ENV = 'CARLA_HIL_BATCH_KILL_ONCE'
KILL_AFTER_ENV = 'CARLA_HIL_BATCH_KILL_AFTER'
#: files larger than this (bytes) stay on the worker (named in the row)
MAX_FILE_BYTES = 20 * 1024 * 1024
#: object store of the local instance (bytes); results are small archives
LOCAL_OBJECT_STORE = 80 * 1024 * 1024
#: seconds a timed-out run gets between SIGINT and SIGKILL
STOP_GRACE_S = 10.0


@dataclass
class Job:
    """
    One run of a batch.

    ``kind`` ``run``: ``carla-hil run --scenario`` with ``scenario`` (a
    name or path on the worker) or ``scenario_yaml`` (the text of a
    generated scenario file, written on the worker) and ``sets``
    (``NODE.PARAM=VALUE``). ``ncap``: ``args`` = ``{'case': {...Case
    fields}, 'strategy': ...}``. ``module``: ``args`` = ``{'module': ...,
    'argv': [...]}``. ``criteria``: pass criteria (:func:`judge`).
    ``cpus``: the CPUs the task declares to Ray. ``timeout``: wall s.
    """

    name: str
    kind: str = 'run'
    scenario: str = ''
    scenario_yaml: str = ''
    sets: List[str] = field(default_factory=list)
    args: Dict[str, Any] = field(default_factory=dict)
    criteria: Dict[str, Any] = field(default_factory=dict)
    cpus: float = 1.0
    timeout: float = 1800.0


# ------------------------------------------------------------ on the worker
def execute(job: Job, attempt: int = 0,
            kill_after: Optional[float] = None) -> Dict[str, Any]:
    """
    Do one job on this host; return its row with ``archive`` (tar bytes).

    ``kill_after`` (s): the forced failure, SIGKILL of this process.
    """
    killer: Optional[threading.Timer] = None
    if kill_after is not None:
        killer = threading.Timer(max(0.0, kill_after), _kill_self)
        killer.daemon = True
        killer.start()
    base = scratch_dir()
    clean_scratch(base)
    work = tempfile.mkdtemp(prefix=f'{os.getpid()}_', dir=base)
    run_dir = os.path.join(work, job.name)
    os.makedirs(run_dir)
    t0, started = time.monotonic(), time.time()
    try:
        if job.kind == 'ncap':
            row = _run_ncap(job, run_dir)
            row['domain'] = ''
        else:
            with domains.lease_domain() as lease:
                runner = _run_graph if job.kind == 'run' else _run_module
                row = runner(job, run_dir, lease.domain)
                row['domain'] = lease.domain
        row.update(name=job.name, kind=job.kind, host=socket.gethostname(),
                   started=round(started, 3), ended=round(time.time(), 3),
                   wall_s=round(time.monotonic() - t0, 1))
        if killer is not None:
            _kill_self()  # the run was quicker than kill_after
        row['archive'], row['left_on_worker'] = pack(run_dir)
        return row
    finally:
        _rmtree(work)


def scratch_dir() -> str:
    """Return (and create) the directory of this host's run scratch dirs."""
    path = os.path.join(tempfile.gettempdir(), 'carla_hil_batch')
    os.makedirs(path, exist_ok=True)
    return path


def clean_scratch(base: str) -> List[str]:
    """
    Remove the scratch dirs of workers that died (killed, cancelled).

    A scratch dir is named ``<worker pid>_<random>``; returns the removed.
    """
    removed = []
    for name in os.listdir(base):
        pid = name.split('_', 1)[0]
        if not pid.isdigit():
            continue
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            _rmtree(os.path.join(base, name))
            removed.append(name)
        except PermissionError:
            pass  # alive, another user's
    return removed


def _kill_self() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def _rmtree(path: str) -> None:
    import shutil
    shutil.rmtree(path, ignore_errors=True)


def _wait(proc: 'subprocess.Popen[bytes]', timeout: float, dump: bool = False) -> int:
    """
    Wait for ``proc``; on timeout SIGINT, then SIGKILL; return 124 then.

    ``dump``: first SIGUSR1, on which ``carla-hil`` writes every thread's
    stack to its log (where it hung), then SIGINT.
    """
    try:
        return proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        if dump:
            proc.send_signal(signal.SIGUSR1)
            time.sleep(1.0)
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=STOP_GRACE_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        return 124


def _child_preexec(parent_pid: int) -> Callable[[], None]:
    """
    Return the ``preexec_fn`` of a run: unblock signals, die with the worker.

    A Ray worker blocks SIGINT in its signal mask, which children inherit
    through fork and exec: the runner's SIGINT to its nodes would then do
    nothing and every run would end by SIGTERM/SIGKILL after timeouts.
    """
    die = die_with_parent(parent_pid)

    def preexec() -> None:
        signal.pthread_sigmask(signal.SIG_SETMASK, [])
        die()
    return preexec


def _spawn(argv: List[str], env: Dict[str, str], log_path: str,
           timeout: float, dump: bool = False) -> int:
    """Run ``argv`` with its output in ``log_path``; it dies with us (``dump``: see _wait)."""
    with open(log_path, 'wb') as log:
        proc = subprocess.Popen(argv, env=env, stdout=log,
                                stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL,
                                preexec_fn=_child_preexec(os.getpid()))
        return _wait(proc, timeout, dump)


def _child_env(domain: int) -> Dict[str, str]:
    env = dict(os.environ, ROS_DOMAIN_ID=str(domain))
    env.setdefault('ROS_AUTOMATIC_DISCOVERY_RANGE', 'LOCALHOST')
    env.pop(KILL_ONCE_ENV, None)
    return env


def _run_graph(job: Job, run_dir: str, domain: int) -> Dict[str, Any]:
    """Run ``carla-hil run`` for the job in ``domain``; return the row."""
    scenario = job.scenario
    if job.scenario_yaml:
        scenario = os.path.join(run_dir, 'scenario.yaml')
        with open(scenario, 'w', encoding='utf-8') as f:
            f.write(job.scenario_yaml)
    argv = [sys.executable, '-m', 'hil_bridge.tools.cli', 'run',
            '--scenario', scenario, '--report', run_dir,
            '--progress', 'lines', '--progress-every', '60']
    for item in job.sets:
        argv += ['--set', item]
    log_path = os.path.join(run_dir, 'log.txt')
    code = _spawn(argv, _child_env(domain), log_path, job.timeout, dump=True)
    with open(log_path, encoding='utf-8', errors='replace') as f:
        result = referee_result(f.read())
    brakes: Any = ''
    try:
        with open(os.path.join(run_dir, 'metrics.json'),
                  encoding='utf-8') as f:
            brakes = json.load(f).get('aeb_brake_requests', '')
    except (OSError, ValueError):
        pass
    return run_row(code, result, brakes)


def referee_result(text: str) -> Dict[str, Any]:
    """Return the last ``REFEREE_RESULT {json}`` of a run's log ({} if none)."""
    result: Dict[str, Any] = {}
    for line in text.splitlines():
        idx = line.find(RESULT_PREFIX)
        if idx >= 0:
            try:
                result = json.loads(line[idx + len(RESULT_PREFIX):])
            except ValueError:
                pass
    return result


def run_row(code: int, result: Dict[str, Any],
            brake_requests: Any = '') -> Dict[str, Any]:
    """Return the summary fields of one ``carla-hil run``."""
    ratios = [r for r in result.get('lap_time_ratio') or [] if r is not None]
    return {'exit_code': code, 'status': result.get('status', 'no result'),
            'reason': result.get('reason', ''),
            'laps': result.get('laps', ''),
            'lap_times': ' '.join(f'{t:.2f}' for t in
                                  result.get('lap_times') or []),
            'max_lap_time_ratio': max(ratios) if ratios else '',
            'lap_time_ratios': ' '.join(
                '-' if r is None else f'{r:.3f}'
                for r in result.get('lap_time_ratio') or []),
            'cones_hit': result.get('cones_hit', ''),
            'off_courses': result.get('off_courses', ''),
            'penalties_s': result.get('penalty_time', ''),
            'collisions': len(result.get('collisions') or [])
            if result else '',
            'brake_requests': brake_requests,
            # lockstep: frames ticked on without an answer, frames sent again
            # because an answer was overdue (a lost message)
            'lockstep_timeouts': result.get('lockstep_timeouts', ''),
            'resent_frames': result.get('resent_frames', '')}


def _run_module(job: Job, run_dir: str, domain: int) -> Dict[str, Any]:
    argv = [sys.executable, '-m', str(job.args['module']),
            *[str(a) for a in job.args.get('argv', [])]]
    code = _spawn(argv, _child_env(domain), os.path.join(run_dir, 'log.txt'),
                  job.timeout)
    return {'exit_code': code, 'status': 'finished' if code == 0 else
            f'exit {code}'}


def _run_ncap(job: Job, run_dir: str) -> Dict[str, Any]:
    """Run one case of the in-process Euro NCAP runner in this process."""
    from aeb_control.tools.ncap import Case, run_case
    case = Case(**job.args['case'])
    r = run_case(case, str(job.args.get('strategy', 'ttc_staged')),
                 lidar_hfov=float(job.args.get('lidar_hfov', 120.0)))
    row = {'exit_code': 0, 'status': 'passed' if r.passed else 'failed',
           'reason': case.name, 'collisions': int(r.collision),
           'impact_kmh': round(r.impact_kmh, 1),
           'brake_requests': int(r.braked),
           'min_distance_m': round(r.min_distance, 2)
           if math.isfinite(r.min_distance) else '',
           'score': r.score}
    with open(os.path.join(run_dir, 'result.json'), 'w',
              encoding='utf-8') as f:
        json.dump(dict(row, strategy=job.args.get('strategy'),
                       notes=list(r.notes)), f, indent=1)
    return row


def pack(run_dir: str) -> Tuple[bytes, str]:
    """Return ``run_dir`` as tar.gz bytes and the files left out (too big)."""
    buf = io.BytesIO()
    left: List[str] = []
    with tarfile.open(fileobj=buf, mode='w:gz') as tar:
        for root, _dirs, files in os.walk(run_dir):
            for name in sorted(files):
                path = os.path.join(root, name)
                rel = os.path.relpath(path, run_dir)
                if os.path.getsize(path) > MAX_FILE_BYTES:
                    left.append(rel)
                    continue
                tar.add(path, arcname=rel)
    return buf.getvalue(), ' '.join(left)


def unpack(archive: bytes, dest: str) -> None:
    """Extract a :func:`pack` archive into ``dest`` (plain files only)."""
    os.makedirs(dest, exist_ok=True)
    root = os.path.realpath(dest)
    with tarfile.open(fileobj=io.BytesIO(archive), mode='r:gz') as tar:
        for member in tar.getmembers():
            target = os.path.realpath(os.path.join(root, member.name))
            if not member.isfile() or not target.startswith(root + os.sep):
                continue
            os.makedirs(os.path.dirname(target), exist_ok=True)
            src = tar.extractfile(member)
            if src is not None:
                with open(target, 'wb') as out:
                    out.write(src.read())


# -------------------------------------------------------------- pass / fail
def judge(row: Dict[str, Any], criteria: Dict[str, Any]) -> Tuple[bool, str]:
    """
    Return (passed, why) of one row against its criteria.

    Keys: ``status`` (a value or a list of accepted values),
    ``exit_code`` (accepted codes), ``no_collision``, ``no_brake`` (no
    AEB brake request), ``max_cones_hit``, ``max_off_courses``,
    ``max_lap_time_ratio``.
    """
    failed: List[str] = []
    if 'lost' in row:
        return False, f'lost: {row["lost"]}'
    want = criteria.get('status')
    if want is not None:
        accepted = want if isinstance(want, list) else [want]
        if row.get('status') not in accepted:
            failed.append(f'status {row.get("status")}')
    codes = criteria.get('exit_code')
    if codes is not None and row.get('exit_code') not in (
            codes if isinstance(codes, list) else [codes]):
        failed.append(f'exit code {row.get("exit_code")}')
    if criteria.get('no_collision') and row.get('collisions') not in (0, ''):
        failed.append(f'{row.get("collisions")} collision(s)')
    if criteria.get('no_collision') and row.get('collisions') == '':
        failed.append('no collision count')
    if criteria.get('no_brake') and row.get('brake_requests') != 0:
        failed.append(f'brake requests {row.get("brake_requests")!r}')
    for key, col in (('max_cones_hit', 'cones_hit'),
                     ('max_off_courses', 'off_courses'),
                     ('max_lap_time_ratio', 'max_lap_time_ratio')):
        if key in criteria:
            value = row.get(col)
            if not isinstance(value, (int, float)) or \
                    value > float(criteria[key]):
                failed.append(f'{col} {value!r} > {criteria[key]}')
    return not failed, '; '.join(failed) or 'ok'


def describe(criteria: Dict[str, Any]) -> str:
    """Return the criteria as a short sentence."""
    parts = []
    for key, value in criteria.items():
        if value is True:
            parts.append(key.replace('_', ' '))
        else:
            parts.append(f'{key.replace("_", " ")} {value}')
    return ', '.join(parts) or 'none'


def describe_jobs(jobs: List[Job]) -> str:
    """Return the criteria of a batch: one sentence, or one per group."""
    groups: Dict[str, List[str]] = {}
    for job in jobs:
        groups.setdefault(describe(job.criteria), []).append(job.name)
    if len(groups) == 1:
        return next(iter(groups))
    return '; '.join(f'{len(names)} runs ({names[0]}, ...): {text}'
                     for text, names in groups.items())


# ---------------------------------------------------------------- progress
class BatchProgress:
    """Counts and the one-line text of a batch's progress (no I/O)."""

    def __init__(self, total: int, start: float) -> None:
        """Start a batch of ``total`` runs at monotonic time ``start`` (s)."""
        self.total = int(total)
        self.start = float(start)
        self.passed = 0
        self.failed = 0
        self.retried = 0
        self.running = 0

    @property
    def done(self) -> int:
        """Return the number of runs with a final result."""
        return self.passed + self.failed

    def eta(self, now: float) -> Optional[float]:
        """Return the wall seconds left at the throughput so far (None: unknown)."""
        if self.done == 0:
            return None
        return (now - self.start) / self.done * (self.total - self.done)

    def line(self, now: float) -> str:
        """Return the progress line at monotonic time ``now``."""
        from hil_bridge.tools.progress import _fmt_time
        parts = [f'batch {self.done}/{self.total} done',
                 f'{self.passed} passed', f'{self.failed} failed',
                 f'{self.running} running']
        if self.retried:
            parts.append(f'{self.retried} retried')
        parts += [f'elapsed {_fmt_time(now - self.start)}',
                  f'ETA {_fmt_time(self.eta(now))}']
        return ' | '.join(parts)


class ProgressPrinter:
    """Show a :class:`BatchProgress` on one line (a terminal) or every few s."""

    def __init__(self, progress: BatchProgress, stream: TextIO,
                 every: float = 15.0) -> None:
        """Write to ``stream``; without a terminal one line per ``every`` s."""
        self.progress = progress
        self.stream = stream
        self.every = every
        self.live = bool(getattr(stream, 'isatty', lambda: False)())
        self._last = -math.inf
        self._width = 0

    def show(self, force: bool = False) -> None:
        """Refresh the line (``force``: also without a terminal)."""
        now = time.monotonic()
        text = self.progress.line(now)
        if self.live:
            self.stream.write('\r' + text.ljust(self._width))
            self._width = len(text)
        elif force or now - self._last >= self.every:
            self.stream.write(text + '\n')
            self._last = now
        else:
            return
        self.stream.flush()

    def note(self, text: str) -> None:
        """Print a message on its own line."""
        if self.live:
            self.stream.write('\r' + ' ' * self._width + '\r')
        self.stream.write(text + '\n')
        self.stream.flush()
        if self.live:
            self.show()

    def close(self) -> None:
        """End the live line."""
        if self.live:
            self.stream.write('\n')
            self.stream.flush()


# --------------------------------------------------------------- the driver
def _project_root() -> str:
    return os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__))))


#: where Ray keeps the cluster token (ray get-auth-token)
RAY_TOKEN_FILE = '~/.ray/auth_token'


def ray_token_available() -> bool:
    """Return True when a Ray authentication token is set or on disk."""
    return bool(os.environ.get('RAY_AUTH_TOKEN') or
                os.environ.get('RAY_AUTH_TOKEN_PATH') or
                os.path.isfile(os.path.expanduser(RAY_TOKEN_FILE)))


def cluster_auth(address: Optional[str]) -> None:
    """
    Ask for token authentication to join a cluster (before ``import ray``).

    ``ray start`` (Ray >= 2.59) enables tokens, the client does not: without
    ``RAY_AUTH_MODE=token`` it sends none and is refused. Ray reads the mode
    when it is imported, so this runs first; a mode set by the user stays.
    """
    if (address or os.environ.get('RAY_ADDRESS')) and \
            'RAY_AUTH_MODE' not in os.environ and ray_token_available():
        if 'ray' in sys.modules:
            print('[batch] ray was imported before RAY_AUTH_MODE=token was '
                  'set: set it yourself to join a token cluster',
                  file=sys.stderr)
        os.environ['RAY_AUTH_MODE'] = 'token'


def start_ray(address: Optional[str], cpus: float) -> bool:
    """
    Connect to ``address`` / ``RAY_ADDRESS`` or start a local instance.

    A refused connection ends the batch with one line saying where the
    token goes (:func:`cluster_auth` has asked for tokens before Ray was
    imported).

    The local instance gets ``cpus`` CPUs. Workers import the project from
    this checkout (PYTHONPATH). Returns True when a local instance started.
    """
    os.environ.setdefault('RAY_USAGE_STATS_ENABLED', '0')
    import logging
    import ray
    root = _project_root()
    path = os.environ.get('PYTHONPATH', '')
    if root not in path.split(os.pathsep):
        path = os.pathsep.join(p for p in (root, path) if p)
    address = address or os.environ.get('RAY_ADDRESS') or None
    common: Dict[str, Any] = {
        'include_dashboard': False, 'log_to_driver': False,
        'logging_level': logging.WARNING,
        'runtime_env': {'env_vars': {'PYTHONPATH': path}}}
    if address:
        try:
            ray.init(address=address, **common)
        except ConnectionError as exc:
            first = next((t for t in str(exc).splitlines() if t.strip()), '')
            raise SystemExit(
                f'[batch] cannot connect to the Ray cluster at {address}: '
                f'{first[:200]} (a cluster started by ray start needs its '
                f"token here: the head's {RAY_TOKEN_FILE}, printed by ray "
                'get-auth-token on the head, or RAY_AUTH_TOKEN)') from None
        return False
    os.environ['PYTHONPATH'] = path  # the local workers inherit it
    del common['runtime_env']
    ray.init(num_cpus=max(1, math.ceil(cpus)),
             object_store_memory=LOCAL_OBJECT_STORE, **common)
    return True


def _failure(exc: BaseException) -> str:
    """Return a one-line reason of a task that did not return."""
    name = type(exc).__name__
    text = str(exc).strip().splitlines()
    first = next((t for t in text if t.strip()), '').split('. ')[0]
    return f'{name}: {first[:100]}' if first else name


def run_batch(jobs: List[Job], out_dir: str, parallel: Optional[int] = None,
              address: Optional[str] = None, stream: TextIO = sys.stderr,
              on_row: Optional[Callable[[Dict[str, Any]], None]] = None
              ) -> List[Dict[str, Any]]:
    """
    Run ``jobs`` as Ray tasks; return one row per job (in the jobs' order).

    ``parallel``: runs in flight at once (default: local 1, cluster: its
    CPUs / the jobs' CPUs). Each run's directory ends up in
    ``out_dir/<name>``.
    """
    cluster_auth(address)
    import ray
    cpus = max((j.cpus for j in jobs), default=1.0)
    local_parallel = parallel or 1
    previous = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}

    def on_term(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt
    if threading.current_thread() is threading.main_thread():
        # SIGINT too: a batch started by a non-interactive shell in the
        # background inherits SIGINT ignored, and Python then installs no
        # KeyboardInterrupt handler of its own
        for sig in previous:
            signal.signal(sig, on_term)
    inflight: Dict[Any, Tuple[Job, int]] = {}
    try:
        local = start_ray(address, local_parallel * cpus)
        if parallel is None:
            parallel = local_parallel if local else max(1, int(
                ray.cluster_resources().get('CPU', 1) // cpus))
        kill_names = {n for n in os.environ.get(KILL_ONCE_ENV, '').split(',')
                      if n}
        kill_after = float(os.environ.get(KILL_AFTER_ENV, '2'))
        remote = ray.remote(execute)
        pending: List[Tuple[Job, int]] = [(j, 0) for j in jobs]
        retried: Dict[str, str] = {}
        rows: Dict[str, Dict[str, Any]] = {}
        progress = BatchProgress(len(jobs), time.monotonic())
        printer = ProgressPrinter(progress, stream)
        printer.show(force=True)
        while pending or inflight:
            while pending and len(inflight) < parallel:
                job, attempt = pending.pop(0)
                kill = kill_after if attempt == 0 and job.name in kill_names \
                    else None
                ref = remote.options(num_cpus=job.cpus, max_retries=0,
                                     name=f'carla_hil:{job.name}').remote(
                                         job, attempt, kill)
                inflight[ref] = (job, attempt)
            progress.running = len(inflight)
            ready, _ = ray.wait(list(inflight), num_returns=1, timeout=1.0)
            for ref in ready:
                job, attempt = inflight.pop(ref)
                try:
                    row = ray.get(ref)
                except ray.exceptions.RayError as exc:
                    reason = _failure(exc)
                    if attempt == 0:
                        retried[job.name] = reason
                        progress.retried += 1
                        pending.insert(0, (job, 1))
                        printer.note(f'[batch] {job.name}: {reason}; retrying once')
                        continue
                    row = {'name': job.name, 'kind': job.kind,
                           'lost': reason}
                archive = row.pop('archive', b'')
                if archive:
                    unpack(archive, os.path.join(out_dir, job.name))
                row['attempts'] = attempt + 1
                row['retried'] = retried.get(job.name, '')
                row['pass'], row['why'] = judge(row, job.criteria)
                rows[job.name] = row
                if row['pass']:
                    progress.passed += 1
                else:
                    progress.failed += 1
                if on_row is not None:
                    on_row(row)
                printer.note(f'[batch] {job.name}: '
                             f'{"PASS" if row["pass"] else "FAIL"} '
                             f'({row["why"]}) {row.get("wall_s", "-")} s')
            progress.running = len(inflight)
            printer.show()
        printer.show(force=True)
        printer.close()
        return [rows[j.name] for j in jobs]
    except KeyboardInterrupt:
        for ref in inflight:
            ray.cancel(ref, force=True)
        if inflight:
            ray.wait(list(inflight), num_returns=len(inflight), timeout=10.0)
        raise
    finally:
        if threading.current_thread() is threading.main_thread():
            for sig, handler in previous.items():
                signal.signal(sig, handler)
        ray.shutdown()
