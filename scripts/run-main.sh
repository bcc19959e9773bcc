#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Installs what is missing, builds, and runs the main job on the built-in demo:
#   - with a display: the workbench (`tomolab --demo`: NEMA phantom simulated on the DMI
#     scanner, OSEM running live in the window);
#   - headless: the same demo from the command line, writing demo/recon.nii.
# The first run computes the scanner's sensitivity image (about 25 s on a 2-core CPU-only
# Vulkan driver, README.md); it is cached in $XDG_CACHE_HOME/tomolab and later runs start at once.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh
if [ -f build/build.ninja ]; then meson setup --reconfigure build >/dev/null; else meson setup build >/dev/null; fi
meson compile -C build

./build/app/cli/tomolab-cli info
if [ -n "${DISPLAY:-}${WAYLAND_DISPLAY:-}" ]; then
  exec ./build/app/gui/tomolab --demo "$@"
fi

echo "run-main: no display: the demo runs headless and writes demo/recon.nii" >&2
mkdir -p demo
grid=108x108x36@5.56   # the DMI image grid, 2x coarser, as the window's demo uses
./build/app/cli/tomolab-cli simulate --phantom nema --scanner dmi --events 1e6 --seed 1 \
  --no-attenuation --grid "$grid" --truth demo/truth.nii -o demo/nema-dmi.tlm
./build/app/cli/tomolab-cli recon demo/nema-dmi.tlm --algo osem --subsets 2 --iterations 3 \
  --projector siddon --truth demo/truth.nii --profile -o demo/recon.nii
echo "run-main: wrote demo/recon.nii (truth: demo/truth.nii)" >&2
