# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""The bridge's clock modes as a pure state machine (fake wall times)."""

from hil_bridge.bridge.sim_clock import select_mode, SimClock
import pytest


def test_select_mode() -> None:
    """Parameters map to async/sync/lockstep; lockstep needs sync."""
    assert select_mode(False, False) == 'async'
    assert select_mode(True, False) == 'sync'
    assert select_mode(True, True) == 'lockstep'
    with pytest.raises(ValueError, match='synchronous_mode'):
        select_mode(False, True)


def test_sync_unlimited_always_ready() -> None:
    """real_time_factor 0: tick as fast as possible."""
    c = SimClock('sync', 0.05, real_time_factor=0.0)
    for k in range(5):
        assert c.ready(0.0).tick
        c.on_tick(0.0)
    assert c.frames == 5


@pytest.mark.parametrize('rtf,period', [(1.0, 0.05), (0.5, 0.1), (2.0, 0.025)])
def test_sync_paced_by_real_time_factor(rtf: float, period: float) -> None:
    """Ticks come every dt / real_time_factor wall seconds."""
    c = SimClock('sync', 0.05, real_time_factor=rtf)
    wall = 10.0
    assert c.ready(wall).tick
    c.on_tick(wall)
    d = c.ready(wall + period * 0.5)
    assert not d.tick and d.wait == pytest.approx(period * 0.5)
    assert c.ready(wall + period).tick
    c.on_tick(wall + period + 0.001)  # a little late: schedule does not drift
    assert c.ready(wall + 2 * period).tick


def test_sync_pacing_does_not_burst_after_stall() -> None:
    """After a long stall the schedule restarts instead of catching up."""
    c = SimClock('sync', 0.05, real_time_factor=1.0)
    c.on_tick(0.0)
    c.on_tick(5.0)  # stalled 5 s
    assert not c.ready(5.01).tick


def test_lockstep_waits_for_stamp_of_frame() -> None:
    """The next tick waits until cmd_vel carries frame k's stamp."""
    c = SimClock('lockstep', 0.05, lockstep_topics=['cmd_vel'],
                 lockstep_timeout=1.0)
    c.on_command('cmd_vel', 0.0)
    c.on_published(0.05, wall=0.0)
    assert not c.ready(0.1).tick
    c.on_command('cmd_vel', 0.0)        # an old command does not count
    assert not c.ready(0.2).tick
    c.on_command('other', 0.05)          # neither does another topic
    assert not c.ready(0.2).tick
    c.on_command('cmd_vel', 0.05 - 1e-9)  # ns rounding of the stamp: fine
    assert c.ready(0.3).tick
    assert c.timeouts == 0


def test_future_stamp_does_not_release_later_frames() -> None:
    """
    Issue 14 finding 1: lockstep kept the largest stamp seen.

    One cmd_vel stamped 1000 s ahead satisfied every frame after it, so the
    bridge stopped waiting for the onboard computer. A stamp ahead of the
    newest published frame is ignored now; frames keep waiting.
    """
    c = SimClock('lockstep', 0.05, lockstep_topics=['cmd_vel'], lockstep_timeout=0.0)
    c.on_published(0.0, wall=0.0)
    assert c.on_command('cmd_vel', 0.0)
    assert not c.on_command('cmd_vel', 1000.0)
    for k in range(1, 20):
        assert c.ready(float(k)).tick
        c.on_tick(float(k))
        c.on_published(0.05 * k, wall=float(k))
        assert not c.ready(float(k) + 0.5).tick, f'frame {k} did not wait'
        assert c.on_command('cmd_vel', 0.05 * k)


def test_command_arriving_before_on_published_counts() -> None:
    """A fast node answers frame k before the bridge recorded the publish: it counts."""
    c = SimClock('lockstep', 0.05, lockstep_topics=['cmd_vel'], lockstep_timeout=0.0)
    c.on_published(0.0, wall=0.0)
    c.on_command('cmd_vel', 0.0)
    c.on_tick(0.1)
    c.announce(0.05)                      # before the frame's messages go out
    assert c.on_command('cmd_vel', 0.05)  # the answer races on_published
    c.on_published(0.05, wall=0.2)
    assert c.ready(0.3).tick


def test_world_time_going_back_forgets_latest() -> None:
    """A world reloaded at an earlier time waits for commands of its own frames."""
    c = SimClock('lockstep', 0.05, lockstep_topics=['cmd_vel'], lockstep_timeout=0.0)
    c.on_published(50.0, wall=0.0)
    c.on_command('cmd_vel', 50.0)
    assert c.ready(0.1).tick
    c.on_tick(0.1)
    c.on_published(0.05, wall=0.2)
    assert not c.ready(0.3).tick
    c.on_command('cmd_vel', 0.05)
    assert c.ready(0.4).tick


def test_lockstep_needs_every_topic() -> None:
    """With two topics both must deliver."""
    c = SimClock('lockstep', 0.05, lockstep_topics=['cmd_vel', 'brake_request'])
    c.on_published(0.1, 0.0)
    c.on_command('cmd_vel', 0.1)
    assert c.missing() == ['brake_request']
    assert not c.ready(0.01).tick
    c.on_command('brake_request', 0.1)
    assert c.ready(0.01).tick


def test_lockstep_timeout_counted_and_reported() -> None:
    """A missing command times out after lockstep_timeout, counted."""
    c = SimClock('lockstep', 0.05, lockstep_timeout=0.5, startup_timeout=2.0)
    c.on_command('cmd_vel', 0.0)
    c.on_published(0.05, 0.0)
    assert not c.ready(0.49).tick
    d = c.ready(0.51)
    assert d.tick and c.timeouts == 1
    assert 'cmd_vel' in d.message and '0.050' in d.message


def test_awaiting_the_last_frame_ignores_pause_and_pacing() -> None:
    """
    The wait for the last frame's answers times out as a tick does, paused or paced.

    The bridge waits for the answers to the frame it ends on with
    :meth:`SimClock.awaiting` (no tick follows, so pause and real-time
    pacing do not apply): the same limit, counted once, with what happens
    next in the message; answered, nothing is awaited.
    """
    c = SimClock('lockstep', 0.05, real_time_factor=1.0, lockstep_timeout=0.5)
    c.on_command('cmd_vel', 0.0)
    c.on_published(0.05, 0.0)
    c.pause(True)
    assert c.awaiting(0.49, 'ending') == (True, None)
    waiting, message = c.awaiting(0.51, 'ending without it')
    assert not waiting and c.timeouts == 1
    assert message.startswith('lockstep: no cmd_vel for the frame at t=0.050 s within 0.5 s')
    assert message.endswith('(timeout #1); ending without it')
    assert c.awaiting(5.0, 'ending') == (False, None) and c.timeouts == 1
    c.on_published(0.1, 6.0)
    c.on_command('cmd_vel', 0.1)
    assert c.awaiting(9.0, 'ending') == (False, None) and c.timeouts == 1


def test_lockstep_startup_timeout() -> None:
    """Before the first command the longer startup timeout applies."""
    c = SimClock('lockstep', 0.05, lockstep_timeout=0.5, startup_timeout=2.0)
    c.on_published(0.0, 0.0)
    assert not c.ready(1.0).tick
    assert c.ready(2.1).tick and c.timeouts == 1
    forever = SimClock('lockstep', 0.05, startup_timeout=0.0)
    forever.on_published(0.0, 0.0)
    assert not forever.ready(1e6).tick


def test_pause_step_advance() -> None:
    """Pause stops ticking; step(n) allows n frames; advance(T) ceil(T/dt)."""
    c = SimClock('sync', 0.05)
    c.pause(True)
    assert not c.ready(0.0).tick
    c.step()
    assert c.ready(0.0).tick
    c.on_tick(0.0)
    assert not c.ready(0.0).tick
    assert c.advance_seconds(0.12) == 3
    ticks = 0
    while c.ready(0.0).tick:
        c.on_tick(0.0)
        ticks += 1
    assert ticks == 3
    assert c.advance_seconds(0.1) == 2  # exact multiple: no extra frame
    c.pause(False)
    assert c.ready(0.0).tick and c.budget is None


def test_step_while_running_pauses_after() -> None:
    """step() on a running clock runs n frames, then pauses."""
    c = SimClock('sync', 0.05)
    c.step(2)
    for _ in range(2):
        assert c.ready(0.0).tick
        c.on_tick(0.0)
    assert not c.ready(0.0).tick and c.paused


def test_async_mode() -> None:
    """Async: always poll; pause holds; step is refused."""
    c = SimClock('async', 0.0)
    assert c.ready(0.0).tick
    c.pause(True)
    assert not c.ready(0.0).tick
    with pytest.raises(ValueError, match='synchronous'):
        c.step()


@pytest.mark.parametrize('kw,match', [
    ({'mode': 'fast'}, 'mode'),
    ({'fixed_delta_seconds': 0.0}, 'fixed_delta_seconds'),
    ({'real_time_factor': -1.0}, 'real_time_factor'),
    ({'lockstep_timeout': float('nan')}, 'lockstep_timeout'),
    ({'mode': 'lockstep', 'lockstep_topics': []}, 'lockstep_topics'),
])
def test_bad_arguments(kw: dict, match: str) -> None:
    """Bad settings raise ValueError naming them."""
    args = {'mode': 'sync', 'fixed_delta_seconds': 0.05}
    args.update(kw)
    with pytest.raises(ValueError, match=match):
        SimClock(**args)
    with pytest.raises(ValueError, match='seconds'):
        SimClock('sync', 0.05).advance_seconds(-1.0)
    with pytest.raises(ValueError, match='frames'):
        SimClock('sync', 0.05).step(0)
