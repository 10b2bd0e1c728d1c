// device_refit_impl.hpp — what a DeviceRefit holds (device_refit.hpp), for
// the sources of its steps only.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "vkblr-fit/refit/device_cg.hpp"
#include "vkblr-fit/refit/device_refit.hpp"

namespace vkblr::fit {

// One path: bitmaps and scales (the device's are the truth; ℓ also on the
// host, where its least squares is solved), its factors and their
// products with C and W.
struct DeviceRefit::Path {
  Buffer bits_u, bits_v;  // u32 [m][r/32], [n][r/32]
  Buffer h, l, g;         // f32 [m], [r], [n]
  std::vector<float> l_host;
  DeviceMatrix a;    // diag(h)·S_U·diag(ℓ) [m][r], always current
  DeviceMatrix sg;   // diag(g)·S_V [n][r], always current
  DeviceMatrix cs;   // C·Sg [n][r]
  DeviceMatrix wcs;  // W·CS [m][r]
  bool cs_current = false, wcs_current = false;
  // The ℓ step's message to the g step: −ℓ_new/ℓ_old per column (the
  // factor that turns the S_V step's −C·Rᵀ·A into C·Rᵀ·A with the new ℓ),
  // or recompute_ncra when an old ℓ_k was 0.
  std::vector<float> g_rhs_scale;
  bool recompute_ncra = false;
  // save() / restore(): copies of device_state() and of ℓ
  std::vector<Buffer> saved;
  std::vector<float> saved_l;

  // What the device holds of the path itself (ℓ is the host's).
  std::array<const Buffer*, 4> device_state() const { return {&bits_u, &bits_v, &h, &g}; }
};

// Scratch shared by the steps of every path.
struct DeviceRefit::Work {
  Work(Context& ctx, const LayerShape& shape, const DeviceRefitOptions& options);

  std::uint32_t block_rows = 0;    // min(options.block_rows, n)
  std::array<DeviceMatrix, 3> mr;  // [m][r]
  std::array<DeviceMatrix, 2> nr;  // [n][r]
  std::array<DeviceMatrix, 2> rr;  // [r][r]
  DeviceMatrix rr_small;           // [r][r]: products with the other paths' factors
  DeviceMatrix ncra;               // −C·Rᵀ·A [n][r] of the S_V step, kept for the g step
  std::int64_t ncra_path = -1;     // the path whose S_V step made ncra (-1: none, or consumed)
  DeviceMatrix gram;               // [n][n]: the g step's (FᵀF) ⊙ C
  Buffer c_diag;                   // f32 [n]
  std::vector<float> c_blocks;     // C's diagonal blocks of block_rows, block k packed at k·b·b
  // S_V blocks
  DeviceMatrix e;         // [b][r]: the block's half-gradient rows, without g
  DeviceMatrix dg, z;     // [b][r]: a round's g·D, and g·D·QA
  DeviceMatrix dg_total;  // [b][r]: the block's committed g·D, all rounds
  Buffer ones;            // f32 [r] of 1
  DeviceMatrix cross;     // [rows][rows] D·QA·Dᵀ, then the rows' own ΔL (b·b + b floats)
  Buffer proposed, dl;
  Buffer accept;  // host-visible u32 [b]
  // scale steps
  Buffer col_mask, col_scale, rhs_l;
  DeviceMatrix rhs_g, x;  // [n][1]
  CgWork cg;
  // train_error(): colsum_prod slots of r floats, aligned for views
  Buffer loss_sums;
  std::uint64_t loss_slot_bytes = 0;
};

}  // namespace vkblr::fit
