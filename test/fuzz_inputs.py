# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
Bad inputs for the fuzz suite (test/test_fuzz_nodes.py): message builders.

Every builder returns a real ROS message; ``bad_clouds`` and friends return
a list of (label, message) pairs covering malformed layouts, NaN/inf values,
oversized claims (a header saying more than the data holds, or more than a
node may process), and stamps ahead of / behind the clock or out of order.
"""

import array
import copy
import math
from typing import Any, List, Sequence, Tuple

from builtin_interfaces.msg import Time
from hil_bridge.interface.codecs import clouds, scans, stamps
import numpy as np

Labelled = List[Tuple[str, Any]]

#: header stamps (sec, nanosec) relative to the node clock t: far ahead,
#: far behind, the int32 extremes, a nanosec field past one second
STAMP_SHIFTS = (1000.0, 1e6, -30.0, -1e6)


def stamp_at(t: float) -> Time:
    """Return a stamp for ``t`` s, clipped into builtin_interfaces/Time."""
    if not math.isfinite(t):
        return Time(sec=2**31 - 1, nanosec=0)
    if t < 0.0:
        return Time(sec=max(int(math.floor(t)), -2**31), nanosec=0)
    t = min(t, 2**31 - 2)
    return stamps.stamp_from_sec(t)


def odd_stamps(t: float) -> List[Tuple[str, Time]]:
    """Return stamps around node time ``t`` that the policy must reject."""
    out = [(f'shift {d:+g}', stamp_at(t + d)) for d in STAMP_SHIFTS]
    out += [('int32 max', Time(sec=2**31 - 1, nanosec=999999999)),
            ('int32 min', Time(sec=-2**31, nanosec=0)),
            ('nanosec > 1 s', Time(sec=int(t) + 5, nanosec=4294967295))]
    return out


def restamp(msg: Any, stamp: Time) -> Any:
    """Return a copy of ``msg`` with header stamp ``stamp``."""
    out = copy.deepcopy(msg)
    out.header.stamp = stamp
    return out


def cone_cloud(xyz: Sequence[Sequence[float]], t: float, frame: str = 'ego_vehicle',
               cls: int = 0) -> Any:
    """Return a contract cone cloud of ``xyz`` stamped ``t``."""
    from std_msgs.msg import Header
    xyz = np.asarray(xyz, dtype=np.float32).reshape(-1, 3)
    n = xyz.shape[0]
    return clouds.cones_to_cloud(xyz, np.full(n, cls, np.uint8), np.ones(n, np.float32),
                                 Header(stamp=stamp_at(t), frame_id=frame), frame)


def lidar_cloud(xyz: np.ndarray, t: float, frame: str = 'ego_vehicle/lidar') -> Any:
    """Return an x, y, z, intensity PointCloud2 of (N, 3) points stamped ``t``."""
    xyz = np.asarray(xyz, dtype=np.float32).reshape(-1, 3)
    from std_msgs.msg import Header
    pts = np.column_stack([xyz, np.ones(xyz.shape[0], np.float32)])
    return clouds.xyzi_to_cloud(pts, Header(stamp=stamp_at(t), frame_id=frame), frame)


def wall_points(x: float = 6.0) -> np.ndarray:
    """Return lidar-frame points of a 1.2 m wide wall ``x`` m ahead, 0.6 m up."""
    y = np.linspace(-0.6, 0.6, 60)
    return np.stack([np.full_like(y, x), y, np.full_like(y, 0.6)], 1)


def corridor(t: float) -> Any:
    """Return blue/yellow-free cones of a straight 3.2 m wide corridor ahead."""
    x = np.arange(3.0, 15.0, 2.5)
    return cone_cloud(np.concatenate([np.stack([x, np.full_like(x, 1.6), 0 * x], 1),
                                      np.stack([x, np.full_like(x, -1.6), 0 * x], 1)]), t)


def odometry(t: float, speed: float = 0.0, yaw_rate: float = 0.0, x: float = 0.0,
             frame: str = 'map') -> Any:
    """Return a nav_msgs/Odometry at ``t`` with body-frame speed and yaw rate."""
    from nav_msgs.msg import Odometry
    msg = Odometry()
    msg.header.stamp = stamp_at(t)
    msg.header.frame_id = frame
    msg.child_frame_id = 'ego_vehicle'
    msg.pose.pose.position.x = float(x)
    msg.pose.pose.orientation.w = 1.0
    msg.twist.twist.linear.x = float(speed)
    msg.twist.twist.angular.z = float(yaw_rate)
    return msg


def bad_clouds(good: Any, t: float, big_claim: int = 2_000_000) -> Labelled:
    """Return malformed, non-finite, oversized and odd-stamped variants of ``good``."""
    out: Labelled = []
    m = copy.deepcopy(good)
    m.width, m.row_step = big_claim, big_claim * m.point_step
    out.append(('claims 2M points, holds few', m))
    m = copy.deepcopy(good)
    m.point_step = 0
    out.append(('point_step 0', m))
    m = copy.deepcopy(good)
    m.fields = [f for f in m.fields if f.name != 'x']
    out.append(('no x field', m))
    m = copy.deepcopy(good)
    m.fields[0].datatype = 99
    out.append(('unknown datatype', m))
    m = copy.deepcopy(good)
    m.fields[1].offset = 10_000
    out.append(('field past point_step', m))
    m = copy.deepcopy(good)
    m.data = m.data[:len(m.data) // 2]
    out.append(('truncated data', m))
    m = copy.deepcopy(good)
    m.height = 0
    out.append(('height 0', m))
    m = copy.deepcopy(good)
    m.is_bigendian = not m.is_bigendian
    out.append(('wrong endianness', m))
    n = max(int(good.width) * int(good.height), 1)
    for label, value in (('all NaN', math.nan), ('all +inf', math.inf),
                         ('all -inf', -math.inf)):
        out.append((label, lidar_cloud(np.full((n, 3), value), t, good.header.frame_id)))
    xyz = np.tile([[5.0, 0.0, 0.5]], (n, 1)).astype(np.float32)
    xyz[:, 1] = np.nan  # x finite, y NaN in every point
    out.append(('one NaN per point', lidar_cloud(xyz, t, good.header.frame_id)))
    huge = np.full((n, 3), 3.4e38, np.float32)
    out.append(('float32 max', lidar_cloud(huge, t, good.header.frame_id)))
    out += [(f'stamp {label}', restamp(good, s)) for label, s in odd_stamps(t)]
    return out


def bad_scans(good: Any, t: float) -> Labelled:
    """Return malformed, non-finite, oversized and odd-stamped LaserScans."""
    out: Labelled = []
    for label, change in (('zero increment', {'angle_increment': 0.0}),
                          ('NaN increment', {'angle_increment': math.nan}),
                          ('inf angle_min', {'angle_min': math.inf}),
                          ('range_max < range_min', {'range_max': -1.0})):
        m = copy.deepcopy(good)
        for k, v in change.items():
            setattr(m, k, v)
        out.append((label, m))
    m = copy.deepcopy(good)
    m.ranges = [math.nan] * len(m.ranges)
    out.append(('all NaN ranges', m))
    m = copy.deepcopy(good)
    m.intensities = [1.0, 2.0]
    out.append(('mismatched intensities', m))
    m = copy.deepcopy(good)
    m.ranges = []
    out.append(('empty', m))
    m = copy.deepcopy(good)
    beams = array.array('f')
    beams.frombytes(np.full(2_000_000, 5.0, np.float32).tobytes())
    m.ranges = beams
    out.append(('2M beams', m))
    out += [(f'stamp {label}', restamp(good, s)) for label, s in odd_stamps(t)]
    return out


def scan(t: float, n: int = 1080, value: float = 20.0) -> Any:
    """Return a 270 deg LaserScan of ``n`` beams at ``value`` m, stamped ``t``."""
    inc = math.radians(270.0) / n
    return scans.scan_to_msg(np.full(n, value, np.float32), -math.radians(135.0), inc, t,
                             'ego_vehicle/lidar', range_min=0.1, range_max=20.0)


def jpeg_header_bomb(width: int = 30000, height: int = 30000) -> bytes:
    """Return a few bytes of JPEG whose frame header claims ``width`` x ``height``."""
    sof = bytes([0xFF, 0xC0, 0x00, 0x11, 0x08, height >> 8, height & 0xFF,
                 width >> 8, width & 0xFF, 0x03,
                 0x01, 0x22, 0x00, 0x02, 0x11, 0x01, 0x03, 0x11, 0x01])
    app0 = bytes([0xFF, 0xE0, 0x00, 0x10]) + b'JFIF\x00' + bytes(9)
    return b'\xff\xd8' + app0 + sof + bytes(5000) + b'\xff\xd9'


def bad_images(good: Any, t: float) -> Labelled:
    """Return malformed, oversized and odd-stamped variants of an Image."""
    out: Labelled = []
    for label, change in (('claims 8000x6000', {'width': 8000, 'height': 6000,
                                                'step': 24000}),
                          ('unknown encoding', {'encoding': 'yuv422_fancy'}),
                          ('32FC1', {'encoding': '32FC1'}),
                          ('step too small', {'step': 3}),
                          ('claims 60000x60000', {'width': 60000, 'height': 60000,
                                                  'step': 180000}),
                          ('zero size', {'width': 0, 'height': 0})):
        m = copy.deepcopy(good)
        for k, v in change.items():
            setattr(m, k, v)
        out.append((label, m))
    out += [(f'stamp {label}', restamp(good, s)) for label, s in odd_stamps(t)]
    return out


def bad_jpegs(good: Any, t: float) -> Labelled:
    """Return JPEG bombs, garbage and odd-stamped variants of a CompressedImage."""
    from hil_bridge.interface.codecs.stamps import fill_uint8
    out: Labelled = []
    for label, data in (('30000x30000 header, 5 KB', jpeg_header_bomb()),
                        ('4000x3000 header, 5 KB', jpeg_header_bomb(4000, 3000)),
                        ('random bytes', np.random.default_rng(1).integers(
                            0, 256, 4096).astype(np.uint8).tobytes()),
                        ('SOI only', b'\xff\xd8'), ('empty', b'')):
        m = copy.deepcopy(good)
        m.data = fill_uint8(np.frombuffer(data, np.uint8)) if data else []
        out.append((label, m))
    out += [(f'stamp {label}', restamp(good, s)) for label, s in odd_stamps(t)]
    return out
