#!/usr/bin/env bash
# Sourced by setup_env.sh and common.sh: forget the ROS library path a parent
# process inherited from another virtualenv. The ROS wheels' bootstrapper
# (ros_wheels_bootstrapper.pth) puts its venv's library directories in
# LD_LIBRARY_PATH and sets _ROS_WHEELS_BOOTSTRAP_COMPLETE; a script started
# from that python would hand both down, and this venv's python would then
# skip its own set-up and load the other distro's libraries (rclpy fails:
# libfastrtps.so.2.14 not found). Entries that are not a venv's are kept.
unset _ROS_WHEELS_BOOTSTRAP_COMPLETE
_carla_hil_keep=()
IFS=':' read -r -a _carla_hil_parts <<< "${LD_LIBRARY_PATH:-}"
for _carla_hil_p in "${_carla_hil_parts[@]}"; do
  case "$_carla_hil_p" in
    ''|*/site-packages/ros_*.libs) continue ;;
  esac
  if [ "$(basename "$_carla_hil_p")" = lib ] && [ -f "$(dirname "$_carla_hil_p")/pyvenv.cfg" ]; then
    continue
  fi
  _carla_hil_keep+=("$_carla_hil_p")
done
if [ "${#_carla_hil_keep[@]}" -gt 0 ]; then
  LD_LIBRARY_PATH="$(IFS=':'; echo "${_carla_hil_keep[*]}")"
  export LD_LIBRARY_PATH
else
  unset LD_LIBRARY_PATH
fi
unset _carla_hil_keep _carla_hil_parts _carla_hil_p
