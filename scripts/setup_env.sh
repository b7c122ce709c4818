#!/usr/bin/env bash
# Create or refresh a project virtualenv from a pinned requirements file.
#   bash scripts/setup_env.sh                  # Kilted: requirements.txt -> .venv
#   bash scripts/setup_env.sh --distro jazzy   # Jazzy: requirements-jazzy.txt -> .venv-jazzy
# CARLA_HIL_DISTRO (kilted|jazzy) does the same as --distro; CARLA_HIL_VENV and
# CARLA_HIL_REQUIREMENTS override the venv directory and the requirements file.
# Re-running is a no-op when the requirements file has not changed.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck disable=SC1091
source "$root/scripts/ros_env.sh"
distro="${CARLA_HIL_DISTRO:-kilted}"
while [ "$#" -gt 0 ]; do
  case "$1" in
    --distro) distro="${2:?--distro needs kilted or jazzy}"; shift 2 ;;
    --distro=*) distro="${1#--distro=}"; shift ;;
    *) echo "setup_env.sh: unknown argument $1 (use --distro kilted|jazzy)" >&2; exit 2 ;;
  esac
done
case "$distro" in
  kilted) req_default="$root/requirements.txt"; venv_default="$root/.venv" ;;
  jazzy) req_default="$root/requirements-jazzy.txt"; venv_default="$root/.venv-jazzy" ;;
  *) echo "setup_env.sh: unknown distro '$distro' (kilted or jazzy)" >&2; exit 2 ;;
esac
req="${CARLA_HIL_REQUIREMENTS:-$req_default}"
venv="${CARLA_HIL_VENV:-$venv_default}"
stamp="$venv/.requirements.sha256"
want="$(sha256sum "$req" | cut -d' ' -f1)"
if [ ! -x "$venv/bin/python" ]; then
  echo "[setup] creating virtualenv $venv ($distro)"
  python3 -m venv "$venv"
fi
if [ "$(cat "$stamp" 2>/dev/null || true)" != "$want" ]; then
  echo "[setup] installing pinned requirements $(basename "$req") into $venv"
  # (pip's warnings about unreachable local index folders are noise)
  "$venv/bin/python" -m pip install --quiet --upgrade pip 2>&1 \
    | { grep -v 'is ignored: it is neither' || true; }
  "$venv/bin/python" -m pip install --quiet -r "$req" 2>&1 \
    | { grep -v 'is ignored: it is neither' || true; }
  "$venv/bin/python" -c 'import rclpy, numpy, cv2, sklearn, carla, yaml'
  echo "$want" > "$stamp"
fi
