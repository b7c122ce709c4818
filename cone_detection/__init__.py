# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""Onboard cone detection: lidar, vision, fusion, cloud_to_scan (tools/ is not deployed)."""
