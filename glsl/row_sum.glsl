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
// The includer declares the invocations of a row, ROW_WG (a multiple of
// VKBLR_ROW_SUM_LANES), and the rows side by side in a workgroup, ROW_SLOTS
// (ROW_SLOTS · ROW_WG at most VKBLR_RMSNORM_MAX_WG), as constants or
// specialization constants before including this file, e.g.
//   layout(constant_id = 0) const uint ROW_WG = 256;
//   const uint ROW_SLOTS = 1;
//   layout(local_size_x_id = 0) in;
#ifndef VKBLR_ROW_SUM_GLSL
#define VKBLR_ROW_SUM_GLSL

shared float row_sum_values[ROW_SLOTS * ROW_WG];
shared float row_sum_lanes[ROW_SLOTS * VKBLR_ROW_SUM_LANES];

// The sum over the ROW_WG invocations t = 0 .. ROW_WG − 1 of one slot of a
// workgroup that holds several rows side by side (slot s: invocations
// s·ROW_WG + t); every slot calls it at once, each with its own values.
float row_sum_of_slot(float v, uint slot, uint t) {
  const uint base = slot * ROW_WG;
  row_sum_values[base + t] = v;
  barrier();
  if (t < VKBLR_ROW_SUM_LANES) {
    precise float s = row_sum_values[base + t];
    for (uint k = t + VKBLR_ROW_SUM_LANES; k < ROW_WG; k += VKBLR_ROW_SUM_LANES) s = s + row_sum_values[base + k];
    row_sum_lanes[slot * VKBLR_ROW_SUM_LANES + t] = s;
  }
  barrier();
  const uint lanes = slot * VKBLR_ROW_SUM_LANES;
  precise float total = row_sum_lanes[lanes];
  for (uint l = 1; l < VKBLR_ROW_SUM_LANES; ++l) total = total + row_sum_lanes[lanes + l];
  return total;
}

// A workgroup of one row: the sum over all its invocations.
float row_sum(float v) { return row_sum_of_slot(v, 0, gl_LocalInvocationIndex); }

#endif
