# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
The figures of a track sweep, per mode.

Finished runs, cones, off-course and the median lap-time ratios (lap /
the profile's reference lap). Runs are named
``sweep_t<layout>_s<seed>_<mode>`` (optionally ``_rK``,
:mod:`hil_bridge.tools.repeats`); the summary rows carry
``lap_time_ratios`` (one per lap, space-separated). Lap 1 is the lap on
an unknown track; laps 2+ are driven on the map of lap 1.
"""

import re
import statistics
from typing import Any, Dict, List

from hil_bridge.tools.repeats import base_name

_SWEEP = re.compile(r'^sweep_t[0-9]+_s[0-9]+_(?P<mode>.+)$')


def _ratios(row: Dict[str, Any]) -> List[float]:
    out = []
    for text in str(row.get('lap_time_ratios') or '').split():
        try:
            out.append(float(text))
        except ValueError:
            out.append(float('nan'))
    return out


def _median(values: List[float]) -> str:
    values = [v for v in values if v == v]
    return f'{statistics.median(values):.3f}' if values else '-'


def _count(rows: List[Dict[str, Any]], key: str) -> int:
    return sum(int(r[key]) for r in rows if isinstance(r.get(key), int))


def sweep_figures(rows: List[Dict[str, Any]]) -> List[str]:
    """Return the Markdown section of the sweep's figures ([] if no sweep)."""
    modes: Dict[str, List[Dict[str, Any]]] = {}
    for row in rows:
        match = _SWEEP.match(base_name(str(row.get('name', ''))))
        if match:
            modes.setdefault(match.group('mode'), []).append(row)
    if not modes:
        return []
    lines = ['', '## Sweep figures', '',
             '| mode | runs | finished | cones hit | off course | '
             'median lap-1 ratio | median laps-2+ ratio |',
             '|---|---|---|---|---|---|---|']
    for mode, group in modes.items():
        done = [r for r in group if r.get('status') == 'finished']
        first = [rs[0] for rs in map(_ratios, done) if rs]
        later = [x for rs in map(_ratios, done) for x in rs[1:]]
        lines.append(f'| {mode} | {len(group)} | {len(done)} | '
                     f'{_count(group, "cones_hit")} | '
                     f'{_count(group, "off_courses")} | {_median(first)} | '
                     f'{_median(later)} |')
    lines += ['', 'Ratios are over finished runs (laps 2+ pooled); lap '
              'time / the reference lap of the profile on the centre line.']
    return lines
