/* SPDX-License-Identifier: GPL-3.0-or-later */
/* TlRaceSpec: one race described once, for every front end (issue 29): the data, the entrants
 * (tl-run-race.h's "ALGORITHM[:KEY=VALUE,...]"), the race's own run keys (kappa, seed), the
 * reference (an image, or made by an entrant run to a tolerance), the PETRIC regions, the
 * updates and the outputs. `tomolab-cli race` fills one from its options (and `--race FILE`),
 * the window's Race dialog from its rows, `tomolab --race FILE` reads one; all three run it
 * through tl-run-race-session.h, so a setting cannot mean two things in two doors.
 *
 * Text form (docs/formats.md, "Race files"): one `key = value` per line, `#` starts a comment,
 * every key at most once; lists (algos, vois) are separated by ';' (entrant settings hold
 * commas). Unknown keys, bad numbers and out-of-range values are refused with the line, the key
 * and the value. tl_race_spec_to_text writes every key, so a file written and read back gives
 * the same spec. */
#pragma once
#include "tl-api.h"
#include <glib.h>

G_BEGIN_DECLS

typedef struct {
  char *data;             /* PET list mode or a sinogram; NULL = the caller's dataset */
  char **algos;           /* the entrants' specs, 1 to TL_RACE_MAX_ENTRANTS (NULL-terminated) */
  char *kappa;            /* every prior's per-voxel weights (run key kappa); NULL = none */
  guint seed;             /* the stochastic entrants' seed (run key seed; an entrant's wins) */
  char *reference;        /* the converged reference image: read, or written when made */
  char *reference_algo;   /* make the reference with this entrant spec; NULL = read it */
  guint reference_updates;/* at most this many updates for the reference */
  double tolerance;       /* its stopping rule: relative objective change over a pass */
  char *object;           /* whole-object mask; NULL = every voxel */
  char *background;       /* background mask; NULL = none */
  char **vois;            /* "[NAME=]MASK" volumes of interest (NULL-terminated or NULL) */
  gboolean nema;          /* the NEMA IEC phantom's spheres and background */
  guint updates;          /* updates per entrant */
  gboolean until_target;  /* an entrant that reached the target takes no more turns */
  gboolean objective;     /* each entrant's objective after every update (untimed) */
  char *grid;             /* NXxNYxNZ@V[,VY,VZ]; NULL = the reference's, else the dataset's */
  char *device;           /* device index or name substring; NULL = the default */
  char *csv;              /* every update of every entrant as CSV; NULL = none */
  char *randoms;          /* every entrant's randoms (run key randoms): NULL/"none", "delayeds" */
} TlRaceSpec;

TL_API TlRaceSpec *tl_race_spec_new(void);
TL_API void tl_race_spec_free(TlRaceSpec *s);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(TlRaceSpec, tl_race_spec_free)
TL_API TlRaceSpec *tl_race_spec_copy(const TlRaceSpec *s);

/* The keys, for documentation and front ends: key, what is accepted, default, meaning. */
typedef struct {
  const char *key, *values, *def, *doc;
} TlRaceKeyInfo;
/* NULL-key-terminated. */
TL_API const TlRaceKeyInfo *tl_race_keys(void);

/* One key from its text value (GError naming the key, the value and what was expected); "" or
 * "auto" = the default. */
TL_API gboolean tl_race_spec_set(TlRaceSpec *s, const char *key, const char *value,
                                 GError **error);
/* The text of one key's value (g_free); NULL for an unknown key. */
TL_API char *tl_race_spec_get(const TlRaceSpec *s, const char *key);
/* `key = value` lines into s; `source` names the text in messages. */
TL_API gboolean tl_race_spec_parse(TlRaceSpec *s, const char *text, const char *source,
                                   GError **error);
TL_API TlRaceSpec *tl_race_spec_load(const char *path, GError **error);
TL_API char *tl_race_spec_to_text(const TlRaceSpec *s);
/* The combination checks: 1 to TL_RACE_MAX_ENTRANTS entrants, a reference or a way to make it. */
TL_API gboolean tl_race_spec_validate(const TlRaceSpec *s, GError **error);

G_END_DECLS
