/* SPDX-License-Identifier: GPL-3.0-or-later */
/* TlSidePanel: the dataset shown, the algorithm parameters and the display settings.
 * Emits "changed" with the detail "algorithm", "iterations" or "display". */
#pragma once
#include <adwaita.h>
#include "tl-colormap.h"
#include "tl-job.h"

G_BEGIN_DECLS

#define TL_TYPE_SIDE_PANEL (tl_side_panel_get_type())
G_DECLARE_FINAL_TYPE(TlSidePanel, tl_side_panel, TL, SIDE_PANEL, AdwBin)

typedef enum { TL_LEVELS_MIN_MAX, TL_LEVELS_P99_5, TL_LEVELS_P99, TL_LEVELS_MANUAL } TlLevelsPreset;

/* NULL file = no dataset. */
void tl_side_panel_set_dataset(TlSidePanel *self, const char *file, const char *scanner,
                               guint64 events, const TlImageGrid *grid, gboolean truth);
const char *tl_side_panel_get_dataset_file(TlSidePanel *self);
/* The opened file's format (name and summary; NULL = simulated) and what `tomolab-cli info`
 * says of it (the row's tooltip). */
void tl_side_panel_set_dataset_format(TlSidePanel *self, const char *format, const char *details);
const char *tl_side_panel_get_dataset_format(TlSidePanel *self);
/* What the dataset allows the PET rows: list mode (else they are insensitive), TOF bins,
 * a simulated phantom's mu-map (offered for attenuation correction, and chosen when the
 * simulation attenuated). Quiet (no "changed"). */
void tl_side_panel_set_pet_data(TlSidePanel *self, gboolean list_mode, gboolean tof, gboolean phantom_mu,
                                gboolean attenuated);
/* Whether the opened data carry delayed coincidences and singles rates (the Randoms row's
 * choices). Quiet. */
void tl_side_panel_set_delayed(TlSidePanel *self, gboolean delayed, gboolean singles);
/* As if chosen in the file dialog: attenuation correction with this mu-map file; emits
 * "changed::algorithm". */
void tl_side_panel_set_attenuation_file(TlSidePanel *self, const char *path);
/* Fills `opt` (clear it with tl_pet_job_options_clear). */
void tl_side_panel_get_options(TlSidePanel *self, TlPetJobOptions *opt);
guint tl_side_panel_get_iterations(TlSidePanel *self);
/* As if typed in: emits "changed::iterations". */
void tl_side_panel_set_iterations(TlSidePanel *self, guint iterations);
void tl_side_panel_set_algorithm(TlSidePanel *self, gboolean osem, guint subsets, guint iterations);
/* PET, any algorithm of the registry that runs on list mode (mlem, osem, osl, bsrem). */
void tl_side_panel_set_pet_algorithm(TlSidePanel *self, const char *algo, guint subsets,
                                     guint iterations);
/* The prior chosen for algorithms that take one (name "" = none), its beta and gamma; and
 * setting them as a person would (emits "changed::prior": a running or paused job takes them
 * at its next sub-iteration). */
void tl_side_panel_get_prior(TlSidePanel *self, char name[16], double *beta, double *gamma);
void tl_side_panel_set_prior(TlSidePanel *self, const char *name, double beta, double gamma);
/* The algorithm and projector choices of a modality: PET (MLEM, OSEM; Siddon, Joseph, tube
 * of response) or
 * CT (SIRT, OS-SART, CGLS, MLEM, FDK; Joseph, Siddon, Raycast). Quiet (no "changed"). */
void tl_side_panel_set_modality(TlSidePanel *self, gboolean ct);
gboolean tl_side_panel_get_ct(TlSidePanel *self);
void tl_side_panel_get_ct_options(TlSidePanel *self, TlCtJobOptions *opt);
/* FDK / FBP's ramp window (no row; Shepp-Logan until a run sets another). Quiet. */
void tl_side_panel_set_fdk_filter(TlSidePanel *self, TlCtFilter f);
/* Subsets of the selected algorithm (1 where it has none). */
guint tl_side_panel_get_subsets(TlSidePanel *self);
/* CT parallel beam: the centre of rotation row (shown for CT data that have one): the
 * dataset's centre, searched or the file's, over det_u columns. Quiet. */
void tl_side_panel_set_ct_centre(TlSidePanel *self, gboolean parallel, double centre,
                                 guint det_u, gboolean searched);
/* As if typed in (emits "changed::algorithm"); FALSE when the data have no centre. */
gboolean tl_side_panel_set_centre(TlSidePanel *self, double centre);
double tl_side_panel_get_centre(TlSidePanel *self); /* NAN when none */
/* CT: algo as in TlCtJobOptions; quiet, like tl_side_panel_set_algorithm. */
void tl_side_panel_set_ct_algorithm(TlSidePanel *self, const char *algo, guint subsets, guint iterations);
TlColormap tl_side_panel_get_colormap(TlSidePanel *self);
void tl_side_panel_set_colormap(TlSidePanel *self, TlColormap c);
TlLevelsPreset tl_side_panel_get_levels_preset(TlSidePanel *self);
void tl_side_panel_set_levels_preset(TlSidePanel *self, TlLevelsPreset p);

/* As if chosen in the panel (the command line's --set): TOF on/off (data with TOF bins), the
 * projector ("siddon", "joseph", "tor"; FALSE if unknown), the filter and its placement
 * (every = 0: on what is shown; N: inside the reconstruction every N sub-iterations). */
void tl_side_panel_set_tof(TlSidePanel *self, gboolean on);
/* The model's corrections, as if chosen (each emits "changed::algorithm" when it changes the
 * job). Randoms: FALSE when `kind` is not offered (from the delayeds: data with delayed
 * coincidences only). A file chosen selects its kind. */
gboolean tl_side_panel_set_randoms(TlSidePanel *self, TlPetRandoms kind);
void tl_side_panel_set_randoms_file(TlSidePanel *self, const char *path);
/* Scatter: FALSE when not offered (SSS: with attenuation correction only); rounds for SSS
 * (0: keep) and whether its last round restarts from the uniform image (scatter-restart). */
gboolean tl_side_panel_set_scatter(TlSidePanel *self, TlPetScatter kind, guint rounds,
                                   gboolean restart);
void tl_side_panel_set_scatter_file(TlSidePanel *self, const char *path);
/* The normalisation: a .tln file (switched on), and on/off (FALSE: no file chosen yet). */
void tl_side_panel_set_norm_file(TlSidePanel *self, const char *path);
gboolean tl_side_panel_set_norm(TlSidePanel *self, gboolean on);
/* The run keys sensitivity (an image on the grid used instead of the computed one) and
 * sensitivity-out (where the run writes the one it uses): a file each, switched on; NULL
 * switches the row off and keeps the file. */
void tl_side_panel_set_sensitivity_file(TlSidePanel *self, const char *path);
void tl_side_panel_set_sensitivity_out(TlSidePanel *self, const char *path);
/* Images in Bq/mL on/off with the calibration factor, isotope (tl_isotope_find names), frame
 * start and duration (NAN / NULL: keep). FALSE for an unknown isotope (nothing changed). */
gboolean tl_side_panel_set_quant(TlSidePanel *self, gboolean on, double calibration,
                                 const char *isotope, double frame_start_s, double duration_s);
/* The data's frame (from the file; duration 0: none stated, and the rows are reset to 0 rather
 * than keep another dataset's): the defaults of the Bq/mL rows. Quiet. */
void tl_side_panel_set_frame_defaults(TlSidePanel *self, double start_s, double duration_s);
gboolean tl_side_panel_set_projector(TlSidePanel *self, const char *name);
void tl_side_panel_set_filter(TlSidePanel *self, const TlFilter *f, guint every);
/* Rays per line (sinograms whose bins can be lines: arc-corrected, or crystal pairs of span 1;
 * the row shows for them only) and their counts. */
void tl_side_panel_set_arc(TlSidePanel *self, gboolean arc);
void tl_side_panel_set_rays(TlSidePanel *self, guint tangential, guint axial);

/* Scrolls the Corrections group to the top of the panel once it is laid out (--set
 * panel=corrections: the documentation's screenshots). */
void tl_side_panel_show_corrections(TlSidePanel *self);

G_END_DECLS
