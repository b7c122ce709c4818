# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
Write the small track files of this directory (our own layouts).

One oval (two 65 m straights, two semicircles of 12 m centre-line radius,
3 m wide, driven counter-clockwise from the car start at (-6, 0) heading
+x; start/finish line at x = 0) in every format, plus an acceleration
track and the awkward cases the loader must handle. Run from the
repository root: ``python test/data/tracks/make_tracks.py``.
"""

import math
import os
from typing import List, Tuple

HERE = os.path.dirname(os.path.abspath(__file__))
HALF = 32.5      # half straight (m)
RADIUS = 12.0    # centre-line radius of the turns (m)
WIDTH = 3.0
Cone = Tuple[str, float, float]


def _boundary(offset: float, straight_gap: float, turn_gap: float
              ) -> List[Tuple[float, float]]:
    """Cones on the line ``offset`` left of the centre line, in order."""
    pts = []
    r = RADIUS - offset
    n = math.ceil(2 * HALF / straight_gap)
    for k in range(n):                      # bottom straight, +x
        pts.append((-HALF + 2 * HALF * k / n, offset))
    m = math.ceil(math.pi * r / turn_gap)
    for k in range(m):                      # right turn, centre (HALF, R)
        a = -math.pi / 2 + math.pi * k / m
        pts.append((HALF + r * math.cos(a), RADIUS + r * math.sin(a)))
    for k in range(n):                      # top straight, -x
        pts.append((HALF - 2 * HALF * k / n, 2 * RADIUS - offset))
    for k in range(m):                      # left turn, centre (-HALF, R)
        a = math.pi / 2 + math.pi * k / m
        pts.append((-HALF + r * math.cos(a), RADIUS + r * math.sin(a)))
    return pts


def oval() -> List[Cone]:
    """Return the oval's cones: blue left, yellow right, big orange."""
    h = WIDTH / 2
    cones: List[Cone] = []
    for colour, off in (('blue', h), ('yellow', -h)):
        for x, y in _boundary(off, 4.7, 4.0):
            if abs(x) < 1.0 and abs(y) < 2.0:
                continue                    # the start line gets big ones
            cones.append((colour, round(x, 3), round(y, 3)))
    for x in (-0.4, 0.4):
        for y in (h, -h):
            cones.append(('big_orange', x, y))
    return cones


def midpoints() -> List[Tuple[float, float]]:
    """Return centre-line points about 5 m apart from the start line."""
    out = [(x, 0.0) for x in (0.0, 5.0, 10.0, 15.0, 20.0, 25.0, 30.0)]
    for k in range(8):
        a = -math.pi / 2 + math.pi * k / 8
        out.append((HALF + RADIUS * math.cos(a), RADIUS + RADIUS * math.sin(a)))
    out += [(HALF - 5.0 * k, 2 * RADIUS) for k in range(13)]
    for k in range(8):
        a = math.pi / 2 + math.pi * k / 8
        out.append((-HALF + RADIUS * math.cos(a),
                    RADIUS + RADIUS * math.sin(a)))
    out += [(-32.5 + 5.0 * k, 0.0) for k in range(7)]
    return [(round(x, 3), round(y, 3)) for x, y in out]


def acceleration() -> List[Cone]:
    """Return an acceleration track: 75 m, 3 m wide, braking zone."""
    cones: List[Cone] = []
    for y, colour in ((1.5, 'blue'), (-1.5, 'yellow')):
        for x in range(5, 75, 5):
            cones.append((colour, float(x), y))
        for x in (-0.4, 0.4, 74.6, 75.4):
            cones.append(('big_orange', x, y))
        for x in range(80, 155, 5):
            cones.append(('orange', float(x), y))
    return cones


def _csv(name: str, rows: List[str], header: bool = True) -> None:
    lines = (['tag,x,y,direction,x_variance,y_variance,xy_covariance']
             if header else []) + rows
    with open(os.path.join(HERE, name), 'w', encoding='utf-8') as f:
        f.write('\n'.join(lines) + '\n')


def _row(tag: str, x: float, y: float, direction: float = 0.0,
         var: float = 0.01) -> str:
    return f'{tag},{x},{y},{direction},{var},{var},0.0'


def main() -> None:
    """Write every file."""
    cones = oval()
    rows = [_row(*c) for c in cones]
    start = _row('car_start', -6.0, 0.0, 0.0, 0.0)
    _csv('eufs_oval.csv', [start] + rows)
    mids = [_row('midpoint', x, y, 0.0, 0.0) for x, y in midpoints()]
    _csv('eufs_midpoints.csv', [start] + rows + mids)
    # a blue cone measured twice (6.5 cm apart) and a big orange gate
    # cone twice (0.27 m apart, bases overlap)
    dup = list(rows)
    dup.insert(10, _row('blue', cones[9][1] + 0.065, cones[9][2]))
    dup.append(_row('big_orange', 0.4, 1.5 + 0.27))
    _csv('eufs_duplicates.csv', [start] + dup)
    # the header again in the middle, no car_start row
    half = len(rows) // 2
    _csv('eufs_repeated_header.csv', rows[:half] + [
        'tag,x,y,direction,x_variance,y_variance,xy_covariance'] +
        rows[half:])
    swapped = [_row({'blue': 'yellow', 'yellow': 'blue'}.get(t, t), x, y)
               for t, x, y in cones]
    _csv('eufs_mirrored.csv', [start] + swapped)
    acc = [_row('car_start', -3.0, 0.0, 0.0, 0.0)] + \
        [_row(*c) for c in acceleration()]
    _csv('eufs_acceleration.csv', acc)
    # FSDS: no header, no car_start; REP-103 and the old Unreal axes
    fsds = [_row(t, x, y, 0.0, 0.0) for t, x, y in cones]
    _csv('fsds_oval.csv', fsds, header=False)
    unreal = [_row(t, x, -y if y else 0.0, 0.0, 0.0) for t, x, y in cones]
    _csv('fsds_oval_unreal.csv', unreal, header=False)
    _pacsim('pacsim_oval.yaml', cones, closed=True, start=(-6.0, 0.0),
            timing=[(0.0, 4.0), (0.0, -4.0)], unknown=[])
    _pacsim('pacsim_clutter.yaml', cones, closed=True, start=(-6.0, 0.0),
            timing=[(0.0, 4.0), (0.0, -4.0)],
            unknown=[(-20.0, -15.0), (10.0, 40.0), (60.0, 12.0),
                     (0.0, 12.0), (-55.0, 30.0)])
    acc_cones = acceleration()
    _pacsim('pacsim_acceleration.yaml', acc_cones, closed=False,
            start=(-3.0, 0.0),
            timing=[(0.0, 4.0), (0.0, -4.0), (75.0, 4.0), (75.0, -4.0)],
            unknown=[], invisible=[(-5.0, 1.5), (-5.0, -1.5)])
    _fssim('fssim_oval.yaml', cones, front_wing=(-6.0 + 2.3, 0.0, 0.0),
           tk=[(0.0, 3.0), (0.0, -3.0)])
    _fssim('fssim_acceleration.yaml', acc_cones,
           front_wing=(-3.0 + 2.3, 0.0, 0.0),
           tk=[(0.0, 3.0), (0.0, -3.0), (75.0, 3.0), (75.0, -3.0)])


def _side(c: Cone) -> str:
    if c[0] == 'blue':
        return 'left'
    if c[0] == 'yellow':
        return 'right'
    return 'left' if c[2] > 0 else 'right'


def _pacsim(name: str, cones: List[Cone], closed: bool,
            start: Tuple[float, float], timing: List[Tuple[float, float]],
            unknown: List[Tuple[float, float]],
            invisible: Tuple = ()) -> None:
    cls = {'blue': 'blue', 'yellow': 'yellow', 'orange': 'small-orange',
           'big_orange': 'big-orange'}
    out = ['track:', '  version: 1.0',
           f'  lanesFirstWithLastConnected: {str(closed).lower()}',
           '  start:', f'    position: [{start[0]}, {start[1]}, 0.0]',
           '    orientation: [0.0, 0.0, 0.0]', '  earthToTrack:',
           '    position: [0.0, 0.0, 0.0]',
           '    orientation: [0.0, 0.0, 0.0]']
    for side in ('left', 'right'):
        out.append(f'  {side}:')
        for c in cones:
            if _side(c) == side:
                out += [f'  - position: [{c[1]}, {c[2]}, 0.0]',
                        f'    class: {cls[c[0]]}']
        for x, y in invisible:
            if (y > 0) == (side == 'left'):
                out += [f'  - position: [{x}, {y}, 0.0]',
                        '    class: invisible']
    out.append('  time_keeping:')
    for x, y in timing:
        out += [f'  - position: [{x}, {y}, 0.0]', '    class: timekeeping']
    out.append('  unknown:' + ('' if unknown else ' []'))
    for x, y in unknown:
        out += [f'  - position: [{x}, {y}, 0.0]', '    class: unknown']
    with open(os.path.join(HERE, name), 'w', encoding='utf-8') as f:
        f.write('\n'.join(out) + '\n')


def _fssim(name: str, cones: List[Cone],
           front_wing: Tuple[float, float, float],
           tk: List[Tuple[float, float]]) -> None:
    keys = {'blue': 'cones_left', 'yellow': 'cones_right',
            'orange': 'cones_orange', 'big_orange': 'cones_orange_big'}
    out = []
    for key in ('cones_left', 'cones_orange', 'cones_orange_big',
                'cones_right'):
        items = [c for c in cones if keys[c[0]] == key]
        out.append(f'{key}:' + ('' if items else ' []'))
        for c in items:
            out += [f'- - {c[1]}', f'  - {c[2]}']
    out.append('starting_pose_front_wing:')
    out += [f'- {v}' for v in front_wing]
    out.append('tk_device:')
    for x, y in tk:
        out += [f'- - {x}', f'  - {y}']
    with open(os.path.join(HERE, name), 'w', encoding='utf-8') as f:
        f.write('\n'.join(out) + '\n')


if __name__ == '__main__':
    main()
