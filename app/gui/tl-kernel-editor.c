/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The kernel editor window (tl-kernel-editor.h). */
#include "tl-kernel-editor.h"
#include <gtksourceview/gtksource.h>
#include "expr/tl-kernel-edit.h"
#include "pet/tl-pet-kernel-check.h"
#include "image/tl-file.h"
#include <math.h>
#include <string.h>

/* LORs the projector-pair check draws: ~5 ms of lavapipe per projection on the DMI */
#define TL_KERNEL_CHECK_LORS 2000

struct _TlKernelEditor {
  AdwWindow parent_instance;
  GtkDropDown *kernels;
  GtkSourceBuffer *buffer;
  GtkSourceView *view;
  GtkLabel *status;
  GtkListBox *messages;
  GtkButton *apply_button, *revert_button;
  GtkTextTag *error_tag;
  TlKernelTargetFunc target;
  gpointer window;
  GHashTable *texts;       /* kernel name -> text edited this session */
  char *kernel;            /* the kernel shown */
  GArray *error_lines;     /* guint, of the last apply */
  char *status_text;
  guint busy;
  gboolean disposed;       /* closed while a worker ran: its result is dropped */
  gboolean showing;        /* set_text from show_kernel: not an edit */
};

G_DEFINE_FINAL_TYPE(TlKernelEditor, tl_kernel_editor, ADW_TYPE_WINDOW)

static void set_status(TlKernelEditor *self, const char *text) {
  g_free(self->status_text);
  self->status_text = g_strdup(text);
  gtk_label_set_text(self->status, text);
}

static void update_sensitivity(TlKernelEditor *self) {
  gtk_widget_set_sensitive(GTK_WIDGET(self->apply_button), self->busy == 0);
  gtk_widget_set_sensitive(GTK_WIDGET(self->revert_button), self->busy == 0);
}

static void clear_marks(TlKernelEditor *self) {
  GtkTextIter a, b;
  gtk_text_buffer_get_bounds(GTK_TEXT_BUFFER(self->buffer), &a, &b);
  gtk_text_buffer_remove_tag(GTK_TEXT_BUFFER(self->buffer), self->error_tag, &a, &b);
  g_array_set_size(self->error_lines, 0);
  GtkWidget *row;
  while ((row = gtk_widget_get_first_child(GTK_WIDGET(self->messages))))
    gtk_list_box_remove(self->messages, row);
}

void tl_kernel_editor_set_text(TlKernelEditor *self, const char *text) {
  gtk_text_buffer_set_text(GTK_TEXT_BUFFER(self->buffer), text, -1);
}

char *tl_kernel_editor_get_text(TlKernelEditor *self) {
  GtkTextIter a, b;
  gtk_text_buffer_get_bounds(GTK_TEXT_BUFFER(self->buffer), &a, &b);
  return gtk_text_buffer_get_text(GTK_TEXT_BUFFER(self->buffer), &a, &b, FALSE);
}

static void keep_text(TlKernelEditor *self) {
  if (self->kernel)
    g_hash_table_replace(self->texts, g_strdup(self->kernel), tl_kernel_editor_get_text(self));
}

void tl_kernel_editor_show_kernel(TlKernelEditor *self, const char *name) {
  if (self->kernel && g_strcmp0(self->kernel, name) != 0) keep_text(self);
  const char *kept = g_hash_table_lookup(self->texts, name);
  g_autoptr(GError) error = NULL;
  g_autofree char *src = kept ? g_strdup(kept) : tl_kernels_source(name, &error);
  if (!src) {
    set_status(self, error->message);
    return;
  }
  g_free(self->kernel);
  self->kernel = g_strdup(name);
  self->showing = TRUE;
  tl_kernel_editor_set_text(self, src);
  self->showing = FALSE;
  clear_marks(self);
  gtk_window_set_title(GTK_WINDOW(self), name);
  /* the drop-down follows (without re-entering here) */
  const char *const *names = tl_kernels_names();
  for (guint i = 0; names[i]; i++)
    if (g_str_equal(names[i], name) && gtk_drop_down_get_selected(self->kernels) != i)
      gtk_drop_down_set_selected(self->kernels, i);
  TlKernelTarget t = {0};
  gboolean replaced = self->target(self->window, &t) && t.ctx && tl_kernels_replaced(t.ctx, name);
  if (t.runner) tl_runner_unref(t.runner);
  g_autofree char *calls = t.run_kernels ? g_strjoinv(", ", (char **)t.run_kernels) : NULL;
  g_autofree char *text = g_strdup_printf(
      "%s%s%s%s", replaced ? "Edited kernel in use" : "Built-in kernel",
      !calls                                  ? ""
      : g_strv_contains(t.run_kernels, name) ? "; the run's last sub-iteration called it ("
                                              : "; the run's last sub-iteration did not call it (",
      calls ? calls : "", calls ? ")" : "");
  set_status(self, text);
}

const char *tl_kernel_editor_get_kernel(TlKernelEditor *self) { return self->kernel; }
gboolean tl_kernel_editor_is_busy(TlKernelEditor *self) { return self->busy > 0; }
GArray *tl_kernel_editor_get_error_lines(TlKernelEditor *self) { return self->error_lines; }
const char *tl_kernel_editor_get_status(TlKernelEditor *self) { return self->status_text; }

/* --- Apply: compile on a worker, install between two sub-iterations --- */

typedef struct {
  char *name, *text;
  GObject *window;          /* a reference: the window (and its device) outlive the worker */
  TlKernelTarget target;
  TlScanner *scanner;       /* a copy: the dataset may go while the worker runs */
  GPtrArray *diagnostics;   /* out */
  TlPetKernelCheck check;   /* out */
  gboolean compiled;
} Apply;

static void apply_free(gpointer p) {
  Apply *a = p;
  g_free(a->name);
  g_free(a->text);
  if (a->scanner) tl_scanner_free(a->scanner);
  if (a->target.runner) tl_runner_unref(a->target.runner);
  if (a->window) g_object_unref(a->window);
  if (a->diagnostics) g_ptr_array_unref(a->diagnostics);
  g_free(a);
}

static void apply_thread(GTask *task, gpointer source, gpointer data, GCancellable *cancel) {
  Apply *a = data;
  GError *error = NULL;
  g_autofree guint32 *spirv = NULL;
  gsize size = 0;
  if (!tl_kernel_compile_spirv(a->name, a->text, &spirv, &size, &a->diagnostics, &error)) {
    g_task_return_error(task, error);
    return;
  }
  a->compiled = TRUE;
  /* the run's worker holds this lock for a whole sub-iteration: taking it puts the swap
   * between two of them, while running or paused */
  if (a->target.runner) tl_runner_lock_device(a->target.runner);
  /* an edit the run would never use changes nothing: refused, saying what it runs */
  if (a->target.runner && !tl_runner_check_kernel_locked(a->target.runner, a->name, &error)) {
    tl_runner_unlock_device(a->target.runner);
    g_task_return_error(task, error);
    return;
  }
  gboolean ok = tl_pet_kernel_install_checked(a->target.ctx, a->name, spirv, size, a->scanner,
                                              &a->target.grid, a->target.projector,
                                              a->scanner ? TL_KERNEL_CHECK_LORS : 0, &a->check,
                                              &error);
  if (ok && a->target.runner) tl_runner_mark_change(a->target.runner);
  if (a->target.runner) tl_runner_unlock_device(a->target.runner);
  if (ok)
    g_task_return_boolean(task, TRUE);
  else
    g_task_return_error(task, error);
}

static void mark_line(TlKernelEditor *self, guint line, const char *message, gboolean is_error) {
  if (line > 0) {
    GtkTextIter a, b;
    gtk_text_buffer_get_iter_at_line(GTK_TEXT_BUFFER(self->buffer), &a, (int)line - 1);
    b = a;
    gtk_text_iter_forward_to_line_end(&b);
    if (is_error) gtk_text_buffer_apply_tag(GTK_TEXT_BUFFER(self->buffer), self->error_tag, &a, &b);
  }
  if (is_error && line > 0) g_array_append_val(self->error_lines, line);
  g_autofree char *text = line ? g_strdup_printf("%s line %u: %s", is_error ? "Error" : "Warning",
                                                 line, message)
                               : g_strdup(message);
  GtkWidget *label = gtk_label_new(text);
  gtk_label_set_xalign(GTK_LABEL(label), 0);
  gtk_label_set_wrap(GTK_LABEL(label), TRUE);
  gtk_widget_add_css_class(label, is_error ? "error" : "warning");
  gtk_list_box_append(self->messages, label);
}

static void apply_done(GObject *source, GAsyncResult *res, gpointer data) {
  TlKernelEditor *self = TL_KERNEL_EDITOR(source);
  Apply *a = g_task_get_task_data(G_TASK(res));
  g_autoptr(GError) error = NULL;
  gboolean ok = g_task_propagate_boolean(G_TASK(res), &error);
  self->busy--;
  if (self->disposed) return;
  update_sensitivity(self);
  clear_marks(self);
  for (guint i = 0; a->diagnostics && i < a->diagnostics->len; i++) {
    const TlKernelDiagnostic *d = g_ptr_array_index(a->diagnostics, i);
    if (d->line || d->error) mark_line(self, d->line, d->message, d->error);
  }
  if (!ok) {
    /* one line: the first error, with its line */
    g_autofree char *first = g_strdup(error->message);
    char *nl = strchr(first, '\n');
    if (nl) *nl = 0;
    g_autofree char *text = g_strdup_printf(
        "%s: %s — the run keeps its previous kernel",
        a->compiled ? "Not installed" : "Does not compile",
        self->error_lines->len ? "see the marked lines" : first);
    set_status(self, text);
  } else if (!isnan(a->check.adjoint_rel)) {
    g_autofree char *text = g_strdup_printf(
        "Installed; used from the next sub-iteration. Check on %u random LORs: adjointness "
        "%.1e%s, forward changed %.1e, back changed %.1e (relative)",
        a->check.n_lors, a->check.adjoint_rel, a->check.adjoint_rel > 1e-4 ? " (NOT adjoint)" : "",
        a->check.forward_rel, a->check.back_rel);
    set_status(self, text);
  } else {
    set_status(self, "Installed; used from the next sub-iteration");
  }
}

void tl_kernel_editor_apply(TlKernelEditor *self) {
  if (!self->kernel || self->busy) return;
  TlKernelTarget t = {0};
  if (!self->target(self->window, &t) || !t.ctx) {
    if (t.runner) tl_runner_unref(t.runner);
    set_status(self, "No device yet: nothing to install into");
    return;
  }
  keep_text(self);
  Apply *a = g_new0(Apply, 1);
  a->name = g_strdup(self->kernel);
  a->text = tl_kernel_editor_get_text(self);
  a->target = t;
  a->window = g_object_ref(self->window);
  a->scanner = t.scanner ? tl_scanner_copy(t.scanner) : NULL;
  a->target.scanner = NULL;
  a->target.run_kernels = NULL; /* borrowed: not for the worker */
  self->busy++;
  update_sensitivity(self);
  set_status(self, "Compiling…");
  GTask *task = g_task_new(self, NULL, apply_done, NULL);
  g_task_set_task_data(task, a, apply_free);
  g_task_run_in_thread(task, apply_thread);
  g_object_unref(task);
}

static void revert_thread(GTask *task, gpointer source, gpointer data, GCancellable *cancel) {
  Apply *a = data;
  if (a->target.runner) tl_runner_lock_device(a->target.runner); /* between sub-iterations */
  tl_kernels_revert(a->target.ctx, a->name);
  if (a->target.runner) tl_runner_mark_change(a->target.runner);
  if (a->target.runner) tl_runner_unlock_device(a->target.runner);
  g_task_return_boolean(task, TRUE);
}

static void revert_done(GObject *source, GAsyncResult *res, gpointer data) {
  TlKernelEditor *self = TL_KERNEL_EDITOR(source);
  Apply *a = g_task_get_task_data(G_TASK(res));
  self->busy--;
  if (self->disposed) return;
  update_sensitivity(self);
  g_hash_table_remove(self->texts, a->name);
  g_clear_pointer(&self->kernel, g_free);
  tl_kernel_editor_show_kernel(self, a->name);
  set_status(self, "Built-in kernel restored; used from the next sub-iteration");
}

/* Waiting for the run's device lock can take a sub-iteration: on a worker, like apply. */
void tl_kernel_editor_revert(TlKernelEditor *self) {
  if (!self->kernel || self->busy) return;
  TlKernelTarget t = {0};
  if (!self->target(self->window, &t) || !t.ctx) {
    if (t.runner) tl_runner_unref(t.runner);
    g_hash_table_remove(self->texts, self->kernel);
    g_autofree char *name = g_strdup(self->kernel);
    g_clear_pointer(&self->kernel, g_free);
    tl_kernel_editor_show_kernel(self, name);
    return;
  }
  Apply *a = g_new0(Apply, 1);
  a->name = g_strdup(self->kernel);
  a->target = t;
  a->target.scanner = NULL;
  a->window = g_object_ref(self->window);
  self->busy++;
  update_sensitivity(self);
  GTask *task = g_task_new(self, NULL, revert_done, NULL);
  g_task_set_task_data(task, a, apply_free);
  g_task_run_in_thread(task, revert_thread);
  g_object_unref(task);
}

/* --- files --- */

gboolean tl_kernel_editor_load_file(TlKernelEditor *self, const char *path, GError **error) {
  g_autofree char *text = NULL;
  gsize n = 0;
  if (!tl_file_check_input(path, "kernel", error) || !g_file_get_contents(path, &text, &n, error))
    return FALSE;
  if (n > (1 << 20) || !g_utf8_validate(text, n, NULL) || strlen(text) != n) {
    g_set_error(error, TL_ERROR, TL_ERROR_FORMAT,
                "kernel '%s': %" G_GSIZE_FORMAT " bytes (expected UTF-8 GLSL text of at most 1 MiB)",
                path, n);
    return FALSE;
  }
  tl_kernel_editor_set_text(self, text);
  return TRUE;
}

gboolean tl_kernel_editor_save_file(TlKernelEditor *self, const char *path, GError **error) {
  g_autofree char *text = tl_kernel_editor_get_text(self);
  return tl_file_write_text(path, text, error);
}

G_GNUC_BEGIN_IGNORE_DEPRECATIONS
static void chooser_response(GtkNativeDialog *dialog, int response, gpointer data) {
  TlKernelEditor *self = data;
  gboolean save = gtk_file_chooser_get_action(GTK_FILE_CHOOSER(dialog)) == GTK_FILE_CHOOSER_ACTION_SAVE;
  if (response == GTK_RESPONSE_ACCEPT) {
    g_autoptr(GFile) f = gtk_file_chooser_get_file(GTK_FILE_CHOOSER(dialog));
    g_autofree char *path = f ? g_file_get_path(f) : NULL;
    g_autoptr(GError) error = NULL;
    if (path && !(save ? tl_kernel_editor_save_file(self, path, &error)
                       : tl_kernel_editor_load_file(self, path, &error)))
      set_status(self, error->message);
    else if (path)
      set_status(self, save ? "Saved" : "Opened (Apply to use it)");
  }
  g_object_unref(dialog);
}

static void choose_file(TlKernelEditor *self, gboolean save) {
  GtkFileChooserNative *d = gtk_file_chooser_native_new(
      save ? "Save Kernel" : "Open Kernel", GTK_WINDOW(self),
      save ? GTK_FILE_CHOOSER_ACTION_SAVE : GTK_FILE_CHOOSER_ACTION_OPEN, NULL, NULL);
  gtk_native_dialog_set_modal(GTK_NATIVE_DIALOG(d), TRUE);
  if (save && self->kernel) {
    g_autofree char *name = g_strdup_printf("%s.comp", self->kernel);
    gtk_file_chooser_set_current_name(GTK_FILE_CHOOSER(d), name);
  }
  GtkFileFilter *f = gtk_file_filter_new();
  gtk_file_filter_add_pattern(f, "*.comp");
  gtk_file_filter_add_pattern(f, "*.glsl");
  gtk_file_filter_set_name(f, "GLSL compute kernels");
  gtk_file_chooser_add_filter(GTK_FILE_CHOOSER(d), f);
  g_object_unref(f);
  g_signal_connect(d, "response", G_CALLBACK(chooser_response), self);
  gtk_native_dialog_show(GTK_NATIVE_DIALOG(d));
}
G_GNUC_END_IGNORE_DEPRECATIONS

/* --- widget --- */

static void on_selected(GObject *dd, GParamSpec *pspec, gpointer data) {
  TlKernelEditor *self = data;
  guint i = gtk_drop_down_get_selected(GTK_DROP_DOWN(dd));
  const char *const *names = tl_kernels_names();
  guint n = g_strv_length((char **)names);
  if (i < n && g_strcmp0(names[i], self->kernel) != 0) tl_kernel_editor_show_kernel(self, names[i]);
}

static void on_apply(GtkButton *b, gpointer data) { tl_kernel_editor_apply(data); }
static void on_revert(GtkButton *b, gpointer data) { tl_kernel_editor_revert(data); }
static void on_open(GtkButton *b, gpointer data) { choose_file(data, FALSE); }
static void on_save(GtkButton *b, gpointer data) { choose_file(data, TRUE); }

static GtkWidget *button(const char *label, const char *tooltip, GCallback cb, gpointer data) {
  GtkWidget *b = gtk_button_new_with_mnemonic(label);
  gtk_widget_set_tooltip_text(b, tooltip);
  g_signal_connect(b, "clicked", cb, data);
  return b;
}

static void tl_kernel_editor_init(TlKernelEditor *self) {
  gtk_source_init();
  self->texts = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
  self->error_lines = g_array_new(FALSE, FALSE, sizeof(guint));
  gtk_window_set_default_size(GTK_WINDOW(self), 860, 720);

  GtkWidget *header = adw_header_bar_new();
  self->kernels = GTK_DROP_DOWN(gtk_drop_down_new_from_strings(tl_kernels_names()));
  gtk_widget_set_tooltip_text(GTK_WIDGET(self->kernels), "Built-in kernel to edit");
  adw_header_bar_pack_start(ADW_HEADER_BAR(header), GTK_WIDGET(self->kernels));
  adw_header_bar_pack_start(ADW_HEADER_BAR(header),
                            button("_Open…", "Open a kernel file (.comp) into this kernel",
                                   G_CALLBACK(on_open), self));
  adw_header_bar_pack_start(ADW_HEADER_BAR(header),
                            button("_Save…", "Save the text as a .comp file (recon --kernel)",
                                   G_CALLBACK(on_save), self));
  self->apply_button = GTK_BUTTON(button("_Apply", "Compile; if it compiles, the run uses it "
                                         "from the next sub-iteration", G_CALLBACK(on_apply), self));
  gtk_widget_add_css_class(GTK_WIDGET(self->apply_button), "suggested-action");
  self->revert_button = GTK_BUTTON(button("_Revert", "Back to the built-in kernel",
                                          G_CALLBACK(on_revert), self));
  adw_header_bar_pack_end(ADW_HEADER_BAR(header), GTK_WIDGET(self->apply_button));
  adw_header_bar_pack_end(ADW_HEADER_BAR(header), GTK_WIDGET(self->revert_button));

  GtkSourceLanguageManager *lm = gtk_source_language_manager_get_default();
  GtkSourceLanguage *glsl = gtk_source_language_manager_get_language(lm, "glsl");
  self->buffer = glsl ? gtk_source_buffer_new_with_language(glsl) : gtk_source_buffer_new(NULL);
  GtkSourceStyleSchemeManager *sm = gtk_source_style_scheme_manager_get_default();
  GtkSourceStyleScheme *scheme = gtk_source_style_scheme_manager_get_scheme(sm, "Adwaita");
  if (scheme) gtk_source_buffer_set_style_scheme(self->buffer, scheme);
  self->error_tag = gtk_text_buffer_create_tag(GTK_TEXT_BUFFER(self->buffer), "tl-error",
                                               "background", "rgba(224,27,36,0.25)",
                                               "underline", PANGO_UNDERLINE_ERROR, NULL);
  self->view = GTK_SOURCE_VIEW(gtk_source_view_new_with_buffer(self->buffer));
  g_object_unref(self->buffer); /* the view holds it */
  gtk_source_view_set_show_line_numbers(self->view, TRUE);
  gtk_source_view_set_highlight_current_line(self->view, TRUE);
  gtk_source_view_set_auto_indent(self->view, TRUE);
  gtk_source_view_set_tab_width(self->view, 2);
  gtk_text_view_set_monospace(GTK_TEXT_VIEW(self->view), TRUE);
  GtkWidget *scroll = gtk_scrolled_window_new();
  gtk_scrolled_window_set_child(GTK_SCROLLED_WINDOW(scroll), GTK_WIDGET(self->view));
  gtk_widget_set_vexpand(scroll, TRUE);

  self->status = GTK_LABEL(gtk_label_new("Built-in kernel"));
  gtk_label_set_xalign(self->status, 0);
  gtk_label_set_wrap(self->status, TRUE);
  gtk_widget_set_margin_start(GTK_WIDGET(self->status), 8);
  gtk_widget_set_margin_end(GTK_WIDGET(self->status), 8);
  self->messages = GTK_LIST_BOX(gtk_list_box_new());
  gtk_list_box_set_selection_mode(self->messages, GTK_SELECTION_NONE);
  GtkWidget *msg_scroll = gtk_scrolled_window_new();
  gtk_scrolled_window_set_child(GTK_SCROLLED_WINDOW(msg_scroll), GTK_WIDGET(self->messages));
  gtk_scrolled_window_set_min_content_height(GTK_SCROLLED_WINDOW(msg_scroll), 60);
  gtk_scrolled_window_set_max_content_height(GTK_SCROLLED_WINDOW(msg_scroll), 140);
  gtk_scrolled_window_set_propagate_natural_height(GTK_SCROLLED_WINDOW(msg_scroll), TRUE);

  GtkWidget *box = gtk_box_new(GTK_ORIENTATION_VERTICAL, 4);
  gtk_box_append(GTK_BOX(box), header);
  gtk_box_append(GTK_BOX(box), scroll);
  gtk_box_append(GTK_BOX(box), GTK_WIDGET(self->status));
  gtk_box_append(GTK_BOX(box), msg_scroll);
  adw_window_set_content(ADW_WINDOW(self), box);
  g_signal_connect(self->kernels, "notify::selected", G_CALLBACK(on_selected), self);
}

static void tl_kernel_editor_dispose(GObject *o) {
  TL_KERNEL_EDITOR(o)->disposed = TRUE;
  G_OBJECT_CLASS(tl_kernel_editor_parent_class)->dispose(o);
}

static void tl_kernel_editor_finalize(GObject *o) {
  TlKernelEditor *self = TL_KERNEL_EDITOR(o);
  g_hash_table_unref(self->texts);
  g_array_unref(self->error_lines);
  g_free(self->kernel);
  g_free(self->status_text);
  G_OBJECT_CLASS(tl_kernel_editor_parent_class)->finalize(o);
}

static void tl_kernel_editor_class_init(TlKernelEditorClass *klass) {
  G_OBJECT_CLASS(klass)->finalize = tl_kernel_editor_finalize;
  G_OBJECT_CLASS(klass)->dispose = tl_kernel_editor_dispose;
}

TlKernelEditor *tl_kernel_editor_new(GtkWindow *parent, TlKernelTargetFunc target,
                                     gpointer window) {
  TlKernelEditor *self = g_object_new(TL_TYPE_KERNEL_EDITOR, "transient-for", parent, NULL);
  self->target = target;
  self->window = window;
  return self;
}
