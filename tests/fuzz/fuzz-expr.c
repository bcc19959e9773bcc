/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Array expressions: what parses prints to text that parses back and prints the same. */
#include "tl-fuzz.h"
#include "tl-expr-ast.h"

int LLVMFuzzerTestOneInput(const guint8 *data, size_t size) {
  if (size < 1 || size > 1 << 16) return 0;
  TlParseMode mode = data[0] & 1 ? TL_PARSE_REDUCE : TL_PARSE_ASSIGN;
  g_autofree char *text = tl_fuzz_text(data + 1, size - 1);
  g_autoptr(GError) e = NULL;
  g_autoptr(TlExprParsed) p = tl_expr_parse(text, mode, &e);
  if (!p) {
    tl_fuzz_check_error(e);
    return 0;
  }
  g_autofree char *printed = tl_expr_to_string(p);
  g_autoptr(TlExprParsed) again = tl_expr_parse(printed, mode, &e);
  TL_FUZZ_CHECK(again, "'%s' does not parse back: %s", printed, e ? e->message : "");
  g_autofree char *printed2 = tl_expr_to_string(again);
  TL_FUZZ_CHECK(strcmp(printed, printed2) == 0, "'%s' vs '%s'", printed, printed2);
  return 0;
}
