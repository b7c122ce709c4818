# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
Onboard computer (Jetson): profile ``onboard`` of config/graph.yaml.

cloud_to_scan (the C++ pointcloud_to_laserscan node when installed, else
ours with the same interface), lidar and vision cone detectors, fusion,
planner and AEB.
"""

from hil_bridge.interface.launch_common import description


def generate_launch_description():
    """Start the onboard nodes with their config/ parameter files."""
    return description(['onboard'])
