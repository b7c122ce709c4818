# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
Cone colours in HSV: hue thresholds, masks, patch colour and centre (no rclpy).

OpenCV's 8-bit HSV is used: hue 0..179 (degrees / 2), saturation and value
0..255. Blue, yellow and orange cones are told apart by hue; big orange
cones are orange cones whose height in the image fits the big cone (0.505 m)
better than the small one (0.325 m) at the distance the ground plane gives.

The cone centre in an image patch follows the HIL paper: threshold the hue
channel to the cone colour, histogram the mask over x and over y, and take
the peaks.
"""

from dataclasses import dataclass
import math
from typing import Dict, Tuple

import cv2
from hil_bridge.interface.cones import (CONE_BIG_ORANGE, CONE_BLUE, CONE_ORANGE, CONE_SIZE,
                                        CONE_UNKNOWN, CONE_YELLOW)
import numpy as np

#: Colour classes that hue alone tells apart, in mask order.
HUE_CLASSES = (CONE_BLUE, CONE_YELLOW, CONE_ORANGE)


@dataclass(frozen=True)
class HueThresholds:
    """
    HSV ranges of the cone colours (OpenCV units: hue 0..179, s/v 0..255).

    Each hue range is inclusive ``(lo, hi)``; a pixel also needs saturation
    >= ``sat_min`` and value >= ``val_min``. ``min_fraction`` is the share
    of a patch's pixels that must match a colour for the patch to get it.
    """

    blue: Tuple[int, int] = (92, 122)
    yellow: Tuple[int, int] = (19, 40)
    orange: Tuple[int, int] = (0, 18)
    sat_min: int = 90
    val_min: int = 50
    min_fraction: float = 0.02

    def __post_init__(self) -> None:
        """Validate the ranges."""
        for name in ('blue', 'yellow', 'orange'):
            lo, hi = getattr(self, name)
            if not (0 <= lo <= hi <= 179):
                raise ValueError(f'hue range {name}={lo, hi} not within 0..179')
        if not (0 <= self.sat_min <= 255 and 0 <= self.val_min <= 255):
            raise ValueError('sat_min and val_min must be within 0..255')
        if not (0.0 <= self.min_fraction <= 1.0):
            raise ValueError('min_fraction must be within 0..1')

    def ranges(self) -> Dict[int, Tuple[int, int]]:
        """Return ``{class_id: (hue_lo, hue_hi)}`` for the hue classes."""
        return {CONE_BLUE: self.blue, CONE_YELLOW: self.yellow,
                CONE_ORANGE: self.orange}


DEFAULT_THRESHOLDS = HueThresholds()


def check_bgr(image: np.ndarray, name: str = 'image') -> np.ndarray:
    """Return ``image`` if it is a non-empty uint8 HxWx3 array, else raise."""
    if not isinstance(image, np.ndarray):
        raise ValueError(f'{name} must be a numpy array, got {type(image).__name__}')
    if image.dtype != np.uint8 or image.ndim != 3 or image.shape[2] != 3:
        raise ValueError(f'{name} must be uint8 HxWx3 (bgr8), got {image.dtype} '
                         f'{image.shape}')
    if image.shape[0] == 0 or image.shape[1] == 0:
        raise ValueError(f'{name} is empty: {image.shape}')
    return image


def to_hsv(image_bgr: np.ndarray) -> np.ndarray:
    """Convert a bgr8 image to 8-bit HSV (hue 0..179)."""
    return cv2.cvtColor(check_bgr(image_bgr), cv2.COLOR_BGR2HSV)


def class_masks(hsv: np.ndarray,
                thresholds: HueThresholds = DEFAULT_THRESHOLDS) -> np.ndarray:
    """
    Return a (3, H, W) uint8 stack of 0/255 masks, one per ``HUE_CLASSES``.

    ``hsv`` is an 8-bit HSV image (H, W, 3).
    """
    if hsv.dtype != np.uint8 or hsv.ndim != 3 or hsv.shape[2] != 3:
        raise ValueError(f'hsv must be uint8 HxWx3, got {hsv.dtype} {hsv.shape}')
    ranges = thresholds.ranges()
    out = np.empty((len(HUE_CLASSES),) + hsv.shape[:2], dtype=np.uint8)
    for i, cls in enumerate(HUE_CLASSES):
        lo, hi = ranges[cls]
        cv2.inRange(hsv, (lo, thresholds.sat_min, thresholds.val_min),
                    (hi, 255, 255), dst=out[i])
    return out


def cone_mask(hsv: np.ndarray,
              thresholds: HueThresholds = DEFAULT_THRESHOLDS) -> np.ndarray:
    """Return the (H, W) uint8 0/255 mask of any cone colour."""
    return np.bitwise_or.reduce(class_masks(hsv, thresholds), axis=0)


def classify_patch(patch_bgr: np.ndarray,
                   thresholds: HueThresholds = DEFAULT_THRESHOLDS
                   ) -> Tuple[int, float]:
    """
    Return the colour class of a patch and the share of its pixels with it.

    The class is the hue class with the most matching pixels, or
    ``CONE_UNKNOWN`` when fewer than ``min_fraction`` of the pixels match.
    """
    hsv = to_hsv(patch_bgr)
    counts = np.count_nonzero(class_masks(hsv, thresholds).reshape(3, -1), axis=1)
    best = int(np.argmax(counts))
    share = float(counts[best]) / float(hsv.shape[0] * hsv.shape[1])
    if share < thresholds.min_fraction or counts[best] == 0:
        return CONE_UNKNOWN, share
    return HUE_CLASSES[best], share


def histogram_peak(mask: np.ndarray, smooth: int = 5) -> Tuple[float, float, int]:
    """
    Return the peak of a mask's histograms over x and y, and its pixel count.

    The mask (H, W) is summed over rows (histogram over x) and over
    columns (histogram over y); each histogram is box-smoothed over
    ``smooth`` bins and its arg-max is the centre coordinate (pixels; pixel
    centres at integer coordinates, as the built-in camera and
    ``cv2.projectPoints`` use). Returns ``(x, y, count)``; NaN centres
    when empty.
    """
    m = np.asarray(mask)
    if m.ndim != 2 or m.size == 0:
        raise ValueError(f'mask must be a non-empty 2-D array, got {m.shape}')
    binary = (m > 0).astype(np.float32)
    count = int(binary.sum())
    if count == 0:
        return math.nan, math.nan, 0
    hx = binary.sum(axis=0)
    hy = binary.sum(axis=1)
    if smooth > 1:
        kernel = np.ones(int(smooth), dtype=np.float32)
        hx = np.convolve(hx, kernel, mode='same')
        hy = np.convolve(hy, kernel, mode='same')
    return float(np.argmax(hx)), float(np.argmax(hy)), count


def mask_base(mask: np.ndarray, x_peak: float, half_width: float
              ) -> Tuple[float, float]:
    """
    Return the (top, bottom) rows of the mask near column ``x_peak``.

    Columns within ``half_width`` pixels of the peak are used (a row counts
    when a fifth of them match); the bottom row's lower edge is where the
    cone stands on the ground. Both values are pixel edges (first row
    index - 0.5, last row index + 0.5); NaN when no mask pixel is there.
    """
    m = np.asarray(mask) > 0
    lo = max(int(math.floor(x_peak - half_width)), 0)
    hi = min(int(math.ceil(x_peak + half_width)) + 1, m.shape[1])
    band = m[:, lo:hi].sum(axis=1)
    # A row counts when a fifth of the band's columns match, so isolated
    # noise pixels below the cone do not move the base.
    rows = np.flatnonzero(band >= max(1.0, 0.2 * (hi - lo)))
    if rows.size == 0:
        return math.nan, math.nan
    return float(rows[0]) - 0.5, float(rows[-1]) + 0.5


def size_class(class_id: int, pixel_height: float, distance: float,
               focal: float) -> int:
    """
    Refine an orange class with the size cue (small vs big orange cone).

    ``pixel_height`` is the cone's height in the image (pixels),
    ``distance`` its depth along the optical axis (m) and ``focal`` fy
    (pixels). An orange cone whose height is closer (in log scale) to the
    big cone's expected height becomes ``CONE_BIG_ORANGE``.
    """
    if class_id != CONE_ORANGE or not (distance > 0 and pixel_height > 0):
        return class_id
    small = focal * CONE_SIZE[CONE_ORANGE][1] / distance
    big = focal * CONE_SIZE[CONE_BIG_ORANGE][1] / distance
    if pixel_height > math.sqrt(small * big):
        return CONE_BIG_ORANGE
    return CONE_ORANGE
