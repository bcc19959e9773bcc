/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Built-in kernels as text and replaced at run time (core/tl-kernels.h, expr/tl-kernel-edit.h):
 * the expanded source of the Joseph forward projection compiles back to the same projection;
 * the same text with its projection scaled by 2 doubles the next forward projection exactly and
 * is timed under its own label; a syntax error is reported at the line it was made on and the
 * context keeps the last kernel that compiled; revert gives the built-in back. */
#include "pet-fixture.h"
#include "expr/tl-kernel-edit.h"
#include "pet/tl-pet-operator.h"
#include "pet/tl-pet-kernel-check.h"
#include <string.h>

#define N_EVENTS 3000

static TlListmode *listmode(void) {
  TlScanner *fx = fx_ring_scanner(2, 12, 4, 4.0f, 40.0f, 5.0f, 1);
  TlListmode *lm = tl_listmode_new(tl_scanner_copy(fx), N_EVENTS);
  fx_scanner_free(fx);
  g_autoptr(GRand) r = g_rand_new_with_seed(5);
  for (guint i = 0; i < N_EVENTS; i++) {
    TlEvent *e = &lm->events[i];
    do {
      e->a = g_rand_int_range(r, 0, lm->scanner->n_crystals);
      e->b = g_rand_int_range(r, 0, lm->scanner->n_crystals);
    } while (!tl_scanner_pair_allowed(lm->scanner, e->a, e->b));
  }
  return lm;
}

/* y = A x with the operator's current kernels; the profile of the call in *prof. */
static float *forward(TlContext *ctx, TlOperator *op, const TlArray *x, TlProfile *prof) {
  GError *error = NULL;
  g_autoptr(TlStream) s = tl_stream_new(ctx, &error);
  g_assert_no_error(error);
  tl_stream_set_profile(s, prof);
  g_autoptr(TlArray) y = tl_array_new_float(ctx, tl_operator_n_data(op), &error);
  g_assert_no_error(error);
  g_assert_true(tl_operator_forward(op, s, 0, x, y, &error));
  g_assert_true(tl_stream_finish(s, &error));
  g_assert_no_error(error);
  return fx_download(y);
}

static guint line_of(const char *text, const char *needle) {
  const char *at = strstr(text, needle);
  g_assert_nonnull(at);
  guint line = 1;
  for (const char *c = text; c < at; c++) line += *c == '\n';
  return line;
}

static char *replace_once(const char *text, const char *from, const char *to) {
  const char *at = strstr(text, from);
  g_assert_nonnull(at);
  return g_strdup_printf("%.*s%s%s", (int)(at - text), text, to, at + strlen(from));
}

static void test_sources(void) {
  const char *const *names = tl_kernels_names();
  guint n = 0;
  for (; names[n]; n++) {
    GError *error = NULL;
    g_autofree char *src = tl_kernels_source(names[n], &error);
    g_assert_no_error(error);
    /* self-contained: no #include left, every include marked */
    g_assert_null(strstr(src, "\n#include"));
    g_assert_true(g_str_has_prefix(src, "#version 460"));
  }
  g_assert_cmpuint(n, >=, 15);
  g_autofree char *fwd = tl_kernels_source("pet_forward", NULL);
  g_assert_nonnull(strstr(fwd, "// ---- begin pet/pet_joseph.glsl"));
  g_assert_nonnull(strstr(fwd, "// ---- begin core/tl_common.glsl"));
  GError *error = NULL;
  g_assert_null(tl_kernels_source("no_such_kernel", &error));
  g_assert_error(error, TL_ERROR, TL_ERROR_INVALID_ARG);
  g_clear_error(&error);
  g_assert_null(tl_kernels_expand("#include \"missing.glsl\"\n", "pet", &error));
  g_assert_error(error, TL_ERROR, TL_ERROR_SHADER);
  g_assert_nonnull(strstr(error->message, "missing.glsl"));
  g_clear_error(&error);
}

static void test_replace(void) {
  TlContext *ctx = tl_test_context();
  GError *error = NULL;
  g_autoptr(TlListmode) lm = listmode();
  TlImageGrid g = fx_grid(24, 24, 2, 3.0f, 3.0f, 5.0f);
  guint64 nv = fx_voxels(&g);
  g_autofree float *xh = g_new(float, nv);
  for (guint64 i = 0; i < nv; i++) xh[i] = 0.25f + (float)(i % 13) / 8.0f;
  g_autoptr(TlArray) x = fx_upload(ctx, xh, nv, sizeof(float));
  TlPetOperatorOptions o;
  tl_pet_operator_options_init(&o);
  o.projector = "joseph";
  o.subsets = 1;
  o.use_cache = FALSE;
  g_autoptr(TlOperator) op = tl_pet_operator_new_listmode(ctx, lm, &g, &o, &error);
  g_assert_no_error(error);
  guint64 nd = tl_operator_n_data(op);
  g_autoptr(TlProfile) prof = tl_profile_new();
  g_autofree float *y0 = forward(ctx, op, x, prof);
  double total = 0;
  for (guint64 j = 0; j < nd; j++) total += y0[j];
  g_assert_cmpfloat(total, >, 0);

  /* the expanded source as is: the same projection (compiled without glslangValidator's -Os,
   * so equal to rounding) */
  g_autofree char *src = tl_kernels_source("pet_forward", &error);
  g_assert_no_error(error);
  guint gen = tl_kernels_generation(ctx);
  g_assert_true(tl_kernel_compile(ctx, "pet_forward", src, NULL, &error));
  g_assert_no_error(error);
  g_assert_cmpuint(tl_kernels_generation(ctx), >, gen);
  g_assert_true(tl_kernels_replaced(ctx, "pet_forward"));
  g_autofree float *y1 = forward(ctx, op, x, prof);
  for (guint64 j = 0; j < nd; j++) g_assert_cmpfloat_with_epsilon(y1[j], y0[j], 1e-6 * y0[j] + 1e-7);

  /* weights scaled by 2: the next projection doubles, timed as "(edited)" */
  const char *orig = "y = pet_atten(pc.tl_base + i, l) * pet_trace(";
  g_autofree char *twice = replace_once(src, orig, "y = 2.0 * pet_atten(pc.tl_base + i, l) * pet_trace(");
  g_assert_true(tl_kernel_compile(ctx, "pet_forward", twice, NULL, &error));
  g_assert_no_error(error);
  tl_profile_clear(prof);
  g_autofree float *y2 = forward(ctx, op, x, prof);
  for (guint64 j = 0; j < nd; j++) g_assert_cmpfloat(y2[j], ==, 2.0f * y1[j]);
  g_assert_nonnull(tl_profile_lookup(prof, "forward joseph (edited)"));
  g_assert_null(tl_profile_lookup(prof, "forward joseph"));

  /* a syntax error: reported at its line; the doubled kernel stays */
  g_autofree char *bad = replace_once(twice, "float y = 0.0, ll = 0.0;",
                                      "float y = 0.0, ll = 0.0; undeclared_thing += 1;");
  guint bad_line = line_of(bad, "undeclared_thing");
  g_autoptr(GPtrArray) diags = NULL;
  gen = tl_kernels_generation(ctx);
  g_assert_false(tl_kernel_compile(ctx, "pet_forward", bad, &diags, &error));
  g_assert_error(error, TL_ERROR, TL_ERROR_SHADER);
  g_clear_error(&error);
  g_assert_cmpuint(diags->len, >=, 1);
  const TlKernelDiagnostic *d = g_ptr_array_index(diags, 0);
  g_assert_true(d->error);
  g_assert_cmpuint(d->line, ==, bad_line);
  g_assert_nonnull(strstr(d->message, "undeclared_thing"));
  g_assert_cmpuint(tl_kernels_generation(ctx), ==, gen);
  g_autofree float *y3 = forward(ctx, op, x, prof);
  g_assert_cmpmem(y3, nd * sizeof(float), y2, nd * sizeof(float));

  /* installed with the pair check: the doubled forward against the built-in back projection
   * is off by a factor 2 (|2a - a| / 2a = 0.5) and A moved by 100 %; the faithful text is
   * adjoint to rounding and equal to the built-in */
  tl_kernels_revert(ctx, "pet_forward");
  g_autofree guint32 *spv = NULL;
  gsize spv_size = 0;
  g_assert_true(tl_kernel_compile_spirv("pet_forward", twice, &spv, &spv_size, NULL, &error));
  TlPetKernelCheck chk;
  g_assert_true(tl_pet_kernel_install_checked(ctx, "pet_forward", spv, spv_size, lm->scanner, &g,
                                              "joseph", 400, &chk, &error));
  g_assert_no_error(error);
  g_assert_cmpuint(chk.n_lors, ==, 400);
  g_assert_cmpfloat_with_epsilon(chk.adjoint_rel, 0.5, 1e-5);
  g_assert_cmpfloat_with_epsilon(chk.forward_rel, 1.0, 1e-6);
  g_assert_cmpfloat(chk.back_rel, <, 1e-6); /* the same back projection: float atomics add in any order */
  g_clear_pointer(&spv, g_free);
  g_assert_true(tl_kernel_compile_spirv("pet_forward", src, &spv, &spv_size, NULL, &error));
  g_assert_true(tl_pet_kernel_install_checked(ctx, "pet_forward", spv, spv_size, lm->scanner, &g,
                                              "joseph", 400, &chk, &error));
  g_assert_cmpfloat(chk.adjoint_rel, <, 1e-5);
  g_assert_cmpfloat_with_epsilon(chk.forward_rel, 0.5, 1e-6); /* back from doubled */

  /* revert: the built-in again, bit for bit */
  tl_kernels_revert(ctx, "pet_forward");
  g_assert_false(tl_kernels_replaced(ctx, "pet_forward"));
  g_autofree float *y4 = forward(ctx, op, x, prof);
  g_assert_cmpmem(y4, nd * sizeof(float), y0, nd * sizeof(float));
  g_clear_pointer(&op, tl_operator_free);
  g_clear_pointer(&x, tl_array_free);
  tl_test_context_done(ctx);
}

int main(int argc, char **argv) {
  tl_test_init(&argc, &argv);
  g_test_add_func("/kernels/sources", test_sources);
  g_test_add_func("/kernels/replace", test_replace);
  return g_test_run();
}
