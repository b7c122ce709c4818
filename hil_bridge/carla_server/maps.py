# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
The built-in worlds ``carla-hil serve`` offers as CARLA maps (no rclpy).

Every world is flat ground (z = 0) with no level geometry but its cones:

* ``HIL_Flat`` (the default): empty ground with a straight two-lane road
  (OpenDRIVE, driving direction +x) whose right lane centre runs along
  UE y = 28 m, so the ROS 2 AEB tutorial's spawn poses (0, 28, 1) and
  (50, 28, 1) lie on it; spawn points every 10 m along both lanes;
* ``HIL_<scenario>`` for every scenario in ``config/scenarios``: the
  scenario's track cones as map props (not actors, as a CARLA map's props
  are level geometry) with their Formula Student classes, and spawn points
  at the scenario's ego and actor poses (actor origins, UE frame).

Names follow CARLA: ``world.get_map().name`` is ``Carla/Maps/<name>``,
``client.get_available_maps()`` lists ``/Game/Carla/Maps/<name>``, and
``load_world`` accepts either form or the bare name. An unknown name is a
``KeyError`` naming the maps there are.
"""

from dataclasses import dataclass, field
import glob
import math
import os
from typing import List, Optional, Tuple

from hil_bridge.carla_server.ue import point_to_ue
from hil_bridge.interface.track import ConeArray
import numpy as np

FLAT = 'HIL_Flat'
PREFIX = 'HIL_'
#: UE y (m) of the right-lane centre of HIL_Flat's road.
ROAD_Y = 28.0
LANE_WIDTH = 3.5
ROAD_LENGTH = 400.0

SpawnPoint = Tuple[Tuple[float, float, float], Tuple[float, float, float]]
#: The geo-reference of every built-in map (lat_0, lon_0 in degrees, altitude
#: in metres): the Hockenheimring paddock, where Formula Student Germany runs.
GEO_REFERENCE = (49.3278, 8.5656, 0.0)


@dataclass
class BuiltinMap:
    """A built-in world: its name, cones (REP-103) and spawn points (UE)."""

    name: str
    cones: ConeArray = field(default_factory=ConeArray)
    spawn_points: List[SpawnPoint] = field(default_factory=list)
    road: bool = False
    #: (lat_0 deg, lon_0 deg, altitude m) of the OpenDRIVE geoReference
    geo_reference: Tuple[float, float, float] = GEO_REFERENCE

    @property
    def path(self) -> str:
        """Return CARLA's map name (``Carla/Maps/<name>``)."""
        return f'Carla/Maps/{self.name}'

    def opendrive(self) -> str:
        """Return the map's OpenDRIVE text (a straight road or no road)."""
        head = ('<?xml version="1.0" standalone="yes"?>\n<OpenDRIVE>\n'
                f'  <header revMajor="1" revMinor="4" name="{self.name}" '
                'version="1.00" north="0.0" south="0.0" east="0.0" '
                'west="0.0">\n    <geoReference><![CDATA[+proj=tmerc '
                f'+lat_0={self.geo_reference[0]} +lon_0={self.geo_reference[1]} +k=1 '
                '+x_0=0 +y_0=0 +datum=WGS84 +units=m +no_defs]]></geoReference>\n'
                '  </header>\n')
        if not self.road:
            return head + '</OpenDRIVE>\n'
        # OpenDRIVE is right-handed (y left): UE y = 28 is y = -28 there;
        # the reference line runs half a lane left of the right lane centre.
        y_ref = -ROAD_Y + LANE_WIDTH / 2.0
        x0 = -ROAD_LENGTH / 2.0
        lane = ('<lane id="{i}" type="driving" level="false"><link/>'
                f'<width sOffset="0.0" a="{LANE_WIDTH}" b="0.0" c="0.0" d="0.0"/>'
                '<roadMark sOffset="0.0" type="solid" weight="standard" '
                'color="standard" width="0.15"/></lane>')
        return head + (
            f'  <road name="Road 0" length="{ROAD_LENGTH}" id="0" '
            'junction="-1">\n    <link/>\n'
            f'    <planView><geometry s="0.0" x="{x0}" y="{y_ref}" '
            f'hdg="0.0" length="{ROAD_LENGTH}"><line/></geometry></planView>\n'
            '    <elevationProfile/><lateralProfile/>\n'
            '    <lanes><laneSection s="0.0">\n'
            f'      <left>{lane.format(i=1)}</left>\n'
            '      <center><lane id="0" type="none" level="false"><link/>'
            '<roadMark sOffset="0.0" type="broken" weight="standard" '
            'color="standard" width="0.15"/></lane></center>\n'
            f'      <right>{lane.format(i=-1)}</right>\n'
            '    </laneSection></lanes>\n  </road>\n</OpenDRIVE>\n')


def flat_map() -> BuiltinMap:
    """Return ``HIL_Flat``: empty ground and the AEB tutorial's road."""
    points: List[SpawnPoint] = []
    for x in np.arange(0.0, 101.0, 10.0):
        points.append(((float(x), ROAD_Y, 0.5), (0.0, 0.0, 0.0)))
        points.append(((float(x), ROAD_Y - LANE_WIDTH, 0.5), (0.0, 180.0, 0.0)))
    return BuiltinMap(FLAT, spawn_points=points, road=True)


def scenario_names() -> List[str]:
    """Return the scenarios of ``config/scenarios`` (sorted)."""
    from hil_bridge.interface.config import config_path
    folder = config_path('scenarios')
    return sorted(os.path.splitext(os.path.basename(p))[0]
                  for p in glob.glob(os.path.join(folder, '*.yaml')))


def available() -> List[str]:
    """Return the names of every built-in map."""
    return [FLAT] + [PREFIX + n for n in scenario_names()]


def _spawn_point(pose, box_offset: float) -> SpawnPoint:
    x = pose.x + box_offset * math.cos(pose.yaw)
    y = pose.y + box_offset * math.sin(pose.yaw)
    z = pose.z if pose.z > 0.0 else 0.5
    return point_to_ue((x, y, z)), (0.0, -math.degrees(pose.yaw), 0.0)


def scenario_map(scenario) -> BuiltinMap:
    """Return the world of a loaded scenario (its cones and poses)."""
    from hil_bridge.interface.vehicle_profile import load_vehicle_profile
    cones = ConeArray()
    track = scenario.track
    if track is not None:
        c = track.cones
        cones = ConeArray(xy=np.array(c.xy, np.float64),
                          class_id=np.array(c.class_id, np.uint8),
                          knocked=np.zeros(len(c), bool))
    points = []
    for spec in [scenario.ego] + list(scenario.actors):
        offset = 0.0
        if spec.profile:
            offset = load_vehicle_profile(spec.profile).box_offset
        points.append(_spawn_point(spec.pose, offset))
    return BuiltinMap(PREFIX + scenario.name, cones=cones, spawn_points=points)


def canonical(name: str) -> str:
    """Return the bare map name of ``Town``, ``Carla/Maps/Town`` or ``/Game/...``."""
    return str(name).strip().rstrip('/').split('/')[-1]


def load(name: str, seed: Optional[int] = None) -> BuiltinMap:
    """
    Return the built-in map ``name`` (any of CARLA's name forms).

    Raises ``KeyError`` for a name that is not a built-in map, naming them.
    """
    bare = canonical(name)
    if bare == FLAT:
        return flat_map()
    if bare.startswith(PREFIX) and bare[len(PREFIX):] in scenario_names():
        from hil_bridge.bridge.scenario import load_scenario
        overrides = {} if seed is None else {'seed': int(seed)}
        return scenario_map(load_scenario(bare[len(PREFIX):], **overrides))
    raise KeyError(f'map {name!r} not found; the built-in maps are '
                   f'{available()}')
