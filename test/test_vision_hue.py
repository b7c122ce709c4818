# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""Hue thresholds, colour classification and the hue-mask histogram peak."""

from cone_detection.hue import (classify_patch, cone_mask, histogram_peak, HueThresholds,
                                mask_base, size_class, to_hsv)
import cv2
from hil_bridge.interface.cones import (CONE_BIG_ORANGE, CONE_BLUE, CONE_ORANGE, CONE_UNKNOWN,
                                        CONE_YELLOW)
import numpy as np
import pytest

COLOURS = {CONE_BLUE: (180, 70, 10), CONE_YELLOW: (20, 210, 235),
           CONE_ORANGE: (10, 110, 245)}


def _cone_patch(colour: tuple, apex: tuple = (32, 8), base: int = 56,
                half: int = 14) -> np.ndarray:
    """Draw a filled triangle cone with a white stripe on grey."""
    img = np.full((64, 64, 3), 100, np.uint8)
    pts = np.array([apex, (apex[0] - half, base), (apex[0] + half, base)], np.int32)
    cv2.fillPoly(img, [pts], colour)
    img[30:36][(img[30:36] != 100).any(axis=2)] = 235
    return img


@pytest.mark.parametrize('cls', [CONE_BLUE, CONE_YELLOW, CONE_ORANGE])
def test_classify_patch_by_hue(cls: int) -> None:
    """Each cone colour is recognised; grey and white patches are unknown."""
    got, share = classify_patch(_cone_patch(COLOURS[cls]))
    assert got == cls and share > 0.1


def test_grey_white_black_are_unknown() -> None:
    """Achromatic patches (incl. the stripes) carry no cone colour."""
    for value in (0, 100, 235, 255):
        assert classify_patch(np.full((20, 20, 3), value, np.uint8))[0] == CONE_UNKNOWN


def test_histogram_peak_is_cone_centre_and_base() -> None:
    """The x histogram peaks at the apex column; the mask base is the base row."""
    patch = _cone_patch(COLOURS[CONE_BLUE], apex=(40, 10), base=50)
    mask = cone_mask(to_hsv(patch))
    x, y, count = histogram_peak(mask)
    assert abs(x - 40.5) <= 1.5 and count > 100
    assert 10 < y < 50
    top, bottom = mask_base(mask, x, 4)
    assert bottom == pytest.approx(51, abs=1)
    assert top == pytest.approx(10, abs=2)


def test_histogram_peak_empty_mask() -> None:
    """An empty mask has NaN centres and zero count; a malformed one raises."""
    x, y, count = histogram_peak(np.zeros((8, 8), np.uint8))
    assert count == 0 and np.isnan(x) and np.isnan(y)
    with pytest.raises(ValueError):
        histogram_peak(np.zeros((0, 4)))


def test_noise_keeps_colour() -> None:
    """N(0, 20^2) per-channel noise does not change the colour class."""
    rng = np.random.default_rng(0)
    for cls, colour in COLOURS.items():
        patch = _cone_patch(colour).astype(np.float32)
        noisy = np.clip(patch + rng.normal(0, 20, patch.shape), 0, 255).astype(np.uint8)
        assert classify_patch(noisy)[0] == cls


def test_size_cue_separates_big_orange() -> None:
    """At 5 m (f = 644) a 65 px orange cone is big, a 42 px one small."""
    assert size_class(CONE_ORANGE, 65.0, 5.0, 644.0) == CONE_BIG_ORANGE
    assert size_class(CONE_ORANGE, 42.0, 5.0, 644.0) == CONE_ORANGE
    assert size_class(CONE_BLUE, 65.0, 5.0, 644.0) == CONE_BLUE
    assert size_class(CONE_ORANGE, 65.0, float('nan'), 644.0) == CONE_ORANGE


def test_bad_inputs() -> None:
    """Wrong dtypes/shapes and bad thresholds raise ValueError naming the problem."""
    with pytest.raises(ValueError, match='bgr8'):
        classify_patch(np.zeros((4, 4), np.uint8))
    with pytest.raises(ValueError, match='bgr8'):
        classify_patch(np.zeros((4, 4, 3), np.float32))
    with pytest.raises(ValueError, match='empty'):
        classify_patch(np.zeros((0, 4, 3), np.uint8))
    with pytest.raises(ValueError, match='blue'):
        HueThresholds(blue=(120, 200))
