# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
``carla-hil track check|convert|plot FILE``: track files from the shell.

* ``check``: load the file (any format of
  :mod:`hil_bridge.sim.track_files`), print the FS rules report (errors,
  warnings, merged cones); exit 1 on errors (mirrored colours), 0 else
  (``--strict``: also 1 on warnings). Several files or a directory
  (walked for track files) give a table, one row per file, and a summary
  line; ``--convention auto`` finds the convention that loads each;
  ``--markdown``; exit 2 when a file does not load;
* ``convert``: write our eufs-style CSV (``--out``, default the file's
  name with ``.csv`` in the current directory);
* ``plot``: a PNG (``--out``, default ``<name>.png``) with the cones by
  colour, the centre line, the start pose and timing lines, axes fitted
  to the track (long thin tracks are cut into stacked panels).

``--format auto|eufs|fsds|csv|pacsim|fssim|conemap|sdf|json|unreal_dir``,
``--convention rep103|unreal|swapped|screen`` (``unreal``: old FSDS files
with y to the right; ``swapped``: blue and yellow exchanged; ``screen``:
y down with the file's left/right kept, as Hanze's pygame maps, which
are detected), ``--mission`` (``skidpad`` places the standard skidpad
centre line). Bad files give one error line and exit code 2.
"""

import argparse
import math
import os
import sys
from typing import Any, List, Optional

import numpy as np

#: Plot colour of each cone class id (unknown, blue, yellow, orange, big).
CONE_COLOURS = {0: '#808080', 1: '#1f4fd8', 2: '#f2c200', 3: '#ff8c1a',
                4: '#e0520b'}
#: Stack panels when the short side of the track is below this share of
#: its long side.
THIN_RATIO = 0.2
MAX_PANELS = 4


def plot_track(track: Any, out: str, title: str = '',
               findings: Optional[List[str]] = None) -> List[str]:
    """
    Draw a track into a PNG; return the panel extents it used.

    Cones by colour (big orange larger), the centre line (dashed, with
    arrows in the driving direction), the start pose (arrow) and the
    timing lines; equal axes fitted to the track, metres. A track much
    longer than wide is split along its long axis into up to four stacked
    panels so cones stay apart. ``findings`` are listed under the title.
    """
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    xy = track.cones.xy
    cl = np.asarray(track.centerline)
    start = np.array([track.car_start.x, track.car_start.y])
    pts = np.vstack([xy, cl, start[None, :]])
    lo, hi = pts.min(axis=0) - 2.0, pts.max(axis=0) + 2.0
    span = hi - lo
    long_ax = int(np.argmax(span))
    ratio = float(span[1 - long_ax] / max(span[long_ax], 1e-9))
    panels = 1 if ratio >= THIN_RATIO else \
        min(MAX_PANELS, int(math.ceil(THIN_RATIO / max(ratio, 1e-3))))
    edges = np.linspace(lo[long_ax], hi[long_ax], panels + 1)
    width_in = 12.0
    part = span.copy()
    part[long_ax] = span[long_ax] / panels
    aspect = float(part[1] / part[0])
    panel_h = min(max(width_in * aspect, 2.2), 12.0)
    notes = list(findings or [])
    text_h = 0.14 * (min(len(notes), 13) + 1) + 0.1
    fig, axes = plt.subplots(panels, 1, squeeze=False,
                             figsize=(width_in, panels * panel_h + 0.9
                                      + text_h))
    extents = []
    for k, ax in enumerate(axes[:, 0]):
        margin = 0.03 * (edges[k + 1] - edges[k])
        rng = (edges[k] - margin, edges[k + 1] + margin)
        _draw(ax, track, k == 0)
        if long_ax == 0:
            ax.set_xlim(*rng)
            ax.set_ylim(lo[1], hi[1])
        else:
            ax.set_ylim(*rng)
            ax.set_xlim(lo[0], hi[0])
        ax.set_aspect('equal', adjustable='box')
        ax.grid(True, linewidth=0.3, alpha=0.5)
        if k == panels - 1:
            ax.set_xlabel('x (m)')
        ax.set_ylabel('y (m)')
        extents.append(f'{"xy"[long_ax]} {rng[0]:.1f}..{rng[1]:.1f} m')
    head = title or f'{track.name}: {track.length:.1f} m, width ' \
        f'{track.width:.2f} m, {len(track.cones)} cones'
    if notes:
        shown = notes[:12] + ([f'... {len(notes) - 12} more'] if
                              len(notes) > 12 else [])
        head += '\n' + '\n'.join(_short(n) for n in shown)
    fig.suptitle(head, fontsize=8, ha='left', x=0.01, y=0.995,
                 va='top')
    handles, labels = axes[0, 0].get_legend_handles_labels()
    if handles:
        fig.legend(handles, labels, loc='lower center', ncol=len(labels),
                   fontsize=8, frameon=False)
    total_h = panels * panel_h + 0.9 + text_h
    fig.tight_layout(rect=(0.0, 0.35 / total_h, 1.0,
                           max(1.0 - text_h / total_h, 0.5)))
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return extents


def _short(text: str, limit: int = 150) -> str:
    """Return one finding shortened for the plot title."""
    text = text.split(': ', 1)[1] if text.startswith('/') and ': ' in text \
        else text
    return text if len(text) <= limit else text[:limit - 3] + '...'


def _draw(ax: Any, track: Any, legend: bool) -> None:
    """Draw cones, centre line, timing lines and the start pose on ``ax``."""
    from hil_bridge.interface.cones import CONE_NAMES
    cl = np.asarray(track.centerline)
    loop = np.vstack([cl, cl[:1]]) if track.closed else cl
    ax.plot(loop[:, 0], loop[:, 1], '--', color='0.45', linewidth=0.8,
            label='centre line' if legend else None, zorder=1)
    if len(cl) > 4:
        step = max(len(cl) // 12, 1)
        i = np.arange(step // 2, len(cl) - 1, step)
        d = cl[i + 1] - cl[i]
        d /= np.maximum(np.hypot(*d.T), 1e-9)[:, None]
        ax.quiver(cl[i, 0], cl[i, 1], d[:, 0], d[:, 1], color='0.45',
                  angles='xy', scale_units='inches', scale=4.0, width=0.003,
                  zorder=1)
    cones = track.cones
    for cid, colour in CONE_COLOURS.items():
        m = cones.class_id == cid
        if not m.any():
            continue
        ax.scatter(cones.xy[m, 0], cones.xy[m, 1], s=26 if cid == 4 else 14,
                   c=colour, edgecolors='k', linewidths=0.3, zorder=3,
                   label=f'{CONE_NAMES[cid]} ({int(m.sum())})'
                   if legend else None)
    lines = track.timing_lines
    same = 'start' in lines and 'finish' in lines and np.allclose(
        lines['start'].a, lines['finish'].a) and np.allclose(
        lines['start'].b, lines['finish'].b)
    for name, line in lines.items():
        if same and name == 'finish':
            continue
        ax.plot([line.a[0], line.b[0]], [line.a[1], line.b[1]], '-',
                color='k', linewidth=1.4, zorder=2)
        ax.annotate('start/finish' if same else name, line.a, fontsize=7,
                    xytext=(2, 2), textcoords='offset points')
    p = track.car_start
    ax.quiver([p.x], [p.y], [math.cos(p.yaw)], [math.sin(p.yaw)],
              color='#c00000', angles='xy', scale_units='inches', scale=2.5,
              width=0.006, zorder=4,
              label='car start' if legend else None)


#: File name endings a directory walk reads as track files.
TRACK_EXTENSIONS = ('.csv', '.yaml', '.yml', '.json', '.sdf', '.world',
                    '.xml')


def track_paths(paths: List[str]) -> List[str]:
    """
    Return the track files among ``paths`` (directories walked, sorted).

    A directory of Unreal transform dumps (``blue.txt``, ...) is one
    track; otherwise a directory contributes its files ending in
    ``TRACK_EXTENSIONS``, recursively (hidden entries skipped).
    """
    from hil_bridge.sim.track_readers import _unreal_files
    out: List[str] = []
    for path in paths:
        if not os.path.isdir(path):
            out.append(path)
            continue
        for root, dirs, files in os.walk(path):
            dirs[:] = sorted(d for d in dirs if not d.startswith('.'))
            if _unreal_files(root):
                out.append(root)
                dirs[:] = []
                continue
            out += [os.path.join(root, f) for f in sorted(files)
                    if f.lower().endswith(TRACK_EXTENSIONS)
                    and not f.startswith('.')]
    return out


#: Conventions ``--convention auto`` tries in turn (table mode). ``screen``
#: last: it equals ``unreal`` for a file without left/right names, and a
#: y-down file with names loads as ``rep103`` without a rule error (the
#: names fit either driving direction), so only its header can tell.
AUTO_CONVENTIONS = ('rep103', 'unreal', 'swapped', 'screen')


def table_rows(paths: List[str], fmt: str, convention: str, mission: str,
               tolerance: float) -> List[dict]:
    """
    Load every track file and return one row (dict) per file.

    ``convention`` ``auto`` tries ``AUTO_CONVENTIONS`` in turn and keeps
    the first that loads without rule errors. Keys: ``file``, ``status``
    (``ok``, ``error`` (rule errors), ``broken`` (does not load)),
    ``format``, ``cones``, ``length``, ``loop``, ``mission``, ``width``,
    ``convention``, ``notes`` (loader warnings), ``findings`` (rule
    warnings), ``errors`` and ``first`` (the first error or warning). A
    loader bug on one file (an exception other than ``ValueError``) is that
    file's row, ``broken`` with the exception named, not the end of the
    table.
    """
    from hil_bridge.sim.track_files import load_track_file
    rows = []
    for path in paths:
        row = {'file': path}
        tries = AUTO_CONVENTIONS if convention == 'auto' else (convention,)
        loaded = None
        try:
            for k in range(len(tries)):
                conv = tries[k]
                got = load_track_file(path, fmt, conv, mission,
                                      tolerance=tolerance)
                if loaded is None or not got.errors:
                    loaded = got
                if not got.errors:
                    break
                if conv == 'rep103' and got.fmt == 'sdf':
                    tries = ('rep103', 'swapped', 'unreal', 'screen')  # fssim SDF
        except (OSError, ValueError) as exc:
            row.update(status='broken', first=_relative(str(exc), path))
            rows.append(row)
            continue
        except Exception as exc:  # noqa: B902 - a loader bug: one row, not the table
            row.update(status='broken', first='internal error (please report): '
                       f'{type(exc).__name__}: {exc}')
            rows.append(row)
            continue
        t = loaded.track
        first = (loaded.errors or loaded.rule_warnings or loaded.warnings
                 or [''])[0]
        row.update(status='error' if loaded.errors else 'ok', format=loaded.fmt,
                   cones=len(t.cones), length=t.length,
                   loop='closed' if t.closed else 'open',
                   mission=t.mission or 'track', width=t.width,
                   convention=loaded.convention,
                   notes=len(loaded.warnings) - len(loaded.rule_warnings),
                   findings=len(loaded.rule_warnings),
                   errors=len(loaded.errors),
                   first=_relative(first, path))
        rows.append(row)
    return rows


def _relative(text: str, path: str) -> str:
    """Return a message without its leading file name (``line N:`` kept)."""
    if text.startswith(path):
        text = text[len(path):]
        head, sep, rest = text[1:].partition(':')
        text = f'line {head}:{rest}' if text.startswith(':') and sep and \
            head.isdigit() else text.lstrip(': ')
    return text


def format_table(rows: List[dict], markdown: bool = False,
                 width: int = 60) -> List[str]:
    """Return the lines of the table of :func:`table_rows` (and a summary)."""
    head = ['file', 'status', 'format', 'cones', 'length m', 'loop',
            'mission', 'width m', 'convention', 'notes', 'findings',
            'errors', 'first finding']
    body = []
    for r in rows:
        if r['status'] == 'broken':
            body.append([r['file'], 'broken'] + [''] * 10 +
                        [_short(r['first'], width)])
            continue
        body.append([r['file'], r['status'], r['format'], str(r['cones']),
                     f'{r["length"]:.0f}', r['loop'], r['mission'],
                     f'{r["width"]:.2f}', r['convention'], str(r['notes']),
                     str(r['findings']), str(r['errors']),
                     _short(r['first'], width)])
    if markdown:
        lines = ['| ' + ' | '.join(head) + ' |',
                 '|' + '|'.join(' --- ' for _ in head) + '|']
        lines += ['| ' + ' | '.join(c.replace('|', '/') for c in b) + ' |'
                  for b in body]
    else:
        cols = list(zip(*([head] + body))) if body else [[h] for h in head]
        w = [max(len(c) for c in col) for col in cols]
        lines = ['  '.join(c.ljust(n) for c, n in zip(row, w)).rstrip()
                 for row in [head] + body]
    n = len(rows)
    count = {k: sum(r['status'] == k for r in rows)
             for k in ('ok', 'error', 'broken')}
    clean = sum(r['status'] == 'ok' and r['findings'] == 0 for r in rows)
    lines.append(f'{n} files: {count["ok"]} load, {count["error"]} with rule '
                 f'errors, {count["broken"]} do not load; {clean} load '
                 'without rule findings')
    return lines


def main(argv: Optional[List[str]] = None) -> int:
    """Entry point of ``carla-hil track``."""
    from hil_bridge.sim.track_files import (CONVENTIONS, describe, FILE_TOLERANCE, FORMATS,
                                            load_track_file, save_track_csv)
    parser = argparse.ArgumentParser(prog='carla-hil track',
                                     description=__doc__.split('\n')[1])
    parser.add_argument('action', choices=['check', 'convert', 'plot'])
    parser.add_argument('file', nargs='+',
                        help='track file; check also takes several files '
                        'and directories (a table, one row per file)')
    parser.add_argument('--format', default='auto',
                        choices=['auto', *FORMATS])
    parser.add_argument('--convention', default='rep103',
                        choices=list(CONVENTIONS) + ['auto'],
                        help='auto (table): the first of '
                        f'{", ".join(AUTO_CONVENTIONS)} without rule errors')
    parser.add_argument('--table', action='store_true',
                        help='check: a table even for one file')
    parser.add_argument('--markdown', action='store_true',
                        help='check: the table as Markdown')
    parser.add_argument('--mission', default='',
                        help="'' (from the file), trackdrive, autocross, "
                        'acceleration or skidpad')
    parser.add_argument('--out', default='', help='output file')
    parser.add_argument('--tolerance', type=float, default=FILE_TOLERANCE,
                        help='slack of the width/spacing rules (m; default '
                        f'{FILE_TOLERANCE}: positions in files are surveyed)')
    parser.add_argument('--strict', action='store_true',
                        help='check: exit 1 on warnings too')
    args = parser.parse_args(argv)
    if args.action == 'check' and (args.table or len(args.file) > 1 or
                                   os.path.isdir(args.file[0]) and
                                   not _is_track_dir(args.file[0])):
        rows = table_rows(track_paths(args.file), args.format,
                          args.convention, args.mission, args.tolerance)
        print('\n'.join(format_table(rows, args.markdown)))
        if any(r['status'] == 'broken' for r in rows):
            return 2
        return 1 if any(r['status'] == 'error' or args.strict and
                        r.get('findings') for r in rows) else 0
    if len(args.file) > 1:
        parser.error(f'{args.action} takes one file')
    args.file = args.file[0]
    if args.convention == 'auto':
        parser.error('--convention auto is for check tables')
    try:
        loaded = load_track_file(args.file, args.format, args.convention,
                                 args.mission, tolerance=args.tolerance)
    except (OSError, ValueError) as exc:
        print(f'error: {exc}', file=sys.stderr)
        return 2
    report = describe(loaded)
    base = os.path.splitext(os.path.basename(args.file))[0]
    if args.action == 'check':
        print('\n'.join(report))
        if loaded.errors or (args.strict and loaded.warnings):
            return 1
        return 0
    print(report[0])
    for line in report[1:]:
        print(line, file=sys.stderr)
    if args.action == 'convert':
        out = args.out or f'{base}.csv'
        if os.path.abspath(out) == os.path.abspath(args.file):
            print(f'error: {out}: --out would overwrite the input',
                  file=sys.stderr)
            return 2
        save_track_csv(loaded.track, out)
        print(f'wrote {out}')
        return 1 if loaded.errors else 0
    out = args.out or f'{base}.png'
    plot_track(loaded.track, out, findings=loaded.errors + loaded.warnings)
    print(f'wrote {out}')
    return 1 if loaded.errors else 0


def _is_track_dir(path: str) -> bool:
    """Return True for a directory that is one track (Unreal dumps)."""
    from hil_bridge.sim.track_readers import _unreal_files
    return bool(_unreal_files(path))


if __name__ == '__main__':
    sys.exit(main())
