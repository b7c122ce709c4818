# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
Readers of the track file formats other simulators and teams write.

Each reader returns a :class:`TrackFile` (cones, start pose, centre-line
points, timing sensors, loader notes) in the file's own axes, metres;
:mod:`hil_bridge.sim.track_files` applies the axis convention, merges
near-duplicate cones and builds the :class:`Track`. Formats
(``docs/track_formats.md`` has the facts of each):

* ``eufs``: eufs_sim CSV (header ``tag,x,y,direction,...``); ``fsds``: the
  same rows without a header (FSDS maps); ``csv``: any other CSV with a
  colour and x/y columns (e.g. ``cone_type,X,Y,Z,...,right,left``), plain
  x,y rows (cones of unknown colour), paired ``left_x,left_y,right_x,
  right_y`` columns (MUR), Hanze Racing's pygame maps (screen axes) and
  cone logs, or WGS84 ``lat,lon`` (converted to local metres);
* ``pacsim``: PacSim YAML (``track: {left, right, time_keeping, ...}``,
  E-Team's ``centerline_raw``);
* ``fssim``: AMZ fssim YAML (``cones_left``, ``cones_right``, ...);
* ``conemap``: a cone-array message dumped as YAML (``cones: [{location,
  color}]``, e.g. ``rostopic echo``), numeric colour codes allowed;
* ``sdf``: a Gazebo SDF model or world (``<include>``/``<link>`` cones,
  colour from the model or mesh name, fssim ``cone_left``/``cone_right``);
* ``json``: colour lists (``blue_cones``, ...), columns (``x``, ``y``,
  ``color``) or a list of ``{x, y, color}`` objects; FSAI-Sim's UMDF
  (``start.rotation.yaw``, ``centreline``, ``loop``);
* ``unreal_dir``: a directory of Unreal editor transform dumps
  (``blue.txt``, ``yellow.txt``, ``origin.txt``, ...; cm, y right).

Every error is a ``ValueError`` with one line naming the file, the line
and the field.
"""

import bisect
import codecs
from dataclasses import dataclass, field
import functools
import json
import json.decoder
import json.scanner
import math
import os
import re
from types import SimpleNamespace
from typing import Any, Dict, Iterable, List, Optional, Tuple
import xml.etree.ElementTree as ET
from xml.parsers import expat

from hil_bridge.interface.cones import (CONE_BIG_ORANGE, CONE_BLUE, CONE_ORANGE, CONE_UNKNOWN,
                                        CONE_YELLOW)
from hil_bridge.interface.config import yaml_error
from hil_bridge.interface.frames import Pose, quaternion_yaw
from hil_bridge.interface.track import arc_length
from hil_bridge.sim.tracks import tangents
import numpy as np
import yaml

#: Formats :func:`read_file` knows (``auto`` detects them).
FORMATS = ('eufs', 'fsds', 'csv', 'pacsim', 'fssim', 'conemap', 'sdf',
           'json', 'unreal_dir')
#: The eufs_sim CSV header (what ``save_track_csv`` writes).
CSV_HEADER = ['tag', 'x', 'y', 'direction', 'x_variance', 'y_variance',
              'xy_covariance']
#: Largest text file read (bytes): track files are kilobytes.
MAX_BYTES = 64 * 1024 * 1024
# largest magnitude of any number in a track file: a map frame, even in UTM
# coordinates (northing < 1e7 m), is far inside it; beyond it the squared
# distances of the geometry overflow (1e300 -> inf)
MAX_ABS = 1e8

# Normalised cone tags (lower case, '-' and ' ' as '_') -> (class, side).
_TAG_CLASSES: Dict[str, Tuple[int, int]] = {}
for _names, _cls, _side in (
        (('blue', 'blue_cone', 'cone_blue'), CONE_BLUE, 0),
        (('left', 'left_cone', 'cone_left', 'cones_left'), CONE_BLUE, 1),
        (('yellow', 'yellow_cone', 'cone_yellow'), CONE_YELLOW, 0),
        (('right', 'right_cone', 'cone_right', 'cones_right'), CONE_YELLOW, -1),
        (('orange', 'small_orange', 'orange_small', 'orange_cone',
          'cone_orange', 'normal', 'cones_orange'), CONE_ORANGE, 0),
        (('big_orange', 'orange_big', 'big', 'large_orange', 'orange_large',
          'big_cone', 'cone_big', 'bigorange', 'cone_orange_big',
          'big_orange_cone', 'cones_orange_big', 'cones_big_orange'),
         CONE_BIG_ORANGE, 0),
        (('unknown', 'unknown_cone', 'cone_unknown', 'grey', 'gray',
          'active_noise', 'noise', 'cones_unknown'), CONE_UNKNOWN, 0)):
    for _name in _names:
        _TAG_CLASSES[_name] = (_cls, _side)
#: Tags of rows that are not cones.
START_TAGS = ('car_start', 'start', 'car')
MIDPOINT_TAGS = ('midpoint', 'midpoints', 'centre', 'center', 'centerline',
                 'centreline')
TIMING_TAGS = ('timekeeping', 'time_keeping', 'tk_device', 'timing')
#: Tags of objects that exist in the file but are not on the track
#: (eufs_sim's inactive noise cones, PacSim's invisible landmarks).
SKIPPED_TAGS = ('inactive_noise', 'invisible')


def _paired(side: str, axis: str) -> Tuple[str, ...]:
    """Return the names of a paired column (``left_x``, ``x_left``, ``lx``)."""
    return (f'{side}_{axis}', f'{axis}_{side}', f'{side}{axis}',
            f'{side[0]}{axis}', f'{side}_cone_{axis}', f'cone_{side}_{axis}')


# CSV column names (normalised) -> our field.
_COLUMNS = {
    'tag': ('tag', 'type', 'cone_type', 'color', 'colour', 'class',
            'cone_class', 'label', 'cone_color', 'cone_colour', 'kind',
            'leftorright', 'left_or_right'),
    'x': ('x', 'x_m', 'pos_x', 'position_x', 'x_pos', 'px', 'cone_x',
          'xpos'),
    'y': ('y', 'y_m', 'pos_y', 'position_y', 'y_pos', 'py', 'cone_y',
          'ypos'),
    'direction': ('direction', 'yaw', 'heading', 'theta', 'orientation',
                  'yaw_rad'),
    'left': ('left', 'is_left'),
    'right': ('right', 'is_right'),
    # one left and one right cone per row (MUR)
    'left_x': _paired('left', 'x'), 'left_y': _paired('left', 'y'),
    'right_x': _paired('right', 'x'), 'right_y': _paired('right', 'y'),
    # WGS84 degrees
    'lat': ('lat', 'latitude', 'lat_deg', 'gps_lat'),
    'lon': ('lon', 'lng', 'long', 'longitude', 'lon_deg', 'gps_lon'),
    # a cone of the finish line (Hanze: ``Finish`` True, ``coneData``
    # ``['finish']``)
    'finish': ('finish', 'is_finish', 'conedata', 'cone_data'),
    # track widths (m) right and left of a centre line (TUM's
    # ``x_m,y_m,w_tr_right_m,w_tr_left_m``)
    'w_right': ('w_tr_right_m', 'w_tr_right', 'w_right', 'w_right_m',
                'width_right', 'right_width', 'd_right', 'dist_right'),
    'w_left': ('w_tr_left_m', 'w_tr_left', 'w_left', 'w_left_m',
               'width_left', 'left_width', 'd_left', 'dist_left'),
}
#: Cone spacing (m) along each boundary of a track given as a centre line
#: with widths (the rules' largest gap is 5 m), and the largest width (m)
#: either side of it read as one.
WIDTHS_CONE_STEP = 4.0
MAX_HALF_WIDTH = 50.0
#: Names that make a row a header (besides a first cell ``tag``).
_HEADER_X = frozenset(_COLUMNS['x'] + _COLUMNS['left_x'] + _COLUMNS['lat'])
#: Names a header row's first cell can have (a row starting otherwise
#: after the first data row is data); '' is a pandas index column's.
_HEADER_FIRST = frozenset(_COLUMNS['tag'] + tuple(_HEADER_X) +
                          ('', 'id', 'cone_id', 'index'))
#: Hanze Racing's Moving_Car maps (``pp_functions/utils.py`` ``save_map``:
#: pandas ``to_csv`` with its index column): pygame screen axes, y down.
_SCREEN_HEADERS = (('', 'cone_type', 'cone_x', 'cone_y'),
                   ('', 'cone_type', 'cone_x', 'cone_y', 'prev_cone_index',
                    'next_cone_index'))
#: WGS84 semi-major axis (m) and first eccentricity squared.
WGS84_A = 6378137.0
WGS84_E2 = 6.69437999014e-3
_NUMBER = re.compile(r'^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$')
#: A number with a decimal comma (read so in ``;``/tab delimited files).
_DECIMAL_COMMA = re.compile(r'^[+-]?\d*,\d+([eE][+-]?\d+)?$')


@dataclass
class TrackFile:
    """
    The content of a track file, REP-103 in ``map`` (metres, radians).

    ``xy`` (N, 2) / ``class_id`` (N,) are the cones, ``lines`` their
    source lines, ``side`` +1 for a cone the file puts on the left
    boundary, -1 right, 0 when it does not say; ``codes`` the numeric
    colour code of each cone when the file gives numbers instead of colour
    names (``class_id`` is then unknown until
    :func:`hil_bridge.sim.track_files.read_track_file` reads the codes by
    the cones' positions); ``midpoints`` (M, 2) centre-line points in file
    order; ``timing`` timing-sensor positions in file order (not cones);
    ``closed`` the file's own closed-loop flag (None when it has none);
    ``notes`` the loader's warnings; ``axes`` ``screen`` when the format
    is known to be written in screen axes (y down, the left/right names
    the driver's: Hanze's pygame maps), which the default convention then
    applies (:func:`hil_bridge.sim.track_files.read_track_file`),
    ``convention`` the axis convention that function applied and
    ``entry_start`` the start (pose, note) at the entry of the open lane a
    start inferred mid-lane may stand in (used when the track is open);
    ``width`` the track width the file gives (m, median; 0 when none).
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
    codes: Optional[np.ndarray] = None
    convention: str = ''
    entry_start: Optional[Tuple[Pose, str]] = None
    width: float = 0.0
    axes: str = ''


class _Cones:
    """Accumulates the objects of a file while it is read."""

    def __init__(self, path: str, fmt: str) -> None:
        self.path, self.fmt = path, fmt
        self.xy: List[Tuple[float, float]] = []
        self.cls: List[int] = []
        self.lines: List[int] = []
        self.side: List[int] = []
        self.codes: List[int] = []
        self.mids: List[Tuple[float, float]] = []
        self.timing: List[Tuple[float, float]] = []
        self.notes: List[str] = []
        self.skipped: Dict[str, int] = {}
        self.start: Optional[Pose] = None
        self.closed: Optional[bool] = None
        self.axes = ''
        self.width = 0.0

    def cone(self, x: float, y: float, cls: int, line: int, side: int = 0,
             code: int = -1) -> None:
        self.xy.append((x, y))
        self.cls.append(cls)
        self.lines.append(line)
        self.side.append(side)
        self.codes.append(code)

    def skip(self, what: str) -> None:
        self.skipped[what] = self.skipped.get(what, 0) + 1

    def tagged(self, tag: str, x: float, y: float, line: int, where: str,
               yaw: float = 0.0) -> None:
        """Add an object by its tag; raise naming ``where`` when unknown."""
        key = normal_name(tag)
        if key in _TAG_CLASSES:
            cls, side = _TAG_CLASSES[key]
            self.cone(x, y, cls, line, side)
        elif key in START_TAGS:
            if self.start is not None:
                raise ValueError(f'{self.path}:{line}: field {where!r}: '
                                 f'second {tag} row')
            self.set_start(x, y, yaw, line, 'direction')
        elif key in MIDPOINT_TAGS:
            self.mids.append((x, y))
        elif key in TIMING_TAGS:
            self.timing.append((x, y))
        elif key in SKIPPED_TAGS:
            self.skip(key)
        else:
            raise ValueError(
                f'{self.path}:{line}: field {where!r}: unknown tag {tag!r} '
                '(expected a cone colour: blue/left, yellow/right, orange, '
                'big_orange, unknown; or car_start, midpoint, timekeeping)')

    def set_start(self, x: float, y: float, yaw: float, line: int,
                  where: str) -> None:
        """
        Set the start pose (m, rad), the heading wrapped to (-pi, pi].

        A heading beyond +-2 pi is not an angle a writer meant (a row
        counter in the column, as bristol's FSUK 2023 map): noted with
        the file, line and field ``where``.
        """
        wrapped = math.remainder(yaw, 2.0 * math.pi)
        if wrapped <= -math.pi:
            wrapped += 2.0 * math.pi
        if abs(yaw) > 2.0 * math.pi:
            self.notes.append(
                f'{self.path}:{line}: field {where!r}: start heading {yaw:g} '
                'rad is not an angle within +-2 pi: read as '
                f'{wrapped:.3f} rad ({math.degrees(wrapped):.1f} deg)')
        self.start = Pose(x=x, y=y, yaw=wrapped)

    def done(self) -> TrackFile:
        for what, n in sorted(self.skipped.items()):
            kind = 'objects' if what == 'non-cone' else 'landmarks'
            self.notes.append(f'{self.path}: {n} {what} {kind} skipped '
                              '(not cones on the track)')
        codes = np.array(self.codes, dtype=np.int64)
        return TrackFile(
            path=self.path, fmt=self.fmt,
            xy=np.array(self.xy, dtype=float).reshape(-1, 2),
            class_id=np.array(self.cls, dtype=np.uint8), lines=self.lines,
            side=np.array(self.side, dtype=np.int8), car_start=self.start,
            midpoints=np.array(self.mids, dtype=float).reshape(-1, 2),
            timing=np.array(self.timing, dtype=float).reshape(-1, 2),
            closed=self.closed, notes=self.notes,
            codes=codes if (codes >= 0).any() else None, axes=self.axes,
            width=self.width)


@functools.lru_cache(maxsize=4096)
def normal_name(text: str) -> str:
    """Return a tag or column name lower case, units dropped, '_' joined."""
    text = re.sub(r'\(.*?\)|\[.*?\]', '', str(text)).strip().lower()
    return re.sub(r'[\s\-]+', '_', text).strip('_')


def _number(path: str, line: int, name: str, text: Optional[str]) -> float:
    """Return a finite float or raise naming the file, line and field."""
    if text is None or str(text).strip() == '':
        raise ValueError(f'{path}:{line}: field {name!r} is missing')
    try:
        value = float(text)
    except (TypeError, ValueError):
        raise ValueError(f'{path}:{line}: field {name!r} is not a number: '
                         f'{text!r}') from None
    if not math.isfinite(value):
        raise ValueError(f'{path}:{line}: field {name!r} is not finite: '
                         f'{text!r}')
    if abs(value) > MAX_ABS:
        raise ValueError(f'{path}:{line}: field {name!r} is out of range: '
                         f'{text!r} (|value| > {MAX_ABS:g})')
    return value


def read_text(path: str) -> str:
    """Return a text file's content: UTF-8 (BOM or not), UTF-16, Latin-1."""
    if os.path.getsize(path) > MAX_BYTES:
        raise ValueError(f'{path}: larger than {MAX_BYTES >> 20} MiB: not a '
                         'track file')
    with open(path, 'rb') as stream:
        raw = stream.read()
    if raw.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        # spreadsheets' "Unicode text" export
        try:
            return raw.decode('utf-16')
        except UnicodeDecodeError:
            raise ValueError(f'{path}:1: UTF-16 byte order mark, but the '
                             'text is not UTF-16') from None
    if b'\x00' in raw[:4096]:
        raise ValueError(f'{path}:1: binary file, not a track file')
    try:
        return raw.decode('utf-8-sig')
    except UnicodeDecodeError:
        return raw.decode('latin-1')


# ------------------------------------------------------------ detection
def detect_format(path: str, text: Optional[str] = None) -> str:
    """
    Return the format of a track file from its content (and extension).

    A directory of Unreal transform dumps is ``unreal_dir``; XML with
    ``<sdf``/``<world``/``<model`` is ``sdf``; JSON is ``json`` (a
    ``.yaml`` file in flow style, ``{track: ...}``, is YAML); YAML with
    a top-level ``track`` is ``pacsim``, with ``cones_left``/``cones_right``
    ``fssim``, with ``cones`` ``conemap``; anything else is read as CSV:
    ``eufs`` with the eufs header or a ``car_start`` row, ``fsds`` with
    tagged rows and no header, else ``csv``. Raises ``ValueError`` naming
    the file when nothing fits.
    """
    if os.path.isdir(path):
        if _unreal_files(path):
            return 'unreal_dir'
        raise ValueError(f'{path}: a directory without Unreal transform '
                         'dumps (blue.txt, yellow.txt, ...): not a track')
    if text is None:
        text = read_text(path)
    head = text.lstrip()[:4096]
    ext = os.path.splitext(path)[1].lower()
    if head.startswith('<') or ext in ('.sdf', '.world', '.xml'):
        return 'sdf'
    if head.startswith(('{', '[')) and ext not in ('.csv', '.yaml', '.yml') \
            or ext == '.json':
        return 'json'
    keys = _yaml_top_keys(text)
    if not keys and head.startswith('{'):
        keys = _yaml_flow_keys(path, text)
    if keys or ext in ('.yaml', '.yml'):
        if 'track' in keys:
            return 'pacsim'
        if any(k.startswith('cones_') for k in keys) or keys & {
                'starting_pose_front_wing', 'tk_device'}:
            return 'fssim'
        if 'cones' in keys:
            return 'conemap'
        if ext in ('.yaml', '.yml'):
            raise ValueError(
                f"{path}:1: field 'track': not a PacSim (track: ...), fssim "
                '(cones_left: ...) or cone map (cones: ...) YAML file (top '
                f'level keys {sorted(keys) or "none"})')
    return _detect_csv(text)


def _yaml_flow_keys(path: str, text: str) -> set:
    """
    Return the top-level keys of a flow-style YAML mapping (``{a: 1}``).

    Raises ``ValueError`` (file, line, what) for a YAML syntax error.
    """
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise yaml_error(path, exc) from None
    return {str(k) for k in doc} if isinstance(doc, dict) else set()


def _yaml_top_keys(text: str) -> set:
    """Return the top-level ``key:`` names of a YAML-looking text."""
    keys = set()
    for raw in text.splitlines()[:20000]:
        line = raw.split('#', 1)[0].rstrip()
        if not line or line[0] in ' \t-' or line.startswith('---'):
            continue
        m = re.match(r'^([A-Za-z_][\w\-]*)\s*:(\s|$)', line)
        if m is None:
            return set()
        keys.add(m.group(1))
    return keys


def _detect_csv(text: str) -> str:
    """
    Return ``eufs``, ``fsds`` or ``csv`` for a CSV text.

    ``eufs``: the eufs header or a ``car_start`` row; ``fsds``: no header
    and only FSDS's tags (blue, yellow, orange, big_orange); else ``csv``.
    """
    rows = [r.strip() for r in text.splitlines()]
    rows = [r for r in rows if r and not r.startswith(('#', '//'))]
    if not rows:
        return 'eufs'
    delim = _delimiter(rows[0])
    firsts = {normal_name(_split(r, delim)[0]) for r in rows[:100000]}
    if normal_name(_split(rows[0], delim)[0]) == 'tag' or 'car_start' in firsts:
        return 'eufs'
    if firsts and firsts <= {'blue', 'yellow', 'orange', 'big_orange'}:
        return 'fsds'
    return 'csv'


# ------------------------------------------------------------------- CSV
def _delimiter(line: str) -> Optional[str]:
    """Return the delimiter of a CSV line: ',', ';', tab or None (spaces)."""
    for d in (',', ';', '\t'):
        if d in line:
            return d
    return None


def _split(line: str, delim: Optional[str]) -> List[str]:
    """
    Split a CSV line (quotes stripped; no quoted delimiters in tracks).

    With ``;`` or tab delimiters a number with a decimal comma (``-6,5``,
    as spreadsheets write in most of Europe) is given a decimal point.
    """
    cells = line.split(delim) if delim else line.split()
    cells = [c.strip().strip('"\'').strip() for c in cells]
    if delim in (';', '\t'):
        cells = [c.replace(',', '.') if _DECIMAL_COMMA.match(c) else c
                 for c in cells]
    return cells


def _header_columns(cells: List[str], first: bool) -> Optional[Dict[str, int]]:
    """
    Return our field -> column of a header row, or None for a data row.

    A header starts with ``tag`` or names an x column (or a paired
    ``left_x``, or ``lat``); the first row is also a header when none of
    its cells is a number.
    """
    names = [normal_name(c) for c in cells]
    numbers = [bool(_NUMBER.match(c)) for c in cells]
    if not (names and names[0] == 'tag' or any(n in _HEADER_X for n in names)
            and not all(numbers) or first and not any(numbers)):
        return None
    col: Dict[str, int] = {}
    for key, aliases in _COLUMNS.items():
        for i, n in enumerate(names):
            if n in aliases and key not in col:
                col[key] = i
    return col


def read_csv(path: str, text: str, fmt: str) -> TrackFile:
    """
    Read any cone CSV: eufs_sim, FSDS, team variants, plain x,y rows.

    Comments (``#``, ``//``), blank lines, a BOM, CRLF, trailing blanks,
    ``;``/tab/space delimiters (decimal commas with ``;``/tab, as European
    spreadsheets write; UTF-16 as their "Unicode text" export) and extra
    columns are accepted; a repeated
    header is skipped; columns are found by name (``tag``/``cone_type``/
    ``color``, ``x``/``X``, ``y``, ``direction``/``yaw``, ``left``/
    ``right`` flags); rows of numbers only are cones of unknown colour;
    unparsable values in columns we do not use are noted, not fatal.
    Paired ``left_x,left_y,right_x,right_y`` columns give a left (blue)
    and a right (yellow) cone per row, empty cells none; ``lat``/``lon``
    (WGS84 degrees) are converted to metres east and north of the first
    row (:func:`metres_per_degree`); cones flagged ``finish`` (one left,
    one right) mark the start/finish line; Hanze Racing's pygame map
    header sets ``axes`` to ``screen``.
    """
    out = _Cones(path, fmt)
    col: Optional[Dict[str, int]] = None
    mode = 'xy'
    header_line = 0
    delim: Optional[str] = None
    ignored_bad = 0
    first_bad = ''
    geo: Optional[Tuple[str, str, float, float, float, float]] = None
    finish: List[int] = []
    centre: List[Tuple[float, float, float, float, int]] = []
    lines = text.splitlines()
    for line, raw in enumerate(lines, start=1):
        stripped = raw.strip()
        if stripped.startswith('#') and col is None:
            # TUM's centre-line files name their columns in a comment
            named = _delimiter(stripped)
            cells = _split(stripped.lstrip('#').strip(), named)
            hdr = _header_columns(cells, True)
            if hdr is not None and 'w_right' in hdr and 'w_left' in hdr:
                mode = _columns_mode(path, line, cells, hdr)
                col, header_line, delim = hdr, line, named
            continue
        if not stripped or stripped.startswith(('#', '//')):
            continue
        if delim is None:
            delim = _delimiter(stripped)
        cells = _split(stripped, delim)
        if all(c == '' for c in cells):
            continue
        hdr = _header_columns(cells, col is None) if col is None or \
            normal_name(cells[0]) in _HEADER_FIRST else None
        if hdr is not None:
            if col is not None and header_line:
                out.notes.append(f'{path}:{line}: repeated header line '
                                 'skipped')
                continue
            mode = _columns_mode(path, line, cells, hdr)
            if tuple(normal_name(c) for c in cells) in _SCREEN_HEADERS:
                out.axes = 'screen'
                out.notes.append(
                    f'{path}:{line}: header {",".join(cells)!r}: Hanze '
                    "Racing's pygame map, screen axes (y down): read with "
                    'convention screen (y negated, LEFT/RIGHT kept) unless '
                    'another is given')
            col, header_line = hdr, line
            continue
        if col is None:
            # no header: eufs/FSDS order for tagged rows, x,y for numbers
            col = {'tag': 0, 'x': 1, 'y': 2, 'direction': 3} \
                if not _NUMBER.match(cells[0]) else {'x': 0, 'y': 1}

        def get(name: str) -> Optional[str]:
            i = col.get(name) if col is not None else None
            return cells[i] if i is not None and i < len(cells) else None
        used = {col.get(k) for k in ('tag', 'x', 'y', 'left', 'right',
                                     'direction', 'left_x', 'left_y',
                                     'right_x', 'right_y', 'lat', 'lon',
                                     'finish')}
        for i, c in enumerate(cells):
            if i not in used and c and not _NUMBER.match(c) and \
                    normal_name(c) not in ('nan', 'true', 'false', 'none',
                                           'null'):
                ignored_bad += 1
                first_bad = first_bad or f'line {line}: {c!r}'
        if mode == 'paired':
            for sgn, kx, ky, cls in ((1, 'left_x', 'left_y', CONE_BLUE),
                                     (-1, 'right_x', 'right_y', CONE_YELLOW)):
                if (get(kx) or '') != '' or (get(ky) or '') != '':
                    out.cone(_number(path, line, kx, get(kx)),
                             _number(path, line, ky, get(ky)), cls, line, sgn)
            continue
        if mode == 'widths':
            x = _number(path, line, 'x', get('x'))
            y = _number(path, line, 'y', get('y'))
            wr = _number(path, line, 'w_right', get('w_right'))
            wl = _number(path, line, 'w_left', get('w_left'))
            for key, w in (('w_right', wr), ('w_left', wl)):
                if not 0.0 < w <= MAX_HALF_WIDTH:
                    raise ValueError(
                        f'{path}:{line}: field {key!r}: track width {w:g} m '
                        f'is not within (0, {MAX_HALF_WIDTH:g}] m')
            centre.append((x, y, wr, wl, line))
            continue
        if mode == 'geo':
            lat, lon = _lat_lon(path, line, get('lat'), get('lon'))
            if geo is None:
                geo = (get('lat') or '', get('lon') or '', lat, lon,
                       *metres_per_degree(lat))
            x = ((lon - geo[3] + 180.0) % 360.0 - 180.0) * geo[5]
            y = (lat - geo[2]) * geo[4]
        else:
            x = _number(path, line, 'x', get('x'))
            y = _number(path, line, 'y', get('y'))
        count = len(out.xy)
        if 'tag' not in col:
            side = _flag_side(get('left'), get('right'))
            out.cone(x, y, (CONE_BLUE if side > 0 else CONE_YELLOW) if side
                     else CONE_UNKNOWN, line, side)
        else:
            tag = get('tag') or ''
            if tag == '':
                raise ValueError(f"{path}:{line}: field 'tag' is missing")
            key = normal_name(tag)
            yaw = 0.0
            if key in START_TAGS and get('direction') not in (None, ''):
                yaw = _number(path, line, 'direction', get('direction'))
            if re.match(r'^-?\d+$', tag):
                out.cone(x, y, CONE_UNKNOWN, line, 0, code=int(tag))
            else:
                out.tagged(tag, x, y, line, 'tag', yaw)
                side = _flag_side(get('left'), get('right'))
                if side and len(out.xy) > count:
                    out.side[-1] = side
        if len(out.xy) > count and _is_finish(get('finish')):
            finish.append(count)
    if col is None:
        raise ValueError(f'{path}:1: empty file (expected rows '
                         f'{",".join(CSV_HEADER)})')
    if ignored_bad:
        out.notes.append(f'{path}: {ignored_bad} unused values that are not '
                         f'numbers ignored (first {first_bad})')
    if geo is not None:
        out.notes.append(f'{path}: WGS84 latitude/longitude converted to '
                         'metres east and north of the first row '
                         f'({geo[0]}, {geo[1]})')
    if mode == 'widths':
        _cones_from_widths(out, centre)
    elif 'tag' not in col and not any(out.side):
        out.notes.append(f'{path}: no colour column: {len(out.xy)} cones of '
                         'unknown colour')
    if finish:
        _finish_line(out, finish)
    return out.done()


def _columns_mode(path: str, line: int, cells: List[str],
                  hdr: Dict[str, int]) -> str:
    """
    Return how the rows under a header give positions, or raise.

    ``xy`` (an x and a y column), ``paired`` (``left_x``, ``left_y``,
    ``right_x``, ``right_y``: two cones a row), ``geo`` (``lat``,
    ``lon``) or ``widths`` (x, y and the track widths right and left: a
    centre line); a header with part of a set names the missing column.
    """
    if 'x' in hdr and 'y' in hdr:
        if 'w_right' in hdr or 'w_left' in hdr:
            for key in ('w_right', 'w_left'):
                if key not in hdr:
                    raise ValueError(
                        f'{path}:{line}: field {key!r}: header '
                        f'{",".join(cells)!r} has no {key} column (expected '
                        'e.g. x_m,y_m,w_tr_right_m,w_tr_left_m)')
            return 'widths'
        return 'xy'
    paired = ('left_x', 'left_y', 'right_x', 'right_y')
    if 'x' not in hdr and 'y' not in hdr and any(k in hdr for k in paired):
        mode, want = 'paired', paired
    elif 'x' not in hdr and 'y' not in hdr and ('lat' in hdr or 'lon' in hdr):
        mode, want = 'geo', ('lat', 'lon')
    else:
        mode, want = 'xy', ('x', 'y')
    miss = [k for k in want if k not in hdr]
    if not miss:
        return mode
    example = ','.join(want) if mode != 'xy' else ','.join(CSV_HEADER)
    raise ValueError(f'{path}:{line}: field {miss[0]!r}: header '
                     f'{",".join(cells)!r} has no {miss[0]} column (expected '
                     f'e.g. {example})')


def _cones_from_widths(out: '_Cones',
                       rows: List[Tuple[float, float, float, float, int]]
                       ) -> None:
    """
    Put cones on the boundaries of a centre line with track widths.

    ``rows``: (x, y, width right, width left, line) in file order (m).
    A loop when the last point is within three median steps of the first
    (TUM's files do not repeat it). Cones at most ``WIDTHS_CONE_STEP``
    apart along each boundary (linear between the rows), blue on the left
    and yellow on the right; the rows are the midpoints and the car starts
    at the first one, facing along the line. In place, with a note.
    """
    path = out.path
    if len(rows) < 3:
        raise ValueError(f'{path}: {len(rows)} centre-line rows: a track '
                         'needs at least 3')
    arr = np.array([r[:4] for r in rows], dtype=float)
    pts, widths = arr[:, :2], arr[:, 2:]
    step = np.hypot(*np.diff(pts, axis=0).T)
    if not (step > 0.0).all():
        i = int(np.argmin(step))
        raise ValueError(f'{path}:{rows[i + 1][4]}: centre-line point '
                         f'repeats the one of line {rows[i][4]}')
    closed = len(rows) > 4 and np.hypot(*(pts[-1] - pts[0])) <= \
        3.0 * float(np.median(step))
    ring = np.vstack([arr, arr[:1]]) if closed else arr
    s = arc_length(pts, closed)
    # the boundaries, densely, then cones along each one's own length (the
    # outside of a turn is longer than the centre line)
    at = np.linspace(0.0, s[-1], max(int(s[-1] / 0.5), 4),
                     endpoint=not closed)
    c = np.column_stack([np.interp(at, s, ring[:, k]) for k in (0, 1)])
    w = np.column_stack([np.interp(at, s, ring[:, k]) for k in (2, 3)])
    tan = tangents(c, closed)
    normal = np.column_stack([-tan[:, 1], tan[:, 0]])
    row_of = np.clip(np.searchsorted(s[:len(rows)], at, side='right') - 1,
                     0, len(rows) - 1)
    count = 0
    for sgn, cls, k in ((1, CONE_BLUE, 1), (-1, CONE_YELLOW, 0)):
        edge = c + sgn * normal * w[:, k:k + 1]
        loop = np.vstack([edge, edge[:1]]) if closed else edge
        se = arc_length(edge, closed)
        n = max(2, int(math.ceil(se[-1] / WIDTHS_CONE_STEP)) +
                (0 if closed else 1))
        sc = np.linspace(0.0, se[-1], n, endpoint=not closed)
        idx = np.clip(np.searchsorted(se, sc, side='right') - 1, 0,
                      len(edge) - 1)
        for (x, y), i in zip(np.column_stack(
                [np.interp(sc, se, loop[:, j]) for j in (0, 1)]), idx):
            out.cone(float(x), float(y), cls, rows[int(row_of[i])][4], sgn)
        count += n
    out.mids = [(float(x), float(y)) for x, y in pts]
    out.closed = bool(closed)
    out.width = float(np.median(widths.sum(axis=1)))
    if out.start is None:
        out.set_start(float(pts[0, 0]), float(pts[0, 1]),
                      math.atan2(tan[0, 1], tan[0, 0]), rows[0][4],
                      'x')
    out.notes.append(
        f'{path}: a centre line with track widths ({len(rows)} points, '
        f'{s[-1]:.1f} m, {"closed" if closed else "open"}): {count} cones '
        f'put on its boundaries, at most {WIDTHS_CONE_STEP:g} m apart along '
        'each, blue left and yellow right; the car at its first point')


def metres_per_degree(lat: float) -> Tuple[float, float]:
    """
    Return (north, east): metres per degree of latitude and longitude.

    At latitude ``lat`` (degrees) on the WGS84 ellipsoid: the meridian and
    the prime-vertical radius of curvature (the local tangent plane, east
    and north; within millimetres over a track's few hundred metres).
    """
    phi = math.radians(lat)
    w = 1.0 - WGS84_E2 * math.sin(phi) ** 2
    north = WGS84_A * (1.0 - WGS84_E2) / w ** 1.5
    east = WGS84_A / math.sqrt(w) * math.cos(phi)
    return math.radians(north), math.radians(east)


def _lat_lon(path: str, line: int, lat_text: Optional[str],
             lon_text: Optional[str]) -> Tuple[float, float]:
    """Return (lat, lon) in degrees or raise naming the file, line, field."""
    lat = _number(path, line, 'lat', lat_text)
    lon = _number(path, line, 'lon', lon_text)
    if abs(lat) > 90.0:
        raise ValueError(f"{path}:{line}: field 'lat': {lat_text} is not a "
                         'latitude in degrees (-90 to 90)')
    if abs(lon) > 180.0:
        raise ValueError(f"{path}:{line}: field 'lon': {lon_text} is not a "
                         'longitude in degrees (-180 to 180)')
    return lat, lon


def _is_finish(value: Optional[str]) -> bool:
    """Return True for a finish flag (``True``, ``1``, ``['finish']``)."""
    return value is not None and (
        'finish' in value.lower() or
        normal_name(value) in ('1', '1.0', 'true', 'yes'))


def _finish_line(out: _Cones, finish: List[int]) -> None:
    """Make one left and one right finish cone the start/finish line."""
    sides = {out.side[i] or {CONE_BLUE: 1, CONE_YELLOW: -1}.get(out.cls[i], 0)
             for i in finish}
    where = ', '.join(str(out.lines[i]) for i in finish[:4])
    if len(finish) == 2 and sides == {1, -1}:
        out.timing += [out.xy[i] for i in finish]
        out.notes.append(f'{out.path}: 2 cones flagged finish (lines '
                         f'{where}): the start/finish line between them')
    else:
        out.notes.append(f'{out.path}: {len(finish)} cones flagged finish '
                         f'(lines {where}): not used (a finish line is one '
                         'left and one right cone)')


def _flag_side(left: Optional[str], right: Optional[str]) -> int:
    """Return +1/-1 from ``left``/``right`` flag columns (1/true), else 0."""
    def on(v: Optional[str]) -> bool:
        return v is not None and normal_name(v) in ('1', '1.0', 'true', 'yes')
    return 1 if on(left) and not on(right) else -1 if on(right) and \
        not on(left) else 0


def save_csv(path: str, start: Pose, rows: Iterable[Tuple[str, float, float]]
             ) -> None:
    """Write our eufs-style CSV: header, ``car_start``, one row per cone."""
    with open(path, 'w', newline='', encoding='utf-8') as stream:
        stream.write(','.join(CSV_HEADER) + '\n')
        stream.write(f'car_start,{start.x!r},{start.y!r},{start.yaw!r},'
                     '0.0,0.0,0.0\n')
        for tag, x, y in rows:
            stream.write(f'{tag},{float(x)!r},{float(y)!r},0.0,0.0,0.0,'
                         '0.0\n')


# ------------------------------------------------------------------ YAML
class _Yaml:
    """A composed YAML document with line numbers for error messages."""

    def __init__(self, path: str, text: str, notes: List[str]) -> None:
        self.path = path
        try:
            docs = [d for d in yaml.compose_all(text, Loader=yaml.SafeLoader)
                    if d is not None]
        except yaml.YAMLError as exc:
            raise yaml_error(path, exc) from None
        if not docs:
            raise ValueError(f'{path}:1: empty file')
        if len(docs) > 1:
            notes.append(f'{path}:{docs[1].start_mark.line + 1}: '
                         f'{len(docs) - 1} more YAML document(s) after the '
                         'first ignored')
        self.root = docs[0]

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
        if abs(value) > MAX_ABS:
            raise self.error(node, where, f'out of range: {node.value!r} '
                             f'(|value| > {MAX_ABS:g})')
        return value

    def vector(self, node: Any, where: str, lo: int, hi: int) -> List[float]:
        """Return a list of ``lo``..``hi`` finite numbers."""
        items = self.sequence(node, where)
        if not lo <= len(items) <= hi:
            raise self.error(node, where, f'expected {lo}' +
                             (f'-{hi}' if hi > lo else '') +
                             f' numbers, got {len(items)}')
        return [self.number(v, f'{where}[{i}]') for i, v in enumerate(items)]

    def point(self, node: Any, where: str) -> List[float]:
        """Return [x, y] of ``[x, y(, z)]`` or ``{x: , y: (, z: )}``."""
        if isinstance(node, yaml.MappingNode):
            m = self.mapping(node, where)
            for key in ('x', 'y'):
                if key not in m:
                    raise self.error(node, f'{where}.{key}', 'missing')
            return [self.number(m['x'], f'{where}.x'),
                    self.number(m['y'], f'{where}.y')]
        return self.vector(node, where, 2, 3)[:2]

    def text(self, node: Any, where: str) -> str:
        """Return a string scalar."""
        if not isinstance(node, yaml.ScalarNode):
            raise self.error(node, where, 'expected a string')
        return str(node.value)


def _open_yaml(path: str, text: str, fmt: str, key: str, what: str
               ) -> Tuple[_Cones, _Yaml, Dict[str, Any]]:
    """Return the accumulator, document and top mapping; ``key`` required."""
    out = _Cones(path, fmt)
    doc = _Yaml(path, text, out.notes)
    top = doc.mapping(doc.root, '<top>')
    if key not in top:
        raise doc.error(doc.root, key, f'missing ({what})')
    return out, doc, top


def read_pacsim(path: str, text: str) -> TrackFile:
    """
    Read a PacSim track YAML (``time_keeping`` entries are not cones).

    E-Team's fork adds ``centerline_raw``: centre-line points
    (``{position: [x, y, z]}``) in order, read as midpoints.
    """
    out, doc, top = _open_yaml(path, text, 'pacsim', 'track', 'PacSim files '
                               'have a top-level track mapping')
    tr = doc.mapping(top['track'], 'track')
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
            x, y = doc.vector(entry['position'], f'{where}.position', 2, 3)[:2]
            name = doc.text(entry['class'], f'{where}.class') \
                if 'class' in entry else 'unknown'
            line = item.start_mark.line + 1
            if key == 'time_keeping' or normal_name(name) in TIMING_TAGS:
                out.timing.append((x, y))
                continue
            try:
                out.tagged(name, x, y, line, f'{where}.class')
            except ValueError:
                raise doc.error(entry.get('class', item), f'{where}.class',
                                f'unknown class {name!r} (expected blue, '
                                'yellow, orange, small-orange, big-orange, '
                                'unknown, timekeeping or invisible)'
                                ) from None
            if out.lines and out.lines[-1] == line and sgn:
                out.side[-1] = sgn
    for i, item in enumerate(doc.sequence(tr.get('centerline_raw'),
                                          'track.centerline_raw')
                             if 'centerline_raw' in tr else []):
        where = f'track.centerline_raw[{i}]'
        entry = doc.mapping(item, where)
        if 'position' not in entry:
            raise doc.error(item, f'{where}.position', 'missing')
        out.mids.append(tuple(doc.vector(entry['position'],
                                         f'{where}.position', 2, 3)[:2]))
    if 'start' in tr:
        st = doc.mapping(tr['start'], 'track.start')
        pos = doc.vector(st['position'], 'track.start.position', 2, 3) \
            if 'position' in st else [0.0, 0.0]
        ori = doc.vector(st['orientation'], 'track.start.orientation', 3, 3) \
            if 'orientation' in st else [0.0, 0.0, 0.0]
        node = st.get('orientation', tr['start'])
        out.set_start(pos[0], pos[1], ori[2], node.start_mark.line + 1,
                      'track.start.orientation')
    if 'lanesFirstWithLastConnected' in tr:
        node = tr['lanesFirstWithLastConnected']
        value = doc.text(node, 'track.lanesFirstWithLastConnected').lower()
        if value not in ('true', 'false'):
            raise doc.error(node, 'track.lanesFirstWithLastConnected',
                            f'expected true or false, got {value!r}')
        out.closed = value == 'true'
    return out.done()


#: fssim's start pose is the front wing; our car_start is the rear axle,
#: this far behind it (fs_car: length 2.9 m - rear overhang 0.6 m).
FRONT_WING_OFFSET = 2.3


def read_fssim(path: str, text: str) -> TrackFile:
    """Read an AMZ fssim track YAML (start pose at the front wing)."""
    out = _Cones(path, 'fssim')
    doc = _Yaml(path, text, out.notes)
    top = doc.mapping(doc.root, '<top>')
    for key in ('cones_left', 'cones_right'):
        if key not in top:
            raise doc.error(doc.root, key, 'missing')
    for key in top:
        if not key.startswith('cones_') or normal_name(key) not in _TAG_CLASSES:
            continue
        cls, sgn = _TAG_CLASSES[normal_name(key)]
        for i, item in enumerate(doc.sequence(top[key], key)):
            x, y = doc.point(item, f'{key}[{i}]')
            out.cone(x, y, cls, item.start_mark.line + 1, sgn)
    for key in ('tk_device', 'tk_device_start', 'tk_device_end'):
        if key in top:
            for i, item in enumerate(doc.sequence(top[key], key)):
                out.timing.append(tuple(doc.point(item, f'{key}[{i}]')))
    if 'starting_pose_front_wing' in top:
        node = top['starting_pose_front_wing']
        x, y, yaw = doc.vector(node, 'starting_pose_front_wing', 3, 3)
        out.set_start(x - FRONT_WING_OFFSET * math.cos(yaw),
                      y - FRONT_WING_OFFSET * math.sin(yaw), yaw,
                      node.start_mark.line + 1, 'starting_pose_front_wing')
    return out.done()


def read_conemap(path: str, text: str) -> TrackFile:
    """
    Read a cone-array message dumped as YAML (``rostopic echo`` and alike).

    ``cones: [{location|position|point: {x, y, z} or [x, y, z],
    color|colour|type|class: name or code}]``; documents after the first
    (``---``) are ignored. Numeric codes are kept in ``codes``.
    """
    out, doc, top = _open_yaml(path, text, 'conemap', 'cones', 'a cone map '
                               'has a top-level cones list')
    for i, item in enumerate(doc.sequence(top['cones'], 'cones')):
        where = f'cones[{i}]'
        entry = doc.mapping(item, where)
        pos_key = next((k for k in ('location', 'position', 'point', 'pos')
                        if k in entry), None)
        if pos_key is None and 'x' in entry:
            x, y = doc.point(item, where)
        elif pos_key is None:
            raise doc.error(item, f'{where}.location', 'missing')
        else:
            x, y = doc.point(entry[pos_key], f'{where}.{pos_key}')
        line = item.start_mark.line + 1
        col_key = next((k for k in ('color', 'colour', 'type', 'class',
                                    'cone_type') if k in entry), None)
        if col_key is None:
            out.cone(x, y, CONE_UNKNOWN, line)
            continue
        value = doc.text(entry[col_key], f'{where}.{col_key}')
        if re.match(r'^-?\d+$', value.strip()):
            out.cone(x, y, CONE_UNKNOWN, line, code=int(value))
        else:
            out.tagged(value, x, y, line, f'{where}.{col_key}')
    if 'start' in top or 'car_start' in top:
        key = 'start' if 'start' in top else 'car_start'
        x, y = doc.point(top[key], key)
        out.start = Pose(x=x, y=y)
    return out.done()


# ------------------------------------------------------------------- SDF
def _parse_xml(path: str, text: str) -> ET.Element:
    """Parse XML into an element tree; each element's line is in ``_line``."""
    builder = ET.TreeBuilder()
    parser = expat.ParserCreate()

    def start(tag: str, attrs: Dict[str, str]) -> None:
        attrs = dict(attrs)
        attrs['_line'] = str(parser.CurrentLineNumber)
        builder.start(tag, attrs)
    parser.StartElementHandler = start
    parser.EndElementHandler = builder.end
    parser.CharacterDataHandler = builder.data
    try:
        parser.Parse(text, True)
        return builder.close()
    except (expat.ExpatError, AssertionError, IndexError) as exc:
        line = getattr(exc, 'lineno', 1)
        what = expat.ErrorString(exc.code) if hasattr(exc, 'code') else \
            'unbalanced elements'
        raise ValueError(f'{path}:{line}: not valid XML: {what}') from None


def _sdf_pose(path: str, elem: Optional[ET.Element]
              ) -> Tuple[float, float, float]:
    """Return (x, y, yaw) of an SDF ``<pose>`` element (identity if None)."""
    if elem is None or not (elem.text or '').strip():
        return 0.0, 0.0, 0.0
    parts = (elem.text or '').split()
    line = int(elem.get('_line', '1'))
    if len(parts) not in (3, 6, 7):
        raise ValueError(f"{path}:{line}: field 'pose': expected 6 numbers "
                         f'(x y z roll pitch yaw), got {len(parts)}')
    vals = [_number(path, line, 'pose', p) for p in parts]
    if len(vals) == 7:      # x y z qx qy qz qw
        yaw = quaternion_yaw(SimpleNamespace(**dict(zip('xyzw', vals[3:]))))
        if not math.isfinite(yaw):
            raise ValueError(f"{path}:{line}: field 'pose': quaternion "
                             f'{vals[3:]} has no orientation (zero length)')
    else:
        yaw = vals[-1] if len(vals) == 6 else 0.0
    return vals[0], vals[1], yaw


def _sdf_kind(text: str) -> Tuple[Optional[int], int, bool]:
    """Return (class or None, side, timing) of an SDF object's uri/name."""
    s = text.lower()
    side = 1 if 'left' in s else -1 if 'right' in s else 0
    if any(k in s for k in ('time_keeping', 'timekeeping', 'tk_device')):
        return None, 0, True
    if 'orange' in s and 'big' in s or 'cone_big' in s or 'big_cone' in s:
        return CONE_BIG_ORANGE, side, False
    if 'cone' not in s and not any(c in s for c in ('blue', 'yellow')):
        return None, 0, False
    for word, cls in (('orange', CONE_ORANGE), ('blue', CONE_BLUE),
                      ('yellow', CONE_YELLOW)):
        if word in s:
            return cls, side, False
    return CONE_UNKNOWN, side, False


def read_sdf(path: str, text: str) -> TrackFile:
    """
    Read cones from a Gazebo SDF model or world.

    Every ``<include>`` (``<uri>`` and ``<name>``) or ``<link>`` (its mesh
    ``<uri>``) whose name says cone or a cone colour is a cone at its
    ``<pose>`` (composed with the enclosing models' poses);
    ``time_keeping`` objects are timing sensors; ``left``/``right`` in a
    name (fssim) gives the side. Other objects (car, barrels, walls,
    ground) are skipped; ``<state>`` (a saved world's copy) is ignored.
    """
    out = _Cones(path, 'sdf')
    root = _parse_xml(path, text)
    includes: List[str] = []

    def walk(elem: ET.Element, frame: Tuple[float, float, float]) -> None:
        for child in elem:
            tag = child.tag
            if tag in ('state', 'gui', 'light', 'physics', 'scene', 'plugin',
                       'sensor', 'joint', 'spherical_coordinates'):
                continue
            if tag in ('include', 'link'):
                uri = child.findtext('uri') if tag == 'include' else \
                    (child.findtext('.//mesh/uri') or child.findtext('.//uri'))
                name = child.findtext('name') if tag == 'include' else \
                    child.get('name', '')
                what = f'{uri or ""} {name or ""}'
                cls, side, timing = _sdf_kind(what)
                x, y, _yaw = _compose(frame, _sdf_pose(path,
                                                       child.find('pose')))
                line = int(child.get('_line', '1'))
                if timing:
                    out.timing.append((x, y))
                elif cls is not None:
                    out.cone(x, y, cls, line, side)
                elif tag == 'include' and uri and 'ground' not in uri:
                    includes.append(uri.strip())
                    out.skip('non-cone')
                else:
                    out.skip('non-cone')
                continue
            if tag == 'model':
                walk(child, _compose(frame, _sdf_pose(path,
                                                      child.find('pose'))))
                continue
            walk(child, frame)
    walk(root, (0.0, 0.0, 0.0))
    if not out.xy and includes:
        raise ValueError(f"{path}:1: field 'include': no cones here; the "
                         f'file includes {", ".join(includes[:3])}: load '
                         "that model's model.sdf")
    return out.done()


def _compose(a: Tuple[float, float, float], b: Tuple[float, float, float]
             ) -> Tuple[float, float, float]:
    """Return the 2D pose ``b`` (in frame ``a``) in ``a``'s parent frame."""
    c, s = math.cos(a[2]), math.sin(a[2])
    return (a[0] + c * b[0] - s * b[1], a[1] + s * b[0] + c * b[1],
            a[2] + b[2])


# ------------------------------------------------------------------ JSON
_JSON_LISTS = {'blue_cones': 'blue', 'yellow_cones': 'yellow',
               'orange_cones': 'orange', 'big_cones': 'big_orange',
               'big_orange_cones': 'big_orange', 'orange_big_cones':
               'big_orange', 'unknown_cones': 'unknown', 'left_cones': 'left',
               'right_cones': 'right', 'cones_left': 'left', 'cones_right':
               'right', 'cones_orange': 'orange', 'cones_orange_big':
               'big_orange'}


class _JsonLines:
    """
    JSON parsed with the line of every list item and object value.

    The standard library's pure-Python scanner with its array and object
    parsers wrapped: each records where its items start, keyed by the id
    of the list or dict it returns (kept alive in ``data``).
    """

    def __init__(self, path: str, text: str) -> None:
        self._starts: Dict[int, Dict[Any, int]] = {}
        self._newlines = [m.start() for m in re.finditer('\n', text)]
        dec = json.JSONDecoder()
        dec.parse_array = self._array
        dec.parse_object = self._object
        dec.scan_once = json.scanner.py_make_scanner(dec)
        try:
            self.data = dec.decode(text)
        except json.JSONDecodeError as exc:
            raise ValueError(f'{path}:{exc.lineno}: not valid JSON: '
                             f'{exc.msg}') from None
        except RecursionError:
            raise ValueError(f'{path}:1: not valid JSON: nested too deeply'
                             ) from None

    def _array(self, s_and_end: Tuple[str, int], scan_once: Any) -> Any:
        seen: List[int] = []

        def scan(s: str, idx: int) -> Any:
            seen.append(idx)
            return scan_once(s, idx)
        values, end = json.decoder.JSONArray(s_and_end, scan)
        self._starts[id(values)] = dict(enumerate(seen))
        return values, end

    def _object(self, s_and_end: Tuple[str, int], strict: bool, scan_once: Any,
                object_hook: Any, object_pairs_hook: Any, memo: Any = None) -> Any:
        seen: List[int] = []
        keys: List[str] = []

        def scan(s: str, idx: int) -> Any:
            seen.append(idx)
            return scan_once(s, idx)

        def pairs(items: List[Tuple[str, Any]]) -> Dict[str, Any]:
            keys.extend(k for k, _ in items)
            return dict(items)
        obj, end = json.decoder.JSONObject(s_and_end, strict, scan, None, pairs,
                                           memo)
        self._starts[id(obj)] = dict(zip(keys, seen))
        return obj, end

    def line(self, container: Any, key: Any, default: int = 1) -> int:
        """Return the 1-based line of ``container[key]`` (``default`` if unknown)."""
        at = self._starts.get(id(container), {}).get(key)
        return default if at is None else bisect.bisect_left(self._newlines, at) + 1


def read_json(path: str, text: str) -> TrackFile:
    """
    Read a JSON cone layout.

    ``{"blue_cones": [{"x":, "y":} or [x, y], ...], "yellow_cones", ...,
    "cars": [{"pos": {x, y}, "orientation": yaw}]}``, columns ``{"x": [...],
    "y": [...], "color": [...]}`` or ``{"cones": [{"x", "y", "color"}]}``.
    The start (``cars[0]``, ``car_start`` or ``start``) takes its yaw (rad)
    from ``orientation``/``yaw`` beside the position or from a
    ``rotation``/``orientation`` object (``{"yaw"}``, a quaternion or
    ``[roll, pitch, yaw]``); ``centreline``/``centerline`` lists are
    centre-line points in order, ``loop`` the closed flag. FSAI-Sim's UMDF
    (``start`` with a ``centreline``) merges big and small orange cones in
    ``orange_cones``: those across the start pose are the start gate
    (:func:`_umdf_start_gate`). Errors name the line of the value at fault.
    """
    out = _Cones(path, 'json')
    doc = _JsonLines(path, text)
    data = doc.data

    def num(v: Any, where: str, line: int) -> float:
        if isinstance(v, bool) or not isinstance(v, (int, float)) or \
                not math.isfinite(v) or abs(v) > MAX_ABS:
            raise ValueError(f'{path}:{line}: field {where!r}: '
                             f'expected a finite number within '
                             f'{MAX_ABS:g}, got {v!r}')
        return float(v)

    def xy_of(item: Any, where: str, line: int, keyed: bool = False
              ) -> Tuple[float, float]:
        if isinstance(item, dict):
            key = 'pos' if 'pos' in item else 'position' if 'position' in item else None
            if key is not None:
                line = doc.line(item, key, line)
                where = f'{where}.{key}' if keyed else where
            p = item if key is None else item[key]
            if isinstance(p, dict):
                return (num(p.get('x'), f'{where}.x', doc.line(p, 'x', line)),
                        num(p.get('y'), f'{where}.y', doc.line(p, 'y', line)))
            item = p
        if isinstance(item, (list, tuple)) and 2 <= len(item) <= 3:
            return (num(item[0], f'{where}[0]', doc.line(item, 0, line)),
                    num(item[1], f'{where}[1]', doc.line(item, 1, line)))
        raise ValueError(f'{path}:{line}: field {where!r}: expected '
                         f'[x, y] or {{"x": , "y": }}, got {item!r}'[:200])
    if not isinstance(data, dict):
        if isinstance(data, list):
            data = {'cones': data}
        else:
            raise ValueError(f"{path}:1: field '<top>': expected an object")

    def yaw_of(item: Dict[str, Any], where: str, line: int) -> float:
        for key in ('rotation', 'orientation'):
            rot = item.get(key)
            at = doc.line(item, key, line)
            if isinstance(rot, dict) and 'yaw' in rot:
                return num(rot['yaw'], f'{where}.{key}.yaw',
                           doc.line(rot, 'yaw', at))
            if isinstance(rot, dict) and set('xyzw') <= set(rot):
                yaw = quaternion_yaw(SimpleNamespace(**{
                    k: num(rot[k], f'{where}.{key}.{k}', doc.line(rot, k, at))
                    for k in 'xyzw'}))
                if not math.isfinite(yaw):
                    raise ValueError(
                        f'{path}:{at}: field {where + "." + key!r}: '
                        'quaternion of zero length, no orientation')
                return yaw
            if isinstance(rot, list) and len(rot) == 3:
                return num(rot[2], f'{where}.{key}[2]', doc.line(rot, 2, at))
            if isinstance(rot, (dict, list)):
                raise ValueError(
                    f'{path}:{at}: field {where + "." + key!r}: expected '
                    '{"yaw": rad}, a quaternion {x, y, z, w} or [roll, '
                    f'pitch, yaw], got {rot!r}'[:200])
        for key in ('orientation', 'yaw', 'heading', 'theta', 'rotation'):
            if key in item:
                return num(item[key], f'{where}.{key}',
                           doc.line(item, key, line))
        return 0.0
    found = False
    orange: List[int] = []
    for key, tag in _JSON_LISTS.items():
        if key in data:
            found = True
            items = data[key] or []
            if not isinstance(items, list):
                raise ValueError(f'{path}:{doc.line(data, key)}: field {key!r}: '
                                 'expected a list')
            first = len(out.xy)
            for i, item in enumerate(items):
                line = doc.line(items, i, doc.line(data, key))
                x, y = xy_of(item, f'{key}[{i}]', line)
                out.tagged(tag, x, y, line, key)
            if key == 'orange_cones':
                orange = list(range(first, len(out.xy)))
    if 'x' in data and 'y' in data:
        found = True
        xs, ys = data['x'], data['y']
        cols = data.get('color', data.get('colour', data.get('type')))
        if not isinstance(xs, list) or not isinstance(ys, list) or \
                len(xs) != len(ys) or cols is not None and \
                (not isinstance(cols, list) or len(cols) != len(xs)):
            raise ValueError(f"{path}:{doc.line(data, 'x')}: field 'x': x, y "
                             'and color must be lists of one length')
        for i, (x, y) in enumerate(zip(xs, ys)):
            line = doc.line(xs, i, doc.line(data, 'x'))
            xy = (num(x, f'x[{i}]', line),
                  num(y, f'y[{i}]', doc.line(ys, i, doc.line(data, 'y'))))
            if cols is not None:    # the cone's line: its colour's
                line = doc.line(cols, i, line)
            _json_cone(out, *xy, None if cols is None else cols[i], line,
                       f'color[{i}]')
    if 'cones' in data:
        found = True
        if not isinstance(data['cones'], list):
            raise ValueError(f"{path}:{doc.line(data, 'cones')}: field "
                             "'cones': expected a list")
        for i, item in enumerate(data['cones']):
            line = doc.line(data['cones'], i, doc.line(data, 'cones'))
            x, y = xy_of(item, f'cones[{i}]', line)
            col = None
            if isinstance(item, dict):
                col = next((item[k] for k in ('color', 'colour', 'type',
                                              'class') if k in item), None)
            _json_cone(out, x, y, col, line, f'cones[{i}].color')
    if not found:
        raise ValueError(f"{path}:1: field 'blue_cones': no cone lists "
                         '(blue_cones, yellow_cones, ...), x/y/color columns '
                         f'or cones list (keys {sorted(data)[:8]})')
    centre = next((k for k in ('centreline', 'centerline', 'centre_line',
                               'center_line') if k in data), None)
    if centre is not None:
        items, line = data[centre], doc.line(data, centre)
        if not isinstance(items, list):
            raise ValueError(f'{path}:{line}: field {centre!r}: expected a '
                             'list of points')
        for i, item in enumerate(items):
            out.mids.append(xy_of(item, f'{centre}[{i}]',
                                  doc.line(items, i, line)))
    if 'loop' in data:
        if not isinstance(data['loop'], bool):
            raise ValueError(f"{path}:{doc.line(data, 'loop')}: field 'loop': "
                             f"expected true or false, got {data['loop']!r}")
        out.closed = data['loop']
    key = next((k for k in ('cars', 'car_start', 'start') if data.get(k)), None)
    cars, line = (data[key], doc.line(data, key)) if key else (None, 1)
    if isinstance(cars, list) and cars and isinstance(cars[0], dict):
        cars, line = cars[0], doc.line(cars, 0, line)
    if isinstance(cars, dict):
        where = 'cars[0]' if key == 'cars' else str(key)
        x, y = xy_of(cars, where, line, keyed=key != 'cars')
        out.set_start(x, y, yaw_of(cars, where, line), line, where)
        big = any(k in data for k, t in _JSON_LISTS.items()
                  if t == 'big_orange')
        if key == 'start' and centre is not None and orange and not big:
            _umdf_start_gate(out, orange)
    return out.done()


#: Orange cones of a UMDF file this close to the start pose along its
#: heading (m) and across it, on both sides, are the start gate: FSAI-Sim
#: starts the car at the centre of the four big cones (map_2_umdf.py
#: ``find_start``; its generator puts them 0 and 0.4 m behind the start),
#: where its skidpad's small orange entry-lane cones stand 1 m before and
#: after it.
UMDF_GATE_ALONG = 0.75
UMDF_GATE_ACROSS = 4.0


def _umdf_start_gate(out: _Cones, orange: List[int]) -> None:
    """
    Re-class the ``orange_cones`` across a UMDF start pose as big orange.

    FSAI-Sim's UMDF writes big and small orange cones into one list
    (map_2_umdf.py: ``self.big_cones + self.orange_cones``) and spawns
    the list as big cones (map.py ``generate_map``); the four across the
    start pose are its start gate. In place, with a note.
    """
    start = out.start
    if start is None:
        return
    h = np.array([math.cos(start.yaw), math.sin(start.yaw)])
    rel = np.array([out.xy[i] for i in orange]) - [start.x, start.y]
    along = rel @ h
    across = h[0] * rel[:, 1] - h[1] * rel[:, 0]
    gate = (np.abs(along) <= UMDF_GATE_ALONG) & \
        (np.abs(across) <= UMDF_GATE_ACROSS)
    if not ((across[gate] > 0).any() and (across[gate] < 0).any()):
        return
    picked = [orange[k] for k in np.flatnonzero(gate)]
    for i in picked:
        out.cls[i] = CONE_BIG_ORANGE
    out.notes.append(f'{out.path}:{out.lines[picked[0]]}: UMDF orange_cones '
                     'holds big and small orange cones together: the '
                     f'{len(picked)} orange cones across the start pose '
                     're-classed as big orange (the start gate)')


def _json_cone(out: _Cones, x: float, y: float, col: Any, line: int,
               where: str) -> None:
    if col is None:
        out.cone(x, y, CONE_UNKNOWN, line)
    elif isinstance(col, int) and not isinstance(col, bool):
        out.cone(x, y, CONE_UNKNOWN, line, code=col)
    else:
        out.tagged(str(col), x, y, line, where)


# ------------------------------------------------------------ Unreal dir
_UNREAL_POINT = re.compile(r'X=([-+\d.eE]+),\s*Y=([-+\d.eE]+)(?:,\s*Z=([-+\d.eE]+))?')
_UNREAL_FILES = {'blue': 'blue', 'yellow': 'yellow', 'bigorange': 'big_orange',
                 'bigoranges': 'big_orange', 'big_orange': 'big_orange',
                 'orange': 'orange', 'oranges': 'orange',
                 'miniorange': 'orange', 'minioranges': 'orange',
                 'smallorange': 'orange', 'unknown': 'unknown'}


def _unreal_files(path: str) -> Dict[str, str]:
    """Return {file name: tag} of the transform dumps in a directory."""
    out = {}
    for name in sorted(os.listdir(path)):
        stem, ext = os.path.splitext(name)
        key = normal_name(stem).replace('_', '')
        if ext.lower() == '.txt' and (key in _UNREAL_FILES or key == 'origin'):
            out[name] = _UNREAL_FILES.get(key, 'origin')
    return out if any(t != 'origin' for t in out.values()) else {}


def read_unreal_dir(path: str) -> TrackFile:
    """
    Read a directory of Unreal editor transform dumps (FSDS's first maps).

    ``blue.txt``, ``yellow.txt``, ``bigoranges.txt``, ``miniorange.txt``:
    ``((Translation=(X=..,Y=..,Z=..)),...)`` in centimetres, Unreal axes (y
    to the right); ``origin.txt``: ``(X=..,Y=..,Z=..)``, where the car
    spawns facing +X. Comes out REP-103 in metres relative to the origin.
    """
    files = _unreal_files(path)
    out = _Cones(path, 'unreal_dir')
    origin = (0.0, 0.0)
    if 'origin.txt' in files:
        pts = _UNREAL_POINT.findall(read_text(os.path.join(path,
                                                           'origin.txt')))
        if len(pts) != 1:
            raise ValueError(f"{path}/origin.txt:1: field 'X': expected one "
                             f'(X=,Y=,Z=) point, got {len(pts)}')
        where = os.path.join(path, 'origin.txt')
        origin = (_number(where, 1, 'X', pts[0][0]),
                  _number(where, 1, 'Y', pts[0][1]))
    else:
        out.notes.append(f'{path}: no origin.txt: the car starts at the '
                         'Unreal origin')
    for name, tag in files.items():
        if tag == 'origin':
            continue
        full = os.path.join(path, name)
        text = read_text(full)
        for m in _UNREAL_POINT.finditer(text):
            line = text.count('\n', 0, m.start()) + 1
            x = _number(full, line, 'X', m.group(1))
            y = _number(full, line, 'Y', m.group(2))
            out.tagged(tag, (x - origin[0]) / 100.0, -(y - origin[1]) / 100.0,
                       line, name)
    out.notes.append(f'{path}: Unreal transforms (cm, y to the right) '
                     'converted to REP-103 metres from origin.txt')
    out.start = Pose()
    return out.done()


# ------------------------------------------------------------- dispatch
def read_file(path: str, fmt: str = 'auto') -> TrackFile:
    """Read a track file (``fmt='auto'`` detects it); see the module doc."""
    if fmt not in ('auto', '', None, *FORMATS):
        raise ValueError(f'{path}: format {fmt!r} is not one of '
                         f'{["auto", *FORMATS]}')
    if os.path.isdir(path):
        if fmt not in ('auto', '', None, 'unreal_dir'):
            raise ValueError(f'{path}: a directory, not a {fmt} file')
        detect_format(path)
        return read_unreal_dir(path)
    if not os.path.exists(path):
        raise FileNotFoundError(f'{path}: no such file')
    text = read_text(path)
    if fmt in ('auto', '', None):
        fmt = detect_format(path, text)
    if fmt in ('eufs', 'fsds', 'csv'):
        return read_csv(path, text, fmt)
    if fmt == 'unreal_dir':
        raise ValueError(f'{path}: format unreal_dir needs a directory')
    return {'pacsim': read_pacsim, 'fssim': read_fssim, 'conemap':
            read_conemap, 'sdf': read_sdf, 'json': read_json}[fmt](path, text)
