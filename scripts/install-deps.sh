#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Installs, with apt-get, only the Debian 12 packages Tomolab needs that are missing.
set -euo pipefail

packages=(
  gcc g++ pkg-config meson ninja-build          # build
  glslang-tools glslang-dev spirv-tools         # GLSL -> SPIR-V, at build time and at run time
  libvulkan-dev mesa-vulkan-drivers             # Vulkan loader + lavapipe (CPU fallback)
  vulkan-validationlayers                       # tests run with validation on
  libglib2.0-dev libcglm-dev                    # compute core
  libniftiio-dev libnifti2-dev libznz-dev       # NIfTI-1 (nifti1_io.h needs nifti1.h, znzlib.h)
  zlib1g-dev                                    # MetaImage CompressedData (the compute core links zlib)
  libgtk-4-dev libadwaita-1-dev                 # the window
  libgtksourceview-5-dev                        # the kernel editor
  xvfb xauth                                    # GUI tests on a virtual display
  desktop-file-utils appstream                  # desktop-file and metainfo validation
  python3-yaml python3-jsonschema               # Flatpak manifest checks
  flatpak flatpak-builder bubblewrap ostree     # the Flatpak, built and run here
  elfutils                                      # flatpak-builder strips with the host's eu-strip
  debootstrap                                   # its local runtime from Debian packages
  clang-14 libclang-rt-14-dev zlib1g-dev        # fuzz harnesses: clang, libFuzzer runtime, gzip seeds
  libopenmpi-dev openmpi-bin python3-numpy      # recon under mpirun (-Dmpi), its test (docs/scale.md)
  python3-dev python3-numpy python3-pytest      # the Python module (python/), its tests
  python3-mesonpy python3-venv                  # pip install . / pip wheel (pyproject.toml), its test
  python3-nbclient python3-ipykernel python3-matplotlib  # examples/notebooks, run by the tests
  python3-h5py                                  # the CT preprocessing test reads tooth.h5's raw counts
  libhdf5-dev libdcmtk-dev libtiff-dev          # Data Exchange HDF5 projections, DICOM (DCMTK), TIFF stacks
  python3-pydicom python3-numpy                 # test-format-dicom's reference (/usr/bin/python3)
  libvkfft-dev                                  # CT ramp filter by FFT (VkFFT, header only; -Dvkfft)
  python3-skimage                               # bench/ct-tooth: scikit-image's FBP beside ours
  python3-scipy                                 # Python tests: lsqr and scipy.sparse on the operator algebra
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q '^install ok installed$'; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present" >&2
  exit 0
fi

echo "install-deps: installing ${missing[*]}" >&2
sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
