# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
Replay a recording (``carla-hil play BAG``): any rosbag2 bag or storage file.

Messages are published serialized, paced by ``--rate`` (1.0 = as
recorded, 0 = as fast as possible), ``/clock`` included, so the onboard
stack can run on recorded CARLA (or built-in) data without a simulator.
By default only what the simulator PC publishes is replayed (the contract
topics whose publisher is ``hil_bridge``, plus other actors' odometry),
so the onboard nodes recompute everything downstream; ``--all`` replays
every recorded topic.

The bag is read by :mod:`hil_bridge.tools.bag_io`: MCAP or sqlite3,
split, zstd-compressed, metadata versions 1-9, a bag without
``metadata.yaml`` or cut short (a warning says so). A bag that cannot be
read, or holds no message, ends the player with one line naming the file
and exit code 2. Topics it cannot replay (a message type not installed
here, a serialization other than CDR, a contract topic name with another
type) are named in one warning line and left out; topics outside the
simulator PC's set are listed in one line (``--all`` replays them). The
vehicle role is taken from the topic names (``/carla/<role>/...``) when
the bag has none of the default role's and ``--role`` is not given.

Each topic is offered with the QoS its recorded publishers offered (the
bag's ``offered_qos_profiles``, as rosbag2's player does; keep last 100):
a latched topic (ground-truth cones) stays latched. Files without QoS
metadata fall back to the contract's QoS.

Order: the bridge publishes frame k's ``/clock`` and then the frame's
messages, all stamped with frame k's sim time; a recorder logs them by
its own clock at receipt, so a cloud can be logged before the ``/clock``
of its frame. The player restores the bridge's order: messages are
replayed by their stamp (``header.stamp``, or the ``clock`` of
``/clock``; log time for types without a header), ``/clock`` first
within a stamp, from a look-ahead window of ``REORDER_WINDOW`` s.
Playback starts once the subscriber counts of the replayed topics have
been stable for ``--settle`` s (the onboard nodes are up), or after
``--wait`` s.

``--lockstep`` replays as the bridge runs in lockstep: before the next
frame, the player waits until every topic of ``--lockstep-topics``
(contract keys; default ``cmd_vel``, ``brake_request``, and
``recorder_status`` when a recorder runs) carries a stamp >= the frame
just sent (``--lockstep-timeout`` wall s, counted; 30 s for the first
message of each, and until every topic has answered the first frame is
re-sent each second, as the bridge does, for nodes whose subscriptions
had not matched the player's new publishers yet), so a slow or loaded
onboard computer processes every frame. With ``recorder_status`` among
them, playback starts only when the recorder can take every replayed
topic (its subscription report, :mod:`hil_bridge.bridge.recorder_link`);
by default recorder_status is waited for when a recorder runs at
playback start. Without ``--lockstep``, frames are due at their recorded
times; a player that falls behind (a loaded machine) lets its schedule
slip rather than send a burst, and reports how often and by how much it
was late.

``--start-on KEY ...`` (paced playback) starts as lockstep does and then
runs at ``--rate``: the first frame is re-sent every ``REPUBLISH_PERIOD``
until every topic of KEY answered it (``STARTUP_TIMEOUT`` wall s), and the
schedule starts then. Subscriber counts are the publisher's side of
discovery only: on a loaded machine a node's readers can match the
player's writers a second or more later (seen on Fast DDS 2.14: the first
1.3 s of a replay never reached the lidar chain, then its ``/clock``
lagged), and a paced replay without ``--start-on`` loses those frames.
"""

import argparse
from dataclasses import dataclass, field
import fnmatch
import heapq
import sys
import threading
import time
from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple

from hil_bridge.bridge.recorder_link import RecorderLink
from hil_bridge.interface import contract, recorder_status
from hil_bridge.tools import bag_metadata as bm
from hil_bridge.tools.bag_io import Bag, BagError, BagMessage, guarded, open_bag, TopicInfo
from hil_bridge.tools.msg_definitions import stamped_first
from hil_bridge.tools.recorder import cdr_stamp_ns, msg_class

#: Exit code after SIGINT / SIGTERM (README, exit codes).
EXIT_INTERRUPTED = 130

#: look-ahead (s of sim time) within which messages are put in stamp order
REORDER_WINDOW = 1.0
#: a message sent this much (wall s) after its due time counts as late
LATE = 0.05
#: lockstep: wall seconds to wait for the first message of each topic
STARTUP_TIMEOUT = 30.0
#: lockstep: until then, the first frame is re-sent this often (wall s)
REPUBLISH_PERIOD = 1.0
#: lockstep key: recorder_status when a recorder runs at playback start
RECORDER_IF_RUNNING = 'recorder_status?'


def sim_pc_topics(role: str = contract.DEFAULT_ROLE) -> List[str]:
    """Return topic patterns the simulator PC publishes (contract)."""
    out = []
    for row in contract.topics().values():
        if row.publisher == 'hil_bridge':
            out.append(row.name.format(role=role, actor='*'))
    return out


def contract_qos_kind(topic: str, role: str) -> str:
    """Return the contract QoS kind of a topic ('state' if unknown)."""
    for row in contract.topics().values():
        if fnmatch.fnmatch(topic, row.name.format(role=role, actor='*')):
            return row.qos
    return 'state'


def playback_qos(topic: str, offers: Sequence[Dict[str, Any]],
                 role: str) -> Any:
    """Return the QoS to offer for a recorded topic (see module doc)."""
    from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
    policies = bm.playback_policies(offers) if offers else None
    if policies is None:
        return contract.qos_profile(contract_qos_kind(topic, role))
    reliability, durability = policies
    return QoSProfile(
        history=HistoryPolicy.KEEP_LAST, depth=bm.PLAYBACK_DEPTH,
        reliability=ReliabilityPolicy.RELIABLE if reliability == 'reliable'
        else ReliabilityPolicy.BEST_EFFORT,
        durability=DurabilityPolicy.TRANSIENT_LOCAL
        if durability == 'transient_local' else DurabilityPolicy.VOLATILE)


def ordered(messages: Iterable[BagMessage],
            window_ns: int = int(REORDER_WINDOW * 1e9)
            ) -> Iterator[Tuple[int, BagMessage]]:
    """
    Yield (time ns, message) in replay order.

    ``messages`` in log-time order; the time is the stamp for stamped
    types (``/clock`` before the other messages of its stamp), else the
    log time. Messages are held back for ``window_ns`` of log time. A
    stamp more than ``window_ns`` from the log time is not used (the log
    time is): a bag recorded without sim time logs wall time while the
    stamps are sim time, and a zero stamp would otherwise be replayed
    first and stretch the schedule to the next message's sim time.
    """
    heap: List[Tuple[int, int, int, BagMessage]] = []
    stamped: Dict[str, bool] = {}
    seq = 0
    for message in messages:
        name = message.msg_type
        if name not in stamped:
            stamped[name] = stamped_first(name)
        t = cdr_stamp_ns(message.data) if stamped[name] else None
        if t is None or abs(t - message.log_time) > window_ns:
            t = message.log_time
        rank = 0 if message.topic == '/clock' else 1
        heapq.heappush(heap, (t, rank, seq, message))
        seq += 1
        while heap and heap[0][0] < message.log_time - window_ns:
            t0, _r, _s, msg = heapq.heappop(heap)
            yield t0, msg
    while heap:
        t0, _r, _s, msg = heapq.heappop(heap)
        yield t0, msg


def contract_type(topic: str, role: str) -> Optional[str]:
    """Return the contract's message type of a topic name (None if none)."""
    for row in contract.topics().values():
        if fnmatch.fnmatch(topic, row.name.format(role=role, actor='*')):
            return row.msg_type
    return None


@dataclass
class Plan:
    """What a replay publishes: topic -> info, and what it leaves out."""

    topics: Dict[str, TopicInfo] = field(default_factory=dict)
    #: topic -> why it cannot be replayed (a warning)
    unusable: Dict[str, str] = field(default_factory=dict)
    #: topics outside the replayed set (not the simulator PC's)
    skipped: List[str] = field(default_factory=list)


def plan(bag: Bag, role: str, replay_all: bool = False,
         clock: bool = True) -> Plan:
    """Return which topics of ``bag`` a replay publishes (module doc)."""
    patterns = None if replay_all else sim_pc_topics(role)
    out = Plan()
    for name, info in sorted(bag.topics.items()):
        if name == '/clock' and not clock:
            continue
        if patterns is not None and not any(fnmatch.fnmatch(name, p)
                                            for p in patterns):
            out.skipped.append(name)
            continue
        want = contract_type(name, role)
        if info.serialization_format != 'cdr':
            out.unusable[name] = (f'serialization '
                                  f'{info.serialization_format!r}, not cdr')
        elif want is not None and info.msg_type != want:
            out.unusable[name] = f'{info.msg_type or "no type"}, the ' \
                f'contract has {want}'
        else:
            try:
                msg_class(info.msg_type)
            except (ImportError, AttributeError, ValueError):
                out.unusable[name] = f'{info.msg_type or "no type"} not ' \
                    'installed'
                continue
            out.topics[name] = info
    return out


def _listing(names: Sequence[str], limit: int = 8) -> str:
    shown = ', '.join(names[:limit])
    return shown + (f' and {len(names) - limit} more' if len(names) > limit
                    else '')


def _wait_for_subscribers(pubs: Dict[str, Any], wait: float,
                          settle: float) -> None:
    """Wait until subscriber counts are stable for ``settle`` s."""
    deadline = time.monotonic() + wait
    last: Optional[Tuple[int, ...]] = None
    since = time.monotonic()
    while time.monotonic() < deadline:
        counts = tuple(p.get_subscription_count() for p in pubs.values())
        if counts != last:
            last, since = counts, time.monotonic()
        elif any(counts) and time.monotonic() - since >= settle:
            return
        time.sleep(0.05)


class Lockstep:
    """Wait for the commands computed from a frame (player side)."""

    def __init__(self, node: Any, keys: Sequence[str], role: str,
                 timeout: float) -> None:
        """Subscribe to the contract topics ``keys`` on ``node``."""
        from hil_bridge.interface.codecs import stamps
        self.timeout = float(timeout)
        self.latest: Dict[str, float] = {}
        self.timeouts = 0
        #: (frame stamp s, keys missing) of the first timeouts
        self.timed_out: List[Tuple[float, List[str]]] = []
        self._cond = threading.Condition()
        self.keys = list(keys)
        for key in self.keys:
            contract.create_subscription(
                node, key, lambda m, k=key: self._on(
                    k, stamps.sec_from_stamp(m.header.stamp), m), role)

    def _on(self, key: str, stamp: float, msg: Any = None) -> None:
        if key == 'recorder_status':
            status = recorder_status.parse(msg)
            if status is None or not status.ack:
                return  # a subscription report, not an acknowledgement
        with self._cond:
            self.latest[key] = max(stamp, self.latest.get(key, -1e18))
            self._cond.notify_all()

    def wait(self, stamp: float, resend: Optional[Callable[[], None]] = None
             ) -> bool:
        """
        Wait until every topic reached ``stamp`` (s); False on timeout.

        Until every topic has answered once, ``resend()`` (the first frame
        again, for nodes that were not matched yet) runs every
        ``REPUBLISH_PERIOD`` s, as the bridge does.
        """
        def done() -> bool:
            return all(self.latest.get(k, -1e18) >= stamp - 1e-6
                       for k in self.keys)
        end = None
        with self._cond:
            while True:
                started = all(k in self.latest for k in self.keys)
                if end is None:
                    end = time.monotonic() + (self.timeout if started
                                              else STARTUP_TIMEOUT)
                left = end - time.monotonic()
                slice_ = left if started or resend is None else \
                    min(left, REPUBLISH_PERIOD)
                ok = self._cond.wait_for(done, timeout=max(slice_, 0.0))
                if ok or time.monotonic() >= end:
                    break
                if resend is not None and not started:
                    self._cond.release()
                    try:
                        resend()
                    finally:
                        self._cond.acquire()
        if not ok:
            self.timeouts += 1
            if len(self.timed_out) < 5:
                self.timed_out.append((stamp, [
                    k for k in self.keys if self.latest.get(k, -1e18) < stamp - 1e-6]))
        return ok


def play(path: Any, rate: float = 1.0, replay_all: bool = False,
         clock: bool = True, role: str = contract.DEFAULT_ROLE,
         context: Optional[object] = None, wait: float = 10.0,
         settle: float = 1.0, lockstep: Sequence[str] = (),
         lockstep_timeout: float = 5.0,
         start_on: Sequence[str] = ()) -> Dict[str, Any]:
    """
    Publish the recording once; return counts (sent, late, timeouts).

    ``path``: a bag path or an open :class:`Bag`. Publishers are created
    up front for the topics :func:`plan` chooses and playback
    starts when the subscriber counts settle (see module doc).
    ``lockstep``: contract keys to wait for after each frame
    (``RECORDER_IF_RUNNING``: recorder_status if a recorder publishes it
    when playback starts). ``start_on``: contract keys that must answer the
    (re-sent) first frame before paced playback starts (ignored with
    ``lockstep``).
    """
    import rclpy
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.signals import SignalHandlerOptions
    own = context is None
    if own:  # signals are the caller's (main: Ctrl-C ends playback cleanly)
        rclpy.init(signal_handler_options=SignalHandlerOptions.NO)
    bag = path if isinstance(path, Bag) else open_bag(path)
    chosen = plan(bag, role, replay_all, clock)
    node = rclpy.create_node('bag_player', context=context)
    pubs: Dict[str, object] = {}
    every_frame = bool(lockstep)
    asked = list(lockstep if every_frame else start_on)
    keys = [k.rstrip('?') for k in asked]
    gate = Lockstep(node, keys, role, lockstep_timeout) if keys else None
    link = RecorderLink(node, role, lambda _stamp: None) \
        if 'recorder_status' in keys else None
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(node)
    spinning = threading.Event()
    spinning.set()

    def spin() -> None:
        while spinning.is_set():
            executor.spin_once(timeout_sec=0.05)
    thread = threading.Thread(target=spin, daemon=True)
    thread.start()
    try:  # from here on, the spin thread and the node are cleaned up
        for topic, info in chosen.topics.items():
            pubs[topic] = node.create_publisher(
                msg_class(info.msg_type), topic,
                playback_qos(topic, info.offered_qos, role))
        if pubs:
            _wait_for_subscribers(pubs, wait, settle)
        if RECORDER_IF_RUNNING in asked and link is not None and \
                not node.count_publishers(link.topic):
            gate.keys.remove('recorder_status')  # no recorder runs
            link = None
        if link is not None:
            pending = link.wait_matched(pubs, lambda: True, STARTUP_TIMEOUT)
            if pending:
                print('[play] the recorder has not matched ' + ', '.join(pending),
                      file=sys.stderr, flush=True)
        sent = late = resent = 0
        worst = 0.0
        started = every_frame or gate is None  # the start-on handshake done
        first: List[Tuple[Any, bytes]] = []  # the first frame, for re-sends

        def resend() -> None:
            nonlocal resent
            for pub, data in first:
                pub.publish(data)
                resent += 1
        t_first, w_first = None, time.monotonic()
        frame_t: Optional[int] = None
        for t, message in ordered(bag.messages(list(pubs))):
            pub = pubs[message.topic]
            if gate is not None and frame_t is not None and t > frame_t \
                    and (every_frame or not started):
                # the previous frame is done (the first one re-sent until
                # every lockstep or start-on topic answered)
                gate.wait(frame_t * 1e-9, resend if frame_t == t_first else None)
                if not started and rate > 0:  # the schedule starts now
                    w_first = time.monotonic() - (frame_t - t_first) * 1e-9 / rate
                started = True
            frame_t = t if frame_t is None else max(frame_t, t)
            if t_first is None:
                t_first, w_first = t, time.monotonic()
            if gate is not None and t == t_first:
                first.append((pub, message.data))
            if rate > 0 and not every_frame:
                due = w_first + (t - t_first) * 1e-9 / rate
                delay = due - time.monotonic()
                if delay > 0:
                    time.sleep(delay)
                elif -delay > LATE:
                    # behind: the schedule slips instead of a burst that
                    # would overflow the subscribers' queues
                    late += 1
                    worst = max(worst, -delay)
                    w_first -= delay
            pub.publish(message.data)
            sent += 1
        if every_frame and gate is not None and frame_t is not None:
            gate.wait(frame_t * 1e-9)
        from rclpy.duration import Duration
        for pub in pubs.values():  # reliable subscribers have it all
            pub.wait_for_all_acked(Duration(seconds=2.0))
    finally:
        spinning.clear()
        thread.join(timeout=2.0)
        executor.shutdown()
        node.destroy_node()
        if own:
            rclpy.try_shutdown()
    lock = gate if every_frame else None
    return {'sent': sent, 'resent': resent, 'late': late,
            'worst_late_s': round(worst, 3),
            'lockstep_timeouts': lock.timeouts if lock is not None else 0,
            'lockstep_keys': list(lock.keys) if lock is not None else [],
            'timed_out': list(lock.timed_out) if lock is not None else [],
            'start_on': list(gate.keys) if gate is not None and not every_frame else [],
            'start_timeouts': gate.timeouts if gate is not None and not every_frame else 0}


def _seconds(text: str) -> float:
    """Argparse type: a finite number >= 0 (a rate or seconds)."""
    import math
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f'{text!r} is not a number') from None
    if not (math.isfinite(value) and value >= 0.0):
        raise argparse.ArgumentTypeError(f'{text!r}: expected a finite number >= 0')
    return value


def main(argv: Optional[List[str]] = None) -> int:
    """Entry point of ``carla-hil play``."""
    parser = argparse.ArgumentParser(prog='carla-hil play',
                                     description=__doc__.split('\n')[1])
    parser.add_argument('bag', help='bag directory, or one .mcap or .db3 '
                        'file')
    parser.add_argument('--rate', type=_seconds, default=1.0,
                        help='playback speed (0: as fast as possible)')
    parser.add_argument('--all', action='store_true', dest='replay_all')
    parser.add_argument('--no-clock', action='store_true')
    parser.add_argument('--role', default=None,
                        help='vehicle role (default: ego_vehicle, or the '
                        'only one in the topic names of the bag)')
    parser.add_argument('--wait', type=_seconds, default=10.0,
                        help='longest wait for subscribers first (s)')
    parser.add_argument('--settle', type=_seconds, default=1.0,
                        help='start once subscriber counts are stable this '
                        'long (s)')
    parser.add_argument('--lockstep', action='store_true',
                        help='wait for the commands computed from each '
                        'frame before the next (rate ignored)')
    parser.add_argument('--lockstep-topics', nargs='+', default=None,
                        metavar='KEY', help='contract keys to wait for')
    parser.add_argument('--lockstep-timeout', type=_seconds, default=5.0)
    parser.add_argument('--start-on', nargs='+', default=(), metavar='KEY',
                        help='paced playback: re-send the first frame until '
                        'these contract keys answered it, then play at --rate')
    args = parser.parse_args(argv)
    return guarded('play', args.bag, lambda: _main(args))


def _warn(text: str) -> None:
    print(f'[play] WARNING: {text}', file=sys.stderr, flush=True)


def _main(args: argparse.Namespace) -> int:
    bag = open_bag(args.bag)
    for text in bag.warnings:
        _warn(text)
    if not bag.topics or bag.message_count == 0:
        raise BagError(f'{args.bag}: the bag holds no messages')
    role, note = bag.role(contract.DEFAULT_ROLE, args.role)
    if note:
        print(f'[play] {note}', flush=True)
    chosen = plan(bag, role, args.replay_all, not args.no_clock)
    if chosen.unusable:
        _warn('not replayed, cannot be published here: ' + _listing(
            [f'{t} ({why})' for t, why in chosen.unusable.items()]))
    if chosen.skipped:
        print(f'[play] not replayed (not published by the simulator PC; '
              f'--all replays them): {_listing(chosen.skipped)}', flush=True)
    if not chosen.topics:
        roles = ', '.join(bag.roles()) or 'none'
        raise BagError(f'{args.bag}: nothing to replay: none of its '
                       f'{len(bag.topics)} topics is one the simulator PC '
                       f'publishes for role {role} (roles in the bag: '
                       f'{roles}); use --role or --all')
    seen = len(bag.warnings)
    keys: List[str] = []
    if args.lockstep:
        keys = args.lockstep_topics or ['cmd_vel', 'brake_request']
        if args.lockstep_topics is None:
            keys.append(RECORDER_IF_RUNNING)
    from hil_bridge.interface.dds_shm import start_cleaner
    from hil_bridge.interface.node_main import StopRequest

    def interrupt() -> None:  # in the signal handler: unwinds the playback loop
        raise KeyboardInterrupt
    cleaner = start_cleaner()  # removes our shared memory if we are killed
    stop = StopRequest(exit_code=EXIT_INTERRUPTED, on_request=interrupt)
    try:
        stats = play(bag, args.rate, args.replay_all, not args.no_clock,
                     role, wait=args.wait, settle=args.settle,
                     lockstep=keys, lockstep_timeout=args.lockstep_timeout,
                     start_on=args.start_on)
    except KeyboardInterrupt:
        print('[play] interrupted (Ctrl-C / SIGTERM)', file=sys.stderr, flush=True)
        return EXIT_INTERRUPTED
    finally:
        stop.restore()
        stop.done()
        cleaner.terminate()
    keys = stats['lockstep_keys']
    where = ''.join(f' (t={t:.2f} s: no {", ".join(k)})'
                    for t, k in stats['timed_out'][:3])
    start = ''
    if stats['start_on']:
        start = (f', started on {", ".join(stats["start_on"])} '
                 f'({"timed out, " if stats["start_timeouts"] else ""}'
                 f'first frame re-sent: {stats["resent"]} messages)')
    how = (f'lockstep on {", ".join(keys)}, {stats["lockstep_timeouts"]} '
           f'timeouts{where}, first frame re-sent: {stats["resent"]} messages'
           if keys else
           f'rate {args.rate:g}{start}, {stats["late"]} sent more than {LATE:g} s '
           f'late (worst {stats["worst_late_s"]:.3f} s)')
    for text in bag.warnings[seen:]:  # found while reading
        _warn(text)
    bag.close()
    print(f'[play] published {stats["sent"]} messages from {args.bag} '
          f'({how})')
    return 0 if stats['sent'] else 1


if __name__ == '__main__':
    sys.exit(main())
