# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
Locate and load the YAML files under ``config/`` (no rclpy needed).

The config directory is, in order: ``$CARLA_HIL_CONFIG``; the installed
``share/carla_hil/config`` (ament index); the source tree's ``config/``.
"""

import functools
import os
import re
from typing import Any, Dict, List, Optional, Sequence, Tuple

import yaml

PACKAGE = 'carla_hil'


def source_root() -> str:
    """Return the directory holding the ``hil_bridge`` package (the checkout in a source tree)."""
    here = os.path.dirname(os.path.abspath(__file__))
    return os.path.dirname(os.path.dirname(here))


@functools.lru_cache(maxsize=1)
def config_dir() -> str:
    """Return the absolute path of the carla_hil config directory."""
    env = os.environ.get('CARLA_HIL_CONFIG')
    if env:
        return os.path.abspath(env)
    src = os.path.join(source_root(), 'config')
    if os.path.isdir(src):
        return src
    try:
        from ament_index_python.packages import get_package_share_directory
        share = os.path.join(get_package_share_directory(PACKAGE), 'config')
        if os.path.isdir(share):
            return share
    except (ImportError, LookupError):
        pass
    raise FileNotFoundError(
        'carla_hil config directory not found: set CARLA_HIL_CONFIG')


def config_path(*parts: str) -> str:
    """
    Return the path of a file under the config directory.

    An absolute ``parts[0]`` is returned unchanged, so parameters may name
    either a file shipped in ``config/`` or any file on disk.
    """
    if parts and os.path.isabs(parts[0]):
        return os.path.join(*parts)
    return os.path.join(config_dir(), *parts)


class YamlLines:
    """Map the key paths of a YAML file to line numbers for error messages."""

    def __init__(self, path: str, text: str) -> None:
        self.path = path
        self.lines: Dict[Tuple[Any, ...], int] = {}
        try:
            node = yaml.compose(text, Loader=yaml.SafeLoader)
        except yaml.YAMLError:
            node = None
        if node is not None:
            self._walk(node, ())

    def _walk(self, node: Any, prefix: Tuple[Any, ...]) -> None:
        self.lines[prefix] = node.start_mark.line + 1
        if isinstance(node, yaml.MappingNode):
            for k, v in node.value:
                key = prefix + (k.value if isinstance(k, yaml.ScalarNode) else None,)
                self._walk(v, key)
                self.lines[key] = k.start_mark.line + 1
        elif isinstance(node, yaml.SequenceNode):
            for i, v in enumerate(node.value):
                self._walk(v, prefix + (i,))

    def line(self, keys: Tuple[Any, ...]) -> Optional[int]:
        """Return the line of ``keys`` or of its nearest known parent."""
        for n in range(len(keys), -1, -1):
            if keys[:n] in self.lines:
                return self.lines[keys[:n]]
        return None

    def where(self, keys: Tuple[Any, ...] = ()) -> str:
        """Return ``path:line`` of ``keys`` (``path`` when unknown)."""
        line = self.line(keys)
        return f'{self.path}:{line}' if line is not None else self.path

    def error(self, keys: Tuple[Any, ...], message: str) -> ValueError:
        """Return a ValueError naming file, line and field ``keys``."""
        dotted = '.'.join(str(k) for k in keys) or '<top>'
        return ValueError(f'{self.where(keys)}: field {dotted!r}: {message}')


def yaml_error(path: str, exc: yaml.YAMLError) -> ValueError:
    """Return one line for a YAML syntax error: file, line and problem."""
    mark = getattr(exc, 'problem_mark', None)
    line = mark.line + 1 if mark is not None else 1
    problem = getattr(exc, 'problem', None) or str(exc).split('\n')[0]
    return ValueError(f'{path}:{line}: not valid YAML: {problem}')


def read_yaml(path: str) -> Tuple[Any, YamlLines]:
    """
    Parse a YAML file; return its data and the line map of its keys.

    Raises ``ValueError`` in one line (file, line, problem) for a syntax
    error, ``OSError`` when the file cannot be read.
    """
    with open(path, 'r', encoding='utf-8') as stream:
        text = stream.read()
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise yaml_error(path, exc) from None
    return data, YamlLines(path, text)


def load_yaml(*parts: str) -> Dict[str, Any]:
    """
    Load a YAML mapping from ``config/`` (or an absolute path).

    Raises ``ValueError`` naming the file (and line) when it is not valid
    YAML or not a mapping.
    """
    path = config_path(*parts)
    data, _ = read_yaml(path)
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ValueError(f'{path}: expected a YAML mapping at top level')
    return data


def node_params(node_name: str, file_name: str = '') -> Dict[str, Any]:
    """
    Return the ``ros__parameters`` of ``node_name`` from its YAML file.

    The file is ``config/<node_name>.yaml`` unless ``file_name`` is given and
    uses the standard ROS 2 layout ``<node_name>: {ros__parameters: {...}}``
    (``/**`` is accepted as the node key too).
    """
    data = load_yaml(file_name or f'{node_name}.yaml')
    for key in (node_name, '/' + node_name, '/**'):
        if key in data:
            return dict(data[key].get('ros__parameters', {}))
    raise ValueError(f'{config_path(file_name or node_name + ".yaml")}: '
                     f'no ros__parameters for node {node_name!r}')


#: Fast DDS 2.x and 3.x read the default profile from these variables.
PROFILE_VARIABLES = ('FASTDDS_DEFAULT_PROFILES_FILE', 'FASTRTPS_DEFAULT_PROFILES_FILE')
#: the profile for one host (shared memory + loopback UDP only) and the one
#: for a link between two machines (UDP on every interface)
HOST_PROFILE, LINK_PROFILE = 'fastdds.xml', 'fastdds_udp.xml'


def parse_peers(text: str) -> List[str]:
    """
    Return the hosts of a ``--peers`` value (comma or semicolon separated).

    Raises ``ValueError`` naming a malformed entry (IPs or host names only).
    """
    out = []
    for item in re.split(r'[,;\s]+', text or ''):
        if not item:
            continue
        if not re.fullmatch(r'[A-Za-z0-9][A-Za-z0-9.\-:]*', item):
            raise ValueError(f'--peers: {item!r} is not a host name or IP address')
        out.append(item)
    return out


def check_peers_resolve(peers: Sequence[str]) -> None:
    """
    Raise ``ValueError`` naming a peer that does not resolve to an address.

    Fast DDS refuses to create any participant with such a static peer
    (``Unable to resolve peer``): every node would die at start-up with an
    rclpy traceback.
    """
    import socket
    for peer in peers:
        try:
            socket.getaddrinfo(peer, None)
        except (OSError, UnicodeError) as err:
            raise ValueError(f'--peers: {peer!r} does not resolve to an address '
                             f'({err})') from None


def fast_dds_major() -> int:
    """
    Return the major version of the Fast DDS this process would load (0: unknown).

    Pip installs tell by their wheel (``ros-fastrtps`` 2.x, ``ros-fastdds``
    3.x); a ROS install by ``ROS_DISTRO`` (Humble, Iron, Jazzy: 2; Kilted,
    Rolling: 3).
    """
    from importlib import metadata
    found = []
    for dist, major in (('ros-fastrtps', 2), ('ros-fastdds', 3)):
        try:
            metadata.version(dist)
            found.append(major)
        except metadata.PackageNotFoundError:
            pass
    if len(found) == 1:
        return found[0]
    distro = os.environ.get('ROS_DISTRO', '')
    if distro in ('humble', 'iron', 'jazzy'):
        return 2
    return 3 if distro in ('kilted', 'rolling') else 0


def profile_environment(file_name: str) -> Dict[str, str]:
    """
    Return the Fast DDS profile variables set to ``config/<file_name>``.

    Fast DDS 2.x (Humble, Jazzy) reads only ``FASTRTPS_DEFAULT_PROFILES_FILE``
    and 3.x (Kilted) ``FASTDDS_DEFAULT_PROFILES_FILE``, so both names are set
    to the same file; only where Fast DDS 3.x is known to be installed
    (:func:`fast_dds_major`) the old name is left out, as its rmw reads it
    too but prints a deprecation warning in every process. When the user set
    either name, that file is used for the other one too (on Fast DDS 3.x:
    under the new name only); returns ``{}`` when every name this Fast DDS
    reads is set already.
    """
    user = [os.environ[v] for v in PROFILE_VARIABLES if os.environ.get(v)]
    path = user[0] if user else config_path(file_name)
    return {v: path for v in profile_variable_names() if not os.environ.get(v)}


def profile_variable_names() -> Tuple[str, ...]:
    """Return the profile variables to set: both, the new name only on Fast DDS 3.x."""
    if fast_dds_major() == 3:
        return ('FASTDDS_DEFAULT_PROFILES_FILE',)
    return PROFILE_VARIABLES


def dds_environment(peers: Sequence[str] = ()) -> Dict[str, str]:
    """
    Return environment variables for carla_hil's DDS set-up.

    One host (no ``peers``): discovery stays on this host
    (``ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST``; ``ROS_LOCALHOST_ONLY=1``
    on Humble, which has no discovery range) and ``config/fastdds.xml``,
    whose 64 MB shared-memory segment keeps camera images between
    processes in shared memory (no lossy UDP fragmentation) and whose UDP
    transport listens on the loopback interface only. Two machines
    (``peers`` named): discovery stays on this host plus the named peers
    (``ROS_STATIC_PEERS``) and ``config/fastdds_udp.xml`` (UDP on the
    interfaces). The profile goes into the variable names that Fast DDS
    2.x and 3.x read (:func:`profile_environment`).
    Variables the user already set win.
    """
    env: Dict[str, str] = {}
    env.update(profile_environment(LINK_PROFILE if peers else HOST_PROFILE))
    if os.environ.get('ROS_DISTRO', '') == 'humble':
        if not peers and 'ROS_LOCALHOST_ONLY' not in os.environ:
            env['ROS_LOCALHOST_ONLY'] = '1'
        return env
    if 'ROS_AUTOMATIC_DISCOVERY_RANGE' not in os.environ:
        env['ROS_AUTOMATIC_DISCOVERY_RANGE'] = 'LOCALHOST'
    if peers and 'ROS_STATIC_PEERS' not in os.environ:
        env['ROS_STATIC_PEERS'] = ';'.join(peers)
    return env
