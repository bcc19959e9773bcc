/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The one resolver of the data files a header names (Interfile .hv/.hs, MetaImage .mhd,
 * mMR .l.hdr, CASToR .cdh), with one policy (docs/reliability.md, "Data files a header
 * names"):
 *  - a name is taken relative to the header's folder;
 *  - an absolute name, a `..` that leaves the folder, or a symbolic link whose target lies
 *    outside it is refused, unless the user opts in with TOMOLAB_DATA_OUTSIDE=1 (a hostile
 *    header then cannot make Tomolab read /etc/passwd as an image);
 *  - the header itself (by name or inode) is never its own data file;
 *  - the data file's size must be exactly what the header describes (tl_datafile_check_size):
 *    a larger file means a key was misread (a size given twice), a smaller one truncation. */
#pragma once
#include "tl-api.h"
#include <glib.h>
#include "tl-error.h"

G_BEGIN_DECLS

/* The environment variable that lets a header name data outside its folder. */
#define TL_DATAFILE_OUTSIDE_ENV "TOMOLAB_DATA_OUTSIDE"

/* The path of the data file `name` that the header `header` names under `key` (for
 * messages), following the policy above; GError naming the header, the key, the value and
 * why it is refused. The file need not exist (the reader's own check says so). */
TL_API char *tl_datafile_resolve(const char *header, const char *key, const char *name,
                                 GError **error);
/* Refuses a data file whose size is not `expected` bytes, naming the header, the file, the
 * size found and expected, and `layout` (what the header describes, for the message). */
TL_API gboolean tl_datafile_check_size(const char *header, const char *data_path,
                                       guint64 expected, const char *layout, GError **error);

G_END_DECLS
