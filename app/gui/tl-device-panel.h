/* SPDX-License-Identifier: GPL-3.0-or-later */
/* TlDevicePanel: the chosen Vulkan device, its features and limits, and every device
 * found, as read from TlDeviceInfo. Pure view: it never touches Vulkan itself. */
#pragma once
#include <adwaita.h>
#include "tl-context.h"

G_BEGIN_DECLS

#define TL_TYPE_DEVICE_PANEL (tl_device_panel_get_type())
G_DECLARE_FINAL_TYPE(TlDevicePanel, tl_device_panel, TL, DEVICE_PANEL, AdwBin)

/* Shows `info` (the chosen device) and the rows of `devices` (TlDeviceInfo, may be
 * NULL), marking the one whose index equals info->index. */
void tl_device_panel_show(TlDevicePanel *self, const TlDeviceInfo *info,
                          gboolean validation, guint validation_messages,
                          GArray *devices);

/* The text displayed for `key` ("name", "type", "driver", "api-version",
 * "max-storage-buffer-range", ...), or NULL for an unknown key. */
const char *tl_device_panel_get_value(TlDevicePanel *self, const char *key);
/* TlDeviceInfo.index of the device marked as chosen in the list, or -1. */
int tl_device_panel_get_marked_index(TlDevicePanel *self);

/* One row of a device list (also used by the window's error page). */
GtkWidget *tl_device_row_new(const TlDeviceInfo *d, gboolean chosen);

/* "1.3.239" */
char *tl_format_api_version(guint32 version);
/* "2.0 GiB (2147483648 bytes)", or "128 bytes" below 1 KiB */
char *tl_format_bytes(guint64 bytes);

G_END_DECLS
