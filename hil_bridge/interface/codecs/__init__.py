# Copyright 2026 carla_hil developers  # noqa: A005 (hil_bridge.interface.codecs)
# SPDX-License-Identifier: Apache-2.0
"""numpy <-> ROS 2 message codecs, one module per kind (cv2 only in images)."""
