# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""Both machines' graphs on one computer (profiles sim_pc + onboard)."""

from hil_bridge.interface.launch_common import description


def generate_launch_description():
    """Start the bridge and the onboard stack together."""
    return description(['sim_pc', 'onboard'])
