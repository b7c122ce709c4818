# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
Start, watch and stop a set of node processes (no rclpy).

Used by the ``carla-hil`` runner: each process's output is forwarded line
by line with a ``[name]`` prefix; the supervisor reports the first process
that exits, and shuts the rest down with SIGINT, then SIGTERM, then SIGKILL.
A process that has not written a line yet is still starting (importing):
it gets SIGTERM at once, which ends it silently, where SIGINT would print
a KeyboardInterrupt traceback from inside its imports.

Children die with the supervisor, even when it is killed with SIGKILL:
each child asks the kernel (``prctl(PR_SET_PDEATHSIG, SIGTERM)``, Linux)
for a SIGTERM when the thread that started it ends, and exits at once if
that already happened before the request (its parent id changed). The
nodes end within a second of SIGTERM and remove their shared memory.
"""

import ctypes
import ctypes.util
from dataclasses import dataclass, field
import os
import signal
import subprocess
import sys
import threading
import time
from typing import Callable, Dict, List, Optional, Set, TextIO


@dataclass
class ProcessSpec:
    """A command to run: name (log prefix), argv, extra environment."""

    name: str
    argv: List[str]
    env: Dict[str, str] = field(default_factory=dict)
    #: True when the whole run ends as soon as this process exits
    essential: bool = True
    #: lines starting with this go to ``on_line`` only, not to the log
    hide: str = ''


PR_SET_PDEATHSIG = 1


def _load_prctl() -> Optional[Callable[..., int]]:
    """Return libc's ``prctl`` (None where there is none, e.g. not Linux)."""
    if not sys.platform.startswith('linux'):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library('c') or 'libc.so.6', use_errno=True)
        return libc.prctl
    except (OSError, AttributeError):
        return None


_PRCTL = _load_prctl()


def die_with_parent(parent_pid: int, signum: int = signal.SIGTERM) -> Callable[[], None]:
    """
    Return a ``preexec_fn`` that makes the child get ``signum`` when its parent dies.

    Runs in the child between fork and exec (only the async-signal-safe
    prctl/getppid/_exit calls); PR_SET_PDEATHSIG survives the exec.
    """
    prctl = _PRCTL

    def preexec() -> None:
        if prctl is not None:
            prctl(PR_SET_PDEATHSIG, int(signum), 0, 0, 0)
        if os.getppid() != parent_pid:  # the parent died before the request
            os._exit(128 + int(signum))
    return preexec


class Supervisor:
    """Run processes, forward their logs, stop them cleanly."""

    def __init__(self, out: Optional[TextIO] = None,
                 on_line: Optional[Callable[[str, str], None]] = None
                 ) -> None:
        """Create an empty supervisor writing logs to ``out`` (stdout)."""
        self._out = out
        self._on_line = on_line
        self._lock = threading.Lock()
        self.procs: Dict[str, subprocess.Popen] = {}
        self._threads: List[threading.Thread] = []
        #: names of the processes that have written at least one line
        self.spoken: Set[str] = set()

    def start(self, spec: ProcessSpec) -> subprocess.Popen:
        """Start one process in its own process group."""
        env = dict(os.environ)
        env.update(spec.env)
        env.setdefault('PYTHONUNBUFFERED', '1')
        proc = subprocess.Popen(spec.argv, env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, text=True,
                                bufsize=1, start_new_session=True,
                                preexec_fn=die_with_parent(os.getpid()))
        self.procs[spec.name] = proc
        thread = threading.Thread(target=self._pump, args=(spec.name, proc, spec.hide),
                                  daemon=True)
        thread.start()
        self._threads.append(thread)
        return proc

    def _pump(self, name: str, proc: subprocess.Popen, hide: str = '') -> None:
        for line in proc.stdout:
            self.spoken.add(name)
            line = line.rstrip('\n')
            if self._on_line is not None:
                self._on_line(name, line)
            if hide and line.startswith(hide):
                continue
            out = self._out if self._out is not None else sys.stdout
            with self._lock:
                out.write(f'[{name}] {line}\n')
                out.flush()

    def first_exit(self, timeout: Optional[float] = None,
                   names: Optional[List[str]] = None,
                   stop: Optional[threading.Event] = None
                   ) -> Optional[str]:
        """
        Wait until one of ``names`` (default all) exits; return its name.

        Returns None on timeout or when ``stop`` is set.
        """
        watch = names if names is not None else list(self.procs)
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            for name in watch:
                if self.procs[name].poll() is not None:
                    return name
            if stop is not None and stop.is_set():
                return None
            if deadline is not None and time.monotonic() >= deadline:
                return None
            time.sleep(0.05)

    def returncode(self, name: str) -> Optional[int]:
        """Return the exit code of a process (None while it runs)."""
        return self.procs[name].poll()

    def stop_all(self, grace: float = 5.0,
                 keep: Optional[List[str]] = None) -> Dict[str, int]:
        """
        SIGINT every process (but ``keep``), then SIGTERM, then SIGKILL.

        A process that has written nothing yet gets SIGTERM in place of
        SIGINT (no traceback from its imports). Returns the exit codes (None
        for the kept ones still running).
        """
        targets = [p for n, p in self.procs.items()
                   if n not in (keep or [])]
        starting = [p for n, p in self.procs.items()
                    if n not in (keep or []) and n not in self.spoken]
        for proc in starting:
            try:
                os.killpg(proc.pid, signal.SIGTERM)
            except (ProcessLookupError, PermissionError):
                pass
        for sig, wait in ((signal.SIGINT, grace), (signal.SIGTERM, 2.0),
                          (signal.SIGKILL, 2.0)):
            alive = [p for p in targets if p.poll() is None]
            if not alive:
                break
            for proc in alive:
                if sig == signal.SIGINT and proc in starting:
                    continue  # has its SIGTERM already
                try:
                    os.killpg(proc.pid, sig)
                except (ProcessLookupError, PermissionError):
                    pass
            deadline = time.monotonic() + wait
            while time.monotonic() < deadline and any(
                    p.poll() is None for p in alive):
                time.sleep(0.05)
        if not keep:
            for thread in self._threads:
                thread.join(timeout=1.0)
        return {n: p.poll() for n, p in self.procs.items()}
