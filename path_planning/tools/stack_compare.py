# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
Compare the in-process lidar loop with a full-stack recording, frame by frame.

``python -m path_planning.tools.stack_compare BAG --track-seed K
[--scenario track_sweep]``

Drives the scenario (with the track seed the full-stack run used) with
:func:`path_planning.tools.closed_loop.run_lap` ``perception='lidar'`` and
the planner the node builds from its YAML
(:func:`path_planning.tools.replay.build_planner`), records what the
planner got and sent on every frame, and compares it with the recording
(``carla-hil run --out`` keeps one in ``RUN_DIR/bag``; the track_sweep
suite's runs have theirs in ``RUN_DIR/bag``): the odometry pose and speed,
the cone cloud (``/perception/cones``) and the command (``cmd_vel``) of
each stamp. Prints the largest differences and the first frame where each
differs (none: the two runs are the same), the stamps the recording lacks, the referee
events of the in-process run and, when the run directory has one, the
full stack's result.

Frames: clouds in the vehicle frame (REP-103), poses in ``map``; SI units.
"""

import argparse
from dataclasses import dataclass, field
import json
import os
import sys
from typing import Any, Dict, List, Optional, Tuple

from hil_bridge.bridge.scenario import load_scenario
import numpy as np
from path_planning.planner import PlanOutput
from path_planning.tools.closed_loop import default_config, LapResult, run_lap
from path_planning.tools.replay import build_planner, read_recording, Recording

#: differences up to these count as none: poses and commands (float64 on
#: both sides), cone positions (float32 on the wire)
EXACT = 1e-9
CONE_EXACT = 1e-6


class _Tap:
    """Passes every cycle to the node's planner and keeps its inputs and output."""

    uses_pose = True

    def __init__(self, planner: Any) -> None:
        self.planner = planner
        #: (stamp, cones (N, 3), pose, speed, yaw rate, command speed, command yaw rate)
        self.cycles: List[Tuple[float, np.ndarray, Any, Any, Any, float, float]] = []

    def plan(self, t: float, xyz: Any, cls: Any, speed: Optional[float] = None,
             yaw_rate: Optional[float] = None, pose: Any = None) -> PlanOutput:
        out = self.planner.plan(t, xyz, cls, speed, yaw_rate, pose=pose)
        self.cycles.append((round(t, 6), np.asarray(xyz), pose, speed, yaw_rate,
                            out.speed, out.yaw_rate))
        return out


@dataclass
class Comparison:
    """
    How the in-process cycles compare with a recording.

    ``first``: per quantity (pose, speed, cones, cmd) the first stamp (s)
    that differs by more than :data:`EXACT` (cones :data:`CONE_EXACT`) and
    what differs; ``largest``: the largest difference of each quantity over
    the frames compared; ``missing``: the stamps the recording lacks (the
    odometry, the cones or the command of that frame was not recorded: a
    lockstep timeout, a frame published before the recorder matched);
    ``cycles``: the in-process planning cycles.
    """

    first: Dict[str, Tuple[float, str]] = field(default_factory=dict)
    largest: Dict[str, float] = field(default_factory=dict)
    missing: List[float] = field(default_factory=list)
    cycles: int = 0


def compare_cycles(rec: Recording, cycles: List[Tuple]) -> Comparison:
    """Compare the cycles of a :class:`_Tap` with the recording."""
    odometry = {o[0]: o for o in rec.odometry}
    clouds = {t: xyz for t, xyz, _cls in rec.clouds}
    out = Comparison(largest={'pose': 0.0, 'speed': 0.0, 'cones': 0.0, 'cmd': 0.0},
                     cycles=len(cycles))

    def note(key: str, diff: float, t: float, what: str) -> None:
        out.largest[key] = max(out.largest[key], diff)
        limit = CONE_EXACT if key == 'cones' else EXACT
        if diff > limit and key not in out.first:
            out.first[key] = (t, what)
    for t, xyz, pose, speed, yaw_rate, v_cmd, w_cmd in cycles:
        if t not in odometry or t not in clouds or t not in rec.commands:
            out.missing.append(t)
            continue
        _s, r_pose, r_speed, r_yaw_rate = odometry[t]
        d = max(abs(a - b) for a, b in zip(pose, r_pose))
        note('pose', d, t, f'{d:.3g} m/rad')
        d = max(abs(speed - r_speed), abs(yaw_rate - r_yaw_rate))
        note('speed', d, t, f'{speed:.6f} vs {r_speed:.6f} m/s, '
             f'{yaw_rate:.6f} vs {r_yaw_rate:.6f} rad/s')
        r_xyz = clouds[t]
        if r_xyz.shape != xyz.shape:
            note('cones', np.inf, t, f'{xyz.shape[0]} cones vs {r_xyz.shape[0]} recorded')
        elif len(xyz):
            d = float(np.abs(r_xyz.astype(np.float64) - xyz.astype(np.float64)).max())
            note('cones', d, t, f'{d:.3g} m')
        r_v, r_w = rec.commands[t]
        d = max(abs(v_cmd - r_v), abs(w_cmd - r_w))
        note('cmd', d, t, f'({v_cmd:.6f}, {w_cmd:.6f}) vs ({r_v:.6f}, {r_w:.6f})')
    return out


def compare(bag: str, track_seed: int, scenario: str = 'track_sweep'
            ) -> Tuple[LapResult, Comparison]:
    """Run the in-process lidar loop and compare it with ``bag``; see the module doc."""
    rec = read_recording(bag)
    scn = load_scenario(scenario, seed=track_seed)
    tap = _Tap(build_planner())
    res = run_lap(default_config('lane'), scn, planner=tap, perception='lidar')
    return res, compare_cycles(rec, tap.cycles)


def _full_stack_result(bag: str) -> Optional[Dict[str, Any]]:
    """Return the run's referee result from ``carla_hil_run.json`` or ``result.json``."""
    here = bag if os.path.isdir(bag) else os.path.dirname(bag)
    for path in (os.path.join(here, 'carla_hil_run.json'),
                 os.path.join(os.path.dirname(here), 'result.json')):
        try:
            with open(path, encoding='utf-8') as f:
                data = json.load(f)
        except (OSError, ValueError):
            continue
        return data.get('result', data)
    return None


def main(argv: Optional[List[str]] = None) -> int:
    """Entry point; exit 0 when every frame compared is the same, 1 when not, 2 on bad input."""
    parser = argparse.ArgumentParser(prog='python -m path_planning.tools.stack_compare',
                                     description=__doc__.split('\n\n')[1])
    parser.add_argument('bag', help='recording directory or .mcap file')
    parser.add_argument('--track-seed', type=int, required=True,
                        help='the track seed of the full-stack run (hil_bridge.track_seed)')
    parser.add_argument('--scenario', default='track_sweep')
    args = parser.parse_args(argv)
    try:
        res, cmp = compare(args.bag, args.track_seed, args.scenario)
    except (OSError, ValueError) as err:
        print(f'stack_compare: {args.bag}: {err}', file=sys.stderr)
        return 2
    print(f'in-process: {res.status} ({res.reason}), laps {res.lap_times}, cones hit '
          f'{res.cones_hit} {res.knocked}, off course {res.off_courses}, {cmp.cycles} cycles')
    for ev in res.events:
        if ev.kind in ('cone_hit', 'off_course', 'lap'):
            print(f'  {ev.kind} at t={ev.sim_time:.2f} {ev.data}')
    full = _full_stack_result(args.bag)
    if full is not None:
        print(f"full stack: {full.get('status')} ({full.get('reason')}), laps "
              f"{full.get('lap_times')}, cones hit {full.get('cones_hit')} "
              f"{full.get('knocked_cones')}, off course {full.get('off_courses')}, "
              f"lockstep timeouts {full.get('lockstep_timeouts')}")
    if cmp.missing:
        print(f'{len(cmp.missing)} stamps not in the recording (not compared), the first at '
              f't={cmp.missing[0]:.2f} s')
    print('largest differences: ' + ', '.join(f'{k} {v:.3g}' for k, v in cmp.largest.items()))
    if not cmp.first:
        print(f'every frame compared the same: odometry, cones and commands '
              f'({cmp.cycles - len(cmp.missing)} of {cmp.cycles})')
        return 0
    for key, (t, what) in sorted(cmp.first.items(), key=lambda kv: kv[1][0]):
        print(f'first {key} difference at t={t:.2f} s: {what}')
    return 1


if __name__ == '__main__':
    sys.exit(main())
