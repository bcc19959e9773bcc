#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Builds the Flathub manifest flatpak/org.tomolab.Tomolab.yml on a machine that cannot reach
# Flathub, installs the app for a private flatpak user and checks it inside the sandbox:
#   1. `tomolab-cli info` sees a Vulkan device;
#   2. a small PET simulate + recon writes a NIfTI into the app's own ~/.var/app folder;
#   3. the window starts under Xvfb and saves a screenshot there.
# It also writes the single-file bundle build-flatpak/tomolab.flatpak.
#
# The GNOME runtime is replaced by one made from Debian 12 packages (debootstrap, then
# `flatpak build-export --runtime`), the same packages the source build uses, so it already
# carries cglm and nifticlib: flatpak/local-manifest.py derives the local manifest from the
# Flathub one by changing the runtime lines, dropping those modules, building this checkout
# and skipping appstream-compose. The runtime doubles as the SDK (compilers included). It is
# cached under build-flatpak/ and keyed by its package list, so later runs only rebuild the app.
#
# Environment: TOMOLAB_FLATPAK_CACHE (cache folder, default build-flatpak/ in the checkout),
# TOMOLAB_DEBIAN_MIRROR (default: the first Debian mirror in /etc/apt).
set -euo pipefail
cd "$(dirname "$0")/.."
src=$PWD

app=org.tomolab.Tomolab
branch=12
# One ref serves as runtime and SDK: exporting and installing 1 GiB twice would double the
# cold cost for nothing.
platform=org.tomolab.Debian
sdk=$platform
cache=${TOMOLAB_FLATPAK_CACHE:-$src/build-flatpak}
mkdir -p "$cache"
cache=$(cd "$cache" && pwd)
# A private installation: nothing lands in the user's own flatpak folders, nor flatpak's
# instance folders in their cache.
export FLATPAK_USER_DIR=$cache/user XDG_CACHE_HOME=$cache/xdg-cache

sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
t0=$SECONDS
say() { echo "flatpak-local: [$((SECONDS - t0))s] $*" >&2; }

mirror=${TOMOLAB_DEBIAN_MIRROR:-$(grep -rhoE 'https?://[^ ]+/debian/?( |$)' /etc/apt/sources.list /etc/apt/sources.list.d/ 2>/dev/null | head -n 1 | tr -d ' ' || true)}
mirror=${mirror:-http://deb.debian.org/debian}

# What the app needs to build and to run, as in scripts/install-deps.sh, plus what a desktop
# session would otherwise provide (fonts, icons, MIME data) and what flatpak-builder calls in
# the SDK (ldconfig; ccache: a cached run recompiles only what changed; elfutils for debugging
# in the SDK, while flatpak-builder strips with the host's).
packages=(
  gcc libc6-dev pkg-config meson ninja-build elfutils ccache
  glslang-tools glslang-dev spirv-tools
  libvulkan-dev mesa-vulkan-drivers
  libglib2.0-dev libcglm-dev libniftiio-dev libnifti2-dev libznz-dev
  libgtk-4-dev libadwaita-1-dev libgtksourceview-5-dev
  fonts-cantarell adwaita-icon-theme hicolor-icon-theme shared-mime-info
  dbus-x11   # debootstrap does not pick a provider of dconf-service's dbus-session-bus
  g++ libhdf5-dev libdcmtk-dev libtiff-dev   # Data Exchange HDF5, DICOM (DCMTK is C++), TIFF stacks
)
key=$(printf '%s\n' bookworm "${packages[@]}" | sha256sum | cut -c1-12)
tree=$cache/runtime-$key

# 1. The Debian system, keyed by its package list.
if [ ! -f "$tree/complete" ]; then
  say "debootstrap bookworm from $mirror into $tree (cold: minutes)"
  $sudo rm -rf --one-file-system "$tree"  # never into a mount a killed debootstrap left
  mkdir -p "$tree"
  $sudo debootstrap --variant=minbase --include="$(IFS=,; echo "${packages[*]}")" \
    bookworm "$tree/root" "$mirror" > "$cache/debootstrap.log" 2>&1 \
    || { tail -n 30 "$cache/debootstrap.log" >&2; exit 1; }
  $sudo rm -rf "$tree/root/var/cache/apt/archives" "$tree/root/var/lib/apt/lists"
  if [ -n "$sudo" ]; then $sudo chown -R "$(id -u):$(id -g)" "$tree"; fi
  touch "$tree/complete"
  for old in "$cache"/runtime-*; do  # trees of earlier package lists
    if [ "$old" != "$tree" ]; then $sudo rm -rf --one-file-system "$old"; fi
  done
fi

# 2. Made into a runtime: /usr with the system's /etc as /usr/etc (flatpak mounts the runtime's
#    files/ on /usr and files/etc on /etc). Bump layout when this step changes.
layout=3
if [ "$(cat "$tree/layout" 2>/dev/null || true)" != "$layout" ]; then
  root=$tree/root
  if [ -d "$root/etc" ]; then rm -rf "$root/usr/etc"; mv "$root/etc" "$root/usr/etc"; fi
  # Flatpak provides these inside the sandbox; the shadow files are unreadable to a user anyway.
  rm -f "$root/usr/etc/"{passwd,group,shadow,gshadow}{,-} "$root/usr/etc/"{hosts,resolv.conf,machine-id,mtab}
  # Flatpak rebuilds ld.so.cache for the app only when the runtime has /usr/bin/ldconfig
  # (Debian's is in sbin), from the runtime's ld.so.conf alone (ld.so.conf.d is not mounted
  # then): it must name the app's folders itself (meson's libdir in a Debian SDK is
  # lib/x86_64-linux-gnu) as well as the runtime's.
  ln -sfn ../sbin/ldconfig "$root/usr/bin/ldconfig"
  rm -f "$root/usr/etc/ld.so.conf.d/00-flatpak-app.conf"
  printf '%s\n' /app/lib /app/lib/x86_64-linux-gnu /app/lib64 \
    /usr/lib/x86_64-linux-gnu /usr/local/lib 'include /etc/ld.so.conf.d/*.conf' \
    > "$root/usr/etc/ld.so.conf"
  rm -f "$tree"/metadata.*
  printf '[Runtime]\nname=%s\nruntime=%s/x86_64/%s\nsdk=%s/x86_64/%s\n' \
    "$platform" "$platform" "$branch" "$sdk" "$branch" > "$tree/metadata"
  echo "$layout" > "$tree/layout"
fi

# 3. Exported and installed for the private user (skipped when this tree is already installed).
if [ "$(cat "$cache/installed-runtime" 2>/dev/null || true)" != "$key-$layout" ]; then
  say "export and install the runtime and SDK $platform//$branch"
  rm -rf "$cache/runtime-repo"
  flatpak build-export --runtime --files=root/usr \
    --subject="Debian 12 packages ($key, layout $layout)" "$cache/runtime-repo" "$tree" "$branch" >/dev/null
  rm -rf "$FLATPAK_USER_DIR"  # the private installation: earlier runtimes and the app go
  flatpak remote-add --user --no-gpg-verify tomolab-debian "$cache/runtime-repo"
  flatpak install --user -y --noninteractive --reinstall tomolab-debian "$platform//$branch" >/dev/null
  echo "$key-$layout" > "$cache/installed-runtime"
fi

# 4. The local manifest and the app, built from this checkout (what git ignores is skipped:
#    build folders and this cache).
say "flatpak-builder $app"
manifest=$cache/$app.json
mapfile -t ignored < <(git ls-files --others --ignored --exclude-standard --directory | sed 's:/$::')
python3 flatpak/local-manifest.py flatpak/$app.yml "$src" "$platform" "$sdk" "$branch" \
  "${ignored[@]}" > "$manifest"
flatpak-builder --user --install --force-clean --disable-rofiles-fuse --disable-updates --ccache \
  --state-dir="$cache/builder-state" --repo="$cache/repo" "$cache/app-build" "$manifest" \
  > "$cache/builder.log" 2>&1 || { tail -n 40 "$cache/builder.log" >&2; exit 1; }
flatpak build-bundle "$cache/repo" "$cache/tomolab.flatpak" "$app" >/dev/null
say "bundle $cache/tomolab.flatpak ($(du -h "$cache/tomolab.flatpak" | cut -f1))"

# 5. Checks inside the sandbox, with a HOME of their own: what the app writes lands in
#    $HOME/.var/app/$app (its XDG folders), which the sandbox may write without a portal.
check_home=$(mktemp -d "$cache/check-home.XXXXXX")
trap 'rm -rf "$check_home"' EXIT
data=$check_home/.var/app/$app/data
mkdir -p "$data"
run_app() { HOME=$check_home flatpak run --user "$@"; }
failed=0
check() { # name, command...
  local name=$1; shift
  if "$@" > "$check_home/$name.log" 2>&1; then echo "flatpak-check: PASS $name"
  else echo "flatpak-check: FAIL $name"; tail -n 30 "$check_home/$name.log" >&2; failed=$((failed + 1)); fi
}

check_info() {
  run_app --command=tomolab-cli "$app" info > "$check_home/info.txt"
  cat "$check_home/info.txt"
  grep -q '^Chosen device [0-9]*: ' "$check_home/info.txt"
}
check_recon() {
  # A 192-crystal ring: the presets' sensitivity images take minutes on lavapipe.
  printf '%s\n' 'kind = ring' 'rings = 4' 'sides = 12' 'crystals_per_side = 4' \
    'crystal_pitch_mm = 4' 'radius_mm = 60' 'ring_pitch_mm = 4' > "$data/tiny.scanner"
  run_app --command=tomolab-cli "$app" simulate --phantom cylinder --scanner "$data/tiny.scanner" \
    --grid 24x24x8@2 --events 2e4 --seed 1 --no-attenuation -o "$data/scan.tlm"
  run_app --command=tomolab-cli "$app" recon "$data/scan.tlm" --algo osem --subsets 2 \
    --iterations 1 -o "$data/recon.nii"
  # NIfTI-1 single file: "n+1\0" at byte 344
  [ "$(dd if="$data/recon.nii" bs=1 skip=344 count=3 status=none)" = "n+1" ]
}
check_window() {
  GTK_A11Y=none GSK_RENDERER=cairo GDK_DEBUG=gl-disable xvfb-run -a \
    env HOME="$check_home" flatpak run --user --env=GSK_RENDERER=cairo --env=GDK_DEBUG=gl-disable \
    --env=GTK_A11Y=none "$app" --screenshot "$data/window.png"
  [ "$(head -c 8 "$data/window.png" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ]
}
check info check_info
check simulate-recon check_recon
check window check_window
say "done: $((3 - failed)) of 3 sandbox checks passed"
[ "$failed" -eq 0 ]
