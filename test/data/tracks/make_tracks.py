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

import json
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
    real_world(cones, acc_cones)
    team_formats(cones)


def real_world(cones: List[Cone], acc: List[Cone]) -> None:
    """
    Write files with what public track files really contain.

    Each reproduces features met in public eufs_sim, FSDS, PacSim, fssim
    and team files (docs/track_formats.md): our own layouts, their
    spellings.
    """
    # eufs_sim CSV as edited by hand: BOM, CRLF, comments, blank lines,
    # trailing blanks, a header name with a trailing blank, tags in other
    # case, a typo in an unused column, eufs noise objects
    lines = ['# oval, edited by hand', 'tag,x,y,direction,x_variance,'
             'y_variance ,xy_covariance', '',
             _row('car_start', -6.0, 0.0, 0.0, 0.0) + '  ']
    for k, (t, x, y) in enumerate(cones):
        tag = t.upper() if k % 3 == 0 else t.title() if k % 3 == 1 else t
        row = _row(tag, x, y)
        lines.append(row[:-1] + '0s' if k == 5 else row)
        if k == 20:
            lines += ['', '// a comment of another style']
    lines += [_row('active_noise', 10.0, 40.0),
              _row('inactive_noise', -10.0, 40.0)]
    with open(os.path.join(HERE, 'eufs_messy.csv'), 'w', encoding='utf-8',
              newline='') as f:
        f.write('\ufeff' + '\r\n'.join(lines) + '\r\n')
    # a team's CSV (columns cone_type,X,Y,Z,std..,right,left): no start
    # pose, the car at the origin facing +y, the start gate 5 m ahead and
    # wider than the lane, gate cones flagged on the wrong side, one blue
    # cone flagged right by mistake
    rows = ['cone_type,X,Y,Z,std_X,std_Y,std_Z,right,left']
    for k, (t, x, y) in enumerate(cones):
        if t == 'big_orange':
            x = 0.4 if x > 0 else -0.4
            y = 2.2 if y > 0 else -2.2
        rx, ry = round(-y, 3), round(x + 5.0, 3)
        left = t == 'blue' or t == 'big_orange' and ry > 5.0
        if k == 7:
            left = not left
        rows.append(f'{t},{rx},{ry},0.0,0.0,0.0,0.0,{int(not left)},'
                    f'{int(left)}')
    _csv('team_flags.csv', rows, header=False)
    # eufs_sim's first CSVs: no header, a comment, tags left/right/big/
    # normal; an acceleration track whose braking zone ends in a row of
    # cones across the lane
    old = {'blue': 'left', 'yellow': 'right', 'big_orange': 'big',
           'orange': 'normal'}
    rows = ['# acceleration, old tags'] + \
        [f'{old[t]},{x},{y}' for t, x, y in acc] + \
        [f'normal,155.0,{y}' for y in (-0.75, 0.0, 0.75)]
    _csv('eufs_old_tags.csv', rows, header=False)
    # cones of unknown colour: x,y rows (a survey without colours)
    rows = ['# cone positions, no colours'] + \
        [f'{x},{y}' for t, x, y in cones]
    _csv('plain_xy.csv', rows, header=False)
    # not cones: a centre line 1 m apart, a midpoint file, one boundary
    _csv('path_xy.csv', ['x,y'] + [f'{k}.0,0.0' for k in range(60)],
         header=False)
    _csv('midpoints_only.csv', ['mid_x,mid_y'] + [f'{x},{y}' for x, y in
                                                  midpoints()], header=False)
    _csv('blue_only.csv', [f'{x},{y}' for t, x, y in cones if t == 'blue'],
         header=False)
    _conemap('conemap_oval.yaml', cones, {'blue': 0, 'yellow': 1,
                                          'big_orange': 2})
    _conemap('conemap_uncoloured.yaml', cones, {'blue': 1, 'yellow': 1,
                                                'big_orange': 1})
    _sdf_fssim('fssim_oval.sdf', cones)
    _sdf_world('eufs_oval.world', cones)
    with open(os.path.join(HERE, 'include_only.world'), 'w',
              encoding='utf-8') as f:
        f.write('<?xml version="1.0"?>\n<sdf version="1.6">\n  <world '
                'name="default">\n    <include>\n      <uri>model://'
                'small_track</uri>\n    </include>\n  </world>\n</sdf>\n')
    _json_screen('screen_oval.json', cones)
    _json_columns('columns_oval.json', cones)
    _unreal_dir('unreal_acceleration', acc)
    _skidpad_file('eufs_skidpad.csv')
    # a map whose colours were not recognised along the back straight:
    # the colours do not chain round the loop, the geometry does
    grey = [('unknown' if y > 20.0 and abs(x) < 30.0 else t, x, y)
            for t, x, y in cones]
    _csv('eufs_grey_stretch.csv', [_row('car_start', -6.0, 0.0, 0.0, 0.0)]
         + [_row(*c) for c in grey])
    # an open U-turn (EPFL's VSV test layouts): up, round a semicircle and
    # back down beside the way up; the inner boundary's two ends are 12 m
    # apart, the outer one's 18 m, across the open end where no lane is
    u_cones = []
    for colour, off in (('blue', -1.5), ('yellow', 1.5)):
        r = 7.5 + off
        for k in range(9):
            u_cones.append((colour, off, 3.75 * k))
            u_cones.append((colour, -15.0 - off, 3.75 * k))
        for k in range(1, 6):
            a = math.pi * k / 6
            u_cones.append((colour, round(-7.5 + r * math.cos(a), 3),
                            round(30.0 + r * math.sin(a), 3)))
    _csv('eufs_open_u.csv', [_row('car_start', 0.0, 0.0, math.pi / 2, 0.0)]
         + [_row(*c) for c in u_cones])
    # a colourless map (one code) of a lane that comes back beside a corner
    _conemap('conemap_side_by_side.yaml', lanes_side_by_side(),
             {'blue': 1, 'yellow': 1})


#: A loop whose lane, past a corner, comes back beside that corner (a
#: median of about 3 m between the two lanes' cones, as in a mapped FSG
#: 2024 layout): waypoints of the centre line, driven from the first.
SIDE_BY_SIDE = [(0, 0), (40, 0), (45, -10), (40, -25), (-5, -25), (-10, -30),
                (-10, -45), (-5, -50), (15, -50), (20, -55), (20, -70),
                (15, -77), (5, -77), (-2, -66), (-10, -60), (-25, -58),
                (-30, -50), (-30, -10), (-25, -2), (-10, 0)]


def lanes_side_by_side(seed: int = 1, width: float = 3.3, gap: float = 4.5,
                       jitter: float = 0.25) -> List[Cone]:
    """
    Return the cones of ``SIDE_BY_SIDE``: blue left, yellow right.

    A periodic spline through the waypoints, cones every ``gap`` m along
    each boundary (staggered by half a gap), moved by a normal jitter of
    ``jitter`` m (seeded: a mapped layout is not exact).
    """
    import numpy as np
    from scipy.interpolate import splev, splprep
    wp = np.array(SIDE_BY_SIDE + SIDE_BY_SIDE[:1], dtype=float)
    tck, _ = splprep([wp[:, 0], wp[:, 1]], s=0, per=True)
    u = np.linspace(0.0, 1.0, 4000, endpoint=False)
    centre = np.column_stack(splev(u, tck))
    tangent = np.column_stack(splev(u, tck, der=1))
    tangent /= np.hypot(*tangent.T)[:, None]
    normal = np.column_stack([-tangent[:, 1], tangent[:, 0]])
    rng = np.random.default_rng(seed)
    cones: List[Cone] = []
    for colour, sign in (('blue', 1.0), ('yellow', -1.0)):
        line = centre + sign * width / 2.0 * normal
        s = np.r_[0.0, np.cumsum(np.hypot(*np.diff(line, axis=0).T))]
        n = int(s[-1] // gap)
        for k in range(n):
            at = k * s[-1] / n + (0.0 if sign > 0 else gap / 2.0)
            i = min(int(np.searchsorted(s, at)), len(line) - 1)
            x, y = line[i] + rng.normal(0.0, jitter, 2)
            cones.append((colour, round(float(x), 3), round(float(y), 3)))
    return cones


def team_formats(cones: List[Cone]) -> None:
    """
    Write the oval in the formats of other teams' tools (s32).

    docs/track_formats.md has the facts of each format.
    """
    _umdf('umdf_oval.json', cones)
    _paired('paired_oval.csv', cones)
    _hanze_map('hanze_oval.csv', cones)
    _hanze_cone_log('hanze_cone_log.csv', cones)
    _latlon('latlon_oval.csv', cones, (49.3294, 8.5659))
    _pacsim('pacsim_centerline_raw.yaml', cones, closed=True,
            start=(-6.0, 0.0), timing=[(0.0, 4.0), (0.0, -4.0)], unknown=[],
            centerline=midpoints())
    _tum('tum_oval.csv')


def _tum(name: str) -> None:
    """
    Write the oval's centre line with track widths, TUM's format (s33).

    TUMFTM/racetrack-database: the header in a comment, ``# x_m,y_m,
    w_tr_right_m,w_tr_left_m``, a closed loop whose first point is not
    repeated; no cones.
    """
    h = WIDTH / 2
    rows = [f'{x},{y},{h},{h}' for x, y in midpoints()]
    _csv(name, ['# x_m,y_m,w_tr_right_m,w_tr_left_m'] + rows, header=False)


def _umdf(name: str, cones: List[Cone]) -> None:
    """
    Write FSAI-Sim's UMDF (map_2_umdf.py): the oval turned to drive +y.

    ``start`` is the centre of the four big cones with ``rotation.yaw``;
    ``orange_cones`` holds the big cones and two small orange cones 2 m
    past the gate together (as map_2_umdf merges them); ``centreline``
    runs from the start; no ``loop`` (FSAI-Sim's default: true).
    """
    def turn(x: float, y: float) -> dict:
        return {'x': 0.0 - y, 'y': x}
    lists: dict = {'blue': [], 'yellow': [], 'orange': []}
    for t, x, y in cones:
        lists['orange' if t == 'big_orange' else t].append(turn(x, y))
    lists['orange'] += [turn(2.0, 1.5), turn(2.0, -1.5)]
    data = {'name': 'umdf_oval', 'path': 'worlds/umdf_oval.world',
            'start': {'position': {'x': 0.0, 'y': 0.0},
                      'rotation': {'yaw': math.pi / 2}},
            'blue_cones': lists['blue'], 'yellow_cones': lists['yellow'],
            'orange_cones': lists['orange'],
            'centreline': [turn(x, y) for x, y in midpoints()]}
    with open(os.path.join(HERE, name), 'w', encoding='utf-8') as f:
        json.dump(data, f, indent=4)


def _paired(name: str, cones: List[Cone]) -> None:
    """
    Write MUR's paired columns: one left and one right cone per row.

    ``left_x,left_y,right_x,right_y``, each boundary in driving order,
    the shorter one's cells empty at the end, the first row repeated as
    the last (the loop closed as in MUR's FSG file); no orange cones.
    """
    left = [(x, y) for t, x, y in cones if t == 'blue']
    right = [(x, y) for t, x, y in cones if t == 'yellow']
    rows = ['left_x,left_y,right_x,right_y']
    for k in range(max(len(left), len(right))):
        cells = []
        for side in (left, right):
            cells += [f'{side[k][0]}', f'{side[k][1]}'] if k < len(side) \
                else ['', '']
        rows.append(','.join(cells))
    rows.append(rows[1])
    with open(os.path.join(HERE, name), 'w', encoding='utf-8') as f:
        f.write('\n'.join(rows) + '\n')


def _hanze_map(name: str, cones: List[Cone]) -> None:
    """
    Write Hanze Racing's Moving_Car map (pandas ``to_csv``): screen axes.

    An unnamed index column, ``Cone_Type`` LEFT (the driver's left) then
    RIGHT, positions with y down (y negated); no orange cones.
    """
    rows = [',Cone_Type,Cone_X,Cone_Y']
    sides = [('LEFT', t, x, y) for t, x, y in cones if t == 'blue'] + \
        [('RIGHT', t, x, y) for t, x, y in cones if t == 'yellow']
    for k, (side, _t, x, y) in enumerate(sides):
        rows.append(f'{k},{side},{float(x)!r},{0.0 - y!r}')
    with open(os.path.join(HERE, name), 'w', encoding='utf-8') as f:
        f.write('\n'.join(rows) + '\n')


def _hanze_cone_log(name: str, cones: List[Cone]) -> None:
    """
    Write a Hanze coneconnecting cone log (pygamesim.py): y up, CRLF.

    Right cones first, then left, each chain from its ``['finish']`` cone
    (the big orange gate cones at x = -0.4; those at 0.4 are left out);
    ``prev ID``/``next ID`` link each boundary's cones in driving order.
    """
    rows = ['cone ID,leftOrRight,Xpos,Ypos,prev ID,next ID,coneData']
    chains = {}
    for side, colour, gate_y in (('LEFT', 'blue', 1.5),
                                 ('RIGHT', 'yellow', -1.5)):
        pts = [(x, y) for t, x, y in cones if t == colour]
        k = next(i for i, (x, y) in enumerate(pts)
                 if x > 0.0 and abs(y - gate_y) < 1e-6)
        chains[side] = [(-0.4, gate_y)] + pts[k:] + pts[:k]
    first = {'LEFT': 0, 'RIGHT': len(chains['LEFT'])}
    for side in ('RIGHT', 'LEFT'):
        n = len(chains[side])
        for i, (x, y) in enumerate(chains[side]):
            cid = first[side] + i
            prev = first[side] + (i - 1) % n
            nxt = first[side] + (i + 1) % n
            data = "['finish']" if i == 0 else ''
            rows.append(f'{cid},{side},{round(x, 2)},{round(y, 2)},{prev},'
                        f'{nxt},{data}')
    with open(os.path.join(HERE, name), 'w', encoding='utf-8',
              newline='') as f:
        f.write('\r\n'.join(rows) + '\r\n')


#: WGS84 semi-major axis (m) and first eccentricity squared.
WGS84_A = 6378137.0
WGS84_E2 = 6.69437999014e-3


def _latlon(name: str, cones: List[Cone], ref: Tuple[float, float]) -> None:
    """
    Write the cones as WGS84 latitude, longitude (an RTK survey): no colour.

    The oval's (x east, y north) about ``ref`` (degrees) on the local
    tangent plane (meridian and prime-vertical radii of curvature at
    ``ref``), 10 decimals (0.01 mm); the first row is the first blue cone.
    """
    lat0 = math.radians(ref[0])
    w = 1.0 - WGS84_E2 * math.sin(lat0) ** 2
    north = WGS84_A * (1.0 - WGS84_E2) / w ** 1.5      # m per rad
    east = WGS84_A / math.sqrt(w) * math.cos(lat0)
    rows = ['lat,lon']
    for _t, x, y in cones:
        rows.append(f'{ref[0] + math.degrees(y / north):.10f},'
                    f'{ref[1] + math.degrees(x / east):.10f}')
    with open(os.path.join(HERE, name), 'w', encoding='utf-8') as f:
        f.write('\n'.join(rows) + '\n')


def _conemap(name: str, cones: List[Cone], codes: dict) -> None:
    """Write a cone-array message as rostopic echo prints it."""
    out = ['header: ', '  seq: 12', '  stamp: ', '    secs: 0',
           '    nsecs:         0', '  frame_id: "world"', 'cones: ']
    for t, x, y in cones:
        out += ['  - ', '    location: ', f'      x: {x}', f'      y: {y}',
                '      z: 0.0', '    covariance: [0.15, 0.0, 0.0, 0.15]',
                f'    color: {codes[t]}']
    out.append('---')
    with open(os.path.join(HERE, name), 'w', encoding='utf-8') as f:
        f.write('\n'.join(out) + '\n')


def _sdf_fssim(name: str, cones: List[Cone]) -> None:
    """Write an SDF as fssim exports it: the right boundary cone_blue."""
    model = {'blue': ('cone_yellow', 'cone_left'),
             'yellow': ('cone_blue', 'cone_right'),
             'big_orange': ('cone_orange_big', 'cone_orange_big')}
    out = ["<?xml version='1.0' encoding='UTF-8'?>", '<sdf version="1.4">',
           '  <model name="some track">']
    for t, x, y in cones:
        uri, label = model[t]
        out += ['    <include>',
                f'      <uri>model://fssim_gazebo/models/{uri}</uri>',
                f'      <pose>{x} {y} 0 0 0 0</pose>',
                f'      <name>{label}</name>', '    </include>']
    for k, y in enumerate((3.0, -3.0)):
        out += ['    <include>',
                '      <uri>model://fssim_gazebo/models/time_keeping</uri>',
                f'      <pose>0.0 {y} 0 0 0 0</pose>',
                f'      <name>tk_device_{k}</name>', '    </include>']
    out += ['  </model>', '</sdf>']
    with open(os.path.join(HERE, name), 'w', encoding='utf-8') as f:
        f.write('\n'.join(out) + '\n')


def _sdf_world(name: str, cones: List[Cone]) -> None:
    """
    Write a Gazebo world: the track model (posed) with mesh links.

    Also a saved state copy, a barrel and the ground.
    """
    mesh = {'blue': 'cone_blue.dae', 'yellow': 'cone_yellow.dae',
            'big_orange': 'cone_big.dae'}
    out = ["<?xml version='1.0'?>", "<sdf version='1.6'>",
           "  <world name='default'>", '    <include>',
           '      <uri>model://ground_plane</uri>', '    </include>',
           "    <model name='small_track'>",
           '      <pose>10 5 0 0 0 0</pose>']
    for k, (t, x, y) in enumerate(cones):
        out += [f"      <link name='link_{k}'>",
                f"        <pose frame=''>{x} {y} 0.08 0 -0 0</pose>",
                "        <visual name='visual'><geometry><mesh>",
                f'          <uri>model://eufs_description/meshes/{mesh[t]}'
                '</uri>', '        </mesh></geometry></visual>',
                '      </link>']
    out += ['    </model>', "    <model name='construction_barrel'>",
            '      <pose>40 40 0 0 0 0</pose>', "      <link name='link'>",
            '        <visual name="v"><geometry><mesh><uri>model://'
            'construction_barrel/meshes/construction_barrel.dae</uri>'
            '</mesh></geometry></visual>', '      </link>', '    </model>',
            "    <state world_name='default'>",
            "      <model name='small_track'><pose>0 0 0 0 0 0</pose>",
            "        <link name='link_0'><pose>1 2 0 0 0 0</pose></link>",
            '      </model>', '    </state>', '  </world>', '</sdf>']
    with open(os.path.join(HERE, name), 'w', encoding='utf-8') as f:
        f.write('\n'.join(out) + '\n')


def _json_screen(name: str, cones: List[Cone]) -> None:
    """Write a 2D editor's JSON in screen axes (y down): lists of {x, y}."""
    keys = {'blue': 'blue_cones', 'yellow': 'yellow_cones',
            'big_orange': 'big_cones'}
    names = ('blue_cones', 'yellow_cones', 'orange_cones', 'big_cones')
    lists: dict = {k: [] for k in names}
    for t, x, y in cones:
        lists[keys[t]].append({'x': x, 'y': -y})
    lists['cars'] = [{'pos': {'x': -6.0, 'y': 0.0}, 'orientation': 0.0}]
    with open(os.path.join(HERE, name), 'w', encoding='utf-8') as f:
        json.dump(lists, f, indent=1)


def _json_columns(name: str, cones: List[Cone]) -> None:
    """Write a layout tool's JSON: x, y and color columns."""
    colour = {'blue': 'blue', 'yellow': 'yellow', 'big_orange': 'orange_big'}
    data = {'x': [x for _t, x, _y in cones], 'y': [y for _t, _x, y in cones],
            'color': [colour[t] for t, _x, _y in cones]}
    with open(os.path.join(HERE, name), 'w', encoding='utf-8') as f:
        json.dump(data, f)


def _unreal_dir(name: str, cones: List[Cone]) -> None:
    """Write Unreal editor transform dumps: cm, y to the right, an origin."""
    path = os.path.join(HERE, name)
    os.makedirs(path, exist_ok=True)
    ox, oy = 4300.0, 8600.0
    files = {'blue': 'blue.txt', 'yellow': 'yellow.txt',
             'big_orange': 'bigoranges.txt', 'orange': 'miniorange.txt'}
    for tag, fname in files.items():
        items = [f'(Translation=(X={ox + 100 * x:.6f},Y={oy - 100 * y:.6f},'
                 'Z=100.000000))' for t, x, y in cones if t == tag]
        with open(os.path.join(path, fname), 'w', encoding='utf-8') as f:
            f.write('(' + ','.join(items) + ')\n')
    with open(os.path.join(path, 'origin.txt'), 'w', encoding='utf-8') as f:
        f.write(f'(X={ox - 300:.6f},Y={oy:.6f},Z=100.000000)\n')


def _skidpad_file(name: str) -> None:
    """
    Write a skidpad (FS layout) with its crossing at (20, 5), along +y.

    The car start is 4 m short of the standard start; no mission in the
    file: the loader must find the circles.
    """
    ri, ro, d = 15.25 / 2, 21.25 / 2, 18.25 / 2
    pts = []
    for side, cy in (('right', -d), ('left', d)):
        for k in range(16):
            a = 2 * math.pi * k / 16
            pts.append(('yellow' if side == 'right' else 'blue',
                        ri * math.cos(a), cy + ri * math.sin(a)))
            b = a + math.pi / 16
            x, y = ro * math.cos(b), cy + ro * math.sin(b)
            if math.hypot(x, y - (-cy)) > ro + 0.5:
                pts.append(('blue' if side == 'right' else 'yellow', x, y))
    for x in range(-15, -10, 2):
        pts += [('orange', float(x), 1.5), ('orange', float(x), -1.5)]
    rows = [_row('car_start', 20.0, 5.0 - 17.0, math.pi / 2, 0.0)]
    for t, x, y in pts:
        rows.append(_row(t, round(20.0 - y, 3), round(5.0 + x, 3)))
    _csv(name, rows)


def _side(c: Cone) -> str:
    if c[0] == 'blue':
        return 'left'
    if c[0] == 'yellow':
        return 'right'
    return 'left' if c[2] > 0 else 'right'


def _pacsim(name: str, cones: List[Cone], closed: bool,
            start: Tuple[float, float], timing: List[Tuple[float, float]],
            unknown: List[Tuple[float, float]],
            invisible: Tuple = (), centerline: Tuple = ()) -> None:
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
    if centerline:      # E-Team's PacSim: centre-line points, no class
        out.append('  centerline_raw:')
        out += [f'  - position: [{x}, {y}, 0.0]' for x, y in centerline]
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
