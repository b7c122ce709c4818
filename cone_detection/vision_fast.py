# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
Fast vision cone detector, the default mode (no rclpy).

Same outputs as :mod:`cone_detection.vision_reference` with far less work:

1. region of interest: only rows below the horizon (cones stand on the
   ground below the camera), at ``downscale`` resolution (area averaging,
   which also damps pixel noise);
2. colour proposals: HSV hue masks per cone colour, connected components
   (cv2.connectedComponentsWithStats), parts split by a cone's stripes
   joined (:func:`merge_stacked`), blobs of cones standing behind each
   other carved into cone-sized boxes (:func:`carve`) -> boxes with a
   cone-like aspect ratio and a height consistent with the ground-plane
   depth of their base row (between a small cone's and a big cone's
   expected height);
3. each proposal verified by the SVM on one 64x64 window framed like the
   training windows (one HOG call for all proposals);
4. the hue-mask histogram peak and base row at full resolution inside the
   proposal, projected onto the ground plane.
"""

from dataclasses import dataclass
import math
from typing import Tuple

from cone_detection.ground_projection import (check_intrinsics, check_transform, horizon_row,
                                              optical_depth, optical_pose, pixels_to_ground)
from cone_detection.hue import (check_bgr, class_masks, DEFAULT_THRESHOLDS, HUE_CLASSES,
                                HueThresholds)
from cone_detection.svm_model import ConeSvmModel
from cone_detection.vision_common import (CameraDetections, confidence_from_score, extract_windows,
                                          hue_masks, localise, merge_duplicates, nms,
                                          patch_features, window_boxes_for_cones)
import cv2
from hil_bridge.interface.cones import CONE_BIG_ORANGE, CONE_SIZE, CONE_UNKNOWN
import numpy as np


@dataclass(frozen=True)
class FastParams:
    """
    Parameters of the fast detector.

    ``downscale``: integer factor of the proposal image; ``min_area``:
    smallest component (proposal pixels); ``aspect_lo``/``aspect_hi``:
    allowed width / height of a component box; ``size_lo``/``size_hi``:
    allowed height relative to the small (lo) and big (hi) cone's expected
    height at the base row's distance; ``close_px``: vertical closing
    (proposal pixels) against aliasing gaps; ``stack_gap``: vertical gap,
    relative to the two parts' summed heights, under which stacked parts
    of one colour (split by a stripe) are one cone (:func:`merge_stacked`);
    ``split_ratio``: boxes taller than this times the expected cone height
    are also carved into cone-sized boxes (:func:`carve`);
    ``proposal_blur``: Gaussian blur (odd, proposal pixels; 0 = none)
    against pixel noise before the hue masks; ``roi_margin``: rows
    above the horizon still searched (image pixels); ``max_proposals``:
    cap per image (largest first); ``max_range``: proposals whose base row
    lies farther than this (m, depth along the optical axis) are dropped
    before the SVM (inf = none; far cones are many, small and poorly
    placed); ``nms_iou``, ``contain``, ``merge_distance``,
    ``hue_blur``, ``score_offset`` as in the reference mode.
    """

    downscale: int = 2
    min_area: int = 6
    aspect_lo: float = 0.25
    aspect_hi: float = 1.6
    size_lo: float = 0.35
    size_hi: float = 1.6
    close_px: int = 3
    stack_gap: float = 0.8
    split_ratio: float = 1.3
    proposal_blur: int = 3
    roi_margin: int = 8
    max_proposals: int = 80
    max_range: float = 20.0
    nms_iou: float = 0.3
    contain: float = 0.7
    merge_distance: float = 0.4
    hue_blur: int = 0
    score_offset: float = 0.0

    def __post_init__(self) -> None:
        """Validate the parameters."""
        for name in ('proposal_blur', 'hue_blur'):
            value = getattr(self, name)
            if value < 0 or (value > 1 and value % 2 == 0):
                raise ValueError(f'{name} must be 0, 1 or odd, got {value}')
        if self.downscale not in (1, 2, 3, 4):
            raise ValueError(f'downscale must be 1..4, got {self.downscale}')
        if not (0 < self.aspect_lo < self.aspect_hi) or not (0 < self.size_lo < self.size_hi):
            raise ValueError('need 0 < aspect_lo < aspect_hi and 0 < size_lo < size_hi')
        if not self.max_range > 0.0:
            raise ValueError(f'max_range must be > 0, got {self.max_range}')
        if self.min_area < 1 or self.max_proposals < 1 or self.close_px < 0:
            raise ValueError('min_area, max_proposals must be >= 1, close_px >= 0')


def component_boxes(mask: np.ndarray, min_area: int) -> np.ndarray:
    """
    Return the boxes (N, 4: x, y, width, height) float64 of a mask's blobs.

    Blobs are the 8-connected components of the non-zero pixels, as
    ``cv2.connectedComponentsWithStats`` finds them, traced with
    ``cv2.findContours`` (outer borders only), which is several times
    faster on the sparse masks of a road scene (the stats pass of
    connectedComponentsWithStats costs about 1 ms per 640x260 mask however
    empty it is). A blob is kept when at least ``min_area`` mask pixels
    lie in its box (its own pixels, plus any of a blob that shares the
    box); a blob inside another blob's hole is part of the outer box.
    """
    contours, _hier = cv2.findContours(mask, cv2.RETR_EXTERNAL, cv2.CHAIN_APPROX_SIMPLE)
    if not contours:
        return np.zeros((0, 4))
    rects = np.array([cv2.boundingRect(c) for c in contours], np.int64).reshape(-1, 4)
    area = np.array([cv2.countNonZero(mask[y:y + h, x:x + w]) for x, y, w, h in rects])
    return rects[area >= min_area].astype(np.float64)


def _components(link: np.ndarray) -> Tuple[int, np.ndarray]:
    """
    Return the connected components of a small boolean adjacency (N, N).

    Returns ``(count, label)`` like scipy.sparse.csgraph.connected_components
    (labels 0..count-1 in order of each component's first node), by
    squaring the reachability matrix until it is closed: O(N^3 log N), far
    faster than building a sparse graph for the few dozen boxes of an image.
    """
    reach = (link | link.T | np.eye(link.shape[0], dtype=bool)).astype(np.float32)
    while True:
        nxt = (reach @ reach > 0.0).astype(np.float32)
        if np.array_equal(nxt, reach):
            break
        reach = nxt
    first = reach.argmax(axis=1)
    _uniq, label = np.unique(first, return_inverse=True)
    return int(_uniq.size), label.reshape(-1)


def merge_stacked(boxes: np.ndarray, gap: float) -> np.ndarray:
    """
    Join boxes (N, 4) of one colour that are parts of one striped cone.

    Two boxes belong together when their columns overlap by half the
    narrower one's width and the vertical gap between them is under
    ``gap`` times their summed heights; groups (connected components of
    that relation) add their bounding box to the
    parts (the SVM and non-maximum suppression then pick the whole cone,
    and a wrong union of two cones above each other loses nothing).
    """
    n = boxes.shape[0]
    if n < 2:
        return boxes
    x0, y0, x1, y1 = boxes.T
    overlap = np.minimum(x1[:, None], x1[None, :]) - np.maximum(x0[:, None], x0[None, :])
    narrow = np.minimum((x1 - x0)[:, None], (x1 - x0)[None, :])
    vgap = np.maximum(y0[:, None], y0[None, :]) - np.minimum(y1[:, None], y1[None, :])
    tall = (y1 - y0)[:, None] + (y1 - y0)[None, :]
    link = (overlap >= 0.5 * narrow) & (vgap <= gap * tall)
    if not link[~np.eye(n, dtype=bool)].any():
        return boxes
    count, label = _components(link)
    sizes = np.bincount(label, minlength=count)
    out = np.empty((count, 4))
    out[:, 0] = np.full(count, np.inf)
    out[:, 1] = np.full(count, np.inf)
    out[:, 2:] = -np.inf
    np.minimum.at(out[:, 0], label, x0)
    np.minimum.at(out[:, 1], label, y0)
    np.maximum.at(out[:, 2], label, x1)
    np.maximum.at(out[:, 3], label, y1)
    return np.concatenate([boxes, out[sizes > 1]])


def expected_heights(boxes: np.ndarray, K: np.ndarray, T_vehicle_camera: np.ndarray
                     ) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """
    Return the small and big cone heights (pixels) expected at boxes' base rows.

    The base row's centre is projected onto the ground; its depth
    gives ``fy * height / depth``. ``valid`` is False where
    the base row is at or above the horizon. The distance is the depth
    along the optical axis (objects off-centre are not smaller).
    """
    b = np.asarray(boxes, np.float64).reshape(-1, 4)
    base = np.stack([0.5 * (b[:, 0] + b[:, 2]), b[:, 3]], axis=1)
    ground, valid = pixels_to_ground(base, K, T_vehicle_camera)
    depth = optical_depth(ground, T_vehicle_camera)
    fy = float(np.asarray(K)[1, 1])
    with np.errstate(invalid='ignore', divide='ignore'):
        small_h = fy * CONE_SIZE[1][1] / depth
        big_h = fy * CONE_SIZE[CONE_BIG_ORANGE][1] / depth
    return small_h, big_h, valid


def carve(mask: np.ndarray, box: np.ndarray, f: int, top: int, K: np.ndarray,
          T_vehicle_camera: np.ndarray, max_parts: int = 4) -> np.ndarray:
    """
    Split a tall or wide colour box into boxes of single cones.

    ``mask`` is the class mask at proposal scale (``f`` image pixels per
    mask pixel, first row at image row ``top``), ``box`` the tall box in
    image pixels. From the lowest mask row up: cut the rows and columns a
    cone standing there would cover, box the mask pixels in them, and
    continue with the rows above. Returns (M, 4) image boxes.
    """
    xa, xb = int(box[0]) // f, int(math.ceil(box[2] / f))
    ya, yb = (int(box[1]) - top) // f, int(math.ceil((box[3] - top) / f))
    sub = mask[ya:yb, xa:xb] > 0
    rows = np.flatnonzero(sub.any(axis=1))
    out = []
    k = np.asarray(K, dtype=np.float64)
    fx, fy, skew, cx, cy = k[0, 0], k[1, 1], k[0, 1], k[0, 2], k[1, 2]
    t_opt = optical_pose(T_vehicle_camera)
    r_z, o_z = t_opt[2, :3], float(t_opt[2, 3])
    while rows.size and len(out) < max_parts:
        bottom = int(rows[-1])
        cols = np.flatnonzero(sub[bottom])
        u = (xa + 0.5 * (cols[0] + cols[-1] + 1)) * f
        v = top + (ya + bottom + 1) * f
        # Ground hit of pixel (u, v), as pixels_to_ground: the optical ray
        # (x, y, 1) reaches z = 0 at scale s, which is also its depth.
        ry = (v - cy) / fy
        rx = (u - cx) / fx - ry * skew / fx
        down = float(r_z[0] * rx + r_z[1] * ry + r_z[2])
        scale = -o_z / down if down != 0.0 else math.nan
        if not (math.isfinite(scale) and scale > 0.0):
            break
        depth = max(scale, 1e-3)
        h = fy * CONE_SIZE[1][1] / depth / f
        # Only columns a cone standing there can cover (1.3 big-cone widths
        # around the lowest pixels), so an object of the same colour beside
        # or behind it stays out.
        half = 0.65 * fy * CONE_SIZE[CONE_BIG_ORANGE][0] / depth / f + 1.0
        centre = float(np.median(cols))
        c_lo = max(int(math.floor(centre - half)), 0)
        c_hi = min(int(math.ceil(centre + half)) + 1, sub.shape[1])
        r0 = min(max(int(round(bottom + 1 - h)), 0), bottom)
        inside = c_lo + np.flatnonzero(sub[r0:bottom + 1, c_lo:c_hi].any(axis=0))
        cols = inside if inside.size else cols
        out.append([(xa + cols[0]) * f, top + (ya + r0) * f, (xa + cols[-1] + 1) * f, v])
        rows = rows[rows < r0 - max(1, int(0.1 * h))]
    return np.array(out, np.float64).reshape(-1, 4)


def propose(image_bgr: np.ndarray, K: np.ndarray, T_vehicle_camera: np.ndarray,
            params: FastParams = FastParams(),
            thresholds: HueThresholds = DEFAULT_THRESHOLDS) -> Tuple[np.ndarray, np.ndarray]:
    """
    Return colour proposals: boxes (N, 4) in image pixels and hue classes (N,).

    Boxes are components of the hue masks below the horizon whose aspect
    ratio and height fit a cone standing at their base row's distance.
    """
    height, width = image_bgr.shape[:2]
    f = params.downscale
    fy = float(K[1, 1])
    top = int(max(horizon_row(K, T_vehicle_camera, width) - params.roi_margin, 0))
    top -= top % f
    if top >= height - f:
        return np.zeros((0, 4)), np.zeros(0, np.uint8)
    roi = image_bgr[top:]
    small = roi if f == 1 else cv2.resize(roi, (width // f, (height - top) // f),
                                          interpolation=cv2.INTER_AREA)
    if params.proposal_blur > 1:
        small = cv2.GaussianBlur(small, (params.proposal_blur, params.proposal_blur), 0)
    masks = class_masks(cv2.cvtColor(small, cv2.COLOR_BGR2HSV), thresholds)
    kernel = cv2.getStructuringElement(cv2.MORPH_RECT, (1, params.close_px)) \
        if params.close_px > 1 else None
    boxes, classes = [], []
    for j, cls in enumerate(HUE_CLASSES):
        m = masks[j] if kernel is None else cv2.morphologyEx(masks[j], cv2.MORPH_CLOSE, kernel)
        st = component_boxes(m, params.min_area)
        if st.shape[0] == 0:
            continue
        x0 = st[:, 0] * f
        y0 = st[:, 1] * f + top
        bw = st[:, 2] * f
        bh = st[:, 3] * f
        parts = merge_stacked(np.stack([x0, y0, x0 + bw, y0 + bh], axis=1), params.stack_gap)
        # Cones behind each other (or a cone before an object of its
        # colour) touch in the image: carve tall or wide boxes into
        # cone-sized pieces from the bottom up.
        small_h, big_h, valid = expected_heights(parts, K, T_vehicle_camera)
        if math.isfinite(params.max_range):
            # the base of a blob is its nearest cone: beyond the range, all are
            with np.errstate(invalid='ignore', divide='ignore'):
                valid &= fy * CONE_SIZE[1][1] / small_h <= params.max_range
        limit = params.split_ratio * (big_h if cls == HUE_CLASSES[2] else small_h)
        wide = (parts[:, 2] - parts[:, 0]) > params.split_ratio * 1.25 * big_h
        tall = np.flatnonzero(valid & (((parts[:, 3] - parts[:, 1]) > limit) | wide))
        extra = [carve(m, parts[i], f, top, K, T_vehicle_camera) for i in tall]
        if extra:
            parts = np.concatenate([parts] + extra)
        boxes.append(parts)
        classes.append(np.full(parts.shape[0], cls, np.uint8))
    if not boxes:
        return np.zeros((0, 4)), np.zeros(0, np.uint8)
    b = np.concatenate(boxes)
    c = np.concatenate(classes)
    bw, bh = b[:, 2] - b[:, 0], b[:, 3] - b[:, 1]
    aspect = bw / bh
    small_h, big_h, valid = expected_heights(b, K, T_vehicle_camera)
    ok = valid & (aspect >= params.aspect_lo) & (aspect <= params.aspect_hi)
    ok &= (bh >= params.size_lo * small_h) & (bh <= params.size_hi * big_h)
    if math.isfinite(params.max_range):
        with np.errstate(invalid='ignore', divide='ignore'):
            ok &= fy * CONE_SIZE[1][1] / small_h <= params.max_range
    # Cones cut by the bottom edge have no base row: keep them when big.
    cut = (b[:, 3] >= height - f) & (bh >= 0.1 * height)
    ok |= cut & (aspect >= params.aspect_lo)
    b, c = b[ok], c[ok]
    if b.shape[0] > params.max_proposals:
        order = np.argsort(-(b[:, 3] - b[:, 1]), kind='stable')[:params.max_proposals]
        b, c = b[order], c[order]
    return b, c


def detect_fast(image_bgr: np.ndarray, K: np.ndarray, T_vehicle_camera: np.ndarray,
                model: ConeSvmModel, params: FastParams = FastParams(),
                thresholds: HueThresholds = DEFAULT_THRESHOLDS) -> CameraDetections:
    """
    Detect cones in one bgr8 image with colour proposals verified by the SVM.

    Arguments and result as :func:`cone_detection.vision_reference.detect_reference`.
    """
    check_bgr(image_bgr)
    k = check_intrinsics(K)
    t = check_transform(T_vehicle_camera)
    boxes, classes = propose(image_bgr, k, t, params, thresholds)
    if boxes.shape[0] == 0:
        return CameraDetections.empty()
    grey = cv2.cvtColor(image_bgr, cv2.COLOR_BGR2GRAY)
    windows = window_boxes_for_cones(boxes, model.cone_height, model.hog.win_size)
    feats = patch_features(model, extract_windows(grey, windows, model.hog.win_size))
    scores = model.decision(feats)
    threshold = model.threshold + params.score_offset
    keep = nms(boxes, scores, threshold, params.nms_iou, params.contain)
    if keep.size == 0:
        return CameraDetections.empty()
    height, width = image_bgr.shape[:2]
    # One hue-mask pass over the rows of all kept boxes (plus a small
    # margin), then one localise call: the masks inside each box are the
    # same as those of a crop around it (no blur by default), and the
    # per-cone Python work (crop, colour conversion, projection) goes.
    kb = boxes[keep]
    ya = int(max(math.floor(kb[:, 1].min() - 2), 0))
    yb = int(min(math.ceil(kb[:, 3].max() + 2), height))
    masks = hue_masks(image_bgr[ya:yb], thresholds, params.hue_blur)
    cls, uv, xyz, _h = localise(masks, kb, k, t, offset=(0.0, float(ya)),
                                classes=classes[keep], image_height=height)
    good = cls != CONE_UNKNOWN
    idx = keep[good]
    det = CameraDetections(xyz=xyz[good], class_id=cls[good],
                           confidence=confidence_from_score(scores[idx], threshold),
                           uv=uv[good], box=boxes[idx].astype(np.float32),
                           score=scores[idx].astype(np.float32))
    return merge_duplicates(det, params.merge_distance)
