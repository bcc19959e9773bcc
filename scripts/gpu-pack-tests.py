#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""Puts a Meson build's test suite into a GPU pack (called by scripts/bench-gpu.sh --pack).

  gpu-pack-tests.py BUILD_DIR STAGE_DIR [--shared DIR]

STAGE_DIR mirrors BUILD_DIR (the programs bench-gpu.sh packs are there already). Added:
- every test whose command is an executable of the build, but the suites that cannot run
  there (below): the executable and the build files its arguments name, stripped;
- tests.json: each test's command, environment, working directory, timeout, suite and
  protocol from `meson introspect --tests`, the build directory written as @PACK@ and the
  source root as @PACK@/src (so a test whose workdir is the source root finds ../shared/data
  at @PACK@/shared/data); the tests left out, with the reason;
- the source files the tests name (arguments, environment, string literals of their C sources
  such as "docs/formats.md" or g_build_filename(root, "docs", "formats.md", NULL)) and
  tests/data;
- the folders of ../shared/data (or --shared) that the test sources name (a copy for the GPU
  machine; never committed: the pack is a build output);
- the libraries the tests load that the pack lacks (not glibc's, libstdc++, libgcc_s or the
  Vulkan loader, as bench-gpu.sh);
- the Vulkan validation layer (every test turns it on): its library and its manifest with a
  relative library_path, in vulkan/explicit_layer.d (the runner sets VK_LAYER_PATH);
- run-tests.py, the runner (scripts/gpu-test-runner.py).
Then checks that every packed program and library finds what it loads in the pack (or among
the system libraries the GPU machine has). Standard library only.
"""
import argparse
import glob
import json
import os
import re
import shutil
import subprocess
import sys

PLACEHOLDER = "@PACK@"
LEFT_OUT_SUITES = {
    "gui": "window tests need a display (xvfb-run) and GTK, which the GPU machine lacks",
    "python": "the Python package is not built for the pack (-Dpython=disabled)",
    "mpi": "needs Open MPI (not built for the pack: -Dmpi=disabled)",
}
# Tests that need something only a Tomolab build machine has: the runner probes for it and
# reports the test as not run when it is missing.
PROBES = {
    "format-dicom": {
        "cmd": ["sh", "-c", "p=/usr/bin/python3; [ -x $p ] || p=python3; "
                "$p -c 'import numpy, pydicom'"],
        "reason": "its references come from pydicom and numpy (Debian's python3-pydicom, "
                  "python3-numpy), not installed here; it reads and writes files only",
    },
}
SYSTEM_LIBS = re.compile(r"^(libc|libm|libdl|libpthread|librt|libresolv|libvulkan|libstdc\+\+|"
                         r"libgcc_s|ld-linux[^.]*)\.so")
LAYER = "VK_LAYER_KHRONOS_validation"


def die(msg):
    sys.exit(f"gpu-pack-tests: {msg}")


def is_elf(path):
    try:
        with open(path, "rb") as f:
            return f.read(4) == b"\x7fELF"
    except OSError:
        return False


def copy(src, dst, strip=False):
    os.makedirs(os.path.dirname(dst), exist_ok=True)
    if os.path.isdir(src):
        shutil.copytree(src, dst, dirs_exist_ok=True)
        return
    shutil.copy2(src, dst)
    os.chmod(dst, os.stat(dst).st_mode | 0o200)
    if strip and is_elf(dst) and shutil.which("strip"):
        subprocess.run(["strip", "--strip-unneeded", dst], check=True)


def libraries(exes, stage):
    """Copies into stage/lib what the executables load, as bench-gpu.sh does."""
    out = subprocess.run(["ldd"] + exes, capture_output=True, text=True).stdout
    for line in out.splitlines():
        m = re.match(r"\s*(\S+) => (/\S+)", line)
        if not m or SYSTEM_LIBS.match(m.group(1)) or m.group(1).startswith("libtomolab-compute"):
            continue
        dst = os.path.join(stage, "lib", m.group(1))
        if not os.path.exists(dst):
            copy(os.path.realpath(m.group(2)), dst, strip=True)


def check_closure(stage):
    """Every library any packed ELF file loads resolves inside the pack, or is one the GPU
    machine has (SYSTEM_LIBS): this machine has them all installed, so a missing one would
    only show there."""
    env = dict(os.environ, LD_LIBRARY_PATH=os.path.join(stage, "lib") + ":" +
               os.path.join(stage, "compute"))
    outside = set()
    for root, _, files in os.walk(stage):
        for name in files:
            path = os.path.join(root, name)
            if not is_elf(path):
                continue
            out = subprocess.run(["ldd", path], capture_output=True, text=True, env=env).stdout
            for line in out.splitlines():
                m = re.match(r"\s*(\S+) => (\S+)", line)
                if m and not SYSTEM_LIBS.match(m.group(1)) and \
                        not os.path.realpath(m.group(2)).startswith(stage + "/"):
                    outside.add(f"{os.path.relpath(path, stage)} needs {m.group(1)} "
                                f"({m.group(2)})")
    if outside:
        die("libraries left outside the pack: " + "; ".join(sorted(outside)))


def layer_manifest():
    dirs = [d for d in os.environ.get("VK_LAYER_PATH", "").split(":") if d]
    for base in ("/usr/local/share", "/usr/share", "/usr/local/etc", "/etc"):
        dirs.append(os.path.join(base, "vulkan", "explicit_layer.d"))
    for d in dirs:
        for path in sorted(glob.glob(os.path.join(d, "*.json"))):
            try:
                with open(path, encoding="utf-8") as f:
                    m = json.load(f)
            except (OSError, ValueError):
                continue
            if m.get("layer", {}).get("name") == LAYER:
                return path, m
    die(f"the Vulkan validation layer {LAYER} is not installed here (looked in "
        f"{', '.join(dirs)}; Debian: apt-get install vulkan-validationlayers)")


def layer_library(manifest_path, lib):
    if os.path.isabs(lib):
        return lib
    if "/" in lib:
        return os.path.join(os.path.dirname(manifest_path), lib)
    out = subprocess.run(["ldconfig", "-p"], capture_output=True, text=True).stdout
    found = [m for m in (re.match(r"\s*(\S+) \((.*)\) => (/\S+)", line)
                         for line in out.splitlines()) if m and m.group(1) == lib]
    found.sort(key=lambda m: "x86-64" not in m.group(2))
    if found:
        return found[0].group(3)
    for d in ("/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/lib", "/usr/local/lib"):
        if os.path.exists(os.path.join(d, lib)):
            return os.path.join(d, lib)
    die(f"{manifest_path}: library {lib} not found")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("build")
    ap.add_argument("stage")
    ap.add_argument("--shared", help="the real data folder the tests read as ../shared/data "
                    "(default: SOURCE/../shared/data)")
    a = ap.parse_args()
    build = os.path.realpath(a.build)
    stage = os.path.realpath(a.stage)
    try:
        with open(os.path.join(build, "meson-info", "meson-info.json"), encoding="utf-8") as f:
            source = os.path.realpath(json.load(f)["directories"]["source"])
    except (OSError, ValueError, KeyError) as e:
        die(f"{build}: not a meson build directory ({e})")
    shared = os.path.realpath(a.shared or os.path.join(source, "..", "shared", "data"))
    r = subprocess.run(["meson", "introspect", "--tests", build], capture_output=True, text=True)
    if r.returncode != 0:
        die(f"meson introspect --tests {build} failed: {r.stderr.strip()}")
    tests = json.loads(r.stdout)

    def rel(value):
        """The build directory as @PACK@, the source root as @PACK@/src."""
        if os.path.isabs(value):
            value = os.path.normpath(value)  # meson writes files() as BUILD/../tests/x.py
        for root, to in ((build, PLACEHOLDER), (source, PLACEHOLDER + "/src")):
            value = re.sub(re.escape(root) + r"(?=/|$|[:\s])", to, value)
        return value

    src_files = set()
    build_files = set()

    def note(value):
        if os.path.isabs(value):
            value = os.path.normpath(value)
        # the build directory need not be inside the source tree
        roots = "|".join(re.escape(r) for r in (build, source))
        for m in re.finditer("(?:" + roots + r")(/[^\s:=,;'\"]*)?", value):
            p = os.path.realpath(m.group(0))
            if p.startswith(build + "/") or p == build:
                build_files.add(p)
            elif os.path.isfile(p):
                src_files.add(p)

    packed, left_out = [], []
    for t in tests:
        suites = [s.split(":")[-1] for s in t["suite"]]
        name = t["name"]
        why = next((LEFT_OUT_SUITES[s] for s in suites if s in LEFT_OUT_SUITES), None)
        exe = os.path.realpath(t["cmd"][0])
        if not why and not (exe.startswith(build + "/") and is_elf(exe)):
            script = os.path.basename(t["cmd"][1]) if len(t["cmd"]) > 1 else exe
            why = (f"runs the script {script}, not an executable of the build: it needs this "
                   "machine's python3 and modules or the source tree (meson test runs it here)")
        if why:
            left_out.append({"name": name, "suite": suites, "reason": why})
            continue
        for v in t["cmd"] + list(t["env"].values()) + [t.get("workdir") or ""]:
            note(v)
        entry = {
            "name": name,
            "suite": suites,
            "cmd": [rel(c) for c in t["cmd"]],
            "env": {k: rel(v) for k, v in sorted(t["env"].items())},
            "workdir": rel(t["workdir"]) if t.get("workdir") else None,
            "timeout": t["timeout"],
            "protocol": t["protocol"],
            "is_parallel": t["is_parallel"],
        }
        if name in PROBES:
            entry["probe"] = PROBES[name]
        packed.append(entry)

    # executables and build files the commands name
    exes = []
    for p in sorted(build_files):
        if os.path.isfile(p):
            dst = os.path.join(stage, os.path.relpath(p, build))
            if not os.path.exists(dst):
                copy(p, dst, strip=True)
            if is_elf(p) and os.access(p, os.X_OK):
                exes.append(p)
    libraries(exes, stage)
    # a path compiled into a test would point at this machine's tree, not at the pack
    for p in exes:
        with open(p, "rb") as f:
            if source.encode() in f.read():
                print(f"gpu-pack-tests: warning: {os.path.relpath(p, build)} holds the path "
                      f"{source}: what it reads there is not in the pack", file=sys.stderr)
    # source files named in arguments and environment, and the tests' own data
    for p in sorted(src_files):
        copy(p, os.path.join(stage, "src", os.path.relpath(p, source)))
    if os.path.isdir(os.path.join(source, "tests", "data")):
        copy(os.path.join(source, "tests", "data"), os.path.join(stage, "src", "tests", "data"))

    # ../shared/data: the folders the test sources name (a file: its folder, which also holds
    # the data files its header names; the bare folder: all of it)
    # and the source files they name relative to the source root (their workdir, or
    # TL_TEST_SOURCE_ROOT): a literal "docs/formats.md", or g_build_filename(root, "docs",
    # "formats.md", NULL)'s literals joined
    wanted = set()
    for path in glob.glob(os.path.join(source, "tests", "**", "*"), recursive=True):
        if "/gui/" in path or not path.endswith((".c", ".h", ".py")):
            continue
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
        for m in re.finditer(r"shared/data((?:/[\w.+-]+)*)", text):
            wanted.add(m.group(1).strip("/"))
        if path.endswith(".py"):
            continue  # the packed tests are C; a script's literals name its own tree's files
        names = set(re.findall(r'"([\w.+-]+(?:/[\w.+-]+)*)"', text))
        for call in re.finditer(r"g_build_filename\(([^;]*?)\)\s*;", text):
            names.add("/".join(re.findall(r'"([^"\\]+)"', call.group(1))))
        for n in names:
            p = os.path.realpath(os.path.join(source, n))
            if n and "/" in n and os.path.isfile(p) and p.startswith(source + "/") and \
                    not p.startswith(build + "/"):
                copy(p, os.path.join(stage, "src", os.path.relpath(p, source)))
    copied = []
    for w in sorted(wanted):
        p = os.path.join(shared, w)
        if os.path.isfile(p):
            p = os.path.dirname(p)
        while not os.path.isdir(p) and p != shared:
            p = os.path.dirname(p)
        if not os.path.isdir(p):
            die(f"the tests read {shared}, which is missing (--shared DIR)")
        r = os.path.relpath(p, shared)
        if any(r == c or r.startswith(c + "/") or c == "." for c in copied):
            continue
        copy(p, os.path.join(stage, "shared", "data", r) if r != "." else
             os.path.join(stage, "shared", "data"))
        copied.append(r)

    # the validation layer, its manifest pointing next to itself
    mpath, manifest = layer_manifest()
    lib = layer_library(mpath, manifest["layer"]["library_path"])
    ldir = os.path.join(stage, "vulkan", "explicit_layer.d")
    copy(os.path.realpath(lib), os.path.join(ldir, os.path.basename(lib)), strip=True)
    manifest["layer"]["library_path"] = "./" + os.path.basename(lib)
    with open(os.path.join(ldir, os.path.basename(mpath)), "w", encoding="utf-8") as f:
        json.dump(manifest, f, indent=1)

    # DCMTK's data dictionary: its DICOM writer refuses to work without it (the dataset test's
    # DICOM round trip failed on the H200 run of 2026-11-28); the runner points DCMDICTPATH here
    for dic in sorted(glob.glob("/usr/share/libdcmtk*/dicom.dic")):
        copy(dic, os.path.join(stage, "dcmtk", "dicom.dic"))
        break

    copy(os.path.join(source, "scripts", "gpu-test-runner.py"), os.path.join(stage, "run-tests.py"))
    check_closure(stage)
    with open(os.path.join(stage, "tests.json"), "w", encoding="utf-8") as f:
        json.dump({"format": 1, "tests": packed, "excluded": left_out}, f, indent=1)
    print(f"packed {len(packed)} tests ({len(left_out)} left out: "
          f"{', '.join(t['name'] for t in left_out)}); shared data: "
          f"{', '.join(copied) or 'none'}; validation layer {manifest['layer'].get('api_version', '?')}")


if __name__ == "__main__":
    main()
