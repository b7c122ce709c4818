# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""In-process closed loop and benchmarks of the planner (not deployed onboard)."""
