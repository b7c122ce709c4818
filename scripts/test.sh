#!/usr/bin/env bash
# The whole test suite: set-up, colcon build, colcon test, fail on any failure.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$root/scripts/common.sh"
export ROS_AUTOMATIC_DISCOVERY_RANGE="${ROS_AUTOMATIC_DISCOVERY_RANGE:-LOCALHOST}"
colcon test --base-paths "$root" --build-base "$ws/build" \
  --install-base "$ws/install" --event-handlers console_direct+ \
  --pytest-args "$@"
colcon test-result --test-result-base "$ws/build" --verbose
