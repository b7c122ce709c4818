# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
Unit tests of hil_bridge.carla_backend.backend that need no server.

Parameter checks, the frame assembler's schedule rules, the steering
conversion and the camera intrinsics. Everything that talks to a server
runs through the real carla==0.9.16 client against ``carla-hil serve``
(``test_carla_backend_wire.py``, ``test_carla_backend_setup.py``,
``test_carla_backend_faults.py``, ``test_carla_backend_run.py``).
"""

import math
from types import SimpleNamespace
from typing import Any, Dict

from hil_bridge.bridge.backend import BackendError
from hil_bridge.carla_backend.backend import (camera_intrinsics, CarlaBackend, FrameAssembler,
                                              Steering)
import numpy as np
import pytest


@pytest.mark.parametrize('kwargs, match', [
    ({'port': 0}, 'port'), ({'timeout': float('nan')}, 'timeout'),
    ({'fixed_delta_seconds': 0.0}, 'fixed_delta_seconds'),
    ({'retries': 0}, 'retries'), ({'host': ''}, 'host'),
    ({'sensor_timeout': -1.0}, 'sensor_timeout')])
def test_bad_parameters(kwargs: Dict[str, Any], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        CarlaBackend(**kwargs)


def test_step_before_setup() -> None:
    with pytest.raises(BackendError, match='before setup'):
        CarlaBackend().step(0.05)


def test_assembler_rules() -> None:
    asm = FrameAssembler({'a': 0.0, 'b': 0.1, 'c': 0.12}, dt=0.05)
    assert asm.due(10, 0.5) == ['a', 'b', 'c']   # never heard of: due
    from hil_bridge.carla_backend.backend import _Payload
    for sid in 'abc':
        assert asm.add(sid, _Payload(np.zeros((0, 4), np.float32), None,
                                     10, 0.5))
    data, missing = asm.wait(10, 0.5, 0.01)
    assert set(data) == {'a', 'b', 'c'} and missing == []
    assert asm.due(11, 0.55) == ['a']
    assert asm.due(12, 0.60) == ['a', 'b']
    assert asm.due(13, 0.65) == ['a', 'b', 'c']
    # c's grid: 0.5, 0.62, 0.74, 0.86: frames at 0.65, 0.75, 0.90 (gaps of
    # 3, 2, 3 frames; ceil(0.12 / 0.05) = 3 would miss 0.75)
    for sid in 'ac':
        asm.add(sid, _Payload(np.zeros((0, 4), np.float32), None, 13, 0.65))
    asm.wait(13, 0.65, 0.01)
    assert asm.due(14, 0.70) == ['a', 'b']
    assert asm.due(15, 0.75) == ['a', 'b', 'c']
    assert asm.stats['reanchored'] == 0
    # Data of an emitted frame is stale.
    assert not asm.add('a', _Payload(np.zeros((0, 4)), None, 10, 0.5))
    assert asm.stats['stale'] == 1


def test_camera_intrinsics() -> None:
    K = camera_intrinsics(1288, 964, 90.0)
    assert K[0, 0] == pytest.approx(644.0) and K[1, 1] == K[0, 0]
    assert (K[0, 2], K[1, 2]) == (644.0, 482.0)
    with pytest.raises(ValueError):
        camera_intrinsics(10, 10, 180.0)


def test_steering_from_the_physics_control() -> None:
    """Wheel angle = steer x max_steer_angle x curve(km/h); wheelbase from the wheel positions."""
    def wheel(angle: float, x: float, y: float) -> Any:
        return SimpleNamespace(max_steer_angle=angle,
                               position=SimpleNamespace(x=100.0 * x, y=100.0 * y, z=30.0))
    pc = SimpleNamespace(
        wheels=[wheel(70.0, 1.4, -0.8), wheel(70.0, 1.4, 0.8), wheel(0.0, -1.5, -0.8),
                wheel(0.0, -1.5, 0.8)],
        steering_curve=[SimpleNamespace(x=0.0, y=1.0), SimpleNamespace(x=60.0, y=0.8)])
    s = Steering.of(pc, 'test car')
    assert s.max_angle == pytest.approx(math.radians(70.0))
    assert s.wheelbase == pytest.approx(2.9)
    assert s.factor(30.0 / 3.6) == pytest.approx(0.9)
    assert s.carla_steer(math.radians(35.0), 0.0) == pytest.approx(0.5)
    assert s.carla_steer(math.radians(35.0), 60.0 / 3.6) == pytest.approx(0.625)
    assert s.carla_steer(-3.0, 0.0) == -1.0                  # clipped
    pc.wheels = [wheel(0.0, 1.4, 0.0)] * 4
    with pytest.raises(BackendError, match='cannot steer'):
        Steering.of(pc, 'a trailer')


def test_no_callback_outside_a_run() -> None:
    """Sensor callbacks do nothing before set-up and after teardown (the client is let go)."""
    backend = CarlaBackend()
    called = []
    backend._guarded(called.append, 'data')
    backend.teardown()
    backend._guarded(called.append, 'data')
    assert called == [] and backend._in_callback == 0
