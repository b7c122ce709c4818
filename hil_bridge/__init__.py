# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""Simulator-PC side of carla_hil: bridge, backends, codecs and frames."""
