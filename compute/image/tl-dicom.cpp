/* SPDX-License-Identifier: GPL-3.0-or-later */
// The C interface of tl-dicom.h over DCMTK (the only C++ of Tomolab): DcmFileFormat reads
// the file, its codecs decompress, and the values are checked here before any use.
#include <dcmtk/config/osconfig.h>
#include <dcmtk/dcmdata/dctk.h>
#include <dcmtk/dcmdata/dcrledrg.h>
#include <dcmtk/dcmjpeg/djdecode.h>
#include <dcmtk/dcmjpls/djdecode.h>
#include <dcmtk/oflog/oflog.h>
#include <cmath>
#include <cstring>

extern "C" {
#include "tl-dicom.h"
}

static void register_codecs() {
  static gsize done = 0;
  if (g_once_init_enter(&done)) {
    // DCMTK logs parser warnings to stderr; the GError says what matters
    OFLog::configure(OFLogger::FATAL_LOG_LEVEL);
    DcmRLEDecoderRegistration::registerCodecs();
    DJDecoderRegistration::registerCodecs();
    DJLSDecoderRegistration::registerCodecs();
    g_once_init_leave(&done, 1);
  }
}

static gboolean fail(GError **error, const char *path, const char *key, const char *fmt, ...)
    G_GNUC_PRINTF(4, 5);
static gboolean fail(GError **error, const char *path, const char *key, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char *what = g_strdup_vprintf(fmt, ap);
  va_end(ap);
  g_set_error(error, TL_ERROR, TL_ERROR_FORMAT, "'%s': DICOM %s: %s", path, key, what);
  g_free(what);
  return FALSE;
}

// A required unsigned short attribute within [lo, hi].
static gboolean get_us(DcmDataset *ds, const DcmTagKey &tag, const char *path, const char *key,
                       guint lo, guint hi, guint *out, GError **error) {
  Uint16 v = 0;
  if (ds->findAndGetUint16(tag, v).bad())
    return fail(error, path, key, "missing (an image needs it)");
  if (v < lo || v > hi) return fail(error, path, key, "%u, expected %u .. %u", v, lo, hi);
  *out = v;
  return TRUE;
}

// An optional decimal string with n values, each finite; FALSE + error when present but bad.
static gboolean get_ds(DcmDataset *ds, const DcmTagKey &tag, const char *path, const char *key,
                       unsigned n, double *out, gboolean *present, GError **error) {
  *present = FALSE;
  DcmElement *e = NULL;
  if (ds->findAndGetElement(tag, e).bad() || !e || e->getLength() == 0) return TRUE;
  if (e->getVM() != n) return fail(error, path, key, "%lu values, expected %u",
                                   (unsigned long)e->getVM(), n);
  for (unsigned i = 0; i < n; i++) {
    Float64 v = 0;
    if (e->getFloat64(v, i).bad() || !std::isfinite(v) || std::fabs(v) > 1e9) {
      OFString s;
      e->getOFString(s, i);
      char *q = g_strescape(s.c_str(), NULL);
      gboolean r = fail(error, path, key, "value %u is '%.40s', expected a finite number", i + 1,
                        q);
      g_free(q);
      return r;
    }
    out[i] = v;
  }
  *present = TRUE;
  return TRUE;
}

extern "C" gboolean tl_dicom_read(const char *path, gboolean want_pixels, TlDicomSlice *out,
                                  GError **error) {
  register_codecs();
  memset(out, 0, sizeof *out);
  out->slope = 1;
  DcmFileFormat ff;
  OFCondition c = ff.loadFile(path);
  if (c.bad()) {
    g_set_error(error, TL_ERROR, TL_ERROR_FORMAT, "'%s': not a readable DICOM file (DCMTK: %s)",
                path, c.text());
    return FALSE;
  }
  DcmDataset *ds = ff.getDataset();
  guint spp = 1, bits = 0, stored = 0, sign = 0;
  if (!get_us(ds, DCM_Rows, path, "Rows (0028,0010)", 1, TL_DICOM_MAX_DIM, &out->rows, error) ||
      !get_us(ds, DCM_Columns, path, "Columns (0028,0011)", 1, TL_DICOM_MAX_DIM, &out->cols,
              error) ||
      !get_us(ds, DCM_BitsAllocated, path, "BitsAllocated (0028,0100)", 8, 16, &bits, error) ||
      !get_us(ds, DCM_BitsStored, path, "BitsStored (0028,0101)", 1, bits, &stored, error) ||
      !get_us(ds, DCM_PixelRepresentation, path, "PixelRepresentation (0028,0103)", 0, 1, &sign,
              error))
    return FALSE;
  if (bits != 8 && bits != 16)
    return fail(error, path, "BitsAllocated (0028,0100)", "%u, expected 8 or 16", bits);
  Uint16 s16 = 1;
  if (ds->findAndGetUint16(DCM_SamplesPerPixel, s16).good()) spp = s16;
  if (spp != 1)
    return fail(error, path, "SamplesPerPixel (0028,0002)", "%u, expected 1 (greyscale)", spp);
  Sint32 frames = 1;
  if (ds->findAndGetSint32(DCM_NumberOfFrames, frames).good() && frames != 1)
    return fail(error, path, "NumberOfFrames (0028,0008)", "%d, expected 1 (single-frame images)",
                (int)frames);
  gboolean present;
  double sp[2] = {1, 1};
  if (!get_ds(ds, DCM_PixelSpacing, path, "PixelSpacing (0028,0030)", 2, sp, &present, error))
    return FALSE;
  if (!present)
    return fail(error, path, "PixelSpacing (0028,0030)", "missing (a slice needs its spacing)");
  if (!(sp[0] > 0) || !(sp[1] > 0))
    return fail(error, path, "PixelSpacing (0028,0030)", "%g \\ %g, expected two sizes > 0 mm",
                sp[0], sp[1]);
  out->spacing[0] = sp[0], out->spacing[1] = sp[1];
  double v[6];
  if (!get_ds(ds, DCM_ImagePositionPatient, path, "ImagePositionPatient (0020,0032)", 3, v,
              &out->has_position, error))
    return FALSE;
  if (out->has_position) memcpy(out->position, v, 3 * sizeof(double));
  if (!get_ds(ds, DCM_ImageOrientationPatient, path, "ImageOrientationPatient (0020,0037)", 6, v,
              &out->has_orientation, error))
    return FALSE;
  if (out->has_orientation) memcpy(out->orientation, v, 6 * sizeof(double));
  if (!get_ds(ds, DCM_SliceThickness, path, "SliceThickness (0018,0050)", 1, v, &present, error))
    return FALSE;
  if (present && !(v[0] >= 0))
    return fail(error, path, "SliceThickness (0018,0050)", "%g, expected >= 0 mm", v[0]);
  out->thickness = present ? v[0] : 0;
  if (!get_ds(ds, DCM_RescaleSlope, path, "RescaleSlope (0028,1053)", 1, v, &present, error))
    return FALSE;
  if (present && v[0] == 0)
    return fail(error, path, "RescaleSlope (0028,1053)", "0, expected a non-zero factor");
  if (present) out->slope = v[0];
  if (!get_ds(ds, DCM_RescaleIntercept, path, "RescaleIntercept (0028,1052)", 1, v, &present,
              error))
    return FALSE;
  if (present) out->intercept = v[0];
  OFString s;
  if (ds->findAndGetOFString(DCM_Modality, s).good()) g_strlcpy(out->modality, s.c_str(), 17);
  if (ds->findAndGetOFString(DCM_SeriesInstanceUID, s).good())
    g_strlcpy(out->series_uid, s.c_str(), 65);
  out->by_tomolab = ds->findAndGetOFString(DCM_Manufacturer, s).good() && s == "Tomolab";
  Sint32 images = 0;
  if (ds->findAndGetSint32(DCM_ImagesInAcquisition, images).good() && images > 0)
    out->images_in_acquisition = (guint)images;
  if (!want_pixels) return TRUE;

  // compressed transfer syntaxes: decoded in place by the registered codecs
  E_TransferSyntax xfer = ds->getOriginalXfer();
  if (ds->chooseRepresentation(EXS_LittleEndianExplicit, NULL).bad() ||
      !ds->canWriteXfer(EXS_LittleEndianExplicit)) {
    DcmXfer x(xfer);
    return fail(error, path, "transfer syntax (0002,0010)", "%s (%s): DCMTK cannot decode it",
                x.getXferName(), x.getXferID());
  }
  gsize n = (gsize)out->rows * out->cols;
  unsigned long count = 0;
  const Uint16 *p16 = NULL;
  const Uint8 *p8 = NULL;
  OFCondition pc = bits == 16 ? ds->findAndGetUint16Array(DCM_PixelData, p16, &count)
                              : ds->findAndGetUint8Array(DCM_PixelData, p8, &count);
  if (pc.bad() || (!p16 && !p8))
    return fail(error, path, "PixelData (7FE0,0010)", "missing or unreadable (%s)", pc.text());
  if (count < n)
    return fail(error, path, "PixelData (7FE0,0010)", "%lu values, expected %u x %u = %zu",
                count, out->rows, out->cols, n);
  out->pixels = (float *)g_try_malloc(n * sizeof(float));
  if (!out->pixels)
    return fail(error, path, "PixelData (7FE0,0010)", "%zu values do not fit in memory", n);
  guint32 mask = stored >= 32 ? 0xffffffffu : ((1u << stored) - 1);
  guint32 top = 1u << (stored - 1);
  for (gsize i = 0; i < n; i++) {
    guint32 raw = (bits == 16 ? p16[i] : p8[i]) & mask;
    // two's complement within BitsStored bits when PixelRepresentation = 1
    double value = sign && (raw & top) ? (double)raw - (double)(mask + 1.0) : (double)raw;
    out->pixels[i] = (float)(out->slope * value + out->intercept);
  }
  return TRUE;
}

extern "C" void tl_dicom_slice_clear(TlDicomSlice *s) {
  g_free(s->pixels);
  s->pixels = NULL;
}

// --- writing (tl_dicom_write_slice): the attributes of the chosen IOD, PS3.3 modules named.

extern "C" void tl_dicom_new_uid(char out[65]) {
  // DCMTK's root (SITE_INSTANCE_UID_ROOT) + host id, process id, time and a counter
  dcmGenerateUniqueIdentifier(out);
}

extern "C" gboolean tl_dicom_write_slice(const char *path, const char *shown_as,
                                         const TlDicomWriteSlice *s, GError **error) {
  DcmFileFormat ff;
  DcmDataset *ds = ff.getDataset();
  OFCondition c = EC_Normal;
  auto str = [&](const DcmTagKey &tag, const char *v) {
    if (c.good()) c = ds->putAndInsertString(tag, v);
  };
  auto us = [&](const DcmTagKey &tag, Uint16 v) {
    if (c.good()) c = ds->putAndInsertUint16(tag, v);
  };
  auto empty = [&](const DcmTagKey &tag) { // Type 2: present, no value (nothing is claimed)
    if (c.good()) c = ds->insertEmptyElement(tag);
  };
  const char *sop = s->iod == TL_DICOM_PET  ? UID_PositronEmissionTomographyImageStorage
                    : s->iod == TL_DICOM_CT ? UID_CTImageStorage
                                            : UID_SecondaryCaptureImageStorage;
  char num[32], uid[65];
  tl_dicom_new_uid(uid);
  // SOP Common
  str(DCM_SOPClassUID, sop);
  str(DCM_SOPInstanceUID, uid);
  // Patient: placeholders, Tomolab knows no patient
  str(DCM_PatientName, "Anonymous");
  str(DCM_PatientID, "Anonymous");
  empty(DCM_PatientBirthDate);
  empty(DCM_PatientSex);
  // General Study
  str(DCM_StudyInstanceUID, s->study_uid);
  str(DCM_StudyDate, s->date);
  str(DCM_StudyTime, s->time);
  empty(DCM_ReferringPhysicianName);
  empty(DCM_StudyID);
  empty(DCM_AccessionNumber);
  // General Series (PatientPosition: Type 2C, empty: the patient's position is not known)
  str(DCM_Modality, s->iod == TL_DICOM_PET ? "PT" : s->iod == TL_DICOM_CT ? "CT" : "OT");
  str(DCM_SeriesInstanceUID, s->series_uid);
  str(DCM_SeriesNumber, "1");
  str(DCM_SeriesDate, s->date);
  str(DCM_SeriesTime, s->time);
  str(DCM_SeriesDescription, s->description);
  if (s->iod != TL_DICOM_SECONDARY_CAPTURE) empty(DCM_PatientPosition);
  // Frame of Reference
  str(DCM_FrameOfReferenceUID, s->frame_uid);
  empty(DCM_PositionReferenceIndicator);
  // General Equipment (and SC Equipment: a workstation made it)
  str(DCM_Manufacturer, "Tomolab");
  if (s->iod == TL_DICOM_SECONDARY_CAPTURE) str(DCM_ConversionType, "WSD");
  // General Image
  g_snprintf(num, sizeof num, "%u", s->instance);
  str(DCM_InstanceNumber, num);
  // the series' slice count on every slice (Type 3): the reader tells a series whose save was
  // killed between its renames from a complete one
  g_snprintf(num, sizeof num, "%u", s->n_slices);
  str(DCM_ImagesInAcquisition, num);
  str(DCM_ContentDate, s->date);
  str(DCM_ContentTime, s->time);
  str(DCM_ImageType, s->iod == TL_DICOM_PET  ? "DERIVED\\PRIMARY"
                     : s->iod == TL_DICOM_CT ? "DERIVED\\SECONDARY\\AXIAL"
                                             : "DERIVED\\SECONDARY");
  // Image Plane
  char text[6 * 17 + 8];
  g_snprintf(text, sizeof text, "%s\\%s", s->spacing[0], s->spacing[1]);
  str(DCM_PixelSpacing, text);
  g_snprintf(text, sizeof text, "%s\\%s\\%s\\%s\\%s\\%s", s->orientation[0], s->orientation[1],
             s->orientation[2], s->orientation[3], s->orientation[4], s->orientation[5]);
  str(DCM_ImageOrientationPatient, text);
  g_snprintf(text, sizeof text, "%s\\%s\\%s", s->position[0], s->position[1], s->position[2]);
  str(DCM_ImagePositionPatient, text);
  str(DCM_SliceThickness, s->thickness);
  str(DCM_SpacingBetweenSlices, s->thickness);
  str(DCM_SliceLocation, s->location);
  // Image Pixel: 16-bit greyscale
  us(DCM_SamplesPerPixel, 1);
  str(DCM_PhotometricInterpretation, "MONOCHROME2");
  us(DCM_Rows, (Uint16)s->rows);
  us(DCM_Columns, (Uint16)s->cols);
  us(DCM_BitsAllocated, 16);
  us(DCM_BitsStored, 16);
  us(DCM_HighBit, 15);
  us(DCM_PixelRepresentation, s->is_signed ? 1 : 0);
  // Modality LUT (SC; RescaleType US: unspecified), CT Image (HU), PET Image (intercept 0)
  str(DCM_RescaleIntercept, s->intercept);
  str(DCM_RescaleSlope, s->slope);
  if (s->iod == TL_DICOM_SECONDARY_CAPTURE) str(DCM_RescaleType, "US");
  if (s->iod == TL_DICOM_CT) {
    str(DCM_RescaleType, "HU");
    empty(DCM_KVP);
    empty(DCM_AcquisitionNumber);
  }
  if (s->iod == TL_DICOM_PET) {
    // PET Series: a static, decay-uncorrected emission image in the units the caller backs
    str(DCM_Units, s->bqml ? "BQML" : "NONE");
    str(DCM_CountsSource, "EMISSION");
    str(DCM_SeriesType, "STATIC\\IMAGE");
    empty(DCM_CorrectedImage);
    str(DCM_DecayCorrection, "NONE");
    g_snprintf(num, sizeof num, "%u", s->n_slices);
    str(DCM_NumberOfSlices, num);
    empty(DCM_CollimatorType);
    // PET Isotope, NM/PET Patient Orientation, Acquisition Context: Type 2 sequences
    empty(DCM_RadiopharmaceuticalInformationSequence);
    empty(DCM_PatientOrientationCodeSequence);
    empty(DCM_PatientGantryRelationshipCodeSequence);
    empty(DCM_AcquisitionContextSequence);
    // PET Image
    str(DCM_FrameReferenceTime, "0");
    g_snprintf(num, sizeof num, "%u", s->instance);
    str(DCM_ImageIndex, num);
    empty(DCM_AcquisitionDate);
    empty(DCM_AcquisitionTime);
    empty(DCM_ActualFrameDuration);
  }
  if (c.good())
    c = ds->putAndInsertUint16Array(DCM_PixelData, s->pixels,
                                    (unsigned long)s->rows * s->cols);
  if (c.good())
    c = ff.saveFile(path, EXS_LittleEndianExplicit, EET_ExplicitLength, EGL_recalcGL,
                    EPD_noChange, 0, 0, EWM_fileformat);
  if (c.bad()) {
    g_set_error(error, TL_ERROR, TL_ERROR_IO, "cannot write '%s': DICOM (DCMTK: %s)", shown_as,
                c.text());
    return FALSE;
  }
  return TRUE;
}
