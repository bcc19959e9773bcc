/* SPDX-License-Identifier: GPL-3.0-or-later */
/* tomolab: the GTK 4 workbench. */
#include "tl-application.h"

int main(int argc, char *argv[]) {
  g_autoptr(TlApplication) app = tl_application_new();
  int status = g_application_run(G_APPLICATION(app), argc, argv);
  return status ? status : tl_application_get_exit_status(app);
}
