# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
Track files other simulators write: read them into a :class:`Track`.

Formats (``docs/track_formats.md`` has the facts of each):

* ``eufs``: eufs_sim CSV, header ``tag,x,y,direction,x_variance,
  y_variance,xy_covariance``; tags ``blue``, ``yellow``, ``orange``,
  ``big_orange``, ``car_start`` (``direction`` = start heading, rad),
  ``midpoint`` (centre-line points, not cones) and our ``unknown``;
* ``fsds``: the same rows without a header and without ``car_start`` (the
  car starts at the origin facing +x);
* ``pacsim``: PacSim YAML, ``track: {start, left, right, time_keeping,
  unknown}`` with ``{position: [x, y, z], class}`` entries;
  ``time_keeping`` entries are timing sensors, not cones;
* ``fssim``: AMZ fssim YAML, ``cones_left``, ``cones_right``,
  ``cones_orange``, ``cones_orange_big`` ([x, y] lists),
  ``starting_pose_front_wing`` [x, y, yaw], ``tk_device`` (timing
  sensors).

Everything comes out REP-103 in ``map`` (x forward, y left; metres,
radians). ``convention='unreal'`` reads a file written with y to the right
(old FSDS maps) by negating y and the headings. Cones closer than a cone
base are merged (with a warning naming both lines). A broken file raises
``ValueError`` with one line naming the file, line and field.
"""

import csv
from dataclasses import dataclass, field
import logging
import math
import os
from typing import Any, Dict, List, Optional, Tuple

from hil_bridge.interface.cones import (CONE_BIG_ORANGE, CONE_BLUE, CONE_NAMES, CONE_ORANGE,
                                        CONE_SIZE, CONE_UNKNOWN, CONE_YELLOW)
from hil_bridge.interface.frames import Pose
from hil_bridge.interface.track import arc_length, ConeArray, MIN_WIDTH, TimingLine, Track
from hil_bridge.sim.tracks import (lateral_position, local_widths, MAX_CONE_SPACING, resample,
                                   rule_findings, skidpad_track, tangents, timing_line)
import numpy as np
from scipy.interpolate import splev, splprep
from scipy.spatial import cKDTree
import yaml

LOG = logging.getLogger(__name__)

CSV_HEADER = ['tag', 'x', 'y', 'direction', 'x_variance', 'y_variance',
              'xy_covariance']
FORMATS = ('eufs', 'fsds', 'pacsim', 'fssim')
CONVENTIONS = ('rep103', 'unreal')
#: CSV tags that are cones.
CSV_CONE_TAGS = {'blue': CONE_BLUE, 'yellow': CONE_YELLOW,
                 'orange': CONE_ORANGE, 'big_orange': CONE_BIG_ORANGE,
                 'unknown': CONE_UNKNOWN}
#: PacSim landmark classes that are cones (``invisible`` ones are not).
PACSIM_CLASSES = {'blue': CONE_BLUE, 'yellow': CONE_YELLOW,
                  'orange': CONE_ORANGE, 'small-orange': CONE_ORANGE,
                  'big-orange': CONE_BIG_ORANGE,
                  'big_orange': CONE_BIG_ORANGE, 'unknown': CONE_UNKNOWN}
#: fssim's start pose is the front wing; our car_start is the rear axle,
#: this far behind it (fs_car: length 2.9 m - rear overhang 0.6 m).
FRONT_WING_OFFSET = 2.3
#: Largest gap (m) between consecutive points of one boundary or of the
#: midpoint line when they are chained into a polyline.
CHAIN_GAP = 2.5 * MAX_CONE_SPACING


@dataclass
class TrackFile:
    """
    The content of a track file, REP-103 in ``map`` (metres, radians).

    ``xy`` (N, 2) / ``class_id`` (N,) are the cones (after merging
    near-duplicates), ``lines`` their source lines, ``side`` +1 for a cone
    the file puts on the left boundary, -1 right, 0 when it does not say;
    ``midpoints`` (M, 2) centre-line points in file order; ``timing``
    timing-sensor positions in file order (not cones); ``closed`` the
    file's own closed-loop flag (None when it has none); ``notes`` the
    loader's warnings.
    """

    path: str
    fmt: str
    xy: np.ndarray
    class_id: np.ndarray
    lines: List[int]
    side: np.ndarray
    car_start: Optional[Pose] = None
    midpoints: np.ndarray = field(default_factory=lambda: np.zeros((0, 2)))
    timing: np.ndarray = field(default_factory=lambda: np.zeros((0, 2)))
    closed: Optional[bool] = None
    notes: List[str] = field(default_factory=list)


@dataclass
class TrackLoad:
    """A loaded track, the format read and the rule check's findings."""

    track: Track
    fmt: str
    warnings: List[str]
    errors: List[str]


# ------------------------------------------------------------- detection
def detect_format(path: str) -> str:
    """
    Return the format of a track file from its extension and content.

    ``.csv``: ``eufs`` when the first row is the header or a ``car_start``
    row exists, else ``fsds``; ``.yaml``/``.yml``: ``pacsim`` for a top
    ``track`` mapping, ``fssim`` for ``cones_left``/``cones_right``. Other
    extensions are sniffed the same way. Raises ``ValueError`` naming the
    file when nothing fits.
    """
    with open(path, 'r', encoding='utf-8') as stream:
        text = stream.read()
    ext = os.path.splitext(path)[1].lower()
    looks_yaml = ext in ('.yaml', '.yml') or (
        ext != '.csv' and any(key in text for key in
                              ('cones_left', 'track:', 'left:')))
    if looks_yaml:
        for raw in text.splitlines():
            line = raw.split('#', 1)[0].rstrip()
            if not line or line.startswith((' ', '\t', '-', '---')):
                continue
            key = line.split(':', 1)[0].strip()
            if key == 'track':
                return 'pacsim'
            if key.startswith('cones_') or key in ('starting_pose_front_wing',
                                                   'tk_device'):
                return 'fssim'
        raise ValueError(f"{path}:1: field 'track': not a PacSim "
                         '(track: ...) or fssim (cones_left: ...) YAML file')
    for raw in text.splitlines():
        first = raw.split(',', 1)[0].strip().lower()
        if not first:
            continue
        if first == 'tag':
            return 'eufs'
        break
    if any(r.split(',', 1)[0].strip() == 'car_start'
           for r in text.splitlines()):
        return 'eufs'
    return 'fsds'


# ------------------------------------------------------------------- CSV
def _parse_float(path: str, line: int, name: str, text: Optional[str],
                 required: bool) -> float:
    if text is None or text.strip() == '':
        if required:
            raise ValueError(f'{path}:{line}: field {name!r} is missing')
        return 0.0
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f'{path}:{line}: field {name!r} is not a number: '
                         f'{text!r}') from None
    if not math.isfinite(value):
        raise ValueError(f'{path}:{line}: field {name!r} is not finite: '
                         f'{text!r}')
    return value


def _read_csv(path: str, fmt: str) -> TrackFile:
    """Read an eufs_sim/FSDS CSV (header optional, repeated header skipped)."""
    xy: List[Tuple[float, float]] = []
    cls: List[int] = []
    lines: List[int] = []
    mids: List[Tuple[float, float]] = []
    notes: List[str] = []
    car_start: Optional[Pose] = None
    col: Optional[Dict[str, int]] = None
    with open(path, 'r', newline='', encoding='utf-8') as stream:
        reader = csv.reader(stream)
        for row in reader:
            line = reader.line_num
            if not row or all(c.strip() == '' for c in row):
                continue
            cells = [c.strip() for c in row]
            if cells[0].lower() == 'tag':
                if col is not None:
                    notes.append(f'{path}:{line}: repeated header line '
                                 'skipped')
                    continue
                for name in CSV_HEADER[:3]:
                    if name not in cells:
                        raise ValueError(
                            f'{path}:{line}: header misses field {name!r} '
                            f'(expected {",".join(CSV_HEADER)})')
                col = {name: cells.index(name) for name in CSV_HEADER
                       if name in cells}
                continue
            if col is None:
                # no header line (FSDS): the standard column order
                col = {name: i for i, name in enumerate(CSV_HEADER)}

            def get(name: str) -> Optional[str]:
                i = col.get(name) if col is not None else None
                return cells[i] if i is not None and i < len(cells) else None
            tag = get('tag') or ''
            if tag == '':
                raise ValueError(f"{path}:{line}: field 'tag' is missing")
            x = _parse_float(path, line, 'x', get('x'), True)
            y = _parse_float(path, line, 'y', get('y'), True)
            direction = _parse_float(path, line, 'direction',
                                     get('direction'), False)
            for name in CSV_HEADER[4:6]:
                if _parse_float(path, line, name, get(name), False) < 0.0:
                    raise ValueError(f'{path}:{line}: field {name!r} is a '
                                     f'variance and must be >= 0: '
                                     f'{get(name)!r}')
            _parse_float(path, line, 'xy_covariance', get('xy_covariance'),
                         False)
            if tag == 'car_start':
                if car_start is not None:
                    raise ValueError(f"{path}:{line}: field 'tag': second "
                                     'car_start row')
                car_start = Pose(x=x, y=y, yaw=direction)
            elif tag == 'midpoint':
                mids.append((x, y))
            elif tag in CSV_CONE_TAGS:
                xy.append((x, y))
                cls.append(CSV_CONE_TAGS[tag])
                lines.append(line)
            else:
                raise ValueError(
                    f"{path}:{line}: field 'tag': unknown tag {tag!r} "
                    f'(expected one of {sorted(CSV_CONE_TAGS)} + '
                    "['car_start', 'midpoint'])")
    if col is None:
        raise ValueError(f'{path}:1: empty file (expected rows '
                         f'{",".join(CSV_HEADER)})')
    return TrackFile(path=path, fmt=fmt,
                     xy=np.array(xy, dtype=float).reshape(-1, 2),
                     class_id=np.array(cls, dtype=np.uint8), lines=lines,
                     side=np.zeros(len(cls), dtype=np.int8),
                     car_start=car_start,
                     midpoints=np.array(mids, dtype=float).reshape(-1, 2),
                     notes=notes)


def save_track_csv(track: Track, path: str) -> None:
    """Write a track as our eufs-style CSV (header, car_start first)."""
    with open(path, 'w', newline='', encoding='utf-8') as stream:
        w = csv.writer(stream)
        w.writerow(CSV_HEADER)
        p = track.car_start
        w.writerow(['car_start', repr(float(p.x)), repr(float(p.y)),
                    repr(float(p.yaw)), 0.0, 0.0, 0.0])
        for (x, y), c in zip(track.cones.xy, track.cones.class_id):
            w.writerow([CONE_NAMES[int(c)], repr(float(x)), repr(float(y)),
                        0.0, 0.0, 0.0, 0.0])


# ------------------------------------------------------------------ YAML
class _Yaml:
    """A composed YAML document with line numbers for error messages."""

    def __init__(self, path: str, text: str) -> None:
        self.path = path
        try:
            self.root = yaml.compose(text, Loader=yaml.SafeLoader)
        except yaml.YAMLError as exc:
            mark = getattr(exc, 'problem_mark', None)
            line = mark.line + 1 if mark is not None else 1
            problem = getattr(exc, 'problem', None) or str(exc).split('\n')[0]
            raise ValueError(f'{path}:{line}: not valid YAML: {problem}'
                             ) from None
        if self.root is None:
            raise ValueError(f'{path}:1: empty file')

    def error(self, node: Any, where: str, message: str) -> ValueError:
        """Return a ValueError naming file, line of ``node`` and field."""
        line = node.start_mark.line + 1 if node is not None else 1
        return ValueError(f'{self.path}:{line}: field {where!r}: {message}')

    def mapping(self, node: Any, where: str) -> Dict[str, Any]:
        """Return the (key -> value node) dict of a mapping node."""
        if not isinstance(node, yaml.MappingNode):
            raise self.error(node, where, 'expected a mapping')
        return {str(k.value): v for k, v in node.value}

    def sequence(self, node: Any, where: str) -> List[Any]:
        """Return the item nodes of a sequence node (null = empty)."""
        if isinstance(node, yaml.ScalarNode) and node.tag.endswith(':null'):
            return []
        if not isinstance(node, yaml.SequenceNode):
            raise self.error(node, where, 'expected a list')
        return list(node.value)

    def number(self, node: Any, where: str) -> float:
        """Return a finite float scalar."""
        if not isinstance(node, yaml.ScalarNode):
            raise self.error(node, where, 'expected a number')
        try:
            value = float(node.value)
        except ValueError:
            raise self.error(node, where, f'not a number: {node.value!r}'
                             ) from None
        if not math.isfinite(value):
            raise self.error(node, where, f'not finite: {node.value!r}')
        return value

    def vector(self, node: Any, where: str, lo: int, hi: int) -> List[float]:
        """Return a list of ``lo``..``hi`` finite numbers."""
        items = self.sequence(node, where)
        if not lo <= len(items) <= hi:
            raise self.error(node, where, f'expected {lo}' +
                             (f'-{hi}' if hi > lo else '') +
                             f' numbers, got {len(items)}')
        return [self.number(v, f'{where}[{i}]') for i, v in enumerate(items)]

    def text(self, node: Any, where: str) -> str:
        """Return a string scalar."""
        if not isinstance(node, yaml.ScalarNode):
            raise self.error(node, where, 'expected a string')
        return str(node.value)


def _read_pacsim(path: str, text: str) -> TrackFile:
    """Read a PacSim track YAML."""
    doc = _Yaml(path, text)
    top = doc.mapping(doc.root, '<top>')
    if 'track' not in top:
        raise doc.error(doc.root, 'track', 'missing (PacSim files have a '
                        'top-level track mapping)')
    tr = doc.mapping(top['track'], 'track')
    xy, cls, lines, side, timing = [], [], [], [], []
    notes: List[str] = []
    skipped = 0
    for key, sgn in (('left', 1), ('right', -1), ('unknown', 0),
                     ('time_keeping', 0)):
        if key not in tr:
            if key in ('left', 'right'):
                raise doc.error(top['track'], f'track.{key}', 'missing')
            continue
        for i, item in enumerate(doc.sequence(tr[key], f'track.{key}')):
            where = f'track.{key}[{i}]'
            entry = doc.mapping(item, where)
            if 'position' not in entry:
                raise doc.error(item, f'{where}.position', 'missing')
            pos = doc.vector(entry['position'], f'{where}.position', 2, 3)
            name = doc.text(entry['class'], f'{where}.class') \
                if 'class' in entry else 'unknown'
            if key == 'time_keeping' or name == 'timekeeping':
                timing.append(pos[:2])
                continue
            if name == 'invisible':
                skipped += 1
                continue
            if name not in PACSIM_CLASSES:
                raise doc.error(entry.get('class', item), f'{where}.class',
                                f'unknown class {name!r} (expected one of '
                                f'{sorted(PACSIM_CLASSES)}, timekeeping, '
                                'invisible)')
            xy.append(pos[:2])
            cls.append(PACSIM_CLASSES[name])
            lines.append(item.start_mark.line + 1)
            side.append(sgn)
    if skipped:
        notes.append(f'{path}: {skipped} invisible landmarks skipped (not '
                     'cones)')
    car_start = None
    if 'start' in tr:
        st = doc.mapping(tr['start'], 'track.start')
        pos = doc.vector(st['position'], 'track.start.position', 2, 3) \
            if 'position' in st else [0.0, 0.0]
        ori = doc.vector(st['orientation'], 'track.start.orientation', 3, 3) \
            if 'orientation' in st else [0.0, 0.0, 0.0]
        car_start = Pose(x=pos[0], y=pos[1], yaw=ori[2])
    closed = None
    if 'lanesFirstWithLastConnected' in tr:
        node = tr['lanesFirstWithLastConnected']
        value = doc.text(node, 'track.lanesFirstWithLastConnected').lower()
        if value not in ('true', 'false'):
            raise doc.error(node, 'track.lanesFirstWithLastConnected',
                            f'expected true or false, got {value!r}')
        closed = value == 'true'
    return TrackFile(path=path, fmt='pacsim',
                     xy=np.array(xy, dtype=float).reshape(-1, 2),
                     class_id=np.array(cls, dtype=np.uint8), lines=lines,
                     side=np.array(side, dtype=np.int8), car_start=car_start,
                     timing=np.array(timing, dtype=float).reshape(-1, 2),
                     closed=closed, notes=notes)


def _read_fssim(path: str, text: str) -> TrackFile:
    """Read an AMZ fssim track YAML."""
    doc = _Yaml(path, text)
    top = doc.mapping(doc.root, '<top>')
    for key in ('cones_left', 'cones_right'):
        if key not in top:
            raise doc.error(doc.root, key, 'missing')
    xy, cls, lines, side = [], [], [], []
    for key, colour, sgn in (('cones_left', CONE_BLUE, 1),
                             ('cones_right', CONE_YELLOW, -1),
                             ('cones_orange', CONE_ORANGE, 0),
                             ('cones_orange_big', CONE_BIG_ORANGE, 0)):
        if key not in top:
            continue
        for i, item in enumerate(doc.sequence(top[key], key)):
            pos = doc.vector(item, f'{key}[{i}]', 2, 3)
            xy.append(pos[:2])
            cls.append(colour)
            lines.append(item.start_mark.line + 1)
            side.append(sgn)
    timing = []
    if 'tk_device' in top:
        for i, item in enumerate(doc.sequence(top['tk_device'],
                                              'tk_device')):
            timing.append(doc.vector(item, f'tk_device[{i}]', 2, 3)[:2])
    car_start = None
    if 'starting_pose_front_wing' in top:
        x, y, yaw = doc.vector(top['starting_pose_front_wing'],
                               'starting_pose_front_wing', 3, 3)
        car_start = Pose(x=x - FRONT_WING_OFFSET * math.cos(yaw),
                         y=y - FRONT_WING_OFFSET * math.sin(yaw), yaw=yaw)
    return TrackFile(path=path, fmt='fssim',
                     xy=np.array(xy, dtype=float).reshape(-1, 2),
                     class_id=np.array(cls, dtype=np.uint8), lines=lines,
                     side=np.array(side, dtype=np.int8), car_start=car_start,
                     timing=np.array(timing, dtype=float).reshape(-1, 2))


# ------------------------------------------------------------- reading
def read_track_file(path: str, fmt: str = 'auto',
                    convention: str = 'rep103') -> TrackFile:
    """
    Read a track file of any supported format (``fmt='auto'`` detects it).

    Applies the axis ``convention`` (``unreal``: y and headings negated)
    and merges near-duplicate cones (bases overlapping) into one at their
    mean position, noting both lines. Raises ``ValueError`` (one line with
    file, line and field) for a broken file, ``FileNotFoundError`` for a
    missing one.
    """
    if convention not in CONVENTIONS:
        raise ValueError(f'{path}: convention {convention!r} is not one of '
                         f'{list(CONVENTIONS)}')
    if fmt in ('auto', '', None):
        fmt = detect_format(path)
    if fmt not in FORMATS:
        raise ValueError(f'{path}: format {fmt!r} is not one of '
                         f'{["auto", *FORMATS]}')
    if fmt in ('eufs', 'fsds'):
        tf = _read_csv(path, fmt)
    else:
        with open(path, 'r', encoding='utf-8') as stream:
            text = stream.read()
        tf = _read_pacsim(path, text) if fmt == 'pacsim' else \
            _read_fssim(path, text)
    if len(tf.xy) == 0:
        raise ValueError(f'{path}: no cones')
    if convention == 'unreal':
        for arr in (tf.xy, tf.midpoints, tf.timing):
            arr[:, 1] *= -1.0
        if tf.car_start is not None:
            p = tf.car_start
            tf.car_start = Pose(x=p.x, y=-p.y, z=p.z, yaw=-p.yaw)
    _merge_duplicates(tf)
    for note in tf.notes:
        LOG.debug(note)
    return tf


def _cone_base(class_id: np.ndarray) -> np.ndarray:
    """Return the base width (m) of each cone."""
    return np.array([CONE_SIZE.get(int(c), CONE_SIZE[CONE_BLUE])[0]
                     for c in class_id])


def _merge_duplicates(tf: TrackFile) -> None:
    """Merge cones whose bases overlap (in place) and note each merge."""
    n = len(tf.xy)
    if n < 2:
        return
    base = _cone_base(tf.class_id)
    pairs = cKDTree(tf.xy).query_pairs(float(base.max()),
                                       output_type='ndarray')
    if pairs.size == 0:
        return
    d = np.hypot(*(tf.xy[pairs[:, 0]] - tf.xy[pairs[:, 1]]).T)
    pairs = pairs[d < (base[pairs[:, 0]] + base[pairs[:, 1]]) / 2.0]
    if pairs.size == 0:
        return
    parent = np.arange(n)

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = int(parent[i])
        return i
    for i, j in sorted((int(a), int(b)) for a, b in pairs):
        ri, rj = root(i), root(j)
        if ri != rj:
            parent[max(ri, rj)] = min(ri, rj)
    roots = np.array([root(i) for i in range(n)])
    keep = roots == np.arange(n)
    for r in np.flatnonzero(keep):
        members = np.flatnonzero(roots == r)
        if len(members) < 2:
            continue
        centre = tf.xy[members].mean(axis=0)
        spread = float(np.hypot(*(tf.xy[members] - tf.xy[r]).T).max())
        others = ', '.join(str(tf.lines[m]) for m in members[1:])
        names = sorted({CONE_NAMES[int(c)] for c in tf.class_id[members]})
        kind = names[0] if len(names) == 1 else \
            f'{"/".join(names)} (kept {CONE_NAMES[int(tf.class_id[r])]})'
        tf.notes.append(
            f'{tf.path}:{tf.lines[r]}: {kind} cone merged with the cone(s) '
            f'of line {others} ({spread * 100:.1f} cm apart, closer than a '
            'cone base)')
        tf.xy[r] = centre
        if tf.side[r] == 0:
            sides = tf.side[members]
            tf.side[r] = int(sides[sides != 0][0]) if (sides != 0).any() \
                else 0
    tf.xy = tf.xy[keep]
    tf.class_id = tf.class_id[keep]
    tf.side = tf.side[keep]
    tf.lines = [ln for ln, k in zip(tf.lines, keep) if k]


# ------------------------------------------------------------ building
def build_track(tf: TrackFile, mission: str = '', width: float = 0.0
                ) -> Track:
    """
    Build a :class:`Track` (centre line, width, timing lines) from a file.

    The centre line comes from the ``midpoint`` rows when they form a
    line, else from the boundaries (cones the file puts left/right, or
    blue/yellow by colour, chained from the car start); ``mission=
    'skidpad'`` places the standard skidpad layout at ``car_start``.
    Timing lines come from the timing sensors (pairs in file order: one
    pair = start and finish, two = start, finish), else from the big
    orange cones. ``width`` 0 means the median local width of the cones.
    """
    car_start = tf.car_start if tf.car_start is not None else Pose()
    cones = ConeArray(xy=tf.xy.copy(), class_id=tf.class_id.copy(),
                      knocked=np.zeros(len(tf.class_id), dtype=bool))
    name = os.path.splitext(os.path.basename(tf.path))[0]
    if mission == 'skidpad':
        return _skidpad_at(name, cones, car_start)
    cl, closed = None, False
    if len(tf.midpoints) >= 4:
        got = _centerline_from_midpoints(tf.midpoints, car_start)
        if got is None:
            tf.notes.append(f'{tf.path}: midpoint rows do not form a line '
                            f'(gaps > {CHAIN_GAP} m): centre line rebuilt '
                            'from the cones')
        else:
            cl, closed = got
    if cl is None:
        cl, closed = _centerline_from_cones(cones, tf.side, car_start,
                                            tf.path)
    probe = Track(name, cones, car_start, cl, closed, width=MIN_WIDTH)
    if width <= 0.0:
        w = local_widths(probe)
        w = w[np.isfinite(w)]
        width = round(float(np.median(w)), 2) if w.size else MIN_WIDTH
    tan = tangents(cl, closed)
    timing = _timing_from_sensors(tf.timing, cl, closed, tan, width)
    if timing is None:
        timing = _timing_from_big_orange(cones, cl, closed, tan, width)
    return Track(name=name, cones=cones, car_start=car_start, centerline=cl,
                 closed=closed, width=width, timing_lines=timing,
                 mission=mission)


def load_track_file(path: str, fmt: str = 'auto', convention: str = 'rep103',
                    mission: str = '', width: float = 0.0,
                    tolerance: float = 0.1) -> TrackLoad:
    """
    Read a track file, build the track and run the FS rule check.

    ``warnings`` holds the loader's notes (merged cones, skipped rows) and
    the rule warnings, ``errors`` the rule errors (mirrored colours). A
    broken file raises ``ValueError`` instead.
    """
    tf = read_track_file(path, fmt, convention)
    track = build_track(tf, mission, width)
    errors, warnings = [], list(tf.notes)
    for finding in rule_findings(track, tolerance):
        msg = f'{path}: {finding.message}'
        if finding.severity == 'error':
            if 'mirrored' in finding.message and convention == 'rep103':
                msg += (' (a file written with y to the right, as old FSDS '
                        'maps? try convention unreal)')
            errors.append(msg)
        else:
            warnings.append(msg)
    return TrackLoad(track=track, fmt=tf.fmt, warnings=warnings,
                     errors=errors)


def open_track(path: str, fmt: str = 'auto', convention: str = 'rep103',
               mission: str = '', width: float = 0.0) -> Track:
    """
    Load a track file for a scenario: raise on rule errors, log warnings.

    Raises ``ValueError`` (one line) for a broken file or for a rule error
    (mirrored colours); every warning is logged (``logging`` WARNING).
    """
    loaded = load_track_file(path, fmt, convention, mission, width)
    if loaded.errors:
        raise ValueError(loaded.errors[0])
    for text in loaded.warnings:
        LOG.warning(text)
    return loaded.track


def load_track_csv(path: str, mission: str = '', width: float = 0.0
                   ) -> Track:
    """Read an eufs_sim/FSDS CSV into a track (no rule check)."""
    return build_track(read_track_file(path, 'auto'), mission, width)


# ------------------------------------------------------------ centre line
def _chain(points: np.ndarray, start: np.ndarray, heading: np.ndarray,
           max_gap: float) -> np.ndarray:
    """Order boundary cones by walking nearest neighbours from ``start``."""
    n = len(points)
    rel = points - start
    ahead = rel @ heading
    cand = np.flatnonzero(ahead > -1.0)
    if cand.size == 0:
        cand = np.arange(n)
    first = cand[np.argmin(np.hypot(*rel[cand].T))]
    tree = cKDTree(points)
    order = [int(first)]
    used = np.zeros(n, bool)
    used[first] = True
    direction = heading.copy()
    while True:
        cur = points[order[-1]]
        k = min(n, 8)
        dist, idx = tree.query(cur, k=k)
        dist, idx = np.atleast_1d(dist), np.atleast_1d(idx)
        ok = (~used[idx]) & (dist <= max_gap) & (dist > 0)
        if not ok.any():
            break
        vec = points[idx[ok]] - cur
        score = dist[ok] * (1.5 - (vec @ direction) / dist[ok])
        j = int(idx[ok][np.argmin(score)])
        direction = (points[j] - cur) / np.hypot(*(points[j] - cur))
        used[j] = True
        order.append(j)
    return np.array(order)


def _centerline_from_midpoints(mids: np.ndarray, car_start: Pose
                               ) -> Optional[Tuple[np.ndarray, bool]]:
    """Use the midpoint rows (file order) as the centre line, if a line."""
    keep = np.concatenate([[True], np.hypot(*np.diff(mids, axis=0).T) > 0.05])
    pts = mids[keep]
    closed = False
    if len(pts) > 4 and np.hypot(*(pts[-1] - pts[0])) < 0.05:
        pts, closed = pts[:-1], True
    gaps = np.hypot(*np.diff(pts, axis=0).T)
    if len(pts) < 4 or gaps.max() > CHAIN_GAP:
        return None
    if not closed and np.hypot(*(pts[-1] - pts[0])) < CHAIN_GAP and \
            len(pts) > 8:
        closed = True
    origin = np.array([car_start.x, car_start.y])
    heading = np.array([math.cos(car_start.yaw), math.sin(car_start.yaw)])
    i = int(np.argmin(np.hypot(*(pts - origin).T)))
    tan = tangents(pts, closed)[i]
    if float(tan @ heading) < 0.0:
        pts = pts[::-1].copy()
    if not closed:
        start = origin - 2.0 * heading
        if np.hypot(*(pts[0] - origin)) > 1.0 and \
                float((pts[0] - origin) @ heading) > 0.0:
            pts = np.vstack([start, pts])
    return _smooth(pts, closed), closed


def _centerline_from_cones(cones: ConeArray, side: np.ndarray,
                           car_start: Pose, path: str
                           ) -> Tuple[np.ndarray, bool]:
    """
    Rebuild a centre line from the boundary cones.

    A first pass uses the cones the file puts left/right (or blue left and
    yellow right); the other cones are then put on the side they lie on
    and the centre line is rebuilt with them (braking zones, start lines).
    """
    heading = np.array([math.cos(car_start.yaw), math.sin(car_start.yaw)])
    origin = np.array([car_start.x, car_start.y])
    cls = cones.class_id
    left = (side > 0) | ((side == 0) & (cls == CONE_BLUE))
    right = (side < 0) | ((side == 0) & (cls == CONE_YELLOW))
    if left.sum() < 2 or right.sum() < 2:
        # no colours: split all cones by the side of the start heading
        rel = cones.xy - origin
        lat = heading[0] * rel[:, 1] - heading[1] * rel[:, 0]
        left, right = lat > 0, lat < 0
    cl, closed = _centerline_pass(cones.xy[left], cones.xy[right], origin,
                                  heading, path)
    other = ~(left | right)
    if other.any():
        probe = Track('', cones, car_start, cl, closed)
        _s, lat, _d = lateral_position(probe, cones.xy[other])
        idx = np.flatnonzero(other)
        left = left.copy()
        right = right.copy()
        left[idx[lat > 0]] = True
        right[idx[lat < 0]] = True
        cl, closed = _centerline_pass(cones.xy[left], cones.xy[right],
                                      origin, heading, path)
    return cl, closed


def _centerline_pass(left: np.ndarray, right: np.ndarray, origin: np.ndarray,
                     heading: np.ndarray, path: str
                     ) -> Tuple[np.ndarray, bool]:
    if len(left) < 2 or len(right) < 2:
        raise ValueError(f'{path}: need at least two cones on each side of '
                         'the track to build its centre line')
    lo = left[_chain(left, origin, heading, CHAIN_GAP)]
    ro = right[_chain(right, origin, heading, CHAIN_GAP)]
    closed = bool(len(lo) > 4 and len(ro) > 4
                  and np.hypot(*(lo[-1] - lo[0])) < CHAIN_GAP)
    # centre points: each ordered left cone with the nearest point of the
    # right boundary polyline (densified), then a smoothing spline
    dense_right = resample(ro, closed, 0.1)
    _d, j = cKDTree(dense_right).query(lo)
    mids = (lo + dense_right[j]) / 2.0
    keep = np.concatenate([[True], np.hypot(*np.diff(mids, axis=0).T) > 0.3])
    mids = mids[keep]
    closed = closed and len(mids) > 4
    if not closed:
        # extend back to the car start
        first = np.array([origin - 2.0 * heading])
        mids = np.vstack([first, mids])
    return _smooth(mids, closed), closed


def _smooth(pts: np.ndarray, closed: bool) -> np.ndarray:
    """Fit a smoothing cubic spline (about 5 cm RMS) and resample it."""
    if len(pts) < 4:
        return resample(pts, closed, 0.5)
    xs = np.append(pts[:, 0], pts[0, 0]) if closed else pts[:, 0]
    ys = np.append(pts[:, 1], pts[0, 1]) if closed else pts[:, 1]
    try:
        tck, _u = splprep([xs, ys], s=len(xs) * 0.05 ** 2, per=int(closed))
    except (ValueError, TypeError):
        return resample(pts, closed, 0.5)
    n = max(int(arc_length(pts, closed)[-1] / 0.1), 10)
    dense = np.column_stack(splev(np.linspace(0.0, 1.0, n,
                                              endpoint=not closed), tck))
    return resample(dense, closed, 0.5)


# ----------------------------------------------------------- timing lines
def _line_at(name: str, centre: np.ndarray, cl: np.ndarray, tan: np.ndarray,
             width: float, after: int = -1) -> Tuple[TimingLine, int]:
    """Return a timing line across the centre line nearest ``centre``."""
    d = np.hypot(*(cl - centre).T)
    if after >= 0:
        d[:after] = np.inf
    i = int(np.argmin(d))
    return timing_line(name, cl[i], tan[i], width / 2.0 + 0.5), i


def _timing_from_sensors(points: np.ndarray, cl: np.ndarray, closed: bool,
                         tan: np.ndarray, width: float
                         ) -> Optional[Dict[str, TimingLine]]:
    """Return timing lines at timing-sensor pairs (file order), or None."""
    if len(points) < 2:
        return None
    pairs = [points[i:i + 2].mean(axis=0)
             for i in range(0, len(points) - 1, 2)]
    start, i = _line_at('start', pairs[0], cl, tan, width)
    if closed or len(pairs) == 1:
        return {'start': start, 'finish': start}
    finish, _j = _line_at('finish', pairs[-1], cl, tan, width, after=i + 1)
    return {'start': start, 'finish': finish}


def _timing_from_big_orange(cones: ConeArray, cl: np.ndarray, closed: bool,
                            tan: np.ndarray, width: float
                            ) -> Dict[str, TimingLine]:
    """Return timing lines at the big orange cone groups (first, last)."""
    big = cones.xy[cones.class_id == CONE_BIG_ORANGE]
    if len(big) == 0:
        line = timing_line('start', cl[0], tan[0], width / 2.0 + 0.5)
        return {'start': line, 'finish': line}
    pairs = cKDTree(big).query_pairs(width + 2.0, output_type='ndarray')
    label = np.arange(len(big))
    for a, b in sorted((int(p), int(q)) for p, q in pairs):
        la, lb = label[a], label[b]
        label[label == max(la, lb)] = min(la, lb)
    cl_tree = cKDTree(cl)
    groups = sorted(int(cl_tree.query(big[label == k].mean(axis=0))[1])
                    for k in np.unique(label))
    first, last = groups[0], groups[-1]
    start = timing_line('start', cl[first], tan[first], width / 2.0 + 0.5)
    if closed or first == last:
        return {'start': start, 'finish': start}
    finish = timing_line('finish', cl[last], tan[last], width / 2.0 + 0.5)
    return {'start': start, 'finish': finish}


def _skidpad_at(name: str, cones: ConeArray, car_start: Pose) -> Track:
    """
    Return the standard skidpad centre line and gate placed on the file.

    The layout is turned to the start heading; its crossing lies on the
    car's line at the mean along-track position of the blue and yellow
    cones (the circles are symmetric about it), or 13 m ahead of the car
    (our own layout) when there are fewer than 8 of them.
    """
    ref = skidpad_track()
    c, s = math.cos(car_start.yaw), math.sin(car_start.yaw)
    rot = np.array([[c, -s], [s, c]])
    heading = rot[:, 0]
    origin = np.array([car_start.x, car_start.y])
    ring = (cones.class_id == CONE_BLUE) | (cones.class_id == CONE_YELLOW)
    along = float(np.mean((cones.xy[ring] - origin) @ heading)) \
        if ring.sum() >= 8 else -float(ref.car_start.x)
    off = origin + along * heading

    def tf(p: np.ndarray) -> np.ndarray:
        return p @ rot.T + off
    lines = {k: TimingLine(v.name, tf(v.a), tf(v.b), rot @ v.direction)
             for k, v in ref.timing_lines.items()}
    return Track(name=name, cones=cones, car_start=car_start,
                 centerline=tf(ref.centerline), closed=False,
                 width=ref.width, timing_lines=lines, mission='skidpad')


def describe(loaded: TrackLoad) -> List[str]:
    """Return a human-readable rules report of a loaded track."""
    t = loaded.track
    counts = {CONE_NAMES[int(k)]: int((t.cones.class_id == k).sum())
              for k in np.unique(t.cones.class_id)}
    out = [f'{t.name} ({loaded.fmt}): {t.length:.1f} m centre line, '
           f'{"closed" if t.closed else "open"}, width {t.width:.2f} m, '
           f'{len(t.cones)} cones {counts}, car start '
           f'({t.car_start.x:.2f}, {t.car_start.y:.2f}, '
           f'{t.car_start.yaw:.3f} rad)']
    out += [f'error: {e}' for e in loaded.errors]
    out += [f'warning: {w}' for w in loaded.warnings]
    return out
