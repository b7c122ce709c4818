# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""Onboard time-to-collision emergency brake (tools/ is not deployed)."""
