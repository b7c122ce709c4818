# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""Link health between the two machines: statistics and the link monitor node."""
