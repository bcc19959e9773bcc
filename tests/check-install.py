#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""`meson install --destdir` into an empty temporary folder, then (TAP):
  files     the installed files, directories written as ${bindir} etc. (${prefix} for the
            rest: the Python package), equal
            tests/install-files.txt (a diff names what is missing and what is unexpected);
            the installed tomolab-cli runs `info` from there (LD_LIBRARY_PATH) and carries no
            path into the build tree;
  consumer  tests/install-consumer.c, copied out of the source tree and compiled with only
            `pkg-config --cflags --libs tomolab-compute` against the installed copy
            (-Werror=implicit-function-declaration, no CPATH), runs a forward projection with
            the installed library (checked with ldd); a file including every installed header
            compiles; a private header does not, and a function a private header declares
            does not link (the library hides it);
  symbols   `nm -D --defined-only` on the installed library: tl_* only (TOOLCHAIN_EXTRA
            names what else a toolchain may add: nothing with GNU ld 2.40), and exactly the
            function and extern declarations of the installed headers, marked or not
            (scripts/tl-api-mark.py parses them);
            a self-check runs the same comparison with planted faults and a wrong prefix and
            fails unless each is reported.
Usage: check-install.py files|consumer|symbols BUILD_DIR SOURCE_DIR CC [EXTRA_CFLAG...]"""
import importlib.util
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile


def install(build_dir, destdir):
    subprocess.run(['meson', 'install', '-C', build_dir, '--destdir', destdir, '--no-rebuild',
                    '--quiet'], check=True, stdout=subprocess.DEVNULL)
    with open(os.path.join(build_dir, 'meson-info', 'intro-buildoptions.json')) as f:
        options = {o['name']: o['value'] for o in json.load(f)}
    prefix = options['prefix']
    dirs = {name: os.path.join(prefix, options[name])
            for name in ('bindir', 'libdir', 'includedir', 'datadir', 'mandir')}
    # anything else under the prefix (the Python package's dist-packages folder)
    dirs['prefix'] = prefix
    return lambda name: destdir + dirs[name], dirs


def installed_files(destdir, dirs):
    # Longest first: mandir lies inside datadir.
    order = sorted(dirs.items(), key=lambda kv: -len(kv[1]))
    found = []
    for root, _, names in os.walk(destdir):
        for name in names:
            path = os.path.join(root, name)[len(destdir):]
            for key, d in order:
                if path.startswith(d + '/'):
                    path = '${' + key + '}' + path[len(d):]
                    break
            found.append(path)
    return sorted(found)


def check_files(build_dir, source_dir, destdir):
    at, dirs = install(build_dir, destdir)
    expected_path = os.path.join(source_dir, 'tests', 'install-files.txt')
    with open(expected_path) as f:
        expected = sorted(l.strip() for l in f if l.strip() and not l.startswith('#'))
    found = installed_files(destdir, dirs)
    missing = sorted(set(expected) - set(found))
    unexpected = sorted(set(found) - set(expected))
    for path in missing:
        print('# missing:    ' + path)
    for path in unexpected:
        print('# unexpected: ' + path)
    if missing or unexpected:
        print('# a new installed file? add it to tests/install-files.txt')
        return False
    env = dict(os.environ, LD_LIBRARY_PATH=at('libdir'))
    cli = os.path.join(at('bindir'), 'tomolab-cli')
    info = subprocess.run([cli, 'info'], env=env, capture_output=True, text=True)
    if info.returncode != 0 or 'Chosen device' not in info.stdout:
        print('# installed tomolab-cli info failed:\n# ' + info.stderr.replace('\n', '\n# '))
        return False
    dynamic = subprocess.run(['readelf', '-d', cli], capture_output=True, text=True,
                             check=True).stdout
    if os.path.realpath(build_dir) in dynamic or build_dir in dynamic:
        print('# installed tomolab-cli still points into the build tree:\n' + dynamic)
        return False
    return True


def pkg_config_flags(destdir, at):
    # The .pc file names the final prefix: a copy of it points into destdir instead (a
    # sysroot would also move glib's and Vulkan's paths).
    pc_dir = os.path.join(destdir, 'pc')
    os.mkdir(pc_dir)
    with open(os.path.join(at('libdir'), 'pkgconfig', 'tomolab-compute.pc')) as f:
        pc = f.read()
    prefix = next(l[len('prefix='):] for l in pc.splitlines() if l.startswith('prefix='))
    with open(os.path.join(pc_dir, 'tomolab-compute.pc'), 'w') as f:
        f.write(pc.replace('prefix=' + prefix, 'prefix=' + destdir + prefix, 1))
    env = dict(os.environ, PKG_CONFIG_PATH=pc_dir)
    return subprocess.run(['pkg-config', '--cflags', '--libs', 'tomolab-compute'], env=env,
                          capture_output=True, text=True, check=True).stdout.split()


def check_consumer(build_dir, source_dir, destdir, cc, extra):
    at, _ = install(build_dir, destdir)
    flags = pkg_config_flags(destdir, at)
    # Only the installed copy may be found: every -I and -L of the .pc inside destdir or the
    # system's, none into this checkout; no CPATH-like variable adds a path behind our back.
    ok = True
    for flag in flags:
        path = flag[2:] if flag[:2] in ('-I', '-L') else None
        if path and (path.startswith(os.path.realpath(source_dir)) or
                     path.startswith(os.path.realpath(build_dir))):
            print('# pkg-config flag points into the checkout: ' + flag)
            ok = False
    env = {k: v for k, v in os.environ.items()
           if k not in ('CPATH', 'C_INCLUDE_PATH', 'LIBRARY_PATH', 'LD_LIBRARY_PATH')}
    base = shlex.split(cc) + extra + ['-Werror=implicit-function-declaration']
    work = os.path.join(destdir, 'work')
    os.mkdir(work)

    def compile_(name, text, link):
        src = os.path.join(work, name + '.c')
        with open(src, 'w') as f:
            f.write(text)
        out = os.path.join(work, name)
        cmd = base + [src, '-o', out] + flags + ['-lm'] if link else \
            base + ['-c', src, '-o', out + '.o'] + [f for f in flags if not f.startswith('-l')]
        run = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=work)
        return run, out, ' '.join(cmd)

    # 1. the consumer, copied out of tests/ (no header next to it), built and run
    with open(os.path.join(source_dir, 'tests', 'install-consumer.c')) as f:
        consumer = f.read()
    run, exe, cmd = compile_('install-consumer', consumer, True)
    print('# ' + cmd)
    if run.returncode != 0:
        print('# the consumer does not build:\n# ' + run.stderr.strip().replace('\n', '\n# '))
        return False
    run_env = dict(env, LD_LIBRARY_PATH=at('libdir'))
    ldd = subprocess.run(['ldd', exe], env=run_env, capture_output=True, text=True).stdout
    loaded = [l.split('=>')[1].split()[0] for l in ldd.splitlines()
              if 'libtomolab-compute' in l and '=>' in l]
    if not loaded or not os.path.realpath(loaded[0]).startswith(at('libdir')):
        print('# the consumer does not load the installed library:\n# ' + ldd.replace('\n', '\n# '))
        ok = False
    run = subprocess.run([exe], env=run_env, capture_output=True, text=True)
    print('# ' + (run.stdout + run.stderr).strip().replace('\n', '\n# '))
    ok &= run.returncode == 0

    # 2. every installed header, each on its own first (self-contained with installed headers)
    inc = at('includedir')
    installed = sorted(os.path.relpath(os.path.join(r, n), os.path.join(inc, 'tomolab'))
                       for r, _, ns in os.walk(os.path.join(inc, 'tomolab')) for n in ns
                       if n.endswith('.h'))
    text = ''.join('#include "%s"\n' % h for h in installed) + 'int main(void) { return 0; }\n'
    run, _, _ = compile_('all-headers', text, True)
    if run.returncode != 0:
        print('# the installed headers do not compile together:\n# ' +
              run.stderr.strip().replace('\n', '\n# '))
        ok = False
    else:
        print('# %d installed headers compile together' % len(installed))

    # 3. what must fail: a private header is not there, a hidden function does not link
    private = read_private(source_dir)
    run, _, _ = compile_('private-header', '#include "%s"\nint main(void) { return 0; }\n'
                         % private[0], False)
    if run.returncode == 0:
        print('# the private header %s compiles from the installed tree' % private[0])
        ok = False
    hidden = 'tl_device_info_read'
    run, _, _ = compile_('hidden-symbol', 'void %s(void);\nint main(void) { %s(); return 0; }\n'
                         % (hidden, hidden), True)
    if run.returncode == 0 or hidden not in run.stderr:
        print('# %s (core/tl-device-info.h, private) links against the installed library'
              % hidden)
        ok = False
    else:
        print('# as expected: %s is private and %s does not link' % (private[0], hidden))
    return ok


def read_private(source_dir):
    with open(os.path.join(source_dir, 'compute', 'private-headers.txt')) as f:
        return [l.strip() for l in f if l.strip() and not l.lstrip().startswith('#')]


# What a toolchain may add to the dynamic table besides tl_* (e.g. _init, _fini on some
# targets): nothing with GCC 12 / GNU ld 2.40.
TOOLCHAIN_EXTRA = set()


def dynamic_symbols(path):
    out = subprocess.run(['nm', '-D', '--defined-only', path], capture_output=True, text=True,
                         check=True).stdout
    return sorted(l.split()[-1] for l in out.splitlines() if l.strip())


def symbol_faults(exported, declared, prefix='tl_'):
    faults = []
    for name in exported:
        if not name.startswith(prefix) and name not in TOOLCHAIN_EXTRA:
            faults.append('exported but not %s*: %s' % (prefix, name))
    for name in sorted(set(exported) - set(declared)):
        if name.startswith(prefix):
            faults.append('exported but not declared in an installed header: ' + name)
    for name in sorted(set(declared) - set(exported)):
        faults.append('declared in an installed header but not exported: ' + name)
    return faults


def check_symbols(build_dir, source_dir, destdir):
    at, _ = install(build_dir, destdir)
    lib = os.path.realpath(os.path.join(at('libdir'), 'libtomolab-compute.so'))
    exported = dynamic_symbols(lib)
    spec = importlib.util.spec_from_file_location(
        'tl_api_mark', os.path.join(source_dir, 'scripts', 'tl-api-mark.py'))
    mark = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mark)
    declared = set()
    root = os.path.join(at('includedir'), 'tomolab')
    for r, _, names in os.walk(root):
        for n in names:
            with open(os.path.join(r, n)) as f:
                declared |= {d[1] for d in mark.declarations(f.read())}
    print('# %s: %d symbols exported, %d declarations installed'
          % (os.path.basename(lib), len(exported), len(declared)))
    faults = symbol_faults(exported, declared)
    for fault in faults[:40]:
        print('# ' + fault)
    # The self-check: the same comparison must fail on a planted C++/glslang symbol, a hidden
    # declaration, and the real table read with a wrong prefix.
    planted = symbol_faults(exported + ['_ZN7glslang8TProgramD1Ev'], declared | {'tl_planted'})
    wrong = symbol_faults(exported, {n.replace('tl_', 'tl_x_', 1) for n in declared}, 'tl_x_')
    self_ok = any('_ZN7glslang8TProgramD1Ev' in f for f in planted) and \
        any('tl_planted' in f for f in planted) and len(exported) > 100 and \
        sum('not tl_x_*' in f for f in wrong) == len(exported)
    if not self_ok:
        print('# the self-check did not see its planted faults')
    return not faults and self_ok


def main(argv):
    mode, build_dir, source_dir, cc, *extra = argv[1:]
    print('1..1')
    with tempfile.TemporaryDirectory(prefix='tl-install-') as destdir:
        if mode == 'files':
            ok = check_files(build_dir, source_dir, destdir)
        elif mode == 'symbols':
            ok = check_symbols(build_dir, source_dir, destdir)
        else:
            ok = check_consumer(build_dir, source_dir, destdir, cc, extra)
    print(('ok' if ok else 'not ok') + ' 1 ' + mode)
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main(sys.argv))
