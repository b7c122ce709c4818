# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
Image, CompressedImage and CameraInfo codecs (numpy <-> ROS 2; uses OpenCV).

Only nodes that handle images import this module, so OpenCV stays out of
the other onboard processes. Decoding is zero-copy where the encoding
allows; encoding fills the message buffer with one memcpy.
"""

import sys
from typing import Any, Optional, Tuple

import cv2
from hil_bridge.interface.codecs.image_size import compressed_size
from hil_bridge.interface.codecs.stamps import as_header, fill_uint8
import numpy as np
from sensor_msgs.msg import CameraInfo, CompressedImage, Image


# encoding -> (numpy dtype, channels)
ENCODINGS = {
    'bgr8': (np.uint8, 3), 'rgb8': (np.uint8, 3),
    'bgra8': (np.uint8, 4), 'rgba8': (np.uint8, 4),
    'mono8': (np.uint8, 1), '8UC1': (np.uint8, 1), '8UC3': (np.uint8, 3),
    'mono16': (np.uint16, 1), '16UC1': (np.uint16, 1),
    '32FC1': (np.float32, 1),
    # raw sensor mosaics (machine-vision cameras' drivers) and packed
    # YUV 4:2:2 (v4l2/gscam USB and CSI cameras): two bytes per pixel,
    # yuv422 = UYVY, yuv422_yuy2 = YUYV (sensor_msgs image_encodings)
    'bayer_rggb8': (np.uint8, 1), 'bayer_bggr8': (np.uint8, 1),
    'bayer_gbrg8': (np.uint8, 1), 'bayer_grbg8': (np.uint8, 1),
    'bayer_rggb16': (np.uint16, 1), 'bayer_bggr16': (np.uint16, 1),
    'bayer_gbrg16': (np.uint16, 1), 'bayer_grbg16': (np.uint16, 1),
    'yuv422': (np.uint8, 2), 'uyvy': (np.uint8, 2),
    'yuv422_yuy2': (np.uint8, 2), 'yuyv': (np.uint8, 2),
}

#: OpenCV's Bayer codes are named by the second row's second and third
#: pixels, so a sensor's RGGB mosaic is OpenCV's ``BayerBG`` (as cv_bridge
#: maps them; checked against mosaics of known colours in the tests).
_BAYER = {'rggb': cv2.COLOR_BayerBG2BGR, 'bggr': cv2.COLOR_BayerRG2BGR,
          'gbrg': cv2.COLOR_BayerGR2BGR, 'grbg': cv2.COLOR_BayerGB2BGR}

_TO_BGR = {
    'rgb8': cv2.COLOR_RGB2BGR, 'bgra8': cv2.COLOR_BGRA2BGR,
    'rgba8': cv2.COLOR_RGBA2BGR, 'mono8': cv2.COLOR_GRAY2BGR,
    '8UC1': cv2.COLOR_GRAY2BGR,
    'yuv422': cv2.COLOR_YUV2BGR_UYVY, 'uyvy': cv2.COLOR_YUV2BGR_UYVY,
    'yuv422_yuy2': cv2.COLOR_YUV2BGR_YUYV, 'yuyv': cv2.COLOR_YUV2BGR_YUYV,
    **{f'bayer_{k}{bits}': v for k, v in _BAYER.items() for bits in (8, 16)},
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
    msg.header = as_header(t, frame_id)
    msg.height, msg.width = int(img.shape[0]), int(img.shape[1])
    msg.encoding = encoding
    msg.is_bigendian = sys.byteorder == 'big'
    msg.step = int(img.strides[0])
    msg.data = fill_uint8(img)
    return msg


def check_image_size(msg: Image, max_pixels: int) -> None:
    """Raise ValueError when an Image claims more than ``max_pixels`` (before decoding)."""
    n = int(msg.width) * int(msg.height)
    if n > int(max_pixels):
        raise ValueError(f'image {msg.width}x{msg.height} = {n} pixels exceeds max_pixels '
                         f'{int(max_pixels)}; dropped')


def msg_to_image(msg: Image, desired_encoding: str = 'bgr8') -> np.ndarray:
    """
    Decode a ``sensor_msgs/Image`` to an array.

    ``desired_encoding='passthrough'`` returns a zero-copy (read-only) view
    in the message's own encoding; 'bgr8' converts the 8-bit colour and
    mono encodings, Bayer mosaics (8 and 16 bit, demosaiced by OpenCV) and
    packed YUV 4:2:2 (``yuv422`` = UYVY, ``yuv422_yuy2`` = YUYV). Raises
    ``ValueError`` for unknown encodings, sizes that do not match the
    buffer, or conversions that are not supported.
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
    if channels == 2 and w % 2:   # packed YUV 4:2:2
        raise ValueError(f'{enc} image width {w} is odd (pixels come in '
                         'pairs sharing U and V)')
    bgr = cv2.cvtColor(np.ascontiguousarray(view), _TO_BGR[enc])
    if bgr.dtype == np.uint16:  # a 16-bit mosaic: keep the high byte
        bgr = (bgr >> 8).astype(np.uint8)
    return bgr


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
    msg.header = as_header(t, frame_id)
    msg.format = 'bgr8; jpeg compressed bgr8'
    msg.data = fill_uint8(enc)
    return msg


#: ``reduce`` factor -> the OpenCV decode flag that decodes at 1/factor size.
_REDUCED_FLAGS = {1: cv2.IMREAD_COLOR, 2: cv2.IMREAD_REDUCED_COLOR_2,
                  4: cv2.IMREAD_REDUCED_COLOR_4, 8: cv2.IMREAD_REDUCED_COLOR_8}


def compressed_to_image(msg: CompressedImage, reduce: int = 1,
                        max_pixels: Optional[int] = None,
                        expected_size: Optional[Tuple[int, int]] = None) -> np.ndarray:
    """
    Decode a JPEG/PNG ``CompressedImage`` to a bgr8 array.

    Before decoding, the width and height of the JPEG/PNG header
    (:func:`hil_bridge.interface.codecs.image_size.compressed_size`) are
    checked: more than ``max_pixels``, or another size than
    ``expected_size`` (width, height; e.g. from CameraInfo), raise
    ``ValueError`` without allocating the image.

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
    if max_pixels is not None or expected_size is not None:
        width, height = compressed_size(msg.data)
        if max_pixels is not None and width * height > max_pixels:
            raise ValueError(f'compressed image header claims {width}x{height} = '
                             f'{width * height} pixels, more than max_pixels {max_pixels}; '
                             'not decoded')
        if expected_size is not None and (width, height) != tuple(expected_size):
            raise ValueError(f'compressed image header claims {width}x{height}, CameraInfo '
                             f'says {expected_size[0]}x{expected_size[1]}; not decoded')
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
    msg.header = as_header(t, frame_id)
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
