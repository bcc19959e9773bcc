# SPDX-License-Identifier: GPL-3.0-or-later
"""Progress of a cold first run on the CLI's stderr (compute/core/tl-progress.h), TAP output.

  check-cli-progress.py TOMOLAB-CLI

A small list mode is simulated, then `recon` runs with an empty sensitivity cache, its stderr
read line by line and each line stamped with the time it arrived (the pipe is not a terminal:
one line per report, at most one a second). The sensitivity image is the long step of a cold
first run:
  1  its first progress line comes within 2 s of the line before it (nothing waits silently)
  2  a line with an estimate ("about ... left") comes within 10 s of the step's start
  3  no two of its lines are more than 2 s apart (a heartbeat while no work is counted), the
     fractions of each phase (listing the pairs, tracing them) never go back, the last is done
  4  a second run reads the image from the cache: no sensitivity progress at all
  5  --quiet prints no progress line (a cold run on another grid)

The small-animal preset on a 32 x 32 x 40 grid of 3.18 mm: 2.3 s of sensitivity image on an
idle 2-core machine with lavapipe, 25 s at load 20."""
import os
import re
import subprocess
import sys
import tempfile
import time

from tap import finish, ok

CLI = sys.argv[1]


def stamped(args, env):
    """(seconds since start, line) for each stderr line, and the exit status."""
    t0 = time.monotonic()
    p = subprocess.Popen([CLI] + args, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL,
                         env=env, text=True)
    lines = [(time.monotonic() - t0, line.rstrip("\n")) for line in p.stderr]
    return lines, p.wait()


LINE = re.compile(r"^(sensitivity image[^:]*): (?:(\d+) % · )?(.*)$")

with tempfile.TemporaryDirectory() as tmp:
    env = dict(os.environ, XDG_CACHE_HOME=os.path.join(tmp, "cache"),
               # small submissions: a report after each, however fast the device
               TOMOLAB_SUBMIT_BUDGET="200000")
    scan = os.path.join(tmp, "scan.tlm")
    r = subprocess.run([CLI, "simulate", "--phantom", "cylinder", "--scanner", "small-animal",
                        "--events", "2e4", "--no-attenuation", "--seed", "3", "-o", scan],
                       capture_output=True, text=True, env=env)
    if not ok(r.returncode == 0, "simulate", r.stderr):
        sys.exit(1)
    args = ["recon", scan, "--algo", "mlem", "-n", "1", "-o", os.path.join(tmp, "img.nii")]
    grid = ["-g", "32x32x40@3.18"]
    lines, rc = stamped(args + grid, env)
    text = "\n".join(f"{t:7.2f} {l}" for t, l in lines)
    print(f"# cold run:\n# " + text.replace("\n", "\n# "))
    ok(rc == 0, "recon ran", text)
    steps = [(i, t, LINE.match(l)) for i, (t, l) in enumerate(lines) if LINE.match(l)]
    if not ok(len(steps) >= 2, "the sensitivity image reports progress", text):
        sys.exit(1)
    first_i, t_first, _ = steps[0]
    t_before = lines[first_i - 1][0] if first_i > 0 else 0.0
    ok(t_first - t_before <= 2.0,
       f"first progress line {t_first - t_before:.2f} s after the line before it (<= 2 s)", text)
    est = [t for _, t, m in steps if "left" in m.group(3)]
    ok(est and est[0] - t_first <= 10.0,
       f"an estimate {est[0] - t_first if est else float('nan'):.2f} s after the step began "
       "(<= 10 s)", text)
    gaps = [b[1] - a[1] for a, b in zip(steps, steps[1:])]
    phases = {}
    for _, _, m in steps:
        if m.group(2):
            phases.setdefault(m.group(1), []).append(int(m.group(2)))
    ok(max(gaps) <= 2.0 and all(f == sorted(f) for f in phases.values()) and
       steps[-1][2].group(3).endswith("done"),
       f"lines at most {max(gaps):.2f} s apart, phases {list(phases)} each never going back, "
       "the last done", text)
    lines, rc = stamped(args + grid, env)
    warm = "\n".join(l for _, l in lines)
    ok(rc == 0 and not any(LINE.match(l) for _, l in lines) and "from the cache" in warm,
       "a warm run: the image from the cache, no progress", warm)
    env.pop("XDG_CACHE_HOME")
    env["XDG_CACHE_HOME"] = os.path.join(tmp, "cache2")
    lines, rc = stamped(args + ["-g", "16x16x20@6.36", "--quiet"], env)
    ok(rc == 0 and not any(LINE.match(l) for _, l in lines), "--quiet: no progress line",
       "\n".join(l for _, l in lines))

finish(plan_now=True)
