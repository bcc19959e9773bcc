# SPDX-License-Identifier: GPL-3.0-or-later
"""TAP output for the check-*.py scripts that meson runs with `protocol : 'tap'`."""
import sys

results = []


def ok(cond, name, detail=""):
    """Prints one numbered TAP line; on failure the last 30 lines of `detail` as comments."""
    results.append(bool(cond))
    print(f"{'ok' if cond else 'not ok'} {len(results)} - {name}")
    if not cond:
        for line in str(detail).strip().splitlines()[-30:]:
            print(f"# {line}")
    return cond


def finish(plan_now=False):
    """Exits 0 when every check passed; prints the plan when it was not printed first."""
    if plan_now:
        print(f"1..{len(results)}")
    sys.exit(0 if all(results) else 1)
