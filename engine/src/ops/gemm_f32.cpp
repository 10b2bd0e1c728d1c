// The f32 GEMM builder: shape checks, tile choice, dispatch (glsl/gemm_f32.comp).
#include "gemm_f32.h"

#include <format>
#include <optional>

#include "op_util.hpp"
#include "vkblr/ops/gemm_f32.hpp"

namespace vkblr::ops {
namespace {
using detail::SpecConstant;
using shader::GemmF32Push;
static_assert(sizeof(GemmF32Push) == 44);

constexpr const char* kOp = "gemm_f32";

std::uint32_t invocations(const GemmF32Tile& t) { return (t.bm / t.tm) * (t.bn / t.tn); }

// Two K-major stages of each operand, rows padded by one vec4 (gemm_f32.comp).
std::uint64_t shared_bytes(const GemmF32Tile& t) {
  return 2ull * t.bk * ((t.bm / 4 + 1) + (t.bn / 4 + 1)) * 16;
}

// Why `t` cannot run on this device, or "" when it can.
std::string tile_problem(const Caps& caps, const GemmF32Tile& t) {
  const std::string s = t.to_string();
  if (t.bm == 0 || t.bn == 0 || t.bk == 0) return std::format("gemm_f32 tile {}: zero size", s);
  if ((t.tm != 4 && t.tm != 8) || (t.tn != 4 && t.tn != 8)) {
    return std::format("gemm_f32 tile {}: tm and tn must be 4 or 8", s);
  }
  if (t.bm % t.tm != 0 || t.bn % t.tn != 0) {
    return std::format("gemm_f32 tile {}: bm, bn must be multiples of tm, tn", s);
  }
  const std::uint32_t wg = invocations(t);
  if (wg > caps.max_workgroup_invocations) {
    return std::format("gemm_f32 tile {}: {} invocations exceed the device's {}", s, wg,
                       caps.max_workgroup_invocations);
  }
  if ((t.bm * t.bk) % wg != 0 || (t.bn * t.bk) % wg != 0) {
    return std::format("gemm_f32 tile {}: the {} invocations must split bm·bk and bn·bk evenly", s, wg);
  }
  if (shared_bytes(t) > caps.max_shared_memory) {
    return std::format("gemm_f32 tile {}: {} bytes of shared memory, the device has {}", s, shared_bytes(t),
                       caps.max_shared_memory);
  }
  return "";
}

// A matrix as stored: `rows` rows of `cols` elements, `ld` apart, from
// element `first` of its buffer.
struct Block {
  const char* what;
  std::uint64_t first, rows, cols, ld;
  std::uint64_t span() const { return (rows - 1) * ld + cols; }  // elements from the first to past the last
};

std::uint32_t leading_dim(const char* name, std::uint32_t given, std::uint32_t row_length) {
  const std::uint32_t ld = given ? given : row_length;
  require(ld >= row_length, "gemm_f32: {} = {} is less than the stored row length {}", name, ld, row_length);
  return ld;
}

// Throws when out's span and `in`'s overlap in one buffer.
void require_apart(const Buffer& out, const Block& o, const Buffer& in, const Block& i) {
  if (out.id() != in.id()) return;
  const std::uint64_t o0 = out.offset() + o.first * 4, o1 = o0 + o.span() * 4;
  const std::uint64_t i0 = in.offset() + i.first * 4, i1 = i0 + i.span() * 4;
  require(o1 <= i0 || i1 <= o0, "gemm_f32: out (bytes {}..{}) overlaps {} (bytes {}..{}) in one buffer", o0, o1,
          i.what, i0, i1);
}

}  // namespace

std::string GemmF32Tile::to_string() const { return std::format("{},{},{},{},{}", bm, bn, bk, tm, tn); }

GemmF32Tile gemm_f32_tile_for(const Context& ctx, std::uint32_t /*m*/, std::uint32_t /*n*/) {
  if (const std::optional<GemmF32Tile>& forced = ctx.gemm_policy().f32_tile) return *forced;
  // Discrete GPUs: 256 invocations of 4×4 on 64×64 tiles, the fastest tile
  // measured at the init's shapes (`vkblr-bench gemm-f32 --tile`,
  // docs/benchmarks.md); 8 outputs per invocation along n run an order of
  // magnitude slower. Others (lavapipe, integrated GPUs): 64 invocations,
  // small edge waste.
  if (ctx.caps().device_type == "discrete") return {64, 64, 8, 4, 4};
  return {32, 32, 8, 4, 4};
}

void check_gemm_f32_tile(const Context& ctx, const GemmF32Tile& tile) {
  const std::string problem = tile_problem(ctx.caps(), tile);
  require(problem.empty(), "{}", problem);
}

Dispatch gemm_f32(Context& ctx, const Buffer& a, const Buffer& b, const Buffer& out, const GemmF32& shape,
                  const GemmF32Tile* forced_tile) {
  const std::uint32_t m = detail::dim(kOp, "m", shape.m);
  const std::uint32_t n = detail::dim(kOp, "n", shape.n);
  const std::uint32_t k = detail::dim(kOp, "k", shape.k);
  const std::uint32_t lda = leading_dim("lda", shape.lda, shape.trans_a ? m : k);
  const std::uint32_t ldb = leading_dim("ldb", shape.ldb, shape.trans_b ? k : n);
  const std::uint32_t ldo = leading_dim("ldo", shape.ldo, n);
  const Block ba{"a", shape.a_offset, shape.trans_a ? k : m, shape.trans_a ? m : k, lda};
  const Block bb{"b", shape.b_offset, shape.trans_b ? n : k, shape.trans_b ? k : n, ldb};
  const Block bo{"out", shape.out_offset, m, n, ldo};
  const GemmF32Tile tile = forced_tile ? *forced_tile : gemm_f32_tile_for(ctx, m, n);
  check_gemm_f32_tile(ctx, tile);
  const Caps& caps = ctx.caps();
  const std::uint32_t groups_x = detail::ceil_div(n, tile.bn), groups_y = detail::ceil_div(m, tile.bm);
  require(groups_x <= caps.max_workgroup_count[0] && groups_y <= caps.max_workgroup_count[1],
          "gemm_f32: {}×{} workgroups of tile {} exceed the device's {}×{}", groups_x, groups_y, tile.to_string(),
          caps.max_workgroup_count[0], caps.max_workgroup_count[1]);
  const SpecConstant spec[] = {{GEMM_F32_SPEC_WG_SIZE, invocations(tile)},
                               {GEMM_F32_SPEC_BM, tile.bm},
                               {GEMM_F32_SPEC_BN, tile.bn},
                               {GEMM_F32_SPEC_BK, tile.bk},
                               {GEMM_F32_SPEC_TM, tile.tm},
                               {GEMM_F32_SPEC_TN, tile.tn},
                               {GEMM_F32_SPEC_TRANS_A, shape.trans_a ? 1u : 0u},
                               {GEMM_F32_SPEC_TRANS_B, shape.trans_b ? 1u : 0u}};
  Dispatch d = detail::make_dispatch(ctx, detail::KernelId::gemm_f32, kOp, std::span<const SpecConstant>(spec));
  const std::uint32_t a_first = detail::bind_elements(ctx, d, kOp, "a", 0, a, Access::read, ba.first, ba.span());
  const std::uint32_t b_first = detail::bind_elements(ctx, d, kOp, "b", 1, b, Access::read, bb.first, bb.span());
  const Access out_access = shape.accumulate ? Access::read_write : Access::write;
  const std::uint32_t out_first = detail::bind_elements(ctx, d, kOp, "out", 2, out, out_access, bo.first, bo.span());
  require_apart(out, bo, a, ba);  // after the binds: they check the offsets
  require_apart(out, bo, b, bb);
  const GemmF32Push p{.m = m,
                      .n = n,
                      .k = k,
                      .lda = lda,
                      .ldb = ldb,
                      .ldo = ldo,
                      .a_offset = a_first,
                      .b_offset = b_first,
                      .out_offset = out_first,
                      .alpha = shape.alpha,
                      .accumulate = shape.accumulate ? 1u : 0u};
  d.set_push(p);
  d.groups = {groups_x, groups_y, 1};
  return d;
}

}  // namespace vkblr::ops
