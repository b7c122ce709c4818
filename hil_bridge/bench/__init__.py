# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""Benchmarks of the bridge, codecs, built-in simulator and the two-host link."""
