# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
Scenario suites: ``carla-hil scenarios list|run``.

``carla-hil scenarios run SUITE|--scenarios NAME ... [--jobs N]
[--address ADDR] [--only PATTERN ...] [--param KEY=VALUE ...]`` expands a
suite of ``config/suites.yaml`` into runs (:class:`~hil_bridge.tools.batch.Job`)
and runs them on Ray (:mod:`hil_bridge.tools.batch`): a local instance by
default, the cluster at ``--address`` / ``RAY_ADDRESS`` otherwise. Each run
leases its ROS_DOMAIN_ID on the host it runs on, so concurrent runs never
share one. The output directory gets every run's directory plus
``summary.md``, ``summary.csv`` and ``summary.png`` with each run's pass
criteria and verdict.

Suite forms (``config/suites.yaml``):

* ``runs:`` a list of ``{scenario, name, set}`` (``carla-hil run`` each);
* ``sweep:`` ``{scenario, tracks, seeds, modes: {MODE: [sets]}, laps}``:
  generated tracks (``hil_bridge.track_seed``) x simulator seeds x modes;
* ``ncap:`` ``{runner: full_stack|in_process, quick, strategies}``: the
  Euro NCAP matrix of :mod:`aeb_control.tools.ncap`, each case one run
  through the whole graph (``full_stack``) or the in-process runner;
* ``module:`` one ``python -m MODULE ARGS`` run;

each with ``pass:`` criteria (:func:`hil_bridge.tools.batch.judge`) and
``cpus:`` (CPUs each run declares to Ray, default 1).

``--repeat N`` runs every run N times side by side and fails the runs
whose copies differ (:mod:`hil_bridge.tools.repeats`); a sweep's summary
adds its figures per mode (:mod:`hil_bridge.tools.sweep_stats`).
``carla-hil scenarios compare OUT1 OUT2 ..`` compares batches run
separately (another time, load or machine) the same way.
"""

import argparse
import csv
import fnmatch
import glob
import os
import re
import sys
import time
from typing import Any, Dict, List, Optional, Tuple

from hil_bridge.interface.config import config_dir, load_yaml
from hil_bridge.tools.batch import describe_jobs, Job, run_batch
from hil_bridge.tools.repeats import check_repeats, compare_runs, read_summary, repeat_jobs
from hil_bridge.tools.sweep_stats import sweep_figures

#: criteria of a run when its suite names none
DEFAULT_CRITERIA: Dict[str, Any] = {'status': 'finished'}
#: NCAP cases the full stack cannot drive: the driver robot only drives
#: straight (the curve) and the FS-track case has a track, not exported
NCAP_FULL_STACK_SKIP = ('curve', 'fs_track')


def suites() -> Dict[str, Any]:
    """Return the suites of ``config/suites.yaml``."""
    return load_yaml('suites.yaml')['suites']


def scenario_names() -> List[str]:
    """Return the scenario files under ``config/scenarios``."""
    return sorted(os.path.splitext(os.path.basename(p))[0] for p in
                  glob.glob(os.path.join(config_dir(), 'scenarios',
                                         '*.yaml')))


def slug(text: str) -> str:
    """Return ``text`` as a run name: lower case, ``_`` between words."""
    return re.sub(r'[^a-z0-9]+', '_', text.lower()).strip('_')


def _value(text: str) -> Any:
    import yaml
    return yaml.safe_load(text)


def expand(name: str, params: Optional[Dict[str, Any]] = None
           ) -> Tuple[List[Job], Dict[str, Any]]:
    """
    Return the runs of suite ``name`` and its criteria.

    ``params`` override keys of the suite's ``sweep:`` / ``ncap:`` block
    (e.g. ``tracks=4``). Raises ``SystemExit`` (one line) on an unknown
    suite or a malformed entry.
    """
    table = suites()
    if name not in table:
        raise SystemExit(f'unknown suite {name!r}; suites: {", ".join(sorted(table))}')
    suite = table[name]
    if isinstance(suite, list):
        suite = {'runs': suite}
    criteria = dict(suite.get('pass', DEFAULT_CRITERIA))
    cpus = float(suite.get('cpus', 1.0))
    timeout = float(suite.get('timeout', 1800.0))
    params = params or {}
    if 'runs' in suite:
        jobs = [Job(name=e.get('name', e['scenario']), scenario=e['scenario'],
                    sets=[str(s) for s in e.get('set', [])])
                for e in suite['runs']]
    elif 'sweep' in suite:
        jobs = sweep_jobs(dict(suite['sweep'], **params))
    elif 'ncap' in suite:
        spec = dict(suite['ncap'], **params)
        jobs = ncap_jobs(spec)
        criteria = dict(suite.get('pass', {}))
        if spec.get('runner', 'full_stack') == 'in_process':
            criteria = {'status': 'passed'}
    elif 'module' in suite:
        jobs = [Job(name=slug(suite['module']), kind='module',
                    args={'module': suite['module'],
                          'argv': [str(a) for a in suite.get('args', [])]})]
        criteria = dict(suite.get('pass', {'exit_code': 0}))
    else:
        raise SystemExit(f'suite {name!r}: expected runs, sweep, ncap or module')
    for job in jobs:
        job.cpus, job.timeout = cpus, timeout
        job.criteria = dict(criteria, **job.criteria)
    names = [j.name for j in jobs]
    if len(set(names)) != len(names):
        raise SystemExit(f'suite {name!r}: run names are not unique')
    return jobs, criteria


def sweep_jobs(spec: Dict[str, Any]) -> List[Job]:
    """
    Return the runs of a track sweep: tracks x seeds x modes.

    ``tracks``: a count (layouts 0..N-1) or a list of layout seeds;
    ``seeds``: simulator seeds; ``modes``: name -> extra ``--set`` items;
    ``laps`` (optional): laps instead of the scenario's.
    """
    tracks = spec.get('tracks', 1)
    tracks = list(range(int(tracks))) if isinstance(tracks, int) else \
        [int(t) for t in tracks]
    seeds = spec.get('seeds', [0])
    seeds = [int(s) for s in (seeds if isinstance(seeds, list) else [seeds])]
    modes = spec.get('modes') or {'default': []}
    base, scenario_yaml = str(spec['scenario']), ''
    if spec.get('laps'):
        import yaml
        from hil_bridge.bridge.scenario import scenario_path
        with open(scenario_path(base), encoding='utf-8') as f:
            data = yaml.safe_load(f)
        data['laps'] = int(spec['laps'])
        scenario_yaml = yaml.safe_dump(data, sort_keys=False)
    jobs = []
    for track in tracks:
        for seed in seeds:
            for mode, sets in modes.items():
                jobs.append(Job(
                    name=f'sweep_t{track}_s{seed}_{mode}', scenario=base,
                    scenario_yaml=scenario_yaml,
                    sets=[f'hil_bridge.track_seed={track}',
                          f'hil_bridge.seed={seed}', *[str(s) for s in sets or []]]))
    return jobs


def ncap_jobs(spec: Dict[str, Any]) -> List[Job]:
    """
    Return the Euro NCAP matrix as runs.

    ``runner: full_stack`` (default): each case a generated scenario run
    through the whole graph (lidar, detector, AEB node, bridge with the
    driver robot), the cases of :data:`NCAP_FULL_STACK_SKIP` left out;
    pass = no collision, and for false-activation cases also no brake
    request. ``in_process``: each case x strategy one call of
    :func:`aeb_control.tools.ncap.run_case` in the worker.
    """
    import dataclasses

    import yaml

    from aeb_control.tools import ncap
    cases = ncap.matrix(bool(spec.get('quick', False)))
    only = str(spec.get('only', ''))
    cases = [c for c in cases if only in c.name]
    if spec.get('runner', 'full_stack') == 'in_process':
        strategies = spec.get('strategies') or list(ncap.STRATEGIES)
        return [Job(name=f'{s}_{slug(c.name)}', kind='ncap',
                    args={'case': dataclasses.asdict(c), 'strategy': s})
                for s in strategies for c in cases]
    profile = ncap.load_vehicle_profile('passenger_car')
    jobs = []
    for case in cases:
        if case.kind in NCAP_FULL_STACK_SKIP:
            continue
        scenario, _follower, _timeout = ncap.build_case(case, profile, profile)
        scenario.name = slug(case.name)
        data = ncap.scenario_dict(scenario, case.name)
        data['node_params'] = ncap.NCAP_NODE_PARAMS
        criteria: Dict[str, Any] = {'no_collision': True}
        if case.false_activation_case:  # the ego must drive past unbraked
            criteria['no_brake'] = True
        jobs.append(Job(name=slug(case.name), scenario_yaml=yaml.safe_dump(
            data, sort_keys=False), criteria=criteria))
    return jobs


def scenario_jobs(names: List[str]) -> List[Job]:
    """Return one run per scenario name or path (``--scenarios``)."""
    from hil_bridge.bridge.scenario import scenario_path
    jobs = []
    for name in names:
        path = scenario_path(name)
        if not os.path.isfile(path):
            raise SystemExit(f'scenario {name!r} not found ({path}); scenarios: '
                             f'{", ".join(scenario_names())}')
        job = Job(name=slug(os.path.splitext(os.path.basename(name))[0]),
                  criteria=dict(DEFAULT_CRITERIA))
        if os.path.isfile(name):  # a file of this host: ship its text
            with open(name, encoding='utf-8') as f:
                job.scenario_yaml = f.read()
        else:
            job.scenario = name
        jobs.append(job)
    return jobs


def select(jobs: List[Job], only: Optional[List[str]]) -> List[Job]:
    """Keep the runs whose name matches one of the ``only`` glob patterns."""
    if not only:
        return jobs
    return [j for j in jobs if any(fnmatch.fnmatchcase(j.name, p) or j.name == p
                                   or j.scenario == p for p in only)]


# ----------------------------------------------------------------- summary
COLUMNS = ('name', 'pass', 'why', 'status', 'reason', 'exit_code', 'wall_s',
           'attempts', 'retried', 'host', 'domain', 'laps', 'lap_times',
           'max_lap_time_ratio', 'lap_time_ratios', 'cones_hit',
           'off_courses', 'penalties_s', 'collisions',
           'brake_requests', 'lockstep_timeouts', 'resent_frames', 'impact_kmh',
           'min_distance_m', 'score', 'left_on_worker')
#: row fields kept out of the Markdown table (still in the CSV)
CSV_ONLY = ('kind', 'started', 'ended')


def cancelled_row(job: Job) -> Dict[str, Any]:
    """Return the summary row of a run cancelled or never started (Ctrl-C)."""
    return {'name': job.name, 'kind': job.kind, 'pass': False,
            'why': 'cancelled (Ctrl-C)', 'attempts': 0}


def write_summary(rows: List[Dict[str, Any]], out_dir: str, title: str = '',
                  criteria: str = '', wall_s: Optional[float] = None,
                  sections: Optional[List[str]] = None) -> None:
    """
    Write ``summary.md``, ``summary.csv`` and ``summary.png`` of the rows.

    ``sections``: Markdown lines appended to ``summary.md`` after the table
    (repeats, sweep figures).
    """
    os.makedirs(out_dir, exist_ok=True)
    keys = [k for k in COLUMNS if any(k in r and r[k] not in ('', None)
                                      for r in rows)]
    keys += sorted({k for r in rows for k in r} - set(keys) - set(COLUMNS))
    with open(os.path.join(out_dir, 'summary.csv'), 'w', newline='',
              encoding='utf-8') as f:
        writer = csv.DictWriter(f, fieldnames=keys, extrasaction='ignore')
        writer.writeheader()
        writer.writerows([{k: r.get(k, '') for k in keys} for r in rows])
    passed = sum(1 for r in rows if r.get('pass'))
    retried = sum(1 for r in rows if r.get('retried'))
    head = [f'# {title or "batch"}', '',
            f'{len(rows)} runs: {passed} passed, {len(rows) - passed} failed, '
            f'{retried} retried' +
            (f'; wall time {wall_s:.1f} s' if wall_s is not None else '') +
            '.  ', f'Pass criteria: {criteria or "per run (column why)"}.', '']
    shown = [k for k in keys if k not in CSV_ONLY]
    lines = ['| ' + ' | '.join(shown) + ' |', '|' + '---|' * len(shown)]
    lines += ['| ' + ' | '.join(_cell(r.get(k, '')) for k in shown) + ' |'
              for r in rows]
    with open(os.path.join(out_dir, 'summary.md'), 'w',
              encoding='utf-8') as f:
        f.write('\n'.join(head + lines + list(sections or [])) + '\n')
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(8, 2 + 0.25 * max(1, len(rows))))
    walls = [float(r.get('wall_s') or 0.0) for r in rows]
    bars = ax.barh([str(r.get('name', '?')) for r in rows], walls,
                   color=['tab:green' if r.get('pass') else 'tab:red'
                          for r in rows])
    for bar, r in zip(bars, rows):
        if r.get('retried'):
            bar.set_hatch('//')
    ax.invert_yaxis()
    ax.set_xlabel('wall time (s); green = passed, red = failed, '
                  'hatched = retried')
    ax.set_title(f'{title}: {passed}/{len(rows)} passed')
    fig.tight_layout()
    fig.savefig(os.path.join(out_dir, 'summary.png'), dpi=100)
    plt.close(fig)


def _cell(value: Any) -> str:
    if isinstance(value, bool):
        return 'PASS' if value else 'FAIL'
    if isinstance(value, float):
        return f'{value:.3g}' if abs(value) < 1000 else f'{value:.0f}'
    return str(value).replace('|', '/')


# --------------------------------------------------------------------- CLI
def make_parser() -> argparse.ArgumentParser:
    """Return the parser of ``carla-hil scenarios``."""
    parser = argparse.ArgumentParser(prog='carla-hil scenarios')
    sub = parser.add_subparsers(dest='cmd', required=True)
    sub.add_parser('list')
    run = sub.add_parser('run', help='run a suite (or scenarios) on Ray')
    run.add_argument('suite', nargs='?', default='',
                     help='suite of config/suites.yaml')
    run.add_argument('--scenarios', nargs='+', default=[], metavar='NAME',
                     help='run these scenarios (names or files) instead')
    run.add_argument('--jobs', type=int, default=None,
                     help='runs at a time (default: 1 on the local '
                     "instance, the cluster's CPUs / CPUs per run)")
    run.add_argument('--address', default=None,
                     help='Ray cluster (default $RAY_ADDRESS, else a local '
                     'instance in this process)')
    run.add_argument('--cpus', type=float, default=None,
                     help="CPUs each run declares (default: the suite's, 1)")
    run.add_argument('--out', default='',
                     help='output directory (default out/suites/SUITE_DATE)')
    run.add_argument('--only', nargs='+', default=None, metavar='PATTERN',
                     help='run only runs whose name matches (glob)')
    run.add_argument('--param', action='append', default=[],
                     metavar='KEY=VALUE',
                     help='override a key of the suite (tracks=4, quick=true)')
    run.add_argument('--timeout', type=float, default=None,
                     help='wall seconds per run (default 1800)')
    run.add_argument('--repeat', type=int, default=1, metavar='N',
                     help='run every run N times (NAME_r1..), copies side by '
                     'side; a run whose copies differ fails (determinism)')
    compare = sub.add_parser('compare', help='compare the results of batches run '
                             'separately (same result every time: exit 0)')
    compare.add_argument('outs', nargs='+', metavar='OUT',
                         help='output directories of the batches (summary.csv)')
    return parser


def main(argv: Optional[List[str]] = None) -> int:
    """
    Entry point of ``carla-hil scenarios``; exit 0 when every run passed.

    1: a run failed; 2: bad configuration (an unknown suite or scenario, a
    bad option value: one line); 130: interrupted.
    """
    args = make_parser().parse_args(argv)
    try:
        return _main(args)
    except SystemExit as err:  # our own one-line configuration errors
        if isinstance(err.code, str):
            print(f'carla-hil scenarios: {err.code}', file=sys.stderr)
            return 2
        raise


def _main(args: argparse.Namespace) -> int:
    if args.cmd == 'list':
        print('scenarios: ' + ', '.join(scenario_names()))
        for name in suites():
            jobs, _ = expand(name)
            print(f'suite {name}: {len(jobs)} runs ({describe_jobs(jobs)}): '
                  + ', '.join(j.name for j in jobs[:6])
                  + (', ...' if len(jobs) > 6 else ''))
        return 0
    if args.cmd == 'compare':
        if len(args.outs) < 2:
            raise SystemExit('compare needs at least two output directories')
        same, lines = compare_runs([read_summary(d) for d in args.outs], args.outs)
        print('\n'.join(lines))
        return 0 if same else 1
    if bool(args.suite) == bool(args.scenarios):
        raise SystemExit('give a suite or --scenarios (not both)')
    params = {}
    for item in args.param:
        key, sep, value = item.partition('=')
        if not sep:
            raise SystemExit(f'--param {item!r}: expected KEY=VALUE')
        params[key] = _value(value)
    if args.suite:
        jobs, _ = expand(args.suite, params)
    else:
        jobs = scenario_jobs(args.scenarios)
    jobs = select(jobs, args.only)
    if not jobs:
        raise SystemExit(f'no runs match --only {" ".join(args.only or [])}')
    jobs = repeat_jobs(jobs, args.repeat)
    for job in jobs:
        if args.cpus is not None:
            job.cpus = args.cpus
        if args.timeout is not None:
            job.timeout = args.timeout
    title = args.suite or 'scenarios'
    out = os.path.abspath(args.out or os.path.join(
        'out', 'suites', f'{title}_{time.strftime("%Y%m%d_%H%M%S")}'))
    if args.jobs is not None and args.jobs < 1:
        raise SystemExit('--jobs must be at least 1')
    t0 = time.monotonic()
    done: Dict[str, Dict[str, Any]] = {}
    try:
        rows = run_batch(jobs, out, parallel=args.jobs, address=args.address,
                         on_row=lambda row: done.update({row['name']: row}))
    except KeyboardInterrupt:
        rows = [done.get(j.name) or cancelled_row(j) for j in jobs]
        write_summary(rows, out, title=f'{title} (interrupted: {len(done)} of '
                      f'{len(rows)} runs done)', criteria=describe_jobs(jobs),
                      wall_s=time.monotonic() - t0)
        print(f'\n[batch] interrupted: every run cancelled; {len(done)} of '
              f'{len(rows)} done, {out}/summary.md', file=sys.stderr)
        return 130
    wall = time.monotonic() - t0
    rows, repeats = check_repeats(rows)
    write_summary(rows, out, title=f'{title} ({len(rows)} runs, jobs '
                  f'{args.jobs or "auto"})', criteria=describe_jobs(jobs),
                  wall_s=wall, sections=repeats + sweep_figures(rows))
    with open(os.path.join(out, 'summary.md'), encoding='utf-8') as f:
        print(f.read())
    print(f'[batch] {out}/summary.md, summary.csv, summary.png; '
          f'wall time {wall:.1f} s')
    return 0 if all(r.get('pass') for r in rows) else 1


if __name__ == '__main__':
    sys.exit(main())
