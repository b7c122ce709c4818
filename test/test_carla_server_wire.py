# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
``carla-hil serve`` on the raw wire, checked against what the wheel decodes.

A raw msgpack-RPC socket and a raw stream socket read what the server
sends while the real carla==0.9.16 client reads the same streams: the
stream token layout (24 bytes: u32 stream id, u16 port, u8 protocol 1, u8
address type 0), the 48-byte sensor header, the 36 + 119 x N bytes world
snapshot, the image and lidar payloads must give exactly the frames,
sizes and bytes the client decodes. (The type indices - collision 0,
lidar 11, camera 13, episode 17 - are what makes the client build a
CollisionEvent, LidarMeasurement, Image or snapshot at all.) Malformed
requests get an rpclib error or a closed connection, never a dead server.
"""

import socket
import struct
import threading
import time

from hil_bridge.carla_server import sensor_data as sd
from hil_bridge.carla_server.launcher import (restore_async, serve, synchronous, tick_until,
                                              wait_for)
import msgpack
import numpy as np
import pytest

carla = pytest.importorskip('carla')


class RawRpc:
    """A bare msgpack-RPC connection (what rpclib sends, by hand)."""

    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(('127.0.0.1', port), timeout=10.0)
        self.unpacker = msgpack.Unpacker(raw=False)
        self.msgid = 0

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def request(self, method, params) -> list:
        self.msgid += 1
        self.send(msgpack.packb([0, self.msgid, method, params], use_bin_type=True))
        return self.read()

    def call(self, method, *args) -> list:
        return self.request(method, [[False]] + list(args))

    def read(self) -> list:
        while True:
            for msg in self.unpacker:
                return msg
            data = self.sock.recv(65536)
            if not data:
                raise ConnectionError('closed')
            self.unpacker.feed(data)

    def close(self) -> None:
        self.sock.close()


class RawStream:
    """A bare streaming session: send the stream id, read size-framed messages."""

    def __init__(self, port: int, stream_id: int) -> None:
        self.sock = socket.create_connection(('127.0.0.1', port), timeout=10.0)
        self.sock.sendall(struct.pack('<I', stream_id))

    def _exact(self, n: int) -> bytes:
        buf = bytearray()
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            if not chunk:
                raise ConnectionError('stream closed')
            buf += chunk
        return bytes(buf)

    def message(self) -> bytes:
        (size,) = struct.unpack('<I', self._exact(4))
        return self._exact(size)

    def collect(self) -> dict:
        """Read messages on a thread into ``{frame: message}`` (returned)."""
        by_frame: dict = {}

        def loop() -> None:
            try:
                while True:
                    msg = self.message()
                    frame = int(np.frombuffer(msg[:48], sd.SENSOR_HEADER)[0]['frame'])
                    by_frame.setdefault(frame, msg)
            except (ConnectionError, OSError):
                pass
        threading.Thread(target=loop, daemon=True).start()
        return by_frame

    def close(self) -> None:
        self.sock.close()


def _token(raw: bytes):
    assert isinstance(raw, bytes) and len(raw) == 24
    return struct.unpack('<IHBB16s', raw)


@pytest.fixture(scope='module')
def server():
    """One server; synchronous mode for exact frame comparisons."""
    with serve() as s:
        client = s.client()
        world = client.get_world()
        synchronous(world, 0.05)
        yield s, client, world
        if s.alive():
            restore_async(client)


def test_episode_token_and_snapshot_layout(server):
    s, _client, world = server
    rpc = RawRpc(s.port)
    (ok, (episode_id, token)), = rpc.call('get_episode_info')[3]
    assert ok == 1 and episode_id == world.id
    stream_id, port, protocol, address_type, address = _token(token[0])
    assert (port, protocol, address_type) == (s.streaming_port, 1, 0)
    assert address == b'\0' * 16
    answer = rpc.call('get_sensor_token', stream_id)[3]
    assert answer[0][0] == 1 and answer[0][1] == token
    stream = RawStream(s.streaming_port, stream_id)
    time.sleep(0.2)                       # the session is registered
    cone = world.get_blueprint_library().find('static.prop.trafficcone01')
    ids = [world.spawn_actor(cone, carla.Transform(carla.Location(i, 3.0, 0.0))).id
           for i in range(3)]
    frame = world.tick()
    while True:
        msg = stream.message()
        head = np.frombuffer(msg[:48], sd.SENSOR_HEADER)[0]
        if head['frame'] == frame:
            break
    snap = world.get_snapshot()
    assert head['type'] == sd.TYPE_EPISODE_STATE == 17
    assert snap.frame == frame
    assert head['timestamp'] == pytest.approx(snap.timestamp.elapsed_seconds)
    assert len(msg) == 48 + 36 + 119 * len(snap)
    eh = np.frombuffer(msg[48:84], sd.EPISODE_HEADER)[0]
    assert eh['episode_id'] == world.id
    assert eh['delta_seconds'] == pytest.approx(snap.timestamp.delta_seconds)
    recs = np.frombuffer(msg[84:], sd.ACTOR_STATE)
    assert sorted(recs['id']) == sorted(a.id for a in snap)
    for i, aid in enumerate(ids):
        rec = recs[recs['id'] == aid][0]
        loc = snap.find(aid).get_transform().location
        assert tuple(rec['transform'][:3]) == pytest.approx((loc.x, loc.y, loc.z))
        assert tuple(rec['transform'][:3]) == pytest.approx((i, 3.0, 0.0))
    stream.close()
    rpc.close()
    for aid in ids:
        world.get_actor(aid).destroy()


def test_sensor_streams_match_the_client(server):
    s, _client, world = server
    ego = world.spawn_actor(world.get_blueprint_library().find('vehicle.tesla.model3'),
                            carla.Transform(carla.Location(0.0, 0.0, 0.5)))
    world.spawn_actor(world.get_blueprint_library().find('static.prop.trafficcone01'),
                      carla.Transform(carla.Location(4.0, 0.0, 0.0)))
    cam_bp = world.get_blueprint_library().find('sensor.camera.rgb')
    cam_bp.set_attribute('image_size_x', '64')
    cam_bp.set_attribute('image_size_y', '48')
    cam = world.spawn_actor(cam_bp, carla.Transform(carla.Location(0.5, 0.0, 1.0)),
                            attach_to=ego)
    lidar_bp = world.get_blueprint_library().find('sensor.lidar.ray_cast')
    for k, v in (('channels', '4'), ('range', '30'), ('points_per_second', '8000'),
                 ('dropoff_general_rate', '0')):
        lidar_bp.set_attribute(k, v)
    lidar = world.spawn_actor(lidar_bp, carla.Transform(carla.Location(0.0, 0.0, 1.8)),
                              attach_to=ego)
    rpc = RawRpc(s.port)
    raw = {}
    for sensor in (cam, lidar):
        (ok, token), = rpc.call('get_sensor_token', sensor.id)[3]
        sid, port, protocol, address_type, _ = _token(token[0])
        assert ok == 1 and (sid, port, protocol, address_type) == \
            (sensor.id, s.streaming_port, 1, 0)
        raw[sensor.id] = RawStream(s.streaming_port, sid)
    raw_got = {sid: st.collect() for sid, st in raw.items()}
    got = {cam.id: {}, lidar.id: {}}
    cam.listen(lambda d: got[cam.id].setdefault(d.frame, bytes(d.raw_data)))
    lidar.listen(lambda d: got[lidar.id].setdefault(
        d.frame, (bytes(d.raw_data), d.channels, [d.get_point_count(c) for c in
                                                  range(d.channels)],
                  d.horizontal_angle)))
    # every session (the client's and the raw ones) connected and delivering
    tick_until(world, lambda: all(got.values()) and all(raw_got.values()))
    frames = [world.tick() for _ in range(3)]
    assert wait_for(lambda: all(frames[-1] in g for g in
                                list(got.values()) + list(raw_got.values())))
    cam.stop()
    lidar.stop()
    # camera: header, 12-byte image header, BGRA - the client's raw_data
    for frame in frames:
        msg = raw_got[cam.id][frame]
        head = np.frombuffer(msg[:48], sd.SENSOR_HEADER)[0]
        assert head['type'] == sd.TYPE_CAMERA_RGB == 13
        w, h = struct.unpack('<II', msg[48:56])
        (fov,) = struct.unpack('<f', msg[56:60])
        assert (w, h, fov) == (64, 48, pytest.approx(90.0))
        assert len(msg) == 48 + 12 + 64 * 48 * 4
        assert head['frame'] == frame
        assert msg[60:] == got[cam.id][frame]
    # lidar: header, u32 words [angle, channels, counts...], float32 points
    for frame in frames:
        msg = raw_got[lidar.id][frame]
        head = np.frombuffer(msg[:48], sd.SENSOR_HEADER)[0]
        assert head['type'] == sd.TYPE_LIDAR == 11
        words = np.frombuffer(msg[48:56], '<u4')
        channels = int(words[1])
        counts = np.frombuffer(msg[56:56 + 4 * channels], '<u4')
        points = msg[56 + 4 * channels:]
        assert len(points) == 16 * int(counts.sum()) > 0
        assert head['frame'] == frame
        data, ch, cnt, angle = got[lidar.id][frame]
        assert (ch, cnt) == (channels, list(counts))
        assert points == data
        assert np.frombuffer(msg[48:52], '<f4')[0] == pytest.approx(angle)
    for st in raw.values():
        st.close()
    rpc.close()
    for a in (cam, lidar):
        a.destroy()
    ego.destroy()


def test_malformed_requests_do_not_kill_the_server(server):
    s, client, world = server
    rpc = RawRpc(s.port)
    reply = rpc.call('no_such_function', 1, 2)
    assert reply[0] == 1 and 'could not find function' in reply[2] and reply[3] is None
    reply = rpc.call('get_actor_bounding_box')                 # wrong arity
    assert 'taking 1 arg(s)) called with 0' in reply[2]
    reply = rpc.request('version', [])                         # no metadata
    assert 'metadata' in reply[2]
    reply = rpc.call('get_actor_bounding_box', 'not an id')
    assert reply[2] is None and reply[3][0][0] == 0           # a CARLA error Response
    assert 'expected an integer' in reply[3][0][1][0]
    reply = rpc.call('spawn_actor', [0, 'vehicle.tesla.model3', []], [[1, 2], 3])
    assert reply[3][0][0] == 0 and 'transform' in reply[3][0][1][0]
    reply = rpc.call('set_episode_settings', ['not', 'settings', 'at all'])
    assert reply[3][0][0] == 0
    assert rpc.call('version')[3] == [[1, '0.9.16']]           # same connection
    rpc.close()
    # bytes that are not msgpack-RPC: the connection is closed
    junk = RawRpc(s.port)
    junk.send(b'\xc1' * 16 + b'GET / HTTP/1.0\r\n\r\n')
    with pytest.raises((ConnectionError, OSError)):
        junk.read()
    junk.close()
    junk = RawRpc(s.port)
    junk.send(msgpack.packb({'not': 'a request'}))
    with pytest.raises((ConnectionError, OSError)):
        junk.read()
    junk.close()
    # a stream session for a stream that does not exist is refused
    bogus = RawStream(s.streaming_port, 987654)
    with pytest.raises((ConnectionError, OSError)):
        bogus.message()
    bogus.close()
    # the real client still works
    assert s.alive()
    assert client.get_server_version() == '0.9.16'
    assert world.tick() == world.get_snapshot().frame
