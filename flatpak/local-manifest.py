#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""Prints (as JSON) the local variant of the Flathub manifest that scripts/flatpak-local.sh
builds. The only differences, all needed because Flathub is out of reach here:
  - runtime, runtime-version and sdk: the Debian 12 runtime the script makes;
  - the modules that runtime already carries (Debian's libcglm-dev, nifticlib, libhdf5-dev
    and libdcmtk-dev; scripts/flatpak-local.sh's package list) are dropped;
  - the app is built from this checkout (a dir source, skipping what git ignores) instead of
    the release tag;
  - appstream-compose: false (the Debian SDK has no appstream-compose).
Usage: local-manifest.py MANIFEST SOURCE_DIR PLATFORM SDK BRANCH [SKIPPED_PATH...]"""
import json
import sys

import yaml

# Module name in the Flathub manifest -> the Debian packages that replace it.
VENDORED_IN_RUNTIME = {'cglm': 'libcglm-dev', 'nifti_clib': 'libniftiio-dev libnifti2-dev libznz-dev',
                       'hdf5': 'libhdf5-dev', 'dcmtk': 'libdcmtk-dev'}


def main(argv):
    manifest_path, source_dir, platform, sdk, branch, *skipped = argv[1:]
    with open(manifest_path, encoding='utf-8') as f:
        manifest = yaml.safe_load(f)
    manifest['runtime'] = platform
    manifest['runtime-version'] = branch
    manifest['sdk'] = sdk
    manifest['appstream-compose'] = False
    modules = [m for m in manifest['modules'] if m['name'] not in VENDORED_IN_RUNTIME]
    app = modules[-1]
    if app['name'] != 'tomolab':
        sys.exit('local-manifest: the last module must be tomolab, found ' + app['name'])
    app['sources'] = [{'type': 'dir', 'path': source_dir, 'skip': ['.git'] + skipped}]
    manifest['modules'] = modules
    json.dump(manifest, sys.stdout, indent=2)
    sys.stdout.write('\n')


if __name__ == '__main__':
    main(sys.argv)
