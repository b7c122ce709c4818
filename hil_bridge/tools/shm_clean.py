# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""``python -m hil_bridge.tools.shm_clean``: remove zombie Fast DDS shm files (see dds_shm)."""

from hil_bridge.interface.dds_shm import main

if __name__ == '__main__':
    raise SystemExit(main())
