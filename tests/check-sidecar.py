# SPDX-License-Identifier: GPL-3.0-or-later
"""Provenance sidecars of tomolab-cli recon / ct-recon (docs/formats.md), TAP output.

  check-sidecar.py TOMOLAB-CLI SCHEMA.json

On a small simulated list mode (tomolab-cli simulate) and a small simulated CT scan:
  1  the PET image's IMAGE.json validates against the schema with an independent validator
     (python3-jsonschema), its inputs' SHA-256 equal hashlib's, its BIDS keys say what ran
  2  the validator discriminates: each of several broken copies of that sidecar is refused
  3  `recon --run IMAGE.json -o AGAIN.nii` reproduces the image bit for bit (same device, one
     lavapipe thread: see cli())
  4  so does the text run file of --save-run, and `--run` + an option overrides the file
  5  a run file with a repeated or unknown key is refused naming the line
  6  neither the image's sidecar nor --save-run replaces the --run file (nothing written)
  7  ct-recon: the sidecar validates and `ct-recon --run IMAGE.json` reproduces the image"""
import copy
import hashlib
import json
import os
import subprocess
import sys
import tempfile

import jsonschema

from tap import finish, ok

CLI, SCHEMA = sys.argv[1], sys.argv[2]


def cli(*args):
    # lavapipe's default threads: the back projections sum in fixed point (compute/core/
    # tl-fixed.h), so two runs are bit-identical whatever the scheduling
    return subprocess.run([CLI] + list(args), capture_output=True, text=True, timeout=300,
                          cwd=tmp)


def sha256(path):
    with open(os.path.join(tmp, path), "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def read(path):
    with open(os.path.join(tmp, path), "rb") as f:
        return f.read()


def errors(validator, doc):
    return [e.message for e in validator.iter_errors(doc)]


tmp = tempfile.mkdtemp(prefix="tomolab-sidecar-")
print(f"# in {tmp}")
print("1..7")
with open(SCHEMA) as f:
    schema = json.load(f)
jsonschema.Draft7Validator.check_schema(schema)
validator = jsonschema.Draft7Validator(schema)

with open(os.path.join(tmp, "sc.txt"), "w") as f:
    f.write("preset = dmi\nrings = 4\nmax_ring_difference = 3\n")
sim = cli("simulate", "--phantom", "nema", "--scanner", "sc.txt", "--events", "6000", "--mu",
          "mu.nii", "-g", "24x24x4@8", "-o", "scan.tlm", "-j", "1", "-q")
if sim.returncode != 0:
    print(f"Bail out! simulate failed: {sim.stderr}")
    sys.exit(1)

run = ["--algo", "osem", "--subsets", "3", "--iterations", "2", "--attenuation", "mu.nii",
       "--filter", "gauss:10", "-q"]
first = cli("recon", "scan.tlm", *run, "-o", "img.nii", "--save-run", "run.txt")
side = None
try:
    with open(os.path.join(tmp, "img.json")) as f:
        side = json.load(f)
except (OSError, ValueError) as e:
    first.stderr += f"\nimg.json: {e}"
good = first.returncode == 0 and side is not None
problems = errors(validator, side) if good else ["no sidecar"]
inputs = {i["key"]: i for i in side.get("TomolabInputs", [])} if good else {}
facts = good and not problems and [
    inputs.get("data", {}).get("sha256") == sha256("scan.tlm"),
    inputs.get("attenuation", {}).get("sha256") == sha256("mu.nii"),
    side["ReconMethodName"] == "OSEM",
    side["ReconMethodParameterLabels"][:2] == ["iterations", "subsets"],
    side["ReconMethodParameterValues"][:2] == [2, 3],
    side["ReconFilterType"] == "Gaussian" and side["ReconFilterSize"] == 10,
    "mu.nii" in side["AttenuationCorrection"],
    side["RandomsCorrectionMethod"] == "none" and side["ScatterCorrectionMethod"] == "none",
    side["TomolabRun"]["algorithm"] == "osem" and side["TomolabRun"]["data"] == "scan.tlm",
]
ok(good and not problems and all(facts),
   "PET sidecar validates against the schema; SHA-256 of the inputs and BIDS keys right",
   f"{first.stderr}\nschema: {problems}\nfacts: {facts}\n{json.dumps(side, indent=1)[:3000]}")

broken = []
if good:
    for mutate in (lambda d: d.pop("ReconMethodName"),
                   lambda d: d.__setitem__("ReconMethodParameterValues", ["three"]),
                   lambda d: d["TomolabInputs"][0].__setitem__("sha256", "xyz"),
                   lambda d: d.__setitem__("ReconFilterSize", -1),
                   lambda d: d["TomolabRun"].__setitem__("subsets", 3),
                   lambda d: d["TomolabRun"].__setitem__("modality", "spect"),
                   lambda d: d.__setitem__("Surprise", 1)):
        d = copy.deepcopy(side)
        mutate(d)
        broken.append(len(errors(validator, d)) > 0)
ok(good and broken and all(broken), "every broken copy of the sidecar is refused",
   f"refused: {broken}")

again = cli("recon", "--run", "img.json", "-o", "again.nii")
same = again.returncode == 0 and good and read("again.nii") == read("img.nii")
ok(same, "recon --run IMAGE.json reproduces the image bit for bit", again.stderr)

third = cli("recon", "--run", "run.txt", "-o", "third.nii")
more = cli("recon", "--run", "img.json", "--iterations", "3", "-o", "more.nii")
more_side = {}
if more.returncode == 0:
    with open(os.path.join(tmp, "more.json")) as f:
        more_side = json.load(f)
ok(third.returncode == 0 and good and read("third.nii") == read("img.nii") and
   more.returncode == 0 and read("more.nii") != read("img.nii") and
   more_side.get("TomolabRun", {}).get("iterations") == "3" and
   more_side["TomolabRun"].get("subsets") == "3",
   "--save-run's file reproduces it too; an option after --run overrides the file's value",
   third.stderr + more.stderr)

with open(os.path.join(tmp, "twice.txt"), "w") as f:
    f.write("data = scan.tlm\noutput = x.nii\n# comment\niterations = 2\niterations = 3\n")
with open(os.path.join(tmp, "unknown.txt"), "w") as f:
    f.write("data = scan.tlm\noutput = x.nii\nsmoothness = 3\n")
twice = cli("recon", "--run", "twice.txt")
unknown = cli("recon", "--run", "unknown.txt")
ok(twice.returncode == 2 and "twice.txt:5" in twice.stderr and "repeated" in twice.stderr and
   unknown.returncode == 2 and "unknown.txt:3" in unknown.stderr and
   "smoothness" in unknown.stderr and not os.path.exists(os.path.join(tmp, "x.nii")),
   "run files with a repeated or an unknown key are refused naming the line",
   twice.stderr + unknown.stderr)

before = read("img.json")
over_side = cli("recon", "--run", "img.json", "-o", "img.nii")
over_save = cli("recon", "--run", "img.json", "-o", "other.nii", "--save-run", "img.json")
ok(over_side.returncode == 2 and over_save.returncode == 2 and
   "sidecar 'img.json' is the input --run" in over_side.stderr and
   "--save-run 'img.json' is the input --run" in over_save.stderr and
   read("img.json") == before and not os.path.exists(os.path.join(tmp, "other.nii")),
   "outputs never replace the --run file: the image's sidecar and --save-run refused",
   over_side.stderr + over_save.stderr)

ctsim = cli("ct-simulate", "-g", "16x16x4@2", "-n", "24", "--beam", "parallel", "-o", "ct.tlct",
            "-q")
ct = cli("ct-recon", "ct.tlct", "--algo", "sirt", "--iterations", "3", "-o", "ct.nii", "-q")
ct_side = None
if ct.returncode == 0:
    with open(os.path.join(tmp, "ct.json")) as f:
        ct_side = json.load(f)
ct_again = cli("ct-recon", "--run", "ct.json", "-o", "ct2.nii")
ct_fdk = cli("recon", "ct.tlct", "-o", "fdk.nii", "-q")
fdk_side = {}
if ct_fdk.returncode == 0:
    with open(os.path.join(tmp, "fdk.json")) as f:
        fdk_side = json.load(f)
ok(ctsim.returncode == 0 and ct_side is not None and not errors(validator, ct_side) and
   ct_side["ReconMethodName"] == "SIRT" and ct_side["TomolabRun"]["modality"] == "ct" and
   ct_again.returncode == 0 and read("ct2.nii") == read("ct.nii") and
   not errors(validator, fdk_side) and fdk_side.get("ReconMethodName") == "FDK",
   "ct-recon: sidecars validate, --run IMAGE.json reproduces the image",
   ctsim.stderr + ct.stderr + ct_again.stderr + ct_fdk.stderr +
   (str(errors(validator, ct_side)) if ct_side else ""))
finish()
