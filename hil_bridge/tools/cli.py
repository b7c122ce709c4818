# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
``carla-hil``: run the graph without ``ros2 launch``.

Subcommands::

    carla-hil run --profile all|sim_pc|onboard --backend builtin|carla
                  --scenario NAME [--duration S] [--record FILE.mcap]
                  [--report DIR] [--set NODE.PARAM=VALUE ...]
    carla-hil play FILE.mcap [--rate R] [--no-clock]
    carla-hil report FILE.mcap --out DIR
    carla-hil scenarios list
    carla-hil scenarios run SUITE [--jobs N] [--out DIR]
    carla-hil track check|convert|plot FILE [--format F] [--convention C]
                  [--out FILE]
    carla-hil train-vision ... | evaluate ... | ncap ...

``run`` starts the nodes of ``config/graph.yaml`` as separate processes
with the same parameter files as the launch files, prefixes and forwards
their logs, stops everything on Ctrl-C, on ``--duration`` or when the
bridge reports the mission's end, and exits non-zero when a node dies
(2) or the mission fails (1).
"""

import argparse
import importlib
import json
import os
import shutil
import signal
import sys
import tempfile
import threading
import time
from typing import Any, Dict, List, Optional

from hil_bridge.interface.config import dds_environment
from hil_bridge.tools import graph
from hil_bridge.tools.supervisor import ProcessSpec, Supervisor

RESULT_PREFIX = 'REFEREE_RESULT '
EXIT_OK, EXIT_MISSION_FAILED, EXIT_NODE_DIED, EXIT_INTERRUPTED = 0, 1, 2, 130


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


def build_processes(profile: str, backend: str = 'builtin',
                    scenario: str = '', host: str = '', port: int = 0,
                    namespace: str = '', duration: float = 0.0,
                    sets: Optional[Dict[str, Dict[str, str]]] = None
                    ) -> List[ProcessSpec]:
    """
    Return the processes of ``profile``, as the launch files start them.

    The bridge gets ``backend``/``scenario``/``host``/``port``/``duration``
    and ``exit_on_mission_end`` as parameter overrides.
    """
    sets = _merge_sets(scenario_node_params(scenario), sets or {})
    known = {s.name for s in graph.profile('all')}
    unknown = set(sets) - known
    if unknown:
        raise SystemExit(f'--set names unknown node(s) {sorted(unknown)}; '
                         f'nodes: {sorted(known)}')
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
        argv = [sys.executable, '-m', graph.module_of(spec.executable)]
        argv += graph.ros_args(spec, namespace=namespace,
                               overrides=overrides)
        procs.append(ProcessSpec(name=spec.name, argv=argv))
    return procs


class _Progress:
    """Collects the bridge's referee result line and prints progress."""

    def __init__(self) -> None:
        self.result: Optional[Dict[str, Any]] = None
        self.events: List[str] = []

    def on_line(self, name: str, line: str) -> None:
        idx = line.find(RESULT_PREFIX)
        if idx >= 0:
            try:
                self.result = json.loads(line[idx + len(RESULT_PREFIX):])
            except ValueError:
                pass


FAILED_STATUS = ('dnf', 'failed', 'timeout', 'collision', 'error')


def _status(result: Optional[Dict[str, Any]]) -> str:
    return str((result or {}).get('status', '')).lower()


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


def cmd_run(args: argparse.Namespace) -> int:
    """Run a profile of the graph; return the exit code."""
    os.environ.update(dds_environment())
    procs = build_processes(args.profile, args.backend, args.scenario,
                            args.host, args.port, args.namespace,
                            args.duration, _parse_sets(args.set))
    record, exclude, temp_dir = args.record, [], None
    if args.report and not record:
        # a recording only for the report: camera images are not needed
        temp_dir = tempfile.mkdtemp(prefix='carla_hil_')
        record = os.path.join(temp_dir, 'run.mcap')
        exclude = ['--exclude', '*/image', '--exclude', '*/image/compressed']
    if record:
        procs.append(ProcessSpec(
            name='recorder', essential=False,
            argv=[sys.executable, '-m', 'hil_bridge.tools.recorder', record,
                  *exclude, '--ros-args', '-p', 'use_sim_time:=true']))
    progress = _Progress()
    sup = Supervisor(on_line=progress.on_line)
    stop = threading.Event()

    def on_signal(signum: int, _frame: Any) -> None:
        stop.set()

    old = {sig: signal.signal(sig, on_signal)
           for sig in (signal.SIGINT, signal.SIGTERM)}
    code = EXIT_OK
    started = time.monotonic()
    try:
        if record:  # start the recorder first so it sees frame 0
            sup.start(procs[-1])
            time.sleep(1.0)
        for spec in procs[:-1] if record else procs:
            sup.start(spec)
        essential = [p.name for p in procs if p.essential]
        wall_limit = None if not args.duration else \
            max(30.0, args.duration * args.wall_factor + 30.0)
        last_progress = started
        while True:
            name = sup.first_exit(timeout=1.0, names=essential, stop=stop)
            now = time.monotonic()
            if stop.is_set():
                print('[carla-hil] interrupted, shutting down')
                code = EXIT_INTERRUPTED
                break
            if name is not None:
                rc = sup.returncode(name)
                is_bridge = name == 'hil_bridge'
                if is_bridge and rc == 0:
                    code = mission_exit_code(progress.result,
                                             bool(args.duration))
                else:
                    print(f'[carla-hil] node {name} exited with code {rc}')
                    code = EXIT_NODE_DIED
                break
            if wall_limit is not None and now - started > wall_limit:
                print(f'[carla-hil] wall-clock limit {wall_limit:.0f} s '
                      'reached')
                code = EXIT_MISSION_FAILED if 'hil_bridge' in essential \
                    else EXIT_OK
                break
            if now - last_progress >= args.progress_every:
                last_progress = now
                print(f'[carla-hil] running {now - started:.0f} s, '
                      f'{len(essential)} nodes alive')
    finally:
        codes = sup.stop_all(keep=['recorder'])
        if record:  # stop the recorder last, so it sees the nodes' end
            codes.update(sup.stop_all(grace=60.0))
        for sig, handler in old.items():
            signal.signal(sig, handler)
    died = [n for n, rc in codes.items()
            if rc not in (0, -signal.SIGINT, -signal.SIGTERM, None)
            and n != 'recorder']
    if died and code == EXIT_OK:
        print(f'[carla-hil] node(s) {died} failed on shutdown: {codes}')
    if progress.result is not None:
        print('[carla-hil] result: ' + json.dumps(progress.result))
    if args.report:
        from hil_bridge.tools.report import write_report
        write_report(record, args.report, progress.result)
        print(f'[carla-hil] report written to {args.report}')
        if temp_dir:
            shutil.rmtree(temp_dir, ignore_errors=True)
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
    run.add_argument('--duration', type=float, default=0.0,
                     help='sim seconds (0 = until mission end)')
    run.add_argument('--wall-factor', type=float, default=20.0,
                     help='wall-clock limit = duration * factor + 30 s')
    run.add_argument('--record', default='', help='MCAP file to write')
    run.add_argument('--report', default='', help='report directory')
    run.add_argument('--set', action='append', default=[],
                     metavar='NODE.PARAM=VALUE',
                     help='parameter override (repeatable)')
    run.add_argument('--progress-every', type=float, default=15.0)
    run.set_defaults(func=cmd_run)
    for name, module in (('play', 'hil_bridge.tools.player'),
                         ('report', 'hil_bridge.tools.report'),
                         ('scenarios', 'hil_bridge.tools.suites'),
                         ('track', 'hil_bridge.tools.track_cli'),
                         ('train-vision', 'cone_detection.tools.train_vision'),
                         ('evaluate', 'cone_detection.tools.evaluate'),
                         ('ncap', 'aeb_control.tools.ncap')):
        p = sub.add_parser(name, add_help=False,
                           help=f'see {module} (--help for its options)')
        p.set_defaults(func=None, module=module)
    return parser


def main(argv: Optional[List[str]] = None) -> int:
    """Entry point of ``carla-hil``."""
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = make_parser()
    args, rest = parser.parse_known_args(argv)
    if args.func is None:
        return _delegate(args.module, rest)
    if rest:
        parser.error(f'unrecognised arguments: {" ".join(rest)}')
    return args.func(args)


if __name__ == '__main__':
    sys.exit(main())
