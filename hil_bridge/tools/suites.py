# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
Scenario suites: ``carla-hil scenarios list|run SUITE [--jobs N]``.

``run`` starts one ``carla-hil run`` per scenario of the suite
(``config/suites.yaml``), N at a time, each in its own ROS_DOMAIN_ID so the
runs cannot see each other's traffic, and writes ``summary.md``,
``summary.csv`` and ``summary.png`` plus each run's report directory.
Several hosts: give each host a disjoint ``--domain-base`` and a slice of
the suite with ``--only``; the summaries are plain CSV to concatenate.
"""

import argparse
from concurrent.futures import ThreadPoolExecutor
import csv
import glob
import json
import os
import subprocess
import sys
import time
from typing import Any, Dict, List, Optional

from hil_bridge.interface.config import config_dir, load_yaml

RESULT_PREFIX = 'REFEREE_RESULT '


def suites() -> Dict[str, Any]:
    """Return the suites of ``config/suites.yaml``."""
    return load_yaml('suites.yaml')['suites']


def scenario_names() -> List[str]:
    """Return the scenario files under ``config/scenarios``."""
    return sorted(os.path.splitext(os.path.basename(p))[0] for p in
                  glob.glob(os.path.join(config_dir(), 'scenarios',
                                         '*.yaml')))


def run_one(entry: Dict[str, Any], out_dir: str, domain: int,
            timeout: float) -> Dict[str, Any]:
    """
    Run one scenario of a suite in its own ROS domain; return a row.

    The entry's ``name`` (default: its scenario) names the run directory
    and the row.
    """
    name = entry.get('name', entry['scenario'])
    run_dir = os.path.join(out_dir, name)
    os.makedirs(run_dir, exist_ok=True)
    argv = [sys.executable, '-m', 'hil_bridge.tools.cli', 'run', '--scenario',
            entry['scenario'], '--report', run_dir]
    for item in entry.get('set', []):
        argv += ['--set', item]
    env = dict(os.environ, ROS_DOMAIN_ID=str(domain))
    env.setdefault('ROS_AUTOMATIC_DISCOVERY_RANGE', 'LOCALHOST')
    t0 = time.monotonic()
    with open(os.path.join(run_dir, 'log.txt'), 'w', encoding='utf-8') as log:
        try:
            proc = subprocess.run(argv, env=env, stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, text=True,
                                  timeout=timeout, check=False)
            output, code = proc.stdout, proc.returncode
        except subprocess.TimeoutExpired as exc:
            output, code = str(exc.stdout or ''), 124
        log.write(output)
    result: Dict[str, Any] = {}
    for line in output.splitlines():
        idx = line.find(RESULT_PREFIX)
        if idx >= 0:
            try:
                result = json.loads(line[idx + len(RESULT_PREFIX):])
            except ValueError:
                pass
    return {'scenario': name, 'exit_code': code, 'domain': domain,
            'wall_s': round(time.monotonic() - t0, 1),
            'status': result.get('status', 'no result'),
            'laps': result.get('laps', ''),
            'lap_times': result.get('lap_times', ''),
            'lap_time_ratio': result.get('lap_time_ratio', ''),
            'cones_hit': result.get('cones_hit', ''),
            'penalties_s': result.get('penalty_time', ''),
            'collisions': result.get('collisions', '')}


def write_summary(rows: List[Dict[str, Any]], out_dir: str) -> None:
    """Write summary.md, summary.csv and summary.png."""
    os.makedirs(out_dir, exist_ok=True)
    keys = list(rows[0]) if rows else ['scenario']
    with open(os.path.join(out_dir, 'summary.csv'), 'w', newline='',
              encoding='utf-8') as f:
        writer = csv.DictWriter(f, fieldnames=keys)
        writer.writeheader()
        writer.writerows(rows)
    lines = ['| ' + ' | '.join(keys) + ' |',
             '|' + '---|' * len(keys)]
    lines += ['| ' + ' | '.join(str(r[k]) for k in keys) + ' |'
              for r in rows]
    with open(os.path.join(out_dir, 'summary.md'), 'w',
              encoding='utf-8') as f:
        f.write('\n'.join(lines) + '\n')
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(8, 3 + 0.3 * len(rows)))
    ax.barh([r['scenario'] for r in rows], [r['wall_s'] for r in rows],
            color=['tab:green' if r['exit_code'] == 0 else 'tab:red'
                   for r in rows])
    ax.set_xlabel('wall time (s); green = passed, red = failed')
    fig.tight_layout()
    fig.savefig(os.path.join(out_dir, 'summary.png'), dpi=100)
    plt.close(fig)


def run_module_suite(suite: Dict[str, Any], out_dir: str,
                     timeout: float) -> Dict[str, Any]:
    """
    Run a suite implemented by a module (its own in-process matrix).

    ``python -m <module> <args>`` runs with its output saved as
    ``summary.md`` in ``out_dir``; returns one row.
    """
    os.makedirs(out_dir, exist_ok=True)
    argv = [sys.executable, '-m', suite['module'],
            *[str(a) for a in suite.get('args', [])]]
    t0 = time.monotonic()
    try:
        proc = subprocess.run(argv, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True,
                              timeout=timeout, check=False)
        output, code = proc.stdout, proc.returncode
    except subprocess.TimeoutExpired as exc:
        output, code = str(exc.stdout or ''), 124
    with open(os.path.join(out_dir, 'summary.md'), 'w',
              encoding='utf-8') as f:
        f.write(output)
    return {'scenario': suite['module'], 'exit_code': code,
            'wall_s': round(time.monotonic() - t0, 1)}


def run_suite(name: str, jobs: int, out_dir: str, domain_base: int = 10,
              only: Optional[List[str]] = None,
              timeout: float = 1800.0) -> List[Dict[str, Any]]:
    """Run a suite with ``jobs`` runs at a time; return the rows."""
    table = suites()
    if name not in table:
        raise SystemExit(f'unknown suite {name!r}; suites: {sorted(table)}')
    suite = table[name]
    if isinstance(suite, dict) and 'module' in suite:
        return [run_module_suite(suite, out_dir, timeout)]
    entries = [e for e in suite if not only or e['scenario'] in only
               or e.get('name') in only]
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        futures = [pool.submit(run_one, e, out_dir, domain_base + i, timeout)
                   for i, e in enumerate(entries)]
        rows = [f.result() for f in futures]
    write_summary(rows, out_dir)
    return rows


def main(argv: Optional[List[str]] = None) -> int:
    """Entry point of ``carla-hil scenarios``."""
    parser = argparse.ArgumentParser(prog='carla-hil scenarios')
    sub = parser.add_subparsers(dest='cmd', required=True)
    sub.add_parser('list')
    run = sub.add_parser('run')
    run.add_argument('suite')
    run.add_argument('--jobs', type=int, default=1)
    run.add_argument('--out', default='out/suite')
    run.add_argument('--domain-base', type=int, default=10)
    run.add_argument('--only', nargs='*', default=None)
    run.add_argument('--timeout', type=float, default=1800.0)
    args = parser.parse_args(argv)
    if args.cmd == 'list':
        print('scenarios: ' + ', '.join(scenario_names()))
        for name, suite in suites().items():
            what = suite['module'] if isinstance(suite, dict) else \
                ', '.join(e.get('name', e['scenario']) for e in suite)
            print(f'suite {name}: {what}')
        return 0
    rows = run_suite(args.suite, args.jobs, args.out, args.domain_base,
                     args.only, args.timeout)
    print(open(os.path.join(args.out, 'summary.md'), encoding='utf-8').read())
    return 0 if all(r['exit_code'] == 0 for r in rows) else 1


if __name__ == '__main__':
    sys.exit(main())
