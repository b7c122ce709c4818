# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
Repeated runs of a batch: the determinism check (``--repeat N``).

:func:`repeat_jobs` turns each run into N copies named ``NAME_r1`` ..
``NAME_rN``, next to each other in the batch so that with ``--jobs N``
the copies of one run run at the same time on the same machine (each
loads the other). A lockstep run must give the same result every time:
:func:`check_repeats` compares the copies' result fields
(:data:`SAME_FIELDS`) and fails every copy of a run whose copies differ,
naming the fields and values. :func:`compare_runs` does the same across
the summaries of separate batches (``carla-hil scenarios compare``: two
sweeps run at different times, under different load or on different
machines).
"""

import csv
import dataclasses
import os
import re
from typing import Any, Dict, List, Sequence, Tuple

from hil_bridge.tools.batch import Job

#: row fields every copy of a run must share
SAME_FIELDS = ('exit_code', 'status', 'reason', 'laps', 'lap_times',
               'cones_hit', 'off_courses', 'collisions', 'brake_requests')
_SUFFIX = re.compile(r'^(?P<base>.+)_r(?P<k>[0-9]+)$')


def repeat_jobs(jobs: List[Job], n: int) -> List[Job]:
    """Return ``n`` copies of every job (``NAME_rK``), copies adjacent."""
    if n < 1:
        raise SystemExit(f'--repeat must be at least 1 (got {n})')
    if n == 1:
        return list(jobs)
    return [dataclasses.replace(job, name=f'{job.name}_r{k}')
            for job in jobs for k in range(1, n + 1)]


def base_name(name: str) -> str:
    """Return the run name without its ``_rK`` repeat suffix."""
    match = _SUFFIX.match(name)
    return match.group('base') if match else name


def differences(group: Sequence[Dict[str, Any]]) -> str:
    """Return the :data:`SAME_FIELDS` the rows differ in with their values ('' if none)."""
    fields = [f for f in SAME_FIELDS if len({str(r.get(f, '')) for r in group}) > 1]
    return '; '.join(f + ' ' + ' / '.join(str(r.get(f, '')) for r in group)
                     for f in fields)


def read_summary(out_dir: str) -> List[Dict[str, Any]]:
    """Return the rows of a batch's ``summary.csv``; SystemExit (one line) if there is none."""
    path = os.path.join(out_dir, 'summary.csv')
    try:
        with open(path, newline='', encoding='utf-8') as f:
            return list(csv.DictReader(f))
    except OSError as err:
        raise SystemExit(f'{path}: cannot read the batch summary ({err.strerror})')


def compare_runs(batches: Sequence[List[Dict[str, Any]]],
                 labels: Sequence[str]) -> Tuple[bool, List[str]]:
    """
    Compare the runs of separate batches by name; return (all same, lines).

    Runs are matched by name without the ``_rK`` suffix (every copy of a
    repeated batch takes part); runs without a result (no ``status``) and
    runs missing from a batch are listed, not compared. ``lines`` is a
    Markdown report: how many runs gave the same result in every batch,
    then each difference with its values in the order of ``labels``.
    """
    by_name: List[Dict[str, List[Dict[str, Any]]]] = []
    for rows in batches:
        named: Dict[str, List[Dict[str, Any]]] = {}
        for row in rows:
            if row.get('status'):
                named.setdefault(base_name(str(row.get('name', ''))), []).append(row)
        by_name.append(named)
    names = sorted(set().union(*by_name)) if by_name else []
    common = [n for n in names if all(n in b for b in by_name)]
    differ = []
    for name in common:
        text = differences([row for b in by_name for row in b[name]])
        if text:
            differ.append(f'- {name}: {text}')
    lines = [f'# Compared: {" / ".join(labels)}', '',
             f'{len(common) - len(differ)} of {len(common)} runs gave the same result '
             f'in every batch (fields: {", ".join(SAME_FIELDS)}).']
    if differ:
        lines += ['', 'Differences (values in the order above):', ''] + differ
    missing = [n for n in names if n not in common]
    if missing:
        lines += ['', f'Not in every batch (or without a result): {", ".join(missing)}']
    return not differ and bool(common), lines


def check_repeats(rows: List[Dict[str, Any]]
                  ) -> Tuple[List[Dict[str, Any]], List[str]]:
    """
    Compare the copies of each run; return (rows, lines).

    Rows of a run whose copies differ in a :data:`SAME_FIELDS` field get
    ``pass`` False and the difference appended to ``why``; rows without a
    repeat suffix, or cancelled / lost copies (no ``status``), are left
    as they are. ``lines`` is the Markdown section of the summary: how
    many runs gave the same result every time, and each difference.
    """
    groups: Dict[str, List[Dict[str, Any]]] = {}
    for row in rows:
        name = str(row.get('name', ''))
        if _SUFFIX.match(name) and 'status' in row:
            groups.setdefault(base_name(name), []).append(row)
    groups = {b: g for b, g in groups.items() if len(g) > 1}
    if not groups:
        return rows, []
    differ: List[str] = []
    for base, group in sorted(groups.items()):
        text = differences(group)
        if not text:
            continue
        differ.append(f'- {base}: {text}')
        for row in group:
            row['pass'] = False
            why = str(row.get('why') or '')
            row['why'] = (why + '; ' if why and why != 'ok' else '') + \
                'differs from its repeat'
    same = len(groups) - len(differ)
    lines = ['', '## Repeats (determinism)', '',
             f'{same} of {len(groups)} runs gave the same result in every copy '
             f'(fields: {", ".join(SAME_FIELDS)}).']
    return rows, lines + ([''] + differ if differ else [])
