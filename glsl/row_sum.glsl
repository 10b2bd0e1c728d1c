// row_sum.glsl — the sum of one float per invocation over a workgroup, in a
// fixed order that depends on nothing but the workgroup size (not on the
// device's subgroup size), the same bits in every invocation:
//   level 1: lane l < 32 adds the values of invocations l, l + 32, l + 64, ...
//            in that order;
//   level 2: every invocation adds the 32 lane sums in order, 0 to 31.
// Two barriers; must be called in uniform control flow by the whole
// workgroup. Successive calls need no more barriers: a call's writes come
// after the previous call's reads of the same words in every invocation's
// program order, on the far side of a barrier.
//
// The includer declares the workgroup size as the specialization constant
// ROW_WG (a multiple of VKBLR_ROW_SUM_LANES, at most VKBLR_RMSNORM_MAX_WG)
// before including this file:
//   layout(constant_id = 0) const uint ROW_WG = 256;
//   layout(local_size_x_id = 0) in;
#ifndef VKBLR_ROW_SUM_GLSL
#define VKBLR_ROW_SUM_GLSL

shared float row_sum_values[VKBLR_RMSNORM_MAX_WG];
shared float row_sum_lanes[VKBLR_ROW_SUM_LANES];

float row_sum(float v) {
  const uint t = gl_LocalInvocationIndex;
  row_sum_values[t] = v;
  barrier();
  if (t < VKBLR_ROW_SUM_LANES) {
    precise float s = row_sum_values[t];
    for (uint k = t + VKBLR_ROW_SUM_LANES; k < ROW_WG; k += VKBLR_ROW_SUM_LANES) s = s + row_sum_values[k];
    row_sum_lanes[t] = s;
  }
  barrier();
  precise float total = row_sum_lanes[0];
  for (uint l = 1; l < VKBLR_ROW_SUM_LANES; ++l) total = total + row_sum_lanes[l];
  return total;
}

#endif
