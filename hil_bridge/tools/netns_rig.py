# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
Two-host test rig out of Linux network namespaces (no rclpy).

``NetnsRig`` creates two "hosts", network namespaces ``simpc-<sfx>`` and
``onboard-<sfx>``, joined by a veth pair (10.77.0.1/24 on the simulator
PC side, 10.77.0.2/24 on the onboard side) whose egress on both ends is
shaped like a real cable:

- ``gbit`` (default): tbf 1 Gbit/s (the simulator PC - Jetson Ethernet);
- ``100mbit``: tbf 100 Mbit/s;
- ``wifi``: netem 3 ms +- 2 ms delay, 1 % loss, 54 Mbit/s (needs the
  ``sch_netem`` kernel module; ``ProfileUnavailable`` otherwise).

Commands run inside a host with ``ip netns exec``; ``link_down`` /
``link_up`` cut and restore the cable (fault injection); ``counters``
reads the veth byte counters, which tell whether traffic really crossed
the link. The rig always removes what it created (``close``, context
manager, and an ``atexit`` hook). Needs root and iproute2; ``available``
says why not otherwise.

DDS across the rig: Fast DDS would pick shared memory between the two
namespaces (same kernel, same ``/dev/shm``) and bypass the link, so the
rig's environment selects ``config/fastdds_udp.xml`` (UDPv4 only) and
``ROS_AUTOMATIC_DISCOVERY_RANGE=SUBNET``.

Command line (``python -m hil_bridge.tools.netns_rig``)::

    up [--profile gbit] [--suffix S]      create, print the names, keep
    down --suffix S                       remove
    exec --suffix S simpc|onboard CMD...  run a command in a host
    cleanup                               remove rigs of dead processes

``up`` names the rig after the calling shell's pid: ``cleanup`` removes it
once that shell has exited.
"""

import argparse
import atexit
from dataclasses import dataclass
import json
import os
import re
import shutil
import subprocess
import sys
from typing import Dict, List, Optional, Sequence, Tuple
import uuid

from hil_bridge.interface.config import (config_path, LINK_PROFILE, profile_variable_names,
                                         PROFILE_VARIABLES)

HOSTS = ('simpc', 'onboard')
ADDRESSES = {'simpc': '10.77.0.1', 'onboard': '10.77.0.2'}
PREFIX_LEN = 24
MULTICAST = '224.0.0.0/4'
_NAME_RE = re.compile(r'^(simpc|onboard)-h8([0-9]+)x([0-9a-f]+)$')


class RigError(RuntimeError):
    """A command of the rig failed (message has the command and stderr)."""


class ProfileUnavailable(RigError):
    """The link profile needs a qdisc this kernel does not have."""


@dataclass(frozen=True)
class LinkProfile:
    """
    Shaping of the link, applied on the egress of both veth ends.

    ``rate_bit`` in bit/s; ``delay_ms``/``jitter_ms`` one-way, ms;
    ``loss_pct`` per packet, percent. ``latency_ms`` bounds the tbf
    queue (its size is rate x latency + burst): how much a switch buffers.
    """

    name: str
    rate_bit: float
    delay_ms: float = 0.0
    jitter_ms: float = 0.0
    loss_pct: float = 0.0
    latency_ms: float = 25.0

    @property
    def needs_netem(self) -> bool:
        """Return True when delay or loss is asked for (tbf cannot)."""
        return self.delay_ms > 0.0 or self.loss_pct > 0.0


PROFILES: Dict[str, LinkProfile] = {
    'gbit': LinkProfile('gbit', 1e9),
    '100mbit': LinkProfile('100mbit', 1e8),
    'wifi': LinkProfile('wifi', 54e6, delay_ms=3.0, jitter_ms=2.0,
                        loss_pct=1.0),
    'none': LinkProfile('none', 0.0),
}


def available() -> Tuple[bool, str]:
    """Return (True, '') when namespaces can be made here, else a reason."""
    if shutil.which('ip') is None:
        return False, 'iproute2 (`ip`) is not installed'
    if shutil.which('tc') is None:
        return False, 'iproute2 `tc` is not installed'
    if hasattr(os, 'geteuid') and os.geteuid() != 0:
        return False, 'network namespaces need root'
    name = f'h8probe{os.getpid()}'
    proc = subprocess.run(['ip', 'netns', 'add', name], capture_output=True,
                          text=True, check=False)
    if proc.returncode != 0:
        return False, f'`ip netns add` failed: {proc.stderr.strip()}'
    subprocess.run(['ip', 'netns', 'del', name], capture_output=True,
                   check=False)
    return True, ''


def _run(argv: Sequence[str], check: bool = True) -> str:
    proc = subprocess.run(list(argv), capture_output=True, text=True,
                          check=False)
    if check and proc.returncode != 0:
        raise RigError(f'{" ".join(argv)}: {proc.stderr.strip()}')
    return proc.stdout


def tc_commands(profile: LinkProfile, dev: str) -> List[List[str]]:
    """
    Return the ``tc`` argv lists that shape ``dev`` with ``profile``.

    tbf alone for a pure rate; netem (delay, jitter, loss, rate) otherwise.
    """
    if profile.rate_bit < 0 or profile.delay_ms < 0 or \
            profile.jitter_ms < 0 or not 0.0 <= profile.loss_pct <= 100.0:
        raise ValueError(f'link profile {profile.name}: negative rate/delay '
                         'or loss outside 0..100 %')
    if profile.rate_bit == 0 and not profile.needs_netem:
        return []
    rate = f'{int(profile.rate_bit)}bit'
    if profile.needs_netem:
        cmd = ['tc', 'qdisc', 'replace', 'dev', dev, 'root', 'netem',
               'delay', f'{profile.delay_ms}ms']
        if profile.jitter_ms > 0:
            cmd += [f'{profile.jitter_ms}ms']
        if profile.loss_pct > 0:
            cmd += ['loss', f'{profile.loss_pct}%']
        if profile.rate_bit > 0:
            cmd += ['rate', rate]
        return [cmd + ['limit', '10000']]
    # burst: 10 ms of traffic (>= rate / HZ for any kernel HZ), at least 64 KB
    burst = max(int(profile.rate_bit / 8 / 100), 65536)
    return [['tc', 'qdisc', 'replace', 'dev', dev, 'root', 'tbf', 'rate',
             rate, 'burst', str(burst), 'latency',
             f'{profile.latency_ms}ms']]


def dds_env(static_peer: str = '') -> Dict[str, str]:
    """
    Return the DDS environment for nodes on the rig (UDP only, subnet).

    ``static_peer`` (the other host's address) adds ``ROS_STATIC_PEERS``,
    the unicast alternative to multicast discovery.
    """
    # the names Fast DDS 2.x (Jazzy) and 3.x (Kilted) read
    env = {name: config_path(LINK_PROFILE) for name in profile_variable_names()}
    env.update({'ROS_AUTOMATIC_DISCOVERY_RANGE': 'SUBNET',
                'RMW_IMPLEMENTATION': 'rmw_fastrtps_cpp'})
    if static_peer:
        env['ROS_STATIC_PEERS'] = static_peer
    return env


class NetnsRig:
    """Two network namespaces joined by a shaped veth pair."""

    def __init__(self, profile: str = 'gbit', suffix: str = '') -> None:
        """
        Describe a rig; nothing is created before ``create``.

        ``suffix`` makes names unique (default: pid + random hex).
        """
        if profile not in PROFILES:
            raise ValueError(f'link profile {profile!r} unknown; one of '
                             f'{sorted(PROFILES)}')
        self.profile = PROFILES[profile]
        self.suffix = suffix or f'{os.getpid()}x{uuid.uuid4().hex[:4]}'
        if not re.match(r'^[0-9]+x[0-9a-f]+$', self.suffix) or \
                len(self.suffix) > 12:
            raise ValueError(f'rig suffix {self.suffix!r}: expected '
                             '<digits>x<hex>, at most 12 characters')
        self.ns = {h: f'{h}-h8{self.suffix}' for h in HOSTS}
        short = self.suffix[-11:]
        self.dev = {'simpc': f's{short}', 'onboard': f'o{short}'}
        self.created = False

    # -- life cycle ----------------------------------------------------------
    def create(self) -> 'NetnsRig':
        """Create namespaces, veth pair, addresses, routes and shaping."""
        ok, why = available()
        if not ok:
            raise RigError(why)
        self.created = True
        atexit.register(self.close)
        try:
            for host in HOSTS:
                _run(['ip', 'netns', 'add', self.ns[host]])
                _run(['ip', '-n', self.ns[host], 'link', 'set', 'lo', 'up'])
            _run(['ip', 'link', 'add', self.dev['simpc'], 'netns',
                  self.ns['simpc'], 'type', 'veth', 'peer', 'name',
                  self.dev['onboard'], 'netns', self.ns['onboard']])
            for host in HOSTS:
                _run(['ip', '-n', self.ns[host], 'addr', 'add',
                      f'{ADDRESSES[host]}/{PREFIX_LEN}', 'dev',
                      self.dev[host]])
            self.link_up()
            self.set_profile(self.profile.name)
        except Exception:
            self.close()
            raise
        return self

    def close(self) -> None:
        """Remove both namespaces (the veth pair goes with them)."""
        if not self.created:
            return
        for host in HOSTS:
            _run(['ip', 'netns', 'del', self.ns[host]], check=False)
        self.created = False
        try:
            atexit.unregister(self.close)
        except Exception:  # pragma: no cover - interpreter shutting down
            pass

    def __enter__(self) -> 'NetnsRig':
        """Create the rig."""
        return self.create()

    def __exit__(self, *exc: object) -> None:
        """Remove the rig."""
        self.close()

    def exists(self) -> bool:
        """Return True when both namespaces are listed by ``ip netns``."""
        listed = _run(['ip', 'netns', 'list'], check=False)
        names = {line.split()[0] for line in listed.splitlines() if line}
        return all(ns in names for ns in self.ns.values())

    # -- link ----------------------------------------------------------------
    def set_profile(self, name: str) -> None:
        """
        Shape both veth ends with profile ``name``.

        Raises ``ProfileUnavailable`` when the kernel lacks netem.
        """
        if name not in PROFILES:
            raise ValueError(f'link profile {name!r} unknown; one of '
                             f'{sorted(PROFILES)}')
        profile = PROFILES[name]
        for host in HOSTS:
            cmds = tc_commands(profile, self.dev[host])
            if not cmds:
                _run(['ip', 'netns', 'exec', self.ns[host], 'tc', 'qdisc',
                      'del', 'dev', self.dev[host], 'root'], check=False)
            for cmd in cmds:
                try:
                    _run(['ip', 'netns', 'exec', self.ns[host]] + cmd)
                except RigError as exc:
                    if profile.needs_netem and 'unknown' in str(exc).lower():
                        raise ProfileUnavailable(
                            f'link profile {name} needs tc netem, which this '
                            f'kernel does not provide ({exc})') from exc
                    raise
        self.profile = profile

    def qdisc(self, host: str) -> str:
        """Return ``tc qdisc show`` of the host's veth end."""
        return _run(['ip', 'netns', 'exec', self._ns(host), 'tc', 'qdisc',
                     'show', 'dev', self.dev[host]])

    def link_down(self) -> None:
        """Cut the cable: both veth ends administratively down."""
        for host in HOSTS:
            _run(['ip', '-n', self.ns[host], 'link', 'set', self.dev[host],
                  'down'])

    def link_up(self) -> None:
        """Restore the cable and the multicast route DDS discovery uses."""
        for host in HOSTS:
            _run(['ip', '-n', self.ns[host], 'link', 'set', self.dev[host],
                  'up'])
        for host in HOSTS:
            _run(['ip', '-n', self.ns[host], 'route', 'replace', MULTICAST,
                  'dev', self.dev[host]])

    def counters(self, host: str) -> Dict[str, int]:
        """Return rx/tx bytes and packets of the host's veth end."""
        out = _run(['ip', '-j', '-s', '-n', self._ns(host), 'link', 'show',
                    'dev', self.dev[host]])
        stats = json.loads(out)[0]['stats64']
        return {'rx_bytes': int(stats['rx']['bytes']),
                'rx_packets': int(stats['rx']['packets']),
                'tx_bytes': int(stats['tx']['bytes']),
                'tx_packets': int(stats['tx']['packets']),
                'tx_dropped': int(stats['tx'].get('dropped', 0))}

    # -- processes -----------------------------------------------------------
    def _ns(self, host: str) -> str:
        if host not in self.ns:
            raise ValueError(f'host {host!r} unknown; one of {list(HOSTS)}')
        return self.ns[host]

    def env(self, host: str, base: Optional[Dict[str, str]] = None,
            dds: bool = True) -> Dict[str, str]:
        """
        Return ``base`` (default os.environ) plus the rig's DDS settings.

        ``dds`` False: no DDS settings at all (none of the caller's either:
        profile, discovery range, static peers), for processes that set
        their own, e.g. ``carla-hil run --peers``.
        """
        env = dict(os.environ if base is None else base)
        for name in PROFILE_VARIABLES:  # no profile of the caller's survives
            env.pop(name, None)
        if dds:
            env.update(dds_env())
        else:
            for name in ('ROS_AUTOMATIC_DISCOVERY_RANGE', 'ROS_STATIC_PEERS',
                         'ROS_LOCALHOST_ONLY'):
                env.pop(name, None)
        env['CARLA_HIL_HOST'] = host
        return env

    def argv(self, host: str, argv: Sequence[str],
             cpus: str = '') -> List[str]:
        """Return ``argv`` wrapped to run in ``host`` (optionally pinned)."""
        out = ['ip', 'netns', 'exec', self._ns(host)]
        if cpus:
            out += ['taskset', '-c', cpus]
        return out + list(argv)

    def popen(self, host: str, argv: Sequence[str],
              env: Optional[Dict[str, str]] = None, cpus: str = '',
              dds: bool = True, **kwargs: object) -> subprocess.Popen:
        """Start ``argv`` inside ``host`` in its own session; return it (``dds``: see env)."""
        kwargs.setdefault('start_new_session', True)
        return subprocess.Popen(self.argv(host, argv, cpus),
                                env=self.env(host, env, dds), **kwargs)

    def run(self, host: str, argv: Sequence[str],
            env: Optional[Dict[str, str]] = None, timeout: float = 60.0
            ) -> subprocess.CompletedProcess:
        """Run ``argv`` inside ``host`` to completion (text output)."""
        return subprocess.run(self.argv(host, argv), env=self.env(host, env),
                              capture_output=True, text=True,
                              timeout=timeout, check=False)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def cleanup_stale() -> List[str]:
    """Remove rig namespaces whose creating process is gone; return them."""
    listed = _run(['ip', 'netns', 'list'], check=False)
    removed = []
    for line in listed.splitlines():
        name = line.split()[0] if line.strip() else ''
        match = _NAME_RE.match(name)
        if match and not _pid_alive(int(match.group(2))):
            _run(['ip', 'netns', 'del', name], check=False)
            removed.append(name)
    return removed


def main(argv: Optional[List[str]] = None) -> int:
    """Command line: up, down, exec, cleanup."""
    parser = argparse.ArgumentParser(prog='netns_rig', description=__doc__
                                     .split('\n')[1])
    sub = parser.add_subparsers(dest='cmd', required=True)
    up = sub.add_parser('up')
    up.add_argument('--profile', default='gbit', choices=sorted(PROFILES))
    up.add_argument('--suffix', default='')
    down = sub.add_parser('down')
    down.add_argument('--suffix', required=True)
    ex = sub.add_parser('exec')
    ex.add_argument('--suffix', required=True)
    ex.add_argument('host', choices=HOSTS)
    ex.add_argument('command', nargs=argparse.REMAINDER)
    sub.add_parser('cleanup')
    args = parser.parse_args(argv)
    if args.cmd == 'cleanup':
        print('\n'.join(cleanup_stale()))
        return 0
    if args.cmd == 'up':
        # a suffix with this shell's pid would be cleaned as stale later
        suffix = args.suffix or f'{os.getppid()}x{uuid.uuid4().hex[:4]}'
        rig = NetnsRig(args.profile, suffix).create()
        atexit.unregister(rig.close)
        print(json.dumps({'suffix': rig.suffix, 'namespaces': rig.ns,
                          'devices': rig.dev, 'addresses': ADDRESSES,
                          'profile': rig.profile.name}))
        return 0
    rig = NetnsRig('none', args.suffix)
    rig.created = True
    atexit.unregister(rig.close)
    if args.cmd == 'down':
        rig.close()
        return 0
    if not args.command:
        parser.error('exec needs a command')
    return subprocess.call(rig.argv(args.host, args.command),
                           env=rig.env(args.host))


if __name__ == '__main__':
    sys.exit(main())
