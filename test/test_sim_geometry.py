# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""Ray casting of the built-in simulator against analytic cases."""

import math

from hil_bridge.interface.cones import CONE_BIG_ORANGE, CONE_BLUE, CONE_SIZE, CONE_TOP_RATIO
from hil_bridge.sim import geometry as geo
from hil_bridge.sim.world import WorldGeometry
import numpy as np
import pytest

RB = CONE_SIZE[CONE_BLUE][0] / 2.0
H = CONE_SIZE[CONE_BLUE][1]
RT = RB * CONE_TOP_RATIO


def wall_radius(z: float, rb: float = RB, rt: float = RT,
                h: float = H) -> float:
    """Radius of the small cone's wall at height z above the ground."""
    return rb - (rb - rt) * z / h


def one_cone(origin, direction, cls=CONE_BLUE, xy=(5.0, 0.0)) -> float:
    """Return t of one ray against one cone."""
    d = np.asarray([direction], dtype=float)
    d /= np.linalg.norm(d, axis=1, keepdims=True)
    t, idx = geo.ray_cones(np.asarray(origin, float), d, np.array([xy]),
                           np.array([cls], np.uint8))
    return float(t[0])


def test_ground_plane() -> None:
    """Rays down hit z = ground_z at the analytic distance; others miss."""
    d = np.array([[1.0, 0.0, -1.0], [1.0, 0.0, 1.0], [1.0, 0.0, 0.0],
                  [0.0, 0.0, -1.0]])
    d /= np.linalg.norm(d, axis=1, keepdims=True)
    t = geo.ray_ground(np.array([0.0, 0.0, 1.0]), d, ground_z=0.2)
    assert t[0] == pytest.approx(0.8 * math.sqrt(2))
    assert np.isinf(t[1]) and np.isinf(t[2])
    assert t[3] == pytest.approx(0.8)


@pytest.mark.parametrize('z', [0.01, 0.1, 0.2, 0.3])
def test_horizontal_ray_through_axis(z: float) -> None:
    """A horizontal ray through the axis hits the wall at 5 - r(z)."""
    assert one_cone((0, 0, z), (1, 0, 0)) == pytest.approx(
        5.0 - wall_radius(z), abs=1e-9)


@pytest.mark.parametrize('y0', [0.0, 0.03, 0.06, 0.09])
def test_offset_ray_chord(y0: float) -> None:
    """An offset ray hits where the circle of radius r(z) is crossed."""
    z = 0.05
    r = wall_radius(z)
    expected = 5.0 - math.sqrt(r * r - y0 * y0)
    assert one_cone((0, y0, z), (1, 0, 0)) == pytest.approx(expected,
                                                            abs=1e-9)


def test_misses() -> None:
    """Rays passing beside, above or away from the cone miss it."""
    z = 0.05
    assert math.isinf(one_cone((0, wall_radius(z) + 1e-4, z), (1, 0, 0)))
    assert math.isinf(one_cone((0, 0, H + 0.01), (1, 0, 0)))
    assert math.isinf(one_cone((0, 0, 0.1), (-1, 0, 0)))
    assert math.isinf(one_cone((0, 0, 0.1), (0, 1, 0)))


def test_grazing_tangent() -> None:
    """A ray just inside the tangent hits near the tangent point."""
    z = 0.1
    r = wall_radius(z)
    t = one_cone((0, r * (1 - 1e-7), z), (1, 0, 0))
    assert t == pytest.approx(5.0, abs=1e-3)
    assert math.isinf(one_cone((0, r * (1 + 1e-6), z), (1, 0, 0)))


def test_top_cap_and_sloped_wall_from_above() -> None:
    """Vertical rays hit the top disk or the wall at the analytic height."""
    assert one_cone((5.0, 0.0, 2.0), (0, 0, -1)) == pytest.approx(2.0 - H)
    off = 0.5 * (RB + RT)
    z_hit = (RB - off) / (RB - RT) * H
    assert one_cone((5.0 + off, 0.0, 2.0), (0, 0, -1)) == pytest.approx(
        2.0 - z_hit)
    assert math.isinf(one_cone((5.0 + RB + 1e-3, 0.0, 2.0), (0, 0, -1)))


def test_ray_from_inside_hits_exit() -> None:
    """A ray starting inside the cone hits the wall where it leaves."""
    z = 0.1
    assert one_cone((5.0, 0.0, z), (1, 0, 0)) == pytest.approx(
        wall_radius(z))
    assert one_cone((5.0, 0.0, z), (0, 0, 1)) == pytest.approx(H - z)


def test_big_orange_is_taller_and_wider() -> None:
    """Big orange cones use their own size from CONE_SIZE."""
    rb = CONE_SIZE[CONE_BIG_ORANGE][0] / 2
    h = CONE_SIZE[CONE_BIG_ORANGE][1]
    rt = rb * CONE_TOP_RATIO
    z = 0.45
    assert one_cone((0, 0, z), (1, 0, 0), CONE_BIG_ORANGE) == pytest.approx(
        5.0 - wall_radius(z, rb, rt, h))
    assert math.isinf(one_cone((0, 0, z), (1, 0, 0), CONE_BLUE))


def test_slanted_ray_hits_cone_wall_analytic() -> None:
    """A slanted ray's hit lies on the cone surface and nothing is nearer."""
    origin = np.array([0.0, 0.1, 1.0])
    d = np.array([5.0, -0.1, -0.85])
    t = one_cone(origin, d)
    p = origin + t * d / np.linalg.norm(d)
    assert 0.0 <= p[2] <= H
    assert math.hypot(p[0] - 5.0, p[1]) == pytest.approx(wall_radius(p[2]),
                                                         abs=1e-9)


def boxes(yaw: float):
    """Return one 4 x 2 x 1.5 box at x = 10 standing on the ground."""
    return (np.array([[10.0, 0.0, 0.75]]), np.array([yaw]),
            np.array([[4.0, 2.0, 1.5]]))


@pytest.mark.parametrize('yaw,expected', [
    (0.0, 8.0), (math.pi / 2, 9.0), (math.pi, 8.0),
    (math.pi / 4, 10.0 - math.sqrt(2.0))])
def test_box_slab_yaw(yaw: float, expected: float) -> None:
    """Box faces are hit at the analytic distance for several yaws."""
    c, y, s = boxes(yaw)
    t, idx = geo.ray_boxes(np.array([0.0, 0.0, 0.5]),
                           np.array([[1.0, 0.0, 0.0]]), c, y, s)
    assert float(t[0]) == pytest.approx(expected)
    assert int(idx[0]) == 0


def test_box_misses_inside_and_grazing() -> None:
    """Above or beside the box misses; from inside hits the exit face."""
    c, y, s = boxes(0.0)
    o = np.array([0.0, 0.0, 0.5])
    d = np.array([[1.0, 0.0, 0.0]])
    t, idx = geo.ray_boxes(np.array([0.0, 0.0, 1.6]), d, c, y, s)
    assert np.isinf(t[0]) and idx[0] == -1
    t, _ = geo.ray_boxes(np.array([0.0, 1.01, 0.5]), d, c, y, s)
    assert np.isinf(t[0])
    t, _ = geo.ray_boxes(np.array([0.0, 1.0, 0.5]), d, c, y, s)
    assert float(t[0]) == pytest.approx(8.0)          # grazing the face
    t, _ = geo.ray_boxes(np.array([10.0, 0.0, 0.5]), d, c, y, s)
    assert float(t[0]) == pytest.approx(2.0)          # from inside
    t, _ = geo.ray_boxes(o, -d, c, y, s)
    assert np.isinf(t[0])


def random_world(rng: np.random.Generator, n_cones: int = 300
                 ) -> WorldGeometry:
    """Return a random world with cones around the origin and boxes."""
    xy = rng.uniform(-25, 25, (n_cones, 2))
    cls = rng.integers(1, 5, n_cones).astype(np.uint8)
    up = rng.random(n_cones) > 0.1
    return WorldGeometry(
        cone_xy=xy, cone_class=cls, cone_up=up,
        box_center=np.array([[8.0, 3.0, 0.75], [-6.0, -4.0, 1.0]]),
        box_yaw=np.array([0.4, -1.2]),
        box_size=np.array([[4.5, 1.9, 1.5], [3.0, 3.0, 2.0]]),
        box_color=np.zeros((2, 3), np.uint8))


def test_cast_rays_culling_matches_dense() -> None:
    """Culled casting equals testing every ray against everything."""
    rng = np.random.default_rng(1)
    world = random_world(rng)
    origin = np.array([0.3, -0.2, 0.25])
    d = rng.normal(size=(3000, 3))
    d[:, 2] = np.abs(d[:, 2]) * -0.1
    d /= np.linalg.norm(d, axis=1, keepdims=True)
    max_range = 30.0
    t, kind, index = geo.cast_rays(world, origin, d, max_range)
    up = np.flatnonzero(world.cone_up)
    tc, ic = geo.ray_cones(origin, d, world.cone_xy[up], world.cone_class[up])
    tb, _ = geo.ray_boxes(origin, d, world.box_center, world.box_yaw,
                          world.box_size)
    tg = geo.ray_ground(origin, d)
    dense = np.minimum(np.minimum(tc, tb), tg)
    dense[dense > max_range] = np.inf
    np.testing.assert_allclose(t, dense, rtol=1e-12)
    assert np.any(kind == geo.HIT_CONE) and np.any(kind == geo.HIT_BOX)
    cone_rays = kind == geo.HIT_CONE
    np.testing.assert_array_equal(index[cone_rays], up[ic[cone_rays]])
    assert np.all(index[kind == geo.HIT_NONE] == -1)


def test_cast_rays_nearest_knocked_and_range() -> None:
    """Nearest surface wins; knocked cones and far objects are ignored."""
    world = WorldGeometry(
        cone_xy=np.array([[5.0, 0.0], [3.0, 0.0]]),
        cone_class=np.array([CONE_BLUE, CONE_BLUE], np.uint8),
        cone_up=np.array([True, False]),
        box_center=np.array([[10.0, 0.0, 0.75]]), box_yaw=np.zeros(1),
        box_size=np.array([[2.0, 2.0, 1.5]]),
        box_color=np.zeros((1, 3), np.uint8))
    origin = np.array([0.0, 0.0, 0.1])
    d = np.array([[1.0, 0.0, 0.0], [1.0, 0.02, 0.0], [0.0, 1.0, 0.0]])
    d /= np.linalg.norm(d, axis=1, keepdims=True)
    t, kind, index = geo.cast_rays(world, origin, d, 20.0)
    assert kind[0] == geo.HIT_CONE and index[0] == 0
    assert t[0] == pytest.approx(5.0 - wall_radius(0.1))
    assert kind[1] == geo.HIT_BOX and index[1] == 0
    assert kind[2] == geo.HIT_NONE and np.isinf(t[2])
    t, kind, _ = geo.cast_rays(world, origin, d[:1], 4.0)
    assert kind[0] == geo.HIT_NONE


def test_cast_rays_origin_above_a_cone() -> None:
    """A sensor right above a cone still sees it (no azimuth culling)."""
    world = WorldGeometry(cone_xy=np.array([[0.0, 0.0]]),
                          cone_class=np.array([CONE_BLUE], np.uint8),
                          cone_up=np.array([True]))
    t, kind, _ = geo.cast_rays(world, np.array([0.0, 0.0, 1.0]),
                               np.array([[0.0, 0.0, -1.0]]))
    assert kind[0] == geo.HIT_CONE and t[0] == pytest.approx(1.0 - H)


@pytest.mark.parametrize('origin,dirs', [
    (np.zeros(3), np.array([[np.nan, 0.0, 0.0]])),
    (np.array([np.inf, 0.0, 0.0]), np.array([[1.0, 0.0, 0.0]])),
    (np.zeros(3), np.zeros((3, 2))),
    (np.zeros(2), np.zeros((3, 3))),
])
def test_bad_rays_rejected(origin, dirs) -> None:
    """Malformed or non-finite rays raise ValueError."""
    with pytest.raises(ValueError, match='ray|origin'):
        geo.cast_rays(WorldGeometry(), origin, dirs)


@pytest.mark.parametrize('field,value', [
    ('cone_xy', np.array([[np.nan, 0.0]])),
    ('cone_xy', np.zeros((1, 3))),
    ('cone_class', np.zeros(2, np.uint8)),
    ('box_center', np.array([[0.0, 0.0, np.inf]])),
    ('box_size', np.array([[0.0, 1.0, 1.0]])),
    ('box_yaw', np.zeros(3)),
])
def test_malformed_world_rejected(field: str, value) -> None:
    """A world with NaN, wrong shapes or empty boxes raises ValueError."""
    world = WorldGeometry(
        cone_xy=np.array([[5.0, 0.0]]),
        cone_class=np.array([CONE_BLUE], np.uint8),
        cone_up=np.array([True]), box_center=np.array([[9.0, 0.0, 0.5]]),
        box_yaw=np.zeros(1), box_size=np.ones((1, 3)),
        box_color=np.zeros((1, 3), np.uint8))
    geo.cast_rays(world, np.zeros(3), np.array([[1.0, 0.0, 0.0]]))
    setattr(world, field, value)
    with pytest.raises(ValueError, match=f'world.{field}'):
        geo.cast_rays(world, np.zeros(3), np.array([[1.0, 0.0, 0.0]]))


def test_cast_rays_vertical_onto_box_and_near_corner() -> None:
    """Vertical rays onto a box and rays from beside its corner are right."""
    rng = np.random.default_rng(4)
    world = random_world(rng, 20)
    t, kind, index = geo.cast_rays(world, np.array([8.0, 3.0, 5.0]),
                                   np.array([[0.0, 0.0, -1.0]]))
    assert kind[0] == geo.HIT_BOX and index[0] == 0
    assert t[0] == pytest.approx(5.0 - 1.5)
    origin = np.array([10.5, 3.0, 1.0])        # just off box 0's side
    d = rng.normal(size=(2000, 3))
    d /= np.linalg.norm(d, axis=1, keepdims=True)
    t, kind, _ = geo.cast_rays(world, origin, d, 50.0)
    up = np.flatnonzero(world.cone_up)
    tc, _ = geo.ray_cones(origin, d, world.cone_xy[up], world.cone_class[up])
    tb, _ = geo.ray_boxes(origin, d, world.box_center, world.box_yaw,
                          world.box_size)
    dense = np.minimum(np.minimum(tc, tb), geo.ray_ground(origin, d))
    dense[dense > 50.0] = np.inf
    np.testing.assert_allclose(t, dense, rtol=1e-12)
    assert (kind == geo.HIT_BOX).sum() > 100
