# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
Replay a recording through the planner's functional core (no DDS).

``python -m path_planning.tools.replay BAG [--set PARAM=VALUE ...]
[--plot PNG --at T [--window S]]``

Reads the cone clouds the planner node got (``/perception/cones``), the
odometry and the commands it sent (``cmd_vel``) from a recording
(``carla-hil run --out`` keeps one in ``RUN_DIR/bag``), builds the
planner as the node does (``config/cone_drive_planner.yaml`` plus
``--set`` overrides; :func:`build_planner`) and plans every cloud with
the odometry stamped nearest to it, as the node does in lockstep. Prints
how far the replayed commands are from the recorded ones (the same
parameters give the same commands: the node is this core) and, with
``--set``, what a parameter change would have commanded on the same
inputs. ``--plot`` draws the map around the pose at sim time ``T``: the
ground-truth cones, the cones seen during the ``--window`` seconds
before ``T`` (moved to ``map`` with their odometry), the lane the
boundary walk found and the planned path at ``T``.

Frames: clouds in the vehicle frame (REP-103), poses in ``map``; SI units.
"""

import argparse
import bisect
from dataclasses import dataclass, field
import math
import sys
from typing import Any, Dict, List, Optional, Sequence, Tuple

from hil_bridge.interface.config import node_params
from hil_bridge.interface.params import coerce_text
from hil_bridge.interface.vehicle_profile import load_vehicle_profile
import numpy as np
from path_planning.planner import Planner, PlannerConfig, PlanOutput
from path_planning.race_planner import race_config_from_mapping, RacePlanner
import yaml

NODE = 'cone_drive_planner'


@dataclass
class Recording:
    """The planner's inputs and outputs read from one recording (sim s)."""

    #: (stamp, (x, y, yaw), speed m/s, yaw rate rad/s), by stamp
    odometry: List[Tuple[float, Tuple[float, float, float], float, float]] = \
        field(default_factory=list)
    #: (stamp, xyz (N, 3), class_id (N,)) in arrival order, first copy only
    clouds: List[Tuple[float, np.ndarray, np.ndarray]] = field(default_factory=list)
    #: stamp -> (speed m/s, yaw rate rad/s) of the first command of that stamp
    commands: Dict[float, Tuple[float, float]] = field(default_factory=dict)
    #: ground-truth cones (N, 2) in map and their classes, if recorded
    truth: Optional[Tuple[np.ndarray, np.ndarray]] = None


def _stamp(header: Any) -> float:
    """Return a header's stamp (s), rounded to the microsecond (a dict key)."""
    from hil_bridge.interface.codecs.stamps import sec_from_stamp
    return round(sec_from_stamp(header.stamp), 6)


def read_recording(bag: str, cones_topic: str = '/perception/cones') -> Recording:
    """Read a recording's cone clouds, odometry, commands and ground truth."""
    from geometry_msgs.msg import TwistStamped
    from hil_bridge.interface.codecs import clouds
    from hil_bridge.interface.frames import quaternion_yaw
    from hil_bridge.tools.mcap_io import iter_raw
    from nav_msgs.msg import Odometry
    from rclpy.serialization import deserialize_message
    from sensor_msgs.msg import PointCloud2
    rec = Recording()
    seen = set()
    for _schema, channel, message in iter_raw(bag):
        topic = channel.topic
        if topic == cones_topic:
            msg = deserialize_message(message.data, PointCloud2)
            t = _stamp(msg.header)
            if t in seen:
                continue                 # a frame re-sent: planned once
            seen.add(t)
            xyz, cls, _conf = clouds.cloud_to_cones(msg)
            rec.clouds.append((t, xyz, cls))
        elif topic.endswith('/odometry') and topic.count('/') == 3:
            msg = deserialize_message(message.data, Odometry)
            q = msg.pose.pose.orientation
            pose = (msg.pose.pose.position.x, msg.pose.pose.position.y, quaternion_yaw(q))
            rec.odometry.append((_stamp(msg.header), pose, msg.twist.twist.linear.x,
                                 msg.twist.twist.angular.z))
        elif topic.endswith('/cmd_vel'):
            msg = deserialize_message(message.data, TwistStamped)
            rec.commands.setdefault(_stamp(msg.header),
                                    (msg.twist.linear.x, msg.twist.angular.z))
        elif topic == '/carla/ground_truth/cones':
            msg = deserialize_message(message.data, PointCloud2)
            xyz, cls, _conf = clouds.cloud_to_cones(msg)
            rec.truth = (xyz[:, :2], cls)
    rec.odometry.sort(key=lambda o: o[0])
    return rec


def build_planner(overrides: Optional[Dict[str, str]] = None) -> Any:
    """Return the planner the node builds from its YAML (and ``overrides``)."""
    values = dict(node_params(NODE))
    for key, text in (overrides or {}).items():
        if key not in values:
            raise SystemExit(f'--set {key}: not a parameter of {NODE}')
        values[key] = yaml.safe_load(coerce_text(key, values[key], text))
    profile = load_vehicle_profile(str(values['vehicle_profile']))
    config = PlannerConfig.from_mapping(values, profile)
    race = race_config_from_mapping(values, profile)
    lap1 = Planner(config)
    return RacePlanner(lap1, race, profile) if race.enabled else lap1


@dataclass
class Replayed:
    """One planned cycle: stamp, pose used, the output, the recorded command."""

    t: float
    pose: Tuple[float, float, float]
    out: PlanOutput
    recorded: Optional[Tuple[float, float]]


def replay(rec: Recording, planner: Any) -> List[Replayed]:
    """Plan every recorded cloud with the odometry stamped nearest to it."""
    stamps = [o[0] for o in rec.odometry]
    rows = []
    for t, xyz, cls in rec.clouds:
        if not stamps:
            break
        i = bisect.bisect_left(stamps, t)
        near = min((j for j in (i - 1, i) if 0 <= j < len(stamps)),
                   key=lambda j: abs(stamps[j] - t))
        _s, pose, speed, yaw_rate = rec.odometry[near]
        extra = {'pose': pose} if isinstance(planner, RacePlanner) or \
            getattr(planner, 'uses_pose', False) else {}
        out = planner.plan(t, xyz, cls, speed, yaw_rate, **extra)
        rows.append(Replayed(t, pose, out, rec.commands.get(t)))
    return rows


def compare(rows: Sequence[Replayed]) -> Dict[str, Any]:
    """Return how far the replayed commands are from the recorded ones."""
    both = [r for r in rows if r.recorded is not None]
    dv = [abs(r.out.speed - r.recorded[0]) for r in both]
    dw = [abs(r.out.yaw_rate - r.recorded[1]) for r in both]
    differ = [r.t for r, a, b in zip(both, dv, dw) if a > 1e-9 or b > 1e-9]
    return {'cycles': len(rows), 'compared': len(both), 'differ': len(differ),
            'first_difference': differ[0] if differ else None,
            'max_speed_diff': max(dv, default=0.0),
            'max_yaw_rate_diff': max(dw, default=0.0)}


def plot(rec: Recording, rows: Sequence[Replayed], at: float, window: float,
         path: str) -> None:
    """Draw the map around the pose at ``at`` (see the module docstring)."""
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    from hil_bridge.interface.frames import se2, transform_xy
    row = min(rows, key=lambda r: abs(r.t - at))
    x, y, yaw = row.pose
    fig, ax = plt.subplots(figsize=(10, 10))
    colours = {0: 'grey', 1: 'tab:blue', 2: 'gold', 3: 'orange', 4: 'red'}
    if rec.truth is not None:
        xy, cls = rec.truth
        for k, c in colours.items():
            m = cls == k
            ax.scatter(xy[m, 0], xy[m, 1], s=40, c=c, marker='^', edgecolors='k',
                       linewidths=0.3, label=f'truth {k}' if m.any() else None)
    stamps = {r.t: r.pose for r in rows}
    seen = [transform_xy(se2(*stamps[t]), xyz[:, :2]) for t, xyz, _c in rec.clouds
            if at - window <= t <= at and t in stamps and len(xyz)]
    if seen:
        pts = np.vstack(seen)
        ax.scatter(pts[:, 0], pts[:, 1], s=4, c='k', alpha=0.3, label='cones seen')
    car = np.array([r.pose[:2] for r in rows])
    ax.plot(car[:, 0], car[:, 1], '-', c='tab:green', lw=1, label='car')
    if row.out.path is not None and len(row.out.path):
        p = transform_xy(se2(x, y, yaw), np.asarray(row.out.path, dtype=float))
        ax.plot(p[:, 0], p[:, 1], '-', c='tab:red', lw=2,
                label=f'path at t={row.t:.2f} ({row.out.mode}, {row.out.reason})')
    ax.plot([x], [y], 'o', c='tab:red', ms=8)
    ax.set_xlim(x - 25, x + 25)
    ax.set_ylim(y - 25, y + 25)
    ax.set_aspect('equal')
    ax.grid(True, alpha=0.3)
    ax.legend(loc='upper right', fontsize=8)
    ax.set_title(f'replay at t={row.t:.2f} s: pose ({x:.1f}, {y:.1f}, '
                 f'{math.degrees(yaw):.0f} deg), speed cmd {row.out.speed:.2f} m/s')
    fig.savefig(path, dpi=90)
    plt.close(fig)


def main(argv: Optional[List[str]] = None) -> int:
    """Entry point; exit 0, 2 on a bad argument or recording."""
    parser = argparse.ArgumentParser(prog='python -m path_planning.tools.replay',
                                     description=__doc__.split('\n\n')[1])
    parser.add_argument('bag', help='recording directory or .mcap file')
    parser.add_argument('--set', action='append', default=[], metavar='PARAM=VALUE',
                        help=f'override a parameter of {NODE}')
    parser.add_argument('--cones', default='/perception/cones', help='cone topic')
    parser.add_argument('--plot', default='', help='PNG to draw')
    parser.add_argument('--at', type=float, default=0.0, help='sim time of the plot (s)')
    parser.add_argument('--window', type=float, default=2.0,
                        help='seconds of cones drawn before --at')
    args = parser.parse_args(argv)
    sets = {}
    for item in args.set:
        key, sep, value = item.partition('=')
        if not sep:
            print(f'replay: --set {item!r}: expected PARAM=VALUE', file=sys.stderr)
            return 2
        sets[key] = value
    try:
        rec = read_recording(args.bag, args.cones)
        planner = build_planner(sets)
    except (OSError, ValueError) as err:
        print(f'replay: {args.bag}: {err}', file=sys.stderr)
        return 2
    except SystemExit as err:
        print(f'replay: {err}', file=sys.stderr)
        return 2
    if not rec.clouds or not rec.odometry:
        print(f'replay: {args.bag}: no {args.cones} clouds or no odometry recorded',
              file=sys.stderr)
        return 2
    rows = replay(rec, planner)
    stats = compare(rows)
    print(f'replayed {stats["cycles"]} cycles, {stats["compared"]} with a recorded '
          f'command: {stats["differ"]} differ (first at '
          f'{stats["first_difference"]}), largest difference '
          f'{stats["max_speed_diff"]:.3g} m/s, {stats["max_yaw_rate_diff"]:.3g} rad/s')
    if isinstance(planner, RacePlanner):
        for event in planner.drain_events():
            print(f'  {event}')
    if args.plot:
        plot(rec, rows, args.at, args.window, args.plot)
        print(f'wrote {args.plot}')
    return 0


if __name__ == '__main__':
    sys.exit(main())
