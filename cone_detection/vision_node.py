# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
``vision_cone_detector`` node: cones from the rig's cameras.

Subscribes each configured camera's ``Image`` (or ``CompressedImage`` when
``use_compressed`` is true) and ``CameraInfo`` (contract keys
``camera_left*`` / ``camera_right*``), runs
:class:`cone_detection.vision_pipeline.VisionConeDetector` on the newest
image of each camera (older, unprocessed images are dropped), merges the
cameras (``camera_schedule`` all) and publishes ``cones_vision`` (PointCloud2 with x, y, z,
class_id, confidence in the vehicle frame ``{role}``, stamped with the
first camera's image stamp) and ``vision_markers`` (MarkerArray).

The mount poses come from the rig file (parameter ``rig``); intrinsics and
image size from CameraInfo. ``image_reduce`` 2 (the default) detects on
half-size images: a JPEG is decoded at half size in the DCT domain (about
3x faster than a full decode), a raw image area-averaged, and K scaled to
match. ``camera_schedule`` ``all`` runs every camera on each cycle and
merges them (stereo); ``alternate`` runs one camera per cycle, in turn,
and publishes its cones stamped with its own image: the rig's cameras are
0.12 m apart and see the same cones, so each output is complete, at half
the CPU of ``all``; a camera that sends no usable image for
``SILENT_CAMERA`` s of sim time (image stamps) is skipped until it does:
a warning (a few images lost under load are not a fault; the other
camera carries on), an error once it has sent nothing for
``LOST_CAMERA`` s; at start-up, before the node has worked, it is
expected and logged at info level. Images are processed in
their subscription callback (no polling timer). A copy of the image the
last cones came from (same camera, stamp and picture: a lockstep frame the
bridge re-sends while the nodes start) gets those cones again, without a
new detection. CameraInfo is read once
per camera and read again when an image's size stops matching it (the
subscription stays: destroying it from a callback could crash rclpy).
An image that comes before its camera's first CameraInfo waits for it (one
warning; a newer image replaces it): the bridge publishes both in one
frame and the callbacks run in any order, so lockstep frame 0 is answered
from its first copy. Raw images are converted to bgr8 from the colour
and mono encodings, Bayer mosaics and packed YUV 4:2:2 (real camera
drivers' output; :func:`hil_bridge.interface.codecs.images.msg_to_image`).
Images in
an unsupported encoding or of a size that differs from CameraInfo are
dropped with an error (throttled), and the node keeps
running. Limits: an image (raw, or the width x height of its JPEG/PNG
header, read before decoding) with more than ``max_pixels`` pixels, or a
JPEG whose header differs from CameraInfo, is dropped undecoded. Stamp
policy (:mod:`hil_bridge.interface.freshness`): images stamped ahead of
the node clock or more than ``input_timeout`` behind it are dropped with
a throttled warning; the clock jumping back (a replay restarted) resets
the pending images and the out-of-order guard with one info line.
A missing or corrupt model file stops the node at start-up with an error
naming the file and exit status 2 (bad configuration)::

    python -m cone_detection.vision_node --ros-args \
        --params-file config/vision_cone_detector.yaml
"""

import sys
import time
from typing import Any, Dict, List, Mapping, Optional

from cone_detection.ground_projection import pose_to_matrix
from cone_detection.svm_model import DEFAULT_MODEL_PATH
from cone_detection.vision_pipeline import merge_cameras, VisionConeDetector
from hil_bridge.interface.codecs import clouds, images, stamps
from hil_bridge.interface.contract import create_publisher, create_subscription, frame
from hil_bridge.interface.node_inputs import InputPolicy
from hil_bridge.interface.node_main import run_node
from hil_bridge.interface.params import declare_params, ParamSpec
import numpy as np
from rclpy.clock import Clock, ClockType
from rclpy.node import Node
from std_msgs.msg import Header

NODE_NAME = 'vision_cone_detector'

#: Seconds of image stamps (sim time) after which camera_schedule
#: alternate skips a camera that sends no usable image: the other camera's
#: newest image is this much newer than the due camera's newest and than
#: the image processed last. (Not wall time: in lockstep on a loaded
#: machine both cameras send every frame, however slowly.)
SILENT_CAMERA = 0.5

#: Seconds of image stamps without a usable image after which a skipped
#: camera is reported as an error (lost), not a warning.
LOST_CAMERA = 5.0

#: Rig camera id -> contract key prefix of its topics.
CAMERA_KEYS = {'rgb_left': 'camera_left', 'rgb_right': 'camera_right'}

PARAMS = [
    ParamSpec('mode', 'fast (colour proposals + SVM) or reference (sliding window)',
              choices=('fast', 'reference')),
    ParamSpec('model_path', 'model JSON file; "" = the shipped model'),
    ParamSpec('rig', 'sensor rig file (config/sensors) with the camera mounts'),
    ParamSpec('cameras', 'rig camera ids to use (rgb_left, rgb_right); with '
              'camera_schedule all, the first one stamps the output'),
    ParamSpec('role_name', 'vehicle role name in topics and frames'),
    ParamSpec('use_compressed', 'subscribe the JPEG CompressedImage topics'),
    ParamSpec('image_reduce', 'detect on images reduced by this factor (1, 2, 4): '
              'JPEG decoded at reduced size, raw images area-averaged',
              choices=(1, 2, 4)),
    ParamSpec('camera_schedule', 'all: every camera each cycle, merged; alternate: '
              'one camera per cycle, in turn', choices=('all', 'alternate')),
    ParamSpec('stereo_gate', 'merge gate between cameras (m, plus 3 % of range)',
              lo=0.0, hi=5.0),
    ParamSpec('sync_tolerance', 'largest stamp difference (s) of images merged '
              'with the first camera', lo=0.0, hi=1.0),
    ParamSpec('max_range', 'fast mode: skip proposals farther than this (m, '
              'optical depth)', lo=1.0, hi=1000.0),
    ParamSpec('score_offset', 'added to the model decision threshold (higher = '
              'fewer, surer cones)', lo=-5.0, hi=5.0),
    ParamSpec('blue_hue', 'OpenCV hue range [lo, hi] (0..179) of blue cones'),
    ParamSpec('yellow_hue', 'OpenCV hue range [lo, hi] of yellow cones'),
    ParamSpec('orange_hue', 'OpenCV hue range [lo, hi] of orange cones'),
    ParamSpec('sat_min', 'lowest saturation (0..255) of a cone pixel', lo=0, hi=255),
    ParamSpec('val_min', 'lowest value (0..255) of a cone pixel', lo=0, hi=255),
    ParamSpec('publish_markers', 'publish the MarkerArray'),
    ParamSpec('error_throttle', 'seconds between repeated input error messages',
              lo=0.0, hi=3600.0),
    ParamSpec('input_timeout', 'images stamped more than this behind the node clock are '
              'dropped (s)', lo=0.01, hi=60.0),
    ParamSpec('max_pixels', 'images (raw, or JPEG/PNG header) with more pixels are dropped '
              'before decoding', lo=1, hi=2**31 - 1),
]


def _same_image(a: Any, b: Any) -> bool:
    """Return True when two image messages (raw or compressed) carry the same picture."""
    if b is None or type(a) is not type(b):
        return False
    fields = ('format',) if hasattr(a, 'format') else ('width', 'height', 'encoding', 'step')
    return all(getattr(a, f) == getattr(b, f) for f in fields) and bytes(a.data) == bytes(b.data)


def detector_options(p: Mapping[str, Any]) -> Dict[str, Any]:
    """Return the :class:`VisionConeDetector` keywords of the node parameters."""
    hues = {}
    for name in ('blue', 'yellow', 'orange'):
        value = list(p[f'{name}_hue'])
        if len(value) != 2:
            raise ValueError(f'parameter {name}_hue must be [lo, hi], got {value}')
        hues[name] = (int(value[0]), int(value[1]))
    return dict(mode=p['mode'], score_offset=float(p['score_offset']),
                max_range=float(p['max_range']), stereo_gate=float(p['stereo_gate']),
                sat_min=int(p['sat_min']), val_min=int(p['val_min']),
                image_reduce=int(p['image_reduce']), **hues)


class _Camera:
    """State of one subscribed camera."""

    def __init__(self, sensor_id: str, T_vehicle_camera: np.ndarray, log: Any) -> None:
        self.sensor_id = sensor_id
        self.log = log  # its own logger: its throttled errors do not hide another camera's
        self.T = T_vehicle_camera
        self.K: Optional[np.ndarray] = None
        self.size = (0, 0)
        self.full_size = (0, 0)
        self.pending: Any = None
        self.arrived = 0.0
        #: stamp of the newest image (s)
        self.stamp = -float('inf')
        self.warned_info = False


class VisionConeNode(Node):
    """The vision cone detector node (see the module doc)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(NODE_NAME, **kwargs)
        p = declare_params(self, PARAMS, NODE_NAME)
        self.p = p
        self.throttle = float(p['error_throttle'])  # s between repeated input errors
        model_path = p['model_path'] or DEFAULT_MODEL_PATH
        # Raises FileNotFoundError / ValueError naming the file.
        self.detector = VisionConeDetector(model_path, **detector_options(p))
        self.reduce = int(p['image_reduce'])
        from hil_bridge.interface.rig import load_rig
        rig = {s.sensor_id: s for s in load_rig(p['rig'])}
        cam_ids = list(p['cameras'])
        if not cam_ids:
            raise ValueError('parameter cameras is empty')
        role = p['role_name']
        self.frame_id = frame('vehicle', role)
        self.cameras: List[_Camera] = []
        self.max_pixels = int(p['max_pixels'])
        self.inputs = InputPolicy(self, on_reset=self._reset)
        self.gates = {cid: self.inputs.gate(cid, float(p['input_timeout'])) for cid in cam_ids}
        for cid in cam_ids:
            if cid not in CAMERA_KEYS:
                raise ValueError(f'camera {cid!r} has no contract topics; known: '
                                 f'{sorted(CAMERA_KEYS)}')
            if cid not in rig:
                raise ValueError(f'camera {cid!r} is not in rig {p["rig"]!r}')
            cam = _Camera(cid, pose_to_matrix(rig[cid].mount), self.get_logger().get_child(cid))
            self.cameras.append(cam)
            key = CAMERA_KEYS[cid]
            image_key = key + '_compressed' if p['use_compressed'] else key
            # depth 1: only the newest image of a camera waits (3.7 MB each)
            create_subscription(self, image_key, lambda msg, c=cam: self._on_image(c, msg),
                                role=role, depth=1)
            # kept for the node's life (read once; re-read after a size
            # mismatch sets K to None); destroying a subscription from a
            # callback most likely crashed the node once
            create_subscription(self, key + '_info', lambda msg, c=cam: self._on_info(c, msg),
                                role=role)
        self.pub = create_publisher(self, 'cones_vision', role=role)
        self.marker_pub = create_publisher(self, 'vision_markers', role=role) \
            if p['publish_markers'] else None
        self._last_stamp = -1.0
        #: the last cones published, the camera and the image they came
        #: from: a copy of that image (a lockstep frame re-sent) gets them again
        self._last_out: Any = None
        self._last_cam: Optional[_Camera] = None
        self._last_in: Any = None
        self._turn = 0
        #: stamp (s) since which the camera due has been due
        self._due_since: Optional[float] = None
        self.frames = 0
        # Event-driven: images are processed in their own callback (no
        # polling; rclpy's executor costs ~0.3 ms per wake-up on one core).
        # In ``all`` mode a steady 20 Hz timer also runs the lead camera on
        # its own when the others' images do not come within sync_tolerance.
        self.timer = self.create_timer(0.05, self._on_timer,
                                       clock=Clock(clock_type=ClockType.STEADY_TIME)) \
            if p['camera_schedule'] == 'all' and len(self.cameras) > 1 else None
        self.get_logger().info(f'model {model_path}, mode {p["mode"]}, cameras {cam_ids}')

    def _on_info(self, cam: _Camera, msg: Any) -> None:
        if cam.K is not None:
            return  # static: read once, re-read after a size mismatch
        try:
            k, width, height = images.camera_info_to_k(msg)
        except ValueError as err:
            cam.log.error(f'{cam.sensor_id}: bad CameraInfo: {err}',
                          throttle_duration_sec=self.throttle)
            return
        if int(width) * int(height) > self.max_pixels or width <= 0 or height <= 0:
            cam.log.error(f'{cam.sensor_id}: CameraInfo {width}x{height} is empty or exceeds '
                          f'max_pixels {self.max_pixels}; ignored',
                          throttle_duration_sec=self.throttle)
            return
        r = self.reduce
        cam.K = images.reduce_intrinsics(k, r)
        cam.full_size = (int(width), int(height))
        cam.size = (-(-int(width) // r), -(-int(height) // r))
        if cam.pending is not None:
            # its image came first (the bridge publishes both in one frame,
            # the callbacks run in any order): it waited for this
            self._schedule(cam)

    def _reset(self) -> None:
        """Clock jumped back: forget pending images and the out-of-order guard."""
        self._last_stamp = -1.0
        self._last_out = self._last_cam = self._last_in = None
        for cam in self.cameras:
            cam.pending = None
            cam.stamp = -float('inf')  # stamps of the old time line
        self._due_since = None  # sim time: set again by the next image

    def _on_image(self, cam: _Camera, msg: Any) -> None:
        if self.inputs.admit(self.gates[cam.sensor_id], msg.header.stamp) is None:
            return  # future, stale or non-finite stamp (warned, throttled)
        t = stamps.sec_from_stamp(msg.header.stamp)
        if cam is self._last_cam and t == cam.stamp == self._last_stamp and \
                _same_image(msg, self._last_in):
            # a copy of the image answered last (the bridge re-sends a
            # lockstep frame while the nodes start): the same cones again,
            # not detected anew; the first answer may have gone out before
            # fusion's subscription matched, and fusion waits for it
            self.pub.publish(self._last_out)
            return
        cam.pending = msg
        cam.arrived = time.monotonic()
        cam.stamp = t
        self._schedule(cam)

    def _schedule(self, cam: _Camera) -> None:
        """Process the pending images if ``cam``'s new one completes what is due."""
        if self.p['camera_schedule'] == 'alternate':
            due = self.cameras[self._turn % len(self.cameras)]
            if self._due_since is None:
                self._due_since = cam.stamp
            if cam is not due and \
                    cam.stamp - max(due.stamp, self._due_since) > SILENT_CAMERA:
                # the camera due has sent nothing usable: go on without it
                silent = cam.stamp - due.stamp  # since its last image (inf: none yet)
                text = (f'{due.sensor_id}: no usable image for {silent:.2f} s; '
                        f'taking {cam.sensor_id} instead')
                if self.frames and silent > LOST_CAMERA:
                    due.log.error(text, throttle_duration_sec=self.throttle)
                elif self.frames:  # lost images (load): the other camera carries on
                    due.log.warning(text, throttle_duration_sec=self.throttle)
                else:  # start-up (CameraInfo not in yet): expected, not an error
                    self.get_logger().info(text, once=True)
                self._turn = self.cameras.index(cam)
                due = cam
            if cam is due:
                self._process()
            return
        lead = self.cameras[0]
        if lead.pending is None:
            return
        t_lead = stamps.sec_from_stamp(lead.pending.header.stamp)
        tol = float(self.p['sync_tolerance'])
        if all(c.pending is not None and
               abs(stamps.sec_from_stamp(c.pending.header.stamp) - t_lead) <= tol
               for c in self.cameras[1:]):
            self._process()

    def _on_timer(self) -> None:
        lead = self.cameras[0]
        if lead.pending is not None and \
                time.monotonic() - lead.arrived > max(0.05, float(self.p['sync_tolerance'])):
            self._process()

    def _decode(self, cam: _Camera, msg: Any) -> Optional[np.ndarray]:
        """Return the bgr8 image of a message, or None after an error/warning."""
        if cam.K is None:
            if not cam.warned_info:
                cam.warned_info = True
                self.get_logger().warning(
                    f'{cam.sensor_id}: no CameraInfo yet, waiting (the newest image waits '
                    'for it)')
            return None
        try:
            if self.p['use_compressed']:
                img = images.compressed_to_image(msg, self.reduce, max_pixels=self.max_pixels,
                                                 expected_size=cam.full_size)
            else:
                images.check_image_size(msg, self.max_pixels)
                img = images.reduce_image(images.msg_to_image(msg, 'bgr8'), self.reduce)
        except ValueError as err:
            cam.log.error(f'{cam.sensor_id}: image dropped: {err}',
                          throttle_duration_sec=self.throttle)
            return None
        if (img.shape[1], img.shape[0]) != cam.size:
            cam.log.error(f'{cam.sensor_id}: image {img.shape[1]}x{img.shape[0]} does not '
                          f'match CameraInfo {cam.size[0]}x{cam.size[1]}; dropped, '
                          'waiting for a new CameraInfo', throttle_duration_sec=self.throttle)
            cam.K = None
            return None
        return img

    def _process(self) -> None:
        """Detect on the newest image of the camera(s) due (see the module doc)."""
        if self.p['camera_schedule'] == 'alternate':
            lead = self.cameras[self._turn % len(self.cameras)]
            others: List[_Camera] = []
        else:
            lead, others = self.cameras[0], self.cameras[1:]
        msg = lead.pending
        if msg is None:
            return
        if lead.K is None:
            self._decode(lead, msg)  # warns once; the image waits for its CameraInfo
            return
        lead.pending = None
        stamp = stamps.sec_from_stamp(msg.header.stamp)
        if stamp < self._last_stamp or (others == [] and len(self.cameras) > 1 and
                                        stamp <= self._last_stamp):
            # (alternate: one camera per frame, so the other camera's image
            # of the frame just done is skipped)
            return
        img = self._decode(lead, msg)
        if img is None:
            return
        self._turn += 1
        self._due_since = stamp
        results = []
        try:
            results.append(self.detector.detect(img, lead.K, lead.T))
            for cam in others:
                other = cam.pending
                if other is None or cam.K is None:
                    continue
                dt = abs(stamps.sec_from_stamp(other.header.stamp) - stamp)
                if dt > float(self.p['sync_tolerance']):
                    continue
                cam.pending = None
                oimg = self._decode(cam, other)
                if oimg is not None:
                    results.append(self.detector.detect(oimg, cam.K, cam.T))
        except ValueError as err:
            self.get_logger().error(f'detection failed: {err}',
                                    throttle_duration_sec=self.throttle)
            return
        xyz, cls, conf = merge_cameras(results, self.detector.stereo_gate)
        ok = np.isfinite(xyz).all(axis=1)
        xyz, cls, conf = xyz[ok], cls[ok], conf[ok]
        self._last_stamp = stamp
        header = Header(stamp=msg.header.stamp, frame_id=self.frame_id)
        self._last_out = clouds.cones_to_cloud(xyz, cls, conf, header, self.frame_id)
        self._last_cam, self._last_in = lead, msg
        self.pub.publish(self._last_out)
        if self.marker_pub is not None:
            from cone_detection.markers import cone_markers
            self.marker_pub.publish(cone_markers(xyz, cls, msg.header.stamp, self.frame_id,
                                                 ns='vision', confidence=conf))
        self.frames += 1


def main(args: Optional[List[str]] = None) -> int:
    """Run the node until SIGINT/SIGTERM; exit 2 when it cannot start."""
    return run_node(VisionConeNode, args,
                    startup_errors=(FileNotFoundError, ValueError),
                    name=NODE_NAME)


if __name__ == '__main__':
    sys.exit(main())
