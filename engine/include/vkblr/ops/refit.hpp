// vkblr/ops/refit.hpp — the kernels of vkblr-fit's GPU refit: exact sign
// coordinate descent on the rows of a blr path's sign matrices under the
// calibration covariance C, and the vector work of its scale steps
// (docs/sign-optimizer.md, "GPU refit"; glsl/refit_*.comp). The dense
// algebra around them (Q, P, the half-gradient, the Grams) is f32 GEMMs
// (ops/gemm_f32.hpp), recorded by the caller.
//
// Sign bitmaps are u32 [rows][r/32], r a multiple of 32: bit k % 32 of word
// k / 32 of a row is the sign of rank k, 1 = +1. Matrices are f32,
// row-major, packed. Bad shapes, buffers too small, outputs that are inputs
// and ranks whose rows do not fit the device's shared memory throw
// vkblr::Error naming the op and the value. Every reduction is fixed-order
// and nothing is atomic: the same inputs give the same bits.
#pragma once

#include <cstdint>

#include "vkblr/buffer.hpp"
#include "vkblr/context.hpp"
#include "vkblr/dispatch.hpp"

namespace vkblr::ops {

// The S_U step (glsl/refit_u_rows.comp), one workgroup per row i < rows:
// coordinate descent on row i's signs s against p f32 [rows][r] (= R·C·Bᵀ),
// q f32 [r][r] (= B·C·Bᵀ, symmetric) and qs f32 [rows][r] (= S_U·Q for the
// signs in `bits`): for k ascending a sign flips when
// h_i²·(Q_kk − s_k·qs_k) + h_i·s_k·P_ik < 0 (qs kept current), passes until
// none flips (at most 8); then h_i = (s·P_i)/(s·qs) when s·qs > 0, a
// negative h_i flipping the row's signs instead. bits u32 [rows][r/32] and
// h f32 [rows] are read and rewritten. Shared memory: 16·r + 512 bytes.
Dispatch refit_u_rows(Context& ctx, const Buffer& p, const Buffer& q, const Buffer& qs, const Buffer& bits,
                      const Buffer& h, std::uint32_t rows, std::uint32_t r);

// Rows [row0, row0 + rows) of an S_V bitmap of n rows.
struct RefitBlock {
  std::uint32_t n = 0, row0 = 0, rows = 0;
};

// The S_V step on one block (glsl/refit_v_rows.comp), one workgroup per row
// j = row0 + jl: row j's exact coordinate descent against the block's
// half-gradient e f32 [rows][r] (= (C·Fᵀ)[j], without its factor g_j),
// qa f32 [r][r] (= AᵀA, symmetric), c_diag f32 [n] (C's diagonal), g f32 [n]
// and its signs in bits u32 [n][r/32] (read only): with e_j = g_j·e[jl] and
// K_jj = g_j²·C_jj a sign flips when −s_k·e_jk + QA_kk·K_jj < 0 (e_j kept
// current), passes until none flips (at most 8). Writes proposed u32
// [rows][r/32] (the row's new signs), dg f32 [rows][r] = g_j·(s_new − s_old)
// and dl f32 [rows], the row's exact loss change alone (4 × the sum of its
// flips' terms). Shared memory: 12·r bytes.
Dispatch refit_v_rows(Context& ctx, const Buffer& e, const Buffer& qa, const Buffer& c_diag, const Buffer& g,
                      const Buffer& bits, const RefitBlock& block, std::uint32_t r, const Buffer& proposed,
                      const Buffer& dg, const Buffer& dl);

// The block's commit (glsl/refit_v_commit.comp): rows jl with accept[jl] != 0
// (u32 [rows]) copy proposed[jl] into bits row row0 + jl; the others zero
// their rows of dg and z f32 [rows][r] (so dg holds only the accepted
// changes, and z, a product dg·X, only theirs).
Dispatch refit_v_commit(Context& ctx, const Buffer& accept, const Buffer& proposed, const Buffer& bits,
                        const Buffer& dg, const Buffer& z, const RefitBlock& block, std::uint32_t r);

// bits u32 [rows][r/32]: every row's word w ^= mask[w] (mask u32 [r/32]; the
// columns to flip). glsl/refit_signs.comp.
Dispatch refit_flip_columns(Context& ctx, const Buffer& mask, const Buffer& bits, std::uint32_t rows, std::uint32_t r);

// New row scales from signed values x f32 [rows]: where x_i is finite and
// not 0, scale[i] = |x_i| and a negative x_i flips row i of bits u32
// [rows][r/32]; elsewhere scale and bits stay. glsl/refit_signs.comp.
Dispatch refit_row_scales(Context& ctx, const Buffer& x, const Buffer& bits, const Buffer& scale, std::uint32_t rows,
                          std::uint32_t r);

// out f32 [rows] = Σ_k s_ik·a[i][k]·col[k] for the signs s of bits u32
// [rows][r/32], a f32 [rows][r], col f32 [r] (glsl/refit_sign_dot.comp).
Dispatch refit_sign_dot(Context& ctx, const Buffer& bits, const Buffer& a, const Buffer& col, const Buffer& out,
                        std::uint32_t rows, std::uint32_t r);

// a f32 [count] = a ⊙ b (glsl/refit_hadamard.comp); count < 2^32.
Dispatch refit_hadamard(Context& ctx, const Buffer& a, const Buffer& b, std::uint64_t count);

// out f32 [n] = a·x for a f32 [n][n], x f32 [n] (glsl/refit_matvec.comp):
// one workgroup per row, each sum fixed-order (strided partial sums in
// index order, then a fixed tree). The CG's products: a GEMM of one
// column would compute a whole tile of columns to use one.
Dispatch refit_matvec(Context& ctx, const Buffer& a, const Buffer& x, const Buffer& out, std::uint32_t n);

// Jacobi-preconditioned conjugate gradients for gram·x = rhs, gram f32
// [n][n] symmetric positive semi-definite (glsl/refit_cg.comp). One
// workgroup; the caller records q = gram·x (refit_matvec) before
// refit_cg_begin and q = gram·p before every refit_cg_step:
//   begin  res = rhs − q, dinv = 1/diag(gram) (0 where the diagonal is <= 0),
//          p = dinv ⊙ res, rz = res·p
//   step   α = rz/(p·q); x += α·p; res −= α·q; rz' = res·(dinv ⊙ res);
//          p = dinv ⊙ res + (rz'/rz)·p; rz = rz'. A step whose p·q or rz
//          is not > 0 or whose α is not finite changes nothing.
// x, p, q f32 [n]; state f32 [refit_cg_state_floats(n)] (res, dinv, rz) is
// the solver's, kept between the dispatches.
std::uint64_t refit_cg_state_floats(std::uint32_t n);
Dispatch refit_cg_begin(Context& ctx, const Buffer& gram, const Buffer& rhs, const Buffer& x, const Buffer& p,
                        const Buffer& q, const Buffer& state, std::uint32_t n);
Dispatch refit_cg_step(Context& ctx, const Buffer& gram, const Buffer& rhs, const Buffer& x, const Buffer& p,
                       const Buffer& q, const Buffer& state, std::uint32_t n);

}  // namespace vkblr::ops
