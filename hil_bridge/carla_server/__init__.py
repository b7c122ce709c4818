# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
A CARLA 0.9.16 protocol server on the built-in simulator (``carla-hil serve``).

The real compiled ``carla`` client talks to it as to a CARLA server:
rpclib msgpack-RPC on the port (:mod:`.msgpack_rpc`, :mod:`.handlers`),
CARLA's streaming protocol on the port the tokens name (:mod:`.streaming`),
0.9.16 payloads (:mod:`.sensor_data`), the blueprint library
(:mod:`.blueprints`), the world and its physics (:mod:`.world`), the
models of CARLA's IMU, GNSS, radar, obstacle detector, semantic lidar,
depth and semantic cameras (:mod:`.sensor_models`), the built-in maps
(:mod:`.maps`). See ``docs/carla_server.md``.
"""
