#!/usr/bin/env bash
# The main job: the full closed loop on the built-in simulator (see README).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$root/scripts/common.sh"
export ROS_AUTOMATIC_DISCOVERY_RANGE="${ROS_AUTOMATIC_DISCOVERY_RANGE:-LOCALHOST}"
if [ "$#" -eq 0 ]; then
  set -- run --profile all --backend builtin --scenario trackdrive
fi
exec python -m hil_bridge.tools.cli "$@"
