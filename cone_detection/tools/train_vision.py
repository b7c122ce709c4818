# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
Training pipeline of the vision cone classifier (no rclpy).

``python -m cone_detection.tools.train_vision [--seed 0] [--out PATH] [--images DIR]``

1. **Views**: camera images with ground-truth cones. Simulated views put a
   rig camera at random poses along generated tracks
   (``hil_bridge.sim.tracks.random_track``), with random lighting,
   distractor boxes and, for some views, pixel noise, and render them with
   the built-in simulator's camera (``hil_bridge.sim.camera``). Recorded
   views come from ``--images DIR`` (format below).
2. **Patches**: 64x64 windows framed like the detectors frame them
   (cone height = ``cone_height`` pixels of the window): jittered
   positives on every visible cone, negatives at random places and
   scales, parts of cones, wrong scales and every colour proposal of the
   fast detector that is not a cone.
3. **Hard-negative mining**: the first SVM slides over cone-free parts of
   the training views; its false positives are added and it is retrained.
4. **SVM**: scikit-learn ``LinearSVC`` (``random_state`` = seed) on HOG
   features; the decision threshold is tuned on validation views (fast
   detector, cones within 12 m) for precision >= 99 %.
5. **Metrics** on held-out views of unseen tracks (window precision /
   recall, and detection recall, precision, colour accuracy and position
   error within 12 m, clean and with N(0, 20^2) pixel noise) are written
   into the model file with the seed and the software versions.

Everything is deterministic for a given seed.

Recorded views (``--images DIR``): ``DIR/labels.json``::

    {"views": [{"image": "0001.png",
                "K": [[fx, 0, cx], [0, fy, cy], [0, 0, 1]],
                "T_vehicle_camera": [[...4x4...]],   # optional, default rig_left
                "cones": [{"x": 4.2, "y": 1.5, "class": "blue"}, ...]},
               {"image": "0002.jpg", "K": ...,
                "boxes": [{"box": [u0, v0, u1, v1], "class": "yellow"}, ...]}]}

``cones`` are base centres in the vehicle frame (REP-103, metres);
``boxes`` are pixel boxes of whole, unoccluded cones. Class names are
``blue``, ``yellow``, ``orange``, ``big_orange``.
"""

import argparse
from dataclasses import dataclass
import json
import math
import os
import platform
import sys
import time
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple

from cone_detection.ground_projection import (horizon_row, map_to_vehicle, pose_to_matrix,
                                              project_to_image)
from cone_detection.svm_model import ConeSvmModel, DEFAULT_MODEL_PATH, HogParams, save_model
from cone_detection.vision_common import (CameraDetections, extract_windows, patch_features,
                                          window_boxes_for_cones)
from cone_detection.vision_fast import detect_fast, propose
from cone_detection.vision_reference import ReferenceParams, scan_windows
import cv2
from hil_bridge.interface.cones import CONE_TAGS
from hil_bridge.interface.frames import Pose
import numpy as np
from scipy.optimize import linear_sum_assignment

#: Range (m) within which the vision goals are stated.
EVAL_RANGE = 12.0


@dataclass
class View:
    """
    One camera image with ground truth.

    ``cone_xy`` (N, 2) base centres in the vehicle frame (m) and
    ``cone_class`` (N,); or, for recorded views labelled in pixels,
    ``boxes`` (M, 4) with ``box_class`` (M,). ``occluders`` (K, 5): image
    boxes and distances (m) of other objects that may hide cones.
    """

    image: np.ndarray
    K: np.ndarray
    T_vehicle_camera: np.ndarray
    cone_xy: np.ndarray
    cone_class: np.ndarray
    boxes: Optional[np.ndarray] = None
    box_class: Optional[np.ndarray] = None
    source: str = 'sim'
    occluders: Optional[np.ndarray] = None


def rig_cameras(rig: str = 'hil_rig.yaml') -> List[Tuple[str, Any]]:
    """Return ``(sensor_id, SensorSpec)`` of the rig's RGB cameras."""
    from hil_bridge.interface.rig import load_rig
    return [(s.sensor_id, s) for s in load_rig(rig) if s.blueprint == 'sensor.camera.rgb']


def cone_boxes(cone_xy: np.ndarray, cone_class: np.ndarray, K: np.ndarray,
               T_vehicle_camera: np.ndarray, width: int, height: int,
               occluders: Optional[np.ndarray] = None
               ) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """
    Return image boxes (N, 4), distance (N,) and visibility (N,) of cones.

    A cone is visible when in front of the camera, its whole box inside the
    image and at most 30 % of its box covered by nearer cones or nearer
    ``occluders`` (K, 5: image box, distance in m).
    """
    from hil_bridge.interface.cones import cone_dimensions
    xy = np.asarray(cone_xy, np.float64).reshape(-1, 2)
    n = xy.shape[0]
    if n == 0:
        return np.zeros((0, 4)), np.zeros(0), np.zeros(0, bool)
    rb, rt, h = cone_dimensions(np.asarray(cone_class, np.uint8))
    ang = np.linspace(0.0, 2.0 * math.pi, 16, endpoint=False)
    ring = np.stack([np.cos(ang), np.sin(ang)], axis=1)
    lo = xy[:, None, :] + rb[:, None, None] * ring[None]
    hi = xy[:, None, :] + rt[:, None, None] * ring[None]
    pts = np.concatenate([np.concatenate([lo, np.zeros((n, 16, 1))], axis=2),
                          np.concatenate([hi, np.broadcast_to(h[:, None, None],
                                                              (n, 16, 1))], axis=2)], axis=1)
    uv, depth = project_to_image(pts.reshape(-1, 3), K, T_vehicle_camera)
    uv = uv.reshape(n, 32, 2)
    front = depth.reshape(n, 32).min(axis=1) > 0.3
    boxes = np.full((n, 4), np.nan)
    boxes[front] = np.concatenate([uv[front].min(axis=1), uv[front].max(axis=1)], axis=1)
    cam = np.asarray(T_vehicle_camera)[:2, 3]
    dist = np.linalg.norm(xy - cam, axis=1)
    inside = front & (boxes[:, 0] >= 0) & (boxes[:, 1] >= 0) & \
        (boxes[:, 2] <= width) & (boxes[:, 3] <= height)
    visible = inside.copy()
    b = np.nan_to_num(boxes)
    area = np.maximum((b[:, 2] - b[:, 0]) * (b[:, 3] - b[:, 1]), 1e-9)
    iw = np.clip(np.minimum(b[:, None, 2], b[None, :, 2]) -
                 np.maximum(b[:, None, 0], b[None, :, 0]), 0, None)
    ih = np.clip(np.minimum(b[:, None, 3], b[None, :, 3]) -
                 np.maximum(b[:, None, 1], b[None, :, 1]), 0, None)
    nearer = (dist[None, :] < dist[:, None]) & front[None, :]
    covered = ((iw * ih) * nearer).max(axis=1) / area
    if occluders is not None and occluders.shape[0]:
        o = occluders
        iw = np.clip(np.minimum(b[:, None, 2], o[None, :, 2]) -
                     np.maximum(b[:, None, 0], o[None, :, 0]), 0, None)
        ih = np.clip(np.minimum(b[:, None, 3], o[None, :, 3]) -
                     np.maximum(b[:, None, 1], o[None, :, 1]), 0, None)
        hidden = ((iw * ih) * (o[None, :, 4] < dist[:, None])).max(axis=1) / area
        covered = np.maximum(covered, hidden)
    visible &= covered <= 0.3
    return boxes, dist, visible


def box_occluders(centre: np.ndarray, yaw: np.ndarray, size: np.ndarray, K: np.ndarray,
                  T_vehicle_camera: np.ndarray) -> np.ndarray:
    """Return image boxes + distance (K, 5) of vehicle-frame boxes (centre, yaw, size)."""
    out = []
    signs = np.array([[sx, sy, sz] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)])
    cam = np.asarray(T_vehicle_camera)[:3, 3]
    for c, a, s in zip(centre, yaw, size):
        rot = np.array([[math.cos(a), -math.sin(a), 0], [math.sin(a), math.cos(a), 0],
                        [0, 0, 1]])
        corners = c + (signs * s / 2) @ rot.T
        uv, depth = project_to_image(corners, K, T_vehicle_camera)
        if np.all(depth <= 0.05):
            continue
        if np.any(depth <= 0.05):
            out.append([-1e9, -1e9, 1e9, 1e9, 0.0])
            continue
        near = float(np.linalg.norm(corners[:, :2] - cam[:2], axis=1).min())
        out.append([uv[:, 0].min(), uv[:, 1].min(), uv[:, 0].max(), uv[:, 1].max(), near])
    return np.array(out, np.float64).reshape(-1, 5)


class SimViews:
    """
    Random views along generated tracks, rendered by the built-in camera.

    ``seed`` fixes tracks, poses, lighting and noise; ``tracks`` are the
    seeds of ``random_track``; ``noise_share`` of the views get N(0,
    sigma^2) pixel noise with sigma one of 5, 10, 15, 20 (``noise`` forces
    one sigma for every view instead).
    """

    def __init__(self, seed: int, tracks: Sequence[int], rig: str = 'hil_rig.yaml',
                 noise_share: float = 0.3, noise: Optional[float] = None,
                 boxes: bool = True) -> None:
        from hil_bridge.sim.camera import CameraRenderer, Lighting
        from hil_bridge.sim.tracks import random_track
        self.rng = np.random.default_rng(seed)
        # Pixel noise draws from its own generator, so a clean and a noisy
        # SimViews of one seed show the same scenes.
        self.noise_rng = np.random.default_rng([seed, 1])
        self.tracks = [random_track(int(s)) for s in tracks]
        self.cameras = []
        for _sid, spec in rig_cameras(rig):
            a = spec.attributes
            size = (int(a['image_size_x']), int(a['image_size_y']), float(a['fov']))
            self.cameras.append((spec, size))
        if not self.cameras:
            raise ValueError(f'rig {rig} has no sensor.camera.rgb')
        self._renderers: Dict[Tuple[float, ...], Any] = {}
        self._Renderer = CameraRenderer
        self._Lighting = Lighting
        self.noise_share = float(noise_share)
        self.noise = noise
        self.boxes = bool(boxes)

    def _renderer(self, size: Tuple[int, int, float], noise: float) -> Any:
        key = size + (round(noise, 1),)
        if key not in self._renderers:
            self._renderers[key] = self._Renderer(size[0], size[1], size[2], noise_stddev=noise)
        return self._renderers[key]

    def take(self, n: int) -> Iterator[View]:
        """Yield ``n`` views."""
        from hil_bridge.sim.world import WorldGeometry
        rng = self.rng
        for i in range(n):
            track = self.tracks[i % len(self.tracks)]
            cl = track.centerline
            k = int(rng.integers(0, cl.shape[0]))
            tangent = cl[(k + 2) % cl.shape[0]] - cl[k - 2]
            yaw = math.atan2(tangent[1], tangent[0]) + rng.normal(0.0, 0.12)
            normal = np.array([-math.sin(yaw), math.cos(yaw)])
            pos = cl[k] + normal * rng.uniform(-0.6, 0.6)
            ego = Pose(x=float(pos[0]), y=float(pos[1]), yaw=float(yaw))
            spec, size = self.cameras[int(rng.integers(0, len(self.cameras)))]
            mount = spec.mount
            mount = Pose(mount.x, mount.y, mount.z, mount.roll + rng.normal(0, 0.01),
                         mount.pitch + rng.normal(0, 0.02), mount.yaw)
            t_vc = pose_to_matrix(mount)
            t_mv = pose_to_matrix(ego)
            draw = rng.random(2)
            if self.noise is not None:
                noise = float(self.noise)
            else:
                # Four levels up to 20 (each renderer keeps a noise bank).
                noise = 5.0 * (1 + int(draw[1] * 4)) if draw[0] < self.noise_share else 0.0
            renderer = self._renderer(size, noise)
            if i % 4 == 0:
                renderer.lighting = self._Lighting.random(rng)
            cones = track.cones
            world = WorldGeometry(cone_xy=cones.xy, cone_class=cones.class_id,
                                  cone_up=np.ones(len(cones), bool))
            if self.boxes and rng.random() < 0.5:
                nb = int(rng.integers(1, 4))
                fwd = np.array([math.cos(yaw), math.sin(yaw)])
                centre = pos + fwd[None] * rng.uniform(6, 30, (nb, 1)) + \
                    normal[None] * rng.uniform(-8, 8, (nb, 1))
                size3 = np.column_stack([rng.uniform(0.5, 4.5, nb), rng.uniform(0.5, 2.0, nb),
                                         rng.uniform(0.3, 1.6, nb)])
                world.box_center = np.column_stack([centre, size3[:, 2] / 2])
                world.box_yaw = rng.uniform(-math.pi, math.pi, nb)
                world.box_size = size3
                world.box_color = rng.integers(0, 256, (nb, 3)).astype(np.uint8)
            image = renderer.render(world, t_mv @ t_vc, self.noise_rng)
            cone_v = map_to_vehicle(np.column_stack([cones.xy, np.zeros(len(cones))]), ego)
            near = np.linalg.norm(cone_v[:, :2], axis=1) < 60.0
            occ = None
            if world.box_center.shape[0]:
                occ = box_occluders(map_to_vehicle(world.box_center, ego), world.box_yaw - yaw,
                                    world.box_size, renderer.K, t_vc)
            yield View(image=image, K=renderer.K.copy(), T_vehicle_camera=t_vc,
                       cone_xy=cone_v[near, :2], cone_class=cones.class_id[near].copy(),
                       occluders=occ)


def recorded_views(directory: str, rig: str = 'hil_rig.yaml') -> Iterator[View]:
    """
    Yield views from ``directory/labels.json`` (format in the module doc).

    Raises ``ValueError`` naming the file and entry on malformed labels.
    """
    path = os.path.join(directory, 'labels.json')
    if not os.path.isfile(path):
        raise FileNotFoundError(f'recorded views: {path} not found')
    with open(path, 'r', encoding='utf-8') as stream:
        try:
            data = json.load(stream)
        except json.JSONDecodeError as err:
            raise ValueError(f'{path}: not JSON: {err}') from err
    entries = data.get('views') if isinstance(data, dict) else None
    if not isinstance(entries, list):
        raise ValueError(f'{path}: expected {{"views": [...]}}')
    default_mount = pose_to_matrix(rig_cameras(rig)[0][1].mount)
    for i, entry in enumerate(entries):
        where = f'{path}: views[{i}]'
        try:
            image = cv2.imread(os.path.join(directory, entry['image']), cv2.IMREAD_COLOR)
            if image is None:
                raise ValueError(f'cannot read image {entry["image"]!r}')
            k = np.asarray(entry['K'], np.float64)
            t = np.asarray(entry.get('T_vehicle_camera', default_mount), np.float64)
            cones = entry.get('cones', [])
            xy = np.array([[c['x'], c['y']] for c in cones], np.float64).reshape(-1, 2)
            cls = np.array([CONE_TAGS[c['class']] for c in cones], np.uint8)
            boxes = box_cls = None
            if 'boxes' in entry:
                boxes = np.array([b['box'] for b in entry['boxes']], np.float64).reshape(-1, 4)
                box_cls = np.array([CONE_TAGS[b['class']] for b in entry['boxes']], np.uint8)
        except (KeyError, TypeError, ValueError) as err:
            raise ValueError(f'{where}: {err}') from err
        yield View(image=image, K=k, T_vehicle_camera=t, cone_xy=xy, cone_class=cls,
                   boxes=boxes, box_class=box_cls, source='recorded')


def view_truth(view: View) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Return the view's cone boxes (N, 4), classes (N,) and visibility (N,)."""
    height, width = view.image.shape[:2]
    if view.boxes is not None:
        return view.boxes, view.box_class, np.ones(view.boxes.shape[0], bool)
    boxes, _dist, vis = cone_boxes(view.cone_xy, view.cone_class, view.K,
                                   view.T_vehicle_camera, width, height, view.occluders)
    return boxes, view.cone_class, vis


def _iou(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Return the IoU matrix (len(a), len(b)) of boxes."""
    if a.shape[0] == 0 or b.shape[0] == 0:
        return np.zeros((a.shape[0], b.shape[0]))
    iw = np.clip(np.minimum(a[:, None, 2], b[None, :, 2]) -
                 np.maximum(a[:, None, 0], b[None, :, 0]), 0, None)
    ih = np.clip(np.minimum(a[:, None, 3], b[None, :, 3]) -
                 np.maximum(a[:, None, 1], b[None, :, 1]), 0, None)
    inter = iw * ih
    area_a = (a[:, 2] - a[:, 0]) * (a[:, 3] - a[:, 1])
    area_b = (b[:, 2] - b[:, 0]) * (b[:, 3] - b[:, 1])
    return inter / np.maximum(area_a[:, None] + area_b[None, :] - inter, 1e-9)


def near_cone(windows: np.ndarray, boxes: np.ndarray, cone_height: int,
              win: int = 64) -> np.ndarray:
    """Return windows ambiguous for training (close to holding a cone)."""
    if boxes.shape[0] == 0 or windows.shape[0] == 0:
        return np.zeros(windows.shape[0], bool)
    side = windows[:, 2] - windows[:, 0]
    wc = 0.5 * (windows[:, :2] + windows[:, 2:])
    bc = 0.5 * (boxes[:, :2] + boxes[:, 2:])
    off = np.abs(wc[:, None, :] - bc[None, :, :]).max(axis=2) / side[:, None]
    rel = (boxes[None, :, 3] - boxes[None, :, 1]) * (win / cone_height) / side[:, None]
    return ((off < 0.25) & (rel > 0.5) & (rel < 1.6)).any(axis=1)


def sample_windows(view: View, rng: np.random.Generator, cone_height: int,
                   n_neg: int = 40, n_jitter: int = 2) -> Tuple[np.ndarray, np.ndarray]:
    """
    Return training windows (N, 4) and labels (N,) 1 = cone of one view.

    Positives: each visible, whole cone at least 8 px tall, framed as the
    detectors frame it plus ``n_jitter`` jittered copies (scale x0.8..1.25,
    shift up to 10 % of the side). Negatives: random squares below the
    horizon, cone parts (shifted half a window), wrong scales (x0.4, x2.5)
    and the fast detector's colour proposals that are not cones; windows
    in between (neither clearly cone nor clearly not) are left out.
    """
    height, width = view.image.shape[:2]
    boxes, _cls, vis = view_truth(view)
    good = vis & ((boxes[:, 3] - boxes[:, 1]) >= 8)
    pos_boxes = boxes[good]
    all_boxes = boxes[np.isfinite(boxes).all(axis=1)]
    wins = [window_boxes_for_cones(pos_boxes, cone_height)]
    for _ in range(n_jitter):
        base = window_boxes_for_cones(pos_boxes, cone_height)
        side = base[:, 2] - base[:, 0]
        s = np.exp(rng.uniform(math.log(0.8), math.log(1.25), side.shape))
        c = 0.5 * (base[:, :2] + base[:, 2:]) + rng.uniform(-0.1, 0.1, (side.size, 2)) * \
            side[:, None]
        ns = side * s
        wins.append(np.column_stack([c - ns[:, None] / 2, c + ns[:, None] / 2]))
    pos = np.concatenate(wins)
    negs = []
    top = horizon_row(view.K, view.T_vehicle_camera, width)
    side = np.exp(rng.uniform(math.log(20), math.log(min(260, height)), n_neg))
    x0 = rng.uniform(-0.2, 1.0, n_neg) * (width - side)
    y0 = top - 0.5 * side + rng.uniform(0.0, 1.0, n_neg) * (height - top)
    negs.append(np.column_stack([x0, y0, x0 + side, y0 + side]))
    if pos_boxes.shape[0]:
        base = window_boxes_for_cones(pos_boxes, cone_height)
        sd = base[:, 2] - base[:, 0]
        c = 0.5 * (base[:, :2] + base[:, 2:])
        for dx, dy, sc in ((0.55, 0, 1), (-0.55, 0, 1), (0, 0.5, 1), (0, -0.5, 1),
                           (0, 0, 0.4), (0, 0, 2.5), (0.4, 0.4, 1), (-0.4, -0.4, 1),
                           (0, -0.2, 0.5), (0, 0.2, 0.5), (0, 0, 0.5), (0, -0.15, 0.6)):
            cc = c + np.column_stack([dx * sd, dy * sd])
            ns = sd * sc
            negs.append(np.column_stack([cc - ns[:, None] / 2, cc + ns[:, None] / 2]))
    props, _pc = propose(view.image, view.K, view.T_vehicle_camera)
    if props.shape[0]:
        iou = _iou(props, all_boxes).max(axis=1) if all_boxes.shape[0] else \
            np.zeros(props.shape[0])
        negs.append(window_boxes_for_cones(props[iou < 0.3], cone_height))
    neg = np.concatenate(negs)
    neg = neg[~near_cone(neg, all_boxes, cone_height)]
    windows = np.concatenate([pos, neg])
    labels = np.concatenate([np.ones(pos.shape[0], np.int8), np.zeros(neg.shape[0], np.int8)])
    return windows, labels


def features_of(model: ConeSvmModel, view: View, windows: np.ndarray) -> np.ndarray:
    """Return HOG features (N, F) of windows (N, 4) of a view's image."""
    grey = cv2.cvtColor(view.image, cv2.COLOR_BGR2GRAY)
    return patch_features(model, extract_windows(grey, windows, model.hog.win_size))


def fit_svm(x: np.ndarray, y: np.ndarray, seed: int, c: float = 0.05) -> Tuple[np.ndarray, float]:
    """Fit a linear SVM (sklearn LinearSVC, primal); return weights and bias."""
    from sklearn.svm import LinearSVC
    clf = LinearSVC(C=c, loss='squared_hinge', dual=False, class_weight='balanced',
                    random_state=seed, max_iter=5000, tol=1e-4)
    clf.fit(x, y)
    return clf.coef_.ravel().astype(np.float32), float(clf.intercept_[0])


def mine_hard_negatives(model: ConeSvmModel, views: Sequence[View], rng: np.random.Generator,
                        per_view: int = 30) -> Tuple[List[np.ndarray], List[int]]:
    """
    Slide the model over cone-free crops of views; return false positives.

    For each view a crop below the horizon away from every cone is scanned
    (stride 8, three scales); windows scoring above ``threshold - 0.5``
    that do not frame a cone are the hard negatives (features, view index).
    """
    feats, owners = [], []
    params = ReferenceParams(scales=(1.6, 1.0, 0.6), stride=8, strip_rows=8)
    for vi, view in enumerate(views):
        height, width = view.image.shape[:2]
        boxes, _c, _v = view_truth(view)
        boxes = boxes[np.isfinite(boxes).all(axis=1)]
        grey = cv2.cvtColor(view.image, cv2.COLOR_BGR2GRAY)
        top = int(horizon_row(view.K, view.T_vehicle_camera, width))
        # Blank out the cones (replicate the mean grey) so the crop is cone-free.
        clean = grey.copy()
        for b in boxes:
            x0, y0, x1, y1 = np.clip(np.round(b), 0, [width, height, width, height]).astype(int)
            clean[y0:y1, x0:x1] = int(np.median(grey[top:]))
        y0 = max(top - 32, 0)
        crop = clean[y0:min(y0 + 320, height)]
        found, scores = scan_windows(model, crop, params, model.threshold - 0.5)
        if found.shape[0] == 0:
            continue
        found[:, [1, 3]] += y0
        order = np.argsort(-scores)[:per_view]
        found = found[order]
        found = found[~near_cone(found, boxes, model.cone_height)]
        if found.shape[0]:
            feats.append(patch_features(model, extract_windows(clean, found)))
            owners.append(vi)
    return feats, owners


def match_detections(det_xy: np.ndarray, gt_xy: np.ndarray, gate: float = 0.5,
                     gate_slope: float = 0.05) -> Tuple[np.ndarray, np.ndarray]:
    """
    Optimal one-to-one matching of detections to cones on the ground.

    The gate grows with range: ``gate + gate_slope * range`` (m). Returns
    index arrays (detection, cone) of the matched pairs.
    """
    if det_xy.shape[0] == 0 or gt_xy.shape[0] == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    cost = np.linalg.norm(det_xy[:, None, :] - gt_xy[None, :, :], axis=2)
    limit = gate + gate_slope * np.linalg.norm(gt_xy, axis=1)[None, :]
    big = 1e6
    r, c = linear_sum_assignment(np.where(cost <= limit, cost, big))
    ok = cost[r, c] <= limit[0, c]
    return r[ok], c[ok]


def evaluate_views(detect: Callable[[View], CameraDetections], views: Sequence[View],
                   max_range: float = EVAL_RANGE) -> Dict[str, float]:
    """
    Return detection metrics of a detector over views with ground truth.

    Ground truth: the visible cones (whole in the image, not hidden by a
    nearer cone) within ``max_range`` of the vehicle. A detection within
    ``max_range`` that matches no cone at all (visible or not) is a false
    positive. Returns recall, precision, colour accuracy (matched pairs;
    big orange counts as orange when the size cue is ambiguous is *not*
    allowed: classes must be equal), position RMS (m) and the counts.
    """
    tp = fn = fp = colour_ok = 0
    err2: List[float] = []
    for view in views:
        det = detect(view)
        height, width = view.image.shape[:2]
        boxes, dist, vis = cone_boxes(view.cone_xy, view.cone_class, view.K,
                                      view.T_vehicle_camera, width, height, view.occluders)
        rng_gt = np.linalg.norm(view.cone_xy, axis=1)
        want = vis & (rng_gt <= max_range)
        di, gi = match_detections(det.xyz[:, :2].astype(np.float64), view.cone_xy)
        matched_gt = np.zeros(view.cone_xy.shape[0], bool)
        matched_gt[gi] = True
        matched_det = np.zeros(len(det), bool)
        matched_det[di] = True
        tp_mask = want[gi]
        tp += int(tp_mask.sum())
        fn += int((want & ~matched_gt).sum())
        det_range = np.linalg.norm(det.xyz[:, :2], axis=1)
        fp += int((~matched_det & (det_range <= max_range)).sum())
        colour_ok += int((det.class_id[di][tp_mask] == view.cone_class[gi][tp_mask]).sum())
        d = det.xyz[di][tp_mask, :2] - view.cone_xy[gi][tp_mask]
        err2.extend((d ** 2).sum(axis=1).tolist())
    recall = tp / max(tp + fn, 1)
    precision = tp / max(tp + fp, 1)
    return {'recall': recall, 'precision': precision,
            'colour_accuracy': colour_ok / max(tp, 1),
            'position_rms': float(math.sqrt(np.mean(err2))) if err2 else float('nan'),
            'tp': tp, 'fn': fn, 'fp': fp, 'views': len(views)}


def _window_metrics(model: ConeSvmModel, x: np.ndarray, y: np.ndarray) -> Dict[str, float]:
    pred = model.decision(x) > model.threshold
    tp = int((pred & (y == 1)).sum())
    fp = int((pred & (y == 0)).sum())
    fn = int((~pred & (y == 1)).sum())
    return {'precision': tp / max(tp + fp, 1), 'recall': tp / max(tp + fn, 1),
            'positives': int((y == 1).sum()), 'negatives': int((y == 0).sum())}


def _versions() -> Dict[str, str]:
    import sklearn
    return {'tool': 'cone_detection.tools.train_vision', 'python': platform.python_version(),
            'numpy': np.__version__, 'opencv': cv2.__version__, 'sklearn': sklearn.__version__}


def train(seed: int = 0, n_train: int = 160, n_val: int = 30, n_test: int = 30,
          images: Optional[str] = None, log: Callable[[str], None] = print,
          c: float = 0.05) -> ConeSvmModel:
    """
    Run the whole pipeline and return the trained model (see module doc).

    Training views come from tracks ``seed*10 + 0..2``, validation views
    from track ``seed*10 + 3`` and test views from ``seed*10 + 4``.
    """
    t0 = time.time()
    rng = np.random.default_rng(seed)
    hog = HogParams()
    stub = ConeSvmModel(weights=np.zeros(hog.n_features, np.float32), bias=0.0, hog=hog)
    train_views = list(SimViews(seed * 7 + 1, [seed * 10 + i for i in range(3)]).take(n_train))
    if images:
        train_views += list(recorded_views(images))
    log(f'{len(train_views)} training views ({time.time() - t0:.1f} s)')
    xs, ys = [], []
    for view in train_views:
        w, y = sample_windows(view, rng, stub.cone_height)
        xs.append(features_of(stub, view, w))
        ys.append(y)
    x = np.concatenate(xs)
    y = np.concatenate(ys)
    log(f'{int(y.sum())} positive, {int((y == 0).sum())} negative windows '
        f'({time.time() - t0:.1f} s)')
    weights, bias = fit_svm(x, y, seed, c)
    model = ConeSvmModel(weights=weights, bias=bias, hog=hog, seed=seed)
    mined, _owners = mine_hard_negatives(model, train_views[::4], rng)
    if mined:
        hard = np.concatenate(mined)
        x = np.concatenate([x, hard])
        y = np.concatenate([y, np.zeros(hard.shape[0], np.int8)])
        log(f'hard-negative mining: {hard.shape[0]} false positives added')
        weights, bias = fit_svm(x, y, seed, c)
        model = ConeSvmModel(weights=weights, bias=bias, hog=hog, seed=seed)
    log(f'SVM trained ({time.time() - t0:.1f} s)')
    val_views = list(SimViews(seed * 7 + 2, [seed * 10 + 3]).take(n_val))
    model.threshold = tune_threshold(model, val_views, log)
    test_seed = seed * 7 + 3
    test_views = list(SimViews(test_seed, [seed * 10 + 4], noise_share=0.0).take(n_test))
    xt, yt = [], []
    trng = np.random.default_rng(test_seed)
    for view in test_views:
        w, yy = sample_windows(view, trng, model.cone_height, n_jitter=0)
        xt.append(features_of(model, view, w))
        yt.append(yy)
    metrics: Dict[str, Any] = {'windows': _window_metrics(model, np.concatenate(xt),
                                                          np.concatenate(yt))}

    def fast(v: View) -> CameraDetections:
        return detect_fast(v.image, v.K, v.T_vehicle_camera, model)
    metrics['detection_clean'] = evaluate_views(fast, test_views)
    noisy_views = list(SimViews(test_seed, [seed * 10 + 4], noise=20.0).take(n_test))
    metrics['detection_noise20'] = evaluate_views(fast, noisy_views)
    metrics['eval'] = {'range_m': EVAL_RANGE, 'mode': 'fast', 'test_track': seed * 10 + 4,
                       'test_view_seed': test_seed, 'views': n_test}
    metrics['train'] = {'views': len(train_views), 'windows': int(y.size),
                        'positives': int(y.sum()), 'seconds': round(time.time() - t0, 1)}
    model.metrics = metrics
    model.created_by = dict(_versions(),
                            command=f'python -m cone_detection.tools.train_vision --seed {seed}')
    log(json.dumps(metrics, indent=1))
    return model


def tune_threshold(model: ConeSvmModel, views: Sequence[View],
                   log: Callable[[str], None] = print, precision_goal: float = 0.99) -> float:
    """
    Return the lowest decision threshold whose fast-mode precision meets the goal.

    Evaluated on validation views (cones within ``EVAL_RANGE``); falls back
    to the threshold with the best F1 score.
    """
    best = (-1.0, 0.0)
    for thr in (-0.8, -0.6, -0.4, -0.2, 0.0, 0.2, 0.4, 0.6):
        model.threshold = thr

        def fast(v: View) -> CameraDetections:
            return detect_fast(v.image, v.K, v.T_vehicle_camera, model)
        m = evaluate_views(fast, views)
        log(f'threshold {thr:+.1f}: recall {m["recall"]:.3f} precision {m["precision"]:.3f}')
        if m['precision'] >= precision_goal:
            return thr
        f1 = 2 * m['recall'] * m['precision'] / max(m['recall'] + m['precision'], 1e-9)
        if f1 > best[0]:
            best = (f1, thr)
    return best[1]


def main(argv: Optional[List[str]] = None) -> int:
    """Command line entry point (see the module doc)."""
    parser = argparse.ArgumentParser(description='Train the vision cone SVM.')
    parser.add_argument('--seed', type=int, default=0)
    parser.add_argument('--out', default=DEFAULT_MODEL_PATH)
    parser.add_argument('--images', default=None,
                        help='directory with labels.json and images (recorded views)')
    parser.add_argument('--train-views', type=int, default=160)
    parser.add_argument('--test-views', type=int, default=30)
    args = parser.parse_args(argv)
    model = train(seed=args.seed, n_train=args.train_views, n_test=args.test_views,
                  images=args.images)
    save_model(model, args.out)
    print(f'wrote {args.out}')
    return 0


if __name__ == '__main__':
    sys.exit(main())
