# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""Repeated runs (--repeat: determinism check) and a sweep's figures."""

from pathlib import Path

from hil_bridge.tools import batch, suites
from hil_bridge.tools.repeats import check_repeats, repeat_jobs
from hil_bridge.tools.sweep_stats import sweep_figures
import pytest


def _row(name: str, **fields: object) -> dict:
    row = {'name': name, 'pass': True, 'why': 'ok', 'exit_code': 0,
           'status': 'finished', 'reason': 'laps completed', 'laps': 2,
           'lap_times': '55.80 34.10', 'cones_hit': 0, 'off_courses': 0,
           'collisions': 0, 'brake_requests': 0,
           'lap_time_ratios': '1.564 0.959'}
    row.update(fields)
    return row


def test_repeat_jobs_are_adjacent_copies() -> None:
    """Each run becomes NAME_r1..rN, the copies of one run side by side."""
    jobs, _ = suites.expand('track_sweep', {'tracks': 2})
    twice = repeat_jobs(jobs, 2)
    assert [j.name for j in twice[:4]] == [
        'sweep_t0_s0_lidar_r1', 'sweep_t0_s0_lidar_r2',
        'sweep_t0_s0_fused_r1', 'sweep_t0_s0_fused_r2']
    assert twice[0].sets == twice[1].sets == jobs[0].sets
    assert repeat_jobs(jobs, 1) == jobs
    with pytest.raises(SystemExit, match='at least 1'):
        repeat_jobs(jobs, 0)


def test_check_repeats_fails_runs_whose_copies_differ() -> None:
    """Same copies pass; a different lap time fails both copies, named."""
    rows = [_row('a_r1'), _row('a_r2'),
            _row('b_r1'), _row('b_r2', lap_times='55.80 34.15'),
            _row('c')]
    rows, lines = check_repeats(rows)
    verdict = {r['name']: (r['pass'], r['why']) for r in rows}
    assert verdict['a_r1'] == verdict['a_r2'] == (True, 'ok')
    assert verdict['b_r1'] == verdict['b_r2'] == \
        (False, 'differs from its repeat')
    assert verdict['c'] == (True, 'ok')
    text = '\n'.join(lines)
    assert '1 of 2 runs gave the same result' in text
    assert '- b: lap_times 55.80 34.10 / 55.80 34.15' in text
    # a cancelled copy (no status) is not compared; no repeats -> no section
    rows, lines = check_repeats([_row('d_r1'), {'name': 'd_r2', 'pass': False}])
    assert lines == [] and rows[0]['pass']


def test_compare_batches_run_separately(tmp_path: Path, capsys) -> None:
    """``scenarios compare`` reads two batches' summary.csv and names what differs."""
    first, second, third = (str(tmp_path / n) for n in ('first', 'second', 'third'))
    suites.write_summary([_row('a'), _row('b'), _row('c')], first, title='first')
    suites.write_summary([_row('a_r1'), _row('a_r2'), _row('b', cones_hit=1),
                          _row('d')], second, title='second')
    suites.write_summary([_row('a'), _row('b'), _row('c')], third, title='third')
    assert suites.main(['scenarios', 'compare', first, third][1:]) == 0
    assert '3 of 3 runs gave the same result in every batch' in capsys.readouterr().out
    assert suites.main(['compare', first, second]) == 1
    out = capsys.readouterr().out
    assert '1 of 2 runs gave the same result in every batch' in out
    assert '- b: cones_hit 0 / 1' in out
    assert 'Not in every batch (or without a result): c, d' in out
    assert suites.main(['compare', first, str(tmp_path / 'none')]) == 2
    assert 'cannot read the batch summary' in capsys.readouterr().err


def test_check_repeats_keeps_an_earlier_failure_reason() -> None:
    """A copy that already failed keeps its reason; the difference is added."""
    rows, _ = check_repeats([_row('a_r1'),
                             _row('a_r2', status='DNF', why='status DNF',
                                  **{'pass': False})])
    assert rows[1]['why'] == 'status DNF; differs from its repeat'


def test_sweep_figures_per_mode() -> None:
    """Per mode: finished, cones, off course, medians of lap 1 and laps 2+."""
    rows = [_row('sweep_t0_s0_lidar', lap_time_ratios='1.5 0.9'),
            _row('sweep_t1_s0_lidar', lap_time_ratios='2.5 1.1',
                 cones_hit=1),
            _row('sweep_t2_s0_lidar', status='DNF', lap_time_ratios='9.0',
                 off_courses=1),
            _row('sweep_t0_s0_fused_r1', lap_time_ratios='1.4 1.0'),
            _row('other', lap_time_ratios='5.0 5.0')]
    text = '\n'.join(sweep_figures(rows))
    assert '| lidar | 3 | 2 | 1 | 1 | 2.000 | 1.000 |' in text
    assert '| fused | 1 | 1 | 0 | 0 | 1.400 | 1.000 |' in text
    assert sweep_figures([_row('other')]) == []


def test_summary_has_sections_and_new_columns(tmp_path: Path) -> None:
    """summary.md ends with the sections; off_courses is a column."""
    rows = [_row('sweep_t0_s0_lidar')]
    suites.write_summary(rows, str(tmp_path), 'demo', 'status finished',
                         sections=sweep_figures(rows))
    md = (tmp_path / 'summary.md').read_text()
    assert md.rstrip().endswith('reference lap of the profile on the centre '
                                'line.')
    assert 'off_courses' in md.splitlines()[5]


def test_row_and_judge_off_course() -> None:
    """The row keeps off-course count and every lap's ratio; judge limits it."""
    row = batch.run_row(0, {'status': 'finished', 'off_courses': 1,
                            'lap_time_ratio': [1.23456, None, 0.9]})
    assert row['off_courses'] == 1 and row['lap_time_ratios'] == '1.235 - 0.900'
    assert not batch.judge(row, {'max_off_courses': 0})[0]
    assert batch.judge(dict(row, off_courses=0), {'max_off_courses': 0})[0]
    assert not batch.judge(dict(row, off_courses=''), {'max_off_courses': 0})[0]
