# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
Reference vision cone detector: the HIL paper's Algorithm 2 (no rclpy).

Exactly in the paper's order, over the whole image:

1. 64x64 windows with a stride of 4 pixels over every level of an image
   pyramid (levels upscale for far, small cones and downscale for near,
   big ones; a positive window frames a cone about ``cone_height`` pixels
   tall);
2. a HOG feature vector per window (cv2.HOGDescriptor, ``strip_rows``
   window rows at a time so memory stays bounded: about 70 MB per strip
   at the 2x level of a 1288x964 frame);
3. the linear SVM decision ``w . f + b`` per window (numpy matrix-vector
   product per strip);
4. for windows that hold a cone (decision > threshold, then non-maximum
   suppression over all levels): threshold the hue channel to the cone
   colours, the peak of the hue-mask histogram over x and y is the cone in
   the image, its base point is projected onto the ground plane with the
   intrinsics and mount pose (vehicle frame) and, given an ego pose, into
   the global frame (:func:`cone_detection.ground_projection.vehicle_to_map`).

It is deliberately naive and slow (seconds per 1288x964 frame); the fast
mode (:mod:`cone_detection.vision_fast`) gives the same outputs quickly.
"""

from dataclasses import dataclass
from typing import List, Sequence, Tuple

from cone_detection.ground_projection import check_intrinsics, check_transform, optical_depth
from cone_detection.hue import check_bgr, DEFAULT_THRESHOLDS, HueThresholds
from cone_detection.svm_model import ConeSvmModel
from cone_detection.vision_common import (CameraDetections, confidence_from_score, hue_masks,
                                          localise, merge_duplicates, nms)
import cv2
from hil_bridge.interface.cones import CONE_BIG_ORANGE, CONE_BLUE, CONE_SIZE, CONE_UNKNOWN
import numpy as np


@dataclass(frozen=True)
class ReferenceParams:
    """
    Parameters of the reference detector.

    ``scales``: pyramid levels (level pixels per image pixel); ``stride``:
    window step in level pixels; ``strip_rows``: window rows per HOG call;
    ``nms_iou``: overlap above which the weaker window is suppressed;
    ``contain``: share of the smaller window covered by a stronger one
    above which it is suppressed too;
    ``merge_distance``: ground distance (m) under which two detections of
    one colour are one cone; ``hue_blur``: Gaussian blur (odd pixels, 0 =
    none) before the hue threshold; ``score_offset``: added to the model
    threshold; ``scale_lo``/``scale_hi``: allowed ratio of the cone height a
    window's scale implies to the height expected at its ground distance.
    """

    scales: Sequence[float] = (2.0, 1.4, 1.0, 0.7, 0.5, 0.35)
    stride: int = 4
    strip_rows: int = 16
    nms_iou: float = 0.3
    contain: float = 0.7
    merge_distance: float = 0.4
    hue_blur: int = 0
    score_offset: float = 0.0
    scale_lo: float = 0.7
    scale_hi: float = 1.45

    def __post_init__(self) -> None:
        """Validate the parameters."""
        if not self.scales or any(not (0.05 <= s <= 8.0) for s in self.scales):
            raise ValueError(f'scales must be within 0.05..8, got {self.scales}')
        if self.stride < 1 or self.strip_rows < 1:
            raise ValueError('stride and strip_rows must be >= 1')
        if not (0.0 < self.nms_iou <= 1.0):
            raise ValueError(f'nms_iou must be within (0, 1], got {self.nms_iou}')
        if self.merge_distance < 0:
            raise ValueError('merge_distance must be >= 0')


def scan_windows(model: ConeSvmModel, grey: np.ndarray, params: ReferenceParams,
                 threshold: float) -> Tuple[np.ndarray, np.ndarray]:
    """
    Slide the window over every pyramid level; return boxes and decisions.

    ``grey`` is the full-resolution uint8 image. Returns the windows whose
    decision exceeds ``threshold`` as image-pixel boxes (N, 4) and their
    decisions (N,).
    """
    win = model.hog.win_size
    hog = model.hog.descriptor()
    stride = params.stride
    boxes: List[np.ndarray] = []
    scores: List[np.ndarray] = []
    for s in params.scales:
        interp = cv2.INTER_AREA if s < 1.0 else cv2.INTER_LINEAR
        level = grey if s == 1.0 else cv2.resize(grey, None, fx=s, fy=s, interpolation=interp)
        level = model.prepare(level)
        height, width = level.shape
        if height < win or width < win:
            continue
        nx = (width - win) // stride + 1
        ny = (height - win) // stride + 1
        xs = np.arange(nx) * stride
        for row0 in range(0, ny, params.strip_rows):
            rows = min(params.strip_rows, ny - row0)
            y0 = row0 * stride
            strip = level[y0:y0 + win + (rows - 1) * stride]
            feats = hog.compute(strip, (stride, stride), (0, 0))
            dec = model.decision(np.asarray(feats).reshape(rows * nx, -1))
            hit = np.flatnonzero(dec > threshold)
            if hit.size == 0:
                continue
            wy = (hit // nx) * stride + y0
            wx = xs[hit % nx]
            b = np.stack([wx, wy, wx + win, wy + win], axis=1) / s
            boxes.append(b)
            scores.append(dec[hit])
    if not boxes:
        return np.zeros((0, 4)), np.zeros(0, np.float32)
    return np.concatenate(boxes), np.concatenate(scores)


def detect_reference(image_bgr: np.ndarray, K: np.ndarray, T_vehicle_camera: np.ndarray,
                     model: ConeSvmModel, params: ReferenceParams = ReferenceParams(),
                     thresholds: HueThresholds = DEFAULT_THRESHOLDS) -> CameraDetections:
    """
    Detect cones in one bgr8 image with the paper's sliding-window method.

    ``K`` 3x3 intrinsics, ``T_vehicle_camera`` the 4x4 REP-103 camera pose
    in the vehicle frame. Returns vehicle-frame base centres, colours and
    confidences (see :class:`CameraDetections`).
    """
    check_bgr(image_bgr)
    k = check_intrinsics(K)
    t = check_transform(T_vehicle_camera)
    threshold = model.threshold + params.score_offset
    grey = cv2.cvtColor(image_bgr, cv2.COLOR_BGR2GRAY)
    boxes, scores = scan_windows(model, grey, params, threshold)
    keep = nms(boxes, scores, threshold, params.nms_iou, params.contain)
    if keep.size == 0:
        return CameraDetections.empty()
    boxes, scores = boxes[keep], scores[keep]
    masks = hue_masks(image_bgr, thresholds, params.hue_blur)
    cls, uv, xyz, _h = localise(masks, boxes, k, t, image_height=image_bgr.shape[0])
    good = cls != CONE_UNKNOWN
    # Multi-scale consistency: the cone height a window's scale implies
    # must fit a cone standing at the base found for it.
    implied = (boxes[:, 3] - boxes[:, 1]) * model.cone_height / model.hog.win_size
    with np.errstate(invalid='ignore', divide='ignore'):
        depth = optical_depth(xyz, t)
        height = np.where(cls == CONE_BIG_ORANGE, CONE_SIZE[CONE_BIG_ORANGE][1],
                          CONE_SIZE[CONE_BLUE][1])
        ratio = implied / (k[1, 1] * height / depth)
    good &= (ratio >= params.scale_lo) & (ratio <= params.scale_hi)
    det = CameraDetections(xyz=xyz[good], class_id=cls[good],
                           confidence=confidence_from_score(scores[good], threshold),
                           uv=uv[good], box=boxes[good].astype(np.float32),
                           score=scores[good].astype(np.float32))
    return merge_duplicates(det, params.merge_distance)
