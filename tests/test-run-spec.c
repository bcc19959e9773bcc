/* SPDX-License-Identifier: GPL-3.0-or-later */
/* TlRunSpec (compute/run/): the text form written and read back, refusals naming line, key and
 * value, the combination checks, the conversions to the PET and CT options, and the provenance
 * sidecar (JSON escaping, SHA-256 of the inputs, its run part read back). No device needed. */
#include "run/tl-run-spec.h"
#include "run/tl-run-sidecar.h"
#include "run/tl-run-race.h"
#include "tl-registry.h"
#include "pet/project/tl-projector.h"
#include "tl-test-common.h"
#include <glib/gstdio.h>
#include <math.h>
#include <string.h>

static char *tmp_dir;

static char *tmp_path(const char *name) { return g_build_filename(tmp_dir, name, NULL); }

/* A spec with a value other than the default in most keys. */
static void fill(TlRunSpec *s) {
  const char *kv[][2] = {
      {"data", "scan one.tlm"},      {"algorithm", "bsrem"},     {"subsets", "7"},
      {"iterations", "4"},           {"projector", "tor"},       {"prior", "rdp"},
      {"beta", "0.05"},              {"gamma", "1.5"},           {"epsilon", "0.0002"},
      {"relaxation", "0.3"},         {"objective", "subiteration"}, {"tof", "true"},
      {"tof-nsigma", "2.5"},         {"tor-fwhm", "3.25"},       {"attenuation", "mu.nii"},
      {"norm", "dmi.tln"},           {"randoms", "file"},        {"randoms-file", "r.tlr"},
      {"randoms-out", "r2.tlr"},     {"scatter", "sss"},         {"scatter-rounds", "3"},
      {"scatter-out", "s.tlsc"},     {"filter", "gauss:4.5"},    {"filter-every", "7"},
      {"calibration", "12345.5"},    {"isotope", "F18"},         {"duration", "600"},
      {"frame-start", "0.1"},        {"grid", "64x64x32@2.5,2.5,3"}, {"truth", "t.nii"},
      {"start", "x0.nii"},           {"device", "llvmpipe"},     {"cache", "false"},
      {"kernels", "pet_em=a.glsl; pet_back=b.glsl"}, {"output", "out/img.nii.gz"},
      {"profile", "true"},           {"quiet", "true"}};
  for (gsize i = 0; i < G_N_ELEMENTS(kv); i++) {
    GError *e = NULL;
    gboolean ok = tl_run_spec_set(s, kv[i][0], kv[i][1], &e);
    g_assert_no_error(e);
    g_assert_true(ok);
  }
}

static void test_roundtrip(void) {
  /* defaults, then a full PET spec, then a CT spec: written, read back, the same */
  for (int c = 0; c < 3; c++) {
    g_autoptr(TlRunSpec) s = tl_run_spec_new();
    if (c == 1) fill(s);
    if (c == 2) {
      const char *kv[][2] = {{"modality", "ct"}, {"data", "tooth.h5"}, {"algorithm", "fbp"},
                             {"fdk-filter", "hann"}, {"centre", "auto"}, {"pixel-size", "0.0065"},
                             {"slices", "100:110"}, {"batch", "16"}, {"output", "t.nii"}};
      for (gsize i = 0; i < G_N_ELEMENTS(kv); i++)
        g_assert_true(tl_run_spec_set(s, kv[i][0], kv[i][1], NULL));
      g_assert_cmpstr(s->algorithm, ==, "fbp"); /* its own method: FBP refuses cone beams */
    }
    g_autofree char *text = tl_run_spec_to_text(s);
    g_autoptr(TlRunSpec) r = tl_run_spec_new();
    GError *e = NULL;
    g_assert_true(tl_run_spec_parse(r, text, "written", &e));
    g_assert_no_error(e);
    g_assert_true(tl_run_spec_equal(s, r));
    g_autofree char *again = tl_run_spec_to_text(r);
    g_assert_cmpstr(text, ==, again);
    /* every key of the table is written once */
    for (const TlRunKeyInfo *k = tl_run_keys(); k->key; k++) {
      g_autofree char *line = g_strdup_printf("\n%s = ", k->key);
      const char *at = strstr(text, line);
      g_assert_nonnull(at);
      g_assert_null(strstr(at + 1, line));
    }
    /* and through a file */
    g_autofree char *path = tmp_path("run.txt");
    g_assert_true(tl_run_spec_save(s, path, NULL));
    g_autoptr(TlRunSpec) f = tl_run_spec_load(path, &e);
    g_assert_no_error(e);
    g_assert_true(tl_run_spec_equal(s, f));
  }
  /* values read back as typed: the numbers exactly */
  g_autoptr(TlRunSpec) s = tl_run_spec_new();
  fill(s);
  g_autofree char *text = tl_run_spec_to_text(s);
  g_autoptr(TlRunSpec) r = tl_run_spec_new();
  g_assert_true(tl_run_spec_parse(r, text, "written", NULL));
  g_assert_cmpfloat(r->beta, ==, 0.05);
  g_assert_cmpfloat(r->epsilon, ==, 0.0002);
  g_assert_cmpfloat(r->calibration, ==, 12345.5);
  g_assert_cmpfloat(r->filter.fwhm_mm, ==, 4.5);
  g_assert_cmpint(r->filter.kind, ==, TL_FILTER_GAUSS);
  g_assert_cmpuint(r->subsets, ==, 7);
  g_assert_cmpint(r->randoms, ==, TL_RUN_RANDOMS_FILE);
  g_assert_cmpint(r->scatter, ==, TL_RUN_SCATTER_SSS);
  g_assert_cmpstr(r->data, ==, "scan one.tlm");
  g_assert_cmpuint(g_strv_length(r->kernels), ==, 2);
  g_assert_cmpstr(r->kernels[1], ==, "pet_back=b.glsl");
  g_assert_false(r->cache);
  /* comments, blank lines, spaces; keys not named keep their defaults */
  g_autoptr(TlRunSpec) c = tl_run_spec_new();
  g_assert_true(tl_run_spec_parse(c, "# a run\n\n  algorithm   =  osem   # with subsets\n"
                                     "subsets=5\n", "c.txt", NULL));
  g_assert_cmpstr(c->algorithm, ==, "osem");
  g_assert_cmpuint(c->subsets, ==, 5);
  g_assert_cmpuint(tl_run_spec_iterations(c), ==, 3);
  g_assert_cmpstr(tl_run_spec_projector(c), ==, "siddon");
}

/* A parse that must fail with a message holding every one of `want`. */
static void refused(const char *text, const char *const *want) {
  g_autoptr(TlRunSpec) s = tl_run_spec_new();
  GError *e = NULL;
  g_assert_false(tl_run_spec_parse(s, text, "run.txt", &e));
  g_assert_nonnull(e);
  for (guint i = 0; want[i]; i++)
    if (!strstr(e->message, want[i]))
      g_error("'%s': message '%s' lacks '%s'", text, e->message, want[i]);
  g_error_free(e);
}

static void test_refusals(void) {
  refused("algorithm = osem\nsubsets = 4\ncolour = blue\n",
          (const char *[]){"run.txt:3", "unknown key", "colour", NULL});
  refused("iterations = 3\n# c\niterations = 4\n",
          (const char *[]){"run.txt:3", "iterations", "repeated", "line 1", NULL});
  refused("subsets = 1x\n", (const char *[]){"run.txt:1", "subsets", "'1x'", "whole number", NULL});
  refused("subsets = -2\n", (const char *[]){"subsets", "'-2'", NULL});
  refused("subsets = 70000\n", (const char *[]){"subsets", "70000", "65535", NULL});
  refused("scatter-rounds = 0\n", (const char *[]){"scatter-rounds", "'0'", "1 to 100", NULL});
  refused("beta = nan\n", (const char *[]){"beta", "'nan'", NULL});
  refused("beta = -1\n", (const char *[]){"beta", "'-1'", ">= 0", NULL});
  refused("epsilon = 0\n", (const char *[]){"epsilon", "'0'", "> 0", NULL});
  refused("beta = 0x10\n", (const char *[]){"beta", "0x10", NULL});
  refused("tof = maybe\n", (const char *[]){"tof", "maybe", "true or false", NULL});
  refused("randoms = guess\n", (const char *[]){"randoms", "guess", "delayeds", "singles", NULL});
  refused("filter = box9\n", (const char *[]){"filter", "box9", NULL});
  refused("grid = 64x64@2\n", (const char *[]){"grid", "64x64@2", NULL});
  refused("just words\n", (const char *[]){"run.txt:1", "key = value", NULL});
  refused("kernels = pet_em\n", (const char *[]){"kernels", "NAME=FILE", NULL});
  refused("isotope = Xx99\n", (const char *[]){"isotope", "Xx99", NULL});
  /* names are listed from the registries, not by hand */
  {
    g_autoptr(TlRunSpec) s = tl_run_spec_new();
    GError *e = NULL;
    g_assert_false(tl_run_spec_set(s, "algorithm", "gradient-magic", &e));
    g_assert_nonnull(strstr(e->message, "gradient-magic"));
    for (const TlAlgorithmClass *const *a = tl_registry_algorithms(); *a; a++) {
      g_assert_nonnull(strstr(e->message, tl_algorithm_name(*a)));
      g_assert_true(tl_run_spec_set(s, "algorithm", tl_algorithm_name(*a), NULL));
    }
    g_clear_error(&e);
    g_assert_false(tl_run_spec_set(s, "prior", "lasso", &e));
    for (const TlPriorClass *const *p = tl_registry_priors(); *p; p++) {
      g_assert_nonnull(strstr(e->message, (*p)->name));
      g_assert_true(tl_run_spec_set(s, "prior", (*p)->name, NULL));
    }
    g_clear_error(&e);
    g_assert_false(tl_run_spec_set(s, "projector", "pencil", &e));
    for (const char *const *n = tl_projector_names(); *n; n++) {
      g_assert_nonnull(strstr(e->message, *n));
      g_assert_true(tl_run_spec_set(s, "projector", *n, NULL));
    }
    g_clear_error(&e);
    /* a '#' could not be written back */
    g_assert_false(tl_run_spec_set(s, "output", "a#b.nii", &e));
    g_assert_nonnull(strstr(e->message, "output"));
    g_clear_error(&e);
  }
}

/* A spec from text that tl_run_spec_validate refuses with a message holding `want`. */
static void invalid(const char *text, const char *want) {
  g_autoptr(TlRunSpec) s = tl_run_spec_new();
  g_assert_true(tl_run_spec_parse(s, text, "v.txt", NULL));
  GError *e = NULL;
  g_assert_false(tl_run_spec_validate(s, &e));
  if (!strstr(e->message, want)) g_error("'%s': message '%s' lacks '%s'", text, e->message, want);
  g_error_free(e);
}

static void test_validate(void) {
  invalid("tof-nsigma = 2\n", "tof-nsigma");
  invalid("algorithm = mlem\nprior = rdp\n", "prior = rdp");
  invalid("beta = 0.1\n", "need a prior");
  invalid("algorithm = mlem\nsubsets = 4\n", "subsets = 4");
  invalid("algorithm = fdk\n", "fdk");
  invalid("algorithm = sirt\n", "binned");
  invalid("tof = true\nbinned = true\n", "tof");
  invalid("tor-fwhm = 4\n", "projector = tor");
  invalid("filter-every = 2\n", "filter-every");
  invalid("randoms = file\n", "randoms-file");
  invalid("randoms-file = r.tlr\n", "randoms = file");
  invalid("scatter = sss\n", "attenuation");
  invalid("scatter-restart = true\n", "need scatter = sss");
  invalid("scatter = sss\nattenuation = mu.nii\nscatter-restart = true\nstart = x0.nii\n",
          "start = x0.nii");
  invalid("isotope = F18\n", "calibration");
  invalid("modality = ct\ntof = true\n", "a PET key in a CT run");
  invalid("modality = ct\nprojector = tor\n", "projector = tor");
  invalid("modality = pet\nfdk-filter = hann\n", "a CT key in a PET run");
  invalid("algorithm = bsrem\nprior = rdp\nrelaxation = 1.5\n", "relaxation");
  g_autoptr(TlRunSpec) ok = tl_run_spec_new();
  fill(ok);
  GError *e = NULL;
  g_assert_true(tl_run_spec_validate(ok, &e));
  g_assert_no_error(e);
}

/* The scatter = sss schedule every door runs (tl_run_spec_total_iterations,
 * tl_run_spec_scatter_due): N iterations, then R rounds of an estimate and N more, the restart
 * (scatter-restart) at the last estimate only; without sss, `iterations` and no estimate. */
static void test_scatter_schedule(void) {
  g_autoptr(TlRunSpec) s = tl_run_spec_new();
  g_assert_true(tl_run_spec_parse(s, "iterations = 3\n", "run", NULL));
  g_assert_cmpuint(tl_run_spec_total_iterations(s), ==, 3);
  for (guint k = 0; k <= 9; k++) g_assert_false(tl_run_spec_scatter_due(s, k, NULL, NULL));
  g_autoptr(TlRunSpec) r = tl_run_spec_new();
  g_assert_true(tl_run_spec_parse(r, "iterations = 3\nscatter = sss\nattenuation = mu.nii\n"
                                     "scatter-rounds = 2\nscatter-restart = true\n", "run", NULL));
  g_assert_true(tl_run_spec_validate(r, NULL));
  g_assert_cmpuint(tl_run_spec_total_iterations(r), ==, 9);
  guint due = 0;
  for (guint k = 0; k <= 12; k++) {
    guint round = 0;
    gboolean restart = TRUE;
    gboolean want = k == 3 || k == 6;
    g_assert_cmpint(tl_run_spec_scatter_due(r, k, &round, &restart), ==, want);
    if (!want) continue;
    due++;
    g_assert_cmpuint(round, ==, k / 3);
    g_assert_cmpint(restart, ==, k == 6);
  }
  g_assert_cmpuint(due, ==, 2);
  g_assert_true(tl_run_spec_set(r, "scatter-restart", "false", NULL));
  gboolean restart = TRUE;
  g_assert_true(tl_run_spec_scatter_due(r, 6, NULL, &restart));
  g_assert_false(restart);
}

static void test_options(void) {
  g_autoptr(TlRunSpec) s = tl_run_spec_new();
  fill(s);
  TlReconOptions o;
  TlFilter post;
  GError *e = NULL;
  g_assert_true(tl_run_spec_to_recon_options(s, &o, &post, &e));
  g_assert_no_error(e);
  g_assert_cmpstr(o.algorithm, ==, "bsrem");
  g_assert_cmpint(o.algo, ==, TL_RECON_OSEM); /* bsrem takes subsets */
  g_assert_cmpuint(o.subsets, ==, 7);
  g_assert_cmpuint(o.iterations, ==, 4);
  g_assert_cmpstr(o.projector, ==, "tor");
  g_assert_cmpstr(o.prior, ==, "rdp");
  g_assert_cmpfloat(o.beta, ==, 0.05);
  g_assert_cmpfloat(o.prior_params.gamma, ==, 1.5);
  g_assert_cmpfloat(o.prior_params.epsilon, ==, 0.0002);
  g_assert_cmpfloat(o.relaxation, ==, 0.3f);
  g_assert_cmpint(o.loglik, ==, TL_LOGLIK_SUBITERATION);
  g_assert_true(o.tof);
  g_assert_cmpfloat(o.tof_n_sigma, ==, 2.5);
  g_assert_cmpfloat(o.tor_fwhm_mm, ==, 3.25);
  g_assert_false(o.use_cache);
  g_assert_cmpint(o.filter.kind, ==, TL_FILTER_GAUSS);
  g_assert_cmpuint(o.filter_every, ==, 7);
  g_assert_cmpint(post.kind, ==, TL_FILTER_NONE); /* between iterations, so no post filter */
  /* the defaults: the CLI's (mlem, 1 subset, 3 iterations, siddon) */
  g_autoptr(TlRunSpec) d = tl_run_spec_new();
  g_assert_true(tl_run_spec_to_recon_options(d, &o, &post, NULL));
  g_assert_cmpstr(o.algorithm, ==, "mlem");
  g_assert_cmpuint(o.subsets, ==, 1);
  g_assert_cmpuint(o.iterations, ==, 3);
  g_assert_cmpstr(o.projector, ==, "siddon");
  g_assert_true(o.use_cache);
  g_assert_cmpint(o.loglik, ==, TL_LOGLIK_ITERATION);
  g_assert_true(tl_run_spec_set(d, "algorithm", "osem", NULL));
  g_assert_true(tl_run_spec_to_recon_options(d, &o, &post, NULL));
  g_assert_cmpuint(o.subsets, ==, 10);
  /* CT */
  g_autoptr(TlRunSpec) c = tl_run_spec_new();
  g_assert_true(tl_run_spec_parse(c, "modality = ct\nalgorithm = sart\nrelaxation = 0.5\n"
                                     "nonnegative = true\nprojector = raycast\n", "ct", NULL));
  TlCtReconOptions co;
  g_assert_true(tl_run_spec_to_ct_options(c, &co, &e));
  g_assert_no_error(e);
  g_assert_cmpstr(co.algorithm, ==, "os-sart");
  g_assert_cmpint(co.algo, ==, TL_CT_SART);
  g_assert_cmpuint(co.subsets, ==, 10);
  g_assert_cmpuint(co.iterations, ==, 10);
  g_assert_cmpint(co.projector, ==, TL_CT_RAYCAST);
  g_assert_cmpfloat(co.relaxation, ==, 0.5f);
  g_assert_true(co.nonnegative);
  g_assert_true(tl_run_spec_set(c, "algorithm", "mlem", NULL));
  g_assert_true(tl_run_spec_set(c, "nonnegative", "false", NULL));
  g_assert_true(tl_run_spec_to_ct_options(c, &co, NULL));
  g_assert_cmpuint(co.subsets, ==, 1);
  g_assert_cmpint(co.algo, ==, TL_CT_MLEM);
  /* a PET spec is no CT run and the reverse */
  g_assert_false(tl_run_spec_to_ct_options(d, &co, NULL));
  g_assert_false(tl_run_spec_to_recon_options(c, &o, &post, NULL));
}

static void sidecar_is(const char *image, const char *want) {
  g_autofree char *got = tl_run_sidecar_path(image);
  g_assert_cmpstr(got, ==, want);
}

static void test_sidecar(void) {
  sidecar_is("img.nii.gz", "img.json");
  sidecar_is("out/img.nii", "out/img.json");
  sidecar_is("a.b/img", "a.b/img.json");
  sidecar_is("./x.raw", "./x.json");
  /* inputs with known bytes: SHA-256("abc") is FIPS 180-2's example */
  g_autofree char *data = tmp_path("we\"ird \\ näme.tlm");
  g_autofree char *mu = tmp_path("mu.nii");
  g_assert_true(g_file_set_contents(data, "abc", 3, NULL));
  g_assert_true(g_file_set_contents(mu, "", 0, NULL));
  g_autoptr(TlRunSpec) s = tl_run_spec_new();
  const char *kv[][2] = {{"data", data}, {"algorithm", "osem"}, {"subsets", "5"},
                         {"iterations", "3"}, {"projector", "siddon"},
                         {"attenuation", mu}, {"randoms", "delayeds"}, {"filter", "gauss:6"},
                         {"output", "x.nii"}};
  for (gsize i = 0; i < G_N_ELEMENTS(kv); i++)
    g_assert_true(tl_run_spec_set(s, kv[i][0], kv[i][1], NULL));
  GError *e = NULL;
  g_autofree char *json = tl_run_sidecar_json(s, "dev \"1\"\tx", "Bq/mL", &e);
  g_assert_no_error(e);
  g_assert_nonnull(strstr(json, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"));
  g_assert_nonnull(strstr(json, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"));
  g_assert_nonnull(strstr(json, "\"Device\": \"dev \\\"1\\\"\\tx\""));
  g_assert_nonnull(strstr(json, "\"ReconMethodName\": \"OSEM\""));
  g_assert_nonnull(strstr(json, "\"ReconMethodParameterLabels\": [\"iterations\", \"subsets\"]"));
  g_assert_nonnull(strstr(json, "\"ReconMethodParameterValues\": [3, 5]"));
  g_assert_nonnull(strstr(json, "\"ReconFilterType\": \"Gaussian\""));
  g_assert_nonnull(strstr(json, "\"ReconFilterSize\": 6"));
  g_assert_nonnull(strstr(json, "\"RandomsCorrectionMethod\": \"DLYD"));
  g_assert_nonnull(strstr(json, "\"Units\": \"Bq/mL\""));
  /* the run part back: the same spec, the escaped path included */
  g_autoptr(TlRunSpec) r = tl_run_spec_new();
  g_assert_true(tl_run_sidecar_read_run(r, json, "side.json", &e));
  g_assert_no_error(e);
  g_assert_true(tl_run_spec_equal(s, r));
  g_assert_cmpstr(r->data, ==, data);
  /* the defaults a run left to Tomolab are written resolved: a rerun does the same */
  {
    g_autoptr(TlRunSpec) a = tl_run_spec_new();
    g_assert_true(tl_run_spec_set(a, "algorithm", "osem", NULL));
    g_autofree char *aj = tl_run_sidecar_json(a, "dev", NULL, &e);
    g_assert_no_error(e);
    g_autoptr(TlRunSpec) b = tl_run_spec_new();
    g_assert_true(tl_run_sidecar_read_run(b, aj, "a.json", &e));
    g_assert_cmpstr(b->projector, ==, "siddon");
    g_assert_cmpuint(b->iterations, ==, 3);
    g_assert_cmpuint(b->subsets, ==, 10);
    g_assert_false(tl_run_spec_equal(a, b));
  }
  /* written beside the image, loaded as a run file */
  g_autofree char *img = tmp_path("img.nii");
  g_assert_true(tl_run_sidecar_write(img, s, "dev", NULL, &e));
  g_assert_no_error(e);
  g_autofree char *side = tmp_path("img.json");
  g_autoptr(TlRunSpec) l = tl_run_spec_load(side, &e);
  g_assert_no_error(e);
  g_assert_true(tl_run_spec_equal(s, l));
  /* a missing input is an error naming it */
  g_assert_true(tl_run_spec_set(s, "norm", "/nonexistent/n.tln", NULL));
  g_assert_null(tl_run_sidecar_json(s, "dev", NULL, &e));
  g_assert_nonnull(strstr(e->message, "/nonexistent/n.tln"));
  g_clear_error(&e);
  /* broken JSON and sidecars without a run are refused with the source named */
  const char *broken[] = {"{", "{\"TomolabRun\": {\"subsets\": 5}}", "{\"a\": [1, 2,]}",
                          "{\"a\": 1} x", "{\"a\": \"\\q\"}", "{\"a\": 1}",
                          "{\"TomolabRun\": {\"colour\": \"blue\"}}",
                          "{\"TomolabRun\": {\"subsets\": \"5\", \"subsets\": \"6\"}}",
                          "{\"TomolabRun\": {}, \"TomolabRun\": {}}", "[]",
                          /* not UTF-8 (a run file could not hold it): the fuzz finding */
                          "{\"TomolabRun\": {\"data\": \"a\xab\x8a.tlm\"}}",
                          "{\"TomolabRun\": {\"data\": \"a\\u0000b\"}}"};
  for (gsize i = 0; i < G_N_ELEMENTS(broken); i++) {
    g_autoptr(TlRunSpec) b = tl_run_spec_new();
    g_assert_false(tl_run_sidecar_read_run(b, broken[i], "b.json", &e));
    g_assert_nonnull(e);
    g_assert_nonnull(strstr(e->message, "b.json"));
    g_clear_error(&e);
  }
  /* any other member is skipped whatever its value */
  g_autoptr(TlRunSpec) o = tl_run_spec_new();
  g_assert_true(tl_run_sidecar_read_run(
      o, " {\"x\": [1.5e-3, -2, true, null, {\"y\": \"\\u00e9\\ud83d\\ude00\"}],"
         " \"TomolabRun\": {\"iterations\": \"9\"}, \"z\": false} ", "o.json", &e));
  g_assert_no_error(e);
  g_assert_cmpuint(o->iterations, ==, 9);
  g_unlink(data);
  g_unlink(mu);
  g_unlink(side);
}

/* docs/formats.md lists every key of the table (its "Run files" section). */
static void test_documented(void) {
  const char *root = g_getenv("TL_TEST_SOURCE_ROOT");
  if (!root) {
    g_test_skip("TL_TEST_SOURCE_ROOT not set");
    return;
  }
  g_autofree char *path = g_build_filename(root, "docs", "formats.md", NULL);
  g_autofree char *text = NULL;
  g_assert_true(g_file_get_contents(path, &text, NULL, NULL));
  const char *sec = strstr(text, "## Run files");
  g_assert_nonnull(sec);
  for (const TlRunKeyInfo *k = tl_run_keys(); k->key; k++) {
    g_autofree char *row = g_strdup_printf("| `%s` |", k->key);
    if (!strstr(sec, row)) g_error("docs/formats.md: no row for run key '%s'", k->key);
  }
}

/* A searched centre (tl_run_spec_with_centre): the run part holds the column found, not
 * "auto", and the note says it was searched; read back, the run asks for no search. */
static void test_sidecar_centre(void) {
  g_autoptr(TlRunSpec) s = tl_run_spec_new();
  g_assert_true(tl_run_spec_set(s, "modality", "ct", NULL));
  g_assert_true(tl_run_spec_set(s, "algorithm", "fdk", NULL));
  g_assert_true(tl_run_spec_set(s, "centre", "auto", NULL));
  g_autofree char *note = NULL;
  g_autoptr(TlRunSpec) f = tl_run_spec_with_centre(s, 295.5, 1.9e-7, &note);
  g_assert_cmpstr(s->centre, ==, "auto"); /* the run asked for stays as it was */
  g_assert_cmpstr(f->centre, ==, "295.5");
  g_assert_nonnull(strstr(note, "295.5"));
  g_assert_nonnull(strstr(note, "searched"));
  g_assert_nonnull(strstr(note, "asked for auto"));
  const char *notes[] = {note, NULL};
  GError *e = NULL;
  g_autofree char *json = tl_run_sidecar_json_notes(f, "dev", NULL, notes, &e);
  g_assert_no_error(e);
  g_assert_nonnull(strstr(json, "\"TomolabNotes\": [\"centre = 295.5 was searched"));
  g_assert_nonnull(strstr(json, "\"centre\": \"295.5\""));
  g_autoptr(TlRunSpec) r = tl_run_spec_new();
  g_assert_true(tl_run_sidecar_read_run(r, json, "tooth.json", &e));
  g_assert_no_error(e);
  g_assert_cmpstr(r->centre, ==, "295.5");
  /* no notes: no member */
  g_autofree char *plain = tl_run_sidecar_json(f, "dev", NULL, &e);
  g_assert_null(strstr(plain, "TomolabNotes"));
  /* a column not exactly representable in 6 digits is written so it reads back exactly */
  g_autofree char *n2 = NULL;
  g_autoptr(TlRunSpec) g = tl_run_spec_with_centre(s, 295.123456789, 0, &n2);
  g_assert_cmpfloat(g_ascii_strtod(g->centre, NULL), ==, 295.123456789);
}

/* A race entrant's randoms: delayeds need delayed events, singles and files are refused,
 * each with a GError before any device work (the mMR file's header and events only). */
static void test_race_randoms(void) {
  const char *root = g_getenv("TL_TEST_SOURCE_ROOT");
  if (!root) {
    g_test_skip("TL_TEST_SOURCE_ROOT not set");
    return;
  }
  GError *error = NULL;
  g_autofree char *path = g_build_filename(root, "..", "shared", "data", "mmr",
                                           "PET_ACQ_small.l.hdr.STIR", NULL);
  if (!g_file_test(path, G_FILE_TEST_EXISTS)) {
    g_test_skip("no mMR data in ../shared/data");
    return;
  }
  g_autoptr(TlDataset) ds = tl_dataset_open(path, &error);
  g_assert_no_error(error);
  g_assert_true(ds->allows & TL_DATASET_ALLOWS_RANDOMS_DELAYEDS);
  g_assert_cmpuint(ds->lm->n_delayed, >, 0);
  g_autoptr(TlRunSpec) base = tl_run_spec_new();
  g_assert_true(tl_run_spec_set(base, "randoms", "singles", &error));
  g_assert_null(tl_run_race_entrant(NULL, ds, &ds->grid, base, "osem:subsets=2", &error));
  g_assert_error(error, TL_ERROR, TL_ERROR_INVALID_ARG);
  g_assert_nonnull(strstr(error->message, "singles"));
  g_clear_error(&error);
  g_assert_true(tl_run_spec_set(base, "randoms", "delayeds", &error));
  guint64 n = ds->lm->n_delayed;
  ds->lm->n_delayed = 0; /* as a file without delayeds */
  g_assert_null(tl_run_race_entrant(NULL, ds, &ds->grid, base, "osem:subsets=2", &error));
  ds->lm->n_delayed = n;
  g_assert_error(error, TL_ERROR, TL_ERROR_INVALID_ARG);
  g_assert_nonnull(strstr(error->message, "no delayed events"));
  g_clear_error(&error);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  tmp_dir = g_dir_make_tmp("tomolab-run-XXXXXX", NULL);
  g_test_add_func("/run/roundtrip", test_roundtrip);
  g_test_add_func("/run/refusals", test_refusals);
  g_test_add_func("/run/validate", test_validate);
  g_test_add_func("/run/scatter-schedule", test_scatter_schedule);
  g_test_add_func("/run/options", test_options);
  g_test_add_func("/run/sidecar", test_sidecar);
  g_test_add_func("/run/sidecar-centre", test_sidecar_centre);
  g_test_add_func("/run/documented", test_documented);
  g_test_add_func("/run/race-randoms", test_race_randoms);
  int rc = g_test_run();
  g_autofree char *run = tmp_path("run.txt");
  g_unlink(run);
  g_rmdir(tmp_dir);
  return rc;
}
