# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
The ROS 2 AEB tutorial's scenario on the whole stack.

Ego Tesla Model 3 behind a stopped Lincoln MKZ 50 m ahead, ego at 5.5 m/s
(config/scenarios/aeb_tutorial.yaml).
"""

from hil_bridge.interface.launch_common import description


def generate_launch_description():
    """Start sim_pc + onboard with scenario aeb_tutorial by default."""
    return description(['sim_pc', 'onboard'], {'scenario': 'aeb_tutorial'})
