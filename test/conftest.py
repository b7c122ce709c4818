# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
Shared pytest fixtures.

DDS isolation: every test that talks DDS uses the ``ros_domain`` fixture,
which gives it a ROS_DOMAIN_ID of its own (also exported to the processes it
starts) and keeps discovery on localhost, so parallel test runs never see
each other's traffic.
"""

import os
from pathlib import Path
import random

import pytest

ROOT = Path(__file__).resolve().parents[1]

_rng = random.Random(os.getpid() ^ int.from_bytes(os.urandom(4), 'little'))


def _free_domain() -> int:
    """Return a random domain id in 1..100 (valid for FastDDS on Linux)."""
    return _rng.randint(1, 100)


@pytest.fixture
def ros_domain(monkeypatch: pytest.MonkeyPatch) -> int:
    """Give the test (and its child processes) a private ROS domain."""
    domain = _free_domain()
    monkeypatch.setenv('ROS_DOMAIN_ID', str(domain))
    monkeypatch.setenv('ROS_AUTOMATIC_DISCOVERY_RANGE', 'LOCALHOST')
    monkeypatch.setenv('RMW_IMPLEMENTATION', 'rmw_fastrtps_cpp')
    monkeypatch.setenv('PYTHONUNBUFFERED', '1')
    from hil_bridge.interface.config import dds_environment
    for key, value in dds_environment().items():
        monkeypatch.setenv(key, value)
    pypath = os.environ.get('PYTHONPATH', '')
    monkeypatch.setenv('PYTHONPATH', f'{ROOT}{os.pathsep}{pypath}'
                       if pypath else str(ROOT))
    return domain


@pytest.fixture
def rclpy_context(ros_domain: int):
    """Yield an initialised rclpy context on the test's private domain."""
    import rclpy
    context = rclpy.context.Context()
    rclpy.init(context=context, domain_id=ros_domain)
    try:
        yield context
    finally:
        rclpy.shutdown(context=context)
