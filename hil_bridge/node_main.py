# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""The one ``main`` body every carla_hil node shares."""

import signal
import sys
from typing import Callable, List, Optional, Tuple, Type

import rclpy
from rclpy.executors import ExternalShutdownException
from rclpy.node import Node


def _raise_interrupt(signum: int, _frame: object) -> None:
    raise KeyboardInterrupt


def run_node(make_node: Callable[[], Node], args: Optional[List[str]] = None,
             startup_errors: Tuple[Type[BaseException], ...] = (),
             name: str = '', sigterm_as_interrupt: bool = False) -> int:
    """
    Initialise rclpy, build the node, spin until SIGINT/SIGTERM, clean up.

    Exceptions in ``startup_errors`` raised while building the node (for
    example a missing model file) are printed as one clear line naming the
    node and give exit code 1; Ctrl-C and external shutdown give 0.
    ``sigterm_as_interrupt`` makes SIGTERM raise KeyboardInterrupt in the
    spinning thread (rclpy's own handler is replaced), so a node can finish
    its last output in its ``finally`` code.
    """
    rclpy.init(args=args)
    if sigterm_as_interrupt:
        signal.signal(signal.SIGTERM, _raise_interrupt)
    node = None
    code = 0
    try:
        node = make_node()
        rclpy.spin(node)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    except startup_errors as err:
        label = name or (node.get_name() if node is not None else
                         getattr(make_node, '__name__', 'node'))
        print(f'[{label}] cannot start: {err}', file=sys.stderr, flush=True)
        code = 1
    finally:
        if node is not None:
            node.destroy_node()
        if rclpy.ok():
            rclpy.shutdown()
    return code
