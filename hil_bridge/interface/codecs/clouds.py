# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
PointCloud2 codecs and the cone clouds of the interface contract.

Mirrors the interface and semantics of ``sensor_msgs_py.point_cloud2``
(``read_points``, ``read_points_numpy``, ``create_cloud``,
``create_cloud_xyz32``: same parameter names and defaults, structured
arrays viewing the message buffer, ``skip_nans``, field selection, byte
order, ``is_dense`` False on creation), because that package is not
installable everywhere. Beyond it: ``row_step`` padding is honoured, and
malformed messages raise ``ValueError`` instead of failing deep inside
numpy. Decoding is zero-copy (``np.frombuffer`` over the message's
``array.array``); encoding is one memcpy.
"""

import sys
from typing import Any, Iterable, List, Optional, Sequence, Tuple

from hil_bridge.interface.codecs.stamps import as_header, fill_uint8
import numpy as np
from sensor_msgs.msg import PointCloud2, PointField
from std_msgs.msg import Header


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
    msg.data = fill_uint8(arr)
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
    msg.data = fill_uint8(data)
    return msg


def xyzi_to_cloud(points: np.ndarray, t: Any,
                  frame_id: str = '') -> PointCloud2:
    """Encode (N, 4) x, y, z, intensity (float32) as a ``PointCloud2``."""
    pts = np.asarray(points)
    if pts.ndim != 2 or pts.shape[1] != 4:
        raise ValueError(f'lidar points must be (N, 4), got {pts.shape}')
    pts = np.ascontiguousarray(pts, dtype=np.float32)
    return _packed_cloud(as_header(t, frame_id), XYZI_FIELDS, pts, 16)


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
    return _packed_cloud(as_header(t, frame_id), CONE_FIELDS, arr, 20)


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
