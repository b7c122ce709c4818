# Copyright 2026 carla_hil developers  # noqa: A005 (hil_bridge.codecs)
# SPDX-License-Identifier: Apache-2.0
"""
Fast numpy <-> ROS 2 message codecs.

Image, CompressedImage, CameraInfo, PointCloud2, LaserScan and the cone
clouds of the interface contract.

The point-cloud part mirrors the interface and semantics of
``sensor_msgs_py.point_cloud2`` (``read_points``, ``read_points_numpy``,
``create_cloud``, ``create_cloud_xyz32``: same parameter names and defaults,
structured arrays viewing the message buffer, ``skip_nans``, field
selection, byte order, ``is_dense`` False on creation), because that package
is not installable everywhere. Beyond it: ``row_step`` padding is honoured,
and malformed messages raise ``ValueError`` instead of failing deep inside
numpy.

Speed: decoding is zero-copy (``np.frombuffer`` over the message's
``array.array``). Encoding fills the message's ``array.array`` with one
``memcpy`` (``array.frombytes`` on the numpy buffer): assigning ``bytes``
to a ``uint8[]`` field makes rclpy check every element when field checks are
on (the default on Humble/Jazzy), which is orders of magnitude slower.
"""

import array
import math
import sys
from typing import Any, Iterable, List, Optional, Sequence, Tuple

from builtin_interfaces.msg import Time
import cv2
import numpy as np
from sensor_msgs.msg import (CameraInfo, CompressedImage, Image, LaserScan,
                             PointCloud2, PointField)
from std_msgs.msg import Header

# ---------------------------------------------------------------- headers


def stamp_from_sec(t: float) -> Time:
    """Return a ``builtin_interfaces/Time`` for ``t`` seconds (>= 0)."""
    t = float(t)
    if not math.isfinite(t) or t < 0.0:
        raise ValueError(f'time stamp must be finite and >= 0, got {t}')
    sec = int(math.floor(t))
    nanosec = int(round((t - sec) * 1e9))
    if nanosec >= 1_000_000_000:
        sec, nanosec = sec + 1, nanosec - 1_000_000_000
    return Time(sec=sec, nanosec=nanosec)


def sec_from_stamp(stamp: Time) -> float:
    """Return the seconds of a ``builtin_interfaces/Time``."""
    return float(stamp.sec) + float(stamp.nanosec) * 1e-9


def make_header(t: float, frame_id: str) -> Header:
    """Return a ``std_msgs/Header`` stamped ``t`` seconds in ``frame_id``."""
    return Header(stamp=stamp_from_sec(t), frame_id=str(frame_id))


def _fill_array(typecode: str, buf: Any) -> array.array:
    """Copy a C-contiguous buffer into a new ``array(typecode)`` (memcpy)."""
    out = array.array(typecode)
    view = memoryview(buf)
    if view.nbytes:
        out.frombytes(view.cast('B'))
    return out


def _fill_uint8(buf: Any) -> array.array:
    """Copy a C-contiguous buffer into a new ``array('B')`` (one memcpy)."""
    return _fill_array('B', buf)


def _as_header(header_or_t: Any, frame_id: str) -> Header:
    if isinstance(header_or_t, Header):
        return header_or_t
    return make_header(header_or_t, frame_id)

# ----------------------------------------------------------------- images


# encoding -> (numpy dtype, channels)
ENCODINGS = {
    'bgr8': (np.uint8, 3), 'rgb8': (np.uint8, 3),
    'bgra8': (np.uint8, 4), 'rgba8': (np.uint8, 4),
    'mono8': (np.uint8, 1), '8UC1': (np.uint8, 1), '8UC3': (np.uint8, 3),
    'mono16': (np.uint16, 1), '16UC1': (np.uint16, 1),
    '32FC1': (np.float32, 1),
}

_TO_BGR = {
    'rgb8': cv2.COLOR_RGB2BGR, 'bgra8': cv2.COLOR_BGRA2BGR,
    'rgba8': cv2.COLOR_RGBA2BGR, 'mono8': cv2.COLOR_GRAY2BGR,
    '8UC1': cv2.COLOR_GRAY2BGR,
}


def image_to_msg(img: np.ndarray, t: Any, frame_id: str = '',
                 encoding: str = 'bgr8') -> Image:
    """
    Encode an (H, W[, C]) array as ``sensor_msgs/Image``.

    ``t`` is the stamp in seconds (or a ready Header). The array's shape and
    dtype must match ``encoding`` (see ``ENCODINGS``).
    """
    if encoding not in ENCODINGS:
        raise ValueError(f'unsupported image encoding {encoding!r}; '
                         f'supported: {sorted(ENCODINGS)}')
    dtype, channels = ENCODINGS[encoding]
    img = np.asarray(img)
    if img.dtype != dtype:
        raise ValueError(f'{encoding} needs dtype {np.dtype(dtype).name}, '
                         f'got {img.dtype.name}')
    shape_ok = (img.ndim == 2 and channels == 1) or (
        img.ndim == 3 and img.shape[2] == channels)
    if not shape_ok or img.shape[0] == 0 or img.shape[1] == 0:
        raise ValueError(f'{encoding} needs shape (H, W' +
                         (')' if channels == 1 else f', {channels})') +
                         f' with H, W > 0, got {img.shape}')
    img = np.ascontiguousarray(img)
    msg = Image()
    msg.header = _as_header(t, frame_id)
    msg.height, msg.width = int(img.shape[0]), int(img.shape[1])
    msg.encoding = encoding
    msg.is_bigendian = sys.byteorder == 'big'
    msg.step = int(img.strides[0])
    msg.data = _fill_uint8(img)
    return msg


def msg_to_image(msg: Image, desired_encoding: str = 'bgr8') -> np.ndarray:
    """
    Decode a ``sensor_msgs/Image`` to an array.

    ``desired_encoding='passthrough'`` returns a zero-copy (read-only) view
    in the message's own encoding; 'bgr8' converts the 8-bit colour and
    mono encodings. Raises ``ValueError`` for unknown encodings, sizes that
    do not match the buffer, or conversions that are not supported.
    """
    enc = msg.encoding
    if enc not in ENCODINGS:
        raise ValueError(f'unsupported image encoding {enc!r}')
    dtype, channels = ENCODINGS[enc]
    item = np.dtype(dtype).itemsize
    h, w, step = int(msg.height), int(msg.width), int(msg.step)
    if h <= 0 or w <= 0:
        raise ValueError(f'empty image ({w}x{h})')
    if step < w * channels * item:
        raise ValueError(f'image step {step} < width*channels*bytes '
                         f'{w * channels * item}')
    if len(msg.data) < h * step:
        raise ValueError(f'image data has {len(msg.data)} bytes, '
                         f'expected {h * step} ({w}x{h}, step {step})')
    dt = np.dtype(dtype).newbyteorder('>' if msg.is_bigendian else '<')
    buf = np.frombuffer(msg.data, dtype=np.uint8, count=h * step)
    if channels == 1:
        shape, strides = (h, w), (step, item)
    else:
        shape, strides = (h, w, channels), (step, channels * item, item)
    view = np.ndarray(shape, dtype=dt, buffer=buf, strides=strides)
    if not view.dtype.isnative:
        view = view.astype(view.dtype.newbyteorder('='))
    if desired_encoding in ('passthrough', enc):
        return view
    if desired_encoding != 'bgr8':
        raise ValueError(f'conversion {enc} -> {desired_encoding} is not '
                         'supported (use passthrough or bgr8)')
    if enc == '8UC3':
        return view
    if enc not in _TO_BGR:
        raise ValueError(f'cannot convert {enc} to bgr8')
    return cv2.cvtColor(np.ascontiguousarray(view), _TO_BGR[enc])


def image_to_compressed(img: np.ndarray, t: Any, frame_id: str = '',
                        quality: int = 80) -> CompressedImage:
    """Encode a bgr8 image as a JPEG ``sensor_msgs/CompressedImage``."""
    img = np.asarray(img)
    if img.dtype != np.uint8 or img.ndim != 3 or img.shape[2] != 3 \
            or img.size == 0:
        raise ValueError(f'JPEG encoding needs a non-empty (H, W, 3) uint8 '
                         f'bgr8 image, got {img.dtype.name} {img.shape}')
    if not 1 <= int(quality) <= 100:
        raise ValueError(f'jpeg quality must be 1..100, got {quality}')
    ok, enc = cv2.imencode('.jpg', img, [cv2.IMWRITE_JPEG_QUALITY,
                                         int(quality)])
    if not ok:
        raise ValueError('OpenCV failed to encode the image as JPEG')
    msg = CompressedImage()
    msg.header = _as_header(t, frame_id)
    msg.format = 'bgr8; jpeg compressed bgr8'
    msg.data = _fill_uint8(enc)
    return msg


#: ``reduce`` factor -> the OpenCV decode flag that decodes at 1/factor size.
_REDUCED_FLAGS = {1: cv2.IMREAD_COLOR, 2: cv2.IMREAD_REDUCED_COLOR_2,
                  4: cv2.IMREAD_REDUCED_COLOR_4, 8: cv2.IMREAD_REDUCED_COLOR_8}


def compressed_to_image(msg: CompressedImage, reduce: int = 1) -> np.ndarray:
    """
    Decode a JPEG/PNG ``CompressedImage`` to a bgr8 array.

    ``reduce`` (1, 2, 4 or 8) decodes at 1/reduce of the width and height
    (``ceil(w / reduce)`` x ``ceil(h / reduce)``); for JPEG, libjpeg
    scales in the DCT domain, so this is several times faster than a full
    decode. Pixel (u', v') of the result covers pixels
    ``reduce * u' .. reduce * u' + reduce - 1`` of the full image (see
    :func:`reduce_intrinsics`).
    """
    if reduce not in _REDUCED_FLAGS:
        raise ValueError(f'reduce must be one of {sorted(_REDUCED_FLAGS)}, got {reduce}')
    if len(msg.data) == 0:
        raise ValueError('compressed image has no data')
    img = cv2.imdecode(np.frombuffer(msg.data, dtype=np.uint8),
                       _REDUCED_FLAGS[reduce])
    if img is None:
        raise ValueError(f'could not decode compressed image '
                         f'(format {msg.format!r})')
    return img


def reduce_image(image: np.ndarray, reduce: int) -> np.ndarray:
    """
    Shrink an image by an integer factor like a reduced JPEG decode.

    Area averaging over ``reduce`` x ``reduce`` blocks; the result is
    ``ceil(w / reduce)`` x ``ceil(h / reduce)``, the size
    :func:`compressed_to_image` gives for the same factor. ``reduce`` 1
    returns ``image`` itself.
    """
    if reduce not in _REDUCED_FLAGS:
        raise ValueError(f'reduce must be one of {sorted(_REDUCED_FLAGS)}, got {reduce}')
    if reduce == 1:
        return image
    height, width = image.shape[:2]
    size = (-(-width // reduce), -(-height // reduce))
    return cv2.resize(image, size, interpolation=cv2.INTER_AREA)


def reduce_intrinsics(K: np.ndarray, reduce: int) -> np.ndarray:
    """
    Return the 3x3 pinhole intrinsics of an image reduced by ``reduce``.

    Focal lengths divide by the factor; the principal point maps with the
    pixel-centre convention (``c' = (c + 0.5) / reduce - 0.5``), which
    holds for both :func:`compressed_to_image` and :func:`reduce_image`.
    """
    if reduce not in _REDUCED_FLAGS:
        raise ValueError(f'reduce must be one of {sorted(_REDUCED_FLAGS)}, got {reduce}')
    k = np.array(K, dtype=np.float64, copy=True)
    if k.shape != (3, 3):
        raise ValueError(f'K must be 3x3, got {k.shape}')
    if reduce == 1:
        return k
    k[0, 0] /= reduce
    k[1, 1] /= reduce
    k[0, 1] /= reduce
    k[0, 2] = (k[0, 2] + 0.5) / reduce - 0.5
    k[1, 2] = (k[1, 2] + 0.5) / reduce - 0.5
    return k


def camera_info_msg(K: np.ndarray, width: int, height: int, t: Any,
                    frame_id: str = '') -> CameraInfo:
    """Return a ``CameraInfo`` for an undistorted pinhole camera ``K``."""
    K = np.asarray(K, dtype=np.float64)
    if K.shape != (3, 3) or not np.all(np.isfinite(K)):
        raise ValueError(f'K must be a finite 3x3 matrix, got {K.shape}')
    msg = CameraInfo()
    msg.header = _as_header(t, frame_id)
    msg.width, msg.height = int(width), int(height)
    msg.distortion_model = 'plumb_bob'
    msg.d = [0.0] * 5
    msg.k = K.reshape(-1).tolist()
    msg.r = np.eye(3).reshape(-1).tolist()
    P = np.zeros((3, 4))
    P[:, :3] = K
    msg.p = P.reshape(-1).tolist()
    return msg


def camera_info_to_k(msg: CameraInfo) -> Tuple[np.ndarray, int, int]:
    """Return (K 3x3, width, height) of a ``CameraInfo``."""
    K = np.asarray(msg.k, dtype=np.float64).reshape(3, 3)
    if not np.all(np.isfinite(K)) or K[0, 0] <= 0 or K[1, 1] <= 0:
        raise ValueError('CameraInfo has no valid intrinsics (k)')
    return K, int(msg.width), int(msg.height)

# ----------------------------------------------------------- point clouds


_DATATYPES = {
    PointField.INT8: np.dtype(np.int8), PointField.UINT8: np.dtype(np.uint8),
    PointField.INT16: np.dtype(np.int16),
    PointField.UINT16: np.dtype(np.uint16),
    PointField.INT32: np.dtype(np.int32),
    PointField.UINT32: np.dtype(np.uint32),
    PointField.FLOAT32: np.dtype(np.float32),
    PointField.FLOAT64: np.dtype(np.float64),
}
_FROM_DTYPE = {v: k for k, v in _DATATYPES.items()}


def dtype_from_fields(fields: Iterable[PointField],
                      point_step: Optional[int] = None,
                      bigendian: bool = False) -> np.dtype:
    """Return the numpy structured dtype of a list of ``PointField``."""
    names, formats, offsets = [], [], []
    for f in fields:
        if f.datatype not in _DATATYPES:
            raise ValueError(f'point field {f.name!r} has unknown datatype '
                             f'{f.datatype}')
        if f.count < 1:
            raise ValueError(f'point field {f.name!r} has count {f.count}')
        base = _DATATYPES[f.datatype].newbyteorder('>' if bigendian
                                                   else '<')
        names.append(f.name if f.name else f'unnamed_field_{len(names)}')
        formats.append(base if f.count == 1 else (base, (f.count,)))
        offsets.append(f.offset)
    if len(set(names)) != len(names):
        raise ValueError(f'duplicate point field names: {names}')
    spec = {'names': names, 'formats': formats, 'offsets': offsets}
    if point_step is not None:
        spec['itemsize'] = point_step
    try:
        return np.dtype(spec)
    except ValueError as exc:
        raise ValueError(f'point fields do not fit point_step '
                         f'{point_step}: {exc}') from None


def _check_cloud(cloud: PointCloud2) -> np.dtype:
    dtype = dtype_from_fields(cloud.fields, cloud.point_step,
                              bool(cloud.is_bigendian))
    n_row = int(cloud.width) * int(cloud.point_step)
    if cloud.height > 0 and cloud.width > 0 and cloud.row_step < n_row:
        raise ValueError(f'row_step {cloud.row_step} < width*point_step '
                         f'{n_row}')
    need = int(cloud.height) * int(cloud.row_step)
    if len(cloud.data) < need:
        raise ValueError(f'cloud data has {len(cloud.data)} bytes, expected '
                         f'{need} (height {cloud.height} x row_step '
                         f'{cloud.row_step})')
    return dtype


def _raw_points(cloud: PointCloud2) -> np.ndarray:
    """Return the points as a (height, width) structured view (no copy)."""
    dtype = _check_cloud(cloud)
    h, w = int(cloud.height), int(cloud.width)
    if h == 0 or w == 0:
        return np.zeros((0, 0), dtype=dtype)
    buf = np.frombuffer(cloud.data, dtype=np.uint8,
                        count=h * int(cloud.row_step))
    return np.ndarray((h, w), dtype=dtype, buffer=buf,
                      strides=(int(cloud.row_step), int(cloud.point_step)))


def read_points(cloud: PointCloud2,
                field_names: Optional[Sequence[str]] = None,
                skip_nans: bool = False,
                uvs: Optional[Iterable] = None,
                reshape_organized_cloud: bool = False) -> np.ndarray:
    """
    Read points of a ``PointCloud2`` as a numpy structured array.

    Same semantics as ``sensor_msgs_py.point_cloud2.read_points``:
    ``field_names`` selects fields (all by default); ``skip_nans`` drops
    points with a NaN in any selected field; ``uvs`` selects points by
    (u, v) = (column, row) pairs; ``reshape_organized_cloud`` returns a
    (height, width) array for organised clouds. Values are in host byte
    order. Without a selection the result views the message buffer.
    """
    pts = _raw_points(cloud)
    if field_names is not None:
        missing = [n for n in field_names if n not in pts.dtype.names]
        if missing:
            raise ValueError(f'cloud has no field(s) {missing}; fields: '
                             f'{list(pts.dtype.names)}')
        pts = pts[list(field_names)]
    if uvs is not None:
        uv = np.asarray(list(uvs), dtype=np.int64).reshape(-1, 2)
        if uv.size and (uv[:, 0].max() >= pts.shape[1]
                        or uv[:, 1].max() >= pts.shape[0]
                        or uv.min() < 0):
            raise ValueError('uvs outside the cloud')
        pts = pts[uv[:, 1], uv[:, 0]]
    elif not (reshape_organized_cloud and cloud.height > 1):
        pts = pts.reshape(-1)
    if not pts.dtype.isnative:
        pts = pts.astype(pts.dtype.newbyteorder('='))
    if skip_nans and not cloud.is_dense:
        keep = np.ones(pts.shape, dtype=bool)
        for name in pts.dtype.names:
            col = pts[name]
            if col.dtype.kind == 'f':
                bad = np.isnan(col)
                if bad.ndim > keep.ndim:
                    bad = bad.reshape(bad.shape[:keep.ndim] + (-1,)).any(-1)
                keep &= ~bad
        pts = pts[keep]
    return pts


def read_points_numpy(cloud: PointCloud2,
                      field_names: Optional[Sequence[str]] = None,
                      skip_nans: bool = False,
                      uvs: Optional[Iterable] = None,
                      reshape_organized_cloud: bool = False) -> np.ndarray:
    """
    Read points as an unstructured (N, F) array (all fields one dtype).

    Mirrors ``sensor_msgs_py.point_cloud2.read_points_numpy``; raises
    ``ValueError`` when the selected fields have different dtypes.
    """
    from numpy.lib import recfunctions as rfn
    pts = read_points(cloud, field_names, skip_nans, uvs,
                      reshape_organized_cloud)
    kinds = {pts.dtype.fields[n][0].base for n in pts.dtype.names}
    if len(kinds) != 1:
        raise ValueError(f'fields have different dtypes {sorted(map(str, kinds))}'
                         '; select fields of one dtype')
    return rfn.structured_to_unstructured(pts)


def create_cloud(header: Header, fields: Sequence[PointField],
                 points: Any) -> PointCloud2:
    """
    Create a ``PointCloud2`` from points (``sensor_msgs_py`` semantics).

    ``points`` is a structured array with the fields' names, an (N, F)
    array, or a list of tuples; the result is unorganised (height 1),
    not dense, in host byte order.
    """
    point_step = max((f.offset + _DATATYPES[f.datatype].itemsize * f.count
                      for f in fields), default=0)
    dtype = dtype_from_fields(fields, point_step,
                              bigendian=sys.byteorder == 'big')
    if isinstance(points, np.ndarray) and points.dtype.names:
        arr = np.zeros(points.shape[0] if points.ndim else 0, dtype=dtype)
        for name in dtype.names:
            if name not in points.dtype.names:
                raise ValueError(f'points lack field {name!r}')
            arr[name] = points[name]
    else:
        rows = np.asarray(points, dtype=np.float64)
        if rows.size == 0:
            rows = rows.reshape(0, len(dtype.names))
        if rows.ndim != 2 or rows.shape[1] != len(dtype.names):
            raise ValueError(f'points must be (N, {len(dtype.names)}), got '
                             f'{rows.shape}')
        arr = np.zeros(rows.shape[0], dtype=dtype)
        for i, name in enumerate(dtype.names):
            arr[name] = rows[:, i]
    msg = PointCloud2()
    msg.header = header
    msg.height, msg.width = 1, int(arr.shape[0])
    msg.fields = _copy_fields(fields)
    msg.is_bigendian = sys.byteorder == 'big'
    msg.point_step = int(point_step)
    msg.row_step = int(point_step) * int(arr.shape[0])
    msg.is_dense = False
    msg.data = _fill_uint8(arr)
    return msg


def _copy_fields(fields: Sequence[PointField]) -> List[PointField]:
    """Return new PointField objects (a message must not share them)."""
    return [PointField(name=f.name, offset=f.offset, datatype=f.datatype,
                       count=f.count) for f in fields]


def make_fields(spec: Sequence[Tuple[str, int, int]]) -> List[PointField]:
    """Return PointFields from (name, offset, datatype) triples, count 1."""
    return [PointField(name=n, offset=o, datatype=d, count=1)
            for n, o, d in spec]


XYZ_FIELDS = make_fields([('x', 0, PointField.FLOAT32),
                          ('y', 4, PointField.FLOAT32),
                          ('z', 8, PointField.FLOAT32)])
XYZI_FIELDS = XYZ_FIELDS + make_fields([('intensity', 12,
                                         PointField.FLOAT32)])
CONE_FIELDS = XYZ_FIELDS + make_fields([('class_id', 12, PointField.UINT8),
                                        ('confidence', 16,
                                         PointField.FLOAT32)])
CONE_DTYPE = np.dtype({'names': ['x', 'y', 'z', 'class_id', 'confidence'],
                       'formats': ['<f4', '<f4', '<f4', 'u1', '<f4'],
                       'offsets': [0, 4, 8, 12, 16], 'itemsize': 20})


def create_cloud_xyz32(header: Header, points: Any) -> PointCloud2:
    """Create a cloud with float32 x, y, z fields (``sensor_msgs_py``)."""
    pts = np.asarray(points, dtype=np.float32).reshape(-1, 3)
    return _packed_cloud(header, XYZ_FIELDS, np.ascontiguousarray(pts), 12)


def _packed_cloud(header: Header, fields: List[PointField],
                  data: np.ndarray, point_step: int) -> PointCloud2:
    msg = PointCloud2()
    msg.header = header
    msg.height, msg.width = 1, int(data.shape[0])
    msg.fields = _copy_fields(fields)
    msg.is_bigendian = sys.byteorder == 'big'
    msg.point_step = point_step
    msg.row_step = point_step * int(data.shape[0])
    msg.is_dense = False
    msg.data = _fill_uint8(data)
    return msg


def xyzi_to_cloud(points: np.ndarray, t: Any,
                  frame_id: str = '') -> PointCloud2:
    """Encode (N, 4) x, y, z, intensity (float32) as a ``PointCloud2``."""
    pts = np.asarray(points)
    if pts.ndim != 2 or pts.shape[1] != 4:
        raise ValueError(f'lidar points must be (N, 4), got {pts.shape}')
    pts = np.ascontiguousarray(pts, dtype=np.float32)
    return _packed_cloud(_as_header(t, frame_id), XYZI_FIELDS, pts, 16)


def _float_columns(cloud: PointCloud2, names: Sequence[str],
                   skip_nans: bool) -> np.ndarray:
    """Return the named float32 fields as an (N, k) float32 array."""
    by_name = {f.name: f for f in cloud.fields}
    missing = [n for n in names if n not in by_name]
    if missing:
        raise ValueError(f'cloud has no field(s) {missing}; fields: '
                         f'{[f.name for f in cloud.fields]}')
    _check_cloud(cloud)
    h, w, ps = int(cloud.height), int(cloud.width), int(cloud.point_step)
    offs = [by_name[n].offset for n in names]
    fast = (all(by_name[n].datatype == PointField.FLOAT32
                and by_name[n].count == 1 for n in names)
            and offs == list(range(offs[0], offs[0] + 4 * len(names), 4))
            and ps % 4 == 0 and offs[0] % 4 == 0
            and int(cloud.row_step) == w * ps
            and bool(cloud.is_bigendian) == (sys.byteorder == 'big'))
    if h * w == 0:
        out = np.zeros((0, len(names)), dtype=np.float32)
    elif fast:
        flat = np.frombuffer(cloud.data, dtype=np.float32,
                             count=h * w * ps // 4).reshape(h * w, ps // 4)
        start = offs[0] // 4
        out = np.array(flat[:, start:start + len(names)])
    else:
        pts = read_points(cloud, field_names=list(names))
        out = np.empty((pts.shape[0], len(names)), dtype=np.float32)
        for i, n in enumerate(names):
            out[:, i] = pts[n]
    if skip_nans and out.size and not _all_finite(out):
        out = out[np.isfinite(out).all(axis=1)]
    return out


def _all_finite(values: np.ndarray) -> bool:
    """Return True when no value is NaN or +-inf (two reductions, fast)."""
    return bool(np.isfinite(values.max()) and np.isfinite(values.min()))


def cloud_to_xyz(cloud: PointCloud2, skip_nans: bool = True) -> np.ndarray:
    """Return the cloud's x, y, z as a contiguous (N, 3) float32 array."""
    return _float_columns(cloud, ('x', 'y', 'z'), skip_nans)


def cloud_to_xyzi(cloud: PointCloud2, skip_nans: bool = True) -> np.ndarray:
    """Return x, y, z, intensity as a contiguous (N, 4) float32 array."""
    return _float_columns(cloud, ('x', 'y', 'z', 'intensity'), skip_nans)


def cones_to_cloud(xyz: np.ndarray, class_id: np.ndarray,
                   confidence: np.ndarray, t: Any,
                   frame_id: str = '') -> PointCloud2:
    """
    Encode cones as the contract's cone cloud.

    Fields x, y, z (float32, metres), class_id (uint8: 0 unknown, 1 blue,
    2 yellow, 3 small orange, 4 big orange), confidence (float32, 0..1).
    """
    xyz = np.asarray(xyz, dtype=np.float32).reshape(-1, 3)
    cls = np.asarray(class_id).reshape(-1)
    conf = np.asarray(confidence, dtype=np.float32).reshape(-1)
    if not (xyz.shape[0] == cls.shape[0] == conf.shape[0]):
        raise ValueError(f'cone arrays differ in length: xyz {xyz.shape[0]},'
                         f' class_id {cls.shape[0]}, confidence '
                         f'{conf.shape[0]}')
    if cls.size and (cls.min() < 0 or cls.max() > 4):
        raise ValueError('cone class_id must be 0..4')
    arr = np.zeros(xyz.shape[0], dtype=CONE_DTYPE)
    arr['x'], arr['y'], arr['z'] = xyz[:, 0], xyz[:, 1], xyz[:, 2]
    arr['class_id'] = cls.astype(np.uint8)
    arr['confidence'] = conf
    return _packed_cloud(_as_header(t, frame_id), CONE_FIELDS, arr, 20)


def cloud_to_cones(cloud: PointCloud2) -> Tuple[np.ndarray, np.ndarray,
                                                np.ndarray]:
    """
    Decode a cone cloud to (xyz (N, 3) float32, class_id uint8, conf).

    Cones with a non-finite position are dropped. A cloud without
    class_id/confidence gives class 0 (unknown) and confidence 1.
    """
    xyz = cloud_to_xyz(cloud, skip_nans=False)
    names = {f.name for f in cloud.fields}
    n = xyz.shape[0]
    if 'class_id' in names:
        cls = np.asarray(read_points(cloud, ['class_id'])['class_id'],
                         dtype=np.uint8).reshape(-1)
    else:
        cls = np.zeros(n, dtype=np.uint8)
    if 'confidence' in names:
        conf = np.asarray(read_points(cloud, ['confidence'])['confidence'],
                          dtype=np.float32).reshape(-1)
    else:
        conf = np.ones(n, dtype=np.float32)
    keep = np.isfinite(xyz).all(axis=1)
    if not keep.all():
        xyz, cls, conf = xyz[keep], cls[keep], conf[keep]
    return xyz, cls, conf

# -------------------------------------------------------------- laser scan


def _fill_float32(values: np.ndarray) -> array.array:
    return _fill_array('f', np.ascontiguousarray(values, dtype=np.float32))


def scan_to_msg(ranges: np.ndarray, angle_min: float, angle_increment: float,
                t: Any, frame_id: str = '', range_min: float = 0.0,
                range_max: float = float('inf'), scan_time: float = 0.0,
                time_increment: float = 0.0,
                intensities: Optional[np.ndarray] = None) -> LaserScan:
    """Encode ranges (m) of bins starting at ``angle_min`` (rad)."""
    r = np.asarray(ranges, dtype=np.float32).reshape(-1)
    if not math.isfinite(angle_increment) or angle_increment == 0.0:
        raise ValueError(f'angle_increment must be finite and non-zero, '
                         f'got {angle_increment}')
    msg = LaserScan()
    msg.header = _as_header(t, frame_id)
    msg.angle_min = float(angle_min)
    msg.angle_increment = float(angle_increment)
    msg.angle_max = float(angle_min + angle_increment * max(r.size - 1, 0))
    msg.range_min, msg.range_max = float(range_min), float(range_max)
    msg.scan_time, msg.time_increment = float(scan_time), float(time_increment)
    msg.ranges = _fill_float32(r)
    if intensities is not None:
        i = np.asarray(intensities, dtype=np.float32).reshape(-1)
        if i.size not in (0, r.size):
            raise ValueError(f'{i.size} intensities for {r.size} ranges')
        msg.intensities = _fill_float32(i)
    return msg


def scan_to_arrays(msg: LaserScan) -> Tuple[np.ndarray, np.ndarray]:
    """
    Decode a ``LaserScan`` to (angles (N,), ranges (N,)) float32.

    ``ranges`` is a zero-copy view; angles are angle_min + i*increment.
    Raises ``ValueError`` for a zero or non-finite angle increment.
    """
    r = np.frombuffer(msg.ranges, dtype=np.float32) if isinstance(
        msg.ranges, array.array) else np.asarray(msg.ranges, np.float32)
    inc = float(msg.angle_increment)
    if r.size and (not math.isfinite(inc) or inc == 0.0
                   or not math.isfinite(msg.angle_min)):
        raise ValueError(f'scan has invalid angles (angle_min '
                         f'{msg.angle_min}, angle_increment {inc})')
    angles = (np.float32(msg.angle_min)
              + np.arange(r.size, dtype=np.float32) * np.float32(inc))
    return angles, r
