/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Where a photon leaving point p along direction d hits the crystals (the simulator's
 * detection). Every crystal group (polygon side, head) must be a planar module: crystals
 * sharing one inward normal, centres on one plane, forming a grid in it. The photon
 * leaves the (convex) scanner through the group plane it reaches first, and is detected
 * when it crosses that plane within a crystal's face (crystal_size[0] x crystal_size[1]
 * around the centre); gaps between faces lose it. */
#pragma once
#include "pet/scanner/tl-scanner.h"

G_BEGIN_DECLS

typedef struct _TlDetector TlDetector;

TlDetector *tl_detector_new(const TlScanner *s, GError **error);
void tl_detector_free(TlDetector *det);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(TlDetector, tl_detector_free)

/* Crystal id hit by the ray p + t d (t > 0), or -1; *hit gets the crossing point. */
gint64 tl_detector_cast(const TlDetector *det, const double p[3], const double d[3], double hit[3]);
/* TRUE when p lies in front of every group plane (inside the scanner). */
gboolean tl_detector_inside(const TlDetector *det, const double p[3]);

G_END_DECLS
