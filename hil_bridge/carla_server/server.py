# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
``carla-hil serve``: a CARLA 0.9.16 server process on the built-in simulator.

    carla-hil serve [--scenario NAME] [--map NAME] [--port 2000]
                    [--streaming-port P] [--rate HZ] [--time-factor F]
                    [--seed N] [--fs-cones]
                    [--server-version STR] [--tick-delay S]
                    [--stall-sensor-after N] [--stall-sensor-role ROLE]
                    [--stall-sensor-frames M] [--sensor-delay S]
                    [--delay-sensor-role ROLE] [--corrupt-sensor-role ROLE]

The RPC port (default 2000) speaks rpclib msgpack-RPC; sensor and world
snapshot streams are on ``--streaming-port`` (default port + 1, what CARLA
uses; ``--port 0`` picks two free ports). The server starts asynchronous,
free-running: one frame every ``fixed_delta_seconds`` (or ``1 / --rate`` without one) of sim time,
``--time-factor`` sim seconds per wall second (1 = real time; 0 = as fast
as it can). A client switches it to synchronous mode with
``world.apply_settings``; then only ``world.tick()`` advances it.

Fault knobs (for tests of clients): ``--server-version`` is what
``client.get_server_version()`` returns; ``--tick-delay S`` delays every
synchronous tick by S seconds (a slow server); ``--stall-sensor-after N``
stops sending sensor data after N messages per sensor stream (only sensors
with role name ``--stall-sensor-role`` if given), the session stays open,
for ``--stall-sensor-frames M`` frames if given; ``--sensor-delay S``
sends sensor data S seconds late (``--delay-sensor-role``);
``--corrupt-sensor-role ROLE`` gives that sensor's images a width one
more than their pixels; SIGTERM / SIGINT stop the server, SIGKILL kills it
mid-run. The process
prints ``carla-hil serve: ready on port P (streaming Q)`` once it listens.
"""

import argparse
import logging
import math
import os
import queue
import signal
import sys
import threading
import time
from typing import List, Optional

from hil_bridge.carla_server import maps as maplib
from hil_bridge.carla_server.handlers import Calls
from hil_bridge.carla_server.msgpack_rpc import RpcServer
from hil_bridge.carla_server.streaming import StreamServer
from hil_bridge.carla_server.world import DEFAULT_RATE, EPISODE_STREAM, World, WorldError

_LOG = logging.getLogger('carla_server')


class CarlaServer:
    """The RPC server, the streaming server, the world and the ticker."""

    def __init__(self, port: int = 2000, streaming_port: Optional[int] = None,
                 host: str = '0.0.0.0', map_name: str = maplib.FLAT,
                 rate: float = DEFAULT_RATE, time_factor: float = 1.0,
                 seed: int = 0, fs_cones: bool = False, version: str = '0.9.16',
                 tick_delay: float = 0.0, stall_after: Optional[int] = None,
                 stall_role: str = '', stall_frames: Optional[int] = None,
                 sensor_delay: float = 0.0, delay_role: str = '',
                 corrupt_role: str = '') -> None:
        if not 0.0 < rate < math.inf:
            raise ValueError(f'--rate must be a finite number > 0, got {rate}')
        if not 0.0 <= time_factor < math.inf:
            raise ValueError(f'--time-factor must be a finite number >= 0, got {time_factor}')
        if not 0.0 <= tick_delay < math.inf:
            raise ValueError(f'--tick-delay must be a finite number >= 0, got {tick_delay}')
        if not 0.0 <= sensor_delay < math.inf:
            raise ValueError(f'--sensor-delay must be a finite number >= 0, got {sensor_delay}')
        if stall_frames is not None and stall_frames < 1:
            raise ValueError(f'--stall-sensor-frames must be >= 1, got {stall_frames}')
        if streaming_port is None:
            streaming_port = port + 1 if port else 0
        for name, value in (('--port', port), ('--streaming-port', streaming_port)):
            if not 0 <= int(value) <= 65535:
                raise ValueError(f'{name} must be in [0, 65535] (0: any free port), '
                                 f'got {value}')
        self.streams = StreamServer(host, streaming_port)
        self.streams.open_stream(EPISODE_STREAM)
        self.world = World(self.streams.port, rate=rate, seed=seed,
                           map_name=map_name, fs_cones=fs_cones,
                           stall_after=stall_after, stall_role=stall_role,
                           stall_frames=stall_frames, corrupt_role=corrupt_role)
        self.sensor_delay = float(sensor_delay)
        self.delay_role = str(delay_role)
        self.world.listening = lambda sid: self.streams.listeners(sid) > 0
        self.world.on_destroy = self.streams.close_stream
        self.streams.known = self._is_sensor
        self.time_factor = float(time_factor)
        self._out: 'queue.Queue' = queue.Queue(maxsize=4)
        self._order = threading.Lock()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self.calls = Calls(self.world, self.tick_and_publish, version=version,
                           tick_delay=tick_delay, wake=self._wake.set)
        self.rpc = RpcServer(self.calls.table(), host, port)
        self.port = self.rpc.port

    def tick_and_publish(self, world: Optional[World] = None,
                         only_asynchronous: bool = False) -> int:
        """
        Tick the world once, queue the frame's messages; return the frame.

        The publisher thread sends them in tick order; ``tick_cue`` returns
        as soon as its frame is queued, as CARLA's does, and the client then
        waits for that frame's snapshot. The world lock is not held while
        the queue is full (a client that stopped reading in synchronous
        mode holds the next tick back, not every RPC call).
        ``only_asynchronous``: do nothing in synchronous mode (the ticker).
        """
        w = self.world if world is None else world
        with w.lock:
            if only_asynchronous and w.settings['synchronous_mode']:
                return w.frame             # a client switched modes meanwhile
            messages = w.tick()
            frame = w.frame
            synchronous = bool(w.settings['synchronous_mode'])
            self._order.acquire()          # queued in the order of the ticks
        try:
            self._out.put((synchronous, messages))
        finally:
            self._order.release()
        return frame

    def _publisher(self) -> None:
        while True:
            item = self._out.get()
            if item is None:
                return
            synchronous, messages = item
            self.streams.synchronous = synchronous
            for stream_id, parts in messages:
                if self._delayed(stream_id):
                    timer = threading.Timer(self.sensor_delay, self.streams.publish,
                                            (stream_id, parts))
                    timer.daemon = True
                    timer.start()
                else:
                    self.streams.publish(stream_id, parts)

    def _delayed(self, stream_id: int) -> bool:
        """Return True for a sensor stream the delay fault knob holds back."""
        if self.sensor_delay <= 0.0 or not self._is_sensor(stream_id):
            return False
        a = self.world.actors.get(stream_id)
        return a is not None and (not self.delay_role
                                  or a.attributes.get('role_name') == self.delay_role)

    def _is_sensor(self, stream_id: int) -> bool:
        a = self.world.actors.get(stream_id)
        return a is not None and a.sensor is not None

    def start(self) -> None:
        """Start serving (daemon threads)."""
        self.streams.start()
        self.rpc.start()
        threading.Thread(target=self._publisher, name='publisher', daemon=True).start()
        threading.Thread(target=self._ticker, name='ticker', daemon=True).start()

    def _ticker(self) -> None:
        """Free-running ticks in asynchronous mode."""
        next_wall = time.monotonic()
        while not self._stop.is_set():
            w = self.world
            if w.settings['synchronous_mode']:
                self._wake.wait(0.05)
                self._wake.clear()
                next_wall = time.monotonic()
                continue
            period = w.delta / self.time_factor if self.time_factor > 0 else 0.0
            now = time.monotonic()
            if now < next_wall:
                self._wake.wait(next_wall - now)
                self._wake.clear()
                continue
            next_wall = max(next_wall + period, now - 1.0)
            try:
                self.tick_and_publish(only_asynchronous=True)
                if period == 0.0:
                    time.sleep(0.0005)     # as fast as possible, RPC calls still served
            except WorldError as exc:
                _LOG.error('tick failed: %s', exc)
            except Exception:  # noqa: B902 - keep ticking, report the bug
                _LOG.exception('tick failed')
                time.sleep(0.1)

    def close(self) -> None:
        """Stop every thread and socket."""
        self._stop.set()
        self._wake.set()
        try:
            self._out.put_nowait(None)
        except queue.Full:
            pass
        self.rpc.close()
        self.streams.close()
        self.world.pool.shutdown(wait=False)


def make_parser() -> argparse.ArgumentParser:
    """Return the argument parser of ``carla-hil serve``."""
    p = argparse.ArgumentParser(prog='carla-hil serve',
                                description='A CARLA 0.9.16 server (RPC and '
                                'streaming protocol) on the built-in simulator.')
    p.add_argument('--port', type=int, default=2000,
                   help='RPC port (2000; 0 picks free ports for both)')
    p.add_argument('--streaming-port', type=int, default=None,
                   help='streaming port (default: port + 1)')
    p.add_argument('--host', default='0.0.0.0', help='address to bind')
    p.add_argument('--scenario', default='',
                   help='start on the built-in map HIL_<scenario> (its track '
                   'cones as map props)')
    p.add_argument('--map', default='', help=f'start on this map (default '
                   f'{maplib.FLAT}; see docs/carla_server.md)')
    p.add_argument('--rate', type=float, default=DEFAULT_RATE,
                   help='frames per sim second without a fixed delta (20)')
    p.add_argument('--time-factor', type=float, default=1.0,
                   help='asynchronous mode: sim seconds per wall second '
                   '(1 = real time, 0 = as fast as possible)')
    p.add_argument('--seed', type=int, default=0, help='sensor noise seed')
    p.add_argument('--fs-cones', action='store_true',
                   help='add static.prop.fs_cone_* blueprints (an extension, '
                   'not stock CARLA)')
    p.add_argument('--server-version', default='0.9.16',
                   help='what get_server_version() returns (fault knob)')
    p.add_argument('--tick-delay', type=float, default=0.0,
                   help='seconds each synchronous tick waits (fault knob)')
    p.add_argument('--stall-sensor-after', type=int, default=None,
                   help='stop each sensor stream after N messages (fault knob)')
    p.add_argument('--stall-sensor-role', default='',
                   help='only stall sensors with this role_name')
    p.add_argument('--stall-sensor-frames', type=int, default=None,
                   help='a stalled stream delivers again after N silent frames '
                   '(fault knob; default: never)')
    p.add_argument('--sensor-delay', type=float, default=0.0,
                   help='send sensor data S seconds late (fault knob)')
    p.add_argument('--delay-sensor-role', default='',
                   help='only delay sensors with this role_name')
    p.add_argument('--corrupt-sensor-role', default='',
                   help="that sensor's images carry a wrong width (fault knob)")
    p.add_argument('--exit-with-parent', action='store_true',
                   help='stop when the process that started it ends (the launcher '
                   'sets it: a crashed client leaves no server behind)')
    p.add_argument('--log-level', default='WARNING')
    return p


def main(argv: Optional[List[str]] = None) -> int:
    """Run the server until SIGINT/SIGTERM; exit code 2 on bad options."""
    # the starter's pid, read first: a starter that exits right after the
    # ready line (a crashing client) must not be missed (read after start-up,
    # the parent was already init and the server ran on for ever)
    parent = os.getppid()
    args = make_parser().parse_args(argv)
    logging.basicConfig(level=getattr(logging, str(args.log_level).upper(),
                                      logging.WARNING),
                        format='[carla-hil serve] %(levelname)s %(name)s: %(message)s')
    map_name = args.map or (maplib.PREFIX + args.scenario if args.scenario
                            else maplib.FLAT)
    try:
        server = CarlaServer(port=args.port, streaming_port=args.streaming_port,
                             host=args.host, map_name=map_name, rate=args.rate,
                             time_factor=args.time_factor, seed=args.seed,
                             fs_cones=args.fs_cones, version=args.server_version,
                             tick_delay=args.tick_delay,
                             stall_after=args.stall_sensor_after,
                             stall_role=args.stall_sensor_role,
                             stall_frames=args.stall_sensor_frames,
                             sensor_delay=args.sensor_delay,
                             delay_role=args.delay_sensor_role,
                             corrupt_role=args.corrupt_sensor_role)
    except (ValueError, WorldError, OSError) as exc:
        print(f'carla-hil serve: {exc}', file=sys.stderr)
        return 2
    stop = threading.Event()

    def on_signal(signum: int, _frame: object) -> None:
        stop.set()
    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    server.start()
    print(f'carla-hil serve: ready on port {server.port} (streaming '
          f'{server.streams.port}), map {server.world.map.name}', flush=True)
    while not stop.wait(0.5):
        if args.exit_with_parent and os.getppid() != parent:
            print('carla-hil serve: the process that started it is gone, stopping',
                  file=sys.stderr)
            break
    server.close()
    return 0


if __name__ == '__main__':
    sys.exit(main())
