// interface.h — the prelude of every header shared by C++ and GLSL.
//
// A kernel family's push constants are declared once, in glsl/<family>.h,
// with these macros; GLSL sees a push_constant block named `pc`, C++ a plain
// struct in vkblr::shader (sizes static_assert'ed there and checked against
// the SPIR-V at pipeline creation). Members are 32-bit scalars only, so the
// std430 and C++ layouts agree.
#ifndef VKBLR_INTERFACE_H
#define VKBLR_INTERFACE_H

#ifdef __cplusplus
#include <cstdint>
#define VKBLR_SHADER_BEGIN namespace vkblr::shader {
#define VKBLR_SHADER_END }
#define VKBLR_PUSH(Name) struct Name
#define VKBLR_PUSH_END(var) ;
namespace vkblr::shader {
using uint = std::uint32_t;
}
#else
#define VKBLR_SHADER_BEGIN
#define VKBLR_SHADER_END
#define VKBLR_PUSH(Name) layout(push_constant, std430) uniform Name
#define VKBLR_PUSH_END(var) var;
#endif

// Workgroup size of the elementwise kernels (one invocation per element);
// grids wider than 65535 workgroups fold into y (elt_index()).
#define VKBLR_ELT_WG 256

#endif
