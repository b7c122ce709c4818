# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""Euro NCAP runner, in-process on the built-in simulator (no DDS)."""

from pathlib import Path

from aeb_control.tools.ncap import Case, matrix, ncap_score, run_case, table
import pytest


@pytest.mark.parametrize('kmh', [30.0, 50.0])
def test_ccrs_avoided_with_onset_near_last_point(kmh: float) -> None:
    """CCRs: no collision, brake onset within 1.5x the last point to brake."""
    r = run_case(Case('CCRs', kmh), 'ttc_staged')
    assert not r.collision, r
    assert r.braked
    assert 0.0 < r.min_distance < 3.0
    assert r.last_point_ttc <= r.onset_ttc <= 1.5 * r.last_point_ttc
    assert r.peak_decel > 5.0
    assert r.score == 1.0


def test_adjacent_lane_stopped_car_is_silent() -> None:
    """A stopped car one lane to the right: no braking, no warning."""
    r = run_case(Case('FA', 50.0, kind='adjacent'), 'ttc_staged')
    assert not r.braked and not r.warned and not r.collision
    assert r.passed


def test_fixed_ttc_brakes_earlier_than_needed() -> None:
    """The tutorial's rule brakes at ~3 s TTC, far before the last point."""
    fixed = run_case(Case('CCRs', 50.0), 'fixed_ttc')
    staged = run_case(Case('CCRs', 50.0), 'ttc_staged')
    assert fixed.braked
    assert fixed.onset_ttc > 2.0 * fixed.last_point_ttc
    assert fixed.onset_ttc > staged.onset_ttc + 0.8
    out = table({'ttc_staged': [staged], 'fixed_ttc': [fixed]})
    assert 'CCRs 50 km/h 100%' in out and 'fixed_ttc' in out


def test_matrix_and_score() -> None:
    """The full matrix has every family; scores follow the 2026 bands."""
    cases = matrix()
    fams = {c.family for c in cases}
    assert fams == {'CCRs', 'CCRm', 'CCRb', 'FA'}
    assert sum(c.family == 'CCRs' for c in cases) == 30
    assert sum(c.family == 'CCRm' for c in cases) == 11
    assert sum(c.family == 'CCRb' for c in cases) == 4
    c50 = Case('CCRs', 50.0)
    assert ncap_score(c50, False, 0.0, True) == 1.0
    assert ncap_score(c50, True, 8.0, True) == 0.75
    assert ncap_score(c50, True, 15.0, True) == 0.5
    assert ncap_score(c50, True, 25.0, True) == 0.25
    assert ncap_score(c50, True, 40.0, True) == 0.0
    assert ncap_score(Case('CCRs', 15.0), True, 3.0, True) == 0.0
    fa = Case('FA', 50.0, kind='adjacent')
    assert ncap_score(fa, False, 0.0, False) == 1.0
    assert ncap_score(fa, False, 0.0, True) == 0.0


def test_family_yaml_files_match_the_runner() -> None:
    """config/scenarios/aeb_*.yaml load and equal what the runner builds."""
    from aeb_control.tools.ncap import build_case, FAMILY_FILES
    from hil_bridge.bridge.scenario import load_scenario
    from hil_bridge.interface.vehicle_profile import load_vehicle_profile
    profile = load_vehicle_profile('passenger_car')
    for name, case in FAMILY_FILES.items():
        loaded = load_scenario(name)
        built, _f, _t = build_case(case, profile, profile)
        assert loaded.mission == 'aeb' and loaded.rig == 'car_rig.yaml'
        assert loaded.ego.initial_speed == pytest.approx(
            built.ego.initial_speed, abs=1e-3)
        for a, b in zip(loaded.actors, built.actors):
            assert a.pose.x == pytest.approx(b.pose.x, abs=1e-3)
            assert a.pose.y == pytest.approx(b.pose.y, abs=1e-3)
            assert a.behaviour['type'] == b.behaviour['type']


def test_family_yaml_files_are_the_writers(tmp_path: Path) -> None:
    """
    The files equal ``--write-scenarios`` output and carry node_params.

    ``carla-hil run --scenario aeb_ccrs`` then runs the passenger car's
    rig and profile with the driver robot, with no ``--set`` (the files
    had no node_params: the ego was left standing, the AEB on fs_car).
    """
    from aeb_control.tools.ncap import FAMILY_FILES, write_family_files
    from hil_bridge.bridge.scenario import scenario_path
    import yaml
    for path in write_family_files(str(tmp_path)):
        name = Path(path).stem
        shipped = Path(scenario_path(name)).read_text(encoding='utf-8')
        assert Path(path).read_text(encoding='utf-8') == shipped, (
            f'{name}: run python -m aeb_control.tools.ncap '
            '--write-scenarios config/scenarios')
        params = yaml.safe_load(shipped)['node_params']
        assert params['aeb_controller'] == {
            'rig': 'car_rig.yaml', 'vehicle_profile': 'passenger_car'}
        cruise = params.get('hil_bridge', {}).get('cruise', False)
        assert cruise is (FAMILY_FILES[name].kind != 'curve'), name
