# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""Onboard path planning: CONEDRIVE, midline, pure pursuit (tools/ is not deployed)."""
