// vkblr/blr.hpp — the binary low-rank (blr) linear layer: forward, backward
// and sign gradients, every path's work recorded into one batch.
//
// A layer of shape m×n (out×in), rank r, P paths computes
//     y = Σ_p  h_p ⊙ ((x ⊙ g_p) · S_V,p ⊙ ℓ_p) · S_U,pᵀ
// i.e. Ŵ = Σ_p diag(h)·S_U·diag(ℓ)·S_Vᵀ·diag(g), with S_U (m×r) and S_V
// (n×r) ±1 matrices kept as bitmaps: u32 [rows][r/32], bit j of word w =
// rank 32w+j, 1 = +1. Per path, on x [ntok][n] and dy [ntok][m]:
//
//   forward   a = (x⊙g)·S_V      c = (a⊙ℓ)·S_Uᵀ      y (+)= h⊙c
//   backward  dh += Σ_t dy⊙c     b = (dy⊙h)·S_U      dℓ += Σ_t a⊙b
//             dx' = (b⊙ℓ)·S_Vᵀ   dg += Σ_t x⊙dx'     dx (+)= g⊙dx'
//   signs     G_U = diag(h)·dyᵀ·a·diag(ℓ)  [m][r]
//             G_V = diag(g)·xᵀ·b·diag(ℓ)   [n][r]
//
// The GEMMs read the bitmaps directly (bits_t for S_V in the forward and
// S_U in the backward, bits_n for the others); VKBLR_MM_BITS=0 expands them
// into planes first, with the same bits. Backward operands are staged to f16
// under `gscale`, a power of two, and divided back by the GEMMs. The column
// reductions are fused with the op that reads the same operand (colsum_fused
// -> colsum_fused_t when sign gradients need the transposed operands), and
// fall back to separate ops where a fused form cannot run.
//
// Ownership: a BlrLayer owns its parameters and gradients; BlrScratch owns
// what the forward keeps for the backward (a and c per path) and the
// transients passed from op to op — or borrows those from a BlrShared that
// every layer of a model shares (vkblr/ops/blr_lane.hpp, opt-in). Buffers
// must outlive the batches that name them.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "vkblr/buffer.hpp"
#include "vkblr/context.hpp"
#include "vkblr/recorder.hpp"

namespace vkblr {

// One path's device state. In a layer from make_blr_layer, h/l/g and
// dh/dl/dg are views of the layer's concatenated `scales` / `scale_grads`.
struct BlrPath {
  Buffer bits_u;      // u32 [m][r/32]
  Buffer bits_v;      // u32 [n][r/32]
  Buffer h, l, g;     // f32 [m], [r], [n]
  Buffer dh, dl, dg;  // f32 [m], [r], [n]: accumulated by blr_backward
  // Sign gradients G_U f32 [m][r], G_V f32 [n][r]; empty = not computed.
  // blr_backward writes (or adds, BlrBackward::accumulate_sign_grads) them,
  // unless it is given other destinations (BlrSignGrads).
  Buffer g_u, g_v;
};

// Where one scale vector sits in a layer's concatenated scale buffers
// (elements).
struct ScaleSegment {
  std::uint32_t offset = 0, length = 0;
};

// The three scale vectors of a path, in the order of their segments.
enum class Scale : std::uint32_t { h = 0, l = 1, g = 2 };

struct BlrLayer {
  std::uint32_t m = 0, n = 0, r = 0;
  std::vector<BlrPath> paths;
  // Every path's h, ℓ, g in one f32 buffer (and their gradients in another,
  // same layout), so one optimizer dispatch updates them all; segments in
  // the order h0, ℓ0, g0, h1, ...; elements between segments are padding
  // (alignment of the views) and stay zero. Empty for hand-made layers.
  Buffer scales, scale_grads;
  std::vector<ScaleSegment> segments;
  std::uint32_t scale_count = 0;  // elements of scales / scale_grads

  // Throws vkblr::Error unless the shape and every buffer fit: m, n multiples
  // of 16, r a multiple of 32, 1 <= paths.
  void check(const char* op) const;
  // The segment of path `path`'s scale vector `which`; throws vkblr::Error
  // for a path the segments do not hold (a hand-made layer has none).
  ScaleSegment segment(std::size_t path, Scale which) const;
  // Which vector segments[s] is (segments run h0, ℓ0, g0, h1, ...).
  static Scale scale_of_segment(std::size_t s) noexcept { return static_cast<Scale>(s % 3); }
};

// Host values of one path, to make a layer (bitmaps packed as above).
struct BlrPathInit {
  std::vector<std::uint32_t> bits_u, bits_v;
  std::vector<float> h, l, g;
};

// A layer with its buffers allocated and filled from `init` (gradients
// zero; scales concatenated as above); with `sign_grads`, G_U/G_V buffers too.
BlrLayer make_blr_layer(Context& ctx, std::uint32_t m, std::uint32_t n, std::uint32_t r,
                        const std::vector<BlrPathInit>& init, bool sign_grads);

namespace ops {
struct BlrShared;  // vkblr/ops/blr_lane.hpp
}

// Per-layer scratch: a [ntok][r] and c [ntok][m] of every path (kept by the
// forward for the backward), and the transients the ops pass along.
struct BlrScratch {
  // With transients of its own for up to `ntok` tokens of this layer;
  // `lanes` (1..64) paths are recorded side by side (1: path after path,
  // the least memory; every value gives the same bits).
  BlrScratch(Context& ctx, const BlrLayer& layer, std::uint32_t ntok, std::uint32_t lanes = 2);
  // Borrowing `shared`, which must outlive the scratch and hold the layer's
  // m, n, r (vkblr/ops/blr_lane.hpp); its ntok is the scratch's.
  BlrScratch(Context& ctx, const BlrLayer& layer, ops::BlrShared& shared);
  ~BlrScratch();
  BlrScratch(BlrScratch&&) noexcept;
  BlrScratch& operator=(BlrScratch&&) noexcept;

  std::uint32_t ntok;
  std::vector<Buffer> a, c;
  ops::BlrShared* shared;  // the transients: owned_ or borrowed

 private:
  std::unique_ptr<ops::BlrShared> owned_;
};

// Records the forward of `layer` on x f32 [ntok][n] into y f32 [ntok][m]
// (overwritten); keeps a and c in `s`.
void blr_forward(Recorder& rec, Context& ctx, const BlrLayer& layer, BlrScratch& s, const Buffer& x,
                 const Buffer& y, std::uint32_t ntok);

// One layer of blr_forward_side_by_side: its forward on x f32 [ntok][n]
// into y f32 [ntok][m] (overwritten), a and c kept in the scratch.
struct BlrForwardJob {
  const BlrLayer* layer = nullptr;
  BlrScratch* scratch = nullptr;
  const Buffer* x = nullptr;
  const Buffer* y = nullptr;
};

// The forwards of independent layers side by side: every path of every
// layer one branch of one Recorder::parallel (the small GEMMs and stagings
// of several layers fill the device together), then each layer's y. Bit
// for bit what blr_forward gives each layer. Each job's scratch must have
// transients of its own (its own BlrShared) and a y of its own (Error
// naming the jobs); a scratch with fewer lanes than its layer's paths runs
// the layers one after another.
void blr_forward_side_by_side(Recorder& rec, Context& ctx, std::span<const BlrForwardJob> jobs, std::uint32_t ntok);

// The f16 inputs of every path, xin[p] = f16(x ⊙ g_p) [ntok][n], staged by
// cvt_multi (one dispatch per four paths).
void blr_stage_inputs(Recorder& rec, Context& ctx, const BlrLayer& layer, const Buffer& x,
                      std::span<const Buffer* const> xin, std::uint32_t ntok);
// blr_forward with the inputs staged already (blr_stage_inputs): the same bits.
void blr_forward_staged(Recorder& rec, Context& ctx, const BlrLayer& layer, BlrScratch& s,
                        std::span<const Buffer* const> xin, const Buffer& y, std::uint32_t ntok);

struct BlrBackward {
  float gscale = 1024.0f;  // power of two; gradients are staged to f16 times it
  bool sign_grads = true;  // form G_U/G_V (for paths that have somewhere to put them)
  bool accumulate_sign_grads = false;  // add to G_U/G_V (micro-batches) instead of overwriting
  bool fuse = true;        // false: the unfused ops (same bits; for tests)
};

// Where blr_backward puts one path's sign gradients when the caller owns
// them (a SignMatrix's kept_gradient(), say): G_U f32 [m][r] into *g_u,
// G_V f32 [n][r] into *g_v. The buffers are borrowed for the recording and
// must outlive the batches that name them.
struct BlrSignGrads {
  const Buffer* g_u = nullptr;
  const Buffer* g_v = nullptr;
};

// Records the backward of the last blr_forward on the same x: dh/dℓ/dg of
// every path accumulate, dx f32 [ntok][n] is overwritten with the input
// gradient, and (options) the sign gradients are formed after each path's
// input gradient, from the bits as they were, into the g_u/g_v of every
// path that has them; the sign part is tagged "sign" for the profiler.
// Throws for a bad gscale or shape.
void blr_backward(Recorder& rec, Context& ctx, const BlrLayer& layer, BlrScratch& s, const Buffer& x, const Buffer& dy,
                  const Buffer& dx, std::uint32_t ntok, const BlrBackward& options = {});

// The same backward with path p's sign gradients going to sign_grads[p]
// instead of the path's own g_u/g_v, which are neither read nor written
// (the layer need have none): the layer is not changed to point elsewhere.
// With options.sign_grads: one entry per path, both buffers given and large
// enough, else vkblr::Error ("blr_backward", naming the path and the
// buffer). Without: no sign gradients are formed and sign_grads is not read
// (it may be empty).
void blr_backward(Recorder& rec, Context& ctx, const BlrLayer& layer, BlrScratch& s, const Buffer& x, const Buffer& dy,
                  const Buffer& dx, std::uint32_t ntok, std::span<const BlrSignGrads> sign_grads,
                  const BlrBackward& options = {});

// One layer of blr_backward_side_by_side: blr_backward's arguments (its
// sign gradients to sign_grads, one entry per path, as the second
// blr_backward takes them).
struct BlrBackwardJob {
  const BlrLayer* layer = nullptr;
  BlrScratch* scratch = nullptr;
  const Buffer* x = nullptr;
  const Buffer* dy = nullptr;
  const Buffer* dx = nullptr;
  std::span<const BlrSignGrads> sign_grads;
};

// The backwards of independent layers side by side, as
// blr_forward_side_by_side does the forwards: bit for bit each layer's
// blr_backward. Each job's scratch must have transients of its own and a dx
// of its own (Error naming the jobs).
void blr_backward_side_by_side(Recorder& rec, Context& ctx, std::span<const BlrBackwardJob> jobs, std::uint32_t ntok,
                               const BlrBackward& options = {});

}  // namespace vkblr
