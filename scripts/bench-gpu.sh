#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Tomolab on a Vulkan GPU (issue 17, item 3): builds a release tree, shows the device Tomolab
# picks, runs the non-GUI test suites, runs bench/pet (PET-DMI GPU case, non-TOF and TOF),
# bench/ops (array 256^3, 512^3, 1024^3 with the device's copy bandwidth), bench/ct (CT-cone GPU
# case) and bench/pet-mlem-scaling (van Gendt et al. 2021 Table 2), and prints the figures as the
# tables of
# bench/README.md with the GPU goals of issue 17, PASS or FAIL each.
#
#   scripts/bench-gpu.sh [--quick | --gpu-quick] [--build-dir DIR] [--no-build] [--no-tests]
#                        [--tests "T..."] [--benches LIST] [--allow-cpu] [--link-shared]
#                        [--logs DIR] [--out DIR] [--budget S] [--jobs N] [--report DIR]
#                        [--pack [FILE]] [--shared DIR] [--from-pack FILE]
#
#   --quick        tiny sizes: checks every step and the tables in minutes, on any device
#                  (lavapipe included); its figures are not the GPU case and decide nothing
#   --gpu-quick    the GPU case trimmed to one 10-minute command of a lent GPU machine, with
#                  --budget 420 unless given: the tests (8 at once), bench/pet non-TOF and TOF
#                  at 4e7 events (best of 2, C reference on 1e6), bench/ops 256^3 and 512^3,
#                  bench/pet-mlem-scaling as in the full run, then bench/ct --gpu with FDK on
#                  all 496 views, the projectors on 8 views and CGLS on 31 (scaled to 496);
#                  with a budget each bench is stopped where it would pass it. Estimate on an
#                  H100 (from the 2026-11-25 run's figures, bench/README.md "GPU figures"):
#                    tests ~150 s (31 of the 52 took 206 core-s on lavapipe here, its device
#                    work included; stopped at their share of the budget), pet ~55 s,
#                    pet --tof ~80 s, ops ~15 s, mlem ~25 s, ct ~60 s (with scatter
#                    adjoints ~1.5x the forward projection; with the gathers of that run,
#                    428 s per 496-view CGLS iteration, it would be stopped at the budget):
#                    ~385 s (6.4 min)
#                  The full sizes' estimate: pet 70 + 100 s, ct (31 views, best of 3) ~100 s
#                  with scatter adjoints (~400 s with the 2026-11-25 gathers), ops ~40 s,
#                  mlem 25 s: one or two commands after the tests.
#   --build-dir    build directory (default build-gpu): meson setup -Dbuildtype=release, tests
#                  and benchmarks on, MPI and Python off (fewer dependencies; MESON_OPTS adds)
#   --no-build     use DIR as it is (built elsewhere, or already built)
#   --no-tests     skip the test suites
#   --tests "..."  run these tests (names, or suites as --suite NAME) instead of the default
#   --benches LIST comma-separated subset of pet,ops,ct,mlem (default all; a device tool's
#                  10-minute command limit may need two runs)
#   --allow-cpu    run the GPU sizes even on a CPU device (hours on lavapipe)
#   --link-shared  when ../shared/data is missing but ./shared/data exists (a copy that travelled
#                  with the tree), link ../shared to it: six format tests read the real data there
#   --logs DIR     where the logs and summary.md go (default DIR/bench-gpu-logs/<time>)
#   --out DIR      on exit (also after a failure or SIGTERM) put DIR/summary.md and
#                  DIR/bench-gpu-logs.tar.gz (every log) there: e.g. a device tool's $OUT
#   --budget S     seconds for the whole run: a bench whose estimate (above) would end past
#                  it is skipped, one running past it stopped (timeout), each said so; the
#                  tests get what the benches' estimates leave (at least 60 s: the runner's
#                  --deadline). 0 = none (default, but --gpu-quick)
#   --jobs N       tests at once when run from a pack (default min(8, cores))
#   --report DIR   only print the tables again from the logs of an earlier run in DIR (e.g.
#                  logs brought back from a GPU machine); add --quick if that run was one
#   --pack [FILE]  after the build, pack what steps 2 to 4 run into FILE (.tar.gz, or .tar.xz:
#                  ~30 % smaller, a minute of xz; default DIR/tomolab-gpu-pack.tar.gz) for a
#                  GPU machine without Tomolab's build
#                  dependencies, then stop: tomolab-cli, the benches, libtomolab-compute and
#                  every library they load except glibc's, libstdc++, libgcc_s and the Vulkan
#                  loader; and (unless --no-tests) the test suite by scripts/gpu-pack-tests.py:
#                  every test executable but the gui, python and mpi suites, their list from
#                  meson introspect, tests/data, the ../shared/data folders the tests name (a
#                  copy inside the pack, never committed), the Vulkan validation layer and the
#                  runner (run-tests.py = scripts/gpu-test-runner.py). Binaries stripped;
#                  bench/pet's and bench/ct's C references built for x86-64-v3 (bench_march).
#   --shared DIR   with --pack: the real data the tests read (default ../shared/data)
#   --from-pack F  unpack such a file into DIR (default build-gpu-pack) and run steps 2 to 5
#                  from it with its libraries and validation layer (no build; the tests by its
#                  runner, in parallel, each with its timeout). The GPU machine's CPU must
#                  have the instruction set the benches were built for, and its glibc the
#                  version the pack needs (both checked, PACK-INFO).
#
# Device choice: Tomolab ranks discrete > integrated > virtual > CPU; TOMOLAB_DEVICE=<index or
# name substring> overrides it (passed through to every step). On a machine whose Vulkan loader
# or driver is not installed system-wide (e.g. a rented NVIDIA box): unpack the loader and point
# the loader at the driver's ICD first, e.g.
#   export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
# Exit status: 0 when every step ran and every test passed (goals are reported, not enforced),
# 1 when a step failed, 2 on bad arguments, 3 when the device is a CPU (without --quick or
# --allow-cpu).
set -euo pipefail
self=$(realpath "$0")
cd "$(dirname "$0")/.."

quick=0 gpu_quick=0 build=1 tests=1 allow_cpu=0 link_shared=0 budget="" jobs="" out="" shared=""
dir="" logs="" test_args="" report="" pack="" from_pack="" benches=pet,ops,ct,mlem
while [ $# -gt 0 ]; do
  case $1 in
    --quick) quick=1 ;;
    --gpu-quick) gpu_quick=1 ;;
    --budget) budget=$2; shift ;;
    --budget=*) budget=${1#*=} ;;
    --jobs) jobs=$2; shift ;;
    --jobs=*) jobs=${1#*=} ;;
    --out) out=$2; shift ;;
    --out=*) out=${1#*=} ;;
    --shared) shared=$2; shift ;;
    --shared=*) shared=${1#*=} ;;
    --build-dir) dir=$2; shift ;;
    --build-dir=*) dir=${1#*=} ;;
    --no-build) build=0 ;;
    --no-tests) tests=0 ;;
    --tests) test_args=$2; shift ;;
    --tests=*) test_args=${1#*=} ;;
    --allow-cpu) allow_cpu=1 ;;
    --link-shared) link_shared=1 ;;
    --logs) logs=$2; shift ;;
    --logs=*) logs=${1#*=} ;;
    --benches) benches=$2; shift ;;
    --benches=*) benches=${1#*=} ;;
    --pack) pack=default; if [ $# -gt 1 ] && [ "${2#-}" = "$2" ]; then pack=$2; shift; fi ;;
    --pack=*) pack=${1#*=} ;;
    --from-pack) from_pack=$2; shift ;;
    --from-pack=*) from_pack=${1#*=} ;;
    --report) report=$2; shift ;;
    --report=*) report=${1#*=} ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "bench-gpu: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done

if [ $quick = 1 ] && [ $gpu_quick = 1 ]; then
  echo "bench-gpu: --quick and --gpu-quick exclude each other" >&2; exit 2
fi
[ $gpu_quick = 1 ] && budget=${budget:-420}
budget=${budget:-0}
case "$budget" in ''|*[!0-9]*) echo "bench-gpu: --budget $budget: expected whole seconds" >&2; exit 2 ;; esac
case "${jobs:-1}" in ''|*[!0-9]*|0) echo "bench-gpu: --jobs $jobs: expected a count >= 1" >&2; exit 2 ;; esac

if [ -n "$from_pack" ]; then
  [ -f "$from_pack" ] || { echo "bench-gpu: --from-pack $from_pack: no such file" >&2; exit 2; }
  from_pack=$(realpath "$from_pack")
  dir=${dir:-build-gpu-pack} build=0
  if [ -e "$dir" ] && [ ! -f "$dir/PACK-INFO" ]; then
    echo "bench-gpu: $dir exists and is not an unpacked pack: not replacing it (--build-dir)" >&2; exit 2
  fi
  rm -rf "$dir" && mkdir -p "$dir"
  # tar picks gzip or xz by content; Python's tarfile where the xz program is missing
  tar -xf "$from_pack" -C "$dir" 2>/dev/null ||
    python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' "$from_pack" "$dir"
  pack_lib=$(realpath "$dir")/lib
  export LD_LIBRARY_PATH="$pack_lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  echo "unpacked $from_pack into $dir: $(head -n 1 "$dir/PACK-INFO" 2>/dev/null)"
  # every instruction-set extension the benches were built for (PACK-INFO) must be here too
  here=$(grep -m1 '^flags' /proc/cpuinfo | cut -d: -f2)
  missing=""
  # shellcheck disable=SC2013 # words on purpose
  for f in $(sed -n 's/^cpu flags: //p' "$dir/PACK-INFO"); do
    case " $here " in *" $f "*) ;; *) case $f in avx*|fma|bmi*|sse*|ssse3|f16c|movbe|popcnt|lzcnt|abm|adx|sha_ni|vaes|vpclmulqdq|gfni) missing="$missing $f" ;; esac ;; esac
  done
  if [ -n "$missing" ]; then
    echo "bench-gpu: warning: this CPU lacks$missing, which bench/pet and bench/ct were built for ($(sed -n 's/^bench march: //p' "$dir/PACK-INFO")): they may stop with an illegal instruction" >&2
  fi
  need=$(sed -n 's/^glibc needed: //p' "$dir/PACK-INFO")
  have=$(ldd --version 2>/dev/null | awk 'NR == 1 { print $NF }') # awk reads all: head would end ldd with SIGPIPE under pipefail
  if [ -n "$need" ] && [ -n "$have" ] && [ "$(printf '%s\n%s\n' "$need" "$have" | sort -V | head -n 1)" != "$need" ]; then
    echo "bench-gpu: warning: the pack's programs need glibc $need, this machine has $have: they will not start" >&2
  fi
  # the tests travel in the pack when it was made with them (scripts/gpu-pack-tests.py)
  [ -f "$dir/tests.json" ] || { [ $tests = 1 ] && echo "note: $from_pack carries no tests (packed with --no-tests)"; tests=0; }
fi
dir=${dir:-build-gpu}
case ",$benches," in *,pet,*|*,ops,*|*,ct,*|*,mlem,*) ;; *) echo "bench-gpu: --benches $benches: expected a subset of pet,ops,ct,mlem" >&2; exit 2 ;; esac
want() { case ",$benches," in *",$1,"*) return 0 ;; *) return 1 ;; esac; }
stamp=$(date +%Y%m%d-%H%M%S)
logs=${logs:-$dir/bench-gpu-logs/$stamp}
status=0
say() { printf '\n=== %s\n' "$*"; }
fail() { echo "bench-gpu: $*" >&2; status=1; }

# ---- sizes ----------------------------------------------------------------------------------
# est: seconds each step is expected to take on an H100 (--budget; --help says whence)
declare -A est
# GPU: the reference cases' GPU sizes (../shared/reference-cases.md). The C/OpenMP reference of
# bench/pet runs on 1/20 of the events (--cpu-events): its rate does not depend on the count.
# shellcheck disable=SC2054 # commas inside option values
if [ $quick = 1 ]; then
  pet_args=(--events 2e4 --repeat 1 --cpu-events 5e3)
  ops_args=(--sizes 32,64 --reps 2 --copy)
  ct_args=(--gpu --size 24 --detector 40x32 --views 4 --cgls-views 4 --repeat 1)
  mlem_args=(--sizes 8,16 --events 2e4 --iterations 2 --repeat 1)
  default_tests="device expr-parse"
  est=([tests]=60 [pet]=30 [pet-tof]=30 [ct]=20 [ops]=10 [mlem]=10)
elif [ $gpu_quick = 1 ]; then
  # the GPU cases within one 10-minute command: see --help for the estimate
  pet_args=(--events 4e7 --repeat 2 --cpu-events 1e6)
  ops_args=(--sizes 256,512 --reps 10 --copy)
  ct_args=(--gpu --views 8 --cgls-views 31 --repeat 1)
  mlem_args=(--sizes 32,128,512 --events 1e6 --iterations 20 --repeat 3)
  default_tests=""
  est=([tests]=150 [pet]=55 [pet-tof]=80 [ct]=60 [ops]=15 [mlem]=25)
else
  pet_args=(--events 4e7 --repeat 3 --cpu-events 2e6)
  ops_args=(--sizes 256,512,1024 --reps 10 --copy)
  ct_args=(--gpu --views 31 --cgls-views 31 --repeat 3)
  mlem_args=(--sizes 32,128,512 --events 1e6 --iterations 20 --repeat 3)
  default_tests=""
  est=([tests]=150 [pet]=70 [pet-tof]=100 [ct]=100 [ops]=40 [mlem]=25)
fi

if [ -n "$report" ]; then
  [ -f "$report/device.txt" ] || { echo "bench-gpu: $report/device.txt missing: not the logs of a run" >&2; exit 2; }
  logs=$report tests=0
  [ -f "$logs/tests.txt" ] && tests=1
else # steps 1 to 4; --report goes straight to the tables

# ---- 1. build -------------------------------------------------------------------------------
if [ $build = 1 ]; then
  say "1. build: $dir (release, tests and benchmarks on)"
  for tool in meson ninja; do
    command -v $tool >/dev/null || { echo "bench-gpu: $tool not found: scripts/install-deps.sh installs the build dependencies (or build elsewhere and use --no-build)" >&2; exit 1; }
  done
  # shellcheck disable=SC2206 # MESON_OPTS: words on purpose
  opts=(-Dbuildtype=release -Dtests=true -Dmpi=disabled -Dpython=disabled ${MESON_OPTS:-})
  # a pack runs on another machine's CPU: bench/pet's and bench/ct's C references for x86-64-v3
  if [ -n "$pack" ]; then opts+=(-Dbench_march=x86-64-v3); else opts+=(-Dbench_march=native); fi
  setup_log=$(mktemp)
  # --reconfigure: also takes options the tree gained since the directory was set up
  if [ -f "$dir/build.ninja" ]; then set -- --reconfigure; else set --; fi
  if ! meson setup "$@" "$dir" "${opts[@]}" >"$setup_log" 2>&1; then
    tail -n 20 "$setup_log" >&2
    echo "bench-gpu: meson setup failed (log: $setup_log); scripts/install-deps.sh installs what Tomolab needs on Debian 12, or build elsewhere and use --pack / --from-pack" >&2
    exit 1
  fi
  rm -f "$setup_log"
  meson compile -C "$dir"
fi
cli=$dir/app/cli/tomolab-cli
if [ -n "$pack" ]; then
  [ "$pack" = default ] && pack=$dir/tomolab-gpu-pack.tar.gz
  stage=$(mktemp -d)
  mkdir -p "$stage/app/cli" "$stage/bench" "$stage/compute" "$stage/lib"
  cp -a "$cli" "$stage/app/cli/"
  cp -a "$dir"/bench/{pet,ops,ct,pet-mlem-scaling} "$stage/bench/"
  cp -a "$dir"/compute/libtomolab-compute.so* "$stage/compute/"
  rm -rf "$stage/compute/"*.p
  # every library the programs load, but glibc's, the C++ runtime and the Vulkan loader
  ldd "$cli" "$dir"/bench/{pet,ops,ct,pet-mlem-scaling} | awk '$2 == "=>" && $3 ~ /^\// { print $1, $3 }' | sort -u |
    while read -r name path; do
      case $name in
        libc.so*|libm.so*|libdl.so*|libpthread.so*|librt.so*|libresolv.so*|ld-linux*|libvulkan.so*|libstdc++.so*|libgcc_s.so*|libtomolab-compute.so*) ;;
        *) cp -L "$path" "$stage/lib/$name" ;;
      esac
    done
  for f in "$stage/app/cli/tomolab-cli" "$stage"/bench/* "$stage"/compute/*.so* "$stage"/lib/*; do
    [ -L "$f" ] || strip --strip-unneeded "$f" 2>/dev/null || true
  done
  if [ $tests = 1 ]; then
    python3 scripts/gpu-pack-tests.py "$dir" "$stage" ${shared:+--shared "$shared"} || { rm -rf "$stage"; exit 1; }
  fi
  {
    echo "Tomolab $(git rev-parse --short HEAD 2>/dev/null || echo '?')$(git diff --quiet HEAD 2>/dev/null || echo '+changes'), $dir, packed $(date '+%Y-%m-%d %H:%M') on $(uname -m), glibc $(ldd --version | awk 'NR == 1 { print $NF }')"
    march=$(meson introspect --buildoptions "$dir" 2>/dev/null | python3 -c 'import json, sys; print(next((o["value"] for o in json.load(sys.stdin) if o["name"] == "bench_march"), "native"))' || echo native)
    echo "bench march: $march"
    if [ "$march" = x86-64-v3 ]; then
      echo "cpu flags: avx avx2 bmi1 bmi2 f16c fma movbe popcnt sse4_1 sse4_2 ssse3"
    else
      echo "cpu flags: $(grep -m1 '^flags' /proc/cpuinfo | cut -d: -f2 | xargs)"
    fi
    # the newest glibc symbol version any packed program or library asks for
    echo "glibc needed: $(find "$stage" -type f -exec grep -aoh 'GLIBC_2\.[0-9]*' {} + | sed 's/GLIBC_//' | sort -uV | tail -n 1)"
  } >"$stage/PACK-INFO"
  mkdir -p "$(dirname "$pack")"
  case $pack in
    *.tar.xz|*.txz) tar -cf - -C "$stage" . | xz -T0 >"$pack" ;;
    *) tar -czf "$pack" -C "$stage" . ;;
  esac
  echo "packed $(du -sh "$stage" | cut -f1) ($(find "$stage" -type f | wc -l) files) as $(du -h "$pack" | cut -f1) into $pack"
  rm -rf "$stage"
  echo "on the GPU machine: scripts/bench-gpu.sh --from-pack $pack --gpu-quick (bench/README.md, GPU figures)"
  exit 0
fi
mkdir -p "$logs"
# --out: the summary and every log in two files, whatever ends the run
# shellcheck disable=SC2317 # called by the trap
pack_out() {
  local rc=$?
  if [ -n "$out" ]; then
    mkdir -p "$out"
    # stopped before step 5: the tables of what ran, as --report makes them
    if [ ! -f "$logs/summary.md" ] && [ -f "$logs/device.txt" ]; then
      local again=(--report "$logs")
      if [ "$quick" = 1 ]; then again+=(--quick); elif [ "$gpu_quick" = 1 ]; then again+=(--gpu-quick); fi
      "$self" "${again[@]}" >/dev/null 2>&1 || true
    fi
    [ -f "$logs/summary.md" ] && cp "$logs/summary.md" "$out/"
    tar -czf "$out/bench-gpu-logs.tar.gz" -C "$(dirname "$logs")" "$(basename "$logs")" &&
      echo "bench-gpu: logs in $out/bench-gpu-logs.tar.gz$([ -f "$out/summary.md" ] && echo ", summary in $out/summary.md")"
  fi
  exit "$rc"
}
trap pack_out EXIT
trap 'echo "bench-gpu: stopped by a signal after $SECONDS s" >&2; exit 143' TERM INT
for exe in "$cli" "$dir/bench/pet" "$dir/bench/ops" "$dir/bench/ct" "$dir/bench/pet-mlem-scaling"; do
  [ -x "$exe" ] || { echo "bench-gpu: $exe is missing: build $dir first (without --no-build)" >&2; exit 1; }
done

# ---- 2. the device --------------------------------------------------------------------------
say "2. the Vulkan device Tomolab picks${TOMOLAB_DEVICE:+ (TOMOLAB_DEVICE=$TOMOLAB_DEVICE)}"
if ! "$cli" info >"$logs/device.txt" 2>&1; then
  cat "$logs/device.txt" >&2
  echo "bench-gpu: no usable Vulkan device. Is the loader installed (ldconfig -p | grep libvulkan)? Does VK_DRIVER_FILES (or VK_ICD_FILENAMES) name the driver's ICD json?" >&2
  exit 1
fi
# the devices, the chosen one, its features and limits (the registry and formats follow a blank line)
awk 'started && /^$/ { exit } /^Vulkan devices:/ { started = 1 } started' "$logs/device.txt"
device=$(sed -n 's/^Chosen device [0-9]*: //p' "$logs/device.txt" | head -n 1)
dtype=$(awk '/^Chosen device/ { c = 1 } c && $1 == "type" { $1 = ""; sub(/^ +/, ""); print; exit }' "$logs/device.txt")
for v in TOMOLAB_EXPR_LOCAL_SIZE TOMOLAB_EXPR_ITEMS TOMOLAB_EXPR_GROUPS TOMOLAB_EXPR_WIDTH TOMOLAB_SRM_LOCAL TOMOLAB_SUBMIT_BUDGET; do
  if [ -n "${!v:-}" ]; then echo "tuning override: $v=${!v}"; fi
done
if [ "$dtype" = CPU ] && [ $quick = 0 ] && [ $allow_cpu = 0 ]; then
  echo "bench-gpu: the chosen device ($device) is a CPU driver: the GPU sizes would take hours. Use --quick to check the script, --allow-cpu to insist, or TOMOLAB_DEVICE to pick a GPU." >&2
  exit 3
fi

# ---- 3. tests -------------------------------------------------------------------------------
skipped_note=""
if [ $tests = 1 ] && [ -n "$from_pack" ]; then
  say "3. tests (the pack's runner)"
  # --tests "a b --suite s" in the runner's words: a,b,suite:s
  rnames=$(awk '{ for (i = 1; i <= NF; i++) { if ($i == "--suite") { i++; printf "%ssuite:%s", sep, $i } else printf "%s%s", sep, $i; sep = "," } }' <<<"${test_args:-$default_tests}")
  rargs=(--pack "$dir" --logs "$logs/tests")
  [ -n "$rnames" ] && rargs+=(--tests "$rnames")
  [ -n "$jobs" ] && rargs+=(--jobs "$jobs")
  if [ "$budget" -gt 0 ]; then
    # the tests get what the selected benches' estimates leave of the budget, at least 60 s
    left=$((budget - SECONDS))
    for b in pet pet-tof ct ops mlem; do want "${b%-tof}" && left=$((left - est[$b])); done
    rargs+=(--deadline $((left > 60 ? left : 60)))
  fi
  echo "run-tests.py ${rargs[*]}"
  t0=$SECONDS
  if ! python3 "$dir/run-tests.py" "${rargs[@]}" 2>&1 | tee "$logs/tests.txt"; then
    fail "tests failed (log: $logs/tests.txt, one log per failing test in $logs/tests)"
  fi
  echo "tests $((SECONDS - t0)) s (estimate ${est[tests]} s)" >>"$logs/timings.txt"
  # what the pack left out, with the reasons
  python3 "$dir/run-tests.py" --pack "$dir" --list | sed -n 's/^\([^ ]*\) .*not packed: \(.*\)/\1: \2/p' >"$logs/tests-excluded.txt"
  {
    [ -n "$rnames" ] && printf 'only %s; ' "$rnames"
    echo "not in the pack: $(cut -d: -f1 "$logs/tests-excluded.txt" | paste -sd, - | sed 's/,/, /g') (reasons in tests-excluded.txt)"
  } | tee "$logs/tests-note.txt"
elif [ $tests = 1 ]; then
  say "3. tests"
  if [ ! -d ../shared/data ] && [ $link_shared = 1 ] && [ -d shared/data ]; then
    ln -s "$PWD/shared" ../shared && echo "linked ../shared -> $PWD/shared"
  fi
  [ -d ../shared/data ] || echo "note: ../shared/data is missing: format-mmr, format-castor, format-dxchange, format-interfile, format-metaimage and format-stir read it and will fail (see --link-shared)"
  if ! TOMOLAB_VALIDATE=1 "$cli" info >/dev/null 2>&1; then
    echo "note: the Vulkan validation layer is not installed here; every test turns it on (TOMOLAB_VALIDATE=1), so every device test will fail (Debian: vulkan-validationlayers)"
  fi
  # every suite but gui (needs a display: xvfb-run), unless --tests names others
  suites=$(meson test -C "$dir" --no-rebuild --list 2>/dev/null | sed -n 's/^[^:]*:\([^ ]*\) \/ .*/\1/p' | sort -u)
  if [ -n "$test_args" ]; then
    # shellcheck disable=SC2206 # names on purpose
    targs=($test_args)
  elif [ -n "$default_tests" ]; then
    # shellcheck disable=SC2206
    targs=($default_tests)
    skipped_note="--quick: only $default_tests (the full suites are long on lavapipe)"
  else
    targs=()
    for s in $suites; do [ "$s" = gui ] || targs+=(--suite "$s"); done
    skipped_note="not run: suite gui (window tests need a display: run 'xvfb-run -a meson test -C $dir --suite gui' where Xvfb is installed); MPI and Python suites are off in this build"
  fi
  echo "meson test -C $dir ${targs[*]}"
  t0=$SECONDS
  if ! meson test -C "$dir" --no-rebuild --print-errorlogs "${targs[@]}" 2>&1 | tee "$logs/tests.txt"; then
    fail "tests failed (log: $logs/tests.txt, $dir/meson-logs/testlog.txt)"
  fi
  echo "tests $((SECONDS - t0)) s" >>"$logs/timings.txt"
  if [ -n "$skipped_note" ]; then echo "$skipped_note" | tee "$logs/tests-note.txt"; fi
fi

# ---- 4. benchmarks --------------------------------------------------------------------------
bench() { # name, log, args...
  local name=$1 log=$2 key t0; shift 2
  key=${log/pet-mlem-scaling/mlem}
  if [ "$budget" -gt 0 ] && [ $((SECONDS + est[$key])) -gt "$budget" ]; then
    echo "skipped: bench/$name $* (at $SECONDS s its estimate of ${est[$key]} s would pass the --budget of $budget s)" | tee -a "$logs/skipped.txt"
    return
  fi
  echo "+ $dir/bench/$name $*"
  t0=$SECONDS
  # with a budget, a bench running past it is stopped (its log keeps what it printed) so that
  # the rest of the run and the summary still fit
  local limit=() rc
  [ "$budget" -gt 0 ] && limit=(timeout -k 5 $((budget - SECONDS)))
  set +e
  "${limit[@]}" "$dir/bench/$name" "$@" 2>&1 | tee "$logs/$log.txt"
  rc=${PIPESTATUS[0]}
  set -e
  if [ "$rc" = 124 ] && [ "$budget" -gt 0 ]; then
    fail "bench/$name $* stopped at the --budget of $budget s (log: $logs/$log.txt)"
    echo "stopped: bench/$name $* ran past the --budget of $budget s" >>"$logs/skipped.txt"
  elif [ "$rc" != 0 ]; then
    fail "bench/$name $* failed (log: $logs/$log.txt)"
  fi
  echo "$log $((SECONDS - t0)) s (estimate ${est[$key]} s)" >>"$logs/timings.txt"
}
say "4. benchmarks on $device"
if want pet; then
  bench pet pet "${pet_args[@]}"
  bench pet pet-tof "${pet_args[@]}" --tof
fi
if want ops; then bench ops ops "${ops_args[@]}"; fi
# CT last: its time on a GPU is the least known (--budget stops it, not the others)
if want mlem; then bench pet-mlem-scaling pet-mlem-scaling "${mlem_args[@]}"; fi
if want ct; then bench ct ct "${ct_args[@]}"; fi
echo "the whole run $SECONDS s$([ "$budget" -gt 0 ] && echo " (--budget $budget s)")" >>"$logs/timings.txt"
fi # steps 1 to 4

device=$(sed -n 's/^Chosen device [0-9]*: //p' "$logs/device.txt" | head -n 1)
dtype=$(awk '/^Chosen device/ { c = 1 } c && $1 == "type" { $1 = ""; sub(/^ +/, ""); print; exit }' "$logs/device.txt")
skipped_note=$(cat "$logs/tests-note.txt" 2>/dev/null || true)

# ---- 5. tables ------------------------------------------------------------------------------
# 1.23e+06 -> 1.23·10⁶, as bench/README.md writes rates
awk_sci='function sci(x,   m, e, s, i, d, sup) {
  if (x !~ /e[+-]/) return x
  split("⁰ ¹ ² ³ ⁴ ⁵ ⁶ ⁷ ⁸ ⁹", sup, " ")
  m = x; sub(/e.*/, "", m); e = x; sub(/.*e/, "", e); e = e + 0
  s = e < 0 ? "⁻" : ""; if (e < 0) e = -e
  d = ""; do { d = sup[e % 10 + 1] d; e = int(e / 10) } while (e > 0)
  return m "·10" s d
}'

pet_table() { # logs of the non-TOF and TOF runs
  echo "| projector | | device ev/s | C/OpenMP ev/s | dev / C | core-time |"
  echo "|---|---|---|---|---|---|"
  awk "$awk_sci"'
    substr($0, 10, 20) ~ /^(forward|back|fused)/ && substr($0, 1, 8) ~ /^(siddon|joseph| *$)/ {
      p = substr($0, 1, 8); gsub(/ /, "", p); if (p != "") proj = p
      what = substr($0, 10, 20); sub(/ +$/, "", what)
      n = split(substr($0, 30), f, " ")
      name = (proj != last) ? toupper(substr(proj, 1, 1)) substr(proj, 2) : ""; last = proj
      if (what ~ /fused/) what = "**" what "**"
      for (i = 3; i <= 4; i++) sub(/x$/, "×", f[i])
      printf "| %s | %s | %s | %s | %s | %s |\n", name, what, sci(f[1]), sci(f[2]), f[3], f[4]
    }
    FNR == 1 { last = "" }' "$@"
}

ops_table() {
  awk '
    /^n = / { size = $3; sub(/\^.*/, "", size); sizes[++ns] = size; next }
    /^  / && size {
      expr = substr($0, 3, 24); sub(/ +$/, "", expr)
      n = split(substr($0, 27), f, " ")
      if (f[1] !~ /^[0-9]+$/) next
      if (!(expr in seen)) { seen[expr] = 1; order[++ne] = expr; bel[expr] = f[1] }
      gbs[expr, size] = f[4]; rc[expr, size] = (n >= 6 ? f[6] : "-")
    }
    END {
      h = "| expression | B/el |"; l = "|---|---:|"
      for (i = 1; i <= ns; i++) { h = h " " sizes[i] "³ GB/s | /copy |"; l = l "---:|---:|" }
      print h; print l
      for (j = 1; j <= ne; j++) {
        x = order[j]; row = "| `" x "` | " bel[x] " |"
        for (i = 1; i <= ns; i++) row = row " " gbs[x, sizes[i]] " | " rc[x, sizes[i]] " |"
        print row
      }
    }' "$1"
}

ct_table() {
  local views
  views=$(sed -n 's/^phantom and \([0-9]*\) views.*/\1/p' "$1")
  echo "| | wall s ($views views) | s (496 views) | GUPS |"
  echo "|---|---:|---:|---:|"
  awk '
    /^(back|forward) / && NF > 5 && $(NF - 4) ~ /^[0-9.]+$/ {
      # the label, then wall s, core s, s (496 v), GUPS, GUPS/core
      what = $1; for (i = 2; i <= NF - 5; i++) what = what " " $i
      printf "| %s | %s | %s | %s |\n", what, $(NF - 4), $(NF - 2), $(NF - 1)
    }' "$1"
  sed -n 's/^\([a-z]* *back \/ forward:.*\)$/- \1/p; s/^\(CGLS (.*) on .*per iteration\)$/- \1/p' "$1"
  sed -n 's/^\(FDK, 496 views.*dB\)$/- \1/p' "$1"
}

mlem_table() {
  echo "| image | voxel mm | end-to-end s | per iteration s | van Gendt et al. 2021 V100 basic s | V100 optimised s | QETIR (CPU) s |"
  echo "|---|---|---:|---:|---:|---:|---:|"
  awk '/^[0-9]+\^3 / {
      size = $1; sub(/\^3/, "³", size)
      printf "| %s | %s %s %s %s %s | %s | %s | %s | %s | %s |\n", size, $2, $3, $4, $5, $6, $7, $8, $12, $13, $11
    }' "$1"
}

# value of a goal figure, or empty
pet_sub_tof() { # projector
  awk -v want="$1" '
    substr($0, 1, 8) ~ /[a-z]/ { p = substr($0, 1, 8); gsub(/ /, "", p) }
    p == want && /fused sub-iter. TOF/ { split(substr($0, 30), f, " "); print f[1]; exit }' "$logs/pet-tof.txt" 2>/dev/null || true
}
ops_worst() { # "ratio expression size" of the lowest /copy at the largest size
  awk '
    /^n = / { size = $3; sub(/\^.*/, "", size); next }
    /^  / && size {
      expr = substr($0, 3, 24); sub(/ +$/, "", expr)
      n = split(substr($0, 27), f, " ")
      if (f[1] !~ /^[0-9]+$/ || n < 6 || expr ~ /^(C triad|device copy)/) next
      if (size != cur) { cur = size; worst = "" }
      if (worst == "" || f[6] + 0 < worst + 0) { worst = f[6]; wx = expr }
    }
    END { if (worst != "") print worst, cur, wx }' "$logs/ops.txt" 2>/dev/null || true
}
mlem_128() { awk '/^128\^3 / { print $7; exit }' "$logs/pet-mlem-scaling.txt" 2>/dev/null || true; }
verdict() { awk -v a="$1" -v b="$2" -v op="$3" 'BEGIN { if (a == "") print "not measured"; else if ((op == ">=" && a + 0 >= b + 0) || (op == "<" && a + 0 < b + 0)) print "PASS"; else print "FAIL" }'; }

summary=$logs/summary.md
{
  echo "## GPU figures: $device ($dtype), $(date '+%Y-%m-%d %H:%M')"
  echo
  if [ $quick = 1 ]; then
    echo "**--quick run: tiny sizes, not the GPU case; the verdicts below only check the script.**"
    echo
  fi
  echo "Driver: $(awk '/^Chosen device/ { c = 1 } c && $1 == "driver" { $1 = ""; sub(/^ +/, ""); print; exit }' "$logs/device.txt"); \
subgroup size $(awk '$1 == "subgroup" { print $3; exit }' "$logs/device.txt"); host: $(sed -n 's/^host: *//p' "$logs/ops.txt" 2>/dev/null || nproc)"
  echo
  if [ -f "$logs/pet.txt" ] && [ -f "$logs/pet-tof.txt" ]; then
  echo "### bench/pet — PET-DMI ($(sed -n 's/^PET-DMI non-TOF: \([0-9]*\) events.*/\1/p' "$logs/pet.txt") events; bench/pet ${pet_args[*]})"
  echo
  sed -n 's/^\(C\/OpenMP reference on .*\)$/\1/p' "$logs/pet.txt"
  echo
  pet_table "$logs/pet.txt" "$logs/pet-tof.txt"
  echo
  fi
  if [ -f "$logs/ops.txt" ]; then
  echo "### bench/ops — array expressions (bench/ops ${ops_args[*]})"
  echo
  ops_table "$logs/ops.txt"
  echo
  echo "/copy: GB/s over the device's own buffer copy (vkCmdCopyBuffer, 8 B/el) of the same size in the same run."
  echo
  if grep -q "exceeds this device's largest allocation" "$logs/ops.txt"; then
    echo "**A size was refused:** $(grep -m1 "exceeds this device's largest allocation" "$logs/ops.txt") — tl_array_new takes maxMemoryAllocationSize as a hard limit; NVIDIA reports about 4 GiB there although larger buffers work (compute/core/tl-array.c, not this script)."
    echo
  fi
  fi
  if [ -f "$logs/ct.txt" ]; then
  echo "### bench/ct — CT-cone (bench/ct ${ct_args[*]})"
  echo
  sed -n 's/^\(CT-cone .*\)$/\1/p' "$logs/ct.txt"
  echo
  ct_table "$logs/ct.txt"
  echo
  fi
  if [ -f "$logs/pet-mlem-scaling.txt" ]; then
  echo "### bench/pet-mlem-scaling — van Gendt et al. 2021 Table 2 (bench/pet-mlem-scaling
          # ${mlem_args[*]})"
  echo
  mlem_table "$logs/pet-mlem-scaling.txt"
  echo
  fi
  echo "### Goals (issue 17)"
  echo
  echo "| goal | target | measured | result |"
  echo "|---|---|---|---|"
  for p in siddon joseph; do
    v=$(pet_sub_tof $p)
    shown=$(awk "$awk_sci"' { print sci($1) }' <<<"${v:-—}")
    echo "| PET-DMI full OSEM sub-iteration (fused EM + update), TOF, $p | ≥ 2·10⁸ events/s | $shown ev/s | $(verdict "$v" 2e8 ">=") |"
  done
  read -r worst wsize wexpr <<<"$(ops_worst)" || true
  echo "| array expressions / device copy bandwidth (worst expression, ${wsize:-?}³) | ≥ 0.85 | ${worst:-—} (\`${wexpr:-}\`) | $(verdict "${worst:-}" 0.85 ">=") |"
  v=$(mlem_128)
  echo "| van Gendt et al. 2021 Table 2, 128³, 20 MLEM iterations end to end | < 3.05 s | ${v:+$v s}${v:-—} | $(verdict "$v" 3.05 "<") |"
  echo
  if [ -n "$skipped_note" ]; then echo "Tests: $skipped_note"; echo; fi
  if [ $tests = 1 ] && grep -qE '^[0-9]+ passed, [0-9]+ failed$' "$logs/tests.txt"; then
    # the pack's runner: its last line, the failures and what it did not run
    echo "Test results (the pack's runner): $(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$logs/tests.txt" | tail -n 1)"
    sed -n 's/^not ok [0-9]* - \([^ ]*\) \([0-9.]* s\): \(.*\); log .*/- not ok \1 (\2): \3/p; s/^# not run: /- not run: /p; s/^# \(slowest: .*\)/- \1/p; s/^# \(wall .*\)/- tests \1/p' "$logs/tests.txt"
  elif [ $tests = 1 ]; then
    echo "Test results: $(grep -E '^(Ok|Fail|Skipped|Timeout|Expected Fail|Unexpected Pass):' "$logs/tests.txt" | tr -s ' ' | sed 's/ *$//' | paste -sd ',' - | sed 's/,/, /g')"
  fi
  if [ -f "$logs/timings.txt" ]; then
    echo
    echo "Seconds per step: $(paste -sd ';' "$logs/timings.txt" | sed 's/;/; /g')"
  fi
  if [ -f "$logs/skipped.txt" ]; then
    echo
    sed 's/^/- /' "$logs/skipped.txt"
  fi
} >"$summary"

say "5. figures (bench/README.md format; also in $summary)"
cat "$summary"
[ $status = 0 ] || echo "bench-gpu: some steps failed (see above)" >&2
exit $status
