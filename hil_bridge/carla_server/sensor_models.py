# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
Models of CARLA 0.9.16's other sensors for ``carla-hil serve`` (no rclpy).

Each follows the UE4 plugin's sensor (``Carla/Sensor/*.cpp``) on the
built-in world's geometry (:class:`hil_bridge.sim.world.WorldGeometry`:
flat ground, cones as frustums, vehicles as boxes). Inputs are REP-103
(``map``: x forward, y left, z up; metres, radians); outputs are what the
sensor sends, in CARLA's axes (UE: y right) and units.

* :class:`Imu` (``sensor.other.imu``): accelerometer = second derivative of
  the sensor's location (CARLA's three-point formula over the last three
  measurements) plus gravity on z, in the sensor's axes; gyroscope = the
  parent's angular velocity in its own axes, turned by the sensor's mount
  rotation (CARLA's ``RotateVector``); compass = heading of the sensor's x
  axis clockwise from north (UE -y), in [0, 2 pi); Gaussian noise and gyro
  bias as the attributes ask.
* :func:`geolocation` (``sensor.other.gnss``): the location in the map's
  OpenDRIVE geo-reference as the 0.9.16 client computes it (a spherical
  transverse Mercator inverse), plus bias and noise.
* :class:`Radar` (``sensor.other.radar``): ``points_per_second x dt``
  random rays in the field of view (radius and angle uniform, CARLA's
  scheme), each hit reported as radial relative velocity, azimuth (> 0
  right), altitude (> 0 up) and depth.
* :func:`obstacle` (``sensor.other.obstacle``): a sphere of ``hit_radius``
  swept ``distance`` metres along the sensor's x axis; the nearest
  vehicle, cone or (unless ``only_dynamics``) the ground it touches.
* :func:`semantic_lidar` (``sensor.lidar.ray_cast_semantic``): the
  ray-cast lidar's rays without drop-off or noise, each hit with the
  cosine of its incidence angle, the actor id and the semantic tag.
* :class:`RayCamera` (``sensor.camera.depth``,
  ``sensor.camera.semantic_segmentation``): one ray per pixel against the
  same geometry as the lidar: CARLA's depth encoding (planar depth, 1000 m
  in 24 bits of R, G, B) or the semantic tag in the red channel.

Semantic tags (``carla.CityObjectLabel``): the ground is ``Roads`` (the
built-in world is asphalt everywhere), cones ``Static``, vehicles
``Car``, nothing hit ``Sky`` (camera) / no point (lidar).
"""

import math
from typing import Dict, Optional, Sequence, Tuple

from hil_bridge.carla_server import sensor_data as sd
from hil_bridge.interface.cones import cone_dimensions
from hil_bridge.sim.geometry import (boxes_containing, cast_rays, HIT_BOX, HIT_CONE,
                                     HIT_GROUND, HIT_NONE, ray_box_pairs, ray_frustum_pairs)
from hil_bridge.sim.world import WorldGeometry
import numpy as np

#: carla.CityObjectLabel values used by the built-in world.
TAG_ROADS = 1
TAG_SKY = 11
TAG_CAR = 14
TAG_STATIC = 20
#: The mirror between REP-103 and UE axes (y -> -y).
MIRROR = np.diag([1.0, -1.0, 1.0])
#: The sphere (m) and central scale of the 0.9.16 client's geo projection.
EARTH_RADIUS = 6378137.0
TM_SCALE = 0.9996
#: The depth camera's far plane (m): CARLA's depth encoding spans 0..1000 m.
DEPTH_FAR = 1000.0


def _f(attrs: Dict[str, float], key: str, default: float = 0.0) -> float:
    return float(attrs.get(key, default))


# ------------------------------------------------------------------ IMU
class Imu:
    """
    ``sensor.other.imu``: accelerometer, gyroscope and compass.

    ``attrs`` holds the noise attributes (``noise_accel_stddev_x``...,
    ``noise_gyro_stddev_x``..., ``noise_gyro_bias_x``...). CARLA starts
    its location history at the origin, which gives one large spike on
    the second message after ``listen()``; here the history starts at the
    sensor's first location, extrapolated back along its velocity (no
    spike). The time step is the time since the previous measurement
    (CARLA uses the world's frame delta even for a sub-rate sensor).
    """

    def __init__(self, attrs: Dict[str, float]) -> None:
        self.accel_std = np.array([_f(attrs, f'noise_accel_stddev_{a}') for a in 'xyz'])
        self.gyro_std = np.array([_f(attrs, f'noise_gyro_stddev_{a}') for a in 'xyz'])
        self.gyro_bias = np.array([_f(attrs, f'noise_gyro_bias_{a}') for a in 'xyz'])
        self._history: Optional[Tuple[np.ndarray, np.ndarray]] = None
        self._prev_dt = math.inf

    def measure(self, T_sensor: np.ndarray, velocity: Sequence[float],
                R_mount: Optional[np.ndarray], omega_parent: Sequence[float],
                dt: float, gravity: float, rng: np.random.Generator
                ) -> Tuple[np.ndarray, np.ndarray, float]:
        """
        Return ``(accelerometer, gyroscope, compass)`` of one measurement.

        ``T_sensor`` the sensor's 4x4 pose in ``map``; ``velocity`` its
        world velocity (m/s, starts the history); ``R_mount`` its 3x3
        rotation relative to the parent (None: not attached, no gyro);
        ``omega_parent`` the parent's angular velocity in its body frame
        (rad/s, REP-103); ``dt`` (s) since the previous measurement;
        ``gravity`` (m/s^2). Vectors in the sensor's UE axes.
        """
        p0 = np.asarray(T_sensor, np.float64)[:3, 3].copy()
        h1 = float(dt) if dt > 0.0 else 1e-3
        if self._history is None:
            v = np.asarray(velocity, np.float64)
            self._history = (p0 - 2.0 * h1 * v, p0 - h1 * v)
            self._prev_dt = h1
        y2, y1 = self._history
        h2 = self._prev_dt
        # CARLA's second derivative of the quadratic through the last three
        # locations (InertialMeasurementUnit.cpp)
        acc = -2.0 * (y1 / (h1 * h2) - y2 / (h2 * (h1 + h2)) - p0 / (h1 * (h1 + h2)))
        self._history = (y1, p0)
        self._prev_dt = h1
        acc = acc + np.array([0.0, 0.0, float(gravity)])
        R = np.asarray(T_sensor, np.float64)[:3, :3]
        acc_ue = MIRROR @ (R.T @ acc)
        acc_ue = acc_ue + rng.normal(0.0, 1.0, 3) * self.accel_std
        if R_mount is None:
            gyro_ue = np.zeros(3)
        else:
            # UE's angular velocity is a pseudo-vector under the mirror:
            # (-wx, wy, -wz); CARLA rotates it by the mount rotation
            g = np.asarray(R_mount, np.float64) @ np.asarray(omega_parent, np.float64)
            gyro_ue = np.array([-g[0], g[1], -g[2]])
        gyro_ue = gyro_ue + self.gyro_bias + rng.normal(0.0, 1.0, 3) * self.gyro_std
        return acc_ue, gyro_ue, compass(R[:, 0])


def compass(forward: Sequence[float]) -> float:
    """
    Return CARLA's heading from north (rad, [0, 2 pi)) of a vector in ``map``.

    The angle from north (UE -y, REP-103 +y) to the vector's horizontal
    part, clockwise seen from above (east, REP-103 +x, is pi / 2).
    """
    fx, fy = float(forward[0]), -float(forward[1])        # UE axes
    norm = math.hypot(fx, fy)
    if norm < 1e-12:
        return 0.0
    fx, fy = fx / norm, fy / norm
    dot = -fy                                            # north = (0, -1)
    if dot >= 1.0:
        return 0.0
    angle = math.acos(max(-1.0, dot))
    if fx < 0.0:                                         # cross(N, f).z < 0
        return 2.0 * math.pi - angle
    return angle


# ----------------------------------------------------------------- GNSS
def geolocation(reference: Tuple[float, float, float], location_ue: Sequence[float]
                ) -> Tuple[float, float, float]:
    """
    Return ``(latitude, longitude, altitude)`` (deg, deg, m) of a UE location (m).

    ``reference`` is the map's ``(lat_0, lon_0, altitude)`` from its
    OpenDRIVE ``geoReference``. What the 0.9.16 client computes
    (``carla.Map.transform_to_geolocation``, matched to 1e-14 deg): the
    inverse transverse Mercator projection on a sphere of radius 6378137
    m with scale 0.9996 at the central meridian ``lon_0``, UE x east and UE
    **y north** (although the IMU's compass takes north as UE -y).
    """
    lat0, lon0, alt0 = (float(v) for v in reference)
    x, y, z = (float(v) for v in location_ue)
    scale = EARTH_RADIUS * TM_SCALE
    d = math.radians(lat0) + y / scale
    xp = x / scale
    lat = math.asin(math.sin(d) / math.cosh(xp))
    lon = math.radians(lon0) + math.atan2(math.sinh(xp), math.cos(d))
    return math.degrees(lat), math.degrees(lon), alt0 + z


def gnss(reference: Tuple[float, float, float], location_ue: Sequence[float],
         attrs: Dict[str, float], rng: np.random.Generator
         ) -> Tuple[float, float, float]:
    """Return a GNSS measurement: :func:`geolocation` + bias + Gaussian noise."""
    lat, lon, alt = geolocation(reference, location_ue)
    noise = rng.normal(0.0, 1.0, 3) * np.array(
        [_f(attrs, 'noise_lat_stddev'), _f(attrs, 'noise_lon_stddev'),
         _f(attrs, 'noise_alt_stddev')])
    return (lat + _f(attrs, 'noise_lat_bias') + float(noise[0]),
            lon + _f(attrs, 'noise_lon_bias') + float(noise[1]),
            alt + _f(attrs, 'noise_alt_bias') + float(noise[2]))


# ---------------------------------------------------------------- scene
class Scene:
    """
    What a sensor sees, with who owns each piece.

    ``geometry`` (:class:`WorldGeometry`); per cone and per box the actor id
    (0: map geometry) and per box its velocity in ``map`` (m/s).
    """

    def __init__(self, geometry: WorldGeometry, cone_ids: np.ndarray,
                 box_ids: np.ndarray, box_velocity: np.ndarray) -> None:
        self.geometry = geometry
        self.cone_ids = np.asarray(cone_ids, np.int64).reshape(-1)
        self.box_ids = np.asarray(box_ids, np.int64).reshape(-1)
        self.box_velocity = np.asarray(box_velocity, np.float64).reshape(-1, 3)

    def owners(self, kind: np.ndarray, index: np.ndarray
               ) -> Tuple[np.ndarray, np.ndarray]:
        """Return the actor id and semantic tag of each hit (``cast_rays``)."""
        ids = np.zeros(kind.shape, np.int64)
        tags = np.full(kind.shape, TAG_SKY, np.uint32)
        cone = kind == HIT_CONE
        box = kind == HIT_BOX
        ids[cone] = self.cone_ids[index[cone]]
        ids[box] = self.box_ids[index[box]]
        tags[kind == HIT_GROUND] = TAG_ROADS
        tags[cone] = TAG_STATIC
        tags[box] = TAG_CAR
        return ids, tags

    def velocities(self, kind: np.ndarray, index: np.ndarray) -> np.ndarray:
        """Return the world velocity (N, 3) of what each ray hit (cones, ground: 0)."""
        v = np.zeros((kind.shape[0], 3))
        box = kind == HIT_BOX
        v[box] = self.box_velocity[index[box]]
        return v


def normals(world: WorldGeometry, points: np.ndarray, kind: np.ndarray,
            index: np.ndarray) -> np.ndarray:
    """
    Return the unit surface normal (N, 3) at hit points in ``map``.

    Ground: up; box: the face the point lies on; cone: the frustum wall's
    outward normal (or up on its top disk).
    """
    out = np.zeros((kind.shape[0], 3))
    out[:, 2] = 1.0
    box = np.flatnonzero(kind == HIT_BOX)
    if box.size:
        b = index[box]
        c = np.asarray(world.box_center, np.float64)[b]
        yaw = np.asarray(world.box_yaw, np.float64)[b]
        half = np.asarray(world.box_size, np.float64)[b] / 2.0
        rel = points[box] - c
        cy, sy = np.cos(yaw), np.sin(yaw)
        local = np.column_stack((cy * rel[:, 0] + sy * rel[:, 1],
                                 -sy * rel[:, 0] + cy * rel[:, 1], rel[:, 2]))
        axis = np.argmax(np.abs(local) / half, axis=1)
        sign = np.sign(local[np.arange(box.size), axis])
        n_local = np.zeros((box.size, 3))
        n_local[np.arange(box.size), axis] = sign
        out[box] = np.column_stack((cy * n_local[:, 0] - sy * n_local[:, 1],
                                    sy * n_local[:, 0] + cy * n_local[:, 1],
                                    n_local[:, 2]))
    cone = np.flatnonzero(kind == HIT_CONE)
    if cone.size:
        k = index[cone]
        xy = np.asarray(world.cone_xy, np.float64)[k]
        rb, rt, h = cone_dimensions(np.asarray(world.cone_class)[k])
        rel = points[cone, :2] - xy
        r = np.maximum(np.hypot(rel[:, 0], rel[:, 1]), 1e-9)
        slope = (rb - rt) / h
        wall = np.column_stack((rel[:, 0] / r, rel[:, 1] / r, slope))
        wall /= np.linalg.norm(wall, axis=1, keepdims=True)
        top = points[cone, 2] >= float(world.ground_z) + h - 1e-6
        out[cone] = np.where(top[:, None], np.array([0.0, 0.0, 1.0]), wall)
    return out


# ---------------------------------------------------------- ray sensors
def semantic_lidar(scene: Scene, T_sensor: np.ndarray, dirs: np.ndarray,
                   channel: np.ndarray, channels: int, max_range: float
                   ) -> Tuple[np.ndarray, np.ndarray]:
    """
    Cast a semantic lidar's rays; return its detections and per-channel counts.

    ``dirs`` (N, 3) unit directions in the sensor frame (channel-major,
    :meth:`hil_bridge.sim.lidar.RayCastLidar.directions`), ``channel`` (N,)
    their channel. Records are :data:`sensor_data.SEMANTIC_DETECTION`
    with points in the sensor's UE axes.
    """
    T = np.asarray(T_sensor, np.float64)
    d_world = dirs @ T[:3, :3].T
    t, kind, index = cast_rays(scene.geometry, T[:3, 3], d_world, max_range)
    hit = np.isfinite(t)
    t, kind, index, d, d_world, ch = (t[hit], kind[hit], index[hit], dirs[hit],
                                      d_world[hit], channel[hit])
    pts_world = T[:3, 3] + d_world * t[:, None]
    n = normals(scene.geometry, pts_world, kind, index)
    ids, tags = scene.owners(kind, index)
    recs = np.zeros(t.shape[0], sd.SEMANTIC_DETECTION)
    local = d * t[:, None]
    recs['point'] = local * np.array([1.0, -1.0, 1.0])
    recs['cos_inc_angle'] = np.einsum('ij,ij->i', -d_world, n)
    recs['object_idx'] = ids
    recs['object_tag'] = tags
    return recs, np.bincount(ch, minlength=int(channels))


class Radar:
    """
    ``sensor.other.radar``: random rays in a cone, radial velocities.

    ``horizontal_fov``, ``vertical_fov`` (deg), ``range`` (m),
    ``points_per_second``. The radar's own velocity is the change of its
    location since the previous measurement (CARLA's), zero at first.
    """

    def __init__(self, attrs: Dict[str, float]) -> None:
        self.hfov = _f(attrs, 'horizontal_fov', 30.0)
        self.vfov = _f(attrs, 'vertical_fov', 30.0)
        self.range = _f(attrs, 'range', 100.0)
        self.pps = _f(attrs, 'points_per_second', 1500.0)
        if not (0.0 < self.hfov < 180.0 and 0.0 < self.vfov < 180.0
                and self.range > 0.0 and self.pps >= 0.0):
            raise ValueError('sensor.other.radar: horizontal_fov and vertical_fov must '
                             'be in (0, 180) deg, range > 0, points_per_second >= 0')
        self._prev: Optional[np.ndarray] = None

    def measure(self, scene: Scene, T_sensor: np.ndarray, dt: float,
                rng: np.random.Generator) -> np.ndarray:
        """Return the :data:`sensor_data.RADAR_DETECTION` records of one step."""
        T = np.asarray(T_sensor, np.float64)
        here = T[:3, 3].copy()
        v_radar = np.zeros(3) if self._prev is None or dt <= 0.0 else \
            (here - self._prev) / dt
        self._prev = here
        n = int(self.pps * dt)
        out = np.zeros(0, sd.RADAR_DETECTION)
        if n <= 0:
            return out
        radius = rng.random(n)
        angle = rng.uniform(0.0, 2.0 * math.pi, n)
        max_rx = math.tan(math.radians(self.hfov / 2.0)) * self.range
        max_ry = math.tan(math.radians(self.vfov / 2.0)) * self.range
        # the ray's end in the sensor frame (UE: (range, rx cos, ry sin))
        end = np.column_stack((np.full(n, self.range), -max_rx * radius * np.cos(angle),
                               max_ry * radius * np.sin(angle)))
        length = np.linalg.norm(end, axis=1)
        d = end / length[:, None]
        d_world = d @ T[:3, :3].T
        t, kind, index = cast_rays(scene.geometry, here, d_world, float(length.max()))
        hit = np.isfinite(t) & (t <= length)
        if not hit.any():
            return out
        d, d_world, t = d[hit], d_world[hit], t[hit]
        rel_v = scene.velocities(kind[hit], index[hit]) - v_radar
        out = np.zeros(t.shape[0], sd.RADAR_DETECTION)
        out['velocity'] = np.einsum('ij,ij->i', rel_v, d_world)
        out['azimuth'] = np.arctan2(-d[:, 1], d[:, 0])          # > 0 right (UE)
        out['altitude'] = np.arcsin(np.clip(d[:, 2], -1.0, 1.0))
        out['depth'] = t
        return out


def obstacle(scene: Scene, T_sensor: np.ndarray, distance: float, radius: float,
             only_dynamics: bool) -> Optional[Tuple[str, int, float]]:
    """
    Sweep a sphere along the sensor's x axis; return the first thing it touches.

    Returns ``(kind, index, distance)`` (``kind`` 'box', 'cone' or
    'ground', ``index`` into the scene's boxes or cones, ``distance`` the
    sphere centre's travel in metres, 0 when it starts touching) or None.
    The sphere sweep is taken as a ray against the obstacles grown by the
    radius (boxes grown on every side, cones as frustums grown sideways
    and upwards). ``only_dynamics``: vehicles only (CARLA's
    AllDynamicObjects), else also cones and the ground.
    """
    T = np.asarray(T_sensor, np.float64)
    o = T[:3, 3]
    f = T[:3, 0] / np.linalg.norm(T[:3, 0])
    g = scene.geometry
    r = float(radius)
    best: Optional[Tuple[str, int, float]] = None

    def consider(kind: str, t: np.ndarray) -> None:
        nonlocal best
        if t.size == 0:
            return
        k = int(np.argmin(t))
        if np.isfinite(t[k]) and t[k] <= distance and (best is None or t[k] < best[2]):
            best = (kind, k, float(max(t[k], 0.0)))
    centers = np.asarray(g.box_center, np.float64).reshape(-1, 3)
    if centers.shape[0]:
        yaw = np.asarray(g.box_yaw, np.float64).reshape(-1)
        size = np.asarray(g.box_size, np.float64).reshape(-1, 3) + 2.0 * r
        inside = boxes_containing(WorldGeometry(box_center=centers, box_yaw=yaw,
                                                box_size=size), o)
        m = centers.shape[0]
        t = ray_box_pairs(np.broadcast_to(o, (m, 3)), np.broadcast_to(f, (m, 3)),
                          centers, yaw, size)
        consider('box', np.where(inside, 0.0, t))
    if only_dynamics:
        return best
    up = np.asarray(g.cone_up, bool).reshape(-1)
    xy = np.asarray(g.cone_xy, np.float64).reshape(-1, 2)
    if xy.shape[0]:
        rb, rt, h = cone_dimensions(np.asarray(g.cone_class))
        m = xy.shape[0]
        horiz = np.hypot(xy[:, 0] - o[0], xy[:, 1] - o[1])
        inside = (horiz <= rb + r) & (o[2] <= g.ground_z + h + r)
        t = ray_frustum_pairs(np.broadcast_to(o, (m, 3)), np.broadcast_to(f, (m, 3)),
                              xy, rb + r, rt + r, h + r, g.ground_z)
        consider('cone', np.where(up, np.where(inside, 0.0, t), np.inf))
    height = o[2] - g.ground_z - r
    if height <= 0.0:
        consider('ground', np.array([0.0]))
    elif f[2] < 0.0:
        consider('ground', np.array([height / -f[2]]))
    return best


class RayCamera:
    """
    A depth or semantic segmentation camera ray-cast against the world.

    ``width`` x ``height`` pixels, horizontal ``fov`` (deg); pixel centres
    at integer coordinates, ``fx = fy = width / (2 tan(fov / 2))`` (the
    RGB camera's intrinsics). ``render`` returns BGRA (H, W, 4) uint8.
    """

    def __init__(self, width: int, height: int, fov: float, semantic: bool) -> None:
        if width <= 0 or height <= 0 or not 0.0 < fov < 180.0:
            raise ValueError(f'camera: bad size {width}x{height} or fov {fov}')
        self.width, self.height, self.fov = int(width), int(height), float(fov)
        self.semantic = bool(semantic)
        f = width / (2.0 * math.tan(math.radians(fov) / 2.0))
        u, v = np.meshgrid(np.arange(width, dtype=np.float64) - width / 2.0,
                           np.arange(height, dtype=np.float64) - height / 2.0)
        # sensor frame (REP-103): x forward, y left (-u), z up (-v)
        rays = np.stack((np.full(u.shape, f), -u, -v), axis=-1).reshape(-1, 3)
        self._forward = f / np.linalg.norm(rays, axis=1)    # cos to the optical axis
        self._rays = rays / np.linalg.norm(rays, axis=1, keepdims=True)

    def render(self, scene: Scene, T_sensor: np.ndarray) -> np.ndarray:
        """Return the BGRA image seen from ``T_sensor`` (4x4 pose in ``map``)."""
        t, kind, index = self.cast(scene.geometry, np.asarray(T_sensor, np.float64))
        out = np.zeros((self.width * self.height, 4), np.uint8)
        out[:, 3] = 255
        if self.semantic:
            _, tags = scene.owners(kind, index)
            out[:, 2] = tags.astype(np.uint8)
        else:
            depth = np.minimum(t * self._forward, DEPTH_FAR)     # inf (sky) -> far
            code = np.rint(depth / DEPTH_FAR * (256 ** 3 - 1)).astype(np.int64)
            out[:, 2] = code & 0xFF                     # R
            out[:, 1] = (code >> 8) & 0xFF              # G
            out[:, 0] = (code >> 16) & 0xFF             # B
        return out.reshape(self.height, self.width, 4)

    def cast(self, world: WorldGeometry, T: np.ndarray
             ) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
        """
        Return ``t``, kind and index of every pixel's ray (as ``cast_rays``).

        The ground is hit analytically for every pixel; a cone or a box is
        tested only against the pixels of its projected bounding box (the
        same surfaces ``cast_rays`` tests, without its per-ray culling).
        """
        o = T[:3, 3]
        R = T[:3, :3]
        # einsum, not matmul: an (N, 3) x (3, 3) product goes to a threaded
        # BLAS, 3-10x slower on a loaded 2-core machine
        d = np.einsum('ij,kj->ik', self._rays, R)
        n = d.shape[0]
        far = DEPTH_FAR / float(self._forward.min())
        with np.errstate(divide='ignore', invalid='ignore'):
            t = (float(world.ground_z) - o[2]) / d[:, 2]
        t = np.where(np.isfinite(t) & (t > 1e-9) & (t <= far), t, np.inf)
        kind = np.where(np.isfinite(t), HIT_GROUND, HIT_NONE).astype(np.uint8)
        index = np.full(n, -1, np.int64)

        def update(pixels: np.ndarray, tp: np.ndarray, what: int, k: int) -> None:
            closer = tp < t[pixels]
            hit = pixels[closer]
            t[hit] = tp[closer]
            kind[hit] = what
            index[hit] = k
        xy = np.asarray(world.cone_xy, np.float64).reshape(-1, 2)
        if xy.shape[0]:
            up = np.asarray(world.cone_up, bool).reshape(-1)
            rb, rt, h = cone_dimensions(np.asarray(world.cone_class))
            centres = np.column_stack((xy, world.ground_z + h / 2.0))
            sizes = np.column_stack((2 * rb, 2 * rb, h))
            corners = centres[:, None, :] + _SIGNS[None] * sizes[:, None, :] / 2.0
            for k in np.flatnonzero(up & self._in_view(corners, o, R)):
                px = self._pixels(corners[k], o, R)
                if px.size:
                    m = px.size
                    update(px, ray_frustum_pairs(
                        np.broadcast_to(o, (m, 3)), d[px], np.broadcast_to(xy[k], (m, 2)),
                        np.full(m, rb[k]), np.full(m, rt[k]), np.full(m, h[k]),
                        world.ground_z), HIT_CONE, int(k))
        centers = np.asarray(world.box_center, np.float64).reshape(-1, 3)
        yaws = np.asarray(world.box_yaw, np.float64).reshape(-1)
        sizes = np.asarray(world.box_size, np.float64).reshape(-1, 3)
        inside = boxes_containing(world, o) if centers.shape[0] else np.zeros(0, bool)
        for k in range(centers.shape[0]):
            if inside[k]:
                continue                 # a camera inside a box sees out of it
            px = self._pixels(_box_corners(centers[k], yaws[k], sizes[k]), o, R)
            if px.size:
                m = px.size
                update(px, ray_box_pairs(
                    np.broadcast_to(o, (m, 3)), d[px], np.broadcast_to(centers[k], (m, 3)),
                    np.full(m, yaws[k]), np.broadcast_to(sizes[k], (m, 3))), HIT_BOX, k)
        return t, kind, index

    def _in_view(self, corners: np.ndarray, o: np.ndarray, R: np.ndarray) -> np.ndarray:
        """
        Return a mask (K,) of the bodies (corners (K, 8, 3)) that may be in the image.

        A body is out when all its corners are behind the camera or, all in
        front, they project beyond one side of the image (a cheap cull
        before the per-body pixel rectangles).
        """
        local = (corners - o) @ R
        front = local[..., 0] > 1e-3
        out = ~front.any(axis=1)
        ahead = front.all(axis=1)
        if ahead.any():
            f = self.width / (2.0 * math.tan(math.radians(self.fov) / 2.0))
            x = local[ahead, :, 0]
            u = self.width / 2.0 - f * local[ahead, :, 1] / x
            v = self.height / 2.0 - f * local[ahead, :, 2] / x
            beyond = (u.max(1) < -1) | (u.min(1) > self.width) | \
                (v.max(1) < -1) | (v.min(1) > self.height)
            out[np.flatnonzero(ahead)[beyond]] = True
        return ~out

    def _pixels(self, corners: np.ndarray, o: np.ndarray, R: np.ndarray) -> np.ndarray:
        """Return the flat indices of the pixels a convex body's corners project to."""
        near = 1e-3
        local = (corners - o) @ R                   # sensor frame: x forward
        front = local[:, 0] > near
        if not front.any():
            return np.zeros(0, np.int64)
        if not front.all():
            # the part in front of the camera: its corners there and where the
            # segments between corners cross the plane x = near
            a, b = local[front], local[~front]
            s = (a[:, None, 0] - near) / (a[:, None, 0] - b[None, :, 0])
            cut = a[:, None, :] + s[..., None] * (b[None, :, :] - a[:, None, :])
            local = np.concatenate((a, cut.reshape(-1, 3)))
        f = self.width / (2.0 * math.tan(math.radians(self.fov) / 2.0))
        u = self.width / 2.0 - f * local[:, 1] / local[:, 0]
        v = self.height / 2.0 - f * local[:, 2] / local[:, 0]
        u0, u1 = max(int(math.floor(u.min())) - 1, 0), \
            min(int(math.ceil(u.max())) + 1, self.width - 1)
        v0, v1 = max(int(math.floor(v.min())) - 1, 0), \
            min(int(math.ceil(v.max())) + 1, self.height - 1)
        if u0 > u1 or v0 > v1:
            return np.zeros(0, np.int64)
        rows = np.arange(v0, v1 + 1)[:, None] * self.width
        return (rows + np.arange(u0, u1 + 1)[None, :]).reshape(-1)


#: the corners of a unit box (8, 3)
_SIGNS = np.array([[sx, sy, sz] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)],
                  np.float64)


def _box_corners(center: np.ndarray, yaw: float, size: np.ndarray) -> np.ndarray:
    """Return the 8 corners (8, 3) of a yaw-oriented box."""
    c, s = math.cos(yaw), math.sin(yaw)
    rot = np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])
    return center + (_SIGNS * size / 2.0) @ rot.T


def decode_depth(bgra: np.ndarray) -> np.ndarray:
    """Return metres (H, W) of a CARLA depth image (BGRA uint8)."""
    b = np.asarray(bgra)
    code = b[..., 2].astype(np.float64) + 256.0 * b[..., 1] + 65536.0 * b[..., 0]
    return DEPTH_FAR * code / (256 ** 3 - 1)
