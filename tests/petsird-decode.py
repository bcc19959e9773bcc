#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""An independent decoder of PETSIRD files for tests/test-petsird-write.c.

Written from yardl's "Compact Binary Encoding Reference" and PETSIRD's model, sharing no code
with Tomolab's reader (compute/pet/data/tl-yardl.c): the magic "yardl", uint32 LE version 1,
the JSON schema (a varint length, then the text), then the protocol's steps in the schema's
order. Unsigned integers are varints (7 bits a byte, low first), signed ones and enums zig-zag
varints, floats IEEE 754 little-endian, strings and vectors a varint length then the items
(a fixed length: none), arrays their dimension lengths unless the schema fixes them (and their
rank unless the schema gives it), optionals and unions a varint option then the value, streams
batches of a varint count and that many items, ended by an empty batch.

Usage: petsird-decode.py FILE.bin EVENTS.out
prints a JSON summary (schema length, scanner: crystal centres by the model's formulas,
TOF and energy bin edges, per time block its interval and counts) and writes every prompt and
delayed as little-endian uint32 records (block, kind 0 prompt / 1 delayed, crystal a,
crystal b, tofIdx) to EVENTS.out. Crystal ids count the module types' crystals one after the
other, module-major, as docs/formats.md says; a detection bin is
energy + (element + module x elements) x energy bins.
"""
import gzip
import json
import struct
import sys


class Decoder:
    def __init__(self, data):
        self.d = data
        self.p = 0

    def byte(self):
        b = self.d[self.p]
        self.p += 1
        return b

    def uvar(self):
        v, s = 0, 0
        while True:
            b = self.byte()
            v |= (b & 0x7F) << s
            s += 7
            if not b & 0x80:
                return v

    def svar(self):
        u = self.uvar()
        return (u >> 1) ^ -(u & 1)

    def fixed(self, fmt, n):
        v = struct.unpack_from(fmt, self.d, self.p)[0]
        self.p += n
        return v


class Schema:
    def __init__(self, j):
        self.types = {t["name"]: t for t in j["types"]}
        self.steps = j["protocol"]["sequence"]

    @staticmethod
    def bare(name):
        return name.split(".")[-1]


PRIMITIVES = {
    "bool": lambda d: d.byte() != 0,
    "uint8": Decoder.uvar, "uint16": Decoder.uvar, "uint32": Decoder.uvar,
    "uint64": Decoder.uvar, "size": Decoder.uvar,
    "int8": Decoder.svar, "int16": Decoder.svar, "int32": Decoder.svar, "int64": Decoder.svar,
    "date": Decoder.svar, "time": Decoder.svar, "datetime": Decoder.svar,
    "float32": lambda d: d.fixed("<f", 4), "float64": lambda d: d.fixed("<d", 8),
    "complexfloat32": lambda d: (d.fixed("<f", 4), d.fixed("<f", 4)),
    "complexfloat64": lambda d: (d.fixed("<d", 8), d.fixed("<d", 8)),
}


def string(d):
    n = d.uvar()
    s = d.d[d.p:d.p + n].decode("utf-8")
    d.p += n
    return s


PRIMITIVES["string"] = string


def read(d, sc, t, env):
    """One value of schema type t; env binds generic parameters to (type, env)."""
    if t is None:
        return None
    if isinstance(t, str):
        if t in env:
            return read(d, sc, env[t][0], env[t][1])
        if t in PRIMITIVES:
            return PRIMITIVES[t](d)
        return read_named(d, sc, Schema.bare(t), [], env)
    if isinstance(t, list):  # a union; [null, X] is an optional
        i = d.uvar()
        opt = t[i]
        if opt is None:
            return None
        if isinstance(opt, dict) and "tag" in opt:
            return {opt["tag"]: read(d, sc, opt["type"], env)}
        return read(d, sc, opt, env)
    if "vector" in t:
        v = t["vector"]
        n = v["length"] if "length" in v else d.uvar()
        return [read(d, sc, v["items"], env) for _ in range(n)]
    if "array" in t:
        a = t["array"]
        dims = a.get("dimensions")
        if dims is None:
            shape = [d.uvar() for _ in range(d.uvar())]
        elif isinstance(dims, int):
            shape = [d.uvar() for _ in range(dims)]
        else:
            shape = [x["length"] if "length" in x else d.uvar() for x in dims]
        n = 1
        for x in shape:
            n *= x
        return {"shape": shape, "data": [read(d, sc, a["items"], env) for _ in range(n)]}
    if "map" in t:
        m = t["map"]
        return [(read(d, sc, m["keys"], env), read(d, sc, m["values"], env))
                for _ in range(d.uvar())]
    if "name" in t:  # a generic type with arguments
        args = [(x, env) for x in t.get("typeArguments", [])]
        return read_named(d, sc, Schema.bare(t["name"]), args, env)
    raise ValueError("unknown schema type %r" % (t,))


def read_named(d, sc, name, args, env):
    td = sc.types[name]
    inner = dict(zip(td.get("typeParameters", []), args))
    if "fields" in td:
        return {f["name"]: read(d, sc, f["type"], inner) for f in td["fields"]}
    if "values" in td:  # an enum: its base integer (int32 unless given)
        base = td.get("base", "int32")
        return PRIMITIVES[base if isinstance(base, str) else "int32"](d)
    return read(d, sc, td["type"], inner)


def mat(tf):
    return tf["matrix"]["data"]


def apply(m, x):
    return [m[4 * r] * x[0] + m[4 * r + 1] * x[1] + m[4 * r + 2] * x[2] + m[4 * r + 3]
            for r in range(3)]


def main():
    raw = open(sys.argv[1], "rb").read()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    d = Decoder(raw)
    assert raw[:5] == b"yardl", "no yardl magic"
    d.p = 5
    version = d.fixed("<I", 4)
    assert version == 1, version
    n = d.uvar()
    schema_text = raw[d.p:d.p + n].decode("utf-8")
    d.p += n
    sc = Schema(json.loads(schema_text))
    assert [s["name"] for s in sc.steps] == ["header", "timeBlocks"]
    header = read(d, sc, sc.steps[0]["type"], {})
    scanner = header["scanner"]
    crystals, offset, nen = [], [], []
    for t, rm in enumerate(scanner["scannerGeometry"]["replicatedModules"]):
        det = rm["object"]["detectingElements"]
        corners = [c["c"]["data"] for c in det["object"]["shape"]["corners"]]
        centre = [sum(c[i] for c in corners) / 8 for i in range(3)]
        offset.append(len(crystals))
        nen.append(len(scanner["eventEnergyBinEdges"][t]["edges"]["data"]) - 1)
        for mt in rm["transforms"]:
            for et in det["transforms"]:
                crystals.append(apply(mat(mt), apply(mat(et), centre)))
    nmt = len(offset)
    out = open(sys.argv[2], "wb")
    blocks = []
    stream_item = sc.steps[1]["type"]["stream"]["items"]
    while True:
        count = d.uvar()
        if count == 0:
            break
        for _ in range(count):
            tb = read(d, sc, stream_item, {})
            (tag, b), = tb.items()
            if tag != "EventTimeBlock":
                blocks.append({"tag": tag})
                continue
            k = len(blocks)
            rec = {"tag": tag, "start": b["timeInterval"]["start"],
                   "stop": b["timeInterval"]["stop"], "prompts": 0, "delayeds": 0}
            for kind, key in ((0, "promptEvents"), (1, "delayedEvents")):
                m = b[key]
                for m0 in range(min(nmt, len(m))):
                    for m1 in range(m0 + 1):
                        for ev in m[m0][m1]:
                            bins = ev["detectionBins"]
                            a = offset[m0] + bins[0] // nen[m0]
                            bb = offset[m1] + bins[1] // nen[m1]
                            out.write(struct.pack("<5I", k, kind, a, bb, ev["tofIdx"]))
                            rec["prompts" if kind == 0 else "delayeds"] += 1
            blocks.append(rec)
    assert d.p == len(raw), "%d bytes after the last step" % (len(raw) - d.p)
    out.close()
    print(json.dumps({
        "schema_bytes": n,
        "model": scanner["modelName"],
        "module_types": nmt,
        "crystals": crystals,
        "tof_edges": [[e["edges"]["data"] for e in row] for row in scanner["tofBinEdges"]],
        "tof_fwhm_mm": scanner["tofResolution"],
        "energy_edges": [e["edges"]["data"] for e in scanner["eventEnergyBinEdges"]],
        "energy_resolution": scanner["energyResolutionAt511"],
        "blocks": blocks,
    }))


if __name__ == "__main__":
    main()
