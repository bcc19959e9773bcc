#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""Runs the test suite a GPU pack carries (scripts/bench-gpu.sh --pack), without meson.

The machines lent for a GPU run have python3 but none of Tomolab's build dependencies, so
`meson test` cannot run there. The pack holds the test executables, their list as
`meson introspect --tests` gave it (tests.json: arguments, environment, working directory,
timeout, suite, protocol; paths written as @PACK@), the data they read and the Vulkan
validation layer. This runner starts them as meson would, several at once, each in its own
process group and cache folder and killed at its timeout; the verdict follows meson's TAP
rules (a `not ok` that is not TODO, `Bail out!`, a missing or unmet plan, or a non-zero exit
fails; every subtest skipped is a skip). Standard library only.

  run-tests.py [--pack DIR] [--list] [--tests NAMES] [--jobs N] [--logs DIR]
               [--timeout-multiplier X] [--deadline S]
  run-tests.py --self-test     (the runner on a fake pack; tests/meson.build runs it)

Prints one TAP line per test as it ends, the tests not run and why, the slowest, and a final
line "N passed, N failed". Writes DIR/<test>.log for each failing test (command, environment,
exit, stdout, stderr) and DIR/results.tsv (every test's result and seconds). Exit status 0
when none failed, 1 otherwise, 2 on bad arguments.
"""
import argparse
import fnmatch
import json
import os
import random
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time

PLACEHOLDER = "@PACK@"


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pack", help="the unpacked pack (default: this script's folder when it "
                    "holds tests.json)")
    ap.add_argument("--list", action="store_true",
                    help="list the tests (and those not packed, with the reason) and stop")
    ap.add_argument("--tests", default="",
                    help="comma-separated test names or globs, or suite:NAME (default: all)")
    ap.add_argument("--jobs", "-j", type=int, default=min(8, os.cpu_count() or 1),
                    help="tests at once (default min(8, cores)); GPU tests share one device")
    ap.add_argument("--logs", help="folder for the failing tests' logs and results.tsv "
                    "(default: a new folder in the system's temp)")
    ap.add_argument("--timeout-multiplier", type=float, default=1.0,
                    help="scale every test's timeout, as meson test -t")
    ap.add_argument("--deadline", type=float, default=0,
                    help="seconds for the whole run: no test starts after it and those still "
                    "running are stopped (counted as failed); 0 = none")
    return ap.parse_args()


def load(pack):
    path = os.path.join(pack, "tests.json")
    try:
        with open(path, encoding="utf-8") as f:
            manifest = json.load(f)
    except (OSError, ValueError) as e:
        sys.exit(f"run-tests: {path}: {e} (expected the test list of a pack made by "
                 "scripts/bench-gpu.sh --pack)")
    if manifest.get("format") != 1:
        sys.exit(f"run-tests: {path}: format {manifest.get('format')!r}, expected 1")
    return manifest


def expand(value, pack):
    return value.replace(PLACEHOLDER, pack)


def selected(tests, spec):
    if not spec:
        return tests
    words = [w for w in spec.split(",") if w]
    out = []
    for t in tests:
        for w in words:
            if w.startswith("suite:"):
                if w[6:] in t["suite"]:
                    break
            elif fnmatch.fnmatchcase(t["name"], w):
                break
        else:
            continue
        out.append(t)
    unknown = [w for w in words if not w.startswith("suite:")
               and not any(fnmatch.fnmatchcase(t["name"], w) for t in tests)]
    if unknown:
        sys.exit(f"run-tests: --tests: no test named {', '.join(unknown)} "
                 "(--list shows them)")
    return out


def tap_verdict(stdout, rc):
    """(result, detail) by meson's rules for protocol 'tap'; result ok, skip or fail."""
    plan, ran, failed, skipped, bail = None, 0, [], 0, None
    for line in stdout.splitlines():
        # GLib's subprocess tests indent their children's TAP: only the top level counts
        if line.startswith("Bail out!"):
            bail = line
        m = re.match(r"1\.\.(\d+)", line)
        if m and plan is None:
            plan = int(m.group(1))
            continue
        m = re.match(r"(not ok|ok)\b\s*\d*\s*-?\s*([^#]*)(?:#\s*(\w+)(.*))?$", line)
        if not m:
            continue
        ran += 1
        directive = (m.group(3) or "").upper()
        if directive.startswith("SKIP"):
            skipped += 1
        elif m.group(1) == "not ok" and not directive.startswith("TODO"):
            failed.append(m.group(2).strip() or f"#{ran}")
    problems = []
    if rc != 0:
        problems.append(describe_exit(rc))
    if failed:
        shown = ", ".join(failed[:4]) + (" ..." if len(failed) > 4 else "")
        problems.append(f"{len(failed)} of {ran} subtests not ok ({shown})")
    if bail:
        problems.append(bail)
    if plan is None:
        problems.append("no TAP plan")
    elif ran != plan and not bail:
        problems.append(f"{ran} subtests ran of the {plan} planned")
    if problems:
        return "fail", "; ".join(problems)
    if ran == skipped:
        return "skip", "every subtest skipped"
    return "ok", f"{ran} subtests" + (f", {skipped} skipped" if skipped else "")


def describe_exit(rc):
    if rc < 0:
        try:
            return f"killed by {signal.Signals(-rc).name}"
        except ValueError:
            return f"killed by signal {-rc}"
    return f"exit {rc}"


def verdict(test, stdout, rc):
    if test["protocol"] == "tap":
        return tap_verdict(stdout, rc)
    if rc == 0:
        return "ok", "exit 0"
    if rc == 77:
        return "skip", "exit 77"
    return "fail", describe_exit(rc)


def stop(proc):
    """The test and whatever it started (its own process group): TERM, then KILL."""
    for sig, wait in ((signal.SIGTERM, 5), (signal.SIGKILL, 5)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(wait)
            return
        except subprocess.TimeoutExpired:
            pass


class Run:
    def __init__(self, test, pack, scratch, base_env, multiplier):
        self.test = test
        self.name = test["name"]
        self.cmd = [expand(a, pack) for a in test["cmd"]]
        self.cwd = expand(test["workdir"], pack) if test.get("workdir") else pack
        self.env = dict(base_env)
        self.set_env = {k: expand(v, pack) for k, v in test["env"].items()}
        # each test its own cache: meson runs these one at a time, here they overlap
        self.set_env["XDG_CACHE_HOME"] = os.path.join(scratch, self.name, "cache")
        # as meson test does, unless the caller chose one
        if "MALLOC_PERTURB_" not in base_env:
            self.set_env["MALLOC_PERTURB_"] = str(random.randint(1, 255))
        # meson prepends its LD_LIBRARY_PATH (the build's library folders) to the caller's
        if base_env.get("LD_LIBRARY_PATH") and "LD_LIBRARY_PATH" in self.set_env:
            self.set_env["LD_LIBRARY_PATH"] += ":" + base_env["LD_LIBRARY_PATH"]
        self.env.update(self.set_env)
        self.timeout = test["timeout"] * multiplier if test["timeout"] > 0 else None
        self.dir = os.path.join(scratch, self.name)
        os.makedirs(self.set_env["XDG_CACHE_HOME"], exist_ok=True)

    def start(self):
        self.out = open(os.path.join(self.dir, "stdout"), "w+b")
        self.err = open(os.path.join(self.dir, "stderr"), "w+b")
        self.t0 = time.monotonic()
        try:
            self.proc = subprocess.Popen(self.cmd, cwd=self.cwd, env=self.env,
                                         stdin=subprocess.DEVNULL, stdout=self.out,
                                         stderr=self.err, start_new_session=True)
        except OSError as e:
            self.proc = None
            self.err.write(f"run-tests: cannot start {self.cmd[0]}: {e}\n".encode())
        self.stopped = None

    def finish(self, why=None):
        if why:
            stop(self.proc)
            self.stopped = why
        self.seconds = time.monotonic() - self.t0
        rc = self.proc.wait() if self.proc else 127
        texts = []
        for f in (self.out, self.err):
            f.seek(0)
            texts.append(f.read().decode("utf-8", "replace"))
            f.close()
        self.stdout, self.stderr = texts
        self.rc = rc
        if self.stopped:
            self.result, self.detail = "fail", self.stopped
        else:
            self.result, self.detail = verdict(self.test, self.stdout, rc)

    def write_log(self, path):
        with open(path, "w", encoding="utf-8") as f:
            f.write(f"test: {self.name} (suite {', '.join(self.test['suite'])})\n")
            f.write(f"result: {self.result}: {self.detail}; {self.seconds:.1f} s of "
                    f"{self.timeout or 0:.0f} s allowed\n")
            f.write(f"cwd: {self.cwd}\ncommand: {shlex.join(self.cmd)}\n")
            f.write("environment set: " + " ".join(f"{k}={shlex.quote(v)}" for k, v in
                                                    sorted(self.set_env.items())) + "\n")
            f.write("\n---- stdout ----\n" + self.stdout)
            f.write("\n---- stderr ----\n" + self.stderr)


SELF_TESTS = [  # name, shell command, protocol, timeout, expected result in results.tsv
    ("good", "echo 1..2; echo ok 1 /a; echo ok 2 /b", "tap", 30, "ok"),
    ("paths", 'echo 1..3; [ "$FOO" = @PACK@/z ] && echo ok 1 || echo not ok 1 env; '
     '[ "$(pwd -P)" = @PACK@/src ] && echo ok 2 || echo not ok 2 workdir; '
     'case $LD_LIBRARY_PATH in @PACK@/compute:@PACK@/lib*) echo ok 3;; *) echo not ok 3 ld;; esac',
     "tap", 30, "ok"),
    ("not-ok", "echo 1..2; echo ok 1 /a; echo not ok 2 /b", "tap", 30, "fail"),
    ("todo", "echo 1..1; echo 'not ok 1 /a # TODO later'", "tap", 30, "ok"),
    ("short-plan", "echo 1..3; echo ok 1 /a", "tap", 30, "fail"),
    ("no-plan", "echo ok 1 /a", "tap", 30, "fail"),
    ("bail", "echo 1..2; echo 'Bail out! no device'", "tap", 30, "fail"),
    ("exit-1", "echo 1..1; echo ok 1 /a; exit 1", "tap", 30, "fail"),
    ("abort", "echo 1..1; kill -ABRT $$", "tap", 30, "fail"),
    ("timeout", "echo 1..1; sleep 60 & sleep 60", "tap", 1, "fail"),
    ("skip-all", "echo 1..1; echo 'ok 1 /a # SKIP no device'", "tap", 30, "skip"),
    ("exit-77", "exit 77", "exitcode", 30, "skip"),
    ("exit-0", "true", "exitcode", 30, "ok"),
]


def self_test():
    """The runner on a fake pack: every verdict, @PACK@ in command, environment and working
    directory, LD_LIBRARY_PATH merged, the timeout (its child too), a probe, the logs and the
    final line. TAP out, for meson."""
    tmp = os.path.realpath(tempfile.mkdtemp(prefix="tl-runner-selftest-"))
    try:
        os.makedirs(os.path.join(tmp, "src"))
        tests = [{"name": n, "suite": ["self"], "cmd": ["sh", "-c", c],
                  "env": {"FOO": "@PACK@/z", "LD_LIBRARY_PATH": "@PACK@/compute"},
                  "workdir": "@PACK@/src", "timeout": t, "protocol": p, "is_parallel": False}
                 for n, c, p, t, _ in SELF_TESTS]
        tests.append({"name": "probed", "suite": ["self"], "cmd": ["true"], "env": {},
                      "workdir": None, "timeout": 30, "protocol": "exitcode",
                      "is_parallel": False, "probe": {"cmd": ["false"], "reason": "absent"}})
        with open(os.path.join(tmp, "tests.json"), "w", encoding="utf-8") as f:
            json.dump({"format": 1, "tests": tests, "excluded": []}, f)
        logs = os.path.join(tmp, "logs")
        t0 = time.monotonic()
        r = subprocess.run([sys.executable, os.path.abspath(__file__), "--pack", tmp, "--logs",
                            logs, "--jobs", "4"], capture_output=True, text=True,
                           env=dict(os.environ, LD_LIBRARY_PATH=""))
        seconds = time.monotonic() - t0
        with open(os.path.join(logs, "results.tsv"), encoding="utf-8") as f:
            rows = {line.split("\t")[0]: line.split("\t") for line in f.read().splitlines()[1:]}
        checks = []
        for name, _, _, _, want in SELF_TESTS:
            got = rows.get(name, [name, "", "missing"])[2]
            checks.append((f"{name}: {want}", got == want, f"got {got}: {rows.get(name)}"))
            has_log = os.path.exists(os.path.join(logs, name + ".log"))
            checks.append((f"{name}: a log only when it fails", has_log == (want == "fail"),
                           f"log {'present' if has_log else 'absent'}"))
        checks.append(("probed: not run", rows.get("probed", ["", "", ""])[2] == "not run",
                       str(rows.get("probed"))))
        n_fail = sum(1 for *_, w in SELF_TESTS if w == "fail")
        last = r.stdout.strip().splitlines()[-1] if r.stdout.strip() else ""
        checks.append(("final line", last == f"{len(SELF_TESTS) - n_fail} passed, {n_fail} failed",
                       repr(last)))
        checks.append(("exit status 1", r.returncode == 1, f"exit {r.returncode}"))
        # the timeout's 60 s sleeps were stopped with their process group
        checks.append(("timeout stops the test's children", seconds < 30, f"{seconds:.1f} s"))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"1..{len(checks)}")
    for i, (what, good, detail) in enumerate(checks, 1):
        print(f"{'ok' if good else 'not ok'} {i} - {what}" + ("" if good else f" # {detail}"))
    if not all(good for _, good, _ in checks):
        print(r.stdout + r.stderr, file=sys.stderr)
        return 1
    return 0


def main():
    if sys.argv[1:] == ["--self-test"]:
        return self_test()
    a = parse_args()
    here = os.path.dirname(os.path.abspath(__file__))
    pack = a.pack or (here if os.path.exists(os.path.join(here, "tests.json")) else None)
    if not pack:
        print("run-tests: --pack DIR expected (the unpacked pack)", file=sys.stderr)
        return 2
    pack = os.path.abspath(pack)
    manifest = load(pack)
    tests = selected(manifest["tests"], a.tests)
    if a.list:
        for t in tests:
            print(f"{t['name']:24} {','.join(t['suite']):8} {t['timeout']:5} s  "
                  f"{shlex.join(t['cmd'])}")
        for t in manifest.get("excluded", []):
            print(f"{t['name']:24} {','.join(t['suite']):8} not packed: {t['reason']}")
        print(f"{len(tests)} tests, {len(manifest.get('excluded', []))} not packed")
        return 0
    if a.jobs < 1 or a.timeout_multiplier <= 0 or a.deadline < 0:
        print("run-tests: --jobs >= 1, --timeout-multiplier > 0, --deadline >= 0 expected",
              file=sys.stderr)
        return 2

    logs = os.path.abspath(a.logs or tempfile.mkdtemp(prefix="tomolab-tests-"))
    os.makedirs(logs, exist_ok=True)
    scratch = tempfile.mkdtemp(prefix="tomolab-run-")
    base = dict(os.environ)
    # the pack's libraries and validation layer; a caller's own paths stay behind them
    base["LD_LIBRARY_PATH"] = ":".join(p for p in (os.path.join(pack, "lib"),
                                                   base.get("LD_LIBRARY_PATH")) if p)
    layers = os.path.join(pack, "vulkan", "explicit_layer.d")
    if os.path.isdir(layers):
        base["VK_LAYER_PATH"] = layers
    dic = os.path.join(pack, "dcmtk", "dicom.dic")
    if os.path.isfile(dic):
        base["DCMDICTPATH"] = dic  # DCMTK's writer needs its data dictionary

    info = ""
    try:
        with open(os.path.join(pack, "PACK-INFO"), encoding="utf-8") as f:
            info = f.readline().strip()
    except OSError:
        pass
    # the longest-allowed first, so they do not end the run alone
    queue = sorted(tests, key=lambda t: (-t["timeout"], t["name"]))
    not_run = []
    for t in list(queue):
        probe = t.get("probe")
        if probe and subprocess.run(probe["cmd"], stdout=subprocess.DEVNULL,
                                    stderr=subprocess.DEVNULL, env=base).returncode != 0:
            not_run.append((t["name"], probe["reason"], False))
            queue.remove(t)
    print(f"# {info or pack}")
    print(f"# {len(queue)} tests, {a.jobs} at once; failing tests' logs in {logs}")
    print(f"1..{len(queue)}", flush=True)

    t_start = time.monotonic()
    running, done, n = [], [], 0
    interrupted = False

    def on_signal(signum, frame):
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, on_signal)
    try:
        while queue or running:
            now = time.monotonic()
            late = a.deadline and now - t_start >= a.deadline
            while queue and len(running) < a.jobs and not late:
                r = Run(queue.pop(0), pack, scratch, base, a.timeout_multiplier)
                r.start()
                running.append(r)
            if late and queue:
                for t in queue:
                    not_run.append((t["name"], f"the --deadline of {a.deadline:.0f} s passed", True))
                queue = []
            for r in list(running):
                why = None
                if r.proc and r.proc.poll() is None:
                    if r.timeout and now - r.t0 > r.timeout:
                        why = f"timeout after {r.timeout:.0f} s"
                    elif late:
                        why = f"stopped at the --deadline of {a.deadline:.0f} s"
                    else:
                        continue
                r.finish(why)
                running.remove(r)
                done.append(r)
                n += 1
                report(r, n, logs)
            time.sleep(0.05)
    except KeyboardInterrupt:
        interrupted = True
        for r in running:
            r.finish("runner interrupted")
            done.append(r)
            n += 1
            report(r, n, logs)
        for t in queue:
            not_run.append((t["name"], "runner interrupted", True))

    with open(os.path.join(logs, "results.tsv"), "w", encoding="utf-8") as f:
        f.write("test\tsuite\tresult\tseconds\ttimeout\tdetail\n")
        for r in done:
            f.write(f"{r.name}\t{','.join(r.test['suite'])}\t{r.result}\t{r.seconds:.1f}\t"
                    f"{r.test['timeout']}\t{r.detail}\n")
        for name, why, _ in not_run:
            f.write(f"{name}\t\tnot run\t\t\t{why}\n")
    shutil.rmtree(scratch, ignore_errors=True)

    failed = [r for r in done if r.result == "fail"]
    skipped = [r.name for r in done if r.result == "skip"]
    if skipped:
        print(f"# skipped (every subtest skipped; counted as passed): {', '.join(skipped)}")
    for name, why, fatal in not_run:
        print(f"# not run: {name}: {why}" + (" (counted as failed)" if fatal else ""))
    slow = sorted(done, key=lambda r: -r.seconds)[:5]
    print("# slowest: " + ", ".join(f"{r.name} {r.seconds:.1f} s" for r in slow))
    print(f"# wall {time.monotonic() - t_start:.1f} s"
          + (" (interrupted)" if interrupted else ""))
    n_failed = len(failed) + sum(1 for _, _, fatal in not_run if fatal)
    print(f"{len(done) - len(failed)} passed, {n_failed} failed", flush=True)
    return 1 if n_failed or interrupted else 0


def report(r, n, logs):
    suite = ",".join(r.test["suite"])
    if r.result == "fail":
        log = os.path.join(logs, r.name + ".log")
        r.write_log(log)
        print(f"not ok {n} - {suite}/{r.name} {r.seconds:.1f} s: {r.detail}; log {log}",
              flush=True)
    else:
        skip = " # SKIP " + r.detail if r.result == "skip" else ""
        print(f"ok {n} - {suite}/{r.name} {r.seconds:.1f} s{skip}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
