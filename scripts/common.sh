#!/usr/bin/env bash
# Shared by run.sh and test.sh: set up the venv and build the package with colcon.
# CARLA_HIL_DISTRO=kilted (default: .venv, .colcon) or jazzy (.venv-jazzy, .colcon-jazzy).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck disable=SC1091
source "$root/scripts/ros_env.sh"
distro="${CARLA_HIL_DISTRO:-kilted}"
bash "$root/scripts/setup_env.sh" --distro "$distro"
case "$distro" in
  jazzy) venv="${CARLA_HIL_VENV:-$root/.venv-jazzy}"; ws="$root/.colcon-jazzy" ;;
  *) venv="${CARLA_HIL_VENV:-$root/.venv}"; ws="$root/.colcon" ;;
esac
set +u
# shellcheck disable=SC1091
source "$venv/bin/activate"
set -u
export COLCON_LOG_PATH="$ws/log"
cd "$root"
colcon build --base-paths "$root" --build-base "$ws/build" \
  --install-base "$ws/install" --symlink-install \
  --event-handlers console_cohesion- summary- >/dev/null
set +u
# shellcheck disable=SC1091
source "$ws/install/local_setup.bash"
set -u
