#version 460
// The GPU refit's S_V block commit (vkblr/ops/refit.hpp): the rows of the
// block that the host accepted take their proposed signs, the others keep
// theirs and their change is taken back. One invocation per element of DG.
//   ACCEPT [rows] (u32, 0 = rejected), PROPOSED [rows][words] (refit_v_rows);
//   BITS [n][words]: rows row0 + jl with ACCEPT[jl] != 0 become PROPOSED[jl];
//   DG [rows][r] and Z [rows][r] (a product of DG's rows): rows with
//   ACCEPT[jl] = 0 become 0.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "refit.h"

layout(local_size_x = VKBLR_ELT_WG) in;
layout(set = 0, binding = 0) readonly buffer Accept { uint accept[]; };
layout(set = 0, binding = 1) readonly buffer Proposed { uint proposed[]; };
layout(set = 0, binding = 2) writeonly buffer Bits { uint bits[]; };
layout(set = 0, binding = 3) writeonly buffer Dg { float dg[]; };
layout(set = 0, binding = 4) writeonly buffer Z { float z[]; };

void main() {
  const uint i = elt_index();
  if (i >= pc.rows * pc.r) return;
  const uint jl = i / pc.r;
  const uint k = i % pc.r;
  if (accept[jl] == 0) {
    dg[i] = 0.0;
    z[i] = 0.0;
  } else if (k % 32 == 0) {
    bits[(pc.row0 + jl) * pc.words + k / 32] = proposed[jl * pc.words + k / 32];
  }
}
