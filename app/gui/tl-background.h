/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Background work at a lower CPU priority. On a machine with few cores a software
 * Vulkan driver (lavapipe) and the simulator keep every core busy; the main thread must
 * still get one in time for each frame. Threads inherit the nice value of the thread
 * that creates them, so the driver's queue thread (made with the device) and the
 * simulator's workers end up niced as well. */
#pragma once
#include <glib.h>

G_BEGIN_DECLS

/* Lowers the calling thread's priority (Linux: nice is per thread). Best effort. */
void tl_background_lower_priority(void);
/* Runs func(data) on a new niced thread and waits for it (call from a worker thread:
 * GTask's shared pool threads are left as they are). */
gpointer tl_background_run(GThreadFunc func, gpointer data);

G_END_DECLS
