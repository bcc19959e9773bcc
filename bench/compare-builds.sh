#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Runs bench/pet and bench/ct of two builds (e.g. before and after a change) alternately in one
# run, so both see the same machine and load: OLD NEW OLD NEW. Prints each run's key lines.
#   bench/compare-builds.sh OLD_BUILD_DIR NEW_BUILD_DIR [rounds]
set -euo pipefail
old=$1 new=$2 rounds=${3:-2}
pet_args=(--events 3e5 --repeat 3 --projector siddon)
ct_args=(--views 4 --cgls-views 7 --repeat 1 --no-fdk --size 128)
for r in $(seq "$rounds"); do
  for b in "$old" "$new"; do
    echo "== round $r: $b/bench/pet ${pet_args[*]}"
    "$b/bench/pet" "${pet_args[@]}" | grep -Ei "sub-iteration|fused|forward|back" || true
    echo "== round $r: $b/bench/ct ${ct_args[*]}"
    "$b/bench/ct" "${ct_args[@]}" | grep -Ei "cgls|forward|back" || true
  done
done
