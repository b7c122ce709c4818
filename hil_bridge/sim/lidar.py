# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
``sensor.lidar.ray_cast`` of the built-in simulator, with CARLA semantics.

What one step of ``dt`` seconds does (as CARLA 0.9.16's ``RayCastLidar``):

* every channel casts ``round(points_per_second * dt / channels)`` rays
  (half away from zero), so a step has ``channels`` times that many rays;
* the rays of a step sweep ``rotation_frequency * horizontal_fov * dt``
  degrees of azimuth, continuing from where the previous step stopped (the
  phase is kept between steps and wraps at ``horizontal_fov``); the
  horizontal field of view is centred on the sensor's x axis and swept
  clockwise seen from above (CARLA's direction), i.e. from +y towards -y;
* channel ``i`` is at elevation ``upper_fov - i * (upper_fov - lower_fov)
  / (channels - 1)`` degrees (``upper_fov`` for one channel);
* a ray is dropped before casting with probability
  ``dropoff_general_rate``; it hits the ground, a standing cone or a box
  within ``range`` metres, or returns nothing;
* intensity ``I = exp(-atmosphere_attenuation_rate * distance)``; a point
  with ``I <= dropoff_intensity_limit`` is kept with probability
  ``1 - dropoff_zero_intensity * (1 - I / dropoff_intensity_limit)``
  (CARLA's linear ramp: dropped with probability ``dropoff_zero_intensity``
  at zero intensity, always kept above the limit);
* ``noise_stddev`` adds Gaussian noise (m) along the ray to each point.

Output: float32 (N, 4) x, y, z, intensity in the sensor frame (REP-103:
x forward, y left, z up; metres), channel-major, each channel in sweep
order. Only hits are returned; ``last_points_per_channel`` holds how many
of them each channel gave (CARLA's lidar header).
"""

import math
from typing import Any, Dict

from hil_bridge.sim.geometry import cast_rays
from hil_bridge.sim.world import WorldGeometry
import numpy as np


def _round_half_away(value: float) -> int:
    return int(math.floor(abs(value) + 0.5)) * (1 if value >= 0 else -1)


class RayCastLidar:
    """
    A CARLA ``sensor.lidar.ray_cast`` over a :class:`WorldGeometry`.

    ``attributes`` are validated CARLA attributes (``hil_bridge.interface.rig``
    fills in defaults and checks ranges). The object keeps the sweep phase
    between calls of :meth:`scan`.
    """

    def __init__(self, attributes: Dict[str, Any]) -> None:
        a = attributes
        self.channels = int(a['channels'])
        self.range = float(a['range'])
        self.points_per_second = float(a['points_per_second'])
        self.rotation_frequency = float(a['rotation_frequency'])
        self.upper_fov = float(a['upper_fov'])
        self.lower_fov = float(a['lower_fov'])
        self.horizontal_fov = float(a['horizontal_fov'])
        self.atmosphere_attenuation_rate = float(
            a['atmosphere_attenuation_rate'])
        self.dropoff_general_rate = float(a['dropoff_general_rate'])
        self.dropoff_intensity_limit = float(a['dropoff_intensity_limit'])
        self.dropoff_zero_intensity = float(a['dropoff_zero_intensity'])
        self.noise_stddev = float(a['noise_stddev'])
        if self.channels < 1 or self.range <= 0.0 or \
                self.points_per_second <= 0.0 or self.horizontal_fov <= 0.0:
            raise ValueError('lidar attributes out of range: validate them '
                             'with hil_bridge.interface.rig.validate_attributes')
        delta = 0.0 if self.channels == 1 else \
            (self.upper_fov - self.lower_fov) / (self.channels - 1)
        elev = np.radians(self.upper_fov - delta * np.arange(self.channels))
        self._cos_e = np.cos(elev)[:, None]
        self._sin_e = np.sin(elev)[:, None]
        self.phase_deg = 0.0
        self.last_points_per_channel = np.zeros(self.channels, np.int64)

    def reset(self) -> None:
        """Restart the sweep at the left edge of the field of view."""
        self.phase_deg = 0.0

    def rays_per_channel(self, dt: float) -> int:
        """Return the rays each channel casts in a step of ``dt`` seconds."""
        return _round_half_away(self.points_per_second * dt / self.channels)

    def directions(self, dt: float) -> np.ndarray:
        """
        Return the (channels, n, 3) unit ray directions of the next step.

        In the sensor frame; advances the sweep phase by ``dt``.
        """
        n = self.rays_per_channel(dt)
        tick = self.rotation_frequency * self.horizontal_fov * dt
        step = tick / n if n else 0.0
        carla_deg = np.fmod(self.phase_deg + step * np.arange(n),
                            self.horizontal_fov) - self.horizontal_fov / 2.0
        self.phase_deg = math.fmod(self.phase_deg + tick, self.horizontal_fov)
        az = -np.radians(carla_deg)        # CARLA (UE) yaw -> REP-103
        dirs = np.empty((self.channels, n, 3))
        dirs[..., 0] = self._cos_e * np.cos(az)[None, :]
        dirs[..., 1] = self._cos_e * np.sin(az)[None, :]
        dirs[..., 2] = self._sin_e
        return dirs

    def scan(self, world: WorldGeometry, sensor_pose_world: np.ndarray,
             dt: float, rng: np.random.Generator) -> np.ndarray:
        """
        Cast one step of rays; return float32 (N, 4) hits in sensor frame.

        ``sensor_pose_world`` is the 4x4 REP-103 pose of the lidar in
        ``map``; ``dt`` (s) > 0 the time swept since the previous step.
        """
        dt = float(dt)
        if not (math.isfinite(dt) and dt >= 0.0):
            raise ValueError(f'lidar scan: dt must be finite and >= 0, got '
                             f'{dt}')
        T = np.asarray(sensor_pose_world, dtype=np.float64)
        if T.shape != (4, 4) or not np.all(np.isfinite(T)):
            raise ValueError('lidar scan: sensor_pose_world must be a finite '
                             '4x4 matrix')
        dirs = self.directions(dt)
        chan = np.repeat(np.arange(self.channels), dirs.shape[1])
        dirs = dirs.reshape(-1, 3)
        if self.dropoff_general_rate > 0.0 and dirs.shape[0]:
            keep = rng.random(dirs.shape[0]) >= self.dropoff_general_rate
            dirs, chan = dirs[keep], chan[keep]
        if dirs.shape[0] == 0:
            self.last_points_per_channel = np.zeros(self.channels, np.int64)
            return np.zeros((0, 4), dtype=np.float32)
        t, _, _ = cast_rays(world, T[:3, 3], dirs @ T[:3, :3].T, self.range)
        hit = np.isfinite(t)
        t = t[hit]
        dirs = dirs[hit]
        chan = chan[hit]
        intensity = np.exp(-self.atmosphere_attenuation_rate * t)
        if self.noise_stddev > 0.0:
            t = t + rng.normal(0.0, self.noise_stddev, t.shape[0])
        limit = self.dropoff_intensity_limit
        if self.dropoff_zero_intensity > 0.0 and limit > 0.0 and t.size:
            p_keep = 1.0 - self.dropoff_zero_intensity * (
                1.0 - intensity / limit)
            keep = (intensity > limit) | (rng.random(t.shape[0]) < p_keep)
            t, dirs, intensity = t[keep], dirs[keep], intensity[keep]
            chan = chan[keep]
        self.last_points_per_channel = np.bincount(chan, minlength=self.channels)
        out = np.empty((t.shape[0], 4), dtype=np.float32)
        out[:, :3] = dirs * t[:, None]
        out[:, 3] = intensity
        return out
