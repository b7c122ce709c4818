# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""``carla-hil track check|convert|plot``: reports, conversion, PNGs."""

from pathlib import Path

from hil_bridge.sim import track_files as F
from hil_bridge.tools import track_cli
import numpy as np
import pytest

DATA = Path(__file__).resolve().parent / 'data' / 'tracks'


def _png_size(path: Path) -> tuple:
    """Return (width, height) of a PNG file from its header."""
    head = path.read_bytes()[:24]
    assert head[:8] == b'\x89PNG\r\n\x1a\n'
    return (int.from_bytes(head[16:20], 'big'),
            int.from_bytes(head[20:24], 'big'))


def test_check_reports(capsys: pytest.CaptureFixture) -> None:
    """Exit 0 with warnings only, 1 on errors (or warnings with --strict)."""
    assert track_cli.main(['check', str(DATA / 'pacsim_oval.yaml')]) == 0
    out = capsys.readouterr().out
    assert out.startswith('pacsim_oval (pacsim): 205.')
    assert 'closed, width 3.00 m, 98 cones' in out
    dup = str(DATA / 'eufs_duplicates.csv')
    assert track_cli.main(['check', dup]) == 0
    out = capsys.readouterr().out
    assert out.count('warning: ') == 2 and 'merged' in out
    assert track_cli.main(['check', dup, '--strict']) == 1
    capsys.readouterr()
    unreal = str(DATA / 'fsds_oval_unreal.csv')
    assert track_cli.main(['check', unreal]) == 1
    assert 'error: ' in capsys.readouterr().out
    assert track_cli.main(['check', unreal, '--convention', 'unreal']) == 0


def test_broken_file_is_one_error_line(tmp_path: Path,
                                       capsys: pytest.CaptureFixture) -> None:
    """A broken file: exit 2 and one line on stderr naming the line."""
    bad = tmp_path / 'bad.csv'
    bad.write_text('tag,x,y\nblue,1,oops\n')
    assert track_cli.main(['check', str(bad)]) == 2
    err = capsys.readouterr().err
    assert err == f"error: {bad}:2: field 'y' is not a number: 'oops'\n"
    assert track_cli.main(['plot', str(tmp_path / 'none.csv')]) == 2


def test_convert_to_our_csv(tmp_path: Path,
                            capsys: pytest.CaptureFixture) -> None:
    """Convert fssim YAML to CSV: same cones and start; never over the input."""
    out = tmp_path / 'acc.csv'
    src = str(DATA / 'fssim_acceleration.yaml')
    assert track_cli.main(['convert', src, '--out', str(out)]) == 0
    assert f'wrote {out}' in capsys.readouterr().out
    a = F.load_track_file(src).track
    b = F.load_track_file(str(out)).track
    np.testing.assert_array_equal(a.cones.xy, b.cones.xy)
    assert b.car_start == a.car_start
    assert out.read_text().splitlines()[1].startswith('car_start,')
    same = tmp_path / 'x.csv'
    same.write_text((DATA / 'fsds_oval.csv').read_text())
    assert track_cli.main(['convert', str(same), '--out', str(same)]) == 2


def test_plot_pngs(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """Oval: one panel; the long thin acceleration strip: stacked panels."""
    oval = tmp_path / 'oval.png'
    assert track_cli.main(['plot', str(DATA / 'eufs_midpoints.csv'),
                           '--out', str(oval)]) == 0
    w, h = _png_size(oval)
    assert w > 1000 and 0.3 < h / w < 1.2
    track = F.load_track_file(str(DATA / 'eufs_acceleration.csv')).track
    acc = tmp_path / 'acc.png'
    panels = track_cli.plot_track(track, str(acc))
    assert len(panels) == 4
    assert panels[0].startswith('x ') and panels[-1].endswith('m')
    w, h = _png_size(acc)
    assert h > 0.5 * w                       # four readable strips
    mirrored = tmp_path / 'm.png'
    assert track_cli.main(['plot', str(DATA / 'eufs_mirrored.csv'),
                           '--out', str(mirrored)]) == 1
    assert mirrored.stat().st_size > 10000
    capsys.readouterr()


def test_check_a_directory_prints_a_table(tmp_path: Path,
                                          capsys: pytest.CaptureFixture
                                          ) -> None:
    """One row per track file, the convention that loads it, a summary."""
    import shutil
    folder = tmp_path / 'tracks'
    (folder / 'more').mkdir(parents=True)
    for name in ('fsds_oval_unreal.csv', 'fssim_oval.sdf', 'path_xy.csv',
                 'eufs_oval.csv'):
        shutil.copy(DATA / name, folder / name)
    shutil.copytree(DATA / 'unreal_acceleration',
                    folder / 'more' / 'unreal_acceleration')
    (folder / 'notes.txt').write_text('not a track\n')
    assert track_cli.main(['check', str(folder), '--convention', 'auto']) == 2
    lines = capsys.readouterr().out.splitlines()
    rows = {ln.split()[0].rsplit('/', 1)[-1]: ln.split() for ln in lines[1:-1]}
    assert lines[0].split()[:3] == ['file', 'status', 'format']
    assert sorted(rows) == ['eufs_oval.csv', 'fsds_oval_unreal.csv',
                            'fssim_oval.sdf', 'path_xy.csv',
                            'unreal_acceleration']
    assert rows['unreal_acceleration'][1:3] == ['ok', 'unreal_dir']
    assert rows['fsds_oval_unreal.csv'][8] == 'unreal'
    assert rows['fssim_oval.sdf'][8] == 'swapped'
    assert rows['path_xy.csv'][1] == 'broken'
    assert lines[-1] == ('5 files: 4 load, 0 with rule errors, 1 do not '
                         'load; 4 load without rule findings')
    # the loadable ones alone, as Markdown: exit 0; a mirrored one: 1
    good = [str(DATA / n) for n in ('eufs_oval.csv', 'pacsim_oval.yaml')]
    assert track_cli.main(['check', *good, '--markdown']) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith('| file | status |') and len(out) == 5
    assert track_cli.main(['check', '--table',
                           str(DATA / 'eufs_mirrored.csv')]) == 1
    assert ' error ' in capsys.readouterr().out


def test_table_survives_a_loader_bug(monkeypatch: pytest.MonkeyPatch) -> None:
    """A loader bug on one file is that file's row, not the end of the table."""
    from hil_bridge.sim import track_files
    real = track_files.load_track_file

    def flaky(path: str, *args: object, **kwargs: object) -> object:
        if path.endswith('fsds_oval.csv'):
            raise IndexError('index 0 is out of bounds for axis 0 with size 0')
        return real(path, *args, **kwargs)
    monkeypatch.setattr(track_files, 'load_track_file', flaky)
    paths = [str(DATA / 'fsds_oval.csv'), str(DATA / 'eufs_oval.csv')]
    bad, good = track_cli.table_rows(paths, 'auto', 'rep103', '', 0.5)
    assert bad['status'] == 'broken'
    assert bad['first'].startswith('internal error (please report): '
                                   'IndexError: index 0')
    assert good['status'] == 'ok'
