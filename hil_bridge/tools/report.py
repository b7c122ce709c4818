# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
One-page run report from a recording: ``report.html``, PNGs, metrics.json.

``carla-hil report BAG --out DIR`` (and ``carla-hil run``, into its run
directory) writes:

* ``track.png``: ground-truth cones by colour name, the driven line
  coloured by speed, fused detections (in ``map`` through the odometry),
  cone hits and AEB braking, on axes fitted to the track (a long thin
  track gets a stretched cross axis, marked in the title) with the legend
  outside the plot;
* ``timeline.png``: speed and target speed, commanded and actual yaw rate
  with the applied steering, cross-track error to the centre line, and the
  AEB state with TTC drawn only where it is finite;
* ``detection.png``: recall of each cone source against the ground truth
  in the file, by range;
* ``metrics.json`` (numbers rounded; one sim time span from ``/clock``)
  and ``report.html`` (self-contained: the PNGs embedded) with the result,
  lap and split table, detection table, loop latency and messages per
  topic against the counts the bridge published.

The centre line is built from the ground-truth cones (midpoints of each
cone and the nearest cone of the other side, chained); recall counts a
ground-truth cone within 0.5 m of a detection, among the cones inside
the range bin and +-60 deg of the heading (occluded cones count as
misses). Loop latency is the wall time between the recorder receiving a
frame (its lidar cloud, else its ``/clock``) and the ``cmd_vel`` stamped
with it (the recorder keeps the wall receipt time as each message's
publish time).
"""

import argparse
import base64
import html
import json
import math
import os
import sys
from typing import Any, Dict, List, Optional, Sequence, Tuple

from hil_bridge.interface import contract
from hil_bridge.interface.codecs import clouds, stamps
from hil_bridge.interface.cones import CONE_NAMES
from hil_bridge.interface.frames import quaternion_yaw, se2, transform_xy
from hil_bridge.tools.bag_io import Bag, BagError, guarded, open_bag
from hil_bridge.tools.msg_definitions import stamped_first
from hil_bridge.tools.recorder import cdr_stamp_ns, msg_class
import numpy as np

#: matplotlib colour per cone class id
CONE_COLOURS = {0: '#777777', 1: '#1f4fff', 2: '#e6b800', 3: '#ff8c1a',
                4: '#b34700'}
#: recall: range bins (m), match radius (m), half field of view (rad)
RANGE_BINS = (0.0, 5.0, 10.0, 15.0, 20.0)
MATCH_RADIUS = 0.5
HALF_FOV = math.radians(60.0)
#: range error: a detection belongs to the nearest truth cone within (m)
ASSOC_RADIUS = 2.0
#: a track whose sides differ more than this is drawn with a stretched axis
MAX_ASPECT = 4.0
#: name of the run summary the runner leaves in a bag directory
RUN_FILE = 'carla_hil_run.json'
SOURCES = {'lidar': 'cones_lidar', 'vision': 'cones_vision',
           'fused': 'cones'}


def _round(value: Any, digits: int = 3) -> Any:
    """Round floats (also inside lists and dicts); NaN/inf become None."""
    if isinstance(value, float):
        # + 0.0: no "-0.0" in the JSON
        return round(value, digits) + 0.0 if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _round(v, digits) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_round(v, digits) for v in value]
    if isinstance(value, np.generic):
        return _round(value.item(), digits)
    return value


def _float(value: Any, default: float = float('nan')) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return default


def _json(text: Any) -> Any:
    """Return an event value as a number/list where it is JSON, else as is."""
    try:
        return json.loads(text) if isinstance(text, str) else text
    except ValueError:
        return text


def _values(status: Any) -> Dict[str, str]:
    return {kv.key: kv.value for kv in status.values}


def load_run(path: Any, role: str = contract.DEFAULT_ROLE) -> Dict[str, Any]:
    """
    Decode the topics a report needs from a bag into arrays.

    ``path``: a bag path or an open :class:`Bag`. A topic the report uses
    but recorded with another type than the contract's, or whose messages
    do not decode, is left out and named in ``warnings``; every topic is
    counted. ``stamps``: per topic the distinct stamps (ns) of its
    messages (header stamp, /clock's clock).
    """
    from rclpy.serialization import deserialize_message
    bag = path if isinstance(path, Bag) else open_bag(path)
    keys = ('odometry', 'ground_truth_cones', 'cones', 'cones_lidar',
            'cones_vision', 'referee_events', 'applied_control',
            'aeb_status', 'cmd_vel', 'brake_request', 'clock', 'lidar')
    by_topic = {contract.topic(k).resolve(role): k for k in keys}
    warnings: List[str] = []
    for topic, key in list(by_topic.items()):
        info = bag.topics.get(topic)
        want = contract.topic(key).msg_type
        if info is not None and info.msg_type != want:
            warnings.append(f'{topic} not used: {info.msg_type}, the report '
                            f'reads {want}')
            del by_topic[topic]
    classes = {k: msg_class(contract.topic(k).msg_type)
               for k in by_topic.values()}
    stamped = {t: stamped_first(i.msg_type) for t, i in bag.topics.items()}
    seen: Dict[str, set] = {t: set() for t in bag.topics}
    undecodable: Dict[str, int] = {}
    odo, ctrl, cmd, aeb, brake, events = [], [], [], [], [], []
    det: Dict[str, List] = {k: [] for k in SOURCES}
    clock: List[float] = []
    wall_in: Dict[str, Dict[int, float]] = {'lidar': {}, 'cmd_vel': {},
                                            'clock': {}}
    gt = None
    counts: Dict[str, int] = {}
    for message in bag.messages():
        topic = message.topic
        counts[topic] = counts.get(topic, 0) + 1
        stamp_ns = cdr_stamp_ns(message.data) if stamped.get(topic) \
            else None
        if stamp_ns is not None:
            seen.setdefault(topic, set()).add(stamp_ns)
        key = by_topic.get(topic)
        if key is None:
            continue
        if key == 'lidar':  # only its receipt time, not the cloud
            if stamp_ns is not None:
                wall_in['lidar'].setdefault(stamp_ns, message.publish_time)
            continue
        try:
            msg = deserialize_message(message.data, classes[key])
        except Exception:  # noqa: B902 - rclpy raises several types
            undecodable[topic] = undecodable.get(topic, 0) + 1
            continue
        if key == 'clock':
            clock.append(stamps.sec_from_stamp(msg.clock))
            stamp = msg.clock.sec * 10**9 + msg.clock.nanosec
            wall_in['clock'].setdefault(stamp, message.publish_time)
            continue
        t = stamps.sec_from_stamp(msg.header.stamp)
        if key == 'odometry':
            p, q = msg.pose.pose.position, msg.pose.pose.orientation
            yaw = quaternion_yaw(q)
            odo.append((t, p.x, p.y, yaw, msg.twist.twist.linear.x,
                        msg.twist.twist.angular.z))
        elif key == 'applied_control':
            tw = msg.twist
            ctrl.append((t, tw.linear.x, tw.linear.y, tw.angular.z))
        elif key == 'cmd_vel':
            cmd.append((t, msg.twist.linear.x, msg.twist.angular.z))
            stamp = msg.header.stamp.sec * 10**9 + msg.header.stamp.nanosec
            wall_in['cmd_vel'].setdefault(stamp, message.publish_time)
        elif key == 'brake_request':
            brake.append((t, msg.accel.linear.x))
        elif key == 'ground_truth_cones':
            gt = clouds.cloud_to_cones(msg)
        elif key in SOURCES.values():
            xyz, cls, _ = clouds.cloud_to_cones(msg)
            name = [k for k, v in SOURCES.items() if v == key][0]
            det[name].append((t, np.asarray(xyz), np.asarray(cls)))
        elif key == 'aeb_status':
            for st in msg.status:
                vals = _values(st)
                aeb.append((t, vals.get('state', st.message),
                            _float(vals.get('ttc'))))
        elif key == 'referee_events':
            for st in msg.status:
                vals = _values(st)
                events.append({'t': _float(vals.get('sim_time'), t),
                               'kind': st.name.split('/', 1)[-1], **vals})
    warnings.extend(f'{t}: {n} messages do not decode as '
                    f'{bag.topics[t].msg_type}: left out'
                    for t, n in undecodable.items())
    warnings.extend(w for w in bag.warnings if w not in warnings)
    odo_arr = np.array(sorted(odo)).reshape(-1, 6)
    return {'odometry': odo_arr, 'warnings': warnings, 'stamps': seen,
            'ours': bag.library.startswith('carla_hil'),
            'types': {t: i.msg_type for t, i in bag.topics.items()},
            'control': np.array(sorted(ctrl)).reshape(-1, 4),
            'cmd_vel': np.array(sorted(cmd)).reshape(-1, 3),
            'brake_request': np.array(sorted(brake)).reshape(-1, 2),
            'aeb': sorted(aeb, key=lambda a: a[0]), 'events': events,
            'detections': det, 'ground_truth': gt, 'counts': counts,
            'clock': np.array(sorted(clock)), 'wall_in': wall_in}


# ------------------------------------------------------------- geometry
def to_map(xyz: np.ndarray, pose: Sequence[float]) -> np.ndarray:
    """Return vehicle-frame points (N, >=2) in map for pose (x, y, yaw)."""
    return transform_xy(se2(pose[0], pose[1], pose[2]), xyz)[:, :2]


def _pose_at(odo: np.ndarray, t: float) -> Optional[np.ndarray]:
    if odo.shape[0] == 0:
        return None
    i = int(np.clip(np.searchsorted(odo[:, 0], t), 0, len(odo) - 1))
    return odo[i, 1:4]


def centre_line(xy: np.ndarray, cls: np.ndarray) -> List[np.ndarray]:
    """
    Return centre-line polylines (each (K, 2)) from boundary cones.

    Midpoints of every blue cone with its nearest yellow one and the
    reverse, chained by nearest neighbours; a jump longer than three
    times the median step starts a new piece. [] without both colours.
    """
    from scipy.spatial import cKDTree
    blue, yellow = xy[cls == 1], xy[cls == 2]
    if len(blue) == 0 or len(yellow) == 0:
        return []
    mids = []
    for a, b in ((blue, yellow), (yellow, blue)):
        _, idx = cKDTree(b).query(a)
        mids.append((a + b[idx]) / 2.0)
    pts = np.unique(np.round(np.vstack(mids), 3), axis=0)
    if len(pts) < 2:
        return []
    left = list(range(1, len(pts)))
    order = [0]
    while left:
        last = pts[order[-1]]
        d = np.hypot(*(pts[left] - last).T)
        order.append(left.pop(int(np.argmin(d))))
    chain = pts[order]
    steps = np.hypot(*np.diff(chain, axis=0).T)
    cut = np.flatnonzero(steps > 3.0 * max(np.median(steps), 1e-6)) + 1
    return [p for p in np.split(chain, cut) if len(p) >= 2]


def cross_track(points: np.ndarray, lines: List[np.ndarray],
                left: Optional[np.ndarray] = None) -> np.ndarray:
    """
    Return each point's distance (m) to the nearest centre-line segment.

    With ``left`` (the blue cones, (K, 2), on the left of the driving
    direction by the FS rules) the distance is signed: positive on the
    blue side of the centre line, so the sign needs no driving direction.
    NaN where the nearest place is an open end of a centre line (before
    the first or past the last cone pair: a start box, a braking zone).
    """
    if not lines or len(points) == 0:
        return np.full(len(points), np.nan)
    best = np.full(len(points), np.inf)
    foot = np.zeros((len(points), 2))
    inside = np.zeros(len(points), bool)
    for line in lines:
        a, b = line[:-1], line[1:]
        ab = b - a
        den = np.maximum((ab ** 2).sum(axis=1), 1e-12)
        for k in range(0, len(points), 2000):
            p = points[k:k + 2000, None, :]
            u_raw = ((p - a) * ab).sum(axis=2) / den
            u = np.clip(u_raw, 0.0, 1.0)
            near = a + u[..., None] * ab
            d = np.hypot(*(p - near).transpose(2, 0, 1))
            j = d.argmin(axis=1)
            rows = np.arange(len(j))
            dmin = d[rows, j]
            uj = u_raw[rows, j]
            ends = ((j == 0) & (uj < 0.0)) | ((j == len(a) - 1) & (uj > 1.0))
            sl = slice(k, k + 2000)
            better = dmin < best[sl]
            best[sl] = np.where(better, dmin, best[sl])
            foot[sl] = np.where(better[:, None], near[rows, j], foot[sl])
            inside[sl] = np.where(better, ~ends, inside[sl])
    out = np.where(inside, best, np.nan)
    if left is not None and len(left):
        from scipy.spatial import cKDTree
        _, idx = cKDTree(left).query(foot)
        side = ((points - foot) * (left[idx] - foot)).sum(axis=1)
        out = np.where(side < 0.0, -out, out)
    return out


def _centre(run: Dict[str, Any]) -> List[np.ndarray]:
    gt = run['ground_truth']
    if gt is None or not len(gt[0]):
        return []
    return centre_line(np.asarray(gt[0])[:, :2], np.asarray(gt[1]))


def _blue(run: Dict[str, Any]) -> Optional[np.ndarray]:
    gt = run['ground_truth']
    if gt is None or not len(gt[0]):
        return None
    return np.asarray(gt[0])[:, :2][np.asarray(gt[1]) == 1]


# -------------------------------------------------------------- metrics
def recall_by_range(run: Dict[str, Any], source: str,
                    every: int = 1) -> List[Dict[str, Any]]:
    """
    Return recall per range bin of one cone source against ground truth.

    Each row: bin (lo, hi m), ground-truth cones in view (summed over
    messages), matched, recall, detections and false detections (no
    ground-truth cone within MATCH_RADIUS), colour accuracy of the
    matches that carry a colour (None for a source without colours), and
    the range error of the detections (detected minus true range from the
    car, each detection against the nearest truth cone within
    ASSOC_RADIUS; binned by the true range): median absolute error and
    mean (bias, + = too far).
    """
    gt = run['ground_truth']
    msgs = run['detections'][source][::every]
    rows = []
    if gt is None or not len(gt[0]) or not msgs or not len(run['odometry']):
        return rows
    gxy, gcls = np.asarray(gt[0])[:, :2], np.asarray(gt[1])
    from scipy.spatial import cKDTree
    tally = np.zeros((len(RANGE_BINS) - 1, 6))
    errors: List[List[np.ndarray]] = [[] for _ in range(len(RANGE_BINS) - 1)]
    for t, xyz, cls in msgs:
        pose = _pose_at(run['odometry'], t)
        x, y, yaw = pose
        rel = gxy - (x, y)
        rng = np.hypot(rel[:, 0], rel[:, 1])
        bearing = np.abs(np.angle(np.exp(1j * (np.arctan2(rel[:, 1], rel[:, 0])
                                               - yaw))))
        seen = to_map(xyz, pose) if len(xyz) else np.zeros((0, 2))
        d_rng = np.hypot(xyz[:, 0], xyz[:, 1]) if len(xyz) else np.zeros(0)
        if len(seen):
            dist, idx = cKDTree(seen).query(gxy)
        else:
            dist, idx = np.full(len(gxy), np.inf), np.zeros(len(gxy), int)
        gdist, gidx = cKDTree(gxy).query(seen) if len(seen) else \
            (np.zeros(0), np.zeros(0, int))
        near = gdist <= ASSOC_RADIUS
        # range error of each detection against its truth cone (+ = too far)
        err = d_rng[near] - rng[gidx[near]]
        err_bin = np.digitize(rng[gidx[near]], RANGE_BINS) - 1
        for b in range(len(RANGE_BINS) - 1):
            lo, hi = RANGE_BINS[b], RANGE_BINS[b + 1]
            errors[b].append(err[err_bin == b])
            view = (rng >= lo) & (rng < hi) & (bearing <= HALF_FOV)
            hit = view & (dist <= MATCH_RADIUS)
            tally[b, 0] += view.sum()
            tally[b, 1] += hit.sum()
            sel = (d_rng >= lo) & (d_rng < hi)
            tally[b, 2] += sel.sum()
            tally[b, 3] += (sel & (gdist > MATCH_RADIUS)).sum()
            coloured = hit & (np.asarray(cls)[idx] != 0) if len(cls) else hit
            if coloured.any():
                tally[b, 4] += (np.asarray(cls)[idx[coloured]] ==
                                gcls[coloured]).sum()
                tally[b, 5] += coloured.sum()
    for b in range(len(RANGE_BINS) - 1):
        n_view, n_hit, n_det, n_false, n_col, n_known = tally[b]
        err = np.concatenate(errors[b]) if errors[b] else np.zeros(0)
        rows.append({'range_m': [RANGE_BINS[b], RANGE_BINS[b + 1]],
                     'cones_in_view': int(n_view), 'matched': int(n_hit),
                     'recall': n_hit / n_view if n_view else None,
                     'detections': int(n_det), 'false': int(n_false),
                     'colour_correct': n_col / n_known if n_known else None,
                     'range_error_median_m': float(np.median(np.abs(err)))
                     if len(err) else None,
                     'range_bias_m': float(err.mean()) if len(err) else None})
    return rows


def lap_table(run: Dict[str, Any], result: Optional[Dict[str, Any]],
              sectors: int = 3) -> List[Dict[str, Any]]:
    """
    Return per lap: time, total, sector (split) times by distance, cones.

    ``cones_hit``: the referee's cone hits within the lap; ``ratio``: the
    lap time over the referee's reference lap (the ideal line at the
    vehicle's limits), when the result has them.
    """
    laps = [e for e in run['events'] if e['kind'] == 'lap']
    hits = [_float(e.get('t')) for e in run['events'] if e['kind'] == 'cone_hit']
    ratios = list((result or {}).get('lap_time_ratio') or [])
    if not laps and result and result.get('lap_times'):
        # no events recorded: the referee's lap times, without splits
        laps = [{'lap': k + 1, 'lap_time': lt, 't': math.nan}
                for k, lt in enumerate(result['lap_times'])]
    odo = run['odometry']
    rows = []
    for ev in laps:
        end = _float(ev.get('t'))
        lt = _float(ev.get('lap_time'))
        row = {'lap': int(_float(ev.get('lap'), len(rows) + 1)),
               'time_s': lt, 'total_s': _float(ev.get('total_time')),
               'splits_s': [],
               'cones_hit': sum(end - lt < h <= end for h in hits)
               if math.isfinite(end) and math.isfinite(lt) else None,
               'ratio': _float(ratios[len(rows)]) if len(ratios) > len(rows)
               else None}
        if math.isfinite(end) and math.isfinite(lt) and len(odo) > 1:
            sel = (odo[:, 0] >= end - lt) & (odo[:, 0] <= end)
            seg = odo[sel]
            if len(seg) > 2:
                dist = np.concatenate([[0.0], np.cumsum(np.hypot(
                    *np.diff(seg[:, 1:3], axis=0).T))])
                marks = [np.interp(dist[-1] * k / sectors, dist, seg[:, 0])
                         for k in range(sectors + 1)]
                row['splits_s'] = list(np.diff(marks))
        rows.append(row)
    return rows


def loop_latency(run: Dict[str, Any]) -> Dict[str, Any]:
    """
    Return wall-time frame -> cmd_vel latency figures (ms).

    From the recorder's receipt of a frame's lidar cloud (or, when the
    cloud was not recorded, of its ``/clock``) to its receipt of the
    ``cmd_vel`` stamped with that frame.
    """
    start = run['wall_in']['lidar'] or run['wall_in']['clock']
    cmd = run['wall_in']['cmd_vel']
    lat = [(cmd[s] - start[s]) * 1e-6 for s in start if s in cmd]
    lat = [v for v in lat if v >= 0.0]
    if not lat:
        return {'samples': 0}
    arr = np.array(lat)
    return {'samples': len(arr), 'median_ms': float(np.median(arr)),
            'p95_ms': float(np.percentile(arr, 95)),
            'max_ms': float(arr.max())}


def drops(run: Dict[str, Any], recording: Optional[Dict[str, Any]]
          ) -> List[Dict[str, Any]]:
    """
    Return messages per topic against what was expected.

    With the runner's recording rows (the bridge's published counts) those
    are the expectation; else, in a bag of this project's recorder, a
    bridge topic is expected once per ``/clock`` frame; in other bags
    nothing is expected (their publishers' rates are not known).
    """
    if recording and recording.get('rows'):
        return [dict(r) for r in recording['rows']]
    frames = len(run['clock']) if run.get('ours', True) else 0
    bridge = {contract.topic(k).resolve() for k, row in
              contract.topics().items() if row.publisher == 'hil_bridge'
              and '{actor}' not in row.name and row.qos != 'latched'
              and k != 'referee_events'}
    rows = []
    for topic, n in sorted(run['counts'].items()):
        exp = frames if topic in bridge and frames else None
        rows.append({'topic': topic, 'published': exp, 'recorded': n,
                     'missing': None if exp is None else max(0, exp - n)})
    return rows


#: topics not published once per frame (no "recorded per frame" figure)
_ONCE = {contract.topic(k).resolve() for k in
         ('ground_truth_cones', 'referee_events')}


def metrics(run: Dict[str, Any], result: Optional[Dict[str, Any]] = None,
            recording: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
    """Return the run's summary figures (rounded)."""
    odo = run['odometry']
    clock = run['clock']
    t0 = float(clock[0]) if len(clock) else (float(odo[0, 0]) if len(odo)
                                             else 0.0)
    t1 = float(clock[-1]) if len(clock) else (float(odo[-1, 0]) if len(odo)
                                              else 0.0)
    dist = float(np.hypot(*np.diff(odo[:, 1:3], axis=0).T).sum()) \
        if len(odo) > 1 else 0.0
    cte = cross_track(odo[:, 1:3], _centre(run), _blue(run)) if len(odo) \
        else np.zeros(0)
    moving = odo[:, 4] > 0.5 if len(odo) else np.zeros(0, bool)
    cte_s = cte[moving & np.isfinite(cte)] if len(cte) else cte
    cte_m = np.abs(cte_s)
    ttcs = [ttc for _, _, ttc in run['aeb'] if math.isfinite(ttc)]
    braking = run['brake_request']
    out = {
        'sim_start_s': t0, 'sim_end_s': t1, 'sim_duration_s': t1 - t0,
        'frames': int(len(clock)),
        'distance_m': dist,
        'mean_speed_mps': float(odo[:, 4].mean()) if len(odo) else 0.0,
        'max_speed_mps': float(odo[:, 4].max()) if len(odo) else 0.0,
        'cross_track_error_m': {
            'mean': float(cte_m.mean()) if len(cte_m) else None,
            'rms': float(np.sqrt((cte_m ** 2).mean())) if len(cte_m)
            else None,
            'max': float(cte_m.max()) if len(cte_m) else None,
            'mean_signed': float(cte_s.mean()) if len(cte_s) else None},
        'laps': lap_table(run, result),
        'detection': {src: recall_by_range(run, src, every=2)
                      for src in SOURCES},
        'cone_messages': {src: len(run['detections'][src])
                          for src in SOURCES},
        'aeb_min_ttc_s': min(ttcs) if ttcs else None,
        'aeb_states_seen': sorted({s for _, s, _ in run['aeb']}),
        'aeb_brake_requests': int((braking[:, 1] < 0).sum())
        if len(braking) else 0,
        'loop_latency': loop_latency(run),
        'events': run['events'],
        'referee_result': result,
        'messages': drops(run, recording),
    }
    frames = run.get('stamps', {}).get('/clock') or set()
    for row in out['messages']:
        row['type'] = run.get('types', {}).get(row['topic'], '')
        have = run.get('stamps', {}).get(row['topic'])
        row['per_frame'] = len(have & frames) / len(frames) \
            if row.get('recorded') is not None and frames and have and \
            row['topic'] not in _ONCE else None
    out['warnings'] = list(run.get('warnings', []))
    return _round(out)


# ---------------------------------------------------------------- plots
def _plt() -> Any:
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    return plt


def _cone_label(cls: int) -> str:
    return str(CONE_NAMES.get(cls, cls)).replace('_', ' ')


def _lap_marks(run: Dict[str, Any]) -> List[Tuple[float, int]]:
    """Return (sim time s, lap number) of each completed lap."""
    out = []
    for e in run['events']:
        if e['kind'] == 'lap' and math.isfinite(_float(e.get('t'))):
            out.append((_float(e.get('t')), int(_float(e.get('lap'), len(out) + 1))))
    return out


def detected_cones(run: Dict[str, Any], source: str = 'fused'
                   ) -> Tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """
    Return where a source saw cones, against the ground truth.

    (detections in map (M, 2), their classes (M,), per truth cone whether
    a detection came within MATCH_RADIUS at least once (K,), per detection
    whether no truth cone is within MATCH_RADIUS (M,)). Detections are
    taken to ``map`` through the odometry at their stamp.
    """
    seen = []
    for t, xyz, cls in run['detections'][source]:
        pose = _pose_at(run['odometry'], t)
        if pose is not None and len(xyz):
            seen.append((to_map(xyz, pose), np.asarray(cls)))
    mxy = np.vstack([s[0] for s in seen]) if seen else np.zeros((0, 2))
    mcls = np.concatenate([s[1] for s in seen]) if seen else np.zeros(0)
    gt = run['ground_truth']
    if gt is None or not len(gt[0]):
        return mxy, mcls, np.zeros(0, bool), np.zeros(len(mxy), bool)
    from scipy.spatial import cKDTree
    gxy = np.asarray(gt[0])[:, :2]
    if not len(mxy):
        return mxy, mcls, np.zeros(len(gxy), bool), np.zeros(0, bool)
    near, _ = cKDTree(mxy).query(gxy)
    gdist, _ = cKDTree(gxy).query(mxy)
    return mxy, mcls, near <= MATCH_RADIUS, gdist > MATCH_RADIUS


def plot_track(run: Dict[str, Any], path: str) -> None:
    """
    Write the track PNG (axes fitted to the track, legend outside).

    Truth cones are triangles in their colour, filled when a fused
    detection (in ``map`` through the odometry) came within MATCH_RADIUS
    of them at least once, hollow when never; fused detections with no
    truth cone within MATCH_RADIUS are grey crosses. Without ground truth
    the detections are dots in their detected colour.
    """
    plt = _plt()
    odo, gt = run['odometry'], run['ground_truth']
    pts = [odo[:, 1:3]] if len(odo) else []
    if gt is not None and len(gt[0]):
        pts.append(np.asarray(gt[0])[:, :2])
    allp = np.vstack(pts) if pts else np.zeros((1, 2))
    lo, hi = allp.min(axis=0) - 2.0, allp.max(axis=0) + 2.0
    span = np.maximum(hi - lo, 1.0)
    ratio = float(span.max() / span.min())
    wide = span[0] >= span[1]
    # axes box (inches) in the data's aspect, the long side 11 in; a track
    # thinner than MAX_ASPECT gets its short axis stretched to be readable
    long_in = 11.0 if wide else 9.0
    short_in = long_in / min(ratio, MAX_ASPECT)
    stretch = ratio / MAX_ASPECT if ratio > MAX_ASPECT else 1.0
    box_w, box_h = (long_in, short_in) if wide else (short_in, long_in)
    fig_w, fig_h = box_w + 2.2, box_h + 2.0
    fig = plt.figure(figsize=(fig_w, fig_h))
    ax = fig.add_axes([0.9 / fig_w, 1.5 / fig_h, box_w / fig_w, box_h / fig_h])
    mxy, mcls, hit, false = detected_cones(run)
    if gt is not None and len(gt[0]):
        xyz, cls = np.asarray(gt[0]), np.asarray(gt[1])
        for c, colour in CONE_COLOURS.items():
            for found in (True, False):
                sel = (cls == c) & (hit == found)
                if not sel.any():
                    continue
                label = f'{_cone_label(c)} cone' + (
                    '' if found else ', never detected')
                ax.scatter(xyz[sel, 0], xyz[sel, 1], s=70 if c == 4 else 45,
                           marker='^', linewidths=1.3, label=label, zorder=3,
                           facecolors=colour if found else 'white',
                           edgecolors=colour)
        if false.any():
            ax.scatter(mxy[false, 0], mxy[false, 1], s=14, marker='x',
                       c='0.35', linewidths=0.8, alpha=0.6, zorder=4,
                       label=f'fused detection with no truth cone within '
                       f'{MATCH_RADIUS:g} m')
    elif len(mxy):
        ax.scatter(mxy[:, 0], mxy[:, 1], s=8, alpha=0.4, marker='o',
                   linewidths=0,
                   c=[CONE_COLOURS.get(int(k), '#777777') for k in mcls],
                   label='fused detection (its colour; grey = unknown)',
                   zorder=4)
    if len(odo):
        sc = ax.scatter(odo[:, 1], odo[:, 2], c=odo[:, 4] * 3.6, s=1.5,
                        cmap='viridis', zorder=2)
        ax.scatter([], [], s=6, color=plt.get_cmap('viridis')(0.6),
                   label='driven line (colour = speed)')
        cax = fig.add_axes([(box_w + 1.15) / fig_w, 1.5 / fig_h,
                            0.15 / fig_w, box_h / fig_h])
        fig.colorbar(sc, cax=cax, label='speed (km/h)')
        ax.scatter(odo[:1, 1], odo[:1, 2], s=120, marker='*', c='k',
                   label='start', zorder=7)
        k = min(len(odo) - 1, max(1, int(np.searchsorted(
            np.cumsum(np.hypot(*np.diff(odo[:, 1:3], axis=0).T)), 3.0))))
        ax.annotate('', xy=odo[k, 1:3], xytext=odo[0, 1:3], zorder=7,
                    arrowprops={'arrowstyle': '->', 'color': 'k', 'lw': 1.5})
    hits = [e for e in run['events'] if e['kind'] == 'cone_hit']
    if hits:
        ax.scatter([_float(e.get('x')) for e in hits],
                   [_float(e.get('y')) for e in hits], s=140, marker='x',
                   c='red', linewidths=2, label='cone hit', zorder=8)
    br = run['brake_request']
    if len(br) and len(odo):
        on = br[br[:, 1] < 0, 0]
        idx = np.clip(np.searchsorted(odo[:, 0], on), 0, len(odo) - 1)
        if len(idx):
            ax.scatter(odo[idx, 1], odo[idx, 2], s=18, c='magenta',
                       label='AEB braking', zorder=6)
    ax.set_xlim(lo[0], hi[0])
    ax.set_ylim(lo[1], hi[1])
    if stretch > 1.0:
        note = f' ({"y" if wide else "x"} axis stretched x{stretch:.1f})'
    else:
        ax.set_aspect('equal', adjustable='box')
        note = ''
    if not len(odo) and (gt is None or not len(gt[0])):
        _no_data(ax, 'no odometry and no ground-truth cones recorded')
    ax.set_xlabel('x (m, map)')
    ax.set_ylabel('y (m, map)')
    ax.set_title('Track, driven line and detections' + note)
    ax.grid(alpha=0.25)
    ax.legend(loc='upper center', bbox_to_anchor=(0.5, -0.65 / box_h - 0.02),
              ncol=4, fontsize=8, frameon=False, markerscale=1.5)
    fig.savefig(path, dpi=100, bbox_inches='tight')
    plt.close(fig)


def _no_data(ax: Any, text: str) -> None:
    """Say in an empty panel why it is empty (no meaningless y ticks)."""
    ax.text(0.5, 0.5, text, transform=ax.transAxes, ha='center',
            va='center', color='0.3')
    ax.set_yticks([])


def plot_timeline(run: Dict[str, Any], path: str) -> None:
    """Write the timeline PNG: speed, yaw rate/steer, CTE, AEB/TTC."""
    plt = _plt()
    fig, axes = plt.subplots(4, 1, figsize=(12, 10.5), sharex=True)
    odo, cmd = run['odometry'], run['cmd_vel']
    ax = axes[0]
    if len(odo):
        ax.plot(odo[:, 0], odo[:, 4] * 3.6, lw=1.0, label='speed')
    if len(cmd):
        ax.plot(cmd[:, 0], cmd[:, 1] * 3.6, '--', lw=0.8,
                label='target speed (cmd_vel)')
    if len(odo) or len(cmd):
        low = min([0.0] + [float(a[:, k].min()) * 3.6 for a, k in
                           ((odo, 4), (cmd, 1)) if len(a)])
        ax.set_ylim(bottom=low)  # from 0: a flat trace is not magnified
    else:
        _no_data(ax, 'no odometry or cmd_vel recorded')
    ax.set_ylabel('speed (km/h)')
    ax.set_title('Speed', fontsize=9, loc='left')
    _plot_yaw(run, axes[1])
    ax = axes[2]
    lines = _centre(run)
    if lines and len(odo):
        ax.plot(odo[:, 0], cross_track(odo[:, 1:3], lines, _blue(run)), lw=0.9,
                label='cross-track error (+ = towards the blue/left cones)')
        ax.axhline(0.0, color='k', lw=0.6)
    else:
        _no_data(ax, 'no odometry recorded' if lines else
                 'no blue/yellow ground-truth cones: no centre line')
    ax.set_ylabel('offset (m)')
    ax.set_title('Distance to the centre line of the truth cones', fontsize=9,
                 loc='left')
    _plot_aeb(run, axes[3])
    axes[3].set_xlabel('sim time (s)')
    marks = _lap_marks(run)
    for ax in axes:
        ax.grid(alpha=0.3)
        for t, _lap in marks:
            ax.axvline(t, color='0.4', lw=0.6, ls=':')
        if ax.get_legend_handles_labels()[0] and ax.get_legend() is None:
            ax.legend(loc='upper left' if ax is axes[3] else 'best',
                      fontsize=7)
    top = axes[0]
    for t, lap in marks:
        top.annotate(f'L{lap}', (t, 1.0), xycoords=('data', 'axes fraction'),
                     xytext=(0, 2), textcoords='offset points', ha='center',
                     va='bottom', fontsize=7, color='0.3')
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def _plot_yaw(run: Dict[str, Any], ax: Any) -> None:
    """
    Commanded and actual yaw rate; the applied steering on a right axis.

    CARLA's steer is positive to the right; it is drawn negated (+ = left,
    as the yaw rate) and both axes are symmetric about 0, so the zero
    lines coincide and a left turn goes up on both.
    """
    odo, ctrl, cmd = run['odometry'], run['control'], run['cmd_vel']
    if len(cmd):
        ax.plot(cmd[:, 0], cmd[:, 2], lw=0.8, label='commanded yaw rate')
    if len(odo):
        ax.plot(odo[:, 0], odo[:, 5], lw=0.8, label='actual yaw rate')
    ax.set_ylabel('yaw rate (rad/s, + = left)')
    title = 'Yaw rate'
    if not len(cmd) and not len(odo):
        _no_data(ax, 'no odometry or cmd_vel recorded')
    else:
        peak = max(float(np.abs(a[:, k]).max()) for a, k in
                   ((cmd, 2), (odo, 5)) if len(a))
        ax.set_ylim(-1.1 * peak - 0.01, 1.1 * peak + 0.01)
    if len(ctrl):
        title += ' (left axis) and applied steering (right axis)'
        ax2 = ax.twinx()
        line = ax2.plot(ctrl[:, 0], -ctrl[:, 3], color='tab:gray', lw=0.6,
                        label='applied steering, + = left (CARLA steer '
                        'negated)')
        peak = float(np.abs(ctrl[:, 3]).max())
        ax2.set_ylim(-1.1 * peak - 0.01, 1.1 * peak + 0.01)
        ax2.set_ylabel('steering (-1..1, + = left)')
        handles, labels = ax.get_legend_handles_labels()
        ax.legend(handles + line, labels + [line[0].get_label()],
                  loc='best', fontsize=7)
    ax.set_title(title, fontsize=9, loc='left')


#: background colour per AEB state (aeb_control.staging.Stage, lower case)
AEB_COLOURS = {'idle': '#e8f4e8', 'warning': '#fff1c2', 'partial': '#ffd9a8',
               'full': '#ffb3b3', 'hold': '#f0c8f0', 'override': '#d6e4ff',
               'stale': '#dddddd'}


def _plot_aeb(run: Dict[str, Any], ax: Any) -> None:
    """AEB state as coloured bands, TTC as points only where finite."""
    ax.set_title('AEB: state (bands) and time to collision', fontsize=9,
                 loc='left')
    ax.set_ylabel('TTC (s)')
    if not run['aeb']:
        _no_data(ax, 'no AEB status recorded')
        return
    t = np.array([a[0] for a in run['aeb']])
    ttc = np.array([a[2] for a in run['aeb']])
    states = [a[1] for a in run['aeb']]
    start = 0
    seen = set()
    for k in range(1, len(states) + 1):
        if k == len(states) or states[k] != states[start]:
            end = t[k] if k < len(states) else t[-1]
            name = states[start]
            ax.axvspan(t[start], end, color=AEB_COLOURS.get(name, '#eeeeee'),
                       lw=0, label=None if name in seen else f'state {name}')
            seen.add(name)
            start = k
    finite = np.isfinite(ttc)
    if finite.any():
        ax.plot(t[finite], ttc[finite], '.', ms=3, color='tab:red',
                label='TTC (where finite)')
        ax.set_ylim(0.0, min(10.0, float(ttc[finite].max()) * 1.1 + 0.1))
    else:
        ax.set_ylim(0.0, 10.0)
        ax.text(0.5, 0.5, 'TTC infinite throughout: nothing closing in '
                'the corridor', transform=ax.transAxes, ha='center',
                va='center')


def detection_gap(run: Dict[str, Any]) -> str:
    """Return why detection cannot be scored ('' when it can)."""
    gt = run['ground_truth']
    if gt is None or not len(gt[0]):
        return 'no ground-truth cones recorded'
    if not any(run['detections'].values()):
        return 'no cone detections recorded'
    if not len(run['odometry']):
        return 'no odometry recorded'
    return ''


def plot_detection(figures: Dict[str, Any], path: str, gap: str = '') -> None:
    """
    Write the detection PNG: recall and range error by true range.

    ``gap``: why there is nothing to score, said in the empty panels.
    """
    plt = _plt()
    fig, (ax, ax_err) = plt.subplots(1, 2, figsize=(9, 3.4))
    styles = {'lidar': ('s-', 8), 'vision': ('^-', 7), 'fused': ('o--', 5)}
    for src, rows in figures['detection'].items():
        style, size = styles.get(src, ('o-', 6))
        xs = [sum(r['range_m']) / 2 for r in rows if r['recall'] is not None]
        ys = [100 * r['recall'] for r in rows if r['recall'] is not None]
        if xs:
            ax.plot(xs, ys, style, ms=size, label=src)
        xs = [sum(r['range_m']) / 2 for r in rows
              if r.get('range_error_median_m') is not None]
        ys = [100 * r['range_error_median_m'] for r in rows
              if r.get('range_error_median_m') is not None]
        if xs:
            ax_err.plot(xs, ys, style, ms=size, label=src)
    ax.set_xlabel('true range (m), bin centres')
    ax.set_ylabel('recall (%)')
    ax.set_ylim(0, 105)
    ax.set_title(f'Recall (truth within +-{math.degrees(HALF_FOV):.0f} deg, '
                 f'match {MATCH_RADIUS} m)', fontsize=9)
    ax_err.set_xlabel('true range (m), bin centres')
    ax_err.set_ylabel('median |range error| (cm)')
    ax_err.set_ylim(bottom=0)
    ax_err.set_title(f'Range error (nearest truth within {ASSOC_RADIUS:g} m)',
                     fontsize=9)
    for a in (ax, ax_err):
        a.set_xlim(0.0, RANGE_BINS[-1])
        a.grid(alpha=0.3)
        if a.get_legend_handles_labels()[0]:
            a.legend(fontsize=8)
        else:
            _no_data(a, gap or 'nothing to score')
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


# ----------------------------------------------------------------- html
def _cell(value: Any, fmt: str = '{:.2f}') -> str:
    if value is None:
        return '-'
    if isinstance(value, float):
        return fmt.format(value)
    return html.escape(str(value))


def _table(head: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    out = ['<table>']
    if any(head):
        out.append('<tr>' + ''.join(f'<th>{html.escape(h)}</th>'
                                    for h in head) + '</tr>')
    for row in rows:
        out.append('<tr>' + ''.join(f'<td>{c}</td>' for c in row) + '</tr>')
    return '\n'.join(out) + '</table>'


def _img(path: str) -> str:
    with open(path, 'rb') as f:
        data = base64.b64encode(f.read()).decode('ascii')
    return (f'<img alt="{html.escape(os.path.basename(path))}" '
            f'src="data:image/png;base64,{data}">')


def _recording_line(rows: Sequence[Dict[str, Any]]) -> str:
    """Return 'N of M recorded, K missing' over the bridge's topics."""
    rows = [r for r in rows if r.get('published') is not None and
            r.get('recorded') is not None]
    if not rows:
        return '-'
    pub = sum(int(r['published']) for r in rows)
    missing = sum(int(r.get('missing') or 0) for r in rows)
    return f'{pub - missing} of {pub} messages recorded, {missing} missing'


def render_html(figures: Dict[str, Any], images: Dict[str, str],
                source: str) -> str:
    """Return the one-page report."""
    res = figures.get('referee_result') or {}
    cte = figures['cross_track_error_m']
    lat = figures['loop_latency']
    referee = [
        ('mission', f'{res.get("mission", "-")} ({res.get("scenario", "-")})'),
        ('status', f'{res.get("status", "-")}' +
         (f' ({res["reason"]})' if res.get('reason') else '')),
        ('laps', f'{res.get("laps", "-")} of {res.get("laps_required", "-")}'),
        ('best lap', _cell(res.get('best_lap'), '{:.2f} s')),
        ('cones hit', _cell(res.get('cones_hit'))),
        ('off course', _cell(res.get('off_courses'))),
        ('penalties', _cell(res.get('penalty_time'), '{:.1f} s')),
    ] if res else [('referee', 'no result in the bag (not a carla_hil run)')]
    latency = (f'median {_cell(lat.get("median_ms"), "{:.1f}")} ms, p95 '
               f'{_cell(lat.get("p95_ms"), "{:.1f}")} ms, max '
               f'{_cell(lat.get("max_ms"), "{:.1f}")} ms ({lat["samples"]} '
               'frames)') if lat.get('samples') else \
        '- (no cmd_vel stamped with a recorded frame)'
    summary = referee + [
        ('sim time', f'{_cell(figures["sim_start_s"])} - '
                     f'{_cell(figures["sim_end_s"])} s '
                     f'({figures["frames"]} frames)'),
        ('distance', _cell(figures['distance_m'], '{:.1f} m')),
        ('speed mean / max', f'{_cell(figures["mean_speed_mps"] * 3.6, "{:.1f}")}'
                             f' / {_cell(figures["max_speed_mps"] * 3.6, "{:.1f}")}'
                             ' km/h'),
        ('cross-track error mean / RMS / max',
         f'{_cell(cte["mean"])} / {_cell(cte["rms"])} / {_cell(cte["max"])} m'),
        ('AEB', f'states {", ".join(figures["aeb_states_seen"]) or "-"}; '
                f'min TTC {_cell(figures["aeb_min_ttc_s"], "{:.2f} s")}; '
                f'{figures["aeb_brake_requests"]} brake requests'),
        ('recording (bridge topics)', _recording_line(figures['messages'])),
        ('loop latency frame -> cmd_vel (wall)', latency),
    ]
    laps = _table(['lap', 'time (s)', 'total (s)', 'splits (s)',
                   'to reference', 'cones hit'], [
        (r['lap'], _cell(r['time_s']), _cell(r['total_s']),
         ' / '.join(_cell(s) for s in r['splits_s']) or '-',
         _cell(r.get('ratio'), 'x{:.2f}'), _cell(r.get('cones_hit')))
        for r in figures['laps']]) if figures['laps'] else \
        '<p>no lap completed</p>'
    det_rows = []
    for src, rows in figures['detection'].items():
        for r in rows:
            det_rows.append((src, f'{r["range_m"][0]:g}-{r["range_m"][1]:g}',
                             r['cones_in_view'], r['matched'],
                             _cell(None if r['recall'] is None
                                   else 100 * r['recall'], '{:.1f} %'),
                             r['detections'], r['false'],
                             _cell(None if r['colour_correct'] is None
                                   else 100 * r['colour_correct'],
                                   '{:.1f} %'),
                             _cell(r.get('range_error_median_m'), '{:.3f}'),
                             _cell(r.get('range_bias_m'), '{:+.3f}')))
    det = _table(['source', 'range (m)', 'truth in view', 'matched', 'recall',
                  'detections', 'false', 'colour ok', 'range error (m)',
                  'bias (m)'], det_rows) \
        if det_rows else '<p>no detections or no ground truth recorded</p>'
    msg_rows = [(html.escape(r['topic']), html.escape(r.get('type') or '-'),
                 _cell(r.get('published')),
                 'excluded' if r.get('recorded') is None and
                 r.get('published') is not None else _cell(r.get('recorded')),
                 _cell(r.get('missing')),
                 _cell(None if r.get('per_frame') is None
                       else 100 * r['per_frame'], '{:.1f} %'))
                for r in figures['messages']]
    msgs = _table(['topic', 'type', 'published (bridge)', 'recorded',
                   'missing', 'frames covered'], msg_rows)
    notes = ''.join(f'<li>{html.escape(w)}</li>'
                    for w in figures.get('warnings') or [])
    notes = f'<h3>Warnings</h3><ul>{notes}</ul>' if notes else ''
    style = ('body{font-family:sans-serif;max-width:1250px;margin:auto;'
             'font-size:13px}table{border-collapse:collapse;margin:6px 0}'
             'td,th{border:1px solid #ccc;padding:2px 6px;text-align:right}'
             'th{background:#eee}td:first-child{text-align:left}'
             'img{max-width:100%}.cols{display:flex;gap:16px;'
             'flex-wrap:wrap}.cols>div{flex:1;min-width:380px}')
    return f"""<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>carla_hil run report</title>
<style>{style}</style></head><body>
<h2>carla_hil run report: {html.escape(str(res.get("mission") or
                                          os.path.basename(
                                              os.path.normpath(source))))}</h2>
<p>source: {html.escape(source)}</p>
{notes}
<div class="cols"><div><h3>Result</h3>
{_table(['', ''], summary)}
<h3>Laps and splits (thirds of the lap by distance)</h3>
{laps}</div><div>
<h3>Detection against ground truth</h3>
{_img(images['detection'])}
{det}</div></div>
{_img(images['track'])}
{_img(images['timeline'])}
<h3>Messages per topic</h3>
<p>missing = what the bridge published minus what is in the bag; frames
covered = share of the {figures["frames"]} simulator frames (/clock) with a
message stamped with that frame: 100 % for a node that answers every
frame.</p>
{msgs}
</body></html>
"""


def write_report(bag: str, out_dir: str,
                 result: Optional[Dict[str, Any]] = None,
                 recording: Optional[Dict[str, Any]] = None,
                 role: Optional[str] = None,
                 warn: Optional[Any] = None) -> str:
    """
    Write the report files into ``out_dir``; return report.html's path.

    Any rosbag2 bag (:mod:`hil_bridge.tools.bag_io`); raises
    :class:`BagError` for one that cannot be read or holds no message.
    ``role``: the vehicle role (default: ego_vehicle, or the only one in
    the topic names); ``warn(text)`` is called with each warning (topics
    the report cannot use, faults of the bag), which the page lists too.
    """
    opened = open_bag(bag)
    if not opened.topics or opened.message_count == 0:
        raise BagError(f'{bag}: the bag holds no messages')
    role, note = opened.role(contract.DEFAULT_ROLE, role)
    os.makedirs(out_dir, exist_ok=True)
    if result is None or recording is None:
        saved = _saved_run(bag)
        result = result if result is not None else saved.get('result')
        recording = recording if recording is not None else \
            saved.get('recording')
    run = load_run(opened, role)
    opened.close()
    if note:
        run['warnings'].insert(0, note)
    if not len(run['odometry']):
        others = [r for r in opened.roles() if r != role]
        run['warnings'].append(
            f'no {contract.topic("odometry").resolve(role)} '
            '(nav_msgs/msg/Odometry): no driven line, speed or laps' +
            (f' (other roles in the bag: {", ".join(others)}; --role to '
             'choose)' if others else ''))
    for text in run['warnings']:
        if warn is not None:
            warn(text)
    if result is None:  # no runner summary: the referee's mission end
        ends = [e for e in run['events'] if e['kind'] == 'mission_end']
        if ends:
            result = {k: _json(v) for k, v in ends[-1].items()
                      if k not in ('t', 'kind')}
            result['cones_hit'] = sum(e['kind'] == 'cone_hit'
                                      for e in run['events'])
    figures = metrics(run, result, recording)
    with open(os.path.join(out_dir, 'metrics.json'), 'w',
              encoding='utf-8') as f:
        json.dump(figures, f, indent=2, default=str)
    images = {name: os.path.join(out_dir, f'{name}.png')
              for name in ('track', 'timeline', 'detection')}
    plot_track(run, images['track'])
    plot_timeline(run, images['timeline'])
    plot_detection(figures, images['detection'], detection_gap(run))
    path = os.path.join(out_dir, 'report.html')
    with open(path, 'w', encoding='utf-8') as f:
        f.write(render_html(figures, images, bag))
    return path


def _saved_run(bag: str) -> Dict[str, Any]:
    """Return the runner's summary saved in (or beside) a bag, or {}."""
    for path in (os.path.join(bag, RUN_FILE),
                 os.path.join(os.path.dirname(os.path.abspath(bag)),
                              'result.json')):
        if os.path.isfile(path):
            try:
                with open(path, encoding='utf-8') as f:
                    data = json.load(f)
            except ValueError:
                continue
            recs = data.get('recordings') or {}
            rec = next((v for k, v in recs.items() if os.path.abspath(k) ==
                        os.path.abspath(bag)), None)
            if rec is None and path.startswith(os.path.join(bag, '')) and \
                    len(recs) == 1:
                rec = next(iter(recs.values()))  # the bag was moved
            return {'result': data.get('result'), 'recording': rec}
    return {}


def main(argv: Optional[List[str]] = None) -> int:
    """Entry point of ``carla-hil report``."""
    parser = argparse.ArgumentParser(prog='carla-hil report',
                                     description=__doc__.split('\n')[1])
    parser.add_argument('bag', help='bag directory, or one .mcap or .db3 '
                        'file')
    parser.add_argument('--out', required=True, help='output directory')
    parser.add_argument('--role', default=None,
                        help='vehicle role (default: ego_vehicle, or the '
                        'only one in the topic names of the bag)')
    args = parser.parse_args(argv)

    def warn(text: str) -> None:
        print(f'[report] WARNING: {text}', file=sys.stderr, flush=True)

    def work() -> int:
        path = write_report(args.bag, args.out, role=args.role, warn=warn)
        print(f'[report] {path}')
        return 0
    return guarded('report', args.bag, work)


if __name__ == '__main__':
    sys.exit(main())
