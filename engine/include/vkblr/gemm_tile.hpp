// vkblr/gemm_tile.hpp — the workgroup tiles of vkblr's two GEMMs and the
// kernels of the f16 one, as callers (gemm(), ops::gemm_f32()) and the GEMM
// policy (vkblr/gemm_policy.hpp) name them. Which tiles a device can run is
// checked by check_gemm_tile (vkblr/gemm.hpp) and ops::check_gemm_f32_tile
// (vkblr/ops/gemm_f32.hpp).
#pragma once

#include <cstdint>
#include <string>

namespace vkblr {

// The kernels of the f16 GEMM (vkblr/gemm.hpp says what each is).
enum class GemmKernel : std::uint32_t { plain = 0, coopmat = 1, coopmat2 = 2 };
const char* to_string(GemmKernel kernel) noexcept;

// A workgroup tile of the f16 GEMM: BM × BN outputs over K steps of BK.
// coopmat: subgroups of WM × WN each; stages = 2: the next K tile is loaded
// while the current one is multiplied; prefetch = K tiles in flight in
// registers (1: the next tile, 2: the one after it too; 0: by mode —
// bitmaps 2, the plane 1, docs/benchmarks.md). coopmat2: one
// workgroup-scope BM × BN accumulator, the workgroup as many subgroups as
// WM × WN blocks fit, stages = the K steps unrolled over whole tiles.
// plain: invocations of WM × WN outputs each.
struct GemmTile {
  std::uint32_t bm = 0, bn = 0, bk = 0, wm = 0, wn = 0, stages = 0;
  GemmKernel kernel = GemmKernel::plain;
  std::uint32_t prefetch = 0;  // coopmat only
  std::string to_string() const;
  bool operator==(const GemmTile&) const = default;
};

namespace ops {

// A workgroup tile of the f32 GEMM: BM × BN outputs over K tiles of BK,
// each invocation TM × TN of them, (BM/TM)·(BN/TN) invocations. tm and tn
// are 4 or 8.
struct GemmF32Tile {
  std::uint32_t bm = 0, bn = 0, bk = 0, tm = 0, tn = 0;
  std::string to_string() const;  // "bm,bn,bk,tm,tn"
  bool operator==(const GemmF32Tile&) const = default;
};

}  // namespace ops
}  // namespace vkblr
