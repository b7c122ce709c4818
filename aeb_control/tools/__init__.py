# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""Euro NCAP matrix runner and benchmarks of the AEB (not deployed onboard)."""
