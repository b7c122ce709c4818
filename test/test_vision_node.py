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
from hil_bridge.interface.codecs import clouds, images, stamps
from hil_bridge.interface.cones import CONE_BLUE, CONE_YELLOW
from hil_bridge.interface.frames import Pose
from hil_bridge.interface.params import check_specs
from node_harness import node_under_test
import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
VISION = 'cone_detection.vision_node'

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
    from hil_bridge.interface.contract import create_publisher, create_subscription
    from sensor_msgs.msg import Image

    left, k = _render(0.06)
    right, _k = _render(-0.06)
    with node_under_test(VISION, PARAMS_FILE, rclpy_context, ['camera_schedule:=all'],
                         probe_name='vision_probe') as h:
        received, markers = [], []
        create_subscription(h.node, 'cones_vision', received.append)
        create_subscription(h.node, 'vision_markers', markers.append)
        pubs = {key: create_publisher(h.node, key) for key in
                ('camera_left', 'camera_left_info', 'camera_right', 'camera_right_info')}

        def send(t: float, img_left=left, info: bool = True) -> None:
            h.now = t  # sim time of the frame (stamp policy)
            if info:
                for key in ('camera_left_info', 'camera_right_info'):
                    pubs[key].publish(images.camera_info_msg(k, 644, 482, t, 'optical'))
            pubs['camera_right'].publish(images.image_to_msg(right, t,
                                                             'ego_vehicle/rgb_right/optical'))
            if isinstance(img_left, Image):
                pubs['camera_left'].publish(img_left)
            else:
                pubs['camera_left'].publish(images.image_to_msg(img_left, t,
                                                                'ego_vehicle/rgb_left/optical'))

        def out_stamps() -> set:
            return {round(stamps.sec_from_stamp(c.header.stamp), 3) for c in received}

        def send_until_stamped(t: float) -> float:
            """Send frames from ``t`` on until one comes back; return its stamp."""
            for _ in range(40):
                send(t)
                if h.spin_until(lambda: t in out_stamps(), 0.5, period=0.05):
                    break
                t = round(t + 0.1, 3)
            return t

        # Wait for discovery: the node subscribes every camera topic (the
        # 'all' schedule needs both images before it looks at one).
        assert h.spin_until(lambda: all(p.get_subscription_count() > 0 for p in pubs.values()),
                            20.0), 'node never subscribed'
        # Images without CameraInfo are dropped (one warning), no output.
        for i in range(3):
            send(1.0 + 0.1 * i, info=False)
            h.spin_for(0.2)
        assert not received
        # With CameraInfo: cones with the image stamp, in the vehicle frame.
        t = send_until_stamped(2.0)
        assert t in out_stamps(), 'no cones_vision with the image stamp'
        cloud = next(c for c in received if round(stamps.sec_from_stamp(c.header.stamp), 3) == t)
        assert cloud.header.frame_id == 'ego_vehicle'
        xyz, cls, conf = clouds.cloud_to_cones(cloud)
        assert len(cls) == len(CONES), (xyz, cls)
        d = np.linalg.norm(xyz[:, None, :2] - CONES[None], axis=2)
        assert (d.min(axis=1) < 0.4).all()
        assert (cls == CLASSES[d.argmin(axis=1)]).all()
        assert h.spin_until(lambda: len(markers) > 0, 5.0), 'no markers'
        # Unsupported encoding and a size that does not match CameraInfo:
        # dropped with an error, no output for those stamps, node alive.
        bad = images.image_to_msg(np.zeros((482, 644), np.float32), 9.0, 'x', encoding='32FC1')
        # (one at a time: the node only looks at the newest image)
        send(9.0, img_left=bad)
        h.spin_for(1.5)
        send(9.1, img_left=np.zeros((100, 120, 3), np.uint8))
        h.spin_for(1.5)
        assert not {9.0, 9.1} & out_stamps()
        t = send_until_stamped(10.0)
        assert t in out_stamps(), 'node did not recover after bad images'
    assert 'no CameraInfo yet' in h.output
    assert 'unsupported image encoding' in h.output or 'cannot convert' in h.output, h.output
    assert 'does not match CameraInfo' in h.output


@pytest.mark.dds
def test_missing_model_exits_2_naming_the_file(ros_domain, tmp_path) -> None:
    """A missing or corrupt model file stops the node with exit 2 and the file name."""
    for name, text in (('absent.json', None), ('corrupt.json', '{not json')):
        path = tmp_path / name
        if text is not None:
            path.write_text(text)
        out = subprocess.run(
            [sys.executable, '-m', 'cone_detection.vision_node', '--ros-args',
             '--params-file', PARAMS_FILE, '-p', f'model_path:={path}'],
            cwd=str(ROOT), env=dict(os.environ), capture_output=True, text=True, timeout=60)
        assert out.returncode == 2, out
        assert name in out.stderr, out.stderr


@pytest.mark.dds
def test_vision_node_compressed_single_camera(rclpy_context) -> None:
    """use_compressed: JPEG images of one camera give stamped cones."""
    from hil_bridge.interface.contract import create_publisher, create_subscription

    img, k = _render(0.06)
    with node_under_test(VISION, PARAMS_FILE, rclpy_context,
                         ['use_compressed:=true', 'cameras:=[rgb_left]',
                          'publish_markers:=false'], probe_name='vision_probe_jpeg') as h:
        received = []
        create_subscription(h.node, 'cones_vision', received.append)
        image_pub = create_publisher(h.node, 'camera_left_compressed')
        info_pub = create_publisher(h.node, 'camera_left_info')
        deadline = time.monotonic() + 30.0
        t = 1.0
        while not received and time.monotonic() < deadline:
            h.now = t
            info_pub.publish(images.camera_info_msg(k, 644, 482, t, 'optical'))
            image_pub.publish(images.image_to_compressed(img, t, 'optical', quality=90))
            h.spin_until(lambda: bool(received), 0.3, period=0.05)
            t = round(t + 0.1, 3)
        assert received, 'no cones_vision from compressed images'
        xyz, cls, _conf = clouds.cloud_to_cones(received[-1])
        assert len(cls) == len(CONES)
        stamp = stamps.sec_from_stamp(received[-1].header.stamp)
        assert 1.0 <= stamp < t


@pytest.mark.dds
def test_alternate_schedule_takes_the_cameras_in_turn(rclpy_context) -> None:
    """camera_schedule alternate: left and right in strict turn; a silent camera is skipped."""
    from hil_bridge.interface.contract import create_publisher, create_subscription

    left, k = _render(0.06)
    blank = np.full_like(left, 90)  # the right camera sees no cone
    with node_under_test(VISION, PARAMS_FILE, rclpy_context,
                         ['camera_schedule:=alternate', 'publish_markers:=false'],
                         probe_name='vision_probe_turns') as h:
        received = []
        create_subscription(h.node, 'cones_vision', received.append)
        pubs = {key: create_publisher(h.node, key) for key in
                ('camera_left', 'camera_left_info', 'camera_right', 'camera_right_info')}

        def run_frames(until: int, deadline: float, cams: tuple, t: float) -> float:
            """Send a frame of ``cams`` every 0.3 s until ``until`` outputs."""
            while len(received) < until and time.monotonic() < deadline:
                h.now = t
                for key in cams:
                    pubs[key + '_info'].publish(
                        images.camera_info_msg(k, 644, 482, t, 'optical'))
                    pubs[key].publish(images.image_to_msg(
                        left if key == 'camera_left' else blank, t, key))
                h.spin_for(0.3)
                t = round(t + 0.1, 3)
            return t

        deadline = time.monotonic() + 60.0
        t = run_frames(6, deadline, ('camera_left', 'camera_right'), 1.0)
        assert len(received) >= 6, f'only {len(received)} outputs'
        counts = [len(clouds.cloud_to_cones(c)[1]) for c in received[:6]]
        assert set(counts) == {0, len(CONES)}, counts
        assert all(a != b for a, b in zip(counts, counts[1:])), counts
        # The right camera goes silent: after SILENT_CAMERA the left one
        # carries on alone, every frame.
        seen = len(received)
        run_frames(seen + 4, deadline + 30.0, ('camera_left',), t)
        later = [len(clouds.cloud_to_cones(c)[1]) for c in received[seen:]]
        assert len(later) >= 4 and later[-3:] == [len(CONES)] * 3, later
        # silent for longer than LOST_CAMERA (sim time): now an error
        seen = len(received)
        run_frames(seen + 2, deadline + 45.0, ('camera_left',), round(t + 6.0, 3))
        assert len(received) >= seen + 2
    log = h.output
    first_error = log.find('[ERROR]')
    skipped = log.find('rgb_right: no usable image')
    # lost images for a few frames (as under load): a warning, the left goes on
    assert skipped >= 0 and '[WARN]' in log[log.rfind('\n', 0, skipped):skipped], log[-3000:]
    assert first_error > skipped, log[-3000:]
    assert 'rgb_right: no usable image for 6.' in log[first_error:], log[-3000:]


def test_a_resent_frame_gets_its_cones_again(rclpy_context) -> None:
    """
    Lockstep start-up: frame 0 is answered from its first copy, and again for each copy.

    The bridge re-sends frame 0 until every node answered it; fusion waits
    for the vision of the frame, and its subscription may have matched
    after the first answer went out: it skipped the copy (same stamp) and
    fusion waited until ``wait_for_vision`` ran out, then fused lidar
    alone. Not detected anew: the other camera's image of the frame and
    a new frame are handled as before. And the first image, which came
    before its camera's first CameraInfo (one frame, callbacks in any
    order), waits for it: it was dropped, and frame 0 waited for a copy.
    """
    from cone_detection.vision_node import VisionConeNode
    from inprocess import NodeUnderTest
    left, k = _render(0.06)
    h = NodeUnderTest(VisionConeNode, rclpy_context, {'camera_schedule': 'alternate',
                                                      'publish_markers': False})
    node = h.node
    try:
        def frame(t: float, image_first: bool = False) -> None:
            h.at(t)
            for cam in node.cameras:
                key = 'camera_left' if cam.sensor_id == 'rgb_left' else 'camera_right'
                info = images.camera_info_msg(k, 644, 482, t, 'optical')
                if not image_first:
                    node._on_info(cam, info)
                node._on_image(cam, images.image_to_msg(left, t, key))
                if image_first:
                    node._on_info(cam, info)
        frame(0.0, image_first=True)  # the first image waits for its CameraInfo
        assert node.frames == 1 and h.stamps('/perception/cones/vision') == [0.0]
        frame(0.0)  # re-sent: the left camera's copy is answered again
        frame(0.0)
        assert node.frames == 1 and h.stamps('/perception/cones/vision') == [0.0] * 3
        out = h.topic('/perception/cones/vision')
        assert out[1] is out[0] and out[2] is out[0]
        frame(0.05)  # the next frame: the right camera's turn, detected
        assert node.frames == 2 and h.stamps('/perception/cones/vision')[-1] == pytest.approx(0.05)
        assert len(clouds.cloud_to_cones(out[-1])[1]) == len(CONES)
    finally:
        h.close()
