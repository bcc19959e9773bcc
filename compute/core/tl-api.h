/* SPDX-License-Identifier: GPL-3.0-or-later */
/* TL_API marks what libtomolab-compute exports: every function and variable declared in an
 * installed header carries it (scripts/tl-api-mark.py --check keeps it so). The library is
 * compiled with -fvisibility=hidden and linked with compute/tl-compute.map, so anything
 * unmarked, and everything of the static glslang/SPIRV-Tools it carries, stays inside.
 * Headers listed in compute/private-headers.txt are not installed and carry no TL_API: their
 * functions are reachable only from the library's own objects (programs of this repository
 * that need them link tomolab-compute-internal, the same objects as a static archive). */
#pragma once

#if defined(__GNUC__) || defined(__clang__)
#define TL_API __attribute__((visibility("default")))
#else
#define TL_API
#endif
