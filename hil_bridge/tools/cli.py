# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
``carla-hil``: run the graph without ``ros2 launch``.

Subcommands::

    carla-hil run --profile all|sim_pc|onboard --backend builtin|carla
                  --scenario NAME [--duration S] [--real-time]
                  [--record BAG_DIR [--record-topics PATTERN ...]
                   [--record-exclude PATTERN ...] [--record-version V]]
                  [--out RUN_DIR | --no-report] [--set NODE.PARAM=VALUE ...]
    carla-hil play BAG [--rate R] [--no-clock] [--role NAME] [--all]
    carla-hil report BAG --out DIR [--role NAME]
    carla-hil scenarios list
    carla-hil scenarios run SUITE [--jobs N] [--out DIR]
    carla-hil track check|convert|plot FILE [--format F] [--convention C]
                  [--out FILE]
    carla-hil train-vision ... | evaluate ... | ncap ...

``run`` starts the nodes of ``config/graph.yaml`` as separate processes
with the same parameter files as the launch files, prefixes and forwards
their logs, shows one live progress line, stops everything on Ctrl-C, on
``--duration`` or when the bridge reports the mission's end, and prints
the result table and the report's path. Profile ``all`` on the built-in
backend runs lockstep and unpaced (the bridge waits for the commands
computed from each frame, then ticks at once); ``--real-time`` keeps the
configured clock (paced at real time, no lockstep), the HIL set-up.

A recorder (``--record``, and a small one without images, lidar and
markers for the report) starts first; the nodes start once it has
subscribed, and in lockstep the bridge also waits for it, so it holds
every frame from frame 0. Exit codes (:func:`run_exit_code`): 0 mission
finished (or still running at ``--duration``), 1 mission failed (DNF,
timeout), 2 a node died or bad configuration (a scenario, track file,
parameter file or ``--set`` that does not load: one line naming file,
key and allowed values, before any process starts), 3 simulator
unreachable or lost, 130 interrupted (Ctrl-C / SIGTERM), in every
profile; a node's own exit code 2, 3 or 130 is passed through.

Hygiene: DDS discovery stays on this host unless ``--peers`` names the
other machine(s) (``dds_environment``); every child dies with the runner,
even on ``kill -9`` (PR_SET_PDEATHSIG, :mod:`hil_bridge.tools.supervisor`);
the Fast DDS shared-memory files of earlier runs that died are removed at
the start and the end of a run (:mod:`hil_bridge.interface.dds_shm`; files
held by live processes are never touched), and a watcher process removes
those of the runner and its children if the runner is killed
(``kill -9``: nothing of the run is left).
"""

import argparse
import datetime
import faulthandler
import importlib
import json
import os
import signal
import sys
import threading
import time
from typing import Any, Dict, List, Optional

from hil_bridge.interface import graph
from hil_bridge.interface.config import (check_peers_resolve, dds_environment,
                                         node_params, parse_peers)
from hil_bridge.interface.params import coerce_text
from hil_bridge.tools.progress import PROGRESS_PREFIX
from hil_bridge.tools.supervisor import ProcessSpec, Supervisor

RESULT_PREFIX = 'REFEREE_RESULT '
RECORDER_PREFIX = 'RECORDER_RESULT '
EXIT_OK, EXIT_MISSION_FAILED, EXIT_NODE_DIED, EXIT_BACKEND = 0, 1, 2, 3
EXIT_CONFIG = EXIT_NODE_DIED  # bad configuration shares code 2
EXIT_INTERRUPTED = 130
#: node exit codes passed through as they are (2 bad configuration, 3
#: simulator unreachable / lost, 130 interrupted); any other non-zero code
#: (a crash: Python exits 1, a signal: negative) is "a node died" (2)
PASSED_CODES = (EXIT_CONFIG, EXIT_BACKEND, EXIT_INTERRUPTED)
#: topics the report's recording leaves out (large, not used by the report)
REPORT_EXCLUDE = ('*/image', '*/image/compressed', '/carla/*/lidar',
                  '/carla/*/scan', '*/markers', '/carla/actors', '/tf',
                  '/tf_static')
#: lockstep settings of the default (unpaced) run on the built-in backend
LOCKSTEP_SETS = {'wait_for_control': 'true',
                 'lockstep_topics': '[cmd_vel,brake_request]',
                 'real_time_factor': '0.0'}
#: wall seconds to wait for the recorder to subscribe
RECORDER_READY_TIMEOUT = 120.0


def _parse_sets(items: List[str]) -> Dict[str, Dict[str, str]]:
    """Parse ``NODE.PARAM=VALUE`` overrides into {node: {param: value}}."""
    out: Dict[str, Dict[str, str]] = {}
    for item in items:
        if '=' not in item or '.' not in item.split('=', 1)[0]:
            raise SystemExit(f'--set expects NODE.PARAM=VALUE, got {item!r}')
        key, value = item.split('=', 1)
        node, param = key.split('.', 1)
        out.setdefault(node, {})[param] = value
    return out


def ros_value(value: Any) -> str:
    """Return a YAML/ROS command-line spelling of a parameter value."""
    if isinstance(value, bool):
        return 'true' if value else 'false'
    if isinstance(value, (list, tuple)):
        return '[' + ','.join(ros_value(v) for v in value) + ']'
    return str(value)


def scenario_node_params(scenario: str) -> Dict[str, Dict[str, str]]:
    """
    Return the scenario's ``node_params`` as ``--set`` strings.

    Scenarios carry the node parameters they need (for example the
    driver-robot ``cruise`` of the Euro NCAP cases, or the skidpad planner
    mode). An empty name, or a backend-only name without a file, gives {}.
    """
    if not scenario:
        return {}
    from hil_bridge.bridge.scenario import load_scenario
    try:
        scn = load_scenario(scenario)
    except FileNotFoundError:
        return {}
    return {node: {k: ros_value(v) for k, v in params.items()}
            for node, params in scn.node_params.items()}


def _merge_sets(base: Dict[str, Dict[str, str]],
                top: Dict[str, Dict[str, str]]
                ) -> Dict[str, Dict[str, str]]:
    out = {n: dict(p) for n, p in base.items()}
    for node, params in top.items():
        out.setdefault(node, {}).update(params)
    return out


def coerce_overrides(spec: graph.NodeSpec, overrides: Dict[str, str]
                     ) -> Dict[str, str]:
    """
    Return ``overrides`` spelled in the types of the node's config file.

    Raises ``SystemExit`` with one line for an unknown parameter or a
    value of the wrong type.
    """
    import yaml
    from hil_bridge.interface.params import allowed_text, check_value
    defaults = node_params(spec.name, spec.params)
    specs = node_specs(spec)
    out = {}
    for param, text in overrides.items():
        if param == 'use_sim_time':
            out[param] = text
            continue
        if param not in defaults:
            import difflib
            hint = difflib.get_close_matches(param, list(defaults), n=1)
            raise SystemExit(f'--set {spec.name}.{param}: no such parameter '
                             f'in config/{spec.params}'
                             + (f'; did you mean {hint[0]!r}?' if hint else ''))
        allowed = (f'; allowed: {allowed_text(specs[param], defaults[param])}'
                   if param in specs else '')
        try:
            out[param] = coerce_text(f'{spec.name}.{param}',
                                     defaults[param], text)
        except ValueError as err:
            raise SystemExit(f'--set {err} (config/{spec.params}){allowed}') from None
        try:
            if param in specs:
                check_value(specs[param], yaml.safe_load(out[param]))
        except ValueError:
            raise SystemExit(f'--set {spec.name}.{param}={text}: not allowed '
                             f'(config/{spec.params}){allowed}') from None
    return out


def node_specs(spec: graph.NodeSpec) -> Dict[str, Any]:
    """Return the node's ParamSpecs by name (its module's ``PARAMS``; {} if none)."""
    try:
        module = importlib.import_module(graph.module_of(spec.executable))
    except ImportError:
        return {}
    return {p.name: p for p in getattr(module, 'PARAMS', [])}


def build_processes(profile: str, backend: str = 'builtin',
                    scenario: str = '', host: str = '', port: int = 0,
                    namespace: str = '', duration: float = 0.0,
                    sets: Optional[Dict[str, Dict[str, str]]] = None
                    ) -> List[ProcessSpec]:
    """
    Return the processes of ``profile``, as the launch files start them.

    The bridge gets ``backend``/``scenario``/``host``/``port``/``duration``
    and ``exit_on_mission_end`` as parameter overrides. Every override is
    spelled in its parameter's type (``real_time_factor=0`` -> ``0.0``).
    """
    sets = _merge_sets(scenario_node_params(scenario), sets or {})
    specs = {s.name: s for s in graph.profile('all')}
    unknown = set(sets) - set(specs)
    if unknown:
        raise SystemExit(f'--set names unknown node(s) {sorted(unknown)}; '
                         f'nodes: {sorted(specs)}')
    for node, params in sets.items():
        coerce_overrides(specs[node], params)  # refuse bad values early
    procs = []
    for spec in graph.profile(profile):
        overrides = dict(sets.get(spec.name, {}))
        if spec.executable == 'hil_bridge':
            base = {'backend': backend, 'exit_on_mission_end': 'true'}
            if scenario:
                base['scenario'] = scenario
            if host:
                base['host'] = host
            if port:
                base['port'] = str(port)
            if duration:
                base['duration'] = str(float(duration))
            base.update(overrides)
            overrides = base
        overrides = coerce_overrides(spec, overrides)
        argv = [sys.executable, '-m', graph.module_of(spec.executable)]
        argv += graph.ros_args(spec, namespace=namespace,
                               overrides=overrides)
        procs.append(ProcessSpec(name=spec.name, argv=argv))
    return procs


def effective_param(node: str, param: str,
                    sets: Dict[str, Dict[str, str]]) -> Any:
    """Return a node parameter as the run will see it (set or config)."""
    import yaml
    if param in sets.get(node, {}):
        return yaml.safe_load(sets[node][param])
    spec = {s.name: s for s in graph.profile('all')}[node]
    return node_params(spec.name, spec.params).get(param)


class _Lines:
    """Collect the bridge's and the recorder's result lines."""

    def __init__(self) -> None:
        self.result: Optional[Dict[str, Any]] = None
        self.recorder: Dict[str, Dict[str, Any]] = {}
        self.ready: set = set()
        #: the progress process's latest line ('' before its first)
        self.progress = ''

    def on_line(self, name: str, line: str) -> None:
        if line.startswith(PROGRESS_PREFIX):
            self.progress = line[len(PROGRESS_PREFIX):]
            return
        for prefix in (RESULT_PREFIX, RECORDER_PREFIX):
            idx = line.find(prefix)
            if idx < 0:
                continue
            try:
                data = json.loads(line[idx + len(prefix):])
            except ValueError:
                continue
            if prefix == RESULT_PREFIX:
                self.result = data
            else:
                self.recorder[name] = data
        if '[recorder] ready:' in line:
            self.ready.add(name)


FAILED_STATUS = ('dnf', 'failed', 'timeout', 'collision', 'error')


def _status(result: Optional[Dict[str, Any]]) -> str:
    return str((result or {}).get('status', '')).lower()


def run_exit_code(name: str, rc: Optional[int], result: Optional[Dict[str, Any]],
                  limited: bool) -> int:
    """
    Return the runner's exit code when node ``name`` exited with ``rc``.

    The bridge's 0 is the mission's outcome (:func:`mission_exit_code`);
    2, 3 and 130 pass through from any node; any other code is 2.
    """
    if rc == 0 and name == 'hil_bridge':
        return mission_exit_code(result, limited)
    if rc in PASSED_CODES:
        return int(rc)
    return EXIT_NODE_DIED


def mission_exit_code(result: Optional[Dict[str, Any]],
                      limited: bool) -> int:
    """
    Return the exit code for a bridge that ended normally.

    A finished mission is success; with a ``--duration`` limit, a mission
    still running (not failed) is success too.
    """
    status = _status(result)
    if status == 'finished':
        return EXIT_OK
    if limited and status not in FAILED_STATUS:
        return EXIT_OK
    return EXIT_MISSION_FAILED


def recording_table(published: Dict[str, int],
                    recorded: Dict[str, int],
                    lost: Optional[Dict[str, int]] = None,
                    excluded: Optional[List[str]] = None,
                    only: Optional[List[str]] = None) -> List[Dict[str, Any]]:
    """
    Return per-topic rows: published by the bridge, recorded, missing.

    ``missing`` is published - recorded for the bridge's topics (never
    negative); ``extra`` is recorded - published when the recorder got
    more than the bridge sent (another publisher on the same ROS domain:
    then ``missing`` can hide losses). Topics only the recorder saw have
    ``published`` None. Topics left out (matching ``excluded``, or not
    ``only`` when it is given: ``--record-exclude``, ``--record-topics``)
    are listed with ``recorded`` None.
    """
    from hil_bridge.interface.recorder_status import selected
    rows = []
    for topic in sorted(set(published) | set(recorded)):
        pub = published.get(topic)
        if not selected(topic, only or [], excluded or []) \
                and topic not in recorded:
            rows.append({'topic': topic, 'published': pub, 'recorded': None,
                         'missing': None, 'extra': None, 'lost_events': None})
            continue
        rec = recorded.get(topic, 0)
        rows.append({'topic': topic, 'published': pub, 'recorded': rec,
                     'missing': None if pub is None else max(0, pub - rec),
                     'extra': None if pub is None else max(0, rec - pub),
                     'lost_events': (lost or {}).get(topic, 0)})
    return rows


def format_recording(rows: List[Dict[str, Any]]) -> List[str]:
    """Return the recording table as text lines."""
    out = [f'{"topic":48s} {"published":>9s} {"recorded":>9s} '
           f'{"missing":>8s}']
    for r in rows:
        def cell(v: Any) -> str:
            return '-' if v is None else str(v)
        rec = 'excluded' if r['recorded'] is None else cell(r['recorded'])
        out.append(f'{r["topic"]:48s} {cell(r["published"]):>9s} '
                   f'{rec:>9s} {cell(r["missing"]):>8s}')
    missing = sum(r['missing'] or 0 for r in rows)
    total = sum(r['published'] or 0 for r in rows
                if r['recorded'] is not None and r['published'] is not None)
    out.append(f'recorded {total - missing} of {total} messages the bridge '
               f'published on recorded topics: {missing} missing')
    extra = [r for r in rows if r.get('extra')]
    if extra:
        out.append(f'WARNING: {sum(r["extra"] for r in extra)} messages more than '
                   f'the bridge published on {len(extra)} topics ('
                   f'{", ".join(r["topic"] for r in extra[:3])}'
                   f'{", ..." if len(extra) > 3 else ""}): another publisher '
                   'on this ROS_DOMAIN_ID? Then "missing" can hide losses')
    return out


def format_result(result: Optional[Dict[str, Any]], wall: float,
                  code: int) -> List[str]:
    """Return the run's result table as text lines."""
    res = result or {}

    def num(v: Any, fmt: str = '{:.2f}') -> str:
        return '-' if v is None else fmt.format(v)
    laps = res.get('lap_times') or []
    rows = [('mission', f'{res.get("mission", "-")} '
                        f'({res.get("scenario", "-")})'),
            ('status', f'{res.get("status", "no result")} '
                       f'{res.get("reason") or res.get("end_reason") or ""}'),
            ('laps', f'{res.get("laps", "-")} of '
                     f'{res.get("laps_required", "-")}'),
            ('lap times (s)', ', '.join(f'{t:.2f}' for t in laps) or '-'),
            ('best lap (s)', num(res.get('best_lap'))),
            ('cones hit', str(res.get('cones_hit', '-'))),
            ('off course', str(res.get('off_courses', '-'))),
            ('penalties (s)', num(res.get('penalty_time'), '{:.1f}')),
            ('total time (s)', num(res.get('total_time'))),
            ('sim time (s)', num(res.get('sim_time'))),
            ('wall time (s)', f'{wall:.1f}'),
            ('real-time factor', num(res['sim_time'] / wall
                                     if res.get('sim_time') and wall > 0
                                     else None)),
            ('lockstep timeouts', str(res.get('lockstep_timeouts', '-'))),
            ('exit code', str(code))]
    return [f'  {k:18s} {v}' for k, v in rows]


class _Output:
    """Node logs above a live progress line (tqdm) or as plain lines."""

    def __init__(self, live: bool) -> None:
        self.live = live
        self.bar = None
        if live:
            try:
                from tqdm import tqdm
            except ImportError:  # a tools dependency (package.xml test_depend)
                self.live = False
                return
            self.bar = tqdm(total=0, bar_format='{desc}', dynamic_ncols=True,
                            file=sys.stdout, leave=False)

    def write(self, text: str) -> None:
        for line in text.rstrip('\n').split('\n'):
            if self.bar is not None:
                self.bar.write(line, file=sys.stdout)
            else:
                sys.stdout.write(line + '\n')
                sys.stdout.flush()

    def flush(self) -> None:
        sys.stdout.flush()

    def status(self, line: str) -> None:
        if self.bar is not None:
            self.bar.set_description_str(line)
        else:
            self.write(f'[carla-hil] {line}')

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None


def _default_run_dir(scenario: str) -> str:
    stamp = datetime.datetime.now().strftime('%Y%m%d-%H%M%S')
    return os.path.join('out', 'runs', f'{scenario or "run"}_{stamp}')


def _recorder_spec(name: str, bag: str, topics: List[str],
                   exclude: List[str], namespace: str,
                   version: str = 'auto') -> ProcessSpec:
    argv = [sys.executable, '-m', 'hil_bridge.tools.recorder', bag,
            '--bag-version', version]
    if topics:
        argv += ['--topics', *topics]
    for pattern in exclude:
        argv += ['--exclude', pattern]
    argv += ['--ros-args', '-p', 'use_sim_time:=true']
    if namespace:
        argv += ['-r', f'__ns:={namespace}']
    return ProcessSpec(name=name, argv=argv, essential=False)


def _wait_ready(sup: Supervisor, lines: _Lines, names: List[str],
                stop: threading.Event) -> Optional[str]:
    """Wait until each recorder printed its ready line; return a problem."""
    deadline = time.monotonic() + RECORDER_READY_TIMEOUT
    while time.monotonic() < deadline and not stop.is_set():
        for name in names:
            rc = sup.returncode(name)
            if rc is not None:
                return f'{name} exited with code {rc} before it was ready'
        if all(n in lines.ready for n in names):
            return None
        time.sleep(0.05)
    if stop.is_set():
        return None
    return f'{", ".join(names)} not ready within {RECORDER_READY_TIMEOUT:.0f} s'


def check_config(args: argparse.Namespace) -> None:
    """
    Load the scenario (with its track file) and check ``--set`` before starting.

    Raises ``SystemExit`` with one line (file, line, key, allowed values).
    """
    names = [s.name for s in graph.profile(args.profile)]
    if 'hil_bridge' not in names or not args.scenario:
        return
    from hil_bridge.bridge.scenario import load_scenario, scenario_path
    path = scenario_path(args.scenario)
    if not os.path.exists(path):
        if args.backend == 'builtin':
            raise SystemExit(f'scenario {args.scenario!r} not found ({path}); scenarios: '
                             f'{", ".join(_scenario_names())}')
        return  # a name the CARLA backend resolves itself
    try:
        scenario = load_scenario(args.scenario)
    except (ValueError, FileNotFoundError) as err:
        raise SystemExit(str(err).split('\n')[0]) from None
    # the sensor rig the bridge will load (--set hil_bridge.rig wins): a bad
    # one stopped the bridge only after every node had started
    from hil_bridge.interface.rig import load_rig
    rig = str(effective_param('hil_bridge', 'rig', _parse_sets(args.set)) or scenario.rig)
    try:
        load_rig(rig)
    except (ValueError, FileNotFoundError) as err:
        raise SystemExit(f'rig {rig!r}: ' + str(err).split('\n')[0]) from None


def _scenario_names() -> List[str]:
    from hil_bridge.interface.config import config_path
    folder = config_path('scenarios')
    return sorted(f[:-5] for f in os.listdir(folder) if f.endswith('.yaml'))


def cmd_run(args: argparse.Namespace) -> int:
    """Run a profile of the graph; return the exit code."""
    try:
        peers = parse_peers(args.peers)
        check_peers_resolve(peers)
    except ValueError as err:
        print(f'carla-hil run: {err}', file=sys.stderr)
        return EXIT_CONFIG
    os.environ.update(dds_environment(peers))
    try:
        from hil_bridge.tools.bag_metadata import version_for
        version_for(args.record_version)
    except ValueError as err:
        print(f'carla-hil run: --record-version: {err}', file=sys.stderr)
        return EXIT_CONFIG
    try:
        check_config(args)
        return _run(args)
    except SystemExit as err:  # bad configuration: one line, code 2
        if isinstance(err.code, str):
            print(f'carla-hil run: bad configuration: {err.code}', file=sys.stderr)
            return EXIT_CONFIG
        raise


def _run(args: argparse.Namespace) -> int:
    sets = _parse_sets(args.set)
    names = [s.name for s in graph.profile(args.profile)]
    has_bridge = 'hil_bridge' in names
    if has_bridge and args.profile == 'all' and args.backend == 'builtin' \
            and not args.real_time:
        bridge = dict(LOCKSTEP_SETS)
        bridge.update(sets.get('hil_bridge', {}))
        sets['hil_bridge'] = bridge
    run_dir = args.out or args.report or ''
    report = has_bridge and not args.no_report or bool(run_dir)
    if report and not run_dir:
        run_dir = _default_run_dir(args.scenario)
    bags: Dict[str, str] = {}  # recorder process name -> bag directory
    if args.record:
        bags['recorder'] = args.record
    if report and not args.record:
        bags['report_recorder'] = os.path.join(run_dir, 'bag')
    if bags and has_bridge:
        # lockstep: every frame waits for the recorder; otherwise the
        # first frame does, so the recording starts at frame 0
        topics = list(effective_param('hil_bridge', 'lockstep_topics', sets)
                      or [])
        if 'recorder_status' not in topics:
            sets.setdefault('hil_bridge', {})['lockstep_topics'] = \
                '[' + ','.join(topics + ['recorder_status']) + ']'
    procs = build_processes(args.profile, args.backend, args.scenario,
                            args.host, args.port, args.namespace,
                            args.duration, sets)
    recorders = []
    for name, bag in bags.items():
        exclude = list(args.record_exclude)
        topics = list(args.record_topics)
        if name == 'report_recorder':
            exclude, topics = list(REPORT_EXCLUDE), []
        recorders.append(_recorder_spec(name, bag, topics, exclude,
                                        args.namespace, args.record_version))
    if run_dir:
        os.makedirs(run_dir, exist_ok=True)
    live = args.progress == 'live' or (args.progress == 'auto'
                                       and sys.stdout.isatty())
    out = _Output(live)
    lines = _Lines()
    sup = Supervisor(out=out, on_line=lines.on_line)
    stop = threading.Event()

    def on_signal(signum: int, _frame: Any) -> None:
        stop.set()

    old = {sig: signal.signal(sig, on_signal)
           for sig in (signal.SIGINT, signal.SIGTERM)}
    code = EXIT_OK
    started = time.monotonic()
    _clean_shm(out, 'of earlier runs that died')
    cleaner = _start_cleaner()
    try:
        for spec in recorders:  # first, so they hold frame 0
            sup.start(spec)
        problem = _wait_ready(sup, lines, [r.name for r in recorders], stop)
        if problem:
            out.write(f'[carla-hil] recorder: {problem}')
            code = EXIT_NODE_DIED
            raise _Abort()
        for spec in procs:
            sup.start(spec)
        if has_bridge:
            sup.start(_progress_spec(args))
        code = _supervise(args, sup, lines, procs, stop, out, started)
    except _Abort:
        pass
    finally:
        if stop.is_set():
            code = EXIT_INTERRUPTED
        codes = sup.stop_all(keep=[r.name for r in recorders])
        if recorders:  # last, so they see the nodes' final messages
            codes.update(sup.stop_all(grace=120.0))
        _clean_shm(out, 'of nodes that had to be killed')
        _stop_cleaner(cleaner)
        out.close()
        for sig, handler in old.items():
            signal.signal(sig, handler)
    wall = time.monotonic() - started
    died = [n for n, rc in codes.items()
            if rc not in (0, -signal.SIGINT, -signal.SIGTERM, None)]
    if died and code == EXIT_OK:
        print(f'[carla-hil] node(s) {died} failed on shutdown: {codes}')
    return _finish(args, lines, bags, run_dir, report, wall, code)


class _Abort(Exception):
    """The run cannot start (a recorder failed)."""


def _clean_shm(out: '_Output', whose: str) -> None:
    """Remove Fast DDS shared-memory files nobody holds; one line when any went."""
    from hil_bridge.interface.dds_shm import clean_zombies
    report = clean_zombies()
    if report.removed:
        out.write(f'[carla-hil] removed {len(report.removed)} Fast DDS shared-memory files '
                  f'({report.freed_bytes / 1e6:.0f} MB) {whose}')


def _start_cleaner() -> Any:
    """
    Start the watcher that removes the run's shared memory if the runner is killed.

    The participants of children killed while they started (and of any
    that could not clean up) cannot be removed by them after ``kill -9``
    (:func:`hil_bridge.interface.dds_shm.clean_after`); None where it
    cannot start.
    """
    from hil_bridge.interface.dds_shm import start_cleaner
    try:
        return start_cleaner()
    except OSError:
        return None


def _stop_cleaner(cleaner: Any) -> None:
    """End the watcher of a runner that ends normally (it cleaned up itself)."""
    if cleaner is None:
        return
    cleaner.terminate()
    try:
        cleaner.wait(timeout=5.0)
    except Exception:  # noqa: B902 - subprocess.TimeoutExpired: leave it, it ends alone
        pass


def _progress_spec(args: argparse.Namespace) -> ProcessSpec:
    """
    Return the process that prints the live progress line (not essential).

    A process of its own, stopped with the nodes: the runner itself has no
    DDS participant, so nothing in it can hang in a DDS shutdown.
    """
    laps = 0
    try:
        from hil_bridge.bridge.scenario import load_scenario
        scn = load_scenario(args.scenario)
        laps = int(scn.laps) if scn.mission in (
            'trackdrive', 'autocross', 'skidpad', 'acceleration') else 0
    except (FileNotFoundError, ValueError):
        pass
    return ProcessSpec('progress', [sys.executable, '-m', 'hil_bridge.tools.progress_node',
                                    '--laps', str(laps)],
                       essential=False, hide=PROGRESS_PREFIX)


def _supervise(args: argparse.Namespace, sup: Supervisor, lines: _Lines,
               procs: List[ProcessSpec], stop: threading.Event,
               out: _Output, started: float) -> int:
    """Watch the nodes until the run ends; return the exit code."""
    essential = [p.name for p in procs if p.essential]
    wall_limit = None if not args.duration else \
        max(30.0, args.duration * args.wall_factor + 30.0)
    last_line = started
    period = 0.5 if out.live else args.progress_every
    while True:
        name = sup.first_exit(timeout=0.5, names=essential, stop=stop)
        now = time.monotonic()
        if stop.is_set():
            out.write('[carla-hil] interrupted, shutting down')
            return EXIT_INTERRUPTED
        if name is not None:
            rc = sup.returncode(name)
            if not (name == 'hil_bridge' and rc == 0):
                out.write(f'[carla-hil] node {name} exited with code {rc}')
            return run_exit_code(name, rc, lines.result, bool(args.duration))
        if wall_limit is not None and now - started > wall_limit:
            out.write(f'[carla-hil] wall-clock limit {wall_limit:.0f} s '
                      'reached')
            return EXIT_MISSION_FAILED if 'hil_bridge' in essential \
                else EXIT_OK
        if now - last_line >= period:
            last_line = now
            if lines.progress:
                out.status(lines.progress)
            elif not out.live:
                out.write(f'[carla-hil] running {now - started:.0f} s, '
                          f'{len(essential)} nodes alive')


def _finish(args: argparse.Namespace, lines: _Lines, bags: Dict[str, str],
            run_dir: str, report: bool, wall: float, code: int) -> int:
    """Print the result, the recording counts and the report path."""
    result = lines.result
    if result is not None:
        print('[carla-hil] result: ' + json.dumps(result))
    summary: Dict[str, Any] = {'exit_code': code, 'wall_s': round(wall, 1),
                               'result': result, 'recordings': {}}
    published = (result or {}).get('published') or {}
    for name, bag in bags.items():
        rec = lines.recorder.get(name)
        if rec is None:
            print(f'[carla-hil] {name}: no summary (killed?); {bag} may lack '
                  'metadata.yaml')
            continue
        excluded, only = (list(REPORT_EXCLUDE), []) \
            if name == 'report_recorder' else \
            (list(args.record_exclude), list(args.record_topics))
        rows = recording_table(published, rec['messages'], rec.get('lost'),
                               excluded, only)
        summary['recordings'][bag] = {'rows': rows,
                                      'refused': rec.get('refused', 0)}
        if name == 'recorder' or not args.record:
            print(f'[carla-hil] recording {bag}:')
            for line in format_recording(rows):
                print('  ' + line)
    print('[carla-hil] result:')
    for line in format_result(result, wall, code):
        print(line)
    from hil_bridge.tools.report import RUN_FILE
    targets = [os.path.join(run_dir, 'result.json')] if run_dir else []
    targets += [os.path.join(b, RUN_FILE) for b in bags.values()
                if os.path.isdir(b)]
    for target in targets:  # `carla-hil report BAG` reads it back
        with open(target, 'w', encoding='utf-8') as f:
            json.dump(summary, f, indent=2, default=str)
    if report:
        bag = args.record or bags.get('report_recorder')
        try:
            from hil_bridge.tools.report import write_report
            path = write_report(bag, run_dir, result,
                                recording=summary['recordings'].get(bag))
            print(f'[carla-hil] report: {path}')
        except (OSError, ValueError) as err:
            print(f'[carla-hil] no report: {err}')
        except ImportError as err:  # matplotlib: a tools dependency
            print(f'[carla-hil] no report: {err.name or err} is not installed '
                  '(pip install matplotlib, or apt install python3-matplotlib)')
    print(f'[carla-hil] exit code {code}')
    return code


def _delegate(module: str, argv: List[str]) -> int:
    """Run ``module.main(argv)`` of another package's entry point."""
    mod = importlib.import_module(module)
    rc = mod.main(argv)
    return int(rc or 0)


def make_parser() -> argparse.ArgumentParser:
    """Return the argument parser of ``carla-hil``."""
    parser = argparse.ArgumentParser(prog='carla-hil', description=__doc__
                                     .split('\n')[1])
    sub = parser.add_subparsers(dest='command', required=True)
    run = sub.add_parser('run', help='run the graph as processes')
    run.add_argument('--profile', default='all',
                     choices=sorted(graph.profiles()))
    run.add_argument('--backend', default='builtin',
                     choices=['builtin', 'carla'])
    run.add_argument('--scenario', default='trackdrive')
    run.add_argument('--host', default='')
    run.add_argument('--port', type=int, default=0)
    run.add_argument('--namespace', default='')
    run.add_argument('--peers', default='',
                     help='two machines: the other host(s), comma separated (IP or name); '
                     'without it DDS discovery stays on this host')
    run.add_argument('--duration', type=float, default=0.0,
                     help='sim seconds (0 = until mission end)')
    run.add_argument('--wall-factor', type=float, default=20.0,
                     help='wall-clock limit = duration * factor + 30 s')
    run.add_argument('--real-time', action='store_true',
                     help='keep the configured clock (paced, no lockstep) '
                     'instead of lockstep as fast as possible')
    run.add_argument('--record', default='',
                     help='rosbag2 bag directory to write (all topics)')
    run.add_argument('--record-version', default='auto', metavar='V',
                     help='metadata.yaml version of the bags: 5 (Humble '
                     'reads it), 9 (Jazzy, Kilted), a distro name, or auto '
                     '(from ROS_DISTRO: 5 on Humble, else 9)')
    run.add_argument('--record-topics', nargs='+', default=[],
                     metavar='PATTERN', help='record only these topics')
    run.add_argument('--record-exclude', action='append', default=[],
                     metavar='PATTERN',
                     help="leave topics out, e.g. '*/image' (repeatable)")
    run.add_argument('--out', default='',
                     help='run directory for the report (default '
                     'out/runs/<scenario>_<date-time>)')
    run.add_argument('--report', default='', help='same as --out')
    run.add_argument('--no-report', action='store_true',
                     help='no report (and no report recording)')
    run.add_argument('--set', action='append', default=[],
                     metavar='NODE.PARAM=VALUE',
                     help='parameter override (repeatable)')
    run.add_argument('--progress', default='auto',
                     choices=['auto', 'live', 'lines'],
                     help='live one-line progress (auto: on a terminal)')
    run.add_argument('--progress-every', type=float, default=15.0,
                     help='seconds between progress lines without a '
                     'terminal')
    run.set_defaults(func=cmd_run)
    for name, module in (('play', 'hil_bridge.tools.player'),
                         ('report', 'hil_bridge.tools.report'),
                         ('scenarios', 'hil_bridge.tools.suites'),
                         ('track', 'hil_bridge.tools.track_cli'),
                         ('serve', 'hil_bridge.carla_server.server'),
                         ('train-vision', 'cone_detection.tools.train_vision'),
                         ('evaluate', 'cone_detection.tools.evaluate'),
                         ('ncap', 'aeb_control.tools.ncap')):
        p = sub.add_parser(name, add_help=False,
                           help=f'see {module} (--help for its options)')
        p.set_defaults(func=None, module=module)
    return parser


def _dump_stacks_on_sigusr1() -> None:
    """
    Let SIGUSR1 write every thread's stack to stderr (where a run hangs).

    A crash (SIGSEGV, SIGABRT, ... in a C extension: rclpy, Fast DDS)
    writes them too, so the run's log says where (a sweep's runner once
    ended with -11 after its recorder was ready, and left one line).
    """
    try:
        faulthandler.register(signal.SIGUSR1, all_threads=True)
        faulthandler.enable(all_threads=True)
    except (AttributeError, OSError, ValueError):
        pass    # no SIGUSR1 (Windows), or stderr is no file (captured in tests)


def main(argv: Optional[List[str]] = None) -> int:
    """Entry point of ``carla-hil`` (SIGUSR1 or a crash: every thread's stack to stderr)."""
    _dump_stacks_on_sigusr1()
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = make_parser()
    args, rest = parser.parse_known_args(argv)
    try:
        if args.func is None:
            return _delegate(args.module, rest)
        if rest:
            parser.error(f'unrecognised arguments: {" ".join(rest)}')
        return args.func(args)
    except KeyboardInterrupt:  # Ctrl-C before a command took the signal (imports)
        print(f'[carla-hil] {args.command}: interrupted', file=sys.stderr, flush=True)
        return EXIT_INTERRUPTED


if __name__ == '__main__':
    sys.exit(main())
