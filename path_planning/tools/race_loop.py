# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
In-process closed loop of lap-2+ mode: map lap 1, race the laps after.

The loop of :func:`path_planning.tools.closed_loop.run_lap` with a
:class:`path_planning.race_planner.RacePlanner` around a lap-1 planner:
one of the planner's own modes (``cone_drive``, ``midline``, ``auto``) or
``centre``, a stand-in that follows the simulator's centre line at a
modest speed (ground truth: tools and tests only), which separates the
lap-2+ part from the lap-1 planner under test.

``python -m path_planning.tools.race_loop --scenario track_sweep --seeds
0-9 --laps 3 --lap1 centre`` prints lap times, ratios to the physical
reference (:mod:`hil_bridge.sim.reference_lap`) and the medians.
``--perception lidar`` drives on the full stack's lidar-only perception
of the simulated lidar, stepped as the full stack in lockstep
(:func:`path_planning.tools.closed_loop.run_lap`) instead of the
ground-truth cones.
"""

import argparse
from dataclasses import dataclass, field, replace
import math
import statistics
import time
from typing import Any, Dict, List, Optional, Sequence

from hil_bridge.bridge.scenario import load_scenario
from hil_bridge.interface.config import node_params
from hil_bridge.interface.vehicle_profile import load_vehicle_profile
from hil_bridge.sim.reference_lap import reference_lap_times
import numpy as np
from path_planning.planner import Planner, PlanOutput
from path_planning.race_planner import race_config_from_mapping, RacePlanner
from path_planning.raceline import Raceline, signed_curvature
from path_planning.raceline_follower import FollowerParams, RacelineFollower
from path_planning.tools.closed_loop import default_config, PERCEPTIONS, run_lap

LAP1_MODES = ('centre', 'cone_drive', 'midline', 'auto', 'lane')


class CentreLineLap1(Planner):
    """
    Lap-1 stand-in: the track's centre line at ``speed`` (ground truth).

    Same interface as :class:`Planner`; the race loop sets :attr:`pose`
    (x, y, yaw in ``map``) before each :meth:`plan`.
    """

    def __init__(self, config: Any, track: Any, speed: float = 6.0) -> None:
        """Follow ``track.centerline`` at a constant ``speed`` (m/s)."""
        super().__init__(config)
        from hil_bridge.interface.speed_profile import resample_polyline
        xy = resample_polyline(np.asarray(track.centerline, float), True, 0.5)
        ds = float(np.hypot(*(np.roll(xy, -1, axis=0) - xy).T).mean())
        kappa = signed_curvature(xy)
        line = Raceline(xy=xy, s=np.arange(len(xy)) * ds, kappa=kappa,
                        v=np.full(len(xy), float(speed)), ds=ds, lap_time=0.0, clearance=0.0)
        self.follower = RacelineFollower(line, FollowerParams(
            pursuit=config.pursuit, max_lateral_error=5.0, max_heading_error=math.pi))
        self.pose: Optional[tuple] = None

    def plan(self, t: float, xyz: Any, class_id: Any, measured_speed: Optional[float] = None,
             measured_yaw_rate: Optional[float] = None, pose: Any = None) -> PlanOutput:
        """Return the centre-line command (stop without a pose)."""
        if self.pose is None or measured_speed is None:
            return self.stop(t, 'no_pose')
        cmd = self.follower.plan(*self.pose, float(measured_speed))
        out = PlanOutput(speed=0.0, yaw_rate=0.0, delta=0.0, kappa=0.0, mode='centre',
                         stop=False, reason='centre', path=cmd.path)
        return self._finish(t, cmd.speed, cmd.delta, out)


class _PoseTap:
    """Hands the pose to a :class:`CentreLineLap1` inside the race planner."""

    uses_pose = True

    def __init__(self, race: RacePlanner) -> None:
        self.race = race

    def plan(self, t: float, xyz: Any, cls: Any, speed: Optional[float] = None,
             yaw_rate: Optional[float] = None, pose: Optional[tuple] = None) -> PlanOutput:
        if isinstance(self.race.lap1, CentreLineLap1):
            self.race.lap1.pose = pose
        return self.race.plan(t, xyz, cls, speed, yaw_rate, pose=pose)


@dataclass
class RaceResult:
    """One run: the referee's lap times, the reference and what lap-2+ mode did."""

    name: str
    status: str
    reason: str
    lap_times: List[float]
    reference: List[float]
    cones_hit: int
    hit_laps: List[int]
    off_courses: int
    modes: Dict[str, int]
    events: List[str] = field(default_factory=list)
    line_ms: float = 0.0
    line_lap: float = 0.0
    fallbacks: int = 0
    max_error: float = 0.0
    median_plan_ms: float = 0.0
    max_plan_ms: float = 0.0
    wall_s: float = 0.0
    planner: Any = None
    trace: List[Any] = field(default_factory=list)
    knocked: List[int] = field(default_factory=list)

    @property
    def ratios(self) -> List[float]:
        """Return lap time / reference lap time per lap."""
        return [lap / ref for lap, ref in zip(self.lap_times, self.reference) if ref > 0.0]


def run_race(scenario: Any, lap1: str = 'auto', seed: int = 0, race: bool = True,
             lap1_speed: float = 6.0, use_map: bool = True, **loop: Any) -> RaceResult:
    """Drive ``scenario`` with lap-2+ mode around the ``lap1`` planner; see the module doc."""
    if lap1 not in LAP1_MODES:
        raise ValueError(f'lap1 must be one of {LAP1_MODES}, got {lap1!r}')
    profile = load_vehicle_profile(scenario.ego.profile)
    cfg = replace(default_config('cone_drive' if lap1 == 'centre' else lap1, profile),
                  use_map=use_map)
    inner = CentreLineLap1(cfg, scenario.track, lap1_speed) if lap1 == 'centre' \
        else Planner(cfg)
    rcfg = race_config_from_mapping(node_params('cone_drive_planner'), profile)
    planner = RacePlanner(inner, replace(rcfg, enabled=race), profile)
    t0 = time.perf_counter()
    res = run_lap(cfg, scenario, seed=seed, planner=_PoseTap(planner), **loop)
    wall = time.perf_counter() - t0
    st = planner.status
    return RaceResult(
        name=scenario.track.name if scenario.track is not None else scenario.name,
        status=res.status, reason=res.reason, lap_times=res.lap_times,
        reference=reference_lap_times(scenario.track, profile, scenario.laps),
        cones_hit=res.cones_hit, hit_laps=res.hit_laps, off_courses=res.off_courses,
        modes=res.modes,
        events=planner.drain_events(), line_ms=st.map_ms,
        line_lap=st.line.lap_time if st.line is not None else 0.0,
        fallbacks=st.fallbacks, max_error=st.max_error, median_plan_ms=res.median_plan_ms,
        max_plan_ms=res.max_plan_ms, wall_s=wall, planner=planner,
        trace=res.trace, knocked=res.knocked)


def _seeds(text: str) -> List[int]:
    out: List[int] = []
    for part in text.split(','):
        lo, _, hi = part.partition('-')
        out += list(range(int(lo), int(hi or lo) + 1))
    return out


def summary(results: Sequence[RaceResult]) -> Dict[str, Optional[float]]:
    """Return the medians of the lap-1 and the laps-2+ ratios (None without laps)."""
    first = [r.ratios[0] for r in results if r.ratios]
    later = [x for r in results for x in r.ratios[1:]]
    return {'lap1_median': statistics.median(first) if first else None,
            'laps2_median': statistics.median(later) if later else None,
            'cones': float(sum(r.cones_hit for r in results)),
            'cones_laps2': float(sum(lap > 1 for r in results for lap in r.hit_laps)),
            'finished': float(sum(r.status == 'finished' for r in results))}


def main(argv: Optional[List[str]] = None) -> None:
    """Print one row per layout and the medians."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[1])
    parser.add_argument('--scenario', default='track_sweep')
    parser.add_argument('--seeds', default='0', help='track seeds, e.g. 0-9 or 0,3,5')
    parser.add_argument('--laps', type=int, default=3)
    parser.add_argument('--lap1', default='auto', choices=LAP1_MODES)
    parser.add_argument('--lap1-speed', type=float, default=6.0,
                        help='speed of the centre-line stand-in (m/s)')
    parser.add_argument('--no-race', action='store_true', help='lap-1 planner only')
    parser.add_argument('--verbose', action='store_true', help='print the events')
    parser.add_argument('--no-map', action='store_true',
                        help='lap-1 planner without its cone map (all cones seen count)')
    parser.add_argument('--lidar', action='store_true',
                        help='lidar-only perception: every cone handed over without a colour')
    parser.add_argument('--perception', default='truth', choices=PERCEPTIONS,
                        help="truth: ground-truth cones; lidar: the full stack's lidar-only "
                        'perception on the simulated lidar (no colours), stepped as in '
                        'lockstep')
    parser.add_argument('--dropout', type=float, default=0.0,
                        help='probability of missing each cone per cycle')
    parser.add_argument('--noise', type=float, default=0.0,
                        help='cone position noise (m, std dev)')
    parser.add_argument('--false-positives', type=float, default=0.0,
                        help='spurious cones per cycle (mean)')
    parser.add_argument('--miscolour', type=float, default=0.0,
                        help='probability of a blue/yellow detection given the other colour')
    args = parser.parse_args(argv)
    results = []
    print(f'{"track":<10} {"status":<9} {"cones":>5} {"2+":>3} {"OC":>3} {"fb":>3} '
          f'{"err m":>5} {"line ms":>8} '
          f'{"wall s":>6}  lap times (ratio to reference)')
    for seed in _seeds(args.seeds):
        scn = load_scenario(args.scenario, seed=seed, laps=args.laps,
                            timeout=200.0 + 60.0 * args.laps)
        res = run_race(scn, args.lap1, race=not args.no_race, lap1_speed=args.lap1_speed,
                       use_map=not args.no_map, colours=not args.lidar, dropout=args.dropout,
                       noise=args.noise, false_positives=args.false_positives,
                       miscolour=args.miscolour, perception=args.perception)
        results.append(res)
        laps = ' '.join(f'{t:.1f}({r:.2f})' for t, r in zip(res.lap_times, res.ratios))
        late = sum(lap > 1 for lap in res.hit_laps)
        print(f'{res.name:<10} {res.status:<9} {res.cones_hit:>5} {late:>3} {res.off_courses:>3} '
              f'{res.fallbacks:>3} {res.max_error:>5.2f} {res.line_ms:>8.0f} '
              f'{res.wall_s:>6.1f}  {laps}'
              + ('' if res.status == 'finished' else f'  [{res.reason}]'), flush=True)
        if args.verbose:
            print(f'    planning cycle {res.median_plan_ms:.2f} ms median, '
                  f'{res.max_plan_ms:.0f} ms slowest')
            for line in res.events:
                print(f'    {line}')
    s = summary(results)
    fmt = (lambda v: '-' if v is None else f'{v:.3f}')
    print(f'median ratio lap 1 {fmt(s["lap1_median"])}, laps 2+ {fmt(s["laps2_median"])}; '
          f'{int(s["finished"])}/{len(results)} finished, {int(s["cones"])} cones hit '
          f'({int(s["cones_laps2"])} on laps 2+)')


if __name__ == '__main__':
    main()
