/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The image formats: image/'s part of the format table (compute/dataset/tl-formats.c lists
 * these first) and the one image loader and writer every door uses, so an image that
 * `tomolab-cli info` recognises is an image that a mu-map, a truth or Python's load_image
 * reads. Kept in image/ (not at the table) so image/'s users need nothing above image/. */
#include "image/tl-image.h"
#include "image/tl-dicom.h"
#include "image/tl-interfile.h"
#include "image/tl-metaimage.h"

/* NIfTI first: for_output's ties (none today) go to the most common format. */
static const TlFormatClass *const image_formats[] = {
    &tl_format_nifti, &tl_format_raw,       &tl_format_interfile, &tl_format_metaimage,
    &tl_format_dicom, &tl_format_dicom_pet, &tl_format_dicom_ct,  NULL,
};

const TlFormatClass *const *tl_image_formats(void) { return image_formats; }

TlImage *tl_image_load(const char *path, GError **error) {
  const TlFormatClass *f = tl_format_detect_in(image_formats, path, error);
  if (!f) {
    g_prefix_error(error, "reading an image: ");
    return NULL;
  }
  return f->load(path, error);
}

gboolean tl_image_save(const TlImage *im, const char *path, GError **error) {
  const TlFormatClass *f = tl_format_for_output_in(image_formats, path, TL_DATA_IMAGE, NULL, error);
  return f && f->save(im, path, error);
}
