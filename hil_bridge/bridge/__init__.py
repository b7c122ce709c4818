# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""The simulator-PC bridge node: backends' common interface, drive-by-wire, clock modes."""
