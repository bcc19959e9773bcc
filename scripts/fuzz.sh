#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Builds the libFuzzer harnesses of tests/fuzz (clang-14, ASan + UBSan, -Dfuzz=true) in
# build-fuzz, makes seed corpora with tomolab-cli, and runs every harness:
#
#   scripts/fuzz.sh [RUNS] [JOBS]      RUNS executions per harness (default 100000: the short
#                                      run of scripts/test.sh); JOBS harnesses at once (2)
#   scripts/fuzz.sh 10000000 2         the long run of docs/reliability.md
#
# The corpus grows in build-fuzz/corpus/NAME between runs; a crash, leak or timeout leaves
# its input in build-fuzz/artifacts/ and fails the script. Figures: build-fuzz/fuzz-NAME.log.
set -euo pipefail
# a failure while seeding the corpus says where (CI saw only "1 failed" once: a SIGPIPE)
trap 'echo "fuzz.sh: line $LINENO failed (exit $?)" >&2' ERR
cd "$(dirname "$0")/.."
runs=${1:-100000}
jobs=${2:-2}
names=(scanner listmode image ct-geometry tlct kv filter cli expr interfile metaimage mmr castor castor-scanner srm norm sss checkpoint dxchange dicom tiff-sidecar tiff randoms run petsird info)
# FUZZ_NAMES="kv expr" runs some only; FUZZ_MAX_TIME=S stops each after S seconds;
# FUZZ_TIMEOUT=S (default 60): one input slower than this is a finding. The slowest valid input
# known (a 2^21-crystal scanner, loaded, printed and reloaded) costs ~3 s of CPU under ASan and
# took 24 s of wall time on a shared 2-core machine at load 10.
read -r -a names <<<"${FUZZ_NAMES:-${names[*]}}"
max_time=${FUZZ_MAX_TIME:-0}

if [ -f build-fuzz/build.ninja ]; then meson setup --reconfigure build-fuzz >/dev/null
else
  CC=clang-14 CXX=clang++-14 meson setup build-fuzz -Dfuzz=true -Db_sanitize=address,undefined \
    -Db_lundef=false -Dbuildtype=debugoptimized >/dev/null
fi
# FUZZ_NAMES: only those harnesses are built (all of build-fuzz takes many minutes)
if [ -n "${FUZZ_NAMES:-}" ]; then
  meson compile -C build-fuzz "${names[@]/#/tests/fuzz/fuzz-}" >/dev/null
else
  meson compile -C build-fuzz >/dev/null
fi

# Seeds made by the CLI of the normal build (built if missing).
if [ ! -x build/app/cli/tomolab-cli ]; then
  [ -f build/build.ninja ] || meson setup build >/dev/null
  meson compile -C build app/cli/tomolab-cli >/dev/null
fi
cli=$PWD/build/app/cli/tomolab-cli
c=build-fuzz/corpus
mkdir -p build-fuzz/artifacts "$c"
for n in scanner listmode image ct-geometry tlct kv filter cli expr interfile metaimage mmr castor castor-scanner srm norm sss checkpoint dxchange dicom tiff-sidecar tiff randoms run petsird info; do mkdir -p "$c/$n"; done
# srm: the harness writes a valid matrix file of its fixed scanner and grid as the seed
# (where fuzz-srm was built: FUZZ_NAMES may leave it out)
[ -n "$(ls -A "$c/srm")" ] || [ ! -x build-fuzz/tests/fuzz/fuzz-srm ] ||
  SRM_SEED="$c/srm" build-fuzz/tests/fuzz/fuzz-srm -runs=1 >/dev/null 2>&1
if [ ! -f "$c/.seeded" ]; then
  s=$(mktemp -d)
  # small scanners: each execution that loads one builds and checks its whole crystal table
  printf 'kind = ring\nrings = 2\nsides = 8\ncrystals_per_side = 3\ncrystal_pitch_mm = 4\nradius_mm = 40\nring_pitch_mm = 4\ncrystal_size_mm = 4 4 10\ntof_bins = 3\ntof_bin_mm = 20\ntof_fwhm_ps = 300\n' >"$s/ring.txt"
  printf 'kind = dual-head\nhead_crystals = 4 3\nhead_pitch_mm = 2 2\nhead_distance_mm = 50\ncrystal_size_mm = 2 2 10\n' >"$s/dual.txt"
  "$cli" simulate --scanner "$s/ring.txt" --phantom cylinder --grid 8x8x4@4 --events 40 --tof \
    --truth "$s/t.nii" --mu "$s/mu.raw" -o "$s/a.tlm" -q
  "$cli" simulate --scanner "$s/dual.txt" --phantom point --grid 8x8x8@4 --events 30 \
    -o "$s/b.tlm" -q
  # scatter, efficiencies, randoms from singles: tags of all three kinds and a delayed block
  "$cli" simulate --scanner "$s/ring.txt" --phantom cylinder --grid 8x8x4@4 --activity 1e6 \
    --duration 1e-3 --coincidence-window 500 --scatter --efficiency-spread 0.1 -o "$s/c.tlm" -q
  "$cli" ct-simulate --grid 8x8x4@2 --views 3 --detector 10x6 --projector joseph \
    --save-geometry "$s/g.txt" -o "$s/a.tlct" -q
  "$cli" ct-simulate --grid 8x8x1@2 --beam parallel --views 2 --projector joseph -o "$s/b.tlct" -q
  cp "$s"/*.tlm "$c/listmode/"
  cp "$s"/*.tlct "$c/tlct/"
  cp "$s/g.txt" "$c/ct-geometry/"
  # the scanner blocks of the list-mode files, and preset overrides
  for f in "$s"/*.tlm; do
    sed -n '/^begin_scanner$/,/^end_scanner$/p' "$f" | sed '1d;$d' >"$c/scanner/$(basename "$f").txt"
  done
  printf 'preset = dmi\nrings = 4\nmax_ring_difference = 2\ntof_bins = 0\n' >"$c/scanner/preset.txt"
  cp "$s/ring.txt" "$s/dual.txt" "$c/scanner/"
  # images: the first byte picks NIfTI (0), NIfTI through gzip (1), raw (2: sidecar NUL data)
  { printf '\000'; cat "$s/t.nii"; } >"$c/image/nii"
  { printf '\001'; cat "$s/t.nii"; } >"$c/image/niigz"
  { printf '\002'; sed "s/mu.raw/in.raw/" "$s/mu.raw.txt"; printf '\000'; cat "$s/mu.raw"; } >"$c/image/raw"
  printf 'dims = 2 3 4\n' >"$c/kv/a"; printf 'x = 1.5e-3 2 -7\n' >"$c/kv/b"; printf 'n = 18446744073709551615\n' >"$c/kv/c"
  printf 'gauss:4' >"$c/filter/a"; printf 'median3' >"$c/filter/b"; printf 'gauss:1e-300' >"$c/filter/c"
  printf '215x215x71@2.78' >"$c/cli/a"; printf '8x8x8@1,2,3.5' >"$c/cli/b"; printf '4294967295' >"$c/cli/c"
  printf '\000x = a*x + y/z - -b' >"$c/expr/a"; printf '\001l2norm(a*x + y)' >"$c/expr/b"
  printf '\000x = select(a > 0, exp(a), min(b, 2))' >"$c/expr/c"
  # Interfile: the first byte picks image (0) or STIR projection data (1); header NUL data
  "$cli" convert "$s/t.nii" "$s/t.hv" >/dev/null
  { printf '\000'; sed 's/^name of data file := .*/name of data file := in.v/' "$s/t.hv"; printf '\000'; cat "$s/t.v"; } >"$c/interfile/image"
  { printf '\001!INTERFILE :=\nname of data file := in.s\nimagedata byte order := LITTLEENDIAN\n'
    printf '!number format := float\n!number of bytes per pixel := 4\nnumber of dimensions := 4\n'
    printf 'matrix axis label [4] := segment\n!matrix size [4] := 3\nmatrix axis label [3] := view\n'
    printf '!matrix size [3] := 2\nmatrix axis label [2] := axial coordinate\n!matrix size [2] := {2,1,1}\n'
    printf 'matrix axis label [1] := tangential coordinate\n!matrix size [1] := 3\n'
    printf 'minimum ring difference per segment := {0,-1,1}\nmaximum ring difference per segment := {0,-1,1}\n'
    printf 'number of rings := 2\nnumber of detectors per ring := 4\ninner ring diameter (cm) := 10\n'
    printf 'distance between rings (cm) := 0.4\n!END OF INTERFILE :=\n\000'
    head -c 96 /dev/zero; } >"$c/interfile/sino"
  # MetaImage: one .mha (first byte even), or a header naming in.raw NUL its data (odd)
  "$cli" convert "$s/t.nii" "$s/t.mha" >/dev/null
  { printf '\000'; cat "$s/t.mha"; } >"$c/metaimage/mha"
  { printf '\001NDims = 2\nDimSize = 3 2\nElementType = MET_SHORT\nBinaryDataByteOrderMSB = True\nElementDataFile = in.raw\n\000'
    head -c 12 /dev/urandom; } >"$c/metaimage/mhd"
  /usr/bin/python3 -c 'import sys, zlib; d = zlib.compress(bytes(range(24))); sys.stdout.buffer.write(b"\0ObjectType = Image\nNDims = 3\nDimSize = 2 3 4\nElementType = MET_UCHAR\nCompressedData = True\nCompressedDataSize = %d\nElementDataFile = LOCAL\n" % len(d) + d)' >"$c/metaimage/zlib"
  rm -rf "$s"
  touch "$c/.seeded"
fi
# checkpoints (tl-cli-checkpoint.c): a 2 x 2 x 2 image after 3 of 4 sub-iterations
if [ -z "$(ls -A "$c/checkpoint")" ]; then
  { printf 'TOMOLAB-CHECKPOINT 1\nsub_iterations = 3\nsubsets = 4\noptions_sha256 = %064d\n' 0
    printf 'dims = 2 2 2\nvoxel_mm = 4 4 2.5\norigin_mm = -2 -2 -1.25\nend_header\n'
    head -c 32 /dev/zero; } >"$c/checkpoint/a"
fi
# scatter estimates (pet/correct/tl-sss.h): one sample, non-TOF; 2 x 2 samples with 3 TOF bins
if [ -z "$(ls -A "$c/sss")" ]; then
  sct='TOMOLAB-SCATTER 1\ntransaxial_samples = %s\nring_samples = %s\ntof_bins = %s\nvalues = %s\nvalue_bytes = 4\nbyte_order = little-endian\nscale = 0.5\ntransaxial = %s\nrings = %s\ndescription = seed\nbegin_scanner\nkind = ring\nrings = 2\nsides = 4\ncrystals_per_side = 2\ncrystal_pitch_mm = 4\nradius_mm = 40\nring_pitch_mm = 4\ncrystal_size_mm = 4 4 10\n%bend_scanner\nend_header\n'
  { printf "$sct" 1 1 0 1 0 0 ''; printf '\000\000\200\077'; } >"$c/sss/one"
  { printf "$sct" 2 2 3 30 '0 4' '0 1' 'tof_bins = 3\ntof_bin_mm = 20\ntof_fwhm_ps = 300\n'
    for i in $(seq 30); do printf '\000\000\300\077'; done; } >"$c/sss/tof"
fi

# Seeds of the mMR and CASToR harnesses (their own marker: corpora seeded before they existed
# get them too). Input: a header, a NUL, then the binary file the header names (in.l, in.cdf,
# in.lut).
if [ ! -f "$c/mmr/.seeded" ]; then
  s=$(mktemp -d)
  hdr='!INTERFILE:=\n!originating system:=2008\nname of data file := in.l\ndata format:=CoincidenceList\nnumber of rings:=64\n%%LM event and tag words format (bits):=32\n%%axial compression:=1\n%%maximum ring difference:=60\n%%number of projections:=344\n%%number of views:=252\ngantry crystal radius (cm):=32.8\n%%total listmode word counts:=331257106\n'
  real=../shared/data/mmr/small_listmode_file.l
  { printf "$hdr"; printf '\000'; if [ -f "$real" ]; then head -c 8192 "$real"; else printf '\000\000\000\200\001\002\003\100\001\000\000\200'; fi; } >"$c/mmr/real"
  { printf "$hdr"; printf '\000'; printf '\005\000\000\200\001\000\000\100\000\000\000\240\377\377\377\377'; } >"$c/mmr/tags"
  printf 'kind = ring\nrings = 2\nsides = 8\ncrystals_per_side = 3\ncrystal_pitch_mm = 4\nradius_mm = 40\nring_pitch_mm = 4\ncrystal_size_mm = 4 4 10\ntof_bins = 3\ntof_bin_mm = 20\ntof_fwhm_ps = 300\n' >"$s/ring.txt"
  "$cli" simulate --scanner "$s/ring.txt" --phantom cylinder --grid 8x8x4@4 --events 20 --tof -o "$s/a.tlm" -q
  "$cli" convert "$s/a.tlm" "$s/a.cdh" >/dev/null 2>&1
  { sed 's/^Data filename: .*/Data filename: in.cdf/' "$s/a.cdh"; printf '\000'; cat "$s/a.cdf"; } >"$c/castor/list-tof"
  { printf 'Data filename: in.cdf\nNumber of events: 1\nData mode: histogram\nData type: PET\nScanner name: x\nAttenuation correction flag: 1\n'; printf '\000'
    printf '\000\000\000\000\000\000\200\077\000\000\100\100\001\000\000\000\005\000\000\000'; } >"$c/castor/histo"
  { cat "$s/a-scanner.hscan"; printf '\000'; cat "$s/a-scanner.lut"; } >"$c/castor-scanner/ring"
  rm -rf "$s"
  touch "$c/mmr/.seeded"
fi

# info (fuzz-info.c): the first byte picks the file names (its table), then the text file, a
# NUL, the binary one: a NIfTI, an Interfile image with its data, list mode, CT projections, a
# raw image with its sidecar, a CASToR .geom scanner
if [ -z "$(ls -A "$c/info")" ]; then
  s=$(mktemp -d)
  printf 'kind = ring\nrings = 2\nsides = 8\ncrystals_per_side = 3\ncrystal_pitch_mm = 4\nradius_mm = 40\nring_pitch_mm = 4\ncrystal_size_mm = 4 4 10\n' >"$s/ring.txt"
  "$cli" simulate --scanner "$s/ring.txt" --phantom cylinder --grid 8x8x4@4 --events 40 \
    --truth "$s/t.nii" -o "$s/a.tlm" -q
  "$cli" ct-simulate --grid 8x8x1@2 --beam parallel --views 2 --projector joseph -o "$s/b.tlct" -q
  "$cli" convert "$s/t.nii" "$s/t.hv" >/dev/null
  "$cli" convert "$s/t.nii" "$s/t.raw" >/dev/null
  { printf '\000'; cat "$s/t.nii"; } >"$c/info/nii"
  { printf '\001'; sed 's/^name of data file := .*/name of data file := in.v/' "$s/t.hv"; printf '\000'; cat "$s/t.v"; } >"$c/info/hv"
  { printf '\206'; cat "$s/a.tlm"; } >"$c/info/tlm"
  { printf '\207'; cat "$s/b.tlct"; } >"$c/info/tlct"
  { printf '\010'; sed 's/^data = .*//' "$s/t.raw.txt"; printf '\000'; cat "$s/t.raw"; } >"$c/info/raw"
  { printf '\016modality : PET\nscanner name : g4\nnumber of elements : 48\nnumber of layers : 1\n'
    printf 'scanner radius : 100\nnumber of rsectors : 4\nnumber of crystals transaxial : 2\n'
    printf 'number of crystals axial : 3\ncrystals size depth : 10\ncrystals size transaxial : 4\n'
    printf 'crystals size axial : 5\nnumber of modules axial : 2\nmodule gap axial : 1.5\n'; } >"$c/info/geom"
  # MetaImage naming in.raw, STIR projection data naming in.s, an mMR header naming in.l (with
  # the real list mode's first 8 KiB where there is one), pydicom's CT_small.dcm where installed
  { printf '\003NDims = 2\nDimSize = 3 2\nElementType = MET_SHORT\nBinaryDataByteOrderMSB = True\nElementDataFile = in.raw\n\000'
    head -c 12 /dev/urandom; } >"$c/info/mhd"
  { printf '\002!INTERFILE :=\nname of data file := in.s\nimagedata byte order := LITTLEENDIAN\n'
    printf '!number format := float\n!number of bytes per pixel := 4\nnumber of dimensions := 4\n'
    printf 'matrix axis label [4] := segment\n!matrix size [4] := 3\nmatrix axis label [3] := view\n'
    printf '!matrix size [3] := 2\nmatrix axis label [2] := axial coordinate\n!matrix size [2] := {2,1,1}\n'
    printf 'matrix axis label [1] := tangential coordinate\n!matrix size [1] := 3\n'
    printf 'minimum ring difference per segment := {0,-1,1}\nmaximum ring difference per segment := {0,-1,1}\n'
    printf 'number of rings := 2\nnumber of detectors per ring := 4\ninner ring diameter (cm) := 10\n'
    printf 'distance between rings (cm) := 0.4\n!END OF INTERFILE :=\n\000'; head -c 96 /dev/zero; } >"$c/info/stir"
  { printf '\011!INTERFILE:=\n!originating system:=2008\nname of data file := in.l\ndata format:=CoincidenceList\n'
    printf 'number of rings:=64\n%%LM event and tag words format (bits):=32\n%%axial compression:=1\n'
    printf '%%maximum ring difference:=60\n%%number of projections:=344\n%%number of views:=252\n'
    printf 'gantry crystal radius (cm):=32.8\n%%total listmode word counts:=331257106\n\000'
    if [ -f ../shared/data/mmr/small_listmode_file.l ]; then head -c 8192 ../shared/data/mmr/small_listmode_file.l
    else printf '\000\000\000\200\001\002\003\100\001\000\000\200'; fi; } >"$c/info/mmr"
  dcm=$(/usr/bin/python3 -c "from pydicom.data import get_testdata_file as g; print(g('CT_small.dcm'))" 2>/dev/null || true)
  if [ -n "$dcm" ] && [ -f "$dcm" ]; then { printf '\013'; cat "$dcm"; } >"$c/info/dcm"; fi
  printf '\001modality : PET\nscanner name : g4\nnumber of elements : 48\nnumber of layers : 1\nscanner radius : 100\nnumber of rsectors : 4\nnumber of crystals transaxial : 2\nnumber of crystals axial : 3\ncrystals size depth : 10\ncrystals size transaxial : 4\ncrystals size axial : 5\nnumber of modules axial : 2\nmodule gap axial : 1.5\n' >"$c/castor-scanner/geom"
  rm -rf "$s"
fi

# normalisation files (seeded when the corpus is empty, also in a corpus seeded before): one
# estimated from a small ring scanner's cylinder, and the same without its geometric factors
if [ -z "$(ls -A "$c/norm")" ]; then
  s=$(mktemp -d)
  printf 'kind = ring\nrings = 2\nsides = 8\ncrystals_per_side = 3\ncrystal_pitch_mm = 4\nradius_mm = 40\nring_pitch_mm = 4\ncrystal_size_mm = 4 4 10\n' >"$s/ring.txt"
  "$cli" simulate --scanner "$s/ring.txt" --phantom cylinder --grid 8x8x4@4 --no-attenuation \
    --events 3000 -o "$s/a.tlm" -q
  "$cli" norm-estimate "$s/a.tlm" --radius 10 --length 10 --grid 8x8x4@4 -o "$c/norm/ring.tln" -q
  "$cli" norm-estimate "$s/a.tlm" --radius 10 --length 10 --grid 8x8x4@4 --no-axial \
    --no-transaxial -o "$c/norm/eff.tln" -q
  rm -rf "$s"
fi

# issue 12 (seeded when their corpus is empty, also in a corpus seeded before): a small Data
# Exchange file written by test-format-dxchange with libhdf5, and pydicom's own small DICOM
# files (python3-pydicom)
if [ -z "$(ls -A "$c/dxchange")" ]; then
  meson compile -C build tests/test-format-dxchange >/dev/null
  build/tests/test-format-dxchange --write-seed "$PWD/$c/dxchange/small.h5"
fi
if [ -z "$(ls -A "$c/tiff-sidecar")" ]; then
  printf 'tomolab-tiff-stack = 1\nbeam = parallel\nangles = 0 180\npixel_mm = 0.65 0.65\ncentre_u = 319.5\nvalues = counts\nflat = flat.tif\ndark = dark.tif\n' >"$c/tiff-sidecar/a"
  printf 'tomolab-tiff-stack = 1\nbeam = cone\nangles = 0 360\npixel_mm = 1 1\nsid_mm = 500\nsdd_mm = 800\nvalues = line-integrals\n' >"$c/tiff-sidecar/b"
fi
# randoms files: @HASH@ stands for the harness scanner's key hash (48 crystals)
if [ -z "$(ls -A "$c/randoms")" ]; then
  { printf 'tomolab-randoms = 1\nscanner = fuzz\nscanner_sha256 = @HASH@\ncrystals = 48\nend_header\n'
    for i in $(seq 1 48); do echo "0.$i"; done; } >"$c/randoms/a"
fi
# run files: the first byte picks the reader (even: key = value text, odd: a sidecar's JSON)
if [ -z "$(ls -A "$c/run")" ]; then
  printf '0# a PET run\ndata = scan.tlm\nalgorithm = bsrem\nsubsets = 5\nprior = rdp\nbeta = 0.1\ntof = true\nfilter = gauss:4\noutput = x.nii\n' >"$c/run/a"
  printf '0modality = ct\ndata = tooth.h5\nalgorithm = fbp\nfdk-filter = hann\ncentre = auto\nslices = 0:2\n' >"$c/run/b"
  printf '1{"ReconMethodName": "OSEM", "TomolabRun": {"algorithm": "osem", "subsets": "2", "data": "a\\u00e9.tlm"}}' >"$c/run/c"
fi
# PETSIRD (fuzz-petsird.c): the values after the shipped file's schema (mode 1), cut at 60 KB,
# and the file's head whole (mode 0)
real=../shared/data/petsird/petsird-v0.10.0_small.bin
if [ -z "$(ls -A "$c/petsird")" ] && [ -f "$real" ]; then
  # dd, not tail | head: under pipefail head's early exit would fail the script (SIGPIPE)
  { printf '\001'; dd if="$real" iflag=skip_bytes,count_bytes skip=12895 count=60000 bs=65536 status=none; } >"$c/petsird/values"
  { printf '\000'; head -c 16000 "$real"; } >"$c/petsird/head"
fi
# TIFF pages: small stacks written with libtiff by test-format-tiff
if [ -z "$(ls -A "$c/tiff")" ]; then
  meson compile -C build tests/test-format-tiff >/dev/null
  build/tests/test-format-tiff --write-seeds "$PWD/$c/tiff"
fi
if [ -z "$(ls -A "$c/dicom")" ]; then
  for f in CT_small.dcm MR_small_RLE.dcm MR_small_jpeg_ls_lossless.dcm JPEG-lossy.dcm; do
    p=/usr/lib/python3/dist-packages/pydicom/data/test_files/$f
    if [ -f "$p" ]; then cp "$p" "$c/dicom/"; fi
  done
fi

export ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
# leaks inside the libraries of tests/lsan.supp only (libhdf5's error paths: fuzz-dxchange)
export LSAN_OPTIONS=suppressions=$PWD/tests/lsan.supp:print_suppressions=0
# scratch files of the harnesses on tmpfs where there is one: the raw writer's fsync and the
# rewrite of every input cost little there
mkdir -p build-fuzz/tmp
TMPDIR=$(mktemp -d -p /dev/shm tl-fuzz-XXXXXX 2>/dev/null || mktemp -d -p "$PWD/build-fuzz/tmp")
export TMPDIR
run_one() {
  local n=$1 log=build-fuzz/fuzz-$1.log
  # dxchange (and info, which loads Data Exchange too): libhdf5 1.10 mallocs sizes read from
  # the file (a 20 GiB local heap from a 5 KB input) before checking them; untouched, that
  # costs no memory (the reader then fails with a GError), so only the resident limit applies
  # to it (docs/formats.md "Fuzzing")
  local extra="" asan=$ASAN_OPTIONS
  # its reader processes are forked per input, and a fork costs as much as the fuzzer's
  # resident memory, which ASan's quarantine of freed blocks (256 MB by default) fills: with
  # 8 MB it runs at ~140/s instead of ~40/s after 10^5 inputs. A reader process stuck in
  # libhdf5 is stopped after 20 s (TOMOLAB_READER_TIMEOUT_S, image/tl-isolate.h), well inside
  # the fuzzer's own timeout.
  if [ "$n" = dxchange ] || [ "$n" = info ]; then extra="-malloc_limit_mb=65536"; asan=$asan:quarantine_size_mb=8; fi
  if TOMOLAB_READER_TIMEOUT_S=20 ASAN_OPTIONS=$asan build-fuzz/tests/fuzz/fuzz-"$n" -runs="$runs" -max_total_time="$max_time" -max_len=65536 \
      -timeout="${FUZZ_TIMEOUT:-60}" -rss_limit_mb=3072 $extra \
      -print_final_stats=1 -artifact_prefix=build-fuzz/artifacts/"$n"- "$c/$n" >"$log" 2>&1; then
    echo "fuzz $n: $(awk '/stat::number_of_executed_units/ {print $2}' "$log") executions, $(awk '/stat::average_exec_per_sec/ {print $2}' "$log")/s, no crash"
  else
    echo "fuzz $n: FAILED (see $log)"; tail -n 30 "$log"; return 1
  fi
}
export -f run_one
export runs c max_time
rc=0
printf '%s\n' "${names[@]}" | xargs -P "$jobs" -I{} bash -c 'run_one {}' || rc=1
rm -rf "$TMPDIR"
exit $rc
