// guard.h — push constants of finite_guard.comp.
#ifndef VKBLR_GUARD_H
#define VKBLR_GUARD_H
#include "interface.h"
VKBLR_SHADER_BEGIN

VKBLR_PUSH(GuardPush) {
  uint count;      // values checked
  uint flag_word;  // word of FLAG written: 1 when any value is NaN or ±Inf, else 0
} VKBLR_PUSH_END(pc)

VKBLR_SHADER_END
#endif
