#version 460
// Elementwise f32 sums and copies over n elements, A, B, OUT f32 [n]:
//   add       OUT = A + B
//   add_into  OUT = OUT + A       (a residual stream or gradient accumulated in place)
//   copy      OUT = A             (the bandwidth ceiling vkblr-bench measures)
// Each sum is one f32 addition, rounded to nearest: add(a, b) and
// add_into(a) onto b give the same bits, and so does the residual add fused
// into rmsnorm (rmsnorm_fwd.comp).
// @variant add MODE=0
// @variant add_into MODE=1
// @variant copy MODE=2
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "common.glsl"
#include "add.h"

layout(local_size_x = VKBLR_ELT_WG) in;
layout(set = 0, binding = 0) restrict readonly buffer A { float a[]; };
#if MODE == 0
layout(set = 0, binding = 1) restrict readonly buffer B { float b[]; };
#endif
#if MODE == 1
layout(set = 0, binding = 2) restrict buffer Out { float out_[]; };
#else
layout(set = 0, binding = 2) restrict writeonly buffer Out { float out_[]; };
#endif

// Four elements per invocation, a quarter of the vector apart (each pass
// coalesced; four loads in flight per invocation instead of one).
void main() {
  const uint first = elt_index();
  if (first >= pc.quarter) return;
  float v[4];
  [[unroll]] for (uint j = 0; j < 4; ++j) {
    const uint i = first + j * pc.quarter;
    if (i < pc.n) {
#if MODE == 0
      v[j] = a[i] + b[i];
#elif MODE == 1
      v[j] = out_[i] + a[i];
#else
      v[j] = a[i];
#endif
    }
  }
  [[unroll]] for (uint j = 0; j < 4; ++j) {
    const uint i = first + j * pc.quarter;
    if (i < pc.n) out_[i] = v[j];
  }
}
