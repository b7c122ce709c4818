# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
The vision cone detector as one object: model, mode and stereo merge (no rclpy).

``VisionConeDetector(model_path, mode='fast', **params).detect(image, K,
T_vehicle_camera)`` returns the cones of one camera image in the vehicle
frame (REP-103, metres; base centres on the ground, z = 0), their contract
class ids and confidences. ``detect_stereo`` runs it on every camera of a
rig and merges detections of one cone seen by several cameras.

Stereo: the rig's cameras are only 0.12 m apart, so a disparity-based
triangulation (range error ~ z^2 / (f b), 1.3 m per pixel at 10 m) is far
worse than the ground-plane projection (~ z^2 / (f h), 0.16 m per pixel at
10 m for a camera 1 m up); detections of both cameras within a gate are
therefore merged by optimal assignment (scipy linear_sum_assignment) and
averaged, weighted by confidence, instead of triangulated.
"""

from dataclasses import fields, replace
from typing import Any, Dict, List, Optional, Sequence, Tuple

from cone_detection.ground_projection import vehicle_to_map
from cone_detection.hue import DEFAULT_THRESHOLDS, HueThresholds
from cone_detection.svm_model import ConeSvmModel, DEFAULT_MODEL_PATH, load_model
from cone_detection.vision_common import CameraDetections
from cone_detection.vision_fast import detect_fast, FastParams
from cone_detection.vision_reference import detect_reference, ReferenceParams
from hil_bridge.interface.frames import Pose
import numpy as np
from scipy.optimize import linear_sum_assignment

MODES = ('fast', 'reference')
Result = Tuple[np.ndarray, np.ndarray, np.ndarray]


def _split_params(params: Dict[str, Any]) -> Tuple[Dict[str, Any], Dict[str, Any],
                                                   Dict[str, Any], Dict[str, Any]]:
    """Sort keyword parameters into fast, reference, hue and pipeline ones."""
    fast_names = {f.name for f in fields(FastParams)}
    ref_names = {f.name for f in fields(ReferenceParams)}
    hue_names = {f.name for f in fields(HueThresholds)}
    own = {'stereo_gate', 'image_reduce'}
    unknown = set(params) - fast_names - ref_names - hue_names - own
    if unknown:
        raise ValueError(f'VisionConeDetector: unknown parameters {sorted(unknown)}')
    pick = (lambda names: {k: v for k, v in params.items() if k in names})
    return pick(fast_names), pick(ref_names), pick(hue_names), pick(own)


class VisionConeDetector:
    """
    HOG + linear SVM cone detector with hue colour and ground-plane position.

    ``model_path``: the JSON model file (default: the shipped model);
    ``mode``: ``'fast'`` (colour proposals verified by the SVM, the
    default) or ``'reference'`` (the paper's sliding window, slow).
    Keyword parameters: any field of :class:`FastParams`,
    :class:`ReferenceParams` (a name in both sets both) or
    :class:`HueThresholds`; ``stereo_gate`` (m, default 0.5) for
    :meth:`detect_stereo`; ``image_reduce`` (1, 2 or 4, default 1): the
    images passed in are already reduced by this factor (a reduced JPEG
    decode, :func:`hil_bridge.interface.codecs.images.compressed_to_image`, with K from
    :func:`hil_bridge.interface.codecs.images.reduce_intrinsics`), so the fast mode's
    proposal ``downscale`` is divided by it (proposals keep their
    resolution) unless ``downscale`` is given. Raises ``FileNotFoundError`` / ``ValueError``
    naming the model file when it is missing or corrupt, ``ValueError``
    for unknown modes or parameters.
    """

    def __init__(self, model_path: str = DEFAULT_MODEL_PATH, mode: str = 'fast',
                 model: Optional[ConeSvmModel] = None, **params: Any) -> None:
        if mode not in MODES:
            raise ValueError(f'VisionConeDetector: mode {mode!r} not in {MODES}')
        self.mode = mode
        self.model_path = model_path
        self.model = model if model is not None else load_model(model_path)
        fast, ref, hue, own = _split_params(params)
        self.image_reduce = int(own.get('image_reduce', 1))
        if self.image_reduce not in (1, 2, 4):
            raise ValueError(f'image_reduce must be 1, 2 or 4, got {self.image_reduce}')
        if 'downscale' not in fast:
            fast['downscale'] = max(1, FastParams().downscale // self.image_reduce)
        self.fast_params = replace(FastParams(), **fast)
        self.reference_params = replace(ReferenceParams(), **ref)
        self.thresholds = replace(DEFAULT_THRESHOLDS, **hue)
        self.stereo_gate = float(own.get('stereo_gate', 0.5))
        if not self.stereo_gate >= 0.0:
            raise ValueError(f'stereo_gate must be >= 0, got {self.stereo_gate}')

    def detect_camera(self, image_bgr: np.ndarray, K: np.ndarray,
                      T_vehicle_camera: np.ndarray) -> CameraDetections:
        """Return the full per-camera result (boxes, image points, scores too)."""
        if self.mode == 'fast':
            return detect_fast(image_bgr, K, T_vehicle_camera, self.model,
                               self.fast_params, self.thresholds)
        return detect_reference(image_bgr, K, T_vehicle_camera, self.model,
                                self.reference_params, self.thresholds)

    def detect(self, image_bgr: np.ndarray, K: np.ndarray,
               T_vehicle_camera: np.ndarray) -> Result:
        """
        Detect cones in one bgr8 image.

        ``K`` 3x3 intrinsics, ``T_vehicle_camera`` the camera's 4x4 REP-103
        sensor pose in the vehicle frame. Returns ``xyz_vehicle`` (N, 3)
        float32 (m), ``class_id`` (N,) uint8 and ``confidence`` (N,)
        float32 in 0..1. Bad input raises ``ValueError``.
        """
        det = self.detect_camera(image_bgr, K, T_vehicle_camera)
        return det.xyz, det.class_id, det.confidence

    def detect_map(self, image_bgr: np.ndarray, K: np.ndarray, T_vehicle_camera: np.ndarray,
                   ego_pose: Pose) -> Result:
        """
        Detect cones in one image and express them in ``map`` (global frame).

        ``ego_pose`` is the vehicle's REP-103 pose in ``map``; otherwise as
        :meth:`detect`.
        """
        xyz, cls, conf = self.detect(image_bgr, K, T_vehicle_camera)
        return vehicle_to_map(xyz, ego_pose).astype(np.float32), cls, conf

    def detect_stereo(self, images: Sequence[np.ndarray], Ks: Sequence[np.ndarray],
                      transforms: Sequence[np.ndarray]) -> Result:
        """
        Detect in every camera image and merge the cameras' detections.

        Arguments are parallel sequences (one entry per camera, any
        number); see :meth:`detect` for each and for the result.
        """
        if not (len(images) == len(Ks) == len(transforms)) or not images:
            raise ValueError('detect_stereo: need equally many (>= 1) images, K and '
                             'transforms')
        results = [self.detect(img, k, t) for img, k, t in zip(images, Ks, transforms)]
        return merge_cameras(results, self.stereo_gate)


def merge_cameras(results: List[Result], gate: float) -> Result:
    """
    Merge per-camera detections (vehicle frame) of the same cones.

    Cameras are folded in one after the other: detections of the next
    camera are assigned to the merged set by minimum total ground distance
    (scipy linear_sum_assignment) within ``gate`` metres plus 3 % of the
    range; pairs are averaged weighted by confidence, the class taken from
    the more confident one and the confidence raised to ``1 - (1 - a)(1 -
    b)``; unmatched detections are kept.
    """
    xyz = np.zeros((0, 3), np.float32)
    cls = np.zeros(0, np.uint8)
    conf = np.zeros(0, np.float32)
    for r_xyz, r_cls, r_conf in results:
        r_xyz = np.asarray(r_xyz, np.float32).reshape(-1, 3)
        r_cls = np.asarray(r_cls, np.uint8).reshape(-1)
        r_conf = np.asarray(r_conf, np.float32).reshape(-1)
        if xyz.shape[0] == 0 or r_xyz.shape[0] == 0:
            xyz = np.concatenate([xyz, r_xyz])
            cls = np.concatenate([cls, r_cls])
            conf = np.concatenate([conf, r_conf])
            continue
        cost = np.linalg.norm(xyz[:, None, :2] - r_xyz[None, :, :2], axis=2)
        limit = gate + 0.03 * np.linalg.norm(xyz[:, :2], axis=1)[:, None]
        rows, cols = linear_sum_assignment(np.where(cost <= limit, cost, 1e6))
        ok = cost[rows, cols] <= limit[rows, 0]
        rows, cols = rows[ok], cols[ok]
        wa = conf[rows, None].astype(np.float64)
        wb = r_conf[cols, None].astype(np.float64)
        xyz[rows] = ((xyz[rows] * wa + r_xyz[cols] * wb) / np.maximum(wa + wb, 1e-9))
        cls[rows] = np.where(r_conf[cols] > conf[rows], r_cls[cols], cls[rows])
        conf[rows] = 1.0 - (1.0 - conf[rows]) * (1.0 - r_conf[cols])
        rest = np.setdiff1d(np.arange(r_xyz.shape[0]), cols)
        xyz = np.concatenate([xyz, r_xyz[rest]])
        cls = np.concatenate([cls, r_cls[rest]])
        conf = np.concatenate([conf, r_conf[rest]])
    return xyz.astype(np.float32), cls, conf.astype(np.float32)
