#!/usr/bin/env bash
# Create or refresh the project virtualenv (.venv) from requirements.txt.
# Re-running is a no-op when requirements.txt has not changed.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="${CARLA_HIL_VENV:-$root/.venv}"
stamp="$venv/.requirements.sha256"
want="$(sha256sum "$root/requirements.txt" | cut -d' ' -f1)"
if [ ! -x "$venv/bin/python" ]; then
  echo "[setup] creating virtualenv $venv"
  python3 -m venv "$venv"
fi
if [ "$(cat "$stamp" 2>/dev/null || true)" != "$want" ]; then
  echo "[setup] installing pinned requirements"
  # (pip's warnings about unreachable local index folders are noise)
  "$venv/bin/python" -m pip install --quiet --upgrade pip 2>&1 \
    | { grep -v 'is ignored: it is neither' || true; }
  "$venv/bin/python" -m pip install --quiet -r "$root/requirements.txt" 2>&1 \
    | { grep -v 'is ignored: it is neither' || true; }
  "$venv/bin/python" -c 'import rclpy, numpy, cv2, sklearn, carla, yaml'
  echo "$want" > "$stamp"
fi
