#!/usr/bin/env bash
# Installs what is missing, builds, and runs the whole test suite twice: a normal build,
# then an ASan/UBSan build. Vulkan validation is on in every test; no Vulkan device is a failure.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh

export XDG_RUNTIME_DIR="${XDG_RUNTIME_DIR:-$(mktemp -d)}"
chmod 700 "$XDG_RUNTIME_DIR"
export GTK_A11Y=none NO_AT_BRIDGE=1

setup() { # dir, extra meson options...
  local dir=$1; shift
  if [ -f "$dir/build.ninja" ]; then meson setup --reconfigure "$dir" "$@" >/dev/null
  else meson setup "$dir" "$@" >/dev/null; fi
  meson compile -C "$dir"
}

setup build
xvfb-run -a meson test -C build --print-errorlogs

setup build-asan -Db_sanitize=address,undefined -Db_lundef=false -Dbuildtype=debug
ASAN_OPTIONS=detect_leaks=1 xvfb-run -a meson test -C build-asan --print-errorlogs --timeout-multiplier 3
