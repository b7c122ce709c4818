# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""The built-in pinhole camera: projection, colours, occlusion, noise."""

import math

from hil_bridge.interface.cones import CONE_BIG_ORANGE, CONE_BLUE, CONE_SIZE, CONE_YELLOW
from hil_bridge.interface.frames import Pose, pose_to_matrix
from hil_bridge.interface.rig import load_rig, SensorSpec
from hil_bridge.sim import camera as cam
from hil_bridge.sim.sensors import CameraSensor, make_sensor
from hil_bridge.sim.world import WorldGeometry
import numpy as np
import pytest

W, H = 640, 480


def world(xy, cls, boxes=None) -> WorldGeometry:
    """Return a world with standing cones and optional boxes."""
    xy = np.asarray(xy, dtype=float).reshape(-1, 2)
    w = WorldGeometry(cone_xy=xy, cone_class=np.asarray(cls, np.uint8),
                      cone_up=np.ones(xy.shape[0], bool))
    if boxes is not None:
        centre, yaw, size, colour = boxes
        w.box_center = np.asarray(centre, float).reshape(-1, 3)
        w.box_yaw = np.asarray(yaw, float).reshape(-1)
        w.box_size = np.asarray(size, float).reshape(-1, 3)
        w.box_color = np.asarray(colour, np.uint8).reshape(-1, 3)
    return w


def pixel(img: np.ndarray, uv: np.ndarray) -> np.ndarray:
    """Return the BGR value at the pixel nearest to uv."""
    u, v = np.round(uv).astype(int)
    return img[v, u].astype(int)


def nearest_name(bgr: np.ndarray) -> str:
    """Return the name of the reference colour closest to ``bgr``."""
    refs = {'blue': cam._BLUE, 'yellow': cam._YELLOW,
            'orange': cam._ORANGE, 'white': cam._WHITE,
            'black': cam._BLACK, 'grey': (100, 98, 95)}
    bgr = np.asarray(bgr, float)
    # Compare chromaticity and brightness so shading does not matter much.
    return min(refs, key=lambda k: np.linalg.norm(
        bgr - np.asarray(refs[k], float)))


def test_intrinsics_formula() -> None:
    """Intrinsics: fx = fy = w / (2 tan(fov/2)), cx = w/2, cy = h/2."""
    K = cam.intrinsics(1288, 964, 90.0)
    assert K[0, 0] == pytest.approx(644.0) and K[1, 1] == pytest.approx(644.0)
    assert K[0, 2] == 644.0 and K[1, 2] == 482.0
    K = cam.intrinsics(640, 480, 60.0)
    assert K[0, 0] == pytest.approx(320.0 / math.tan(math.radians(30.0)))
    for fov in (0.0, 180.0, -5.0, math.nan):
        with pytest.raises(ValueError, match='fov'):
            cam.intrinsics(640, 480, fov)
    with pytest.raises(ValueError, match='size'):
        cam.intrinsics(0, 480, 90.0)


def test_project_points() -> None:
    """Points on the optical axis land at (cx, cy); behind is masked."""
    K = cam.intrinsics(W, H, 90.0)
    T = pose_to_matrix(1.0, 2.0, 1.0, 0.0, 0.0, math.pi / 2)
    pts = np.array([[1.0, 7.0, 1.0],       # 5 m ahead (camera looks +y)
                    [1.0, -3.0, 1.0],      # behind
                    [2.0, 7.0, 1.0],       # 1 m to the camera's right
                    [1.0, 7.0, 0.0]])      # 1 m below the axis
    uv, depth, front = cam.project_points(K, T, pts)
    np.testing.assert_allclose(uv[0], [W / 2, H / 2], atol=1e-9)
    assert depth[0] == pytest.approx(5.0)
    assert not front[1] and np.all(np.isnan(uv[1]))
    assert uv[2][0] == pytest.approx(W / 2 + K[0, 0] / 5.0)
    assert uv[3][1] == pytest.approx(H / 2 + K[1, 1] / 5.0)
    with pytest.raises(ValueError, match='points_world'):
        cam.project_points(K, T, np.array([[np.nan, 0.0, 0.0]]))
    with pytest.raises(ValueError, match='T_world_camera'):
        cam.project_points(K, np.eye(3), pts)


@pytest.mark.parametrize('cls,band_frac,expected', [
    (CONE_BLUE, 0.19, 'blue'), (CONE_BLUE, 0.5, 'white'),
    (CONE_YELLOW, 0.19, 'yellow'), (CONE_YELLOW, 0.5, 'black'),
    (CONE_BIG_ORANGE, 0.12, 'orange'), (CONE_BIG_ORANGE, 0.33, 'white')])
def test_cone_lands_at_projected_pixel_with_colour(cls: int, band_frac: float,
                                                   expected: str) -> None:
    """The pixel where a cone's band projects shows the band's colour."""
    renderer = cam.CameraRenderer(W, H, 90.0)
    T = pose_to_matrix(0.0, 0.0, 1.0)
    xy = (4.0, 0.7)
    img = renderer.render(world([xy], [cls]), T)
    h = CONE_SIZE[cls][1]
    uv, _, _ = cam.project_points(renderer.K, T,
                                  np.array([[xy[0], xy[1], band_frac * h]]))
    assert nearest_name(pixel(img, uv[0])) == expected
    # Without the cone the same pixel is ground.
    empty = renderer.render(world(np.zeros((0, 2)), []), T)
    assert nearest_name(pixel(empty, uv[0])) == 'grey'


def test_cone_silhouette_matches_projection() -> None:
    """The cone's drawn width at its base matches the projected width."""
    renderer = cam.CameraRenderer(W, H, 90.0)
    T = pose_to_matrix(0.0, 0.0, 1.0)
    img = renderer.render(world([(3.0, 0.0)], [CONE_BLUE]), T)
    rb = CONE_SIZE[CONE_BLUE][0] / 2
    z = 0.05
    r = rb - (rb - rb * 0.2) * z / CONE_SIZE[CONE_BLUE][1]
    uv, _, _ = cam.project_points(renderer.K, T,
                                  np.array([[3.0, r, z], [3.0, -r, z]]))
    row = int(round(uv[0, 1]))
    blue = np.flatnonzero([nearest_name(p) == 'blue' for p in img[row]])
    width = blue.max() - blue.min() + 1
    assert width == pytest.approx(uv[1, 0] - uv[0, 0], abs=2.0)


def test_nearer_cone_hides_farther_one() -> None:
    """Painter's algorithm: a near cone covers a far one behind it."""
    renderer = cam.CameraRenderer(W, H, 90.0)
    T = pose_to_matrix(0.0, 0.0, 0.5)
    far = np.array([[8.0, 0.0, 0.1]])
    uv, _, _ = cam.project_points(renderer.K, T, far)
    only_far = renderer.render(world([(8.0, 0.0)], [CONE_BLUE]), T)
    assert nearest_name(pixel(only_far, uv[0])) == 'blue'
    only_near = renderer.render(world([(4.0, 0.0)], [CONE_BIG_ORANGE]), T)
    near_colour = pixel(only_near, uv[0])
    assert nearest_name(near_colour) in ('orange', 'white')
    for order in ([(8.0, 0.0), (4.0, 0.0)], [(4.0, 0.0), (8.0, 0.0)]):
        cls = [CONE_BLUE, CONE_BIG_ORANGE] if order[0][0] == 8.0 else \
            [CONE_BIG_ORANGE, CONE_BLUE]
        img = renderer.render(world(order, cls), T)
        np.testing.assert_array_equal(pixel(img, uv[0]), near_colour)


def test_sky_above_ground_below_horizon() -> None:
    """A level camera sees sky above the centre row and ground below."""
    renderer = cam.CameraRenderer(W, H, 90.0)
    img = renderer.render(world(np.zeros((0, 2)), []),
                          pose_to_matrix(3.0, -2.0, 1.0, 0.0, 0.0, 0.4))
    sky = img[:H // 2 - 3].astype(int)
    ground = img[H // 2 + 30:].astype(int)
    assert np.all(sky[..., 0] > sky[..., 2] + 5)          # blue-ish
    assert np.abs(ground[..., 0] - ground[..., 2]).max() < 30   # grey
    assert ground.std() > 3.0                               # textured


def test_pitched_camera_moves_horizon() -> None:
    """Pitching down by p raises the horizon to cy - f tan(p)."""
    renderer = cam.CameraRenderer(W, H, 90.0)
    pitch = 0.2
    img = renderer.render(world(np.zeros((0, 2)), []),
                          pose_to_matrix(0.0, 0.0, 1.0, 0.0, pitch, 0.0))
    row = int(H / 2 - renderer.K[1, 1] * math.tan(pitch))
    above = img[row - 6].astype(int)
    below = img[row + 20].astype(int)
    assert np.all(above[:, 0] > above[:, 2] + 5)
    assert np.abs(below[:, 0] - below[:, 2]).max() < 30


def test_box_faces_drawn_and_clipped() -> None:
    """A red box shows red faces; one reaching behind the camera renders."""
    renderer = cam.CameraRenderer(W, H, 90.0)
    T = pose_to_matrix(0.0, 0.0, 1.0)
    boxes = ([[10.0, 0.0, 0.75]], [0.3], [[4.5, 1.9, 1.5]], [[30, 30, 200]])
    img = renderer.render(world(np.zeros((0, 2)), [], boxes), T)
    uv, _, _ = cam.project_points(renderer.K, T, np.array([[7.8, 0.0, 0.7]]))
    b, g, r = pixel(img, uv[0])
    assert r > 2 * b and r > 2 * g
    # A box from behind the camera to 3 m ahead on the right.
    boxes = ([[0.0, -2.0, 0.75]], [0.0], [[6.0, 1.8, 1.5]], [[30, 200, 30]])
    img = renderer.render(world(np.zeros((0, 2)), [], boxes), T)
    uv, _, _ = cam.project_points(renderer.K, T, np.array([[2.0, -1.1, 0.5]]))
    b, g, r = pixel(img, uv[0])
    assert g > 2 * b and g > 2 * r


def test_lighting_scales_brightness() -> None:
    """Halving the brightness roughly halves the image."""
    T = pose_to_matrix(0.0, 0.0, 1.0)
    w = world([(5.0, 1.0)], [CONE_YELLOW])
    bright = cam.CameraRenderer(W, H, 90.0).render(w, T).mean()
    dim = cam.CameraRenderer(W, H, 90.0, lighting=cam.Lighting(0.5)).render(
        w, T).mean()
    assert dim == pytest.approx(bright / 2, rel=0.05)
    lighting = cam.Lighting.random(np.random.default_rng(3))
    assert 0.6 <= lighting.brightness <= 1.3
    with pytest.raises(ValueError, match='brightness'):
        cam.CameraRenderer(W, H, 90.0, lighting=cam.Lighting(math.nan))


def test_pixel_noise_option() -> None:
    """Noise has the requested std, zero mean, and is seed-deterministic."""
    T = pose_to_matrix(0.0, 0.0, 1.0)
    w = world([(5.0, 1.0)], [CONE_BLUE])
    clean = cam.CameraRenderer(W, H, 90.0).render(w, T).astype(float)
    noisy_cam = cam.CameraRenderer(W, H, 90.0, noise_stddev=20.0)
    a = noisy_cam.render(w, T, np.random.default_rng(5)).astype(float)
    diff = a - clean
    ok = (clean > 70) & (clean < 185)         # away from saturation
    assert diff[ok].std() == pytest.approx(20.0, rel=0.05)
    assert abs(diff[ok].mean()) < 0.5
    b = cam.CameraRenderer(W, H, 90.0, noise_stddev=20.0).render(
        w, T, np.random.default_rng(5))
    np.testing.assert_array_equal(a, b)
    with pytest.raises(ValueError, match='rng'):
        noisy_cam.render(w, T)
    with pytest.raises(ValueError, match='noise'):
        cam.CameraRenderer(W, H, 90.0, noise_stddev=-1.0)


def test_make_sensor_camera_from_rig() -> None:
    """The shipped rig's cameras expose K, size and render full frames."""
    spec = load_rig('hil_rig')[0]
    sensor = make_sensor(spec)
    assert isinstance(sensor, CameraSensor)
    assert (sensor.width, sensor.height) == (1288, 964)
    np.testing.assert_allclose(sensor.intrinsics,
                               cam.intrinsics(1288, 964, 90.0))
    assert sensor.sensor_tick == pytest.approx(0.0333)
    T = pose_to_matrix(0, 0, 0) @ sensor.mount_matrix
    img = sensor.measure(world([(5.0, 0.0)], [CONE_BLUE]), T, 0.0, 0.05,
                         np.random.default_rng(0))
    assert img.shape == (964, 1288, 3) and img.dtype == np.uint8
    bad = SensorSpec('c', 'sensor.camera.rgb', Pose(), {'fov': 180.0})
    with pytest.raises(ValueError, match="'c'.*fov"):
        make_sensor(bad)


def test_bad_render_input() -> None:
    """Non-finite poses, malformed worlds and non-specs raise ValueError."""
    renderer = cam.CameraRenderer(W, H, 90.0)
    w = world([(5.0, 0.0)], [CONE_BLUE])
    with pytest.raises(ValueError, match='T_world_camera'):
        renderer.render(w, np.full((4, 4), np.nan))
    w.cone_xy = np.array([[np.nan, 0.0]])
    with pytest.raises(ValueError, match='cone_xy'):
        renderer.render(w, pose_to_matrix(0.0, 0.0, 1.0))
    with pytest.raises(ValueError, match='SensorSpec'):
        make_sensor({'blueprint': 'sensor.camera.rgb'})


def test_camera_below_ground_and_looking_up() -> None:
    """Degenerate poses still give a valid image (sky only)."""
    renderer = cam.CameraRenderer(W, H, 90.0)
    w = world([(5.0, 0.0)], [CONE_BLUE])
    img = renderer.render(w, pose_to_matrix(0.0, 0.0, -1.0))
    assert img.shape == (H, W, 3)
    up = renderer.render(w, pose_to_matrix(0.0, 0.0, 1.0, 0.0, -1.5, 0.0))
    assert np.all(up[..., 0].astype(int) > up[..., 2].astype(int))


def test_noise_stddev_can_change() -> None:
    """Setting noise_stddev on a renderer changes the noise it adds."""
    T = pose_to_matrix(0.0, 0.0, 1.0)
    w = world([(5.0, 1.0)], [CONE_BLUE])
    renderer = cam.CameraRenderer(W, H, 90.0)
    clean = renderer.render(w, T).astype(float)
    ok = (clean > 70) & (clean < 185)
    for sigma in (5.0, 15.0):
        renderer.noise_stddev = sigma
        noisy = renderer.render(w, T, np.random.default_rng(1)).astype(float)
        assert (noisy - clean)[ok].std() == pytest.approx(sigma, rel=0.05)
    renderer.noise_stddev = 0.0
    np.testing.assert_array_equal(renderer.render(w, T), clean)
    with pytest.raises(ValueError, match='noise_stddev'):
        renderer.noise_stddev = math.nan
