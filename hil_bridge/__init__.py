# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""hil_bridge: shared interface layer, link monitor, bridge, backends, simulator, tools."""
