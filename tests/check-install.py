#!/usr/bin/env python3
"""`meson install --destdir` into an empty temporary folder, then (TAP):
  files     the installed files, directories written as ${bindir} etc. (${prefix} for the
            rest: the Python package), equal
            tests/install-files.txt (a diff names what is missing and what is unexpected);
            the installed tomolab-cli runs `info` from there (LD_LIBRARY_PATH) and carries no
            path into the build tree;
  consumer  tests/install-consumer.c, compiled with only `pkg-config --cflags --libs
            tomolab-compute` against the installed copy, runs a forward projection.
Usage: check-install.py files|consumer BUILD_DIR SOURCE_DIR CC [EXTRA_CFLAG...]"""
import json
import os
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


def check_consumer(build_dir, source_dir, destdir, cc, extra):
    at, _ = install(build_dir, destdir)
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
    flags = subprocess.run(['pkg-config', '--cflags', '--libs', 'tomolab-compute'], env=env,
                           capture_output=True, text=True, check=True).stdout.split()
    exe = os.path.join(destdir, 'install-consumer')
    cmd = shlex.split(cc) + extra + [os.path.join(source_dir, 'tests', 'install-consumer.c'),
                                     '-o', exe] + flags + ['-lm']
    print('# ' + ' '.join(cmd))
    subprocess.run(cmd, check=True)
    run = subprocess.run([exe], env=dict(os.environ, LD_LIBRARY_PATH=at('libdir')),
                         capture_output=True, text=True)
    print('# ' + (run.stdout + run.stderr).strip().replace('\n', '\n# '))
    return run.returncode == 0


def main(argv):
    mode, build_dir, source_dir, cc, *extra = argv[1:]
    print('1..1')
    with tempfile.TemporaryDirectory(prefix='tl-install-') as destdir:
        if mode == 'files':
            ok = check_files(build_dir, source_dir, destdir)
        else:
            ok = check_consumer(build_dir, source_dir, destdir, cc, extra)
    print(('ok' if ok else 'not ok') + ' 1 ' + mode)
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main(sys.argv))
