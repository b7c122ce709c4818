#!/usr/bin/env bash
# Two-host rig out of network namespaces (needs root): a thin wrapper of
# hil_bridge/netns_rig.py. Examples:
#   sudo scripts/netns_rig.sh up --profile gbit        # prints {"suffix": ...}
#   sudo scripts/netns_rig.sh exec --suffix S simpc python -m hil_bridge.tools.cli run --profile sim_pc
#   sudo scripts/netns_rig.sh exec --suffix S onboard python -m hil_bridge.tools.cli run --profile onboard
#   sudo scripts/netns_rig.sh down --suffix S
#   sudo scripts/netns_rig.sh cleanup                  # rigs left by dead processes
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
python="${CARLA_HIL_VENV:-$root/.venv}/bin/python"
[ -x "$python" ] || python=python3
cd "$root"
export PYTHONPATH="$root${PYTHONPATH:+:$PYTHONPATH}"
exec "$python" -m hil_bridge.tools.netns_rig "$@"
