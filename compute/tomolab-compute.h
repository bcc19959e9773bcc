/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Umbrella header of the tomolab-compute library (no GTK). */
#pragma once
#include "tl-error.h"
#include "tl-context.h"
#include "tl-array.h"
#include "tl-pipeline.h"
#include "tl-profiler.h"
#include "tl-progress.h"
#include "tl-stream.h"
#include "expr/tl-expr.h"
