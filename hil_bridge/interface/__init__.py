# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""Shared interface layer: what the onboard computer and the simulator PC both import."""
