# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
Track files other simulators write: read them into a :class:`Track`.

The readers of every format (eufs_sim/FSDS/team CSV, PacSim and fssim
YAML, cone-map YAML, Gazebo SDF, JSON, Unreal transform dumps) are in
:mod:`hil_bridge.sim.track_readers`; ``docs/track_formats.md`` has the
facts of each and what the loader does with real files.

Everything comes out REP-103 in ``map`` (x forward, y left; metres,
radians). ``convention='unreal'`` reads a file written with y to the right
(old FSDS maps) by negating y and the headings; ``convention='screen'``
does the same for a file in screen axes (y down) but keeps the file's
left/right (names of the driver's sides: Hanze's pygame maps, which the
default convention reads so); ``convention='swapped'`` swaps blue and
yellow (fssim's SDF export puts blue on the right). Cones
closer than a cone base are merged (with a warning naming both lines);
numeric colour codes are read by where the cones stand; cones of unknown
colour are put on the left or right boundary by walking the track from
the car start. A broken file raises ``ValueError`` with one line naming
the file, line and field.
"""

from dataclasses import dataclass, field
import logging
import math
import os
from typing import Dict, List, Optional, Tuple

from hil_bridge.interface.cones import (CONE_BIG_ORANGE, CONE_BLUE, CONE_NAMES, CONE_ORANGE,
                                        CONE_SIZE, CONE_UNKNOWN, CONE_YELLOW)
from hil_bridge.interface.frames import Pose
from hil_bridge.interface.track import (arc_length, ConeArray, MIN_WIDTH, SKIDPAD_CENTRE_DISTANCE,
                                        SKIDPAD_INNER_DIAMETER, SKIDPAD_OUTER_DIAMETER,
                                        TimingLine, Track)
from hil_bridge.sim.track_readers import (CSV_HEADER, detect_format, FORMATS,
                                          FRONT_WING_OFFSET, read_file, save_csv,
                                          TrackFile)
from hil_bridge.sim.tracks import (lateral_position, local_widths, MAX_CONE_SPACING, resample,
                                   rule_findings, skidpad_track, tangents, timing_line)
import numpy as np
from scipy.interpolate import splev, splprep
from scipy.spatial import cKDTree, Delaunay

LOG = logging.getLogger(__name__)

__all__ = ['CONVENTIONS', 'CSV_HEADER', 'detect_format', 'FORMATS', 'FRONT_WING_OFFSET',
           'TrackFile', 'TrackLoad',
           'read_track_file', 'build_track', 'load_track_file', 'open_track', 'describe',
           'save_track_csv', 'boundary_sides', 'detect_mission']

#: ``rep103`` as written (a format known to be in screen axes is read as
#: ``screen``); ``unreal``: y to the right (y, headings and the file's
#: left/right negated); ``swapped``: blue and yellow swapped; ``screen``:
#: y down (y and headings negated, the file's left/right kept: they name
#: the driver's sides).
CONVENTIONS = ('rep103', 'unreal', 'swapped', 'screen')
#: Largest gap (m) between consecutive points of one boundary or of the
#: midpoint line when they are chained into a polyline.
CHAIN_GAP = 2.5 * MAX_CONE_SPACING
#: Cone-to-cone distances (m) that can span the track (left to right).
SPAN = (1.8, 7.5)
#: Below this the walk's two choices of side for the next cone are a tie
#: (the difference of the cosines between the cone's direction and each
#: boundary's), settled by walking each ``LOOK_AHEAD`` triangles on.
AMBIGUOUS = 0.25
LOOK_AHEAD = 6
#: Where a file without a start pose puts the car: this far (m, rear
#: axle) behind its first big orange cones.
START_BEHIND = 3.0
#: An FSDS map keeps its car at the origin (FSDS's spawn point) when a
#: boundary or big orange cone is this close to it (m).
ORIGIN_NEAR = 2.0 * MAX_CONE_SPACING
#: Slack (m) of the width and spacing rules for cone positions read from
#: files (surveyed or mapped, not set by a generator).
FILE_TOLERANCE = 0.5
#: Points of unknown colour closer than this (median, m) are a path.
MIN_CONE_GAP = 1.2
#: A big orange group longer than this (m, along the track) at the end of
#: an open track is a braking zone: the finish is its first row. Also the
#: longest small orange group read as a start gate.
LONG_GROUP = 3.0
#: A start gate of small orange cones (no big orange ones) is at most this
#: far (m, along the centre line) ahead of the car start.
SMALL_GATE_AHEAD = 10.0
#: Farthest (m) a smoothed centre line may stray from its points' polyline
#: (at least; the longest step between the points if longer).
SPLINE_STRAY = 2.0
#: Largest turn (rad) from one boundary cone to the next when a boundary
#: is followed back to the entry of an open lane (a file without a start).
ENTRY_TURN = math.radians(75.0)
#: Longest step (m) from one boundary cone to the next on that walk.
ENTRY_GAP = 1.5 * MAX_CONE_SPACING
#: Cones whose arc positions along the track are within this (m) of each
#: other are one row across the lane (rows of a braking zone are 2 m apart).
ROW_GAP = 1.0
#: Small orange cones chained closer than this (m, along the track) are one
#: start gate (its rows are up to 2 m apart).
GATE_GAP = 2.0


@dataclass
class TrackLoad:
    """
    A loaded track, the format read and the rule check's findings.

    ``warnings`` are the loader's notes followed by the rule warnings,
    ``rule_warnings`` the rule warnings alone, ``errors`` the rule errors,
    ``convention`` the axis convention applied (``screen`` for a file whose
    format is written in screen axes, read with the default ``rep103``).
    """

    track: Track
    fmt: str
    warnings: List[str]
    errors: List[str]
    rule_warnings: List[str] = field(default_factory=list)
    convention: str = 'rep103'


def save_track_csv(track: Track, path: str) -> None:
    """Write a track as our eufs-style CSV (header, car_start first)."""
    save_csv(path, track.car_start,
             ((CONE_NAMES[int(c)], x, y) for (x, y), c in
              zip(track.cones.xy, track.cones.class_id)))


# ------------------------------------------------------------- reading
def read_track_file(path: str, fmt: str = 'auto',
                    convention: str = 'rep103') -> TrackFile:
    """
    Read a track file of any supported format (``fmt='auto'`` detects it).

    Applies the axis ``convention``, merges near-duplicate cones (bases
    overlapping) into one at their mean position noting both lines, reads
    numeric colour codes by where their cones stand and puts cones of
    unknown colour on a boundary when the file has too few blue/yellow
    cones. Raises ``ValueError`` (one line with file, line and field) for
    a broken file, ``FileNotFoundError`` for a missing one.
    """
    if convention not in CONVENTIONS:
        raise ValueError(f'{path}: convention {convention!r} is not one of '
                         f'{list(CONVENTIONS)}')
    tf = read_file(path, fmt)
    if len(tf.xy) == 0:
        raise ValueError(f'{path}: no cones')
    if convention == 'rep103' and tf.axes == 'screen':
        convention = 'screen'
    tf.convention = convention
    if convention in ('unreal', 'screen'):
        for arr in (tf.xy, tf.midpoints, tf.timing):
            arr[:, 1] *= -1.0
        if convention == 'unreal':
            tf.side = -tf.side
        if tf.car_start is not None:
            p = tf.car_start
            tf.car_start = Pose(x=p.x, y=-p.y, z=p.z, yaw=-p.yaw)
    elif convention == 'swapped':
        # the colours are wrong, the file's sides (names, lists) are not
        blue, yellow = tf.class_id == CONE_BLUE, tf.class_id == CONE_YELLOW
        tf.class_id[blue], tf.class_id[yellow] = CONE_YELLOW, CONE_BLUE
    _merge_duplicates(tf)
    _resolve_colours(tf)
    _infer_start(tf)
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
        known = tf.class_id[members] != CONE_UNKNOWN
        if tf.class_id[r] == CONE_UNKNOWN and known.any():
            tf.class_id[r] = tf.class_id[members[known][0]]
    tf.xy = tf.xy[keep]
    tf.class_id = tf.class_id[keep]
    tf.side = tf.side[keep]
    if tf.codes is not None:
        tf.codes = tf.codes[keep]
    tf.lines = [ln for ln, k in zip(tf.lines, keep) if k]


def _resolve_colours(tf: TrackFile) -> None:
    """
    Read numeric colour codes and give cones of unknown colour a side.

    Numeric codes (a cone-map message's enum, which differs between
    teams) are read by where their cones stand when the track is walked
    from the car start (:func:`boundary_sides`): a code whose cones are
    at least 3/4 on the left is blue, on the right yellow; a code of at
    most 8 cones is big orange when they stand at the start, else orange;
    the rest stay unknown. When all cones carry one code it says nothing
    (unknown colour). Then, if the file has fewer than two cones on
    either boundary (by colour or by the file's left/right lists), the
    unknown cones get the side :func:`boundary_sides` finds. In place.
    """
    start = tf.car_start if tf.car_start is not None else Pose()
    coloured = ((tf.class_id == CONE_BLUE) | (tf.class_id == CONE_YELLOW)) & \
        (tf.side != 0)
    says = np.where(tf.class_id == CONE_BLUE, 1, -1)
    clash = coloured & (tf.side != says)
    if clash.any() and clash.sum() < 0.5 * coloured.sum():
        # a few cones whose colour contradicts the file's side: the side
        # is the slip (when most do, the colours are: mirrored)
        tf.side[clash] = says[clash]
        tf.notes.append(f'{tf.path}:{tf.lines[int(np.flatnonzero(clash)[0])]}'
                        f': {int(clash.sum())} cones whose colour contradicts '
                        "the file's left/right: the colour is kept")
    if tf.codes is not None:
        codes = tf.codes
        coded = codes >= 0
        found = np.unique(codes[coded])
        if len(found) == 1:
            tf.notes.append(f'{tf.path}: all {int(coded.sum())} coded cones '
                            f'have colour code {int(found[0])}: read as '
                            'unknown colour')
        else:
            side = boundary_sides(tf.xy, start)
            origin = np.array([start.x, start.y])
            names = []
            for code in found:
                m = coded & (codes == code)
                s = side[m]
                left, right = int((s > 0).sum()), int((s < 0).sum())
                near = np.hypot(*(tf.xy[m] - origin).T).max() < 15.0
                if left >= 3 and left >= 0.75 * (left + right):
                    cls = CONE_BLUE
                elif right >= 3 and right >= 0.75 * (left + right):
                    cls = CONE_YELLOW
                elif m.sum() <= 8:
                    cls = CONE_BIG_ORANGE if near else CONE_ORANGE
                else:
                    cls = CONE_UNKNOWN
                tf.class_id[m & (tf.class_id == CONE_UNKNOWN)] = cls
                names.append(f'{int(code)} = {CONE_NAMES[cls]} '
                             f'({int(m.sum())})')
            tf.notes.append(f'{tf.path}: numeric colour codes read by where '
                            f'their cones stand: {", ".join(names)}')
    cls = tf.class_id
    left = int(((tf.side > 0) | ((tf.side == 0) & (cls == CONE_BLUE))).sum())
    right = int(((tf.side < 0) | ((tf.side == 0) & (cls == CONE_YELLOW))
                 ).sum())
    unknown = (cls == CONE_UNKNOWN) & (tf.side == 0)
    if (left < 2 or right < 2) and unknown.sum() >= 4:
        pts = tf.xy[unknown]
        gap = float(np.median(cKDTree(pts).query(pts, k=2)[0][:, 1]))
        if gap < MIN_CONE_GAP:
            raise ValueError(
                f'{tf.path}: {len(pts)} points of unknown colour only '
                f'{gap:.2f} m apart (median): a path or centre line, not '
                'cones')
        side = boundary_sides(tf.xy, start)
        where = 'the car start'
        if tf.car_start is None and min((side > 0).sum(),
                                        (side < 0).sum()) < 4:
            side, where = _walk_beside_the_origin_cone(tf.xy, side, where)
        tf.side[unknown] = side[unknown]
        got = int((side[unknown] != 0).sum())
        if min((side > 0).sum(), (side < 0).sum()) < 4:
            raise ValueError(
                f'{tf.path}: {int(unknown.sum())} cones of unknown colour do '
                'not form a track: walking from the car start finds no left '
                'and right boundary (one boundary only, or a path or '
                'centre-line file?)')
        tf.notes.append(f'{tf.path}: {int(unknown.sum())} cones of unknown '
                        f'colour: {got} put on the left or right boundary by '
                        f'walking the track from {where}' +
                        ('' if got >= 0.8 * unknown.sum() else
                         ' (the rest is off the walked track)'))


def _walk_beside_the_origin_cone(xy: np.ndarray, side: np.ndarray,
                                 where: str) -> Tuple[np.ndarray, str]:
    """
    Return the sides of a walk from beside the cone at the origin.

    A file without a start pose whose origin is one of its cones (a survey
    in metres from its first cone, as latitude/longitude files are read)
    gives the walk from the origin nothing to cross: walk instead from the
    middle of each edge (``SPAN`` long) from that cone to its six nearest
    cones, across the edge either way, and keep the walk that puts the
    most cones on its weaker side. ``side`` and ``where`` (the walk from
    the origin) are returned when the origin is not a cone or no walk
    does better.
    """
    dist = np.hypot(*xy.T)
    i = int(np.argmin(dist))
    if dist[i] > 0.5:
        return side, where
    best = (min((side > 0).sum(), (side < 0).sum()), side, where)
    near = np.hypot(*(xy - xy[i]).T)
    for j in np.argsort(near)[1:7]:
        if not SPAN[0] <= near[j] <= SPAN[1]:
            continue
        mid = (xy[i] + xy[j]) / 2.0
        edge = xy[j] - xy[i]
        for sgn in (1.0, -1.0):
            got = boundary_sides(xy, Pose(x=float(mid[0]), y=float(mid[1]),
                                          yaw=math.atan2(-sgn * edge[0],
                                                         sgn * edge[1])))
            score = min((got > 0).sum(), (got < 0).sum())
            if score > best[0]:
                best = (score, got, 'beside the cone at the origin (no '
                        'start pose)')
    return best[1], best[2]


def _infer_start(tf: TrackFile) -> None:
    """
    Give a file without a start pose one, behind its start line.

    FSDS maps have a fixed convention (the car at the origin facing +x),
    kept when a boundary or big orange cone is within ``ORIGIN_NEAR`` of
    the origin (Unreal dumps have their origin.txt). Otherwise the car
    faces along the track with its left boundary (blue, or the file's
    left side) on its left (the three nearest left and right cones give
    the direction) and stands ``START_BEHIND`` m behind the big orange
    cones that come first in that direction; without big orange cones at
    the origin when it is between the boundaries, else between the left
    and right cones nearest to it. In place, with a note when that is not
    the origin facing +x (for FSDS, naming how far the origin is).
    """
    if tf.car_start is not None or tf.fmt == 'unreal_dir':
        return
    cls = tf.class_id
    left, right = _boundary_masks(cls, tf.side)
    origin = np.zeros(2)
    if left.sum() < 1 or right.sum() < 1:
        if tf.fmt != 'fsds':
            tf.car_start = Pose()
        return
    lp, rp = tf.xy[left], tf.xy[right]
    head = f'{tf.path}: no start pose'
    if tf.fmt == 'fsds':
        # FSDS spawns the car at the origin; a map drawn elsewhere (IFSSIM
        # spawns behind its first gate) would get a made-up lead-in
        near = float(np.hypot(*tf.xy[left | right | (cls == CONE_BIG_ORANGE)
                                     ].T).min())
        if near <= ORIGIN_NEAR:
            return
        head = (f'{tf.path}: FSDS puts the car at the origin, but the nearest '
                f'cone is {near:.1f} m from it')

    def heading_at(p: np.ndarray) -> np.ndarray:
        li = np.argsort(np.hypot(*(lp - p).T))[:3]
        ri = np.argsort(np.hypot(*(rp - p).T))[:3]
        n = lp[li].mean(axis=0) - rp[ri].mean(axis=0)
        norm = float(np.hypot(*n))
        return np.array([n[1], -n[0]]) / norm if norm > 0.5 else \
            np.array([1.0, 0.0])
    big = tf.xy[cls == CONE_BIG_ORANGE]
    if len(big) >= 2:
        groups = _groups(big, 6.5)
        h0 = heading_at(origin)
        first = min(groups, key=lambda g: float((g - origin) @ h0))
        h = heading_at(first)
        anchor = first - START_BEHIND * h
    else:
        il = int(np.argmin(np.hypot(*lp.T)))
        ir = int(np.argmin(np.hypot(*(rp - lp[il]).T)))
        span = float(np.hypot(*(lp[il] - rp[ir])))
        between = float(np.hypot(*lp[il]) + np.hypot(*rp[ir])) < span + 1.0
        # a cone at the origin (a survey about its first cone) is no start
        between = between and min(np.hypot(*lp[il]), np.hypot(*rp[ir])) > 0.5
        anchor = origin if between else (lp[il] + rp[ir]) / 2.0
        h = heading_at(anchor)
        if not between:
            # the pair nearest the origin may be anywhere along an open lane:
            # build_track starts at the lane's entry if the track is open
            entry = _lane_entry(lp, rp, anchor, h)
            if entry is not None:
                he = heading_at(entry)
                ye = math.atan2(he[1], he[0])
                tf.entry_start = (
                    Pose(x=float(entry[0]), y=float(entry[1]), yaw=ye),
                    f'{head}: an open lane: the car starts at its entry '
                    f'({entry[0]:.2f}, {entry[1]:.2f}) facing '
                    f'{math.degrees(ye):.0f} deg, along the track with its '
                    'left boundary on the left')
    yaw = math.atan2(h[1], h[0])
    tf.car_start = Pose(x=float(anchor[0]), y=float(anchor[1]), yaw=yaw)
    if np.hypot(*anchor) > 0.05 or abs(yaw) > 0.05:
        tf.notes.append(f'{head}: the car starts at '
                        f'({anchor[0]:.2f}, {anchor[1]:.2f}) facing '
                        f'{math.degrees(yaw):.0f} deg, along the track with '
                        'its left boundary on the left' +
                        (', behind the big orange cones' if len(big) >= 2
                         else ''))


def _lane_entry(lp: np.ndarray, rp: np.ndarray, anchor: np.ndarray,
                heading: np.ndarray) -> Optional[np.ndarray]:
    """
    Return the entry of the open lane ``anchor`` stands in, or None.

    Each boundary (left cones ``lp``, right cones ``rp``) is followed from
    its cone nearest ``anchor`` against the driving direction ``heading``
    (unit vector), cone to cone, never turning back (:func:`_upstream`);
    the middle of the two ends is the lane's entry. None when the anchor
    is at the entry already, the ends each way meet (a closed loop: the
    pair nearest the origin is as good a start as any) or the two ends are
    more than a lane apart (a gap in one boundary).
    """
    ends = []
    for direction in (-heading, heading):
        for pts in (lp, rp):
            ends.append(pts[_upstream(pts, anchor, direction)[-1]])
    entry, exit_ = (ends[0] + ends[1]) / 2.0, (ends[2] + ends[3]) / 2.0
    if float((entry - anchor) @ heading) > -MAX_CONE_SPACING or \
            np.hypot(*(entry - exit_)) < CHAIN_GAP or \
            np.hypot(*(ends[0] - ends[1])) > SPAN[1]:
        # at the entry already, both ways end at one gap (a closed loop),
        # or the boundaries end apart (a gap in one of them)
        return None
    return entry


def _upstream(points: np.ndarray, start: np.ndarray, direction: np.ndarray
              ) -> List[int]:
    """
    Order cones from the one nearest ``start`` along ``direction``.

    Each step goes to an unused cone within ``ENTRY_GAP`` less than
    ``ENTRY_TURN`` off the last step's direction (the nearest and
    straightest, as :func:`_chain`); the chain ends where there is none.
    """
    order = [int(np.argmin(np.hypot(*(points - start).T)))]
    used = np.zeros(len(points), bool)
    used[order[0]] = True
    d = direction.astype(float)
    cos_max = math.cos(ENTRY_TURN)
    while True:
        vec = points - points[order[-1]]
        dist = np.hypot(*vec.T)
        cos = (vec @ d) / np.maximum(dist, 1e-9)
        ok = (~used) & (dist > 0.0) & (dist <= ENTRY_GAP) & (cos > cos_max)
        if not ok.any():
            return order
        cand = np.flatnonzero(ok)
        j = int(cand[np.argmin(dist[cand] * (1.5 - cos[cand]))])
        d = vec[j] / dist[j]
        used[j] = True
        order.append(j)


def _boundary_masks(cls: np.ndarray, side: np.ndarray
                    ) -> Tuple[np.ndarray, np.ndarray]:
    """
    Return the masks of the left and right boundary cones of a file.

    The file's side (PacSim lists, fssim names, flag columns) where it
    gives one, else blue left and yellow right; orange cones are left out
    whatever side the file gives them (files put start-gate cones on the
    wrong side), the centre line takes them by where they stand.
    """
    orange = (cls == CONE_ORANGE) | (cls == CONE_BIG_ORANGE)
    left = ((side > 0) & ~orange) | ((side == 0) & (cls == CONE_BLUE))
    right = ((side < 0) & ~orange) | ((side == 0) & (cls == CONE_YELLOW))
    return left, right


def _groups(points: np.ndarray, radius: float) -> List[np.ndarray]:
    """Return the centres of the groups of points closer than ``radius``."""
    label = _labels(points, radius)
    return [points[label == k].mean(axis=0) for k in np.unique(label)]


def boundary_sides(xy: np.ndarray, start: Pose) -> np.ndarray:
    """
    Return the side of each cone (+1 left, -1 right, 0 neither) by geometry.

    See :func:`_walk`, which also says whether the walk closed its loop.
    """
    return _walk(xy, start)[0]


def _walk(xy: np.ndarray, start: Pose) -> Tuple[np.ndarray, bool]:
    """
    Return the side of each cone (+1 left, -1 right, 0 neither) by geometry.

    Walks the Delaunay triangulation of the cones along the track from
    ``start``: the first edge is the nearest that spans the track ahead
    (``SPAN`` long, crossing the line of travel, more across than along
    it); from each edge (left cone, right cone) the triangle ahead has a
    third cone, which replaces the edge's left cone when it stands left
    of the way on, else its right one (in a corridor of cones every
    triangle has one boundary edge and two spanning edges, so this walks
    the strip of triangles between the boundaries, around hairpins too).
    Where the strip ends (a gap, the end of the triangulation) the
    nearest spanning edge up to 10 m ahead continues it. Every edge
    walked votes its left cone left and its right cone right. Stops back
    at the first edge (closed) or when nothing lies ahead; cones no edge
    touched (clutter) get 0.
    """
    n = len(xy)
    side = np.zeros(n, dtype=np.int8)
    if n < 4:
        return side, False
    try:
        tri = Delaunay(xy)
    except Exception:               # collinear or too few distinct points
        return side, False
    faces: Dict[Tuple[int, int], List[int]] = {}
    for t, simplex in enumerate(tri.simplices):
        for i in range(3):
            e = (int(min(simplex[i], simplex[(i + 1) % 3])),
                 int(max(simplex[i], simplex[(i + 1) % 3])))
            faces.setdefault(e, []).append(t)
    edges = np.array(sorted(faces), dtype=int)
    vec = xy[edges[:, 1]] - xy[edges[:, 0]]
    length = np.hypot(*vec.T)
    mid = xy[edges].mean(axis=1)
    tree = cKDTree(mid)
    seen = set()

    def unit(v: np.ndarray) -> np.ndarray:
        return v / max(float(np.hypot(*v)), 1e-9)

    def acquire(p: np.ndarray, h: np.ndarray) -> Optional[Tuple[int, int]]:
        """Return the nearest spanning edge ahead of ``p`` as (left, right)."""
        cand = np.array(tree.query_ball_point(p, 10.0), dtype=int)
        if cand.size == 0:
            return None
        d_vec = mid[cand] - p
        d = np.hypot(*d_vec.T)
        a, b = xy[edges[cand, 0]], xy[edges[cand, 1]]
        ca = h[0] * (a - p)[:, 1] - h[1] * (a - p)[:, 0]
        cb = h[0] * (b - p)[:, 1] - h[1] * (b - p)[:, 0]
        good = ((d_vec @ h) > 0.2) & (ca * cb < 0.0) & \
            (np.abs(vec[cand] @ h) < 0.9 * length[cand]) & \
            (length[cand] >= SPAN[0]) & (length[cand] <= SPAN[1])
        good &= np.array([(int(edges[c, 0]), int(edges[c, 1])) not in seen
                          or (int(edges[c, 0]), int(edges[c, 1])) == closing
                          for c in cand], dtype=bool)
        if not good.any():
            return None
        cost = d + 3.0 * np.abs(ca + cb)
        k = int(np.flatnonzero(good)[np.argmin(cost[good])])
        c = cand[k]
        return (int(edges[c, 0]), int(edges[c, 1])) if ca[k] > 0 else \
            (int(edges[c, 1]), int(edges[c, 0]))

    def spans(e: Tuple[int, int]) -> bool:
        return SPAN[0] <= float(np.hypot(*(xy[e[0]] - xy[e[1]]))) <= \
            SPAN[1] + 1.5

    def widest_ahead(cur: Tuple[int, int], h: np.ndarray,
                     prev: Tuple[int, int]) -> float:
        """Return the longest edge of a greedy walk on from ``cur``."""
        keys = {(min(prev), max(prev)), (min(cur), max(cur))}
        worst = float(np.hypot(*(xy[cur[0]] - xy[cur[1]])))
        for _ in range(LOOK_AHEAD):
            span = xy[cur[0]] - xy[cur[1]]
            h = unit(h + unit(np.array([span[1], -span[0]])))
            nxt = [e for e in options(cur, h, prev, False)
                   if (min(e), max(e)) not in keys]
            if not nxt:
                return max(worst, SPAN[1] + 1.5)   # a dead end is suspect
            prev, cur = cur, nxt[0]
            keys.add((min(cur), max(cur)))
            worst = max(worst, float(np.hypot(*(xy[cur[0]] - xy[cur[1]]))))
        return worst

    def options(cur: Tuple[int, int], h: np.ndarray,
                prev: Tuple[int, int], look: bool = True
                ) -> List[Tuple[int, int]]:
        """Return the next edges through the triangle ahead, likeliest first."""
        left, right = cur
        m = (xy[left] + xy[right]) / 2.0
        span = xy[left] - xy[right]
        fwd = unit(np.array([span[1], -span[0]]))
        key = (min(cur), max(cur))
        # each boundary's own direction (the way on at the start)
        d_left = unit(xy[left] - xy[prev[0]]) if prev[0] != left else h
        d_right = unit(xy[right] - xy[prev[1]]) if prev[1] != right else h
        for t in faces.get(key, []):
            c = [int(v) for v in tri.simplices[t] if v not in key][0]
            if float((xy[c] - m) @ fwd) <= 0.0:
                continue                            # the triangle behind
            # c is on the side whose boundary runs on to it
            along = unit(xy[c] - xy[left]) @ d_left - \
                unit(xy[c] - xy[right]) @ d_right
            out = [(c, right), (left, c)] if along > 0 else \
                [(left, c), (c, right)]
            out = [e for e in out if spans(e)]
            if look and len(out) == 2 and abs(along) < AMBIGUOUS:
                # both boundaries run on to c alike: the way on keeps the
                # corridor narrow, a wrong side jumps into the lane beside
                wide = [widest_ahead(e, h, cur) for e in out]
                if wide[1] < wide[0] - 0.5:
                    out.reverse()
            return out
        return []

    p = np.array([start.x, start.y], dtype=float)
    h = np.array([math.cos(start.yaw), math.sin(start.yaw)])
    closing: Tuple[int, int] = (-1, -1)     # the first edge, once walked
    first = acquire(p, h)
    if first is None:
        return side, False
    closing = (min(first), max(first))
    path: List[Tuple[int, int]] = []
    heads: List[np.ndarray] = []
    spare: List[Tuple[int, Tuple[int, int]]] = []
    cur: Optional[Tuple[int, int]] = first
    closed = False
    for _step in range(6 * n):
        key = (min(cur), max(cur))
        if key == closing and len(path) > 2:
            closed = True
            break
        nxt = []
        if key not in seen:
            seen.add(key)
            path.append(cur)
            span = xy[cur[0]] - xy[cur[1]]
            h = unit(h + unit(np.array([span[1], -span[0]])))
            heads.append(h)
            prev = path[-2] if len(path) > 1 else cur
            nxt = options(cur, h, prev)
        if nxt:
            spare += [(len(path), e) for e in nxt[1:]]
            cur = nxt[0]
            continue
        # dead end or back on the walked strip: a wrong side chosen a
        # few steps back? take the other
        if spare and len(path) - spare[-1][0] <= 3:
            pos, cur = spare.pop()
            for e in path[pos:]:
                seen.discard((min(e), max(e)))
            del path[pos:], heads[pos:]
            h = heads[-1]
            continue
        last = path[-1]
        cur = acquire((xy[last[0]] + xy[last[1]]) / 2.0, h)
        if cur is None:
            break
    votes = np.zeros((n, 2), dtype=np.int32)
    for left, right in path:
        votes[left, 0] += 1
        votes[right, 1] += 1
    side[votes[:, 0] > votes[:, 1]] = 1
    side[votes[:, 1] > votes[:, 0]] = -1
    return side, closed


# ------------------------------------------------------------ building
def build_track(tf: TrackFile, mission: str = '', width: float = 0.0
                ) -> Track:
    """
    Build a :class:`Track` (centre line, width, timing lines) from a file.

    ``mission`` '' detects it (:func:`detect_mission`): ``skidpad`` places
    the standard skidpad layout on the file's circles, anything else
    builds the centre line from the ``midpoint`` rows when they form a
    line, else from the boundaries (cones the file puts left/right, or
    blue/yellow by colour, chained from the car start); an open straight
    is an acceleration track. Timing lines come from the timing sensors
    (pairs in file order: one pair = start and finish, two = start,
    finish), else from the big orange cones. ``width`` 0 means the median
    local width of the cones.
    """
    if tf.entry_start is not None:
        # a start inferred at the cones nearest the origin, and the entry
        # of the open lane they may stand in: the entry when the track
        # built from there is open (a loop with a gap keeps its start)
        (entry, note), tf.entry_start = tf.entry_start, None
        notes = list(tf.notes)
        track = build_track(tf, mission, width)
        if track.closed:
            return track
        said = [n for n in notes if ': the car starts at (' in n]
        tf.notes[:] = [n for n in notes if n not in said] + [note]
        tf.car_start = entry
    car_start = tf.car_start if tf.car_start is not None else Pose()
    cones = ConeArray(xy=tf.xy.copy(), class_id=tf.class_id.copy(),
                      knocked=np.zeros(len(tf.class_id), dtype=bool))
    name = os.path.splitext(os.path.basename(tf.path.rstrip('/')))[0]
    fit = _skidpad_fit(tf.xy, tf.class_id, car_start)
    if mission == 'skidpad' or mission == '' and fit is not None:
        return _skidpad_at(name, cones, car_start, fit, tf)
    if fit is not None:
        tf.notes.append(f'{tf.path}: the cones form a skidpad but the '
                        f'mission is {mission}')
    cl, closed = None, False
    if len(tf.midpoints) >= 4:
        got = _centerline_from_midpoints(tf.midpoints, car_start, tf.closed)
        if got is None:
            tf.notes.append(f'{tf.path}: midpoint rows do not form a line '
                            f'(gaps > {CHAIN_GAP} m): centre line rebuilt '
                            'from the cones')
        else:
            cl, closed = got
    if cl is None:
        cl, closed = _centerline_from_cones(cones, tf.side, car_start,
                                            tf.path)
        if not closed and tf.closed is not False:
            side, walked = _walk(tf.xy, car_start)
            if walked:
                try:
                    cl2, closed = _centerline_from_cones(cones, side,
                                                         car_start, tf.path)
                except ValueError:  # the walk's sides build no lane
                    cl2, closed = cl, False
                if closed:
                    cl = cl2
                    tf.notes.append(
                        f'{tf.path}: the cone colours do not chain into two '
                        "boundaries; the centre line follows the cones' "
                        'geometry (walked from the car start)')
    if mission == '' and _is_straight(cl, closed):
        mission = 'acceleration'
    probe = Track(name, cones, car_start, cl, closed, width=MIN_WIDTH)
    if width <= 0.0 and tf.width > 0.0:
        width = round(float(tf.width), 2)   # the file's own (TUM's widths)
    if width <= 0.0:
        w = local_widths(probe)
        w = w[np.isfinite(w)]
        width = round(float(np.median(w)), 2) if w.size else MIN_WIDTH
    tan = tangents(cl, closed)
    timing = _timing_from_sensors(tf.timing, cl, closed, tan, width,
                                  car_start, tf)
    if timing is None:
        timing = _timing_from_big_orange(cones, cl, closed, tan, width,
                                         car_start, tf)
    car_start = _behind_start_line(car_start, timing['start'], tf)
    return Track(name=name, cones=cones, car_start=car_start, centerline=cl,
                 closed=closed, width=width, timing_lines=timing,
                 mission=mission)


def _behind_start_line(car_start: Pose, line: TimingLine, tf: TrackFile
                       ) -> Pose:
    """
    Move the car back when its front would stand across the start line.

    The referee times the front bumper across the start line; a car whose
    front (``FRONT_WING_OFFSET`` ahead of the rear axle, ``car_start``) is
    already past it never starts lap 1 (PacSim's acceleration file puts its
    reference point 1.98 m behind the line). The car is moved back along
    its heading to 0.5 m behind the line, with a note.
    """
    heading = np.array([math.cos(car_start.yaw), math.sin(car_start.yaw)])
    centre = (line.a + line.b) / 2.0
    ahead = float((centre - [car_start.x, car_start.y]) @ heading)
    need = FRONT_WING_OFFSET + 0.5
    if not 0.0 <= ahead < need or float(line.direction @ heading) < 0.5:
        return car_start
    back = need - ahead
    tf.notes.append(f'{tf.path}: car start moved {back:.2f} m back: its '
                    'front was across the start line')
    return Pose(x=car_start.x - back * heading[0],
                y=car_start.y - back * heading[1], z=car_start.z,
                yaw=car_start.yaw)


def detect_mission(tf: TrackFile) -> str:
    """Return ``skidpad``, ``acceleration`` or '' (a track) for a file."""
    return build_track(tf).mission


def _is_straight(cl: np.ndarray, closed: bool) -> bool:
    """Return True for an open centre line within 1.5 m of its chord, > 50 m."""
    if closed or len(cl) < 2:
        return False
    chord = cl[-1] - cl[0]
    length = float(np.hypot(*chord))
    if length < 50.0:
        return False
    u = chord / length
    off = (cl - cl[0]) @ np.array([-u[1], u[0]])
    return float(np.abs(off).max()) < 1.5


def load_track_file(path: str, fmt: str = 'auto', convention: str = 'rep103',
                    mission: str = '', width: float = 0.0,
                    tolerance: float = FILE_TOLERANCE) -> TrackLoad:
    """
    Read a track file, build the track and run the FS rule check.

    ``tolerance`` (m) is the slack of the width and spacing rules:
    ``FILE_TOLERANCE`` by default, as cone positions in files are surveyed
    or mapped (a 5 m gap set on the ground measures 5.1-5.4 m in the
    public competition maps).

    ``warnings`` holds the loader's notes (merged cones, skipped rows) and
    the rule warnings, ``errors`` the rule errors (mirrored colours, with
    a hint at the convention that loads the file). A broken file raises
    ``ValueError`` instead.
    """
    tf = read_track_file(path, fmt, convention)
    track = build_track(tf, mission, width)
    errors, rules = [], []
    for finding in rule_findings(track, tolerance):
        msg = f'{path}: {finding.message}'
        if finding.severity == 'error':
            if 'mirrored' in finding.message:
                msg += ' (' + _mirror_hint(tf.fmt, convention,
                                           bool((tf.side != 0).any()),
                                           tf.axes) + ')'
            errors.append(msg)
        else:
            rules.append(msg)
    return TrackLoad(track=track, fmt=tf.fmt, warnings=list(tf.notes) + rules,
                     errors=errors, rule_warnings=rules,
                     convention=tf.convention)


def _mirror_hint(fmt: str, convention: str, sided: bool = False,
                 axes: str = '') -> str:
    """
    Return the hint for a mirrored file: which convention to try.

    ``sided``: the file names the left/right of its cones (lists, flags,
    LEFT/RIGHT tags), which ``unreal`` negates and ``screen`` keeps;
    ``axes``: the axes the file's format is written in (``screen``).
    """
    if axes == 'screen' and convention in ('rep103', 'screen'):
        return ("read in screen axes, as the file's format is written (y "
                'down, left/right kept); its left/right fit the other '
                'driving direction: check where and which way the car '
                'starts')
    if convention == 'unreal' and sided:
        return ("read with convention unreal, which also swaps the file's "
                'left/right; try convention screen (y down, left/right '
                'kept) or rep103')
    if convention != 'rep103':
        return f'read with convention {convention}; try convention rep103'
    if fmt == 'sdf':
        return ("fssim's SDF export puts blue cones on the right: try "
                'convention swapped, or its tracks_yaml file')
    if sided:
        return ('a file written with y down or to the right? try convention '
                "screen (y negated, the file's left/right kept) or unreal "
                '(left/right swapped too)')
    if fmt == 'json':
        return ('a layout in screen axes (y down), as 2D editors write? try '
                'convention screen (or swapped if only the colours are '
                'exchanged)')
    return ('a file written with y to the right, as FSDS maps before '
            'September 2022? try convention unreal (or swapped if only the '
            'colours are exchanged)')


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
    k = min(n, 8)
    near_d, near_i = cKDTree(points).query(points, k=k)
    near_d, near_i = near_d.reshape(n, k), near_i.reshape(n, k)
    order = [int(first)]
    used = np.zeros(n, bool)
    used[first] = True
    direction = heading.copy()
    while True:
        cur = points[order[-1]]
        dist, idx = near_d[order[-1]], near_i[order[-1]]
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


def _centerline_from_midpoints(mids: np.ndarray, car_start: Pose,
                               loop: Optional[bool] = None
                               ) -> Optional[Tuple[np.ndarray, bool]]:
    """
    Use the midpoint rows (file order) as the centre line, if a line.

    Closed when the ends meet, unless the file's own flag ``loop`` says
    open.
    """
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
    if loop is False:
        closed = False
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
    yellow right); the other cones standing in a boundary line (within a
    metre of the median boundary offset: braking zones; not clutter further
    out, nor cones within 1.5 m of a boundary cone of their side, as gate
    cones beside the line) are then put on their side and the centre line
    is rebuilt with them. Fewer than two cones on a boundary: a file with
    boundary colours or sides is refused (one boundary only: a calibration
    row, not a track); one without is split by the side of the start
    heading.
    """
    heading = np.array([math.cos(car_start.yaw), math.sin(car_start.yaw)])
    origin = np.array([car_start.x, car_start.y])
    left, right = _boundary_masks(cones.class_id, side)
    if left.sum() < 2 or right.sum() < 2:
        cls = cones.class_id
        if ((cls == CONE_BLUE) | (cls == CONE_YELLOW) | (side != 0)).any():
            # boundary colours or sides given, but (almost) one boundary
            # only: a calibration row or a line of cones, not a track
            nl, nr = int(left.sum()), int(right.sum())
            raise ValueError(
                f'{path}: {nl} cones on the left boundary, {nr} on the '
                'right: ' + ('one boundary only' if max(nl, nr) >= 2 else
                             'too few boundary cones') + ', not a track')
        # no colours: split all cones by the side of the start heading
        rel = cones.xy - origin
        lat = heading[0] * rel[:, 1] - heading[1] * rel[:, 0]
        left, right = lat > 0, lat < 0
    cl, closed = _centerline_pass(cones.xy[left], cones.xy[right], origin,
                                  heading, path)
    other = ~(left | right)
    if other.any():
        probe = Track('', cones, car_start, cl, closed)
        _s, lat, _d = lateral_position(probe, cones.xy)
        half = float(np.median(np.abs(lat[left | right])))
        # only cones in the boundary lines (braking zones, start gates);
        # clutter further out would bend the centre line
        near = other & (np.abs(lat) > 0.4 * half) & \
            (np.abs(lat) < half + 1.0)
        # not beside a boundary cone already there (a gate cone next to
        # the line would make it zigzag)
        for mask in (left, right):
            d, _i = cKDTree(cones.xy[mask]).query(cones.xy)
            near &= ~((d < 1.5) & ((lat > 0) == (mask is left)))
        if near.any():
            left = left | (near & (lat > 0))
            right = right | (near & (lat < 0))
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
    closed = closed and _closing_is_a_lane(lo, ro)
    # centre points: each cone with the nearest point of the other
    # boundary's polyline (densified), from both sides (from one side the
    # midpoints of an outer corner's cones bunch at the inner corner),
    # in order along the left boundary, no step backwards, then a
    # smoothing spline
    dense_left = resample(lo, closed, 0.1)
    dense_right = resample(ro, closed, 0.1)
    left_tree = cKDTree(dense_left)
    _d, j = cKDTree(dense_right).query(lo)
    _d, i_lo = left_tree.query(lo)
    _d, i_ro = left_tree.query(ro)
    mids = np.vstack([(lo + dense_right[j]) / 2.0,
                      (ro + dense_left[i_ro]) / 2.0])
    order = np.argsort(np.concatenate([i_lo, i_ro]), kind='stable')
    mids = _forward_only(mids[order], 0.3, closed)
    closed = closed and len(mids) > 4
    if not closed:
        # extend back to the car start
        first = np.array([origin - 2.0 * heading])
        mids = np.vstack([first, mids])
    return _smooth(mids, closed), closed


def _closing_is_a_lane(lo: np.ndarray, ro: np.ndarray) -> bool:
    """
    Return True when the gap that closes each boundary has the lane beside it.

    The middle of the segment from a boundary's last cone back to its
    first must lie at least half the median lane width (each cone's
    distance to the other boundary) from the other boundary, closed the
    same way (when the boundaries are a lane apart at all, at most
    ``SPAN[1]``). An open U-turn layout (two lanes side by side, joined at one
    end only) closes its inner boundary across the open end: there the
    outer boundary's closing segment runs along the same line (EPFL's
    VSV files).
    """
    for own, other in ((lo, ro), (ro, lo)):
        tree = cKDTree(resample(other, True, 0.1))
        width = float(np.median(tree.query(own)[0]))
        gap = np.hypot(*(own[-1] - own[0]))
        if gap > MAX_CONE_SPACING and width <= SPAN[1] and \
                tree.query((own[-1] + own[0]) / 2.0)[0] < 0.5 * width:
            return False
    return True


def _forward_only(pts: np.ndarray, min_step: float, closed: bool
                  ) -> np.ndarray:
    """
    Drop points closer than ``min_step`` to the last kept, then turn-backs.

    A turn-back is a point where the line turns by more than 120 degrees
    (a midpoint out of order); removed until none is left.
    """
    out = [pts[0]]
    for p in pts[1:]:
        if np.hypot(*(p - out[-1])) >= min_step:
            out.append(p)
    q = np.array(out)
    for _ in range(len(q)):
        if len(q) < 4:
            break
        prev = q - (np.roll(q, 1, axis=0) if closed else np.vstack([q[:1], q[:-1]]))
        nxt = (np.roll(q, -1, axis=0) if closed else np.vstack([q[1:], q[-1:]])) - q
        norm = np.hypot(*prev.T) * np.hypot(*nxt.T)
        cos = np.einsum('ij,ij->i', prev, nxt) / np.maximum(norm, 1e-12)
        bad = (cos < -0.5) & (norm > 0)
        if not bad.any():
            break
        q = q[~bad]
    return q


def _smooth(pts: np.ndarray, closed: bool) -> np.ndarray:
    """
    Fit a smoothing cubic spline (about 5 cm RMS) and resample it.

    The points' polyline instead when the fit strays from it by more than
    ``SPLINE_STRAY`` and the longest step between the points (a curve
    through sparse points bulges from their chords by up to a step):
    points doubling back on themselves make the spline overshoot by
    kilometres.
    """
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
    line = resample(pts, closed, 0.1)
    steps = np.hypot(*np.diff(np.vstack([pts, pts[:1]]) if closed else pts,
                              axis=0).T)
    stray = float(cKDTree(line).query(dense)[0].max())
    if stray > max(SPLINE_STRAY, float(steps.max())):
        return resample(pts, closed, 0.5)
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
                         tan: np.ndarray, width: float, car_start: Pose,
                         tf: TrackFile) -> Optional[Dict[str, TimingLine]]:
    """
    Return timing lines at timing-sensor pairs (file order), or None.

    A pair (entries 0-1, 2-3) is a gate: as PacSim's trigger, its line is
    where the segment between the two sensors crosses the centre line,
    the first crossing ahead of the car start (the finish: the first after
    the start line); where the segment does not cross the centre line, the
    centre-line point nearest the pair's midpoint. A pair more than 3
    track widths apart whose segment crosses the centre line other than
    once is noted (on a ring, its midpoint is as near to every part of
    the lap; PacSim's competition gates, 12-15 m wide, cross it once).
    """
    if len(points) < 2:
        return None
    pairs = [points[i:i + 2] for i in range(0, len(points) - 1, 2)]
    s = arc_length(cl, closed)
    i0 = int(np.argmin(np.hypot(*(cl - [car_start.x, car_start.y]).T)))
    lines: Dict[str, TimingLine] = {}
    after = -1
    for name, pair in (('start', pairs[0]), ('finish', pairs[-1])):
        if name == 'finish' and (closed or len(pairs) == 1):
            lines['finish'] = lines['start']
            break
        i, crossings = _gate_crossing(
            pair, cl, closed, s, i0 if after < 0 else min(after, len(cl) - 1),
            behind=after < 0)
        if i is None:
            line, i = _line_at(name, pair.mean(axis=0), cl, tan, width,
                               after=after)
        else:
            line = timing_line(name, cl[i], tan[i], width / 2.0 + 0.5)
        apart = float(np.hypot(*(pair[1] - pair[0])))
        if apart > 3.0 * width and crossings != 1:
            mid = (line.a + line.b) / 2.0
            how = f'the first of its {crossings} crossings ahead of the car ' \
                'start' if crossings else 'no crossing: nearest their midpoint'
            tf.notes.append(
                f'{tf.path}: timing sensors at ({pair[0][0]:.1f}, '
                f'{pair[0][1]:.1f}) and ({pair[1][0]:.1f}, {pair[1][1]:.1f}) '
                f'are {apart:.1f} m apart (over 3 track widths): the {name} '
                f'line is where the segment between them crosses the centre '
                f'line, at ({mid[0]:.1f}, {mid[1]:.1f}) ({how})')
        lines[name] = line
        after = i + 1
    return lines


def _gate_crossing(pair: np.ndarray, cl: np.ndarray, closed: bool,
                   s: np.ndarray, i0: int, behind: bool
                   ) -> Tuple[Optional[int], int]:
    """
    Return where the segment ``pair`` crosses the centre line, and how often.

    The centre-line index of the first crossing at or after index ``i0``
    (around the loop when ``closed``; on an open one, when none is after,
    the nearest before if ``behind``), snapped to the nearer end of the
    crossed centre-line segment (``s``: its arc length, m), or None; and
    the number of crossings.
    """
    a, d = pair[0], pair[1] - pair[0]
    p = cl
    q = np.roll(cl, -1, axis=0) if closed else cl[1:]
    p = p[:len(q)]
    e = q - p
    denom = d[0] * e[:, 1] - d[1] * e[:, 0]
    rel = p - a
    ok = np.abs(denom) > 1e-12
    den = np.where(ok, denom, 1.0)
    t = (rel[:, 0] * e[:, 1] - rel[:, 1] * e[:, 0]) / den
    u = (rel[:, 0] * d[1] - rel[:, 1] * d[0]) / den
    hit = np.flatnonzero(ok & (t >= 0.0) & (t <= 1.0) & (u >= 0.0) &
                         (u < 1.0))
    if hit.size == 0:
        return None, 0
    at = s[hit] + u[hit] * (s[hit + 1] - s[hit])
    ahead = at - s[i0]
    if closed:
        ahead = ahead % s[-1]
    if (ahead >= 0.0).any():
        k = int(np.argmin(np.where(ahead >= 0.0, ahead, np.inf)))
    elif behind:
        k = int(np.argmax(ahead))
    else:
        return None, int(hit.size)
    i = int(hit[k]) + int(u[hit[k]] > 0.5)
    return i % len(cl), int(hit.size)


def _timing_from_big_orange(cones: ConeArray, cl: np.ndarray, closed: bool,
                            tan: np.ndarray, width: float, car_start: Pose,
                            tf: TrackFile) -> Dict[str, TimingLine]:
    """
    Return timing lines at the big orange cone groups (first, last).

    On an open track a last group of more than two rows (``ROW_GAP``)
    longer than ``LONG_GROUP`` along the track (a braking zone marked in
    big orange) puts the finish at its first row. Without big orange
    cones the start line is at a gate of small orange cones up to
    ``SMALL_GATE_AHEAD`` m ahead of the car start
    (:func:`_small_orange_gate`, with a note), else ``START_BEHIND`` m
    along the centre line ahead of the car start (not where the centre
    line begins, which can be under the car: its first lap would not be
    timed).
    """
    big = cones.xy[cones.class_id == CONE_BIG_ORANGE]
    if len(big) == 0:
        i = _small_orange_gate(cones, cl, closed, width, car_start, tf)
        if i is None:
            s = arc_length(cl, closed)[:len(cl)]
            i0 = int(np.argmin(np.hypot(*(cl - [car_start.x,
                                                car_start.y]).T)))
            ahead = (s - s[i0]) % s[-1] if closed else s - s[i0]
            ok = np.flatnonzero(ahead >= START_BEHIND)
            i = int(ok[np.argmin(ahead[ok])]) if ok.size else len(cl) - 1
        line = timing_line('start', cl[i], tan[i], width / 2.0 + 0.5)
        return {'start': line, 'finish': line}
    label = _labels(big, width + 2.0)
    cl_tree = cKDTree(cl)
    s = arc_length(cl, closed)
    groups = []
    for k in np.unique(label):
        at = cl_tree.query(big[label == k])[1]
        groups.append((int(cl_tree.query(big[label == k].mean(axis=0))[1]),
                       at))
    groups.sort(key=lambda g: g[0])
    first, last = groups[0][0], groups[-1][0]
    rows = _rows(s[groups[-1][1]], ROW_GAP)
    head = int(groups[-1][1].min())
    if not closed and len(groups) > 1 and len(rows) > 2 and \
            rows[-1][-1] - rows[0][0] > LONG_GROUP and head > first:
        # a braking zone in big orange: the finish is its first row
        last = head
    start = timing_line('start', cl[first], tan[first], width / 2.0 + 0.5)
    if closed or first == last:
        return {'start': start, 'finish': start}
    finish = timing_line('finish', cl[last], tan[last], width / 2.0 + 0.5)
    return {'start': start, 'finish': finish}


def _labels(points: np.ndarray, radius: float) -> np.ndarray:
    """Return a group label per point (groups: chains closer than ``radius``)."""
    label = np.arange(len(points))
    for a, b in sorted((int(p), int(q)) for p, q in
                       cKDTree(points).query_pairs(radius)):
        la, lb = label[a], label[b]
        label[label == max(la, lb)] = min(la, lb)
    return label


def _rows(arc: np.ndarray, gap: float) -> List[np.ndarray]:
    """Return arc positions (m) sorted and split where they jump by > ``gap``."""
    if arc.size == 0:
        return []
    arc = np.sort(arc)
    return np.split(arc, np.flatnonzero(np.diff(arc) > gap) + 1)


def _small_orange_gate(cones: ConeArray, cl: np.ndarray, closed: bool,
                       width: float, car_start: Pose, tf: TrackFile
                       ) -> Optional[int]:
    """
    Return the centre-line index of a start gate of small orange cones.

    Files without big orange cones (SLAM maps, exports that write every
    orange cone alike) often mark the start gate with small orange ones.
    The small orange cones within a width of the centre line and 0 to
    ``SMALL_GATE_AHEAD`` m ahead of the car start along it are cut into
    groups where their arc positions are more than ``GATE_GAP`` apart; the
    nearest group at most ``LONG_GROUP`` long with cones on both sides of
    the centre line is the gate (the centre-line point nearest its mean),
    with a note. None when there is none.
    """
    small = cones.xy[cones.class_id == CONE_ORANGE]
    if len(small) < 2:
        return None
    probe = Track('', cones, car_start, cl, closed)
    arc, lat, _d = lateral_position(
        probe, np.vstack([small, [[car_start.x, car_start.y]]]))
    ahead = arc[:-1] - arc[-1]
    if closed:
        ahead %= probe.length
    near = (ahead >= 0.0) & (ahead <= SMALL_GATE_AHEAD) & \
        (np.abs(lat[:-1]) <= width)
    for row in _rows(ahead[near], GATE_GAP):
        m = near & (ahead >= row[0]) & (ahead <= row[-1])
        if row[-1] - row[0] <= LONG_GROUP and (lat[:-1][m] > 0).any() and \
                (lat[:-1][m] < 0).any():
            tf.notes.append(
                f'{tf.path}: no big orange cones: the start line is at the '
                f'{int(m.sum())} small orange cones across the lane '
                f'{float(np.mean(row)):.1f} m ahead of the car start')
            return int(cKDTree(cl).query(small[m].mean(axis=0))[1])
    return None


def _skidpad_fit(xy: np.ndarray, cls: np.ndarray, start: Pose
                 ) -> Optional[Tuple[np.ndarray, np.ndarray]]:
    """
    Return (crossing, driving direction) when the cones form a skidpad.

    Every blue/yellow/unknown cone votes (0.25 m grid) for the centres of
    circles of the skidpad's inner and outer radii through it; the two
    best peaks 18.25 m (+- 1 m) apart are the circle centres when at
    least 60 % of those cones (and 16) stand within 0.4 m of a ring. The
    crossing is between the centres, the direction across their line
    pointing away from the car start. None otherwise.
    """
    ring = np.flatnonzero((cls == CONE_BLUE) | (cls == CONE_YELLOW)
                          | (cls == CONE_UNKNOWN))
    if not 16 <= len(ring) <= 200:
        return None
    pts = xy[ring]
    span = pts.max(axis=0) - pts.min(axis=0)
    if span.max() > 2.0 * SKIDPAD_OUTER_DIAMETER + 10.0:
        return None                         # more than two circles' size
    radii = (SKIDPAD_RADII[0], SKIDPAD_RADII[1])
    ang = np.linspace(0.0, 2 * math.pi, 96, endpoint=False)
    circ = np.column_stack([np.cos(ang), np.sin(ang)])
    votes = np.vstack([(p + r * circ) for p in pts for r in radii])
    lo = votes.min(axis=0)
    cell = 0.25
    ij = np.floor((votes - lo) / cell).astype(int)
    shape = ij.max(axis=0) + 1
    if shape[0] * shape[1] > 4_000_000:
        return None
    grid = np.zeros(shape, dtype=np.int32)
    np.add.at(grid, (ij[:, 0], ij[:, 1]), 1)
    # smooth 3x3 so a centre between cells still peaks
    pad = np.pad(grid, 1)
    sm = sum(pad[1 + di:1 + di + shape[0], 1 + dj:1 + dj + shape[1]]
             for di in (-1, 0, 1) for dj in (-1, 0, 1))
    order = np.argsort(sm, axis=None)[::-1][:400]
    peaks = np.column_stack(np.unravel_index(order, shape)) * cell + lo + \
        cell / 2.0
    first = peaks[0]
    dist = np.hypot(*(peaks - first).T)
    other = np.flatnonzero(np.abs(dist - SKIDPAD_CENTRE_DISTANCE) < 1.0)
    if other.size == 0:
        return None
    second = peaks[other[0]]
    first, second = _ring_centre(pts, first), _ring_centre(pts, second)
    d = np.minimum(np.hypot(*(pts - first).T), np.hypot(*(pts - second).T))
    on_ring = (np.abs(d - radii[0]) < 0.4) | (np.abs(d - radii[1]) < 0.4)
    if on_ring.sum() < max(16, 0.6 * len(pts)):
        return None
    crossing = (first + second) / 2.0
    axis = (second - first) / np.hypot(*(second - first))
    direction = np.array([-axis[1], axis[0]])
    origin = np.array([start.x, start.y])
    toward = crossing - origin
    if np.hypot(*toward) > 3.0:
        if float(toward @ direction) < 0.0:
            direction = -direction
    elif float(direction @ [math.cos(start.yaw), math.sin(start.yaw)]) < 0:
        direction = -direction
    return crossing, direction


def _ring_centre(pts: np.ndarray, centre: np.ndarray) -> np.ndarray:
    """Refine a skidpad circle centre: fixed-radius fit to its ring cones."""
    c = centre.astype(float).copy()
    for _ in range(200):
        rel = pts - c
        dist = np.hypot(*rel.T)
        radius = np.where(np.abs(dist - SKIDPAD_RADII[0]) <
                          np.abs(dist - SKIDPAD_RADII[1]), SKIDPAD_RADII[0],
                          SKIDPAD_RADII[1])
        near = (np.abs(dist - radius) < 0.6) & (dist > 1e-6)
        if near.sum() < 3:
            break
        new = np.mean(pts[near] - radius[near, None] * rel[near]
                      / dist[near, None], axis=0)
        done = float(np.hypot(*(new - c))) < 1e-12
        c = new
        if done:
            break
    return c


#: Skidpad ring radii (inner, outer) in metres.
SKIDPAD_RADII = (SKIDPAD_INNER_DIAMETER / 2.0, SKIDPAD_OUTER_DIAMETER / 2.0)


def _skidpad_at(name: str, cones: ConeArray, car_start: Pose,
                fit: Optional[Tuple[np.ndarray, np.ndarray]],
                tf: TrackFile) -> Track:
    """
    Return the standard skidpad centre line and gate placed on the file.

    With a fit (:func:`_skidpad_fit`) the layout's crossing is put on the
    file's and turned to its driving direction; the car starts where our
    layout starts (the route mode drives the standard route from there),
    with a note when the file says otherwise. Without one (``mission:
    skidpad`` on cones that do not form
    the circles) the layout is turned to the start heading, its crossing
    13 m ahead of the car (our own layout), with a note.
    """
    ref = skidpad_track()
    if fit is None:
        tf.notes.append(f'{tf.path}: the cones do not form the skidpad '
                        'circles: the standard layout is placed ahead of '
                        'the car start')
        heading = np.array([math.cos(car_start.yaw), math.sin(car_start.yaw)])
        off = np.array([car_start.x, car_start.y]) - \
            float(ref.car_start.x) * heading
    else:
        off, heading = fit
    rot = np.array([[heading[0], -heading[1]], [heading[1], heading[0]]])

    def place(p: np.ndarray) -> np.ndarray:
        return p @ rot.T + off
    if fit is not None:
        # the route mode drives the standard route from the standard start
        # (SKIDPAD_START_AFTER_ENTRY into the entry lane): put the car there
        x, y = place(np.array([ref.car_start.x, 0.0]))
        yaw = math.atan2(heading[1], heading[0])
        moved = math.hypot(x - car_start.x, y - car_start.y)
        if tf.car_start is not None and (
                moved > 0.5 or math.cos(car_start.yaw - yaw) < 0.99):
            tf.notes.append(f'{tf.path}: car start moved {moved:.2f} m to '
                            'the standard skidpad start (the route mode '
                            'drives the standard route from there)')
        car_start = Pose(x=float(x), y=float(y), yaw=yaw)
    lines = {k: TimingLine(v.name, place(v.a), place(v.b), rot @ v.direction)
             for k, v in ref.timing_lines.items()}
    return Track(name=name, cones=cones, car_start=car_start,
                 centerline=place(ref.centerline), closed=False,
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
