# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
Width and height of a compressed image from its header, before decoding.

A decoder allocates what the header claims: a 5 KB JPEG whose frame header
says 30000 x 30000 costs seconds of CPU and over a gigabyte. Nodes check the
size this module reads against their limits (and against CameraInfo) first.

JPEG (ITU T.81, B.1.1): after SOI (FF D8), marker segments ``FF xx`` each
carry a 2-byte big-endian length that includes itself, except the
stand-alone markers RST0-7 (D0-D7), SOI, EOI and TEM (01); fill bytes FF may
precede a marker. A start-of-frame segment (SOF0-3, 5-7, 9-11, 13-15: C0-C3,
C5-C7, C9-CB, CD-CF) holds precision (1 byte), height and width (2 bytes
each). PNG: the signature and the IHDR chunk hold width and height
(4 bytes each, big-endian) at bytes 16-24. No dependencies.
"""

from typing import Tuple

PNG_SIGNATURE = b'\x89PNG\r\n\x1a\n'
_SOF = frozenset(range(0xC0, 0xD0)) - {0xC4, 0xC8, 0xCC}
_STANDALONE = frozenset(range(0xD0, 0xDA)) | {0x01}


def jpeg_size(data: bytes) -> Tuple[int, int]:
    """
    Return (width, height) from a JPEG's start-of-frame header.

    Raises ValueError for data that is not a JPEG or has no frame header
    before the scan (start-of-scan marker DA) or the end of the data.
    """
    buf = memoryview(data)
    n = len(buf)
    if n < 4 or buf[0] != 0xFF or buf[1] != 0xD8:
        raise ValueError('not a JPEG (no SOI marker)')
    i = 2
    while i < n:
        if buf[i] != 0xFF:
            raise ValueError(f'JPEG: expected a marker at byte {i}')
        while i < n and buf[i] == 0xFF:  # fill bytes
            i += 1
        if i >= n:
            break
        marker = buf[i]
        i += 1
        if marker in _STANDALONE:
            continue
        if marker == 0xD9 or marker == 0xDA:
            break
        if i + 2 > n:
            break
        length = (buf[i] << 8) | buf[i + 1]
        if length < 2:
            raise ValueError(f'JPEG: bad segment length {length} at byte {i}')
        if marker in _SOF:
            if i + 7 > n:
                break
            height = (buf[i + 3] << 8) | buf[i + 4]
            width = (buf[i + 5] << 8) | buf[i + 6]
            return width, height
        i += length
    raise ValueError('JPEG: no frame header (SOF) before the scan data')


def png_size(data: bytes) -> Tuple[int, int]:
    """Return (width, height) from a PNG's IHDR chunk (ValueError if not a PNG)."""
    if len(data) < 24 or bytes(data[:8]) != PNG_SIGNATURE or bytes(data[12:16]) != b'IHDR':
        raise ValueError('not a PNG (no signature and IHDR)')
    width = int.from_bytes(bytes(data[16:20]), 'big')
    height = int.from_bytes(bytes(data[20:24]), 'big')
    return width, height


def compressed_size(data: bytes) -> Tuple[int, int]:
    """Return (width, height) of a JPEG or PNG from its header (ValueError otherwise)."""
    head = bytes(data[:8])
    if head.startswith(b'\xff\xd8'):
        return jpeg_size(data)
    if head == PNG_SIGNATURE:
        return png_size(data)
    raise ValueError('compressed image is neither JPEG nor PNG')
