# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
Pieces shared by the reference and fast vision cone detectors (no rclpy).

Image coordinates are pixels of the full-resolution image (u right, v
down); boxes are ``(x0, y0, x1, y1)`` float pixels, x1/y1 exclusive.
3D results are in the vehicle frame (REP-103, metres), points on the
ground plane z = 0 at the cone's base centre.
"""

from dataclasses import dataclass
import math
from typing import Optional, Tuple

from cone_detection.ground_projection import (check_intrinsics, optical_depth, optical_pose,
                                              pixels_to_ground)
from cone_detection.hue import (class_masks, DEFAULT_THRESHOLDS, histogram_peak, HUE_CLASSES,
                                HueThresholds, mask_base, size_class)
from cone_detection.svm_model import ConeSvmModel
import cv2
from hil_bridge.interface.cones import CONE_SIZE, CONE_UNKNOWN
import numpy as np

#: Half the base width of a small cone (m): the lowest silhouette pixel is
#: the base point nearest to the camera, this far before the base centre.
BASE_RADIUS = CONE_SIZE[1][0] / 2.0


@dataclass
class CameraDetections:
    """
    Cones found in one camera image.

    ``xyz`` (N, 3) float32 vehicle-frame base centres (m), ``class_id``
    (N,) uint8 contract class ids, ``confidence`` (N,) float32 in 0..1,
    ``uv`` (N, 2) float32 image base points (pixels), ``box`` (N, 4)
    float32 image boxes, ``score`` (N,) float32 raw SVM decisions.
    """

    xyz: np.ndarray
    class_id: np.ndarray
    confidence: np.ndarray
    uv: np.ndarray
    box: np.ndarray
    score: np.ndarray

    @staticmethod
    def empty() -> 'CameraDetections':
        """Return an empty result."""
        return CameraDetections(np.zeros((0, 3), np.float32), np.zeros(0, np.uint8),
                                np.zeros(0, np.float32), np.zeros((0, 2), np.float32),
                                np.zeros((0, 4), np.float32), np.zeros(0, np.float32))

    def __len__(self) -> int:
        """Return the number of detections."""
        return int(self.class_id.shape[0])


def confidence_from_score(score: np.ndarray, threshold: float) -> np.ndarray:
    """Map SVM decisions to 0..1 (0.5 at the threshold) with a logistic."""
    s = np.asarray(score, dtype=np.float64) - float(threshold)
    return (1.0 / (1.0 + np.exp(-2.0 * s))).astype(np.float32)


def window_boxes_for_cones(box: np.ndarray, cone_height: int, win: int = 64) -> np.ndarray:
    """
    Return square windows (N, 4) that frame cone boxes (N, 4) like training.

    The window is centred on the box and scaled so the box height becomes
    ``cone_height`` of the ``win`` pixels.
    """
    b = np.asarray(box, dtype=np.float64).reshape(-1, 4)
    side = (b[:, 3] - b[:, 1]) * (win / float(cone_height))
    cx = 0.5 * (b[:, 0] + b[:, 2])
    cy = 0.5 * (b[:, 1] + b[:, 3])
    return np.stack([cx - side / 2, cy - side / 2, cx + side / 2, cy + side / 2], axis=1)


def extract_windows(grey: np.ndarray, windows: np.ndarray, win: int = 64) -> np.ndarray:
    """
    Cut square windows (N, 4) out of a grey image, each resized to win x win.

    Parts outside the image are filled by edge replication; shrinking uses
    area averaging. Returns (N, win, win) uint8.
    """
    w = np.asarray(windows, dtype=np.float64).reshape(-1, 4)
    out = np.empty((w.shape[0], win, win), dtype=np.uint8)
    height, width = grey.shape[:2]
    for i, (x0, y0, x1, _y1) in enumerate(w):
        side = max(int(round(x1 - x0)), 2)
        xa, ya = int(round(x0)), int(round(y0))
        xb, yb = xa + side, ya + side
        crop = grey[max(ya, 0):min(yb, height), max(xa, 0):min(xb, width)]
        if crop.size == 0:
            out[i] = 0
            continue
        if crop.shape[0] != side or crop.shape[1] != side:
            crop = cv2.copyMakeBorder(crop, max(-ya, 0), max(yb - height, 0),
                                      max(-xa, 0), max(xb - width, 0), cv2.BORDER_REPLICATE)
        interp = cv2.INTER_AREA if side > win else cv2.INTER_LINEAR
        out[i] = cv2.resize(crop, (win, win), interpolation=interp)
    return out


def patch_features(model: ConeSvmModel, patches: np.ndarray) -> np.ndarray:
    """
    Return HOG features (N, n_features) float32 of grey patches (N, win, win).

    The patches are laid side by side in one strip so cv2.HOGDescriptor
    computes them in a single call (window stride = window size).
    """
    p = np.asarray(patches, dtype=np.uint8)
    win = model.hog.win_size
    if p.ndim != 3 or p.shape[1:] != (win, win):
        raise ValueError(f'patches must be (N, {win}, {win}) uint8, got {p.shape}')
    n = p.shape[0]
    if n == 0:
        return np.zeros((0, model.hog.n_features), np.float32)
    prepared = np.stack([model.prepare(x) for x in p]) if model.blur_ksize else p
    strip = np.ascontiguousarray(prepared.transpose(1, 0, 2).reshape(win, n * win))
    hog = model.hog.descriptor()
    feats = hog.compute(strip, (win, win), (0, 0))
    return np.asarray(feats, dtype=np.float32).reshape(n, model.hog.n_features)


def localise(masks: np.ndarray, boxes: np.ndarray, K: np.ndarray, T_vehicle_camera: np.ndarray,
             offset: Tuple[float, float] = (0.0, 0.0), scale: float = 1.0,
             classes: Optional[np.ndarray] = None, image_height: Optional[int] = None
             ) -> Tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """
    Colour, image base point and ground position of cones in boxes.

    ``masks`` (3, h, w) hue-class masks of (a region of) the image, with
    ``offset`` (u0, v0) its top-left corner and ``scale`` the mask pixels
    per image pixel. For each box (N, 4, image pixels): the hue class with
    most pixels in the box (or the given ``classes``), the peak of its
    mask histogram over x (cone centre column), the bottom of the mask
    around that column (base row), projected to the ground and moved one
    base radius further along the viewing ray. Returns ``class_id`` (N,)
    uint8 (``CONE_UNKNOWN`` when the box has no cone colour), ``uv`` (N, 2)
    image base points, ``xyz`` (N, 3) vehicle-frame base centres and
    ``height`` (N,) the mask's height (image pixels). A cone whose mask
    reaches the bottom edge of an image ``image_height`` rows tall has no
    visible base: its position comes from the top of the mask intersected
    with the plane at the small cone's height instead.
    """
    k = check_intrinsics(K)
    b = np.asarray(boxes, dtype=np.float64).reshape(-1, 4)
    n = b.shape[0]
    cls_out = np.zeros(n, np.uint8)
    uv = np.full((n, 2), np.nan)
    height = np.full(n, np.nan)
    top_v = np.full(n, np.nan)
    mh, mw = masks.shape[1:]
    for i in range(n):
        x0 = int(max(math.floor((b[i, 0] - offset[0]) * scale), 0))
        y0 = int(max(math.floor((b[i, 1] - offset[1]) * scale), 0))
        x1 = int(min(math.ceil((b[i, 2] - offset[0]) * scale), mw))
        y1 = int(min(math.ceil((b[i, 3] - offset[1]) * scale), mh))
        if x1 <= x0 or y1 <= y0:
            continue
        sub = masks[:, y0:y1, x0:x1]
        if classes is not None:
            j = HUE_CLASSES.index(int(classes[i])) if int(classes[i]) in HUE_CLASSES else -1
        else:
            counts = np.count_nonzero(sub.reshape(3, -1), axis=1)
            j = int(np.argmax(counts)) if counts.max() > 0 else -1
        if j < 0:
            continue
        m = sub[j]
        px, _py, count = histogram_peak(m, smooth=max(3, (x1 - x0) // 8 | 1))
        if count == 0:
            continue
        top, bottom = mask_base(m, px, max(1.0, (x1 - x0) * 0.15))
        cls_out[i] = HUE_CLASSES[j]
        uv[i] = (x0 + px) / scale + offset[0], (y0 + bottom) / scale + offset[1]
        top_v[i] = (y0 + top) / scale + offset[1]
        height[i] = (bottom - top) / scale
    xyz, valid = pixels_to_ground(np.nan_to_num(uv, nan=-1e9), k, T_vehicle_camera)
    valid &= np.isfinite(uv).all(axis=1)
    cam = optical_pose(T_vehicle_camera)[:3, 3]
    ray = xyz[:, :2] - cam[:2]
    dist = np.linalg.norm(ray, axis=1)
    with np.errstate(invalid='ignore', divide='ignore'):
        xyz[:, :2] += ray / dist[:, None] * BASE_RADIUS
    if image_height is not None:
        cut = np.isfinite(uv).all(axis=1) & (uv[:, 1] >= image_height - 1.0)
        if cut.any():
            tops = np.column_stack([uv[cut, 0], top_v[cut]])
            xyz_top, ok_top = pixels_to_ground(tops, k, T_vehicle_camera,
                                               ground_z=CONE_SIZE[1][1])
            xyz[cut] = xyz_top
            valid[cut] = ok_top
            height[cut] = np.nan
    xyz[:, 2] = 0.0
    cls_out[~valid] = CONE_UNKNOWN
    # Size cue: big orange where the mask is tall for the depth.
    depth = optical_depth(xyz, T_vehicle_camera)
    for i in np.flatnonzero(valid):
        cls_out[i] = size_class(int(cls_out[i]), float(height[i]), float(depth[i]),
                                float(k[1, 1]))
    xyz[~valid] = np.nan
    return cls_out, uv.astype(np.float32), xyz.astype(np.float32), height


def nms(boxes: np.ndarray, scores: np.ndarray, score_threshold: float,
        iou_threshold: float, contain: float = 1.0) -> np.ndarray:
    """
    Return the indices kept by non-maximum suppression (cv2.dnn.NMSBoxes).

    Boxes scoring at most ``score_threshold`` are dropped first. With
    ``contain`` < 1, a box whose overlap covers more than that share of
    the smaller of it and a stronger kept box is suppressed as well (a
    window on part of a cone inside the window on the whole cone).
    """
    b = np.asarray(boxes, dtype=np.float64).reshape(-1, 4)
    s = np.asarray(scores, np.float64).reshape(-1)
    cand = np.flatnonzero(s > score_threshold)
    if cand.size == 0:
        return np.zeros(0, dtype=np.int64)
    b = b[cand]
    rects = np.stack([b[:, 0], b[:, 1], b[:, 2] - b[:, 0], b[:, 3] - b[:, 1]], axis=1)
    # NMSBoxes wants non-negative scores: shift them by the threshold.
    keep = cv2.dnn.NMSBoxes(rects.tolist(), (s[cand] - score_threshold).tolist(),
                            0.0, float(iou_threshold))
    kept = cand[np.asarray(keep, dtype=np.int64).reshape(-1)]
    if contain < 1.0 and kept.size > 1:
        kept = kept[np.argsort(-s[kept], kind='stable')]
        kb = np.asarray(boxes, dtype=np.float64).reshape(-1, 4)[kept]
        iw = np.clip(np.minimum(kb[:, None, 2], kb[None, :, 2]) -
                     np.maximum(kb[:, None, 0], kb[None, :, 0]), 0, None)
        ih = np.clip(np.minimum(kb[:, None, 3], kb[None, :, 3]) -
                     np.maximum(kb[:, None, 1], kb[None, :, 1]), 0, None)
        area = (kb[:, 2] - kb[:, 0]) * (kb[:, 3] - kb[:, 1])
        inside = (iw * ih) / np.maximum(np.minimum(area[:, None], area[None, :]), 1e-9)
        alive = np.ones(kept.size, dtype=bool)
        for i in range(kept.size):
            if alive[i]:
                alive[i + 1:] &= inside[i, i + 1:] < contain
        kept = kept[alive]
    return kept


def hue_masks(image_bgr: np.ndarray, thresholds: HueThresholds = DEFAULT_THRESHOLDS,
              blur_ksize: int = 0) -> np.ndarray:
    """Return the (3, H, W) hue-class masks of a bgr8 image (optionally blurred)."""
    img = cv2.GaussianBlur(image_bgr, (blur_ksize, blur_ksize), 0) if blur_ksize else image_bgr
    return class_masks(cv2.cvtColor(img, cv2.COLOR_BGR2HSV), thresholds)


def merge_duplicates(det: CameraDetections, distance: float) -> CameraDetections:
    """
    Keep the strongest of detections closer than a gate on the ground.

    The gate is ``distance`` (m) plus 3 % of the range, since far cones
    are located less precisely. Detections are visited from the highest
    score down; each suppresses the weaker ones within its gate.
    """
    n = len(det)
    if n < 2 or distance <= 0:
        return det
    order = np.argsort(-det.score, kind='stable')
    xy = det.xyz[order, :2].astype(np.float64)
    gate = distance + 0.03 * np.linalg.norm(xy, axis=1)
    close = np.linalg.norm(xy[:, None, :] - xy[None, :, :], axis=2) < gate[:, None]
    alive = np.ones(n, dtype=bool)
    for i in range(n):
        if alive[i]:
            alive[i + 1:] &= ~close[i, i + 1:]
    keep = order[alive]
    return select(det, keep)


def select(det: CameraDetections, index: np.ndarray) -> CameraDetections:
    """Return the detections at ``index`` (indices or a boolean mask)."""
    return CameraDetections(xyz=det.xyz[index], class_id=det.class_id[index],
                            confidence=det.confidence[index], uv=det.uv[index],
                            box=det.box[index], score=det.score[index])
