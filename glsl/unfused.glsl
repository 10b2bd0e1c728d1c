// unfused.glsl — f32 arithmetic with a fixed rounding, for kernels whose
// results must agree bit for bit with another kernel's.
//
// A driver may contract a product and a sum into one fused multiply-add,
// and whether it does depends on the code around them, so two kernels
// writing the same expression can round differently. `precise` (SPIR-V
// NoContraction on every operation that feeds the variable) forbids it:
// each product and each sum below is rounded to f32 on its own, in the order
// written, on every device. Without it a driver may fuse scale_acc's
// accumulation into a multiply-add, or round the staged (x·col)·scale of
// colsum_fused_t differently from colsum_fused and cvt_t (its
// loop-invariant col·scale invites reassociation) — NVIDIA's does both —
// and break bit-exact equivalences the tests check.
#ifndef VKBLR_UNFUSED_GLSL
#define VKBLR_UNFUSED_GLSL

// acc + a·b, the product rounded before the sum.
float add_product(float acc, float a, float b) {
  precise float sum = acc + a * b;
  return sum;
}

// acc + (a·b)·c, each operation rounded.
float add_product3(float acc, float a, float b, float c) {
  precise float sum = acc + a * b * c;
  return sum;
}

// a·b + c·d, both products rounded before the sum.
float sum_of_products(float a, float b, float c, float d) {
  precise float sum = a * b + c * d;
  return sum;
}

// (x·col)·scale, left to right: the value the f16 staging kernels stage
// (cvt.comp and every kernel documented to stage the same value).
float staged(float x, float col, float scale) {
  precise float v = x * col * scale;
  return v;
}

#endif
