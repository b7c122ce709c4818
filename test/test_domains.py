# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""ROS domain leases: exclusive per host, released when the holder dies."""

from pathlib import Path
import subprocess
import sys

from hil_bridge.tools import domains
import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def locks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Keep the test's lock files apart from the real ones."""
    monkeypatch.setenv('CARLA_HIL_DOMAIN_LOCKS', str(tmp_path))
    return tmp_path


def test_held_domain_is_not_leased_twice(locks: Path) -> None:
    """A held id is refused; the range search skips it; release frees it."""
    first = domains.try_lease(7)
    assert first is not None and first.domain == 7
    assert domains.try_lease(7) is None
    other = domains.lease_domain(7, 8)
    assert other.domain == 8
    with pytest.raises(RuntimeError, match='every ROS domain in 7..8'):
        domains.lease_domain(7, 8)
    first.release()
    first.release()  # idempotent
    again = domains.try_lease(7)
    assert again is not None
    again.release()
    other.release()


def test_out_of_range_refused(locks: Path) -> None:
    """Ids outside the valid Fast DDS range are a clear error."""
    with pytest.raises(ValueError, match='outside'):
        domains.try_lease(0)
    with pytest.raises(ValueError, match='outside'):
        domains.lease_domain(150, 240)


def test_lease_of_a_killed_process_is_freed(locks: Path) -> None:
    """SIGKILL of the holder drops its lease (the kernel closes the lock)."""
    code = ('from hil_bridge.tools import domains; import sys, time\n'
            'lease = domains.try_lease(42)\n'
            'print("held" if lease else "busy", flush=True)\n'
            'time.sleep(60)\n')
    proc = subprocess.Popen([sys.executable, '-c', code], cwd=str(ROOT),
                            stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == 'held'
        assert domains.try_lease(42) is None
    finally:
        proc.kill()
        proc.wait(timeout=10)
    lease = domains.try_lease(42)
    assert lease is not None
    lease.release()
