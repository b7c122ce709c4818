# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
Formula Student cones: the contract's class ids and the cone model.

Class ids are those of the cone clouds of the interface contract
(PointCloud2 field ``class_id``, uint8). Sizes are the FS rules' cones:
small 228 x 228 x 325 mm (blue left, yellow right, small orange), big
orange 285 x 285 x 505 mm. The frustum model (base radius, top radius,
height) is what the detectors expect to see and the built-in simulator
renders; both take it from here.
"""

from typing import Tuple

import numpy as np

# Cone class ids of the contract (PointCloud2 field class_id, uint8).
CONE_UNKNOWN = 0
CONE_BLUE = 1
CONE_YELLOW = 2
CONE_ORANGE = 3
CONE_BIG_ORANGE = 4
CONE_TAGS = {'blue': CONE_BLUE, 'yellow': CONE_YELLOW,
             'orange': CONE_ORANGE, 'big_orange': CONE_BIG_ORANGE}
CONE_NAMES = {v: k for k, v in CONE_TAGS.items()}
CONE_NAMES[CONE_UNKNOWN] = 'unknown'
# Formula Student cone geometry: (base width, height) in metres.
CONE_SIZE = {CONE_BLUE: (0.228, 0.325), CONE_YELLOW: (0.228, 0.325),
             CONE_ORANGE: (0.228, 0.325), CONE_BIG_ORANGE: (0.285, 0.505)}
#: Top radius of a cone frustum as a fraction of its base radius.
CONE_TOP_RATIO = 0.2

_TABLE = np.zeros((256, 3), dtype=np.float64)
_TABLE[:] = (CONE_SIZE[1][0] / 2.0, CONE_SIZE[1][0] / 2.0 * CONE_TOP_RATIO,
             CONE_SIZE[1][1])
for _cid, (_width, _height) in CONE_SIZE.items():
    _TABLE[_cid] = (_width / 2.0, _width / 2.0 * CONE_TOP_RATIO, _height)


def cone_dimensions(cone_class: np.ndarray
                    ) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """
    Return (base radius, top radius, height) in metres per cone class id.

    Unknown class ids get the small cone's size.
    """
    cls = np.asarray(cone_class).astype(np.uint8, copy=False)
    dims = _TABLE[cls]
    return dims[..., 0], dims[..., 1], dims[..., 2]
