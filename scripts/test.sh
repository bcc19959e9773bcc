#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Installs what is missing, builds, and runs the whole test suite twice: a normal build,
# then an ASan/UBSan build. Vulkan validation is on in every test; no Vulkan device is a failure.
# Then builds the Flatpak and checks it in its sandbox.
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

# meson's summary counts of a run (it prints "Ok: N" and "Fail: N" among others)
count() {
  local n
  n=$(awk -v k="$2:" '$1 == k { print $2 }' "$1/meson-logs/testlog.txt" 2>/dev/null | tail -n 1)
  echo "${n:-0}"
}
passed=0 failed=0 rc=0
run() { # build dir, meson test options...
  local dir=$1; shift
  # a screen as large as the largest window the GUI tests check (test-views: 1920x1080)
  xvfb-run -a -s "-screen 0 1920x1200x24" meson test -C "$dir" --print-errorlogs "$@" || rc=1
  passed=$((passed + $(count "$dir" Ok))) failed=$((failed + $(count "$dir" Fail) + $(count "$dir" Timeout)))
}

# each phase's wall time on stderr: CI's budget is 40 minutes on a quiet machine
phase() { echo "test.sh: $1 took $((SECONDS - phase_start)) s (total $SECONDS s)" >&2; phase_start=$SECONDS; }
phase_start=$SECONDS
setup build
phase "normal build"
run build
phase "normal suite"

setup build-asan -Db_sanitize=address,undefined -Db_lundef=false -Dbuildtype=debug
phase "ASan build"
export ASAN_OPTIONS=detect_leaks=1
run build-asan --timeout-multiplier 3
phase "ASan suite"

# ---- Short fuzz run (docs/reliability.md) ------------------------------------------------
# Every libFuzzer harness of tests/fuzz for 10^5 executions or 30 s, whichever comes first
# (clang-14, ASan + UBSan, round trips asserted inside): 26 harnesses, two at a time, some slow
# per input (fuzz-srm ~200/s, fuzz-petsird ~130/s), so the time cap keeps CI's budget (~7 min).
# Long runs: scripts/fuzz.sh 10000000 (their counts: docs/reliability.md, docs/formats.md).
if FUZZ_MAX_TIME=${FUZZ_MAX_TIME:-30} scripts/fuzz.sh 100000 2; then passed=$((passed + 1)); else failed=$((failed + 1)) rc=1; fi
phase "fuzz"
# ------------------------------------------------------------------------------------------

# ---- Flatpak ----------------------------------------------------------------------------
# The Flathub manifest built against a Debian 12 runtime made here (Flathub is out of reach),
# installed for a private flatpak user, and checked inside the sandbox: `tomolab-cli info`,
# a simulate + recon writing a NIfTI, the window's screenshot (scripts/flatpak-local.sh).
# Measured on 2 shared cores: cold (debootstrap + runtime export + app build) 7.5 min; with
# the runtime cached in build-flatpak/ 30 s.
flatpak_log=$(mktemp)
flatpak_rc=0
bash scripts/flatpak-local.sh 2>&1 | tee "$flatpak_log" || flatpak_rc=$?  # pipefail: the script's status
passed=$((passed + $(grep -c '^flatpak-check: PASS' "$flatpak_log" || true)))
flatpak_failed=$(grep -c '^flatpak-check: FAIL' "$flatpak_log" || true)
# A failure before the checks (runtime, build) counts as one.
if [ "$flatpak_rc" -ne 0 ]; then rc=1; if [ "$flatpak_failed" -eq 0 ]; then flatpak_failed=1; fi; fi
failed=$((failed + flatpak_failed))
rm -f "$flatpak_log"
phase "Flatpak"

echo "tests: $passed passed, $failed failed"
exit $rc
