# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""Simulator PC: the bridge (profile ``sim_pc`` of config/graph.yaml)."""

from hil_bridge.interface.launch_common import description


def generate_launch_description():
    """Start the hil_bridge node with config/hil_bridge.yaml."""
    return description(['sim_pc'])
