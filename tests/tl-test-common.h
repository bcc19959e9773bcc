/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Shared by the tests: a context that must exist (no device is a failure, never a skip)
 * and a teardown that fails on any validation message. */
#pragma once
#include "tomolab-compute.h"

/* Keeps the Vulkan driver and layers mapped after their instance goes, so LeakSanitizer
 * can name their one-time allocations (tests/lsan.supp). Before the first instance. */
void tl_test_pin_vulkan_modules(void);
/* g_test_init plus what every device test needs before its first Vulkan instance. */
void tl_test_init(int *argc, char ***argv);
TlContext *tl_test_context(void);
/* Asserts the validation layer is on and reported nothing, then frees. */
void tl_test_context_done(TlContext *ctx);
/* Fills a 1-D float array on the device with `value` using the fill_f32 kernel. */
void tl_test_fill(TlContext *ctx, TlStream *s, TlArray *a, float value, const char *label);
/* A new float array of n values on the device, holding `data` (left unset when NULL). */
TlArray *tl_test_upload(TlContext *ctx, const float *data, guint64 n);
/* Removes `path` and, for a folder, everything under it; symbolic links are removed, never
 * followed (a test's folder may hold links that point out of it on purpose). */
void tl_test_remove_tree(const char *path);
