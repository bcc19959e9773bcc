/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Internal: filling TlDeviceInfo from a VkPhysicalDevice. */
#pragma once
#include "tl-context.h"

void tl_device_info_read(VkPhysicalDevice pd, guint32 index, TlDeviceInfo *info);
/* Compute queue family Tomolab uses on pd, or -1. */
int tl_device_compute_family(VkPhysicalDevice pd, guint32 *timestamp_bits);
