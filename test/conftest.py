# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
Shared pytest fixtures.

DDS isolation: every test that talks DDS uses the ``ros_domain`` fixture,
which leases a ROS_DOMAIN_ID no other process on the host holds
(``hil_bridge.tools.domains``; also exported to the processes it starts)
and keeps discovery on localhost, so concurrent test runs never see each
other's traffic. Module-scoped fixtures use ``module_ros_domain``.
"""

import os
from pathlib import Path
from typing import Iterator

from hil_bridge.tools.domains import DomainLease, lease_domain
import pytest

ROOT = Path(__file__).resolve().parents[1]


def isolate_dds(mp: pytest.MonkeyPatch) -> DomainLease:
    """
    Lease a ROS domain no other process on this host holds and set it up.

    Exports ROS_DOMAIN_ID (also to child processes), keeps discovery on
    localhost, sets the project's DDS profile variables and puts the
    checkout on PYTHONPATH. The caller releases the lease.
    """
    lease = lease_domain()
    mp.setenv('ROS_DOMAIN_ID', str(lease.domain))
    mp.setenv('ROS_AUTOMATIC_DISCOVERY_RANGE', 'LOCALHOST')
    mp.setenv('RMW_IMPLEMENTATION', 'rmw_fastrtps_cpp')
    mp.setenv('PYTHONUNBUFFERED', '1')
    from hil_bridge.interface.config import dds_environment
    for key, value in dds_environment().items():
        mp.setenv(key, value)
    pypath = os.environ.get('PYTHONPATH', '')
    mp.setenv('PYTHONPATH', f'{ROOT}{os.pathsep}{pypath}'
              if pypath else str(ROOT))
    return lease


@pytest.fixture
def ros_domain(monkeypatch: pytest.MonkeyPatch) -> Iterator[int]:
    """Give the test (and its child processes) a private ROS domain."""
    lease = isolate_dds(monkeypatch)
    try:
        yield lease.domain
    finally:
        lease.release()


@pytest.fixture(scope='module')
def module_ros_domain() -> Iterator[int]:
    """Give a module-scoped fixture a private ROS domain (undone after the module)."""
    mp = pytest.MonkeyPatch()
    lease = isolate_dds(mp)
    try:
        yield lease.domain
    finally:
        lease.release()
        mp.undo()


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


def pytest_collection_modifyitems(config: pytest.Config, items: list) -> None:
    """
    With ``CARLA_HIL_TESTS=ros`` keep only the tests that depend on the distro.

    ``scripts/test.sh`` runs the whole suite on one distro and, on the
    other, the modules that reach a ROS package or start a process
    (``test/distro_scope.py``); the rest runs the same code on both.
    Tests marked ``one_distro`` (long closed loops) run on the full-suite
    distro only: on the other, the same nodes, messages and DDS calls run
    in the node, bridge, DDS-profile, recording and two-host tests and in
    the closed loops left unmarked (``test_distro_scope`` checks some
    remain).
    """
    scope = os.environ.get('CARLA_HIL_TESTS', 'all')
    if scope == 'all':
        return
    if scope != 'ros':
        raise pytest.UsageError(f"CARLA_HIL_TESTS must be 'all' or 'ros', got {scope!r}")
    from distro_scope import distro_independent
    keep, drop = [], []
    for item in items:
        light = item.get_closest_marker('one_distro') is None
        (keep if light and not distro_independent(item.path) else drop).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep
