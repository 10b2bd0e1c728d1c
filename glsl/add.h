// add.h — push constants of the elementwise add and copy (add.comp).
#ifndef VKBLR_ADD_H
#define VKBLR_ADD_H
#include "interface.h"
VKBLR_SHADER_BEGIN

VKBLR_PUSH(AddPush) {
  uint n;        // elements
  uint quarter;  // ceil(n / 4): invocation i handles i, i + quarter, i + 2·quarter, i + 3·quarter
} VKBLR_PUSH_END(pc)

VKBLR_SHADER_END
#endif
