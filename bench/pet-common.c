/* SPDX-License-Identifier: GPL-3.0-or-later */
/* See pet-common.h. */
#include "pet-common.h"
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include "pet/simulate/tl-simulate.h"

double bench_now(void) { return g_get_monotonic_time() * 1e-6; }

double bench_cpu_now(void) {
  struct rusage u;
  getrusage(RUSAGE_SELF, &u);
  return u.ru_utime.tv_sec + u.ru_stime.tv_sec + 1e-6 * (u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

void bench_die(GError *error) {
  fprintf(stderr, "%s: %s\n", g_get_prgname() ? g_get_prgname() : "bench", error->message);
  exit(1);
}

void bench_keep(BenchBest *b, double wall, double cpu, double gpu) {
  if (wall < b->wall) b->wall = wall, b->gpu = gpu;
  b->cpu = MIN(b->cpu, cpu);
}

gboolean pet_nema_simulate(PetNema *out, const TlImageGrid *grid, double events, gboolean tof,
                           GError **error) {
  memset(out, 0, sizeof *out);
  g_autoptr(TlScanner) scanner = tl_scanner_new_preset("dmi", error);
  if (!scanner) return FALSE;
  TlPhantomOptions po;
  tl_phantom_options_init(&po);
  g_autoptr(TlPhantom) ph = tl_phantom_new_preset("nema", &po, grid, error);
  if (!ph || !tl_phantom_rasterise(ph, grid, 0, &out->act, &out->mu, error)) return FALSE;
  TlSimulateParams sp;
  tl_simulate_params_init(&sp);
  sp.events = events;
  sp.exact_count = TRUE;
  sp.seed = 1;
  sp.tof = tof;
  double t0 = bench_now();
  out->lm = tl_simulate(scanner, out->act, out->mu, &sp, NULL, NULL, NULL, NULL, error);
  out->seconds = bench_now() - t0;
  return out->lm != NULL;
}

void pet_nema_clear(PetNema *n) {
  g_clear_pointer(&n->act, tl_image_free);
  g_clear_pointer(&n->mu, tl_image_free);
  g_clear_pointer(&n->lm, tl_listmode_free);
}

void pet_device_run(PetDevice *d, PetOp op, BenchBest *b) {
  GError *error = NULL;
  g_autoptr(TlProfile) prof = tl_profile_new();
  g_autoptr(TlStream) st = tl_stream_new(d->ctx, &error);
  if (!st) bench_die(error);
  tl_stream_set_profile(st, prof);
  if (!tl_stream_zero(st, op == PET_OP_BACK ? d->img : d->c, &error) ||
      !tl_stream_finish(st, &error))
    bench_die(error);
  g_autoptr(TlExprArgs) args = tl_expr_args_new();
  if (op == PET_OP_SUBITER) {
    tl_expr_args_array(args, "f", d->x);
    tl_expr_args_array(args, "c", d->c);
    tl_expr_args_array(args, "s", d->s);
    tl_expr_args_scalar(args, "k", 1.0f);
    tl_expr_args_set_label(args, "update");
  }
  double t0 = bench_now(), c0 = bench_cpu_now();
  gboolean ok =
      op == PET_OP_FORWARD ? tl_projector_forward(d->p, st, &d->lors, d->x, d->y, &error)
      : op == PET_OP_BACK  ? tl_projector_back(d->p, st, &d->lors, NULL, d->img, &error)
                           : tl_projector_em(d->p, st, &d->lors, d->x, d->c, &error) &&
                                tl_expr_assign(d->ctx, st, "c = select(s > 0, f * c * k / s, 0)",
                                               args, &error);
  if (!ok || !tl_stream_finish(st, &error)) bench_die(error);
  bench_keep(b, bench_now() - t0, bench_cpu_now() - c0, tl_profile_total_ms(prof) * 1e-3);
  if (g_getenv("TL_BENCH_PROFILE")) { /* every kernel's time, for tuning */
    g_autofree char *text = tl_profile_format(prof);
    fprintf(stderr, "%s\n", text);
  }
}
