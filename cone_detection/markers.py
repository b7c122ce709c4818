# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
rviz2 MarkerArray of cones: one cylinder per cone, coloured by class.

Used by the lidar, vision and fusion nodes. Each source gets its own
namespace (``ns``), so rviz can show or hide them one by one. Cones that
disappeared are removed with DELETE markers for the ids beyond the current
count (``previous_count``) and by the markers' ``lifetime``; no DELETEALL,
which older rviz versions apply to every namespace of the display.
Positions are the cone base centres (m) in ``frame_id``; the cylinder
stands on the ground, its height and diameter those of the cone class (big
orange larger). Class ids are the contract's (``hil_bridge.interface.cones.CONE_*``);
unknown ids are drawn grey.
"""

from typing import Any, Dict, Optional, Tuple

from hil_bridge.interface.cones import (CONE_BIG_ORANGE, CONE_BLUE, CONE_ORANGE, CONE_SIZE,
                                        CONE_UNKNOWN, CONE_YELLOW)
import numpy as np

#: RGBA (0..1) per class id.
CLASS_COLOURS: Dict[int, Tuple[float, float, float, float]] = {
    CONE_UNKNOWN: (0.6, 0.6, 0.6, 0.9),
    CONE_BLUE: (0.1, 0.3, 1.0, 0.9),
    CONE_YELLOW: (1.0, 0.9, 0.1, 0.9),
    CONE_ORANGE: (1.0, 0.5, 0.0, 0.9),
    CONE_BIG_ORANGE: (1.0, 0.35, 0.0, 0.9),
}


def cone_markers(xyz: np.ndarray, class_id: np.ndarray, stamp: Any,
                 frame_id: str, ns: str = 'cones',
                 confidence: Optional[np.ndarray] = None,
                 lifetime: float = 0.5, previous_count: int = 0) -> Any:
    """
    Return a ``visualization_msgs/MarkerArray`` for cones.

    ``xyz`` (N, 3) or (N, 2) cone base centres in ``frame_id`` (m);
    ``class_id`` (N,) contract ids; ``stamp`` a ``builtin_interfaces/Time``
    or seconds (float); ``confidence`` (N,) in [0, 1] scales the alpha (at
    least 0.3); ``lifetime`` (s) lets rviz drop markers of a dead node;
    ids ``len(xyz) .. previous_count - 1`` get DELETE markers. Raises
    ``ValueError`` for mismatched or non-finite arrays.
    """
    from builtin_interfaces.msg import Duration, Time
    from visualization_msgs.msg import Marker, MarkerArray
    pts = np.asarray(xyz, dtype=np.float64)
    if pts.ndim != 2 or pts.shape[1] not in (2, 3):
        raise ValueError(f'cone_markers: xyz must be (N, 2) or (N, 3), got '
                         f'shape {pts.shape}')
    cls = np.asarray(class_id).astype(np.int64).ravel()
    if cls.shape[0] != pts.shape[0]:
        raise ValueError(f'cone_markers: {pts.shape[0]} positions but '
                         f'{cls.shape[0]} class ids')
    if not np.all(np.isfinite(pts)):
        raise ValueError('cone_markers: positions must be finite')
    if confidence is None:
        conf = np.ones(pts.shape[0])
    else:
        conf = np.asarray(confidence, dtype=np.float64).ravel()
        if conf.shape[0] != pts.shape[0]:
            raise ValueError(f'cone_markers: {pts.shape[0]} positions but '
                             f'{conf.shape[0]} confidences')
    conf = np.clip(np.nan_to_num(conf, nan=0.0), 0.3, 1.0)
    if not isinstance(stamp, Time):
        from hil_bridge.interface.codecs.stamps import stamp_from_sec
        stamp = stamp_from_sec(float(stamp))
    life = Duration(sec=int(lifetime), nanosec=int((lifetime % 1.0) * 1e9))
    out = MarkerArray()
    z0 = pts[:, 2] if pts.shape[1] == 3 else np.zeros(pts.shape[0])
    for i in range(pts.shape[0]):
        cid = int(cls[i])
        width, height = CONE_SIZE.get(cid, CONE_SIZE[CONE_BLUE])
        m = Marker()
        m.header.stamp = stamp
        m.header.frame_id = frame_id
        m.ns = ns
        m.id = i
        m.type = Marker.CYLINDER
        m.action = Marker.ADD
        m.pose.position.x = float(pts[i, 0])
        m.pose.position.y = float(pts[i, 1])
        m.pose.position.z = float(z0[i]) + 0.5 * height
        m.pose.orientation.w = 1.0
        m.scale.x = m.scale.y = float(width)
        m.scale.z = float(height)
        r, g, b, a = CLASS_COLOURS.get(cid, CLASS_COLOURS[CONE_UNKNOWN])
        m.color.r, m.color.g, m.color.b = r, g, b
        m.color.a = float(a * conf[i])
        m.lifetime = life
        out.markers.append(m)
    for i in range(pts.shape[0], int(previous_count)):
        gone = Marker()
        gone.header.stamp = stamp
        gone.header.frame_id = frame_id
        gone.ns = ns
        gone.id = i
        gone.action = Marker.DELETE
        out.markers.append(gone)
    return out
