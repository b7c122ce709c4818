# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
``sensor.camera.rgb`` of the built-in simulator: a fast pinhole renderer.

The camera sensor frame is REP-103 (x forward, y left, z up); its image
uses the optical frame (x right, y down, z forward). Intrinsics follow the
carla-ros-bridge convention: ``fx = fy = w / (2 tan(fov / 2))`` with ``fov``
the horizontal field of view, ``cx = w / 2``, ``cy = h / 2``; pixel ``(u,
v)`` has its centre at integer coordinates.

A frame is drawn with OpenCV in this order:

1. sky (a gradient in elevation) and the ground, an asphalt-like tiled
   texture mapped with the ground homography (``cv2.warpPerspective``) and
   faded into haze with distance; both are baked per camera tilt and height
   and re-used while these do not change;
2. cones and vehicle boxes, far to near (painter's algorithm): a cone is a
   stack of frustum bands in its Formula Student colours (blue with a white
   stripe, yellow with a black stripe, small orange with two white stripes,
   big orange with two wide white stripes; the sunlit side of each band
   brighter), a box shows its visible faces shaded by the sun;
3. optional Gaussian pixel noise.

:class:`Lighting` scales every colour (brightness, per-channel tint) and
sets the sun direction; vary it per scenario or seed.
"""

from dataclasses import dataclass
import math
from typing import Dict, List, Optional, Tuple

import cv2
from hil_bridge.interface.cones import (CONE_BIG_ORANGE, CONE_BLUE, cone_dimensions, CONE_ORANGE,
                                        CONE_YELLOW)
from hil_bridge.sim.geometry import check_world
from hil_bridge.sim.world import WorldGeometry
import numpy as np

#: Rotation from the optical frame (x right, y down, z forward) to the
#: REP-103 camera sensor frame (x forward, y left, z up).
R_SENSOR_OPTICAL = np.array([[0.0, 0.0, 1.0],
                             [-1.0, 0.0, 0.0],
                             [0.0, -1.0, 0.0]])

_BLUE = (190.0, 95.0, 25.0)
_YELLOW = (20.0, 205.0, 235.0)
_ORANGE = (10.0, 110.0, 250.0)
_WHITE = (235.0, 235.0, 235.0)
_BLACK = (35.0, 35.0, 35.0)

#: Bands of each cone class: (bottom, top) as fractions of the height and
#: the BGR colour, bottom to top.
CONE_BANDS: Dict[int, Tuple[Tuple[float, float, Tuple[float, ...]], ...]] = {
    CONE_BLUE: ((0.0, 0.38, _BLUE), (0.38, 0.62, _WHITE), (0.62, 1.0, _BLUE)),
    CONE_YELLOW: ((0.0, 0.38, _YELLOW), (0.38, 0.62, _BLACK),
                  (0.62, 1.0, _YELLOW)),
    CONE_ORANGE: ((0.0, 0.3, _ORANGE), (0.3, 0.44, _WHITE),
                  (0.44, 0.58, _ORANGE), (0.58, 0.72, _WHITE),
                  (0.72, 1.0, _ORANGE)),
    CONE_BIG_ORANGE: ((0.0, 0.25, _ORANGE), (0.25, 0.42, _WHITE),
                      (0.42, 0.55, _ORANGE), (0.55, 0.72, _WHITE),
                      (0.72, 1.0, _ORANGE)),
}
#: Colour of the main body of each class (used for far cones).
CONE_BODY = {CONE_BLUE: _BLUE, CONE_YELLOW: _YELLOW, CONE_ORANGE: _ORANGE,
             CONE_BIG_ORANGE: _ORANGE}

_SHIFT = 4                     # fixed-point bits of polygon vertices
_SCALE = float(1 << _SHIFT)
_ARC = 7                       # points per half circle of a cone band
_NEAR = 0.05                   # near clipping distance (m)
_LOD_PX = 6.0                  # cones shorter than this are one polygon
_CONE_DIM = 0.8                # colour factor of a cone's shadowed side


def intrinsics(width: int, height: int, fov_deg: float) -> np.ndarray:
    """
    Return the 3x3 camera matrix K of a CARLA camera.

    ``fov_deg`` is the horizontal field of view in degrees (0, 180).
    """
    if not (isinstance(width, (int, np.integer)) and width > 0
            and isinstance(height, (int, np.integer)) and height > 0):
        raise ValueError(f'camera image size must be positive integers, got '
                         f'{width}x{height}')
    fov = float(fov_deg)
    if not (math.isfinite(fov) and 0.0 < fov < 180.0):
        raise ValueError(f'camera fov must be in (0, 180) degrees, got '
                         f'{fov_deg}')
    f = width / (2.0 * math.tan(math.radians(fov) / 2.0))
    return np.array([[f, 0.0, width / 2.0],
                     [0.0, f, height / 2.0],
                     [0.0, 0.0, 1.0]])


def _check_pose(T: np.ndarray, name: str) -> np.ndarray:
    M = np.asarray(T, dtype=np.float64)
    if M.shape != (4, 4) or not np.all(np.isfinite(M)):
        raise ValueError(f'{name} must be a finite 4x4 matrix, got shape '
                         f'{M.shape}')
    return M


def world_to_optical(T_world_camera: np.ndarray) -> np.ndarray:
    """
    Return the 4x4 transform from ``map`` to the camera's optical frame.

    ``T_world_camera`` is the REP-103 pose of the camera sensor in ``map``.
    """
    T = _check_pose(T_world_camera, 'T_world_camera')
    R_wo = T[:3, :3] @ R_SENSOR_OPTICAL
    out = np.eye(4)
    out[:3, :3] = R_wo.T
    out[:3, 3] = -R_wo.T @ T[:3, 3]
    return out


def project_points(K: np.ndarray, T_world_camera: np.ndarray,
                   points_world: np.ndarray
                   ) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """
    Project points in ``map`` into a camera image.

    ``K`` 3x3 intrinsics, ``T_world_camera`` the 4x4 REP-103 pose of the
    camera sensor in ``map`` (x forward, y left, z up), ``points_world``
    (N, 3) metres. Returns ``uv`` (N, 2) pixel coordinates (u right, v down;
    NaN for points not in front), ``depth`` (N,) metres along the optical
    axis and ``in_front`` (N,) bool (``depth > 0``). Points in front may
    still fall outside the image.
    """
    Km = np.asarray(K, dtype=np.float64)
    if Km.shape != (3, 3) or not np.all(np.isfinite(Km)):
        raise ValueError(f'K must be a finite 3x3 matrix, got {Km.shape}')
    pts = np.asarray(points_world, dtype=np.float64)
    if pts.ndim != 2 or pts.shape[1] != 3:
        raise ValueError(f'points_world must have shape (N, 3), got '
                         f'{pts.shape}')
    if not np.all(np.isfinite(pts)):
        raise ValueError('points_world must be finite')
    T = world_to_optical(T_world_camera)
    cam = pts @ T[:3, :3].T + T[:3, 3]
    depth = cam[:, 2]
    in_front = depth > 0.0
    with np.errstate(divide='ignore', invalid='ignore'):
        uvw = cam @ Km.T
        uv = uvw[:, :2] / uvw[:, 2:3]
    uv[~in_front] = np.nan
    return uv, depth, in_front


@dataclass
class Lighting:
    """
    Scene lighting of the renderer.

    ``brightness`` multiplies every colour; ``tint`` multiplies the B, G, R
    channels; the sun (``sun_azimuth`` in ``map``, ``sun_elevation`` above
    the horizon, radians) shades box faces and cone sides.
    """

    brightness: float = 1.0
    tint: Tuple[float, float, float] = (1.0, 1.0, 1.0)
    sun_azimuth: float = 0.7
    sun_elevation: float = 0.8

    @classmethod
    def random(cls, rng: np.random.Generator) -> 'Lighting':
        """Draw a plausible daylight variation (dull to bright, warm/cold)."""
        return cls(brightness=float(rng.uniform(0.6, 1.3)),
                   tint=tuple(float(v) for v in rng.uniform(0.88, 1.12, 3)),
                   sun_azimuth=float(rng.uniform(-math.pi, math.pi)),
                   sun_elevation=float(rng.uniform(0.25, 1.3)))

    def factor(self) -> np.ndarray:
        """Return the per-channel (B, G, R) colour factor."""
        f = float(self.brightness) * np.asarray(self.tint, dtype=np.float64)
        if f.shape != (3,) or not np.all(np.isfinite(f)) or np.any(f < 0):
            raise ValueError(f'lighting brightness/tint must be finite and '
                             f'non-negative, got {self.brightness}, '
                             f'{self.tint}')
        return f

    def sun(self) -> np.ndarray:
        """Return the unit vector towards the sun in ``map``."""
        ce = math.cos(self.sun_elevation)
        return np.array([ce * math.cos(self.sun_azimuth),
                         ce * math.sin(self.sun_azimuth),
                         math.sin(self.sun_elevation)])


def _tileable_noise(size: int, sigma_px: float,
                    rng: np.random.Generator) -> np.ndarray:
    """Return periodic (tileable) smooth noise, zero mean, unit std."""
    white = rng.standard_normal((size, size))
    fy = np.fft.fftfreq(size)[:, None]
    fx = np.fft.rfftfreq(size)[None, :]
    gain = np.exp(-2.0 * (math.pi * sigma_px) ** 2 * (fx ** 2 + fy ** 2))
    out = np.fft.irfft2(np.fft.rfft2(white) * gain, s=(size, size))
    return out / max(float(out.std()), 1e-12)


def asphalt_texture(size: int = 512, seed: int = 7) -> np.ndarray:
    """Return a tileable asphalt-like bgr8 texture (size x size)."""
    rng = np.random.default_rng(seed)
    grey = (98.0 + 9.0 * _tileable_noise(size, 40.0, rng)
            + 6.0 * _tileable_noise(size, 6.0, rng)
            + 7.0 * _tileable_noise(size, 0.7, rng))
    tex = np.stack((grey * 1.04, grey, grey * 0.97), axis=-1)
    return np.clip(tex, 0, 255).astype(np.uint8)


class CameraRenderer:
    """
    Pinhole renderer of the built-in world for one camera.

    ``width`` x ``height`` pixels, horizontal ``fov_deg`` in (0, 180),
    ``noise_stddev`` the standard deviation of Gaussian pixel noise (0 for
    none), ``draw_distance`` (m) beyond which cones and boxes are not drawn.
    Noise is taken at a random offset from a bank of i.i.d. N(0, sigma^2)
    samples drawn once per renderer (spatially independent per pixel and
    channel, much faster than fresh samples every frame).
    """

    texture_metres = 8.0     # ground texture tile size (m)
    ground_downscale = 2     # ground composed at 1/2 resolution, resized
    haze_distance = 120.0    # ground fades into haze over this distance (m)

    def __init__(self, width: int, height: int, fov_deg: float,
                 noise_stddev: float = 0.0,
                 lighting: Optional[Lighting] = None,
                 draw_distance: float = 120.0) -> None:
        self.K = intrinsics(width, height, fov_deg)
        self.width = int(width)
        self.height = int(height)
        self.fov_deg = float(fov_deg)
        self._noise_bank: Optional[np.ndarray] = None
        self.noise_stddev = noise_stddev
        dd = float(draw_distance)
        if not (math.isfinite(dd) and dd > 0.0):
            raise ValueError(f'draw_distance must be > 0, got {draw_distance}')
        self.draw_distance = dd
        self._texture = asphalt_texture()
        self._lighting = lighting if lighting is not None else Lighting()
        self._lighting.factor()
        self._lit_texture: Optional[np.ndarray] = None
        self._background_key: Optional[tuple] = None
        self._background: Optional[tuple] = None
        # The background is smooth (sky gradient, haze that reaches the sky
        # colour at the horizon), so it is baked on a grid 4x coarser and
        # resized; a pixel of the grid maps to full-resolution coordinates
        # as cv2.resize's INTER_LINEAR does.
        self._low = (max(1, -(-self.width // 4)), max(1, -(-self.height // 4)))
        lw, lh = self._low
        u = (np.arange(lw) + 0.5) * self.width / lw - 0.5
        v = (np.arange(lh) + 0.5) * self.height / lh - 0.5
        self._rays = np.stack(
            np.broadcast_arrays((u[None, :] - self.K[0, 2]) / self.K[0, 0],
                                (v[:, None] - self.K[1, 2]) / self.K[1, 1],
                                np.ones((1, 1))), axis=-1)

    @property
    def noise_stddev(self) -> float:
        """Return the pixel noise standard deviation (0 = no noise)."""
        return self._noise_stddev

    @noise_stddev.setter
    def noise_stddev(self, value: float) -> None:
        noise = float(value)
        if not (math.isfinite(noise) and noise >= 0.0):
            raise ValueError(f'noise_stddev must be >= 0, got {value}')
        if getattr(self, '_noise_stddev', None) != noise:
            self._noise_bank = None
        self._noise_stddev = noise

    @property
    def lighting(self) -> Lighting:
        """Return the current scene light; assign a new one to change it."""
        return self._lighting

    @lighting.setter
    def lighting(self, value: Lighting) -> None:
        value.factor()
        self._lighting = value
        self._lit_texture = None
        self._background_key = None

    # -- background ------------------------------------------------------
    def _bake_background(self, up_optical: np.ndarray, height_m: float
                         ) -> tuple:
        """Bake sky/haze colours and texture weights for one camera tilt."""
        light = self._lighting.factor()
        norm = np.linalg.norm(self._rays, axis=-1)
        elev = (self._rays @ up_optical) / norm            # sin(elevation)
        ground = elev < -1e-6
        with np.errstate(divide='ignore', invalid='ignore'):
            dist = np.where(ground, height_m * np.sqrt(1.0 - elev ** 2)
                            / np.maximum(-elev, 1e-9), np.inf)
        haze_alpha = np.where(ground, 1.0 - np.exp(-dist / self.haze_distance),
                              1.0)
        haze = np.array([205.0, 195.0, 185.0])
        zenith = np.array([200.0, 140.0, 80.0])
        e = np.clip(elev, 0.0, 1.0)[..., None] ** 0.6
        sky = haze * (1.0 - e) + zenith * e
        base = np.where(ground[..., None], haze * haze_alpha[..., None], sky)
        weight = np.where(ground, 1.0 - haze_alpha, 0.0)
        size = (self.width, self.height)
        base = cv2.resize(np.clip(base * light, 0, 255).astype(np.float32),
                          size, interpolation=cv2.INTER_LINEAR)
        base = (base + 0.5).astype(np.uint8)
        weight = cv2.resize((weight * 255.0).astype(np.float32), size,
                            interpolation=cv2.INTER_LINEAR)
        weight3 = cv2.merge([(weight + 0.5).astype(np.uint8)] * 3)
        rows = np.flatnonzero(ground.any(axis=1))
        if rows.size:
            # Full rows above the centre of the last sky row have weight 0.
            row0 = int(math.floor((rows[0] - 0.5) * self.height
                                  / ground.shape[0] - 0.5)) - 1
            row0 = max(0, row0)
        else:
            row0 = self.height
        # The ground is composed at 1/ground_downscale resolution.
        roi_h = self.height - row0
        small = (max(1, -(-self.width // self.ground_downscale)),
                 max(1, -(-roi_h // self.ground_downscale)))
        if roi_h > 0:
            ground_base = cv2.resize(base[row0:], small,
                                     interpolation=cv2.INTER_AREA)
            ground_weight = cv2.resize(weight3[row0:], small,
                                       interpolation=cv2.INTER_AREA)
        else:
            ground_base = ground_weight = None
        return base, row0, ground_base, ground_weight

    def _background_for(self, T_wo: np.ndarray, ground_z: float) -> tuple:
        up_optical = T_wo[:3, :3] @ np.array([0.0, 0.0, 1.0])
        cam_z = float(-(T_wo[:3, :3].T @ T_wo[:3, 3])[2])
        height_m = cam_z - ground_z
        key = (tuple(np.round(up_optical, 6)), round(height_m, 4))
        if key != self._background_key:
            if height_m <= 0.0:
                # Camera at or below the ground: drawn as if just above it.
                height_m = 1e-3
            self._background = self._bake_background(up_optical, height_m)
            self._background_key = key
        return self._background

    def _ground(self, img: np.ndarray, T_wo: np.ndarray, ground_z: float,
                row0: int, ground_base: np.ndarray,
                ground_weight: np.ndarray) -> None:
        """Draw the textured ground into ``img`` rows ``row0`` and below."""
        if row0 >= self.height:
            return
        if self._lit_texture is None:
            lit = self._texture.astype(np.float64) * self._lighting.factor()
            self._lit_texture = np.clip(lit, 0, 255).astype(np.uint8)
        tex = self._lit_texture
        R_ow = T_wo[:3, :3]
        cam = -(R_ow.T @ T_wo[:3, 3])
        px_per_m = tex.shape[1] / self.texture_metres
        x0 = self.texture_metres * math.floor(cam[0] / self.texture_metres)
        y0 = self.texture_metres * math.floor(cam[1] / self.texture_metres)
        # Texture pixel -> ground point relative to the camera -> image.
        S = np.array([[1.0 / px_per_m, 0.0, x0 - cam[0]],
                      [0.0, 1.0 / px_per_m, y0 - cam[1]],
                      [0.0, 0.0, ground_z - cam[2]]])
        roi_h = self.height - row0
        small_w, small_h = ground_base.shape[1], ground_base.shape[0]
        sx, sy = small_w / self.width, small_h / roi_h
        # Full-resolution ROI pixel -> pixel of the smaller ground image
        # (pixel centres aligned as cv2.resize does).
        A = np.array([[sx, 0.0, 0.5 * sx - 0.5],
                      [0.0, sy, 0.5 * sy - 0.5 - sy * row0],
                      [0.0, 0.0, 1.0]])
        M = A @ self.K @ R_ow @ S
        warped = cv2.warpPerspective(tex, M, (small_w, small_h),
                                     flags=cv2.INTER_LINEAR,
                                     borderMode=cv2.BORDER_WRAP)
        warped = cv2.multiply(warped, ground_weight, scale=1.0 / 255.0)
        warped = cv2.add(warped, ground_base)
        if (small_w, small_h) == (self.width, roi_h):
            img[row0:] = warped
        else:
            img[row0:] = cv2.resize(warped, (self.width, roi_h),
                                    interpolation=cv2.INTER_LINEAR)

    # -- objects ---------------------------------------------------------
    def _cone_polygons(self, world: WorldGeometry, T_wo: np.ndarray,
                       light: np.ndarray, sun: np.ndarray) -> List[tuple]:
        """Return (distance, [(polygon, colour), ...]) per visible cone."""
        xy = np.asarray(world.cone_xy, dtype=np.float64).reshape(-1, 2)
        if xy.shape[0] == 0:
            return []
        cls_all = np.asarray(world.cone_class, dtype=np.uint8).reshape(-1)
        up = np.asarray(world.cone_up, dtype=bool).reshape(-1)
        if up.shape[0] != xy.shape[0]:
            up = np.ones(xy.shape[0], dtype=bool)
        R = T_wo[:3, :3]
        tvec = T_wo[:3, 3]
        cam = -(R.T @ tvec)
        rel = xy - cam[None, :2]
        dist = np.hypot(rel[:, 0], rel[:, 1])
        centre = np.column_stack((xy, np.full(xy.shape[0], world.ground_z)))
        depth_c = centre @ R[2] + tvec[2]
        keep = up & (dist < self.draw_distance) & (depth_c > -0.6)
        out: List[tuple] = []
        fx = self.K[0, 0]
        sun_az = math.atan2(sun[1], sun[0])
        for cls in np.unique(cls_all[keep]):
            idx = np.flatnonzero(keep & (cls_all == cls))
            bands = CONE_BANDS.get(int(cls), CONE_BANDS[CONE_ORANGE])
            fr = np.array([b[0] for b in bands] + [1.0])
            rb, rt, h = cone_dimensions(np.array([cls]))
            radii = rb[0] - (rb[0] - rt[0]) * fr             # (B+1,)
            heights = world.ground_z + h[0] * fr             # (B+1,)
            phi = np.arctan2(-rel[idx, 1], -rel[idx, 0])     # cone -> camera
            nb = len(bands)
            n = idx.size
            half = np.linspace(-0.5 * math.pi, 0.5 * math.pi, _ARC)
            # Sunlit part of the visible front half, relative to phi.
            delta = np.angle(np.exp(1j * (sun_az - phi)))
            lo = np.maximum(-0.5 * math.pi, delta - 0.5 * math.pi)
            hi = np.minimum(0.5 * math.pi, delta + 0.5 * math.pi)
            frac = np.linspace(0.0, 1.0, _ARC)
            lit_arc = lo[:, None] + (hi - lo)[:, None] * frac[None, :]
            # Angles (C, 4P): silhouette = lower front arc + upper back arc;
            # lit face = lower lit arc + upper lit arc reversed.
            ang = phi[:, None] + np.concatenate(
                (np.broadcast_to(half, (n, _ARC)),
                 np.broadcast_to(half + math.pi, (n, _ARC)),
                 lit_arc, lit_arc[:, ::-1]), axis=1)
            lower = np.r_[np.ones(_ARC), np.zeros(_ARC), np.ones(_ARC),
                          np.zeros(_ARC)].astype(bool)
            rad = np.where(lower[None, :], radii[:nb, None],
                           radii[1:, None])                  # (B, 4P)
            zz = np.where(lower[None, :], heights[:nb, None],
                          heights[1:, None])                 # (B, 4P)
            ca = np.cos(ang)[:, None, :]
            sa = np.sin(ang)[:, None, :]
            px = xy[idx, 0, None, None] + rad[None] * ca     # (C, B, 4P)
            py = xy[idx, 1, None, None] + rad[None] * sa
            pz = np.broadcast_to(zz[None], px.shape)
            cx_ = R[0, 0] * px + R[0, 1] * py + R[0, 2] * pz + tvec[0]
            cy_ = R[1, 0] * px + R[1, 1] * py + R[1, 2] * pz + tvec[1]
            depth = R[2, 0] * px + R[2, 1] * py + R[2, 2] * pz + tvec[2]
            ok = depth.reshape(n, -1).min(axis=1) > _NEAR
            with np.errstate(divide='ignore', invalid='ignore'):
                u = fx * cx_ / depth + self.K[0, 2]
                v = self.K[1, 1] * cy_ / depth + self.K[1, 2]
            uf = u.reshape(n, -1)
            vf = v.reshape(n, -1)
            ok &= ((uf.max(axis=1) >= -1) & (uf.min(axis=1) <= self.width)
                   & (vf.max(axis=1) >= -1) & (vf.min(axis=1) <= self.height))
            colours = np.array([b[2] for b in bands])          # (B, 3)
            dim = np.clip(colours * light * _CONE_DIM, 0, 255).tolist()
            bright = np.clip(colours * light, 0, 255).tolist()
            body = tuple(np.clip(np.array(CONE_BODY.get(int(cls), _ORANGE))
                                 * light * 0.5 * (1.0 + _CONE_DIM), 0,
                                 255).tolist())
            has_lit = (hi - lo) > 0.05
            px_h = fx * h[0] / np.maximum(dist[idx], 1e-3)
            poly = np.round(np.stack((u, v), axis=-1) * _SCALE)
            poly = np.clip(poly, -2e8, 2e8).astype(np.int32)
            sil = poly[:, :, :2 * _ARC]
            lit_poly = poly[:, :, 2 * _ARC:]
            for j in np.flatnonzero(ok):
                if px_h[j] < _LOD_PX:
                    whole = np.concatenate((sil[j, 0, :_ARC],
                                            sil[j, nb - 1, _ARC:]))
                    out.append((dist[idx[j]], [(whole, body)]))
                    continue
                polys = []
                for k in range(nb):
                    polys.append((sil[j, k], tuple(dim[k])))
                    if has_lit[j]:
                        polys.append((lit_poly[j, k], tuple(bright[k])))
                out.append((dist[idx[j]], polys))
        return out

    def _box_polygons(self, world: WorldGeometry, T_wo: np.ndarray,
                      light: np.ndarray, sun: np.ndarray) -> List[tuple]:
        centers = np.asarray(world.box_center, dtype=np.float64).reshape(-1, 3)
        if centers.shape[0] == 0:
            return []
        yaws = np.asarray(world.box_yaw, dtype=np.float64).reshape(-1)
        sizes = np.asarray(world.box_size, dtype=np.float64).reshape(-1, 3)
        colors = np.asarray(world.box_color, dtype=np.float64).reshape(-1, 3)
        if colors.shape[0] != centers.shape[0]:
            colors = np.full((centers.shape[0], 3), 128.0)
        R = T_wo[:3, :3]
        tvec = T_wo[:3, 3]
        cam = -(R.T @ tvec)
        out: List[tuple] = []
        signs = np.array([[sx, sy, sz] for sx in (-1, 1) for sy in (-1, 1)
                          for sz in (-1, 1)], dtype=np.float64)
        # Faces as corner indices (outward normal in the box frame).
        faces = (((4, 5, 7, 6), (1, 0, 0)), ((0, 2, 3, 1), (-1, 0, 0)),
                 ((2, 6, 7, 3), (0, 1, 0)), ((0, 1, 5, 4), (0, -1, 0)),
                 ((1, 3, 7, 5), (0, 0, 1)))
        for i in range(centers.shape[0]):
            dist = float(np.linalg.norm(centers[i] - cam))
            if dist - 0.5 * float(np.linalg.norm(sizes[i])) > \
                    self.draw_distance:
                continue
            c, s = math.cos(yaws[i]), math.sin(yaws[i])
            Rz = np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])
            corners = centers[i] + (signs * sizes[i] / 2.0) @ Rz.T
            pc = corners @ R.T + tvec
            if np.all(pc[:, 2] <= _NEAR):
                continue
            polys = []
            for corner_idx, normal in faces:
                n_w = Rz @ np.asarray(normal, dtype=np.float64)
                fc = corners[list(corner_idx)].mean(axis=0)
                if float(n_w @ (cam - fc)) <= 0.0:
                    continue
                pts = _clip_near(pc[list(corner_idx)])
                if pts.shape[0] < 3:
                    continue
                uv = (pts @ self.K.T)
                uv = uv[:, :2] / uv[:, 2:3]
                poly = np.clip(np.round(uv * _SCALE), -2e8, 2e8).astype(
                    np.int32)
                shade = 0.55 + 0.45 * max(0.0, float(n_w @ sun))
                col = tuple(np.clip(colors[i] * light * shade, 0, 255)
                            .tolist())
                polys.append((poly, col))
            if polys:
                out.append((dist, polys))
        return out

    def _noise(self, img: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        pad = 64
        if self._noise_bank is None:
            bank = np.empty((self.height + pad, self.width + pad, 3),
                            dtype=np.int16)
            cv2.setRNGSeed(int(rng.integers(0, 2 ** 31 - 1)))
            sd = self.noise_stddev
            cv2.randn(bank, (0.0, 0.0, 0.0), (sd, sd, sd))
            self._noise_bank = bank
        oy, ox = rng.integers(0, pad, size=2)
        view = self._noise_bank[oy:oy + self.height, ox:ox + self.width]
        return cv2.add(img, view, dtype=cv2.CV_8U)

    def render(self, world: WorldGeometry, T_world_camera: np.ndarray,
               rng: Optional[np.random.Generator] = None) -> np.ndarray:
        """
        Render one bgr8 frame (height, width, 3) uint8.

        ``T_world_camera`` is the 4x4 REP-103 pose of the camera sensor in
        ``map``; ``rng`` draws the pixel noise (required when
        ``noise_stddev > 0``).
        """
        check_world(world)
        T_wo = world_to_optical(T_world_camera)
        g = float(world.ground_z)
        base, row0, ground_base, ground_weight = self._background_for(T_wo, g)
        if row0 < self.height:
            img = np.empty_like(base)
            img[:row0] = base[:row0]
            self._ground(img, T_wo, g, row0, ground_base, ground_weight)
        else:
            img = base.copy()
        light = self._lighting.factor()
        sun = self._lighting.sun()
        items = self._cone_polygons(world, T_wo, light, sun)
        items += self._box_polygons(world, T_wo, light, sun)
        items.sort(key=lambda item: -item[0])
        for _, polys in items:
            for poly, col in polys:
                cv2.fillConvexPoly(img, poly, col, cv2.LINE_8, _SHIFT)
        if self.noise_stddev > 0.0:
            if rng is None:
                raise ValueError('render: an rng is needed for pixel noise')
            img = self._noise(img, rng)
        return img


def _clip_near(pts: np.ndarray) -> np.ndarray:
    """Clip a polygon in the optical frame to ``z >= _NEAR``."""
    out = []
    n = pts.shape[0]
    for k in range(n):
        a, b = pts[k], pts[(k + 1) % n]
        ina, inb = a[2] >= _NEAR, b[2] >= _NEAR
        if ina:
            out.append(a)
        if ina != inb:
            s = (_NEAR - a[2]) / (b[2] - a[2])
            out.append(a + s * (b - a))
    return np.array(out) if out else np.zeros((0, 3))
