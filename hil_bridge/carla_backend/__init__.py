# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""The CARLA backend: a CARLA server through the real carla client."""
