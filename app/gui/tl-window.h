/* TlWindow: the main window. Today it opens a Vulkan device on a worker thread and
 * shows what it found; the workbench (slice viewers, runs) will grow inside it. */
#pragma once
#include <adwaita.h>
#include "tl-context.h"
#include "tl-device-panel.h"

G_BEGIN_DECLS

typedef enum {
  TL_WINDOW_LOADING,  /* the worker thread is still creating the TlContext */
  TL_WINDOW_READY,    /* a context is open and its info is shown */
  TL_WINDOW_FAILED,   /* no context: the error page is shown */
} TlWindowState;

#define TL_TYPE_WINDOW_STATE (tl_window_state_get_type())
GType tl_window_state_get_type(void);

#define TL_TYPE_WINDOW (tl_window_get_type())
G_DECLARE_FINAL_TYPE(TlWindow, tl_window, TL, WINDOW, AdwApplicationWindow)

/* `app` may be NULL (tests); `selector` as for tl_context_new (NULL = default). */
TlWindow *tl_window_new(GtkApplication *app, const char *selector);

TlWindowState tl_window_get_state(TlWindow *self);
/* TRUE once loading is over and the page transition has finished (safe to screenshot). */
gboolean tl_window_is_settled(TlWindow *self);
/* The open context (READY) or NULL; owned by the window. */
TlContext *tl_window_get_context(TlWindow *self);
/* Why the context could not be created (FAILED) or NULL. */
const GError *tl_window_get_error(TlWindow *self);
/* Text shown on the error page below the title (message and hint). */
const char *tl_window_get_error_text(TlWindow *self);
TlDevicePanel *tl_window_get_device_panel(TlWindow *self);

G_END_DECLS
