// device_refit.hpp — a blr layer being refitted on the device: its paths'
// bitmaps and scales, their f32 factors, the workspace of the refit's steps
// and the steps themselves (docs/sign-optimizer.md, "GPU refit";
// gpu_refit.hpp runs the sweeps).
//
// Per path p, with the other paths fixed (residual R = W − Σ_{q≠p} Ŵ_q,
// never formed: products with R are products with W minus the low-rank
// terms A_q·Sg_qᵀ):
//   A_p = diag(h)·S_U·diag(ℓ) [m][r], Sg_p = diag(g)·S_V [n][r] (Ŵ_p = A_p·Sg_pᵀ),
//   CS_p = C·Sg_p [n][r], WCS_p = W·CS_p [m][r].
// A and Sg are kept current after every step; CS and WCS are recomputed
// when a step needs them and they are stale. Every product is an f32 GEMM
// (ops::gemm_f32), every reduction fixed-order: the same inputs give the
// same bits. The r×r least squares of ℓ runs on the host (LAPACK, f64).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "vkblr-fit/init/device_matrix.hpp"
#include "vkblr/io/layer_shape.hpp"
#include "vkblr-fit/io_names.hpp"
#include "vkblr/blr.hpp"
#include "vkblr/buffer.hpp"
#include "vkblr/context.hpp"
#include "vkblr/recorder.hpp"

namespace vkblr::fit {

struct DeviceRefitOptions {
  // Rows of S_V whose coordinate descents run side by side against one
  // half-gradient (then the host keeps the subset that lowers the loss,
  // block_choice.hpp). 1: the host refit's sequential order.
  std::uint32_t block_rows = 256;
  // Rounds over a block: each runs the block's rows again against the
  // half-gradient the previous round's commit left (rows rejected or
  // changed get another chance in the sweep); a round that commits
  // nothing ends the block.
  std::uint32_t block_rounds = 4;
  // Conjugate-gradient iterations of the g step (warm-started from g).
  std::uint32_t cg_iterations = 32;
};

// What one S_V step did.
struct VStepStats {
  std::uint64_t rows_changed = 0;   // rows committed with a change
  std::uint64_t rows_rejected = 0;  // rows whose change the block choice took back
  double predicted_delta = 0;       // Σ of the blocks' ΔL(S) (the loss per token, f64 sums of f32 terms)
};

class DeviceRefit {
 public:
  // w f32 [m][n], c f32 [n][n] = XᵀX/T (symmetric), w_c_w = tr(W·C·Wᵀ) > 0
  // (the reference of the relative error); paths as shape says. Throws
  // vkblr::Error for shapes or paths that do not fit (naming "GPU refit").
  // w and c must outlive the refit.
  DeviceRefit(Context& ctx, const DeviceMatrix& w, const DeviceMatrix& c, double w_c_w, const LayerShape& shape,
              const std::vector<BlrPathInit>& paths, const DeviceRefitOptions& options = {});
  ~DeviceRefit();
  DeviceRefit(const DeviceRefit&) = delete;
  DeviceRefit& operator=(const DeviceRefit&) = delete;

  // √(L / tr(WCWᵀ)) with the exact loss per token through C,
  // L = tr(WCWᵀ) − 2·Σ_p tr(A_pᵀ·W·C·Sg_p) + Σ_{p,q} tr((A_pᵀA_q)·(Sg_qᵀ·C·Sg_p)),
  // f32 GEMMs, the final sums in f64.
  double train_error();

  // The steps of a sweep on path p, in this order (docs/sign-optimizer.md).
  void refit_u(std::uint32_t p);
  VStepStats refit_v(std::uint32_t p);
  void refit_l(std::uint32_t p);
  void refit_g(std::uint32_t p);

  // Keeps / brings back a copy of every path (bitmaps and scales).
  void save();
  void restore();

  // The paths as they are now (waits for the device).
  std::vector<BlrPathInit> paths() const;

 private:
  struct Path;
  struct Work;

  // C's diagonal blocks of block_rows (host) and its diagonal (device).
  void gather_c_blocks();
  // CS_p and WCS_p, recomputed when stale.
  void ensure_products(std::uint32_t p);
  // out = R_p·in (in [n][k], out [m][k]) or, transposed, R_pᵀ·in (in [m][k],
  // out [n][k]); w_times_in: W·in (or Wᵀ·in) when already known.
  void record_residual_product(Recorder& rec, std::uint32_t p, bool transpose, const DeviceMatrix& in,
                               const DeviceMatrix& out, const DeviceMatrix* w_times_in = nullptr);
  // A_p and Sg_p from the bitmaps and scales.
  void record_factors(Recorder& rec, std::uint32_t p);
  // One round over the S_V rows [row0, row0 + rows) of path p: records the
  // block's descents into `rec` (after what it holds), runs it, chooses
  // the rows to keep and records their commit into `rec` (run by the next
  // call or the caller). Returns the rows accepted.
  std::uint32_t run_v_block(Recorder& rec, std::uint32_t p, std::uint32_t row0, std::uint32_t rows, VStepStats& stats);

  Context& ctx_;
  const DeviceMatrix& w_;
  const DeviceMatrix& c_;
  double w_c_w_;
  LayerShape shape_;
  DeviceRefitOptions options_;
  std::vector<Path> paths_;
  std::unique_ptr<Work> work_;
};

}  // namespace vkblr::fit
