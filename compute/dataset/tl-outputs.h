/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The one output-safety check (docs/reliability.md, "Outputs never harm inputs"): before any
 * work, no file an output writes, replaces or removes is an input or a file an input reads —
 * the data file its header names, its sidecar (each format's `companions`, image/tl-format.h)
 * — and no two outputs share a file. `convert x.mhd y.mhd` with x.mhd's data in y.raw is
 * refused before y.raw is touched. */
#pragma once
#include "tl-api.h"
#include <glib.h>
#include "tl-error.h"

G_BEGIN_DECLS

/* A file and what named it ("-o", "--truth", "IN"); path NULL: not given. */
typedef struct {
  const char *option;
  const char *path;
} TlNamedFile;

/* Every file of `path`: itself, then its format's companions (writing: those of every format
 * that writes a file of that name; reading: those of the detected format). g_strfreev. */
TL_API char **tl_outputs_files_of(const char *path, gboolean writing);

/* Refuses an output any of whose files is one of an input's files or another output's file
 * (the same inode, or the same absolute path when one does not exist), naming both options,
 * both paths and the shared file. */
TL_API gboolean tl_outputs_check(const TlNamedFile *inputs, gsize n_inputs,
                                 const TlNamedFile *outputs, gsize n_outputs, GError **error);

G_END_DECLS
