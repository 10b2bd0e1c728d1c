// vkblr/ops/blr_lane.hpp — the transients the blr ops pass from op to op
// (vkblr/blr.hpp), in lanes, for a caller that shares them between the
// layers of a model or sizes them itself.
//
// A BlrScratch made without one (BlrScratch(ctx, layer, ntok, lanes)) owns
// a BlrShared sized for its layer; this header is the opt-in way to make one
// BlrShared for every layer of a model (sized for the largest m, n, r and
// ntok) and lend it to each layer's BlrScratch. One layer's work is recorded
// at a time; the Recorder orders the reuses. The lanes change only the
// order of recording: every lane count gives the same bits.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "vkblr/blr.hpp"
#include "vkblr/buffer.hpp"
#include "vkblr/context.hpp"

namespace vkblr::ops {

// One lane of transients: what one path's forward and backward pass from op
// to op. Each path of a layer uses one lane; paths in different lanes are
// recorded side by side (Recorder::parallel: their dispatches between the
// same barriers), so small GEMMs and reductions of two paths fill the device
// together.
struct BlrLane {
  Buffer xh;  // f16 [ntok][max(m, n, r)]: the GEMMs' staged activation
  Buffer t1;  // f32 [ntok][n]: dx' of a path
  Buffer t2;  // f32 [ntok][r]: b of a path
  // Transposed f16 operands of the sign-gradient GEMMs, tokens padded to
  // t32 = ntok rounded up to 32 (zeros): (dy⊙h·gs)ᵀ [m][t32],
  // (x⊙g)ᵀ [n][t32], (a⊙ℓ)ᵀ [r][t32], (b⊙ℓ·gs)ᵀ [r][t32].
  Buffer dyh_t, xg_t, al_t, bl_t;
};

// Transients of the blr ops for up to `ntok` tokens and layers of at most
// (m, n, r). `max_lanes` in 1..64: how many paths run side by side (paths
// 0..lanes-1 together, then the next group). Lanes are allocated as the
// layers need them: one here, more when a BlrScratch is made for a layer of
// more paths (up to max_lanes). Each lane costs its transients here
// (lane_bytes), and the ops' own transients (column-sum partials, split-K
// workspaces) are provided by the Recorder for every path side by side
// (Graph::transient_bytes). max_lanes = 1 records path after path, with the
// least memory. Throws vkblr::Error ("BlrShared", naming the value) for a
// zero dimension or lanes outside 1..64.
struct BlrShared {
  BlrShared(Context& ctx, std::uint32_t ntok, std::uint32_t m, std::uint32_t n, std::uint32_t r,
            std::uint32_t max_lanes = 2);
  // Allocates lanes up to min(max_lanes, paths); BlrScratch calls it.
  void reserve_lanes(Context& ctx, std::size_t paths);
  // Bytes of one lane's buffers.
  std::uint64_t lane_bytes() const noexcept;

  std::uint32_t ntok, m, n, r, max_lanes;
  std::vector<BlrLane> lanes;  // allocated so far: 1 .. max_lanes
};

}  // namespace vkblr::ops
