/* SPDX-License-Identifier: GPL-3.0-or-later */
/* `tomolab --run FILE [--output IMAGE]`: a run file taken through the window's own door, with no
 * display: the data opened as the window opens them (tl_document_load), the job made as the
 * window's runner makes it (tl_document_new_job, from the run), stepped to the run's end, and
 * the image written with its provenance sidecar, as the CLI writes them. The cross-door test
 * compares it with `tomolab-cli recon --run FILE` and Python (python/tests/test_cross_door.py). */
#pragma once
#include <glib.h>

G_BEGIN_DECLS

/* 0 on success; 1 with the reason on stderr. output (may be NULL): over the run's output key;
 * device (may be NULL): over the run's device key. */
int tl_headless_run(const char *run_path, const char *output, const char *device);


/* `tomolab --race FILE [--csv OUT]`: a race file (run/tl-run-race-spec.h, the keys
 * `tomolab-cli race --race` reads) run through the window's race job (tl-race-job.h) with no
 * display: its data opened as the window opens them, every round stepped as the Race window's
 * runner steps it, and the CSV written from the window's board. 0 on success; 1 with the reason
 * on stderr. csv (may be NULL): over the race's csv key. */
int tl_headless_race(const char *race_path, const char *csv, const char *device);

G_END_DECLS
