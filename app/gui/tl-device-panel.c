/* SPDX-License-Identifier: GPL-3.0-or-later */
/* TlDevicePanel: structure in ui/tl-device-panel.ui, one value row per entry of kRows. */
#include "tl-device-panel.h"

struct _TlDevicePanel {
  AdwBin parent_instance;

  AdwPreferencesGroup *device_group, *features_group, *limits_group;
  AdwPreferencesGroup *heaps_group, *devices_group;
  GtkFlowBox *groups;
  GtkImage *type_icon;
  GtkLabel *name_label, *summary_label;

  GHashTable *values;     /* key -> GtkLabel (not owned: the rows own them) */
  GPtrArray *dynamic;     /* heap and device rows, removed before each show */
  int marked_index;
};

G_DEFINE_FINAL_TYPE(TlDevicePanel, tl_device_panel, ADW_TYPE_BIN)

typedef enum { G_DEVICE, G_FEATURES, G_LIMITS } TlGroup;

typedef struct {
  TlGroup group;
  const char *key, *title, *subtitle;
} TlRowSpec;

/* Keys are part of the API (tl_device_panel_get_value, tests): keep them stable. */
static const TlRowSpec kRows[] = {
  {G_DEVICE, "type", "Type", NULL},
  {G_DEVICE, "driver", "Driver", NULL},
  {G_DEVICE, "api-version", "Vulkan API", NULL},
  {G_DEVICE, "ids", "Vendor / device ID", NULL},
  {G_DEVICE, "validation", "Validation layer", "Enabled by TOMOLAB_VALIDATE=1"},
  {G_FEATURES, "float32-atomic-add", "Float32 atomic add",
   "Otherwise back-projection falls back to a compare-and-swap loop"},
  {G_FEATURES, "timestamps", "Timestamps", "Per-kernel GPU timing"},
  {G_FEATURES, "buffer-device-address", "Buffer device address", NULL},
  {G_FEATURES, "shader-int64", "64-bit integers in shaders", NULL},
  {G_FEATURES, "shader-float64", "64-bit floats in shaders", NULL},
  {G_LIMITS, "subgroup-size", "Subgroup size", NULL},
  {G_LIMITS, "max-storage-buffer-range", "Max storage buffer range",
   "Largest array a kernel can bind at once"},
  {G_LIMITS, "max-compute-work-group-count", "Max work group count", NULL},
  {G_LIMITS, "max-compute-work-group-invocations", "Max work group invocations", NULL},
  {G_LIMITS, "max-compute-shared-memory", "Max shared memory per work group", NULL},
  {G_LIMITS, "max-push-constants-size", "Max push constants", NULL},
  {G_LIMITS, "max-memory-allocation-size", "Max memory allocation", NULL},
  {G_LIMITS, "max-buffer-size", "Max buffer size", NULL},
};

char *tl_format_api_version(guint32 v) {
  return g_strdup_printf("%u.%u.%u", VK_API_VERSION_MAJOR(v), VK_API_VERSION_MINOR(v),
                         VK_API_VERSION_PATCH(v));
}

char *tl_format_bytes(guint64 bytes) {
  if (bytes < 1024)
    return g_strdup_printf("%" G_GUINT64_FORMAT " bytes", bytes);
  g_autofree char *human = g_format_size_full(bytes, G_FORMAT_SIZE_IEC_UNITS);
  return g_strdup_printf("%s (%" G_GUINT64_FORMAT " bytes)", human, bytes);
}

static const char *yes_no(gboolean b) { return b ? "Yes" : "No"; }

static const char *type_icon_name(VkPhysicalDeviceType type) {
  return type == VK_PHYSICAL_DEVICE_TYPE_CPU ? "computer-symbolic" : "video-display-symbolic";
}

/* A value label at the end of a row. It does not wrap: a wrapping label in a row
 * suffix is squeezed to one character per line. Values are short anyway. */
static GtkWidget *value_label_new(void) {
  GtkWidget *label = gtk_label_new(NULL);
  gtk_label_set_xalign(GTK_LABEL(label), 1.0f);
  gtk_widget_add_css_class(label, "tl-value");
  return label;
}

static GtkWidget *row_new(const char *title, const char *subtitle) {
  GtkWidget *row = adw_action_row_new();
  /* Device and driver names may contain '&' or '<': never parse them as markup. */
  adw_preferences_row_set_use_markup(ADW_PREFERENCES_ROW(row), FALSE);
  adw_preferences_row_set_title(ADW_PREFERENCES_ROW(row), title);
  if (subtitle)
    adw_action_row_set_subtitle(ADW_ACTION_ROW(row), subtitle);
  return row;
}

static AdwPreferencesGroup *group_of(TlDevicePanel *self, TlGroup g) {
  switch (g) {
  case G_DEVICE: return self->device_group;
  case G_FEATURES: return self->features_group;
  default: return self->limits_group;
  }
}

static void set_value(TlDevicePanel *self, const char *key, const char *fmt, ...) G_GNUC_PRINTF(3, 4);
static void set_value(TlDevicePanel *self, const char *key, const char *fmt, ...) {
  GtkLabel *label = g_hash_table_lookup(self->values, key);
  g_return_if_fail(label != NULL);
  va_list ap;
  va_start(ap, fmt);
  g_autofree char *text = g_strdup_vprintf(fmt, ap);
  va_end(ap);
  gtk_label_set_text(label, text);
}

static void set_bytes(TlDevicePanel *self, const char *key, guint64 bytes) {
  g_autofree char *text = tl_format_bytes(bytes);
  set_value(self, key, "%s", text);
}

static void add_dynamic(TlDevicePanel *self, AdwPreferencesGroup *group, GtkWidget *row) {
  adw_preferences_group_add(group, row);
  g_ptr_array_add(self->dynamic, row);
}

GtkWidget *tl_device_row_new(const TlDeviceInfo *d, gboolean chosen) {
  g_autofree char *title = g_strdup_printf("%u · %s", d->index, d->name);
  g_autofree char *api = tl_format_api_version(d->api_version);
  g_autofree char *subtitle =
      d->usable ? g_strdup_printf("%s · %s · Vulkan %s", tl_device_type_name(d->type),
                                  d->driver_name[0] ? d->driver_name : "unknown driver", api)
                : g_strdup_printf("Unusable: %s", d->unusable_reason);
  GtkWidget *row = row_new(title, subtitle);
  adw_action_row_add_prefix(ADW_ACTION_ROW(row), gtk_image_new_from_icon_name(type_icon_name(d->type)));
  if (chosen) {
    GtkWidget *mark = gtk_image_new_from_icon_name("object-select-symbolic");
    gtk_widget_set_tooltip_text(mark, "In use");
    gtk_widget_add_css_class(mark, "accent");
    adw_action_row_add_suffix(ADW_ACTION_ROW(row), mark);
    gtk_widget_add_css_class(row, "tl-chosen");
  }
  if (!d->usable)
    gtk_widget_add_css_class(row, "dim-label");
  return row;
}

void tl_device_panel_show(TlDevicePanel *self, const TlDeviceInfo *d, gboolean validation,
                          guint validation_messages, GArray *devices) {
  g_return_if_fail(TL_IS_DEVICE_PANEL(self) && d != NULL);

  for (guint i = 0; i < self->dynamic->len; i++) {
    GtkWidget *row = self->dynamic->pdata[i];
    adw_preferences_group_remove(ADW_PREFERENCES_GROUP(gtk_widget_get_ancestor(row, ADW_TYPE_PREFERENCES_GROUP)), row);
  }
  g_ptr_array_set_size(self->dynamic, 0);

  g_autofree char *api = tl_format_api_version(d->api_version);
  const char *driver = d->driver_name[0] ? d->driver_name : "unknown driver";
  gtk_image_set_from_icon_name(self->type_icon, type_icon_name(d->type));
  gtk_label_set_text(self->name_label, d->name);
  g_autofree char *summary = g_strdup_printf("%s · %s · Vulkan %s", tl_device_type_name(d->type), driver, api);
  gtk_label_set_text(self->summary_label, summary);

  set_value(self, "type", "%s", tl_device_type_name(d->type));
  set_value(self, "driver", "%s%s%s", driver, d->driver_info[0] ? " " : "", d->driver_info);
  set_value(self, "api-version", "%s", api);
  set_value(self, "ids", "0x%04x / 0x%04x", d->vendor_id, d->device_id);
  if (validation)
    set_value(self, "validation", "On · %u message%s", validation_messages, validation_messages == 1 ? "" : "s");
  else
    set_value(self, "validation", "Off");

  set_value(self, "float32-atomic-add", "%s", yes_no(d->float32_atomic_add));
  if (d->timestamps)
    set_value(self, "timestamps", "Yes · period %g ns · %u valid bits", d->timestamp_period_ns,
              d->timestamp_valid_bits);
  else
    set_value(self, "timestamps", "No");
  set_value(self, "buffer-device-address", "%s", yes_no(d->buffer_device_address));
  set_value(self, "shader-int64", "%s", yes_no(d->shader_int64));
  set_value(self, "shader-float64", "%s", yes_no(d->shader_float64));

  set_value(self, "subgroup-size", "%u", d->subgroup_size);
  set_bytes(self, "max-storage-buffer-range", d->max_storage_buffer_range);
  set_value(self, "max-compute-work-group-count", "%u × %u × %u", d->max_compute_work_group_count[0],
            d->max_compute_work_group_count[1], d->max_compute_work_group_count[2]);
  set_value(self, "max-compute-work-group-invocations", "%u", d->max_compute_work_group_invocations);
  set_bytes(self, "max-compute-shared-memory", d->max_compute_shared_memory);
  set_bytes(self, "max-push-constants-size", d->max_push_constants_size);
  set_bytes(self, "max-memory-allocation-size", d->max_memory_allocation_size);
  if (d->max_buffer_size)
    set_bytes(self, "max-buffer-size", d->max_buffer_size);
  else
    set_value(self, "max-buffer-size", "Unknown (no maintenance4)");

  for (guint i = 0; i < MIN(d->n_heaps, TL_MAX_HEAPS); i++) {
    g_autofree char *title = g_strdup_printf("Heap %u", i);
    GtkWidget *row = row_new(title, d->heaps[i].device_local ? "Device-local" : "Host-visible only");
    GtkWidget *label = value_label_new();
    g_autofree char *size = tl_format_bytes(d->heaps[i].size);
    gtk_label_set_text(GTK_LABEL(label), size);
    adw_action_row_add_suffix(ADW_ACTION_ROW(row), label);
    add_dynamic(self, self->heaps_group, row);
  }

  self->marked_index = -1;
  for (guint i = 0; devices && i < devices->len; i++) {
    const TlDeviceInfo *other = &g_array_index(devices, TlDeviceInfo, i);
    gboolean chosen = other->index == d->index;
    if (chosen)
      self->marked_index = (int)other->index;
    add_dynamic(self, self->devices_group, tl_device_row_new(other, chosen));
  }
}

const char *tl_device_panel_get_value(TlDevicePanel *self, const char *key) {
  g_return_val_if_fail(TL_IS_DEVICE_PANEL(self), NULL);
  GtkLabel *label = g_hash_table_lookup(self->values, key);
  return label ? gtk_label_get_text(label) : NULL;
}

int tl_device_panel_get_marked_index(TlDevicePanel *self) {
  g_return_val_if_fail(TL_IS_DEVICE_PANEL(self), -1);
  return self->marked_index;
}

static void tl_device_panel_dispose(GObject *object) {
  TlDevicePanel *self = TL_DEVICE_PANEL(object);
  gtk_widget_dispose_template(GTK_WIDGET(self), TL_TYPE_DEVICE_PANEL);
  G_OBJECT_CLASS(tl_device_panel_parent_class)->dispose(object);
}

static void tl_device_panel_finalize(GObject *object) {
  TlDevicePanel *self = TL_DEVICE_PANEL(object);
  g_hash_table_unref(self->values);
  g_ptr_array_unref(self->dynamic);
  G_OBJECT_CLASS(tl_device_panel_parent_class)->finalize(object);
}

static void tl_device_panel_class_init(TlDevicePanelClass *klass) {
  GObjectClass *object_class = G_OBJECT_CLASS(klass);
  GtkWidgetClass *widget_class = GTK_WIDGET_CLASS(klass);
  object_class->dispose = tl_device_panel_dispose;
  object_class->finalize = tl_device_panel_finalize;

  gtk_widget_class_set_template_from_resource(widget_class, "/org/tomolab/Tomolab/ui/tl-device-panel.ui");
  gtk_widget_class_bind_template_child(widget_class, TlDevicePanel, device_group);
  gtk_widget_class_bind_template_child(widget_class, TlDevicePanel, features_group);
  gtk_widget_class_bind_template_child(widget_class, TlDevicePanel, limits_group);
  gtk_widget_class_bind_template_child(widget_class, TlDevicePanel, heaps_group);
  gtk_widget_class_bind_template_child(widget_class, TlDevicePanel, devices_group);
  gtk_widget_class_bind_template_child(widget_class, TlDevicePanel, groups);
  gtk_widget_class_bind_template_child(widget_class, TlDevicePanel, type_icon);
  gtk_widget_class_bind_template_child(widget_class, TlDevicePanel, name_label);
  gtk_widget_class_bind_template_child(widget_class, TlDevicePanel, summary_label);
}

static void tl_device_panel_init(TlDevicePanel *self) {
  gtk_widget_init_template(GTK_WIDGET(self));
  self->values = g_hash_table_new(g_str_hash, g_str_equal);
  self->dynamic = g_ptr_array_new();
  self->marked_index = -1;

  /* The flow box only lays the groups out in columns: its children are not items to
   * focus or select, the rows inside them are. */
  for (GtkWidget *c = gtk_widget_get_first_child(GTK_WIDGET(self->groups)); c; c = gtk_widget_get_next_sibling(c))
    gtk_widget_set_focusable(c, FALSE);

  g_hash_table_insert(self->values, (gpointer)"name", self->name_label);
  for (gsize i = 0; i < G_N_ELEMENTS(kRows); i++) {
    GtkWidget *row = row_new(kRows[i].title, kRows[i].subtitle);
    GtkWidget *label = value_label_new();
    adw_action_row_add_suffix(ADW_ACTION_ROW(row), label);
    adw_preferences_group_add(group_of(self, kRows[i].group), row);
    g_hash_table_insert(self->values, (gpointer)kRows[i].key, label);
  }
}
