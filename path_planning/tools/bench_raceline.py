# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
Benchmark of lap-2+ mode's one-off work: map check, line and speed profile.

For each hard layout (``hil_bridge.sim.track_gen_hard``) the ground-truth
cones and centre line stand in for the lap-1 map; the wall time of
:func:`path_planning.track_map.build_track_map` and
:func:`path_planning.raceline.compute_raceline` (median of ``--repeat``)
is printed next to a baseline measured in the same run on the same
machine: the referee's reference-lap profile of the centre line
(:func:`hil_bridge.sim.reference_lap.profile_lap_time`), so a loaded
machine shows up in both columns.

``python -m path_planning.tools.bench_raceline --seeds 0-9``
"""

import argparse
import statistics
import time
from typing import Callable, List, Optional

from hil_bridge.interface.vehicle_profile import load_vehicle_profile
from hil_bridge.sim.reference_lap import profile_lap_time
from hil_bridge.sim.track_gen_hard import hard_layout
from path_planning.raceline import compute_raceline
from path_planning.tools.race_loop import _seeds
from path_planning.track_map import build_track_map


def _timed(fn: Callable[[], object], repeat: int) -> float:
    out = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(out)


def main(argv: Optional[List[str]] = None) -> None:
    """Print one row per layout and the medians."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[1])
    parser.add_argument('--seeds', default='0-9')
    parser.add_argument('--repeat', type=int, default=3)
    args = parser.parse_args(argv)
    prof = load_vehicle_profile('fs_car')
    rows = []
    print(f'{"layout":<8} {"length m":>8} {"stations":>8} {"map ms":>7} {"line ms":>8} '
          f'{"baseline ms":>11} {"ratio":>6} {"line lap s":>10} {"centre lap s":>12}')
    for seed in _seeds(args.seeds):
        track = hard_layout(seed).track
        xy, cls, cl = track.cones.xy, track.cones.class_id, track.centerline
        m = build_track_map(xy, cls, cl)
        if not m.ok:
            print(f'hard_{seed}: map refused: {m.reason}')
            continue
        t_map = _timed(lambda: build_track_map(xy, cls, cl), args.repeat)
        line = compute_raceline(m, prof)
        t_line = _timed(lambda: compute_raceline(m, prof), args.repeat)
        t_base = _timed(lambda: profile_lap_time(cl, True, prof), args.repeat)
        ratio = (t_map + t_line) / t_base
        rows.append((t_map, t_line, t_base, ratio))
        print(f'hard_{seed:<3} {track.length:>8.0f} {len(line.centre):>8d} {t_map:>7.1f} '
              f'{t_line:>8.1f} {t_base:>11.1f} {ratio:>6.1f} {line.lap_time:>10.2f} '
              f'{profile_lap_time(cl, True, prof):>12.2f}', flush=True)
    if rows:
        med = [statistics.median(c) for c in zip(*rows)]
        print(f'median: map {med[0]:.1f} ms, line {med[1]:.1f} ms, baseline {med[2]:.1f} ms, '
              f'(map + line) / baseline {med[3]:.1f}')


if __name__ == '__main__':
    main()
