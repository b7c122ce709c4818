# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""vision_cone_detector over DDS: stamped cones, CameraInfo wait, bad images, bad model."""

import os
from pathlib import Path
import subprocess
import sys
import time

from cone_detection.ground_projection import pose_to_matrix
from cone_detection.vision_node import NODE_NAME, PARAMS
from hil_bridge import codecs
from hil_bridge.backend import CONE_BLUE, CONE_YELLOW, Pose
from hil_bridge.params import check_specs
import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
PARAMS_FILE = str(ROOT / 'config' / 'vision_cone_detector.yaml')
CONES = np.array([[4.0, 1.5], [4.0, -1.5], [7.0, 1.5], [7.0, -1.5]])
CLASSES = np.array([CONE_BLUE, CONE_YELLOW, CONE_BLUE, CONE_YELLOW], np.uint8)


def test_params_match_config() -> None:
    """Every parameter has its default in config/vision_cone_detector.yaml."""
    defaults = check_specs(PARAMS, NODE_NAME)
    assert defaults['mode'] == 'fast' and defaults['cameras'] == ['rgb_left', 'rgb_right']


def _render(sensor_y: float, width: int = 644, height: int = 482) -> tuple:
    """Render the test cones for a camera of the rig at half resolution."""
    from hil_bridge.sim.camera import CameraRenderer
    from hil_bridge.sim.world import WorldGeometry
    renderer = CameraRenderer(width, height, 90.0)
    world = WorldGeometry(cone_xy=CONES, cone_class=CLASSES,
                          cone_up=np.ones(len(CONES), bool))
    img = renderer.render(world, pose_to_matrix(Pose(x=0.5, y=sensor_y, z=1.0)))
    return img, renderer.K


@pytest.mark.dds
def test_vision_node_detects_and_survives_bad_input(rclpy_context) -> None:
    """Cones come stamped like the image; bad images are dropped, the node lives on."""
    import rclpy
    from hil_bridge.contract import create_publisher, create_subscription
    from rclpy.executors import SingleThreadedExecutor
    from sensor_msgs.msg import Image

    child = subprocess.Popen(
        [sys.executable, '-m', 'cone_detection.vision_node', '--ros-args',
         '--params-file', PARAMS_FILE, '-p', 'camera_schedule:=all'],
        cwd=str(ROOT), env=dict(os.environ),
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    node = rclpy.create_node('vision_probe', context=rclpy_context)
    clouds, markers = [], []
    create_subscription(node, 'cones_vision', clouds.append)
    create_subscription(node, 'vision_markers', markers.append)
    pubs = {key: create_publisher(node, key) for key in
            ('camera_left', 'camera_left_info', 'camera_right', 'camera_right_info')}
    executor = SingleThreadedExecutor(context=rclpy_context)
    executor.add_node(node)
    left, k = _render(0.06)
    right, _k = _render(-0.06)

    def spin_until(cond, timeout: float = 20.0) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            executor.spin_once(timeout_sec=0.05)
            assert child.poll() is None, 'vision node died'
            if cond():
                return True
        return False

    def send(t: float, img_left=left, info: bool = True) -> None:
        if info:
            for key in ('camera_left_info', 'camera_right_info'):
                pubs[key].publish(codecs.camera_info_msg(k, 644, 482, t, 'optical'))
        pubs['camera_right'].publish(codecs.image_to_msg(right, t,
                                                         'ego_vehicle/rgb_right/optical'))
        if isinstance(img_left, Image):
            pubs['camera_left'].publish(img_left)
        else:
            pubs['camera_left'].publish(codecs.image_to_msg(img_left, t,
                                                            'ego_vehicle/rgb_left/optical'))

    def stamps() -> set:
        return {round(codecs.sec_from_stamp(c.header.stamp), 3) for c in clouds}

    try:
        # Wait for discovery: the node subscribes the camera topics.
        assert spin_until(lambda: node.count_subscribers(
            pubs['camera_left'].topic_name) > 0), 'node never subscribed'
        # Images without CameraInfo are dropped (one warning), no output.
        for i in range(3):
            send(1.0 + 0.1 * i, info=False)
            spin_until(lambda: False, 0.2)
        assert not clouds
        # With CameraInfo: cones with the image stamp, in the vehicle frame.
        t = 2.0
        ok = False
        for _ in range(40):
            send(t)
            if spin_until(lambda: t in stamps(), 0.5):
                ok = True
                break
            t = round(t + 0.1, 3)
        assert ok, 'no cones_vision with the image stamp'
        cloud = next(c for c in clouds if round(codecs.sec_from_stamp(c.header.stamp), 3) == t)
        assert cloud.header.frame_id == 'ego_vehicle'
        xyz, cls, conf = codecs.cloud_to_cones(cloud)
        assert len(cls) == len(CONES), (xyz, cls)
        d = np.linalg.norm(xyz[:, None, :2] - CONES[None], axis=2)
        assert (d.min(axis=1) < 0.4).all()
        assert (cls == CLASSES[d.argmin(axis=1)]).all()
        assert spin_until(lambda: len(markers) > 0, 5.0), 'no markers'
        # Unsupported encoding and a size that does not match CameraInfo:
        # dropped with an error, no output for those stamps, node alive.
        bad = codecs.image_to_msg(np.zeros((482, 644), np.float32), 9.0, 'x', encoding='32FC1')
        # (one at a time: the node only looks at the newest image)
        send(9.0, img_left=bad)
        spin_until(lambda: False, 1.5)
        send(9.1, img_left=np.zeros((100, 120, 3), np.uint8))
        spin_until(lambda: False, 1.5)
        assert not {9.0, 9.1} & stamps()
        t = 10.0
        for _ in range(40):
            send(t)
            if spin_until(lambda: t in stamps(), 0.5):
                break
            t = round(t + 0.1, 3)
        assert t in stamps(), 'node did not recover after bad images'
    finally:
        child.terminate()
        try:
            out, _err = child.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            child.kill()
            out, _err = child.communicate()
        node.destroy_node()
    assert 'no CameraInfo yet' in out
    assert 'unsupported image encoding' in out or 'cannot convert' in out, out
    assert 'does not match CameraInfo' in out


@pytest.mark.dds
def test_missing_model_exits_nonzero_naming_the_file(ros_domain, tmp_path) -> None:
    """A missing or corrupt model file stops the node with exit 1 and the file name."""
    for name, text in (('absent.json', None), ('corrupt.json', '{not json')):
        path = tmp_path / name
        if text is not None:
            path.write_text(text)
        out = subprocess.run(
            [sys.executable, '-m', 'cone_detection.vision_node', '--ros-args',
             '--params-file', PARAMS_FILE, '-p', f'model_path:={path}'],
            cwd=str(ROOT), env=dict(os.environ), capture_output=True, text=True, timeout=60)
        assert out.returncode == 1, out
        assert name in out.stderr, out.stderr


@pytest.mark.dds
def test_vision_node_compressed_single_camera(rclpy_context) -> None:
    """use_compressed: JPEG images of one camera give stamped cones."""
    import rclpy
    from hil_bridge.contract import create_publisher, create_subscription
    from rclpy.executors import SingleThreadedExecutor

    child = subprocess.Popen(
        [sys.executable, '-m', 'cone_detection.vision_node', '--ros-args',
         '--params-file', PARAMS_FILE, '-p', 'use_compressed:=true',
         '-p', 'cameras:=[rgb_left]', '-p', 'publish_markers:=false'],
        cwd=str(ROOT), env=dict(os.environ))
    node = rclpy.create_node('vision_probe_jpeg', context=rclpy_context)
    clouds = []
    create_subscription(node, 'cones_vision', clouds.append)
    image_pub = create_publisher(node, 'camera_left_compressed')
    info_pub = create_publisher(node, 'camera_left_info')
    executor = SingleThreadedExecutor(context=rclpy_context)
    executor.add_node(node)
    img, k = _render(0.06)
    try:
        deadline = time.monotonic() + 30.0
        t = 1.0
        while not clouds and time.monotonic() < deadline:
            info_pub.publish(codecs.camera_info_msg(k, 644, 482, t, 'optical'))
            image_pub.publish(codecs.image_to_compressed(img, t, 'optical', quality=90))
            end = time.monotonic() + 0.3
            while time.monotonic() < end and not clouds:
                executor.spin_once(timeout_sec=0.05)
            assert child.poll() is None, 'vision node died'
            t = round(t + 0.1, 3)
        assert clouds, 'no cones_vision from compressed images'
        xyz, cls, _conf = codecs.cloud_to_cones(clouds[-1])
        assert len(cls) == len(CONES)
        stamp = codecs.sec_from_stamp(clouds[-1].header.stamp)
        assert 1.0 <= stamp < t
    finally:
        child.terminate()
        try:
            child.wait(timeout=10)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()
        node.destroy_node()


@pytest.mark.dds
def test_alternate_schedule_takes_the_cameras_in_turn(rclpy_context) -> None:
    """camera_schedule alternate: left and right in strict turn; a silent camera is skipped."""
    import rclpy
    from hil_bridge.contract import create_publisher, create_subscription
    from rclpy.executors import SingleThreadedExecutor

    child = subprocess.Popen(
        [sys.executable, '-m', 'cone_detection.vision_node', '--ros-args',
         '--params-file', PARAMS_FILE, '-p', 'camera_schedule:=alternate',
         '-p', 'publish_markers:=false'], cwd=str(ROOT), env=dict(os.environ))
    node = rclpy.create_node('vision_probe_turns', context=rclpy_context)
    clouds = []
    create_subscription(node, 'cones_vision', clouds.append)
    pubs = {key: create_publisher(node, key) for key in
            ('camera_left', 'camera_left_info', 'camera_right', 'camera_right_info')}
    executor = SingleThreadedExecutor(context=rclpy_context)
    executor.add_node(node)
    left, k = _render(0.06)
    blank = np.full_like(left, 90)  # the right camera sees no cone
    try:
        t = 1.0
        deadline = time.monotonic() + 60.0
        while len(clouds) < 6 and time.monotonic() < deadline:
            for key in ('camera_left_info', 'camera_right_info'):
                pubs[key].publish(codecs.camera_info_msg(k, 644, 482, t, 'optical'))
            pubs['camera_left'].publish(codecs.image_to_msg(left, t, 'l'))
            pubs['camera_right'].publish(codecs.image_to_msg(blank, t, 'r'))
            end = time.monotonic() + 0.3
            while time.monotonic() < end:
                executor.spin_once(timeout_sec=0.05)
            assert child.poll() is None, 'vision node died'
            t = round(t + 0.1, 3)
        assert len(clouds) >= 6, f'only {len(clouds)} outputs'
        counts = [len(codecs.cloud_to_cones(c)[1]) for c in clouds[:6]]
        assert set(counts) == {0, len(CONES)}, counts
        assert all(a != b for a, b in zip(counts, counts[1:])), counts
        # The right camera goes silent: after SILENT_CAMERA the left one
        # carries on alone, every frame.
        seen = len(clouds)
        while len(clouds) < seen + 4 and time.monotonic() < deadline + 30.0:
            pubs['camera_left_info'].publish(codecs.camera_info_msg(k, 644, 482, t, 'optical'))
            pubs['camera_left'].publish(codecs.image_to_msg(left, t, 'l'))
            end = time.monotonic() + 0.3
            while time.monotonic() < end:
                executor.spin_once(timeout_sec=0.05)
            assert child.poll() is None, 'vision node died'
            t = round(t + 0.1, 3)
        later = [len(codecs.cloud_to_cones(c)[1]) for c in clouds[seen:]]
        assert len(later) >= 4 and later[-3:] == [len(CONES)] * 3, later
    finally:
        child.terminate()
        try:
            child.wait(timeout=10)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()
        node.destroy_node()
