#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""TAP test of flatpak/org.tomolab.Tomolab.yml and of its local variant
(flatpak/local-manifest.py):
  1. the Flathub manifest validates against flatpak/manifest.schema.json;
  2. Flathub rules the schema cannot say: GNOME runtime and SDK of one version, GPU and
     display access, no blanket file access (files go through the portal);
  3. the local variant validates too and differs from the Flathub one only where intended;
  4. self-test: planted mistakes are each rejected.
Usage: check-flatpak-manifest.py SOURCE_DIR"""
import copy
import json
import os
import subprocess
import sys

import jsonschema
import yaml

BROAD_FILESYSTEMS = ('--filesystem=home', '--filesystem=host', '--filesystem=host-os',
                     '--filesystem=/')


def problems(manifest, schema):
    found = [e.message for e in jsonschema.Draft7Validator(schema).iter_errors(manifest)]
    if found:
        return found
    if not manifest['runtime'].startswith('org.gnome.Platform') or manifest['sdk'] != 'org.gnome.Sdk':
        found.append('runtime/sdk are not org.gnome.Platform/org.gnome.Sdk')
    args = manifest.get('finish-args', [])
    for needed in ('--device=dri', '--socket=wayland', '--socket=fallback-x11'):
        if needed not in args:
            found.append('finish-args lack ' + needed)
    for arg in args:
        if arg.split(':')[0] in BROAD_FILESYSTEMS or arg == '--socket=x11':
            found.append('finish-args have ' + arg)
    return found


def main(source_dir):
    with open(os.path.join(source_dir, 'flatpak', 'manifest.schema.json')) as f:
        schema = json.load(f)
    with open(os.path.join(source_dir, 'flatpak', 'org.tomolab.Tomolab.yml')) as f:
        manifest = yaml.safe_load(f)
    results = []

    found = problems(manifest, schema)
    results.append(('flathub manifest is valid', found))

    local_json = subprocess.run(
        [sys.executable, os.path.join(source_dir, 'flatpak', 'local-manifest.py'),
         os.path.join(source_dir, 'flatpak', 'org.tomolab.Tomolab.yml'), source_dir,
         'org.tomolab.Debian.Platform', 'org.tomolab.Debian.Sdk', '12', 'build'],
        check=True, capture_output=True, text=True).stdout
    local = json.loads(local_json)
    found = [e.message for e in jsonschema.Draft7Validator(schema).iter_errors(local)]
    changed = sorted(k for k in set(manifest) | set(local) if manifest.get(k) != local.get(k))
    if changed != ['appstream-compose', 'modules', 'runtime', 'runtime-version', 'sdk']:
        found.append('local variant changes ' + ', '.join(changed))
    flathub_app, local_app = manifest['modules'][-1], local['modules'][-1]
    if {k: v for k, v in flathub_app.items() if k != 'sources'} != \
       {k: v for k, v in local_app.items() if k != 'sources'}:
        found.append('local variant builds the app differently')
    results.append(('local manifest is valid and differs only where intended', found))

    # Self-test: each mutation must be caught.
    def mutate(how):
        m = copy.deepcopy(manifest)
        how(m)
        return m
    plants = {
        'misspelt key': lambda m: m.update({'finsh-args': []}),
        'archive without sha256': lambda m: m['modules'][0]['sources'][0].pop('sha256'),
        'short sha256': lambda m: m['modules'][0]['sources'][0].update({'sha256': 'abc'}),
        'home access': lambda m: m['finish-args'].append('--filesystem=home'),
        'no GPU': lambda m: m['finish-args'].remove('--device=dri'),
        'unknown buildsystem': lambda m: m['modules'][0].update({'buildsystem': 'scons'}),
        'module without sources': lambda m: m['modules'][0].pop('sources'),
    }
    missed = [name for name, how in plants.items() if not problems(mutate(how), schema)]
    results.append(('self-test: planted mistakes are rejected',
                    ['not caught: ' + name for name in missed]))

    print('1..{}'.format(len(results)))
    for i, (name, found) in enumerate(results, 1):
        for problem in found:
            print('# ' + problem)
        print('{} {} {}'.format('not ok' if found else 'ok', i, name))
    return 1 if any(found for _, found in results) else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1]))
