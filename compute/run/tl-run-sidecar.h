/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Provenance of a reconstructed image: a JSON sidecar beside it (same name, .json) holding the
 * run description (TlRunSpec, every key as a string under "TomolabRun"), each input file's
 * SHA-256, Tomolab's version, the device, and the BIDS-PET keys where BIDS has one
 * (ReconMethodName, ReconMethodParameterLabels / Units / Values, ReconFilterType /
 * ReconFilterSize, AttenuationCorrection, ScatterCorrectionMethod, RandomsCorrectionMethod,
 * Units). Schema: docs/schema/tomolab-recon-sidecar.schema.json; format: docs/formats.md.
 * `tomolab-cli recon --run IMAGE.json` reads the run part back (tl_run_spec_load). */
#pragma once
#include "tl-api.h"
#include <glib.h>
#include "tl-run-spec.h"

G_BEGIN_DECLS

/* "img.nii.gz" -> "img.json", "out/img.nii" -> "out/img.json", "img" -> "img.json". */
TL_API char *tl_run_sidecar_path(const char *image_path);

/* The sidecar's text. device: the device's name; units: the image's unit ("" or NULL:
 * arbitrary). Reads every input file named by the run (data, attenuation, norm, randoms-file,
 * scatter-file, truth, start, resume, kernels) for its SHA-256. */
TL_API char *tl_run_sidecar_json(const TlRunSpec *s, const char *device, const char *units,
                          GError **error);
/* Writes tl_run_sidecar_path(image_path) atomically. */
TL_API gboolean tl_run_sidecar_write(const char *image_path, const TlRunSpec *s, const char *device,
                              const char *units, GError **error);

/* The same with notes (may be NULL; NULL-terminated): sentences on what the run found, written
 * as "TomolabNotes" (a searched centre: the run part holds the column found, so a rerun from
 * the sidecar does not depend on the search, and the note says it was searched). */
TL_API char *tl_run_sidecar_json_notes(const TlRunSpec *s, const char *device, const char *units,
                                       const char *const *notes, GError **error);
TL_API gboolean tl_run_sidecar_write_notes(const char *image_path, const TlRunSpec *s,
                                           const char *device, const char *units,
                                           const char *const *notes, GError **error);

/* The run of a CT dataset whose centre was searched (tl_dataset_search_centre or
 * tl_dataset_find_centre): a copy of `s` with centre = the column found, and the note saying
 * so (g_free) in *note. */
TL_API TlRunSpec *tl_run_spec_with_centre(const TlRunSpec *s, double centre, double metric,
                                         char **note);

/* The run part ("TomolabRun") of a sidecar's text into s; a JSON syntax error or a bad key
 * names the source and the byte offset or key. */
TL_API gboolean tl_run_sidecar_read_run(TlRunSpec *s, const char *json, const char *source,
                                 GError **error);

/* SHA-256 of a file's bytes, hex (g_free). */
TL_API char *tl_run_file_sha256(const char *path, GError **error);

G_END_DECLS
