# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
The portable cone classifier model: HOG parameters + linear SVM (no rclpy).

The model file is plain JSON (no pickle), so it loads with any numpy /
OpenCV / scikit-learn version::

    {"format": "carla_hil.cone_svm", "version": 1,
     "hog": {"win_size": 64, "block_size": 16, "block_stride": 8,
             "cell_size": 8, "nbins": 9},
     "patch": {"cone_height": 48, "blur_ksize": 3},
     "weights": [...], "bias": b, "threshold": t,
     "class_names": ["background", "cone"],
     "metrics": {...}, "seed": 0, "created_by": {...}}

The decision of a window's HOG feature vector f is ``w . f + b``; a window
holds a cone when the decision exceeds ``threshold``.
"""

from dataclasses import asdict, dataclass, field
import json
import math
import os
from typing import Any, Dict, List

import cv2
import numpy as np

FORMAT = 'carla_hil.cone_svm'
VERSION = 1
DEFAULT_MODEL_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                  'models', 'cone_svm.json')


@dataclass(frozen=True)
class HogParams:
    """cv2.HOGDescriptor parameters (pixels) of the square detection window."""

    win_size: int = 64
    block_size: int = 16
    block_stride: int = 8
    cell_size: int = 8
    nbins: int = 9

    def __post_init__(self) -> None:
        """Check the geometry is one cv2.HOGDescriptor accepts."""
        vals = (self.win_size, self.block_size, self.block_stride,
                self.cell_size, self.nbins)
        if any(not isinstance(v, int) or v <= 0 for v in vals):
            raise ValueError(f'HOG parameters must be positive integers: {vals}')
        if (self.win_size - self.block_size) % self.block_stride or \
                self.block_size % self.cell_size or \
                self.block_size > self.win_size:
            raise ValueError(f'inconsistent HOG geometry: {asdict(self)}')

    @property
    def n_features(self) -> int:
        """Return the length of one window's HOG feature vector."""
        per_side = (self.win_size - self.block_size) // self.block_stride + 1
        cells = (self.block_size // self.cell_size) ** 2
        return per_side * per_side * cells * self.nbins

    def descriptor(self) -> cv2.HOGDescriptor:
        """Return a new cv2.HOGDescriptor with these parameters."""
        return cv2.HOGDescriptor((self.win_size, self.win_size),
                                 (self.block_size, self.block_size),
                                 (self.block_stride, self.block_stride),
                                 (self.cell_size, self.cell_size), self.nbins)


@dataclass
class ConeSvmModel:
    """
    A linear SVM over HOG features of 64x64 windows.

    ``cone_height`` is the cone's height (pixels) a positive training
    window was scaled to; ``blur_ksize`` the Gaussian blur (odd pixels, 0 =
    none) applied to the grey window before HOG. ``metrics`` holds the
    held-out figures recorded by training.
    """

    weights: np.ndarray
    bias: float
    hog: HogParams = field(default_factory=HogParams)
    threshold: float = 0.0
    cone_height: int = 48
    blur_ksize: int = 3
    class_names: List[str] = field(default_factory=lambda: ['background', 'cone'])
    metrics: Dict[str, Any] = field(default_factory=dict)
    seed: int = 0
    created_by: Dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        """Validate the weights against the HOG feature length."""
        w = np.asarray(self.weights, dtype=np.float32).ravel()
        if w.size != self.hog.n_features:
            raise ValueError(f'model has {w.size} weights, HOG gives '
                             f'{self.hog.n_features} features')
        if not np.all(np.isfinite(w)) or not math.isfinite(self.bias) or \
                not math.isfinite(self.threshold):
            raise ValueError('model weights, bias or threshold not finite')
        if self.blur_ksize < 0 or (self.blur_ksize and self.blur_ksize % 2 == 0):
            raise ValueError(f'blur_ksize must be 0 or odd, got {self.blur_ksize}')
        self.weights = w

    def decision(self, features: np.ndarray) -> np.ndarray:
        """Return ``w . f + b`` for features (N, n_features) as float32 (N,)."""
        f = np.asarray(features, dtype=np.float32)
        if f.ndim != 2 or f.shape[1] != self.weights.size:
            raise ValueError(f'features must be (N, {self.weights.size}), got {f.shape}')
        return f @ self.weights + np.float32(self.bias)

    def prepare(self, grey: np.ndarray) -> np.ndarray:
        """Return the grey uint8 image as HOG sees it (blurred if configured)."""
        if self.blur_ksize:
            return cv2.GaussianBlur(grey, (self.blur_ksize, self.blur_ksize), 0)
        return grey

    def to_dict(self) -> Dict[str, Any]:
        """Return the JSON-ready dictionary of the model file."""
        return {'format': FORMAT, 'version': VERSION, 'hog': asdict(self.hog),
                'patch': {'cone_height': int(self.cone_height),
                          'blur_ksize': int(self.blur_ksize)},
                'weights': [float(f'{v:.7g}') for v in self.weights.tolist()],
                'bias': float(self.bias), 'threshold': float(self.threshold),
                'class_names': list(self.class_names), 'metrics': self.metrics,
                'seed': int(self.seed), 'created_by': self.created_by}


def model_from_dict(data: Dict[str, Any], source: str = '<dict>') -> ConeSvmModel:
    """Build a model from a decoded model file; ``ValueError`` names ``source``."""
    if not isinstance(data, dict) or data.get('format') != FORMAT:
        raise ValueError(f'{source}: not a {FORMAT} model file')
    if data.get('version') != VERSION:
        raise ValueError(f'{source}: model version {data.get("version")!r} is not '
                         f'supported (expected {VERSION})')
    try:
        hog = HogParams(**data['hog'])
        patch = data.get('patch', {})
        return ConeSvmModel(weights=np.asarray(data['weights'], dtype=np.float32),
                            bias=float(data['bias']), hog=hog,
                            threshold=float(data.get('threshold', 0.0)),
                            cone_height=int(patch.get('cone_height', 48)),
                            blur_ksize=int(patch.get('blur_ksize', 0)),
                            class_names=list(data.get('class_names', [])),
                            metrics=dict(data.get('metrics', {})),
                            seed=int(data.get('seed', 0)),
                            created_by=dict(data.get('created_by', {})))
    except (KeyError, TypeError, ValueError) as err:
        raise ValueError(f'{source}: corrupt model file: {err!r}') from err


def save_model(model: ConeSvmModel, path: str) -> None:
    """Write the model as JSON to ``path`` (directories are created)."""
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    tmp = path + '.tmp'
    with open(tmp, 'w', encoding='utf-8') as stream:
        json.dump(model.to_dict(), stream, indent=1, sort_keys=True)
        stream.write('\n')
    os.replace(tmp, path)


def load_model(path: str = DEFAULT_MODEL_PATH) -> ConeSvmModel:
    """
    Load a model file.

    Raises ``FileNotFoundError`` (missing) or ``ValueError`` (not JSON,
    wrong format or version, corrupt fields), each naming the file.
    """
    if not os.path.isfile(path):
        raise FileNotFoundError(f'cone SVM model file not found: {path}')
    try:
        with open(path, 'r', encoding='utf-8') as stream:
            data = json.load(stream)
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ValueError(f'{path}: corrupt model file (not JSON): {err}') from err
    return model_from_dict(data, path)
