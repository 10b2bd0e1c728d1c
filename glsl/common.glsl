// common.glsl — extensions and helpers every vkblr kernel uses.
#ifndef VKBLR_COMMON_GLSL
#define VKBLR_COMMON_GLSL

#extension GL_EXT_shader_explicit_arithmetic_types : require
#extension GL_EXT_shader_16bit_storage : require

#include "interface.h"

// Index of this invocation in a 1-D grid folded into (x, y) workgroups:
// the C++ side splits more than 65535 workgroups over y.
uint elt_index() {
  return gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * (gl_NumWorkGroups.x * gl_WorkGroupSize.x);
}

#endif
