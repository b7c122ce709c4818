# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
Run reports from an MCAP recording: metrics JSON and PNG plots.

``carla-hil report FILE.mcap --out DIR`` (also written by
``carla-hil run --report DIR``) makes ``metrics.json``, ``birdseye.png``
(ground-truth cones, detected cones by colour, the driven trajectory
coloured by speed, cone hits and AEB brake events) and ``timeline.png``
(speed and target speed, steering, throttle/brake, TTC and AEB state).
"""

import argparse
import json
import math
import os
import sys
from typing import Any, Dict, List, Optional

from hil_bridge.interface import contract
from hil_bridge.interface.codecs import clouds, stamps
from hil_bridge.tools.mcap_io import iter_raw
from hil_bridge.tools.recorder import msg_class
import numpy as np

CONE_COLOURS = {0: '#444444', 1: '#1f4fff', 2: '#f2c200', 3: '#ff7f0e',
                4: '#d62728'}


def _values(status: Any) -> Dict[str, str]:
    return {kv.key: kv.value for kv in status.values}


def _float(value: Any, default: float = float('nan')) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return default


def load_run(path: str, role: str = contract.DEFAULT_ROLE) -> Dict[str, Any]:
    """Decode the topics a report needs from an MCAP file into arrays."""
    from rclpy.serialization import deserialize_message
    names = {key: contract.topic(key).resolve(role) for key in (
        'odometry', 'ground_truth_cones', 'cones', 'referee_events',
        'applied_control', 'aeb_status', 'cmd_vel', 'brake_request')}
    by_topic = {v: k for k, v in names.items()}
    odo, ctrl, cmd, aeb, brake, events, det = [], [], [], [], [], [], []
    gt = None
    counts: Dict[str, int] = {}
    for schema, channel, message in iter_raw(path):
        counts[channel.topic] = counts.get(channel.topic, 0) + 1
        key = by_topic.get(channel.topic)
        if key is None:
            continue
        msg = deserialize_message(message.data, msg_class(schema.name))
        t = stamps.sec_from_stamp(msg.header.stamp)
        if key == 'odometry':
            p, q = msg.pose.pose.position, msg.pose.pose.orientation
            yaw = math.atan2(2 * (q.w * q.z + q.x * q.y),
                             1 - 2 * (q.y * q.y + q.z * q.z))
            odo.append((t, p.x, p.y, yaw, msg.twist.twist.linear.x))
        elif key == 'applied_control':
            tw = msg.twist
            ctrl.append((t, tw.linear.x, tw.linear.y, tw.angular.z))
        elif key == 'cmd_vel':
            cmd.append((t, msg.twist.linear.x, msg.twist.angular.z))
        elif key == 'brake_request':
            brake.append((t, msg.accel.linear.x))
        elif key == 'ground_truth_cones':
            gt = clouds.cloud_to_cones(msg)
        elif key == 'cones':
            xyz, cls, _ = clouds.cloud_to_cones(msg)
            det.append((t, xyz, cls))
        elif key in ('aeb_status', 'referee_events'):
            for st in msg.status:
                vals = _values(st)
                if key == 'aeb_status':
                    aeb.append((t, vals.get('state', st.message),
                                _float(vals.get('ttc'))))
                else:
                    events.append({'t': t, 'kind': st.name,
                                   'message': st.message, **vals})
    return {'odometry': np.array(odo).reshape(-1, 5),
            'control': np.array(ctrl).reshape(-1, 4),
            'cmd_vel': np.array(cmd).reshape(-1, 3),
            'brake_request': np.array(brake).reshape(-1, 2),
            'aeb': aeb, 'events': events, 'detections': det,
            'ground_truth': gt, 'counts': counts}


def _to_map(det: List, odo: np.ndarray) -> List:
    """Transform detected cones (vehicle frame) into map via odometry."""
    out = []
    if odo.shape[0] == 0:
        return out
    for t, xyz, cls in det:
        i = int(np.clip(np.searchsorted(odo[:, 0], t), 0, len(odo) - 1))
        _, x, y, yaw, _ = odo[i]
        c, s = math.cos(yaw), math.sin(yaw)
        mx = x + c * xyz[:, 0] - s * xyz[:, 1]
        my = y + s * xyz[:, 0] + c * xyz[:, 1]
        out.append((mx, my, cls))
    return out


def metrics(run: Dict[str, Any],
            result: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
    """Return the run's summary figures."""
    odo = run['odometry']
    dist = float(np.hypot(np.diff(odo[:, 1]), np.diff(odo[:, 2])).sum()) \
        if len(odo) > 1 else 0.0
    ttcs = [ttc for _, _, ttc in run['aeb'] if math.isfinite(ttc)]
    states = [s for _, s, _ in run['aeb']]
    braking = run['brake_request']
    return {
        'sim_duration_s': float(odo[-1, 0] - odo[0, 0]) if len(odo) else 0.0,
        'distance_m': dist,
        'mean_speed_mps': float(odo[:, 4].mean()) if len(odo) else 0.0,
        'max_speed_mps': float(odo[:, 4].max()) if len(odo) else 0.0,
        'cone_messages': len(run['detections']),
        'mean_cones_per_message': float(np.mean(
            [len(c) for _, _, c in run['detections']]))
        if run['detections'] else 0.0,
        'aeb_min_ttc_s': min(ttcs) if ttcs else None,
        'aeb_states_seen': sorted(set(states)),
        'aeb_brake_requests': int((braking[:, 1] < 0).sum())
        if len(braking) else 0,
        'events': run['events'],
        'referee_result': result,
        'messages_per_topic': run['counts'],
    }


def plot_birdseye(run: Dict[str, Any], path: str) -> None:
    """Write the bird's-eye view PNG."""
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(10, 10))
    gt = run['ground_truth']
    if gt is not None and len(gt[0]):
        xyz, cls, _ = gt
        for c, colour in CONE_COLOURS.items():
            sel = cls == c
            if sel.any():
                ax.scatter(xyz[sel, 0], xyz[sel, 1], s=40, c=colour,
                           marker='^', edgecolors='k', linewidths=0.5,
                           label=f'cone {c} (truth)')
    seen = _to_map(run['detections'][::5], run['odometry'])
    if seen:
        mx = np.concatenate([m[0] for m in seen])
        my = np.concatenate([m[1] for m in seen])
        cls = np.concatenate([m[2] for m in seen])
        ax.scatter(mx, my, s=9, marker='o', alpha=0.35, linewidths=0,
                   c=[CONE_COLOURS.get(int(k), '#444444') for k in cls],
                   label='detected (fused, by class; grey = unknown)')
    odo = run['odometry']
    if len(odo):
        sc = ax.scatter(odo[:, 1], odo[:, 2], c=odo[:, 4], s=3,
                        cmap='viridis', label='trajectory')
        fig.colorbar(sc, ax=ax, label='speed (m/s)', shrink=0.6)
    for ev in run['events']:
        if 'x' in ev and 'y' in ev:
            ax.scatter(_float(ev['x']), _float(ev['y']), s=120, marker='x',
                       c='red')
            ax.annotate(ev['kind'], (_float(ev['x']), _float(ev['y'])),
                        fontsize=7, color='red')
    br = run['brake_request']
    if len(br) and len(odo):
        on = br[br[:, 1] < 0, 0]
        idx = np.clip(np.searchsorted(odo[:, 0], on), 0, len(odo) - 1)
        if len(idx):
            ax.scatter(odo[idx, 1], odo[idx, 2], s=20, c='magenta',
                       label='AEB braking')
    ax.set_aspect('equal')
    ax.set_xlabel('x (m, map)')
    ax.set_ylabel('y (m, map)')
    ax.set_title('Bird view (map frame)')
    ax.legend(loc='upper right', fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_timeline(run: Dict[str, Any], path: str) -> None:
    """Write the timeline PNG (speed, steering, pedals, TTC/AEB)."""
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(4, 1, figsize=(11, 10), sharex=True)
    odo, ctrl, cmd = run['odometry'], run['control'], run['cmd_vel']
    if len(odo):
        axes[0].plot(odo[:, 0], odo[:, 4], label='speed')
    if len(cmd):
        axes[0].plot(cmd[:, 0], cmd[:, 1], '--', label='target speed')
    axes[0].set_ylabel('m/s')
    if len(ctrl):
        axes[1].plot(ctrl[:, 0], ctrl[:, 3], label='steer (CARLA, >0 right)')
        axes[2].plot(ctrl[:, 0], ctrl[:, 1], label='throttle')
        axes[2].plot(ctrl[:, 0], ctrl[:, 2], label='brake')
    axes[1].set_ylabel('steer')
    axes[2].set_ylabel('pedal 0..1')
    if run['aeb']:
        t = np.array([a[0] for a in run['aeb']])
        ttc = np.array([min(a[2], 10.0) if math.isfinite(a[2]) else np.nan
                        for a in run['aeb']])
        axes[3].plot(t, ttc, label='TTC (s, capped 10)')
        states = sorted({a[1] for a in run['aeb']})
        level = np.array([states.index(a[1]) for a in run['aeb']])
        ax2 = axes[3].twinx()
        ax2.step(t, level, where='post', color='tab:red', label='AEB state')
        ax2.set_yticks(range(len(states)))
        ax2.set_yticklabels(states, fontsize=7)
    axes[3].set_ylabel('TTC (s)')
    axes[3].set_xlabel('sim time (s)')
    for ax in axes:
        ax.grid(alpha=0.3)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(loc='upper right', fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def write_report(mcap_path: str, out_dir: str,
                 result: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
    """Write metrics.json, birdseye.png and timeline.png; return metrics."""
    os.makedirs(out_dir, exist_ok=True)
    run = load_run(mcap_path)
    figures = metrics(run, result)
    with open(os.path.join(out_dir, 'metrics.json'), 'w',
              encoding='utf-8') as f:
        json.dump(figures, f, indent=2, default=str)
    plot_birdseye(run, os.path.join(out_dir, 'birdseye.png'))
    plot_timeline(run, os.path.join(out_dir, 'timeline.png'))
    return figures


def main(argv: Optional[List[str]] = None) -> int:
    """Entry point of ``carla-hil report``."""
    parser = argparse.ArgumentParser(prog='carla-hil report',
                                     description=__doc__.split('\n')[1])
    parser.add_argument('file')
    parser.add_argument('--out', required=True)
    args = parser.parse_args(argv)
    figures = write_report(args.file, args.out)
    short = {k: v for k, v in figures.items()
             if k not in ('events', 'messages_per_topic')}
    print(json.dumps(short, default=str))
    return 0


if __name__ == '__main__':
    sys.exit(main())
