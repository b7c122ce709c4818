# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""Pure link statistics: NTP offset/RTT, drops, rates, latency."""

from hil_bridge.link.link_stats import (ClockEstimator, count_gaps, count_jumps, ntp_offset_rtt,
                                        percentiles, TopicWindow)
import numpy as np
import pytest


def test_ntp_offset_rtt_known_values() -> None:
    """Server 35 ms ahead, 1 ms each way, 0.2 ms server hold."""
    t1 = np.array([100.0, 101.0])
    t2 = t1 + 0.001 + 0.035
    t3 = t2 + 0.0002
    t4 = t3 - 0.035 + 0.001
    offset, rtt = ntp_offset_rtt(t1, t2, t3, t4)
    np.testing.assert_allclose(offset, 0.035, atol=1e-12)
    np.testing.assert_allclose(rtt, 0.002, atol=1e-12)


def test_ntp_asymmetric_path_error_is_half_the_asymmetry() -> None:
    """3 ms out, 1 ms back: offset off by (3 - 1) / 2 ms, rtt 4 ms."""
    offset, rtt = ntp_offset_rtt(0.0, 0.003 - 0.010, 0.003 - 0.010,
                                 0.004)
    assert offset == pytest.approx(-0.010 + 0.001)
    assert rtt == pytest.approx(0.004)


def test_ntp_bad_input() -> None:
    """NaN, shape mismatch and out-of-order stamps are rejected."""
    with pytest.raises(ValueError, match='t2'):
        ntp_offset_rtt(0.0, float('nan'), 0.0, 0.0)
    with pytest.raises(ValueError, match='shapes'):
        ntp_offset_rtt([0.0, 1.0], [0.0], [0.0], [0.0])
    with pytest.raises(ValueError, match='order'):
        ntp_offset_rtt(1.0, 1.0, 1.0, 0.5)


def test_clock_estimator_prefers_fast_exchanges() -> None:
    """Queueing delay on the way out biases slow samples; the best do not."""
    rng = np.random.default_rng(1)
    est = ClockEstimator(window=64, best_fraction=0.25)
    true_offset = -0.0123
    for i in range(64):
        t1 = 10.0 + i * 0.2
        out = 0.0003 + (rng.exponential(0.005) if i % 2 else 0.0)
        back = 0.0003
        t2 = t1 + out + true_offset
        t3 = t2 + 0.0001
        t4 = t3 - true_offset + back
        est.add(t1, t2, t3, t4)
    res = est.estimate()
    assert res['samples'] == 64
    assert res['offset'] == pytest.approx(true_offset, abs=1e-6)
    assert res['rtt_min'] == pytest.approx(0.0006, abs=1e-9)
    assert res['rtt_p50'] >= res['rtt_min'] and res['rtt_max'] >= \
        res['rtt_p95']
    assert ClockEstimator().estimate()['samples'] == 0
    assert np.isnan(ClockEstimator().estimate()['offset'])
    with pytest.raises(ValueError):
        ClockEstimator(window=0)


def test_count_gaps() -> None:
    """Gaps of k periods lose k - 1 messages; frame numbers work too."""
    stamps = np.arange(0, 3.0, 0.1)
    assert count_gaps(stamps, 0.1) == 0
    dropped = np.delete(stamps, [5, 6, 20])
    assert count_gaps(dropped, 0.1) == 3
    assert count_gaps(dropped) == 3  # median period
    assert count_gaps([1, 2, 3, 7, 8], 1.0) == 3
    assert count_gaps([1, 1, 2, 3], 1.0) == 0  # duplicate
    assert count_gaps([5.0]) == 0 and count_gaps([]) == 0
    with pytest.raises(ValueError, match='stamps'):
        count_gaps([0.0, float('inf')])
    with pytest.raises(ValueError, match='period'):
        count_gaps([0.0, 1.0], -1.0)


def test_one_bad_stamp_is_a_jump_not_millions_of_drops() -> None:
    """
    A stamp 1e6 s ahead (or behind) among 20 Hz stamps is two jumps, no drop.

    Before, one such stamp read as 2e7 lost messages in the link report.
    """
    stamps = list(np.arange(0, 2.0, 0.05))
    bad = stamps[:20] + [1e6] + stamps[20:] + [-1e6] + [2.0, 2.05]
    assert count_gaps(bad, 0.05, max_gap=10.0) == 0
    assert count_jumps(bad, 10.0) == 4
    lost = stamps[:20] + stamps[25:]  # 5 lost, a real gap
    assert count_gaps(lost, 0.05, max_gap=10.0) == 5 and count_jumps(lost, 10.0) == 0
    win = TopicWindow(horizon=100.0, max_gap=10.0)
    for k, s in enumerate(bad):
        win.add(recv=k * 0.05, stamp=s, size=100)
    res = win.summary(len(bad) * 0.05, period=0.05)
    assert res['drops'] == 0 and res['jumps'] == 4


def test_percentiles() -> None:
    """p50/p95/max of a ramp; NaN for no data."""
    p50, p95, top = percentiles(np.arange(101.0))
    assert (p50, p95, top) == (50.0, 95.0, 100.0)
    assert np.all(np.isnan(percentiles([])))


def test_topic_window_rate_bandwidth_latency_drops() -> None:
    """30 Hz with 2 losses, 1 MB messages, 5..15 ms latency."""
    win = TopicWindow(horizon=10.0)
    stamps = np.arange(90) / 30.0
    keep = np.ones(90, bool)
    keep[[10, 50]] = False
    ages = np.linspace(0.005, 0.015, 90)
    for s, a in zip(stamps[keep], ages[keep]):
        win.add(recv=s + a, stamp=s, size=1_000_000, age=a)
    now = stamps[-1] + ages[-1]
    res = win.summary(now, period=1 / 30)
    assert res['count'] == 88 and res['drops'] == 2
    assert res['first_stamp'] == 0.0 and res['last_stamp'] == stamps[-1]
    assert res['rate_hz'] == pytest.approx(87 / (now - (0 + 0.005)), rel=1e-6)
    assert res['mbit_s'] == pytest.approx(res['rate_hz'] * 8.0, rel=1e-6)
    assert res['latency_p50'] == pytest.approx(0.010, abs=5e-4)
    assert res['latency_max'] == pytest.approx(0.015)
    # old receipts leave the window
    later = win.summary(now + 20.0)
    assert later['count'] == 0 and later['rate_hz'] == 0.0
    assert later['total'] == 88 and np.isnan(later['first_stamp'])


def test_topic_window_bad_input() -> None:
    """Non-finite times and negative sizes are rejected by name."""
    win = TopicWindow()
    with pytest.raises(ValueError, match='finite'):
        win.add(float('nan'), 0.0, 10)
    with pytest.raises(ValueError, match='size'):
        win.add(0.0, 0.0, -1)
    with pytest.raises(ValueError, match='horizon'):
        TopicWindow(horizon=0.0)
    win.add(1.0, 1.0, 100)  # latency unknown: NaN, not an error
    res = win.summary(1.0)
    assert res['count'] == 1 and np.isnan(res['latency_p50'])
