# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""Evaluation, training and benchmarks of the cone detectors (not deployed onboard)."""
