/* SPDX-License-Identifier: GPL-3.0-or-later */
/* TlKernelEditor: a GLSL editor (GtkSourceView 5: highlighting, line numbers) on any built-in
 * kernel (core/tl-kernels.h) or a kernel file, compiled with glslang on a worker thread.
 * Compile errors are marked on their lines and listed; the run keeps its last good kernel. A
 * kernel that compiles is installed between two sub-iterations of the window's run (the
 * runner's device lock), checked first when it is half of a projector pair
 * (pet/tl-pet-kernel-check.h), and the check shown. The profile then times it as
 * "... (edited)". An edit of a kernel the run never calls is refused with the reason (the
 * run's configured path, tl_runner_check_kernel_locked); the status names the kernels the
 * last sub-iteration called. Revert gives the built-in back. */
#pragma once
#include <adwaita.h>
#include "tl-kernels.h"
#include "pet/scanner/tl-scanner.h"
#include "tl-runner.h"

G_BEGIN_DECLS

#define TL_TYPE_KERNEL_EDITOR (tl_kernel_editor_get_type())
G_DECLARE_FINAL_TYPE(TlKernelEditor, tl_kernel_editor, TL, KERNEL_EDITOR, AdwWindow)

/* What installing needs from the window, asked for at each Apply (the dataset and the run
 * change under the editor). Called on the main thread. */
typedef struct {
  TlContext *ctx;
  TlRunner *runner;    /* the current run (a reference the editor drops), or NULL */
  const TlScanner *scanner; /* the PET dataset's (borrowed while applying), or NULL: no pair check */
  TlImageGrid grid;
  char projector[16];
  /* the built-in kernels the run's last sub-iteration called (its profile), NULL-terminated,
   * or NULL before one ran; borrowed for the call */
  const char *const *run_kernels;
} TlKernelTarget;
typedef gboolean (*TlKernelTargetFunc)(gpointer window, TlKernelTarget *target);

TlKernelEditor *tl_kernel_editor_new(GtkWindow *parent, TlKernelTargetFunc target,
                                     gpointer window);
/* Shows built-in kernel `name`: its source, or the edited text kept for it this session. */
void tl_kernel_editor_show_kernel(TlKernelEditor *self, const char *name);
const char *tl_kernel_editor_get_kernel(TlKernelEditor *self);
void tl_kernel_editor_set_text(TlKernelEditor *self, const char *text);
char *tl_kernel_editor_get_text(TlKernelEditor *self);
/* Compile and install (asynchronous; tl_kernel_editor_is_busy until done). */
void tl_kernel_editor_apply(TlKernelEditor *self);
/* Back to the built-in kernel, in the context and in the editor. */
void tl_kernel_editor_revert(TlKernelEditor *self);
gboolean tl_kernel_editor_is_busy(TlKernelEditor *self);
/* After the last apply: the lines marked as errors (GArray of guint, 1-based), the status line
 * ("compiled and installed", the check, or the first error). */
GArray *tl_kernel_editor_get_error_lines(TlKernelEditor *self);
const char *tl_kernel_editor_get_status(TlKernelEditor *self);
gboolean tl_kernel_editor_load_file(TlKernelEditor *self, const char *path, GError **error);
gboolean tl_kernel_editor_save_file(TlKernelEditor *self, const char *path, GError **error);

G_END_DECLS
