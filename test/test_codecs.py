# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""Round trips and bad input for hil_bridge.interface.codecs."""

import array
import sys

from hil_bridge.interface.codecs import clouds, images, scans, stamps
import numpy as np
import pytest
from sensor_msgs.msg import CompressedImage, Image, LaserScan, PointField

RNG = np.random.default_rng(7)


@pytest.mark.parametrize('encoding,shape,dtype', [
    ('bgr8', (7, 5, 3), np.uint8), ('rgb8', (7, 5, 3), np.uint8),
    ('bgra8', (7, 5, 4), np.uint8), ('rgba8', (7, 5, 4), np.uint8),
    ('mono8', (7, 5), np.uint8), ('mono16', (7, 5), np.uint16),
    ('32FC1', (7, 5), np.float32), ('8UC3', (7, 5, 3), np.uint8)])
def test_image_round_trip_every_encoding(encoding, shape, dtype) -> None:
    """Passthrough decoding returns exactly what was encoded."""
    img = (RNG.random(shape) * 200).astype(dtype)
    msg = images.image_to_msg(img, 12.25, 'cam', encoding)
    assert isinstance(msg.data, array.array)
    assert (msg.height, msg.width, msg.encoding) == (7, 5, encoding)
    assert msg.header.frame_id == 'cam'
    assert stamps.sec_from_stamp(msg.header.stamp) == pytest.approx(12.25)
    back = images.msg_to_image(msg, 'passthrough')
    assert back.dtype == dtype and np.array_equal(back, img)


def test_image_to_bgr_conversions() -> None:
    """rgb8, bgra8 and mono8 convert to bgr8 with the right channels."""
    rgb = np.zeros((2, 2, 3), np.uint8)
    rgb[..., 0] = 255  # red
    bgr = images.msg_to_image(images.image_to_msg(rgb, 0.0, 'c', 'rgb8'))
    assert bgr[0, 0].tolist() == [0, 0, 255]
    bgra = np.zeros((2, 2, 4), np.uint8)
    bgra[..., 0] = 9
    assert images.msg_to_image(images.image_to_msg(bgra, 0, 'c', 'bgra8')).shape == \
        (2, 2, 3)
    mono = np.full((2, 3), 5, np.uint8)
    assert images.msg_to_image(images.image_to_msg(mono, 0, 'c', 'mono8'))[1, 2, 1] \
        == 5
    with pytest.raises(ValueError, match='cannot convert'):
        images.msg_to_image(images.image_to_msg(mono.astype(np.uint16), 0, 'c',
                                                'mono16'))


def _mosaic(pattern: str, bgr: tuple, h: int = 8, w: int = 10,
            dtype=np.uint8) -> np.ndarray:
    """Return a Bayer mosaic of one colour; ``pattern`` reads row by row."""
    value = {'b': bgr[0], 'g': bgr[1], 'r': bgr[2]}
    m = np.zeros((h, w), dtype)
    for k, (dy, dx) in enumerate(((0, 0), (0, 1), (1, 0), (1, 1))):
        m[dy::2, dx::2] = value[pattern[k]]
    return m


@pytest.mark.parametrize('pattern', ['rggb', 'bggr', 'gbrg', 'grbg'])
def test_bayer_mosaics_demosaic_to_their_colour(pattern: str) -> None:
    """
    Machine-vision cameras publish raw Bayer mosaics (``bayer_rggb8``...).

    A mosaic of one colour laid out in each sensor pattern decodes to that
    colour (OpenCV names its Bayer codes by other pixels than the sensor's
    pattern: a wrong mapping swaps red and blue); the 16-bit mosaics keep
    their high byte.
    """
    colour = (30, 120, 200)
    for bits, dtype, scale in ((8, np.uint8, 1), (16, np.uint16, 256)):
        raw = _mosaic(pattern, tuple(c * scale for c in colour), dtype=dtype)
        msg = images.image_to_msg(raw, 0.0, 'cam', f'bayer_{pattern}{bits}')
        assert np.array_equal(images.msg_to_image(msg, 'passthrough'), raw)
        bgr = images.msg_to_image(msg)
        assert bgr.dtype == np.uint8 and bgr.shape == (8, 10, 3)
        assert tuple(bgr[4, 4]) == colour, (pattern, bits)


@pytest.mark.parametrize('encoding,order', [
    ('yuv422', 'uyvy'), ('uyvy', 'uyvy'), ('yuv422_yuy2', 'yuyv'),
    ('yuyv', 'yuyv')])
def test_packed_yuv422_decodes_to_bgr(encoding: str, order: str) -> None:
    """
    v4l2/gscam cameras publish packed YUV 4:2:2 (two bytes per pixel).

    A frame of one colour, its Y, U, V from the BT.601 equations in video
    range (Y 16-235, as cameras send it), packed in the encoding's byte
    order, decodes to that colour (within the rounding of 8-bit YUV); an
    odd width is refused in one line.
    """
    b, g, r = 40.0, 160.0, 220.0
    luma = 0.299 * r + 0.587 * g + 0.114 * b
    y = 16.0 + luma * 219.0 / 255.0
    u = 128.0 + 0.564 * (b - luma) * 224.0 / 255.0
    v = 128.0 + 0.713 * (r - luma) * 224.0 / 255.0
    pair = {'y': y, 'u': u, 'v': v}
    # four bytes per pixel pair, in the encoding's order
    quad = np.array([pair[c] for c in order], dtype=float).round()
    packed = np.tile(quad.astype(np.uint8), (6, 4)).reshape(6, 8, 2)
    msg = images.image_to_msg(packed, 0.0, 'cam', encoding)
    bgr = images.msg_to_image(msg).astype(int)
    assert bgr.shape == (6, 8, 3)
    assert np.abs(bgr - np.array([b, g, r])).max() <= 3
    odd = images.image_to_msg(packed[:, :7], 0.0, 'cam', encoding)
    with pytest.raises(ValueError, match='width 7 is odd'):
        images.msg_to_image(odd)


def test_image_step_padding_and_big_endian() -> None:
    """Row padding (step > width*bpp) and big-endian mono16 decode."""
    img = np.arange(12, dtype=np.uint16).reshape(3, 4) * 300
    msg = Image(height=3, width=4, encoding='mono16', is_bigendian=True,
                step=10)
    raw = np.zeros((3, 10), np.uint8)
    raw[:, :8] = img.astype('>u2').view(np.uint8).reshape(3, 8)
    msg.data = array.array('B', raw.tobytes())
    out = images.msg_to_image(msg, 'passthrough')
    assert out.dtype.isnative and np.array_equal(out, img)


@pytest.mark.parametrize('mutate,match', [
    (lambda m: setattr(m, 'encoding', 'nv24'), 'unsupported'),
    (lambda m: setattr(m, 'step', 2), 'step'),
    (lambda m: setattr(m, 'height', 99), 'expected'),
    (lambda m: setattr(m, 'width', 0), 'empty')])
def test_malformed_image_rejected(mutate, match) -> None:
    """Malformed images give a clear ValueError."""
    msg = images.image_to_msg(np.zeros((4, 4, 3), np.uint8), 0, 'c')
    mutate(msg)
    with pytest.raises(ValueError, match=match):
        images.msg_to_image(msg)


def test_image_encode_checks() -> None:
    """Wrong dtype/shape/encoding are rejected when encoding."""
    with pytest.raises(ValueError, match='dtype'):
        images.image_to_msg(np.zeros((2, 2, 3), np.float32), 0, 'c')
    with pytest.raises(ValueError, match='shape'):
        images.image_to_msg(np.zeros((2, 2), np.uint8), 0, 'c', 'bgr8')
    with pytest.raises(ValueError, match='unsupported'):
        images.image_to_msg(np.zeros((2, 2), np.uint8), 0, 'c', 'nv12')


def test_compressed_round_trip_and_errors() -> None:
    """JPEG keeps a smooth image close; garbage data is rejected."""
    yy, xx = np.mgrid[0:96, 0:128]
    img = np.dstack([xx * 2, yy * 2, (xx + yy)]).astype(np.uint8)
    msg = images.image_to_compressed(img, 1.0, 'c', quality=90)
    assert 'jpeg' in msg.format and len(msg.data) < img.nbytes
    back = images.compressed_to_image(msg)
    assert back.shape == img.shape
    assert np.abs(back.astype(int) - img).mean() < 3.0
    bad = CompressedImage(format='jpeg')
    bad.data = array.array('B', b'not a jpeg')
    with pytest.raises(ValueError, match='decode'):
        images.compressed_to_image(bad)
    with pytest.raises(ValueError, match='no data'):
        images.compressed_to_image(CompressedImage())
    with pytest.raises(ValueError, match='quality'):
        images.image_to_compressed(img, 0, 'c', quality=0)


def test_reduced_decode_matches_area_reduction_and_intrinsics() -> None:
    """A reduced JPEG decode equals area averaging; K follows pixel centres."""
    yy, xx = np.mgrid[0:97, 0:130]
    img = np.dstack([xx * 1.5, yy * 2, (xx + yy) * 0.8]).astype(np.uint8)
    msg = images.image_to_compressed(img, 1.0, 'c', quality=95)
    for reduce in (2, 4):
        small = images.compressed_to_image(msg, reduce)
        area = images.reduce_image(img, reduce)
        want = (-(-97 // reduce), -(-130 // reduce), 3)
        assert small.shape == area.shape == want
        assert np.abs(small.astype(int) - area).mean() < 3.0
    assert images.reduce_image(img, 1) is img
    k = np.array([[600.0, 0.0, 643.5], [0.0, 600.0, 481.5], [0.0, 0.0, 1.0]])
    k2 = images.reduce_intrinsics(k, 2)
    pts = np.array([[0.3, -0.2, 4.0], [-1.0, 0.5, 9.0]])
    uv = (k @ pts.T).T
    uv2 = (k2 @ pts.T).T
    uv, uv2 = uv[:, :2] / uv[:, 2:], uv2[:, :2] / uv2[:, 2:]
    np.testing.assert_allclose(uv2, (uv + 0.5) / 2 - 0.5)
    np.testing.assert_array_equal(images.reduce_intrinsics(k, 1), k)
    for bad in (0, 3, 16):
        with pytest.raises(ValueError, match='reduce'):
            images.compressed_to_image(msg, bad)
        with pytest.raises(ValueError, match='reduce'):
            images.reduce_image(img, bad)
        with pytest.raises(ValueError, match='reduce'):
            images.reduce_intrinsics(k, bad)
    with pytest.raises(ValueError, match='3x3'):
        images.reduce_intrinsics(np.eye(4), 2)


def test_camera_info() -> None:
    """K survives a CameraInfo round trip; bad K is rejected."""
    K = np.array([[644.0, 0, 644], [0, 644, 482], [0, 0, 1]])
    K2, w, h = images.camera_info_to_k(images.camera_info_msg(K, 1288, 964, 0, 'c'))
    assert np.allclose(K2, K) and (w, h) == (1288, 964)
    with pytest.raises(ValueError):
        images.camera_info_msg(np.eye(2), 1, 1, 0)


def test_stamps() -> None:
    """Stamps carry nanoseconds; negative or NaN times are rejected."""
    st = stamps.stamp_from_sec(3.999999999999)
    assert (st.sec, st.nanosec) == (4, 0)
    assert stamps.sec_from_stamp(stamps.stamp_from_sec(10.05)) == pytest.approx(10.05)
    for bad in (-1.0, float('nan'), float('inf')):
        with pytest.raises(ValueError):
            stamps.stamp_from_sec(bad)


def test_xyzi_cloud_round_trip_and_nans() -> None:
    """Lidar clouds round trip; skip_nans drops NaN points only."""
    pts = RNG.standard_normal((1000, 4)).astype(np.float32)
    pts[5, 1] = np.nan
    msg = clouds.xyzi_to_cloud(pts, 2.0, 'lidar')
    assert (msg.height, msg.width, msg.point_step) == (1, 1000, 16)
    assert [f.name for f in msg.fields] == ['x', 'y', 'z', 'intensity']
    full = clouds.cloud_to_xyzi(msg, skip_nans=False)
    assert np.array_equal(full, pts, equal_nan=True)
    clean = clouds.cloud_to_xyz(msg)
    assert clean.shape == (999, 3) and clean.flags.c_contiguous
    assert np.array_equal(clean, np.delete(pts, 5, axis=0)[:, :3])
    for bad in (np.inf, -np.inf):
        pts2 = pts.copy()
        pts2[5, 1] = 0.0
        pts2[7, 2] = bad
        kept = clouds.cloud_to_xyz(clouds.xyzi_to_cloud(pts2, 2.0, 'lidar'))
        assert kept.shape == (999, 3) and np.isfinite(kept).all()


def test_read_points_semantics() -> None:
    """Field selection, skip_nans, uvs and organised reshape."""
    pts = np.arange(24, dtype=np.float32).reshape(6, 4)
    pts[2, 0] = np.nan
    msg = clouds.xyzi_to_cloud(pts, 0.0, 'l')
    msg.height, msg.width, msg.row_step = 2, 3, 48
    rp = clouds.read_points(msg)
    assert rp.shape == (6,) and rp.dtype.names == ('x', 'y', 'z',
                                                   'intensity')
    org = clouds.read_points(msg, reshape_organized_cloud=True)
    assert org.shape == (2, 3) and org[1, 0]['y'] == pts[3, 1]
    sel = clouds.read_points(msg, field_names=['y', 'z'])
    assert sel.dtype.names == ('y', 'z') and sel['z'][4] == pts[4, 2]
    assert clouds.read_points(msg, skip_nans=True).shape == (5,)
    msg.is_dense = True  # dense clouds are not filtered (upstream rule)
    assert clouds.read_points(msg, skip_nans=True).shape == (6,)
    picked = clouds.read_points(msg, uvs=[(1, 0), (2, 1)])
    assert picked['x'].tolist() == [pts[1, 0], pts[5, 0]]
    arr = clouds.read_points_numpy(msg, ['x', 'intensity'])
    assert arr.shape == (6, 2) and arr[3, 1] == pts[3, 3]
    with pytest.raises(ValueError, match='no field'):
        clouds.read_points(msg, ['rgb'])


def test_row_step_padding() -> None:
    """Padding between rows is skipped."""
    pts = np.arange(16, dtype=np.float32).reshape(4, 4)
    raw = np.zeros((2, 40), np.uint8)
    raw[:, :32] = pts.reshape(2, 8).view(np.uint8).reshape(2, 32)
    msg = clouds.xyzi_to_cloud(pts, 0.0, 'l')
    msg.height, msg.width, msg.row_step = 2, 2, 40
    msg.data = array.array('B', raw.tobytes())
    assert np.array_equal(clouds.cloud_to_xyzi(msg), pts)


def test_big_endian_cloud() -> None:
    """A big-endian cloud decodes to host-order values."""
    pts = np.array([[1.5, -2.0, 3.25, 7.0]], dtype='>f4')
    msg = clouds.xyzi_to_cloud(np.zeros((1, 4), np.float32), 0.0, 'l')
    msg.is_bigendian = sys.byteorder == 'little'
    msg.data = array.array('B', pts.astype('>f4' if msg.is_bigendian
                                           else '<f4').tobytes())
    out = clouds.cloud_to_xyzi(msg)
    assert out.tolist() == [[1.5, -2.0, 3.25, 7.0]]
    assert clouds.read_points(msg)['z'][0] == 3.25


def test_mixed_field_types_and_create_cloud() -> None:
    """create_cloud packs mixed dtypes; read_points_numpy refuses them."""
    fields = clouds.make_fields([('x', 0, PointField.FLOAT32),
                                 ('ring', 4, PointField.UINT16),
                                 ('t', 8, PointField.FLOAT64)])
    hdr = stamps.make_header(1.0, 'l')
    msg = clouds.create_cloud(hdr, fields, [(1.0, 3, 0.5), (2.0, 4, 0.25)])
    assert msg.point_step == 16 and not msg.is_dense
    pts = clouds.read_points(msg)
    assert pts['ring'].tolist() == [3, 4] and pts['t'][1] == 0.25
    with pytest.raises(ValueError, match='different dtypes'):
        clouds.read_points_numpy(msg)
    again = clouds.create_cloud(hdr, fields, pts)
    assert bytes(again.data) == bytes(msg.data)
    xyz = clouds.create_cloud_xyz32(hdr, np.eye(3))
    assert clouds.read_points_numpy(xyz).tolist() == np.eye(3).tolist()


def test_empty_clouds() -> None:
    """Empty clouds decode to empty arrays with the right shape."""
    msg = clouds.xyzi_to_cloud(np.zeros((0, 4), np.float32), 0.0, 'l')
    assert clouds.cloud_to_xyz(msg).shape == (0, 3)
    assert clouds.read_points(msg).shape == (0,)
    xyz, cls, conf = clouds.cloud_to_cones(clouds.cones_to_cloud(
        np.zeros((0, 3)), [], [], 0.0, 'ego'))
    assert xyz.shape == (0, 3) and cls.shape == (0,) and conf.shape == (0,)


@pytest.mark.parametrize('mutate,match', [
    (lambda m: setattr(m, 'point_step', 8), 'point_step'),
    (lambda m: setattr(m, 'row_step', 4), 'row_step'),
    (lambda m: (setattr(m, 'width', 50), setattr(m, 'row_step', 800)),
     'expected'),
    (lambda m: setattr(m, 'fields', m.fields[1:]), 'no field'),
    (lambda m: m.fields.__setitem__(0, PointField(
        name='x', offset=0, datatype=42, count=1)), 'datatype')])
def test_malformed_cloud_rejected(mutate, match) -> None:
    """Malformed clouds give a clear ValueError (and leak into no other)."""
    msg = clouds.xyzi_to_cloud(np.ones((10, 4), np.float32), 0.0, 'l')
    mutate(msg)
    with pytest.raises(ValueError, match=match):
        clouds.cloud_to_xyz(msg)
    fresh = clouds.xyzi_to_cloud(np.ones((10, 4), np.float32), 0.0, 'l')
    assert clouds.cloud_to_xyz(fresh).shape == (10, 3)
    assert [f.datatype for f in clouds.XYZI_FIELDS] == [PointField.FLOAT32] * 4


def test_cones_round_trip() -> None:
    """The contract's cone cloud keeps positions, classes, confidences."""
    xyz = RNG.standard_normal((5, 3)).astype(np.float32)
    cls = np.array([0, 1, 2, 3, 4], np.uint8)
    conf = np.linspace(0.1, 0.9, 5).astype(np.float32)
    msg = clouds.cones_to_cloud(xyz, cls, conf, 4.0, 'ego_vehicle')
    assert [f.name for f in msg.fields] == ['x', 'y', 'z', 'class_id',
                                            'confidence']
    x2, c2, f2 = clouds.cloud_to_cones(msg)
    assert np.array_equal(x2, xyz) and np.array_equal(c2, cls)
    assert np.array_equal(f2, conf)
    plain = clouds.cloud_to_cones(clouds.create_cloud_xyz32(msg.header, xyz))
    assert plain[1].tolist() == [0] * 5 and plain[2].tolist() == [1.0] * 5
    with pytest.raises(ValueError, match='length'):
        clouds.cones_to_cloud(xyz, cls[:2], conf, 0, 'e')
    with pytest.raises(ValueError, match='class_id'):
        clouds.cones_to_cloud(xyz[:1], [9], [1.0], 0, 'e')


def test_scan_round_trip_and_errors() -> None:
    """Scans keep ranges and angles; zero increments are rejected."""
    r = np.array([1.0, np.inf, 2.5, np.nan], np.float32)
    msg = scans.scan_to_msg(r, -0.5, 0.25, 3.0, 'lidar', range_max=20.0,
                            intensities=[1, 2, 3, 4])
    assert msg.angle_max == pytest.approx(0.25)
    ang, back = scans.scan_to_arrays(msg)
    assert np.allclose(ang, [-0.5, -0.25, 0.0, 0.25])
    assert np.array_equal(back, r, equal_nan=True)
    with pytest.raises(ValueError, match='angle_increment'):
        scans.scan_to_msg(r, 0.0, 0.0, 0.0)
    with pytest.raises(ValueError, match='intensities'):
        scans.scan_to_msg(r, 0.0, 0.1, 0.0, intensities=[1.0])
    bad = LaserScan(angle_min=0.0, angle_increment=0.0)
    bad.ranges = array.array('f', [1.0])
    with pytest.raises(ValueError, match='invalid angles'):
        scans.scan_to_arrays(bad)
