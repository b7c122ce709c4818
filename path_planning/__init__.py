# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""carla_hil path_planning package."""
