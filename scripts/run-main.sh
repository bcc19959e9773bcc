#!/usr/bin/env bash
# Installs what is missing, builds, and runs the main job: `tomolab-cli info`, then the
# window (on a display if there is one; otherwise a screenshot rendered on a virtual one).
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh
if [ -f build/build.ninja ]; then meson setup --reconfigure build >/dev/null; else meson setup build >/dev/null; fi
meson compile -C build

./build/app/cli/tomolab-cli info
if [ -n "${DISPLAY:-}${WAYLAND_DISPLAY:-}" ]; then
  exec ./build/app/gui/tomolab "$@"
else
  echo "run-main: no display; rendering the window to tomolab-window.png on a virtual one" >&2
  export XDG_RUNTIME_DIR="${XDG_RUNTIME_DIR:-$(mktemp -d)}" GTK_A11Y=none
  xvfb-run -a ./build/app/gui/tomolab --screenshot tomolab-window.png
fi
