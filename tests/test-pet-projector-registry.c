/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The PET projector registry (compute/tl-registry.h) against what the code accepts: every
 * name tl_projector_new knows is listed, the first is TlRecon's default, lookups and help texts
 * name every entry, and each capability flag is checked by building a reconstruction that
 * uses it (list mode, binned, TOF, dual-head only): a flag the code does not honour, or a
 * projector the code takes that the flags deny, fails. */
#include <string.h>
#include "pet-fixture.h"
#include "pet/tl-recon.h"
#include "tl-registry.h"
#include "tl-test-common.h"

static TlContext *ctx;

static guint count_entries(void) {
  guint n = 0;
  for (const TlProjectorInfo *const *p = tl_registry_projectors(); *p; p++) n++;
  return n;
}

static void test_entries(void) {
  const TlProjectorInfo *const *all = tl_registry_projectors();
  g_assert_nonnull(all[0]);
  /* the first is the default of TlRecon and of the PET operators */
  TlReconOptions o;
  tl_recon_options_init(&o);
  g_assert_cmpstr(all[0]->name, ==, o.projector);
  for (guint i = 0; all[i]; i++) {
    g_assert_true(all[i]->name && all[i]->name[0]);
    g_assert_true(all[i]->label && all[i]->label[0]);
    g_assert_true(all[i]->summary && all[i]->summary[0]);
    g_assert_true(all[i]->flags & (TL_PROJECTOR_LISTMODE | TL_PROJECTOR_BINNED));
    for (guint j = 0; j < i; j++) g_assert_cmpstr(all[i]->name, !=, all[j]->name);
  }
  /* every class tl_projector_new knows is listed, with its own flags */
  guint n_classes = 0;
  for (const TlProjectorClass *const *k = tl_projector_classes(); *k; k++, n_classes++) {
    GError *error = NULL;
    const TlProjectorInfo *info = tl_registry_projector((*k)->name, &error);
    g_assert_no_error(error);
    g_assert_cmpuint(info->flags, ==, (*k)->flags);
  }
  g_assert_cmpuint(n_classes, ==, g_strv_length((char **)tl_projector_names()));
  g_assert_cmpuint(count_entries(), >, n_classes); /* and the system matrix */
}

static void test_lookup_and_help(void) {
  GError *error = NULL;
  g_assert_null(tl_registry_projector("no-such-projector", &error));
  g_assert_error(error, TL_ERROR, TL_ERROR_INVALID_ARG);
  g_autofree char *all = tl_registry_projector_help(0);
  g_autofree char *lm = tl_registry_projector_help(TL_PROJECTOR_LISTMODE);
  g_auto(GStrv) all_items = g_strsplit(all, ", ", -1);
  g_auto(GStrv) lm_items = g_strsplit(lm, ", ", -1);
  guint i = 0, j = 0;
  for (const TlProjectorInfo *const *p = tl_registry_projectors(); *p; p++, i++) {
    g_assert_nonnull(strstr(error->message, (*p)->name));
    g_assert_true(tl_registry_projector((*p)->name, NULL) == *p);
    /* one item per projector, in order: the name, "(default)" on the first alone */
    g_assert_nonnull(all_items[i]);
    g_autofree char *want = g_strconcat((*p)->name, i == 0 ? " (default)" : "", NULL);
    g_assert_true(g_str_has_prefix(all_items[i], want));
    g_assert_true(i == 0 || !strstr(all_items[i], "(default)"));
    if ((*p)->flags & TL_PROJECTOR_LISTMODE) {
      g_assert_nonnull(lm_items[j]);
      g_assert_true(g_str_has_prefix(lm_items[j], (*p)->name));
      j++;
    }
  }
  g_assert_null(all_items[i]);
  g_assert_null(lm_items[j]);
  g_clear_error(&error);
}

/* A ring with TOF bins, a few events on allowed pairs in each TOF bin. */
static TlListmode *ring_events(void) {
  TlScanner *s = fx_ring_scanner(2, 8, 4, 4.0f, 40.0f, 4.0f, 1);
  s->tof_bins = 5;
  s->tof_bin_mm = 20.0f;
  s->tof_fwhm_ps = 400.0f;
  GError *error = NULL;
  g_assert_true(tl_scanner_validate(s, &error));
  g_assert_no_error(error);
  TlListmode *lm = tl_listmode_new(tl_scanner_copy(s), 0);
  GArray *ev = g_array_new(FALSE, FALSE, sizeof(TlEvent));
  for (guint a = 0; a < s->n_crystals; a += 3)
    for (guint b = a + 1; b < s->n_crystals; b += 5)
      if (tl_scanner_pair_allowed(s, a, b)) {
        TlEvent e = {a, b, (gint32)(a + b) % 5 - 2};
        g_array_append_val(ev, e);
      }
  g_assert_cmpuint(ev->len, >, 10);
  g_free(lm->events);
  lm->n_events = ev->len;
  lm->events = (TlEvent *)g_array_free(ev, FALSE);
  lm->has_tof = TRUE;
  fx_scanner_free(s);
  return lm;
}

static gboolean recon_ok(const TlProjectorInfo *p, const TlListmode *lm, const TlScanner *s,
                         gboolean tof, const TlImageGrid *g) {
  TlReconOptions o;
  tl_recon_options_init(&o);
  o.projector = p->name;
  o.use_cache = FALSE;
  o.tof = tof;
  GError *error = NULL;
  TlRecon *r;
  if (lm) {
    r = tl_recon_new_listmode(ctx, lm, g, &o, &error);
  } else {
    /* one count on every allowed pair */
    g_autoptr(GArray) bins = g_array_new(FALSE, FALSE, sizeof(TlBin));
    for (guint a = 0; a < s->n_crystals; a++)
      for (guint b = a + 1; b < s->n_crystals; b++)
        if (tl_scanner_pair_allowed(s, a, b)) {
          TlBin bin = {a, b, 1.0f};
          g_array_append_val(bins, bin);
        }
    r = tl_recon_new_binned(ctx, s, (TlBin *)bins->data, bins->len, g, &o, &error);
  }
  if (r) {
    g_assert_no_error(error);
    tl_recon_free(r);
    return TRUE;
  }
  g_assert_nonnull(error);
  g_test_message("%s%s%s: %s", p->name, lm ? " list mode" : " binned", tof ? " TOF" : "",
                 error->message);
  g_error_free(error);
  return FALSE;
}

static void test_capabilities(void) {
  g_autoptr(TlListmode) lm = ring_events();
  TlImageGrid ring_grid = fx_grid(12, 12, 2, 5.0f, 5.0f, 4.0f);
  GError *error = NULL;
  TlScannerLayout l = {.kind = TL_SCANNER_DUAL_HEAD, .head_crystals = {4, 3},
                       .head_pitch_mm = {2.4, 2.4}, .head_distance_mm = 12.0};
  g_autoptr(TlScanner) dual = tl_scanner_new_from_layout("dual", &l, NULL, &error);
  g_assert_no_error(error);
  TlImageGrid dual_grid = tl_image_grid_centred(5, 8, 6, 2.0f, 1.2f, 1.2f);
  for (const TlProjectorInfo *const *p = tl_registry_projectors(); *p; p++) {
    guint f = (*p)->flags;
    gboolean ring = !(f & TL_PROJECTOR_DUAL_HEAD);
    g_assert_true(recon_ok(*p, lm, NULL, FALSE, &ring_grid) == !!(f & TL_PROJECTOR_LISTMODE));
    g_assert_true(recon_ok(*p, lm, NULL, TRUE, &ring_grid) ==
                  ((f & TL_PROJECTOR_LISTMODE) && (f & TL_PROJECTOR_TOF)));
    g_assert_true(recon_ok(*p, NULL, lm->scanner, FALSE, &ring_grid) ==
                  (ring && (f & TL_PROJECTOR_BINNED)));
    if (f & TL_PROJECTOR_BINNED)
      g_assert_true(recon_ok(*p, NULL, dual, FALSE, &dual_grid));
  }
}

int main(int argc, char **argv) {
  tl_test_init(&argc, &argv);
  ctx = tl_test_context();
  g_test_add_func("/pet-projector-registry/entries", test_entries);
  g_test_add_func("/pet-projector-registry/lookup-and-help", test_lookup_and_help);
  g_test_add_func("/pet-projector-registry/capabilities", test_capabilities);
  int rc = g_test_run();
  tl_test_context_done(ctx);
  return rc;
}
