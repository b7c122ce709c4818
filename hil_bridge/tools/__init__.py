# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""Runner, recorder, player, reports, suites and the network rig (not deployed onboard)."""
