# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
Run the HIL graph across the two hosts of a ``NetnsRig`` (no rclpy).

``TwoHostRun`` starts, inside a rig, the sim PC side (``carla-hil run
--profile sim_pc`` plus the observer probe, in ``simpc``) and the onboard
side (either ``carla-hil run --profile onboard`` or the onboard nodes one
by one with exactly the runner's command lines, so that single nodes can be
killed and restarted), each process logging to a file. Used by
``test/test_two_hosts.py`` and ``hil_bridge.bench.bench_link``.
"""

import json
import os
import signal
import subprocess
import sys
import time
from typing import Any, Callable, Dict, List, Optional, Sequence

from hil_bridge.interface.config import load_yaml
from hil_bridge.tools import cli
from hil_bridge.tools.netns_rig import NetnsRig
import yaml


def write_rig(path: str, base: str = 'hil_rig.yaml', width: int = 0,
              height: int = 0, drop: Sequence[str] = (),
              ticks: Optional[Dict[str, float]] = None) -> str:
    """
    Write a copy of rig ``base`` with camera size ``width`` x ``height``.

    0 keeps the size; sensors whose id is in ``drop`` are left out;
    ``ticks`` sets the ``sensor_tick`` (s between captures, CARLA's
    attribute) of sensors by id. Returns ``path``.
    """
    if width < 0 or height < 0:
        raise ValueError('camera size must be >= 0')
    data = load_yaml('sensors', base)
    sensors = []
    for sensor in data['sensors']:
        if sensor['id'] in drop:
            continue
        attrs = dict(sensor.get('attributes', {}))
        if sensor['blueprint'].startswith('sensor.camera') and width:
            attrs['image_size_x'] = int(width)
            attrs['image_size_y'] = int(height or width * 3 // 4)
        if ticks and sensor['id'] in ticks:
            attrs['sensor_tick'] = float(ticks[sensor['id']])
        sensors.append(dict(sensor, attributes=attrs))
    with open(path, 'w', encoding='utf-8') as stream:
        yaml.safe_dump({'sensors': sensors}, stream)
    return path


def read_jsonl(path: str) -> List[Dict[str, Any]]:
    """Return the records of a JSON-lines file (a torn last line skipped)."""
    out = []
    if not os.path.exists(path):
        return out
    with open(path, 'r', encoding='utf-8') as stream:
        for line in stream:
            try:
                out.append(json.loads(line))
            except ValueError:
                continue
    return out


def result_of(log_text: str) -> Optional[Dict[str, Any]]:
    """Return the last ``REFEREE_RESULT {json}`` of a log, or None."""
    result = None
    for line in log_text.splitlines():
        idx = line.find(cli.RESULT_PREFIX)
        if idx >= 0:
            try:
                result = json.loads(line[idx + len(cli.RESULT_PREFIX):])
            except ValueError:
                pass
    return result


class TwoHostRun:
    """Processes on both hosts of a rig, logs in ``work_dir``."""

    def __init__(self, rig: NetnsRig, work_dir: str,
                 env: Optional[Dict[str, str]] = None, dds: bool = True) -> None:
        """
        Prepare a run in ``rig``; nothing starts before ``start_*``.

        ``dds`` False: the processes get none of the rig's DDS settings
        (``carla-hil run --peers`` makes its own).
        """
        self.rig = rig
        self.work_dir = work_dir
        self.dds = dds
        self.env = dict(os.environ if env is None else env)
        self.procs: Dict[str, subprocess.Popen] = {}
        self.argvs: Dict[str, List[str]] = {}
        self.hosts: Dict[str, str] = {}
        self._logs: Dict[str, Any] = {}
        os.makedirs(work_dir, exist_ok=True)
        self.observer_path = os.path.join(work_dir, 'observer.jsonl')

    def log_path(self, name: str) -> str:
        """Return the log file of process ``name``."""
        return os.path.join(self.work_dir, f'{name}.log')

    def start(self, name: str, host: str, argv: Sequence[str],
              cpus: str = '') -> subprocess.Popen:
        """Start ``argv`` as ``name`` inside ``host`` (log to a file)."""
        if name in self.procs and self.procs[name].poll() is None:
            raise RuntimeError(f'process {name} is already running')
        log = open(self.log_path(name), 'a', encoding='utf-8')
        self._logs[name] = log
        proc = self.rig.popen(host, argv, env=self.env, cpus=cpus, dds=self.dds,
                              stdout=log, stderr=subprocess.STDOUT,
                              stdin=subprocess.DEVNULL)
        self.procs[name] = proc
        self.argvs[name] = list(argv)
        self.hosts[name] = host
        return proc

    def start_sim_pc(self, scenario: str, duration: float = 0.0,
                     sets: Sequence[str] = (), observe: bool = True,
                     cpus: str = '', extra: Sequence[str] = ()) -> None:
        """
        Start ``carla-hil run --profile sim_pc`` (+ observer) in simpc.

        ``cpus`` pins both to those cores (taskset list; '' = any);
        ``extra``: more arguments of ``carla-hil run`` (``--peers``).
        """
        if observe:
            self.start('observer', 'simpc', [
                sys.executable, '-m', 'hil_bridge.bench.link_probe_node',
                'observe', self.observer_path], cpus=cpus)
        argv = [sys.executable, '-m', 'hil_bridge.tools.cli', 'run', '--profile',
                'sim_pc', '--scenario', scenario, '--progress-every', '1000',
                '--no-report']
        if duration:
            argv += ['--duration', str(duration)]
        for item in sets:
            argv += ['--set', item]
        self.start('sim_pc', 'simpc', argv + list(extra), cpus=cpus)

    def start_onboard_cli(self, sets: Sequence[str] = (),
                          cpus: str = '', extra: Sequence[str] = ()) -> None:
        """Start ``carla-hil run --profile onboard`` in onboard (``extra``: more args)."""
        argv = [sys.executable, '-m', 'hil_bridge.tools.cli', 'run', '--profile',
                'onboard', '--progress-every', '1000']
        for item in sets:
            argv += ['--set', item]
        self.start('onboard', 'onboard', argv + list(extra), cpus=cpus)

    def start_onboard_nodes(self, sets: Sequence[str] = (),
                            only: Sequence[str] = (), cpus: str = '') -> None:
        """Start the onboard nodes one by one (the runner's argv each)."""
        specs = cli.build_processes('onboard', sets=cli._parse_sets(
            list(sets)))
        for spec in specs:
            if only and spec.name not in only:
                continue
            self.start(spec.name, 'onboard', spec.argv, cpus=cpus)

    def kill(self, name: str, sig: int = signal.SIGKILL) -> None:
        """Send ``sig`` to process ``name``'s group and reap it."""
        proc = self.procs[name]
        if proc.poll() is None:
            try:
                os.killpg(proc.pid, sig)
            except ProcessLookupError:
                pass
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()

    def restart(self, name: str) -> subprocess.Popen:
        """Start ``name`` again with its previous argv and host."""
        return self.start(name, self.hosts[name], self.argvs[name])

    def wait(self, name: str, timeout: float) -> Optional[int]:
        """Wait up to ``timeout`` s for ``name`` to exit; its code or None."""
        try:
            return self.procs[name].wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None

    def wait_for(self, predicate: Callable[[List[Dict[str, Any]]], bool],
                 timeout: float, poll: float = 0.2) -> bool:
        """Poll the observer records until ``predicate`` holds."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if predicate(read_jsonl(self.observer_path)):
                return True
            if 'sim_pc' in self.procs and self.procs['sim_pc'].poll() \
                    is not None:
                return predicate(read_jsonl(self.observer_path))
            time.sleep(poll)
        return False

    def records(self) -> List[Dict[str, Any]]:
        """Return the observer's records so far."""
        return read_jsonl(self.observer_path)

    def log(self, name: str) -> str:
        """Return the log text of ``name``."""
        if not self._logs[name].closed:
            self._logs[name].flush()
        with open(self.log_path(name), 'r', encoding='utf-8',
                  errors='replace') as stream:
            return stream.read()

    def stop_all(self) -> Dict[str, Optional[int]]:
        """SIGINT every process, then SIGKILL what is left; return codes."""
        for sig, grace in ((signal.SIGINT, 10.0), (signal.SIGKILL, 5.0)):
            alive = [p for p in self.procs.values() if p.poll() is None]
            for proc in alive:
                try:
                    os.killpg(proc.pid, sig)
                except ProcessLookupError:
                    pass
            end = time.monotonic() + grace
            while time.monotonic() < end and any(p.poll() is None
                                                 for p in alive):
                time.sleep(0.1)
        for log in self._logs.values():
            log.close()
        return {n: p.poll() for n, p in self.procs.items()}
