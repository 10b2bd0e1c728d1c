// common.glsl — extensions and helpers every vkblr kernel uses.
#ifndef VKBLR_COMMON_GLSL
#define VKBLR_COMMON_GLSL

#extension GL_EXT_shader_explicit_arithmetic_types : require
#extension GL_EXT_shader_16bit_storage : require

#include "interface.h"

// Index of this invocation in a 1-D grid of VKBLR_ELT_WG-wide workgroups
// folded into (x, y): the C++ side (detail::elt_grid) splits more than 65535
// workgroups over y. The row width is the constant, not gl_WorkGroupSize:
// this file is included before a shader declares its local size, and
// glslang evaluates gl_WorkGroupSize here as (1, 1, 1).
uint elt_index() {
  return gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * (gl_NumWorkGroups.x * VKBLR_ELT_WG);
}

#endif
