#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# bench/mpi: list-mode TOF OSEM with attenuation, 1 rank against 2 ranks, one lavapipe thread
# per rank (LP_NUM_THREADS=1), measured in one run (see bench/README.md, section bench/mpi).
#
#   bench/mpi/run.sh [TOMOLAB-CLI] [EVENTS] [GRID] [REPEAT]
#
# Prints, per configuration, the best sub-iteration time of REPEAT alternating runs (the
# reconstruction loop only: the CLI's "N sub-iterations in X s", after a warm-up run that
# fills the sensitivity and pipeline caches), the efficiency T1 / (2 T2), and for 2 ranks the
# share of the loop spent summing images (TOMOLAB_MPI_PIECES=2: overlapped pieces; =1: one
# blocking MPI_Allreduce).
set -euo pipefail
CLI=${1:-build/app/cli/tomolab-cli}
EVENTS=${2:-200000}
GRID=${3:-96x96x4@4}
REPEAT=${4:-2}
CLI=$(realpath "$CLI")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export XDG_CACHE_HOME=$tmp/cache LP_NUM_THREADS=1 OMP_NUM_THREADS=1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl_vader_single_copy_mechanism=none
# waiting ranks yield their core instead of polling: on a machine shared with other jobs (or
# with more ranks than cores) polling ranks steal the time slices the other rank needs to
# reach the sum (measured: the sums' share 14-24 % of the loop polling, 0.7-1.3 % yielding)
export OMPI_MCA_mpi_yield_when_idle=${OMPI_MCA_mpi_yield_when_idle:-1}
printf 'preset = dmi\nrings = 4\nmax_ring_difference = 3\n' > "$tmp/sc.txt"
"$CLI" simulate --phantom nema --scanner "$tmp/sc.txt" --events "$EVENTS" --tof --mu "$tmp/mu.nii" \
  -g "$GRID" -o "$tmp/scan.tlm" -j 1 -q
args=("$tmp/scan.tlm" --algo osem --subsets 5 --iterations 2 --tof --attenuation "$tmp/mu.nii"
      --loglik never)
run() { # ranks pieces -> "seconds sums_seconds sums_percent wait_seconds cpu_seconds"
  TOMOLAB_MPI_BARRIER=1 TOMOLAB_MPI_PIECES=$2 mpirun --oversubscribe -n "$1" "$CLI" recon \
    "${args[@]}" -o "$tmp/out-$1.nii" 2> "$tmp/log" || { cat "$tmp/log" >&2; exit 1; }
  local t s p w c
  t=$(sed -n 's/.* sub-iterations in \([0-9.]*\) s; wrote.*/\1/p' "$tmp/log")
  s=$(sed -n 's/.*image sums \([0-9.]*\) s in .*/\1/p' "$tmp/log")
  p=$(sed -n 's/.*calls (\([0-9.]*\)% of.*/\1/p' "$tmp/log")
  w=$(sed -n 's/.*slowest rank \([0-9.]*\) s.*/\1/p' "$tmp/log")
  c=$(sed -n 's/.*sub-iterations took \([0-9.]*\) CPU s.*/\1/p' "$tmp/log")
  echo "$t ${s:-0} ${p:-0} ${w:-0} $c"
}
min() { awk -v a="$1" -v b="$2" 'BEGIN { print (a == "inf" || b + 0 < a + 0) ? b : a }'; }
echo "events $EVENTS, grid $GRID, OSEM 5 subsets x 2 iterations, TOF, attenuation; load $(cut -d' ' -f1-3 /proc/loadavg)"
run 1 1 > /dev/null # warm-up: sensitivity chunks and pipelines into the caches
t1=inf c1=inf t2=inf c2=inf t2b=inf
for i in $(seq "$REPEAT"); do
  read -r t _ _ _ c < <(run 1 1)
  echo "run $i: 1 rank  loop $t s, $c CPU s"
  t1=$(min "$t1" "$t") c1=$(min "$c1" "$c")
  read -r t s p w c < <(run 2 2)
  echo "run $i: 2 ranks loop $t s, $c CPU s; image sums $s s ($p %), waiting for the slowest rank $w s; 2 pieces"
  if [ "$(min "$t2" "$t")" = "$t" ]; then t2=$t s2=$s p2=$p w2=$w; fi
  c2=$(min "$c2" "$c")
  read -r t s p w c < <(run 2 1)
  echo "run $i: 2 ranks loop $t s, $c CPU s; image sums $s s ($p %), waiting for the slowest rank $w s; 1 piece"
  if [ "$(min "$t2b" "$t")" = "$t" ]; then t2b=$t s2b=$s p2b=$p; fi
done
echo "load at the end $(cut -d' ' -f1-3 /proc/loadavg)"
/usr/bin/python3 "$(dirname "$0")/../../tests/mpi/nifti_compare.py" "$tmp/out-1.nii" "$tmp/out-2.nii"
awk -v t1="$t1" -v t2="$t2" -v t2b="$t2b" -v c1="$c1" -v c2="$c2" -v s="$s2" -v p="$p2" \
    -v w="$w2" -v sb="$s2b" -v pb="$p2b" 'BEGIN {
  printf "best: T1 %.2f s, T2 %.2f s (2 pieces) / %.2f s (1 piece)\n", t1, t2, t2b
  printf "efficiency T1 / (2 T2) = %.2f (2 pieces), %.2f (1 piece); by CPU time %.2f\n", t1 / (2 * t2), t1 / (2 * t2b), c1 / c2
  printf "image sums in the best 2-rank run: %.3f s = %s %% of the loop (2 pieces; waiting for the slowest rank before them %.3f s), %.3f s = %s %% (1 piece)\n", s, p, w, sb, pb }'
