# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""The built-in simulator: world, vehicle model, sensors and referee."""
