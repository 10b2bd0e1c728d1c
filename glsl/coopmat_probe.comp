#version 460
// One cooperative-matrix product with the device's own fragment shape:
// C[FM][FN] = A[FM][FK] · B[FK][FN], f16 operands, f32 accumulator, all
// row-major; one subgroup. A smoke test of the coopmat path (exact on small
// integers).
#extension GL_KHR_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_EXT_shader_explicit_arithmetic_types : require
#extension GL_EXT_shader_16bit_storage : require

layout(constant_id = 0) const uint SUBGROUP = 32;
layout(constant_id = 1) const uint FM = 16;
layout(constant_id = 2) const uint FN = 16;
layout(constant_id = 3) const uint FK = 16;
layout(local_size_x_id = 0) in;

layout(set = 0, binding = 0) readonly buffer A { float16_t a[]; };
layout(set = 0, binding = 1) readonly buffer B { float16_t b[]; };
layout(set = 0, binding = 2) writeonly buffer C { float c[]; };

void main() {
  coopmat<float16_t, gl_ScopeSubgroup, FM, FK, gl_MatrixUseA> ma;
  coopmat<float16_t, gl_ScopeSubgroup, FK, FN, gl_MatrixUseB> mb;
  coopmat<float, gl_ScopeSubgroup, FM, FN, gl_MatrixUseAccumulator> mc =
      coopmat<float, gl_ScopeSubgroup, FM, FN, gl_MatrixUseAccumulator>(0.0);
  coopMatLoad(ma, a, 0, FK, gl_CooperativeMatrixLayoutRowMajor);
  coopMatLoad(mb, b, 0, FN, gl_CooperativeMatrixLayoutRowMajor);
  mc = coopMatMulAdd(ma, mb, mc);
  coopMatStore(mc, c, 0, FN, gl_CooperativeMatrixLayoutRowMajor);
}
