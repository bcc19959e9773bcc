#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""The module graph of compute/ and shaders/ is one-way (docs/architecture.md):

    core <- expr, image <- recon <- pet, ct        (pet and ct never include each other)

and pet/ is itself cut into one-way sub-modules, each a folder, with the operator and the PET
problem set-up in pet/ above them:

    pet/scanner <- pet/correct <- pet/project, pet/data
    pet/scanner <- pet/simulate, pet/srm
    all of them <- pet (the files directly in compute/pet/)

Every #include "..." of a C file under compute/MODULE/ and of a GLSL file under
shaders/MODULE/ is resolved the way the build resolves it (next to the including file, then
the include roots: compute/ and compute/core for C, shaders/core for GLSL) and the module it
lands in must be one MODULE may use. Unresolvable includes fail too (a header moved without
its users). The allowed sets themselves must be one-way (no module reaches itself through
others), and no compute header may reach itself through its includes (an include cycle).
`--self-test` builds a small tree with violations in a temporary folder and checks that each
is reported, so this check cannot pass by finding nothing.

Usage: check-includes.py SOURCE_ROOT | --self-test
"""
import os
import re
import sys
import tempfile

BELOW_PET = {"core", "expr", "image", "recon"}
ALL_PET = {"pet/scanner", "pet/correct", "pet/project", "pet/data", "pet/simulate", "pet/srm", "pet"}
ALLOWED = {
    "core": {"core"},
    "expr": {"core", "expr"},
    "image": {"core", "image"},
    "recon": {"core", "expr", "image", "recon"},
    "pet/scanner": BELOW_PET | {"pet/scanner"},
    "pet/correct": BELOW_PET | {"pet/scanner", "pet/correct"},
    "pet/project": BELOW_PET | {"pet/scanner", "pet/correct", "pet/project"},
    "pet/data": BELOW_PET | {"pet/scanner", "pet/correct", "pet/data"},
    "pet/simulate": BELOW_PET | {"pet/scanner", "pet/simulate"},
    "pet/srm": BELOW_PET | {"pet/scanner", "pet/srm"},
    "pet": BELOW_PET | {"pet/scanner", "pet/correct", "pet/project", "pet/data", "pet/simulate",
                        "pet/srm", "pet"},
    "ct": {"core", "expr", "image", "recon", "ct"},
    "dataset": BELOW_PET | ALL_PET | {"ct", "dataset"},
    "run": BELOW_PET | ALL_PET | {"ct", "dataset", "run", "registry"},
}
# The one header both sides include (shaders/core/tl_constants.glsl): C reaches it as core/.
SHARED_CONSTANTS = "core/tl_constants.glsl"
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def module_of(root, top, path, allowed=ALLOWED):
    """The module of a file: compute/pet/scanner/x.c is pet/scanner, compute/pet/x.c pet;
    compute/tl-registry.h and tl-formats.h (the tables above the modules) are "registry"."""
    rel = os.path.relpath(path, os.path.join(root, top)).split(os.sep)
    if top == "compute" and len(rel) == 1 and rel[0].endswith(".h"):
        return "registry"
    if len(rel) > 2 and "/".join(rel[:2]) in allowed:
        return "/".join(rel[:2])
    return rel[0] if rel[0] in allowed else None


def cycles(graph):
    """The strongly connected components of more than one node (or a node with an edge to
    itself) of graph {node: set of nodes}, each as a sorted list (Tarjan 1972)."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1 or v in graph.get(v, ()):
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def check(root, allowed=ALLOWED):
    problems = []
    for comp in cycles({m: s - {m} for m, s in allowed.items()}):
        problems.append(f"allowed sets: modules {', '.join(comp)} reach each other")
    headers = {}  # compute header -> compute headers it includes
    for top, exts, roots in (("compute", (".c", ".h"), ("compute", "compute/core")),
                             ("shaders", (".glsl", ".comp"), ("shaders/core",))):
        base = os.path.join(root, top)
        for mod in allowed:
            if top == "compute" and not os.path.isdir(os.path.join(base, mod)):
                problems.append(f"{top}/{mod}: module folder missing")
        for dirpath, _, names in os.walk(base):
            for name in sorted(names):
                if not name.endswith(exts):
                    continue
                path = os.path.join(dirpath, name)
                mod = module_of(root, top, path, allowed)
                if mod not in allowed:
                    continue  # compute/tl-registry.[ch] and the like sit above the modules
                with open(path, encoding="utf-8") as f:
                    text = f.read()
                where = os.path.relpath(path, root)
                for inc in INCLUDE.findall(text):
                    if top == "compute" and inc == SHARED_CONSTANTS:
                        continue  # shaders/core's constants written once for C and GLSL: core
                    cands = [os.path.join(dirpath, inc)] + [os.path.join(root, r, inc) for r in roots]
                    hit = next((c for c in cands if os.path.isfile(c)), None)
                    if hit is None:
                        if inc.endswith(".spv.h") or inc in ("tl-shader-table.h", "tl-shader-sources.h"):
                            continue  # generated at build time by shaders/meson.build
                        problems.append(f'{where}: #include "{inc}" resolves to no file')
                        continue
                    hit = os.path.realpath(hit)
                    target = module_of(root, top, hit, allowed)
                    if target is None:
                        problems.append(f'{where}: #include "{inc}" leaves {top}/ modules')
                    elif target not in allowed[mod]:
                        problems.append(f'{where}: #include "{inc}" is module {target}; '
                                        f'{mod} may use {", ".join(sorted(allowed[mod]))}')
                    if top == "compute" and name.endswith(".h") and hit.endswith(".h"):
                        headers.setdefault(where, set()).add(os.path.relpath(hit, root))
    for comp in cycles(headers):
        problems.append(f"include cycle among headers: {' <-> '.join(comp)}")
    return problems


def self_test():
    with tempfile.TemporaryDirectory() as root:
        def put(rel, text=""):
            p = os.path.join(root, rel)
            os.makedirs(os.path.dirname(p), exist_ok=True)
            with open(p, "w") as f:
                f.write(text)
        for mod in ALLOWED:
            put(f"compute/{mod}/tl-{mod.replace('/', '-')}.h")
        put("shaders/core/tl_common.glsl")
        put("shaders/ct/ct_common.glsl", '#include "tl_common.glsl"\n')
        put("compute/pet/ok.c", '#include "tl-core.h"\n#include "recon/tl-recon.h"\n#include "tl-pet.h"\n'
            '#include "pet/project/tl-pet-project.h"\n')
        put("compute/pet/project/ok.c", '#include "tl-pet-project.h"\n#include "pet/correct/tl-pet-correct.h"\n'
            '#include "pet/scanner/tl-pet-scanner.h"\n#include "image/tl-image.h"\n')
        put("compute/image/tl-a.h", '#include "tl-b.h"\n')
        put("compute/image/tl-b.h", '#include "tl-core.h"\n')
        if check(root):
            print("self-test: a clean tree was reported:", check(root))
            return 1
        put("compute/pet/bad.c", '#include "ct/tl-ct.h"\n')
        put("compute/ct/bad.c", '#include "pet/tl-pet.h"\n')
        put("compute/core/bad.c", '#include "image/tl-image.h"\n')
        put("compute/image/bad.c", '#include "tl-recon.h"\n')   # bare, not next to it: unresolved
        put("shaders/pet/bad.comp", '#include "../ct/ct_common.glsl"\n')
        # sub-modules: upwards to a sibling, to the operator above them, across
        put("compute/pet/correct/bad.c", '#include "pet/project/tl-pet-project.h"\n')
        put("compute/pet/scanner/bad.h", '#include "pet/tl-pet.h"\n')
        put("compute/pet/srm/bad.c", '#include "pet/data/tl-pet-data.h"\n')
        # a header cycle inside one module (allowed module-wise): tl-b.h now includes tl-a.h
        put("compute/image/tl-b.h", '#include "tl-a.h"\n')
        found = check(root)
        want = ["compute/pet/bad.c", "compute/ct/bad.c", "compute/core/bad.c",
                "compute/image/bad.c", "shaders/pet/bad.comp", "compute/pet/correct/bad.c",
                "compute/pet/scanner/bad.h", "compute/pet/srm/bad.c",
                "include cycle among headers: compute/image/tl-a.h <-> compute/image/tl-b.h"]
        missed = [w for w in want if not any(p.startswith(w) for p in found)]
        if missed or len(found) != len(want):
            print("self-test: expected one report for each of", want, "got", found)
            return 1
        # allowed sets that let two sub-modules use each other are refused by themselves
        looped = dict(ALLOWED, **{"pet/scanner": ALLOWED["pet/scanner"] | {"pet/srm"}})
        found = [p for p in check(root, looped) if p.startswith("allowed sets")]
        if found != ["allowed sets: modules pet/scanner, pet/srm reach each other"]:
            print("self-test: a cycle in the allowed sets was not reported:", found)
            return 1
    print("1..1\nok 1 - every planted violation reported")
    return 0


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    if sys.argv[1] == "--self-test":
        return self_test()
    problems = check(sys.argv[1])
    for p in problems:
        print("not ok:", p)
    if problems:
        print(f"1..1\nnot ok 1 - {len(problems)} include(s) break the module graph")
        return 1
    print("1..1\nok 1 - module graph is one-way")
    return 0


if __name__ == "__main__":
    sys.exit(main())
