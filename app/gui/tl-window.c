/* TlWindow: opens the TlContext on a GTask worker (vkCreateInstance and the validation
 * layer take a second or more) so the main thread only ever draws. */
#include "tl-window.h"

struct _TlWindow {
  AdwApplicationWindow parent_instance;

  AdwWindowTitle *window_title;
  GtkStack *stack;
  GtkSpinner *spinner;
  AdwStatusPage *error_page;
  GtkListBox *error_devices;
  TlDevicePanel *device_panel;

  char *selector;
  GCancellable *cancellable;
  TlWindowState state;
  TlContext *ctx;
  GArray *devices;          /* TlDeviceInfo; NULL when enumeration failed */
  GError *error;
  char *error_text;
};

G_DEFINE_FINAL_TYPE(TlWindow, tl_window, ADW_TYPE_APPLICATION_WINDOW)
G_DEFINE_ENUM_TYPE(TlWindowState, tl_window_state,
                   G_DEFINE_ENUM_VALUE(TL_WINDOW_LOADING, "loading"),
                   G_DEFINE_ENUM_VALUE(TL_WINDOW_READY, "ready"),
                   G_DEFINE_ENUM_VALUE(TL_WINDOW_FAILED, "failed"))

enum { PROP_0, PROP_SELECTOR, PROP_STATE, N_PROPS };
static GParamSpec *props[N_PROPS];

/* What the worker hands back: the context or the error, and the devices either way. */
typedef struct {
  TlContext *ctx;
  GArray *devices;
  GError *error;
} TlLoadResult;

static void load_result_free(gpointer data) {
  TlLoadResult *r = data;
  g_clear_pointer(&r->ctx, tl_context_free);
  g_clear_pointer(&r->devices, g_array_unref);
  g_clear_error(&r->error);
  g_free(r);
}

static void load_thread(GTask *task, gpointer source, gpointer task_data, GCancellable *cancellable) {
  const char *selector = task_data;
  TlLoadResult *r = g_new0(TlLoadResult, 1);
  /* The list is only shown, so failing to enumerate is not an error by itself:
   * tl_context_new reports the real reason. */
  r->devices = tl_enumerate_devices(NULL);
  r->ctx = tl_context_new(selector, &r->error);
  g_task_return_pointer(task, r, load_result_free);
}

/* A next step for the person reading the error page (the message says what failed). */
static const char *error_hint(const char *selector, GArray *devices) {
  gboolean any_usable = FALSE;
  for (guint i = 0; devices && i < devices->len; i++)
    any_usable |= g_array_index(devices, TlDeviceInfo, i).usable;
  if (selector || g_getenv("TOMOLAB_DEVICE"))
    return "Choose another device with --device INDEX|NAME or unset TOMOLAB_DEVICE.";
  if (!devices || devices->len == 0)
    return "Tomolab needs a Vulkan 1.2 driver; vulkaninfo --summary lists what this system has.";
  if (!any_usable)
    return "None of the devices below can run Tomolab; a newer Vulkan driver may help.";
  return "Run tomolab-cli info in a terminal for details.";
}

static void set_state(TlWindow *self, TlWindowState state) {
  self->state = state;
  gtk_spinner_set_spinning(self->spinner, state == TL_WINDOW_LOADING);
  gtk_stack_set_visible_child_name(self->stack, state == TL_WINDOW_LOADING ? "loading"
                                                : state == TL_WINDOW_READY ? "device" : "error");
  g_object_notify_by_pspec(G_OBJECT(self), props[PROP_STATE]);
}

static void show_context(TlWindow *self) {
  const TlDeviceInfo *info = tl_context_info(self->ctx);
  adw_window_title_set_subtitle(self->window_title, info->name);
  tl_device_panel_show(self->device_panel, info, tl_context_validation_enabled(self->ctx),
                       tl_context_validation_messages(self->ctx), self->devices);
  set_state(self, TL_WINDOW_READY);
}

static void show_error(TlWindow *self) {
  const char *hint = error_hint(self->selector, self->devices);
  g_free(self->error_text);
  self->error_text = g_strdup_printf("%s\n\n%s", self->error->message, hint);
  /* The description is markup; the message comes from drivers and must not be parsed. */
  g_autofree char *markup = g_markup_escape_text(self->error_text, -1);
  adw_status_page_set_description(self->error_page, markup);
  for (guint i = 0; self->devices && i < self->devices->len; i++)
    gtk_list_box_append(self->error_devices,
                        tl_device_row_new(&g_array_index(self->devices, TlDeviceInfo, i), FALSE));
  gtk_widget_set_visible(GTK_WIDGET(self->error_devices), self->devices && self->devices->len > 0);
  set_state(self, TL_WINDOW_FAILED);
}

static void load_done(GObject *source, GAsyncResult *res, gpointer user_data) {
  g_autoptr(GError) cancelled = NULL;
  TlLoadResult *r = g_task_propagate_pointer(G_TASK(res), &cancelled);
  if (!r)
    return; /* the window was closed while loading; the task freed the result */
  TlWindow *self = TL_WINDOW(source);
  self->ctx = g_steal_pointer(&r->ctx);
  self->devices = g_steal_pointer(&r->devices);
  self->error = g_steal_pointer(&r->error);
  load_result_free(r);
  if (self->ctx)
    show_context(self);
  else
    show_error(self);
}

static void tl_window_constructed(GObject *object) {
  TlWindow *self = TL_WINDOW(object);
  G_OBJECT_CLASS(tl_window_parent_class)->constructed(object);
  set_state(self, TL_WINDOW_LOADING);
  g_autoptr(GTask) task = g_task_new(self, self->cancellable, load_done, NULL);
  g_task_set_source_tag(task, tl_window_constructed);
  g_task_set_task_data(task, g_strdup(self->selector), g_free);
  g_task_run_in_thread(task, load_thread);
}

TlWindow *tl_window_new(GtkApplication *app, const char *selector) {
  return g_object_new(TL_TYPE_WINDOW, "application", app, "selector", selector, NULL);
}

TlWindowState tl_window_get_state(TlWindow *self) {
  g_return_val_if_fail(TL_IS_WINDOW(self), TL_WINDOW_FAILED);
  return self->state;
}

gboolean tl_window_is_settled(TlWindow *self) {
  g_return_val_if_fail(TL_IS_WINDOW(self), FALSE);
  return self->state != TL_WINDOW_LOADING && !gtk_stack_get_transition_running(self->stack);
}

TlContext *tl_window_get_context(TlWindow *self) {
  g_return_val_if_fail(TL_IS_WINDOW(self), NULL);
  return self->ctx;
}

const GError *tl_window_get_error(TlWindow *self) {
  g_return_val_if_fail(TL_IS_WINDOW(self), NULL);
  return self->error;
}

const char *tl_window_get_error_text(TlWindow *self) {
  g_return_val_if_fail(TL_IS_WINDOW(self), NULL);
  return self->error_text;
}

TlDevicePanel *tl_window_get_device_panel(TlWindow *self) {
  g_return_val_if_fail(TL_IS_WINDOW(self), NULL);
  return self->device_panel;
}

static void tl_window_get_property(GObject *object, guint id, GValue *value, GParamSpec *pspec) {
  TlWindow *self = TL_WINDOW(object);
  switch (id) {
  case PROP_SELECTOR: g_value_set_string(value, self->selector); break;
  case PROP_STATE: g_value_set_enum(value, self->state); break;
  default: G_OBJECT_WARN_INVALID_PROPERTY_ID(object, id, pspec);
  }
}

static void tl_window_set_property(GObject *object, guint id, const GValue *value, GParamSpec *pspec) {
  TlWindow *self = TL_WINDOW(object);
  switch (id) {
  case PROP_SELECTOR: self->selector = g_value_dup_string(value); break;
  default: G_OBJECT_WARN_INVALID_PROPERTY_ID(object, id, pspec);
  }
}

static void tl_window_dispose(GObject *object) {
  TlWindow *self = TL_WINDOW(object);
  /* A worker still running keeps the window alive through its GTask; this makes its
   * callback drop the result instead of touching disposed widgets. */
  g_cancellable_cancel(self->cancellable);
  gtk_widget_dispose_template(GTK_WIDGET(self), TL_TYPE_WINDOW);
  G_OBJECT_CLASS(tl_window_parent_class)->dispose(object);
}

static void tl_window_finalize(GObject *object) {
  TlWindow *self = TL_WINDOW(object);
  g_clear_pointer(&self->ctx, tl_context_free);
  g_clear_pointer(&self->devices, g_array_unref);
  g_clear_error(&self->error);
  g_free(self->error_text);
  g_free(self->selector);
  g_object_unref(self->cancellable);
  G_OBJECT_CLASS(tl_window_parent_class)->finalize(object);
}

static void tl_window_class_init(TlWindowClass *klass) {
  GObjectClass *object_class = G_OBJECT_CLASS(klass);
  GtkWidgetClass *widget_class = GTK_WIDGET_CLASS(klass);
  object_class->constructed = tl_window_constructed;
  object_class->get_property = tl_window_get_property;
  object_class->set_property = tl_window_set_property;
  object_class->dispose = tl_window_dispose;
  object_class->finalize = tl_window_finalize;

  props[PROP_SELECTOR] = g_param_spec_string("selector", NULL, NULL, NULL,
      G_PARAM_READWRITE | G_PARAM_CONSTRUCT_ONLY | G_PARAM_STATIC_STRINGS);
  props[PROP_STATE] = g_param_spec_enum("state", NULL, NULL, TL_TYPE_WINDOW_STATE, TL_WINDOW_LOADING,
      G_PARAM_READABLE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS);
  g_object_class_install_properties(object_class, N_PROPS, props);

  g_type_ensure(TL_TYPE_DEVICE_PANEL);
  gtk_widget_class_set_template_from_resource(widget_class, "/org/tomolab/Tomolab/ui/tl-window.ui");
  gtk_widget_class_bind_template_child(widget_class, TlWindow, window_title);
  gtk_widget_class_bind_template_child(widget_class, TlWindow, stack);
  gtk_widget_class_bind_template_child(widget_class, TlWindow, spinner);
  gtk_widget_class_bind_template_child(widget_class, TlWindow, error_page);
  gtk_widget_class_bind_template_child(widget_class, TlWindow, error_devices);
  gtk_widget_class_bind_template_child(widget_class, TlWindow, device_panel);
}

static void tl_window_init(TlWindow *self) {
  self->cancellable = g_cancellable_new();
  gtk_widget_init_template(GTK_WIDGET(self));
}
