// The GEMM builder: shape checks, kernel and tile choice, dispatch
// (glsl/gemm_coopmat2.comp, glsl/gemm_coopmat.comp, glsl/gemm_plain.comp).
#include "vkblr/gemm.hpp"

#include <algorithm>
#include <bit>
#include <format>
#include <optional>

#include "../ops/op_util.hpp"
#include "gemm.h"
#include "vkblr/ops/expand.hpp"

namespace vkblr {
namespace {

using detail::SpecConstant;
using shader::GemmPush;
static_assert(sizeof(GemmPush) == 48);

std::uint32_t workgroup_size(const Caps& caps, const GemmTile& t) {
  if (t.kernel == GemmKernel::plain) return (t.bm / t.wm) * (t.bn / t.wn);
  return caps.subgroup_size * (t.bm / t.wm) * (t.bn / t.wn);
}

// Shared memory of the staging buffers (gemm_tile.glsl), in bytes: the
// larger of the two B layouts, or the smaller (what every mode has for the
// epilogue). Not for coopmat2 tiles: that kernel declares none.
std::uint64_t shared_bytes(const GemmTile& t, bool smallest = false) {
  const std::uint64_t a = std::uint64_t{t.bm} * (t.bk + 8);
  const std::uint64_t bn = std::uint64_t{t.bn} * (t.bk + 8), bt = std::uint64_t{t.bk} * (t.bn + 8);
  return t.stages * (a + (smallest ? std::min(bn, bt) : std::max(bn, bt))) * 2;
}

// Columns the coopmat epilogue stages per chunk: the widest divisor of bn,
// a multiple of the fragment width, whose bm × (cols + 4) floats fit in the
// staging memory; 0 when none does.
std::uint32_t epilogue_cols(const GemmTile& t, std::uint32_t fn) {
  for (std::uint32_t cols = t.bn; cols >= fn; cols -= fn) {
    if (t.bn % cols == 0 && cols % 4 == 0 && std::uint64_t{t.bm} * (cols + 4) * 4 <= shared_bytes(t, true)) {
      return cols;
    }
  }
  return 0;
}

// Why `t` cannot run on this device, or "" when it can.
std::string tile_problem(const Caps& caps, const GemmTile& t) {
  const std::string s = t.to_string();
  if (t.bm == 0 || t.bn == 0 || t.bk == 0 || t.wm == 0 || t.wn == 0) return std::format("gemm tile {}: zero size", s);
  if (t.kernel == GemmKernel::coopmat2) {
    if (t.stages < 1 || t.stages > 16) return std::format("gemm tile {}: unroll (stages) must be 1..16", s);
    if (!std::has_single_bit(t.bk)) return std::format("gemm tile {}: bk must be a power of two", s);
  } else if (t.stages != 1 && t.stages != 2) {
    return std::format("gemm tile {}: stages must be 1 or 2", s);
  }
  if (t.prefetch > 2) return std::format("gemm tile {}: prefetch must be 1 or 2 (0: by mode)", s);
  if (t.prefetch != 0 && t.kernel != GemmKernel::coopmat) {
    return std::format("gemm tile {}: prefetch is the cooperative-matrix kernel's (0 here)", s);
  }
  if (t.bm % t.wm != 0 || t.bn % t.wn != 0) return std::format("gemm tile {}: bm, bn must be multiples of wm, wn", s);
  if (t.bk % 16 != 0 || t.bn % 32 != 0) {
    return std::format("gemm tile {}: bk must be a multiple of 16 and bn of 32 (bitmap words)", s);
  }
  if (!device_has_gemm_kernel(caps, t.kernel)) {
    return std::format("gemm tile {}: device {} has no {}", s, caps.device_name,
                       t.kernel == GemmKernel::coopmat2 ? "VK_NV_cooperative_matrix2" : "cooperative matrices");
  }
  const std::uint32_t wg = workgroup_size(caps, t);
  if (wg > caps.max_workgroup_invocations) {
    return std::format("gemm tile {}: {} invocations exceed the device's {}", s, wg, caps.max_workgroup_invocations);
  }
  if (t.kernel == GemmKernel::coopmat2) {
    if (wg > caps.coopmat2_max_workgroup_size) {
      return std::format("gemm tile {}: {} invocations exceed the workgroup-scope limit {}", s, wg,
                         caps.coopmat2_max_workgroup_size);
    }
    if (std::max({t.bm, t.bn, t.bk}) > caps.coopmat2_max_dimension) {
      return std::format("gemm tile {}: a matrix side exceeds the device's {}", s, caps.coopmat2_max_dimension);
    }
    for (const Caps::FlexibleShape& f : caps.coopmat2_f16_shapes) {
      if (f.invocations == wg && t.bm % f.m == 0 && t.bn % f.n == 0 && t.bk % f.k == 0) return "";
    }
    return std::format("gemm tile {}: no f16 workgroup-scope shape of {} invocations divides it", s, wg);
  }
  if (t.kernel == GemmKernel::coopmat) {
    const auto f = caps.f16_fragment();
    if (t.wm % f->m != 0 || t.wn % f->n != 0 || t.bk % f->k != 0) {
      return std::format("gemm tile {}: wm, wn, bk must be multiples of the fragment {}x{}x{}", s, f->m, f->n, f->k);
    }
    if (epilogue_cols(t, f->n) == 0) return std::format("gemm tile {}: staging memory too small for the epilogue", s);
  }
  if ((t.bm * t.bk / 8) % wg != 0 || (t.bn * t.bk / 8) % wg != 0) {
    return std::format("gemm tile {}: the {} invocations must split the 16-byte loads of a tile evenly", s, wg);
  }
  if (shared_bytes(t) > caps.max_shared_memory) {
    return std::format("gemm tile {}: {} bytes of shared memory, the device has {}", s, shared_bytes(t),
                       caps.max_shared_memory);
  }
  return "";
}

}  // namespace

const char* to_string(GemmB mode) noexcept {
  switch (mode) {
    case GemmB::plane:
      return "plane";
    case GemmB::bits_n:
      return "bits_n";
    case GemmB::bits_t:
      return "bits_t";
  }
  return "?";
}

const char* to_string(GemmKernel kernel) noexcept {
  switch (kernel) {
    case GemmKernel::plain:
      return "plain";
    case GemmKernel::coopmat:
      return "coopmat";
    case GemmKernel::coopmat2:
      return "coopmat2";
  }
  return "?";
}

bool device_has_gemm_kernel(const Caps& caps, GemmKernel kernel) noexcept {
  switch (kernel) {
    case GemmKernel::coopmat2:
      return caps.coopmat2;
    case GemmKernel::coopmat:
      return caps.coopmat && caps.f16_fragment().has_value();
    case GemmKernel::plain:
      return true;
  }
  return false;
}

GemmKernel default_gemm_kernel(const Context& ctx) {
  const Caps& caps = ctx.caps();
  const GemmPolicy& policy = ctx.gemm_policy();
  const bool coopmat = device_has_gemm_kernel(caps, GemmKernel::coopmat) && policy.coopmat;
  // coopmat2 only when asked: where measured it sped up the plane mode but
  // slowed the bitmap modes and the blr step (docs/benchmarks.md, "The GEMM defaults against the alternatives")
  if (coopmat && device_has_gemm_kernel(caps, GemmKernel::coopmat2) && policy.coopmat2) {
    return GemmKernel::coopmat2;
  }
  return coopmat ? GemmKernel::coopmat : GemmKernel::plain;
}

std::string GemmTile::to_string() const {
  if (kernel == GemmKernel::coopmat2) {
    return std::format("{}x{}x{} workgroup scope, subgroups {}x{}, unroll {}", bm, bn, bk, wm, wn, stages);
  }
  return std::format("{}x{}x{} {} {}x{} stages {}{}", bm, bn, bk, kernel == GemmKernel::coopmat ? "subgroups" : "threads",
                     wm, wn, stages, prefetch ? std::format(" prefetch {}", prefetch) : "");
}

void check_gemm_tile(const Context& ctx, const GemmTile& t) {
  const std::string problem = tile_problem(ctx.caps(), t);
  require(problem.empty(), "{}", problem);
}

GemmTile gemm_tile_for(const Context& ctx, std::uint32_t m, std::uint32_t n, std::uint32_t k) {
  return gemm_tile_for(ctx, m, n, k, default_gemm_kernel(ctx));
}

GemmTile gemm_tile_for(const Context& ctx, std::uint32_t m, std::uint32_t n, std::uint32_t k, GemmKernel kernel) {
  (void)k;
  if (const std::optional<GemmTile>& forced = ctx.gemm_policy().tile) {
    GemmTile t = *forced;
    t.kernel = kernel;
    return t;
  }
  const Caps& caps = ctx.caps();
  if (kernel == GemmKernel::plain) return {64, 64, 32, 4, 4, 1, kernel};
  if (kernel == GemmKernel::coopmat2) {
    // the largest candidate the device takes whose tile the output fills
    // (the tile sweep in docs/benchmarks.md, "The GEMM defaults against the alternatives")
    const GemmTile candidates[] = {{128, 128, 64, 32, 64, 8, kernel}, {64, 64, 64, 32, 32, 8, kernel}};
    for (const GemmTile& t : candidates) {
      if ((m >= t.bm && n >= t.bn) && tile_problem(caps, t).empty()) return t;
    }
    for (auto it = std::rbegin(candidates); it != std::rend(candidates); ++it) {
      if (tile_problem(caps, *it).empty()) return *it;
    }
    fail("gemm: device {} takes none of the coopmat2 tiles", caps.device_name);
  }
  const auto f = *caps.f16_fragment();
  const std::uint32_t sg = caps.subgroup_size;
  if (f.m >= 16 && sg >= 32) {
    // 4 subgroups of 64×64 on large outputs; 4 of 32×32 where a 128-wide
    // tile would leave most of the device idle; one stage where the shared
    // memory of two would cost a workgroup per multiprocessor (the tile and
    // stage sweeps in docs/benchmarks.md, "The GEMM defaults against the alternatives")
    if (m >= 128 && n >= 128) return {128, 128, 32, 64, 64, 1, kernel};
    return {64, 64, 32, 32, 32, 2, kernel};
  }
  // small fragments and subgroups (lavapipe: 8×8×8, subgroup 8): 2×2
  // subgroups of 2×2 fragments
  return {4 * f.m, 4 * f.n, 32, 2 * f.m, 2 * f.n, 2, kernel};
}

std::uint32_t gemm_splits_for(const Context& ctx, const GemmTile& tile, std::uint32_t m, std::uint32_t n,
                              std::uint32_t k, std::uint32_t gemms) {
  if (const std::optional<std::uint32_t> forced = ctx.gemm_policy().k_splits) return *forced;
  const auto f = ctx.caps().f16_fragment();
  if (tile.kernel == GemmKernel::plain || !f || f->m < 16) return 1;
  const std::uint64_t tiles =
      std::uint64_t{detail::ceil_div(m, tile.bm)} * detail::ceil_div(n, tile.bn) * std::max(1u, gemms);
  // Split K until about kTargetGroups workgroups run, each layer at least
  // kMinLayerK deep; the caller's GEMMs of this shape count together (the split-K sweeps
  // in docs/benchmarks.md, "The GEMM defaults against the alternatives" and "Paths side by side")
  constexpr std::uint64_t kTargetGroups = 256, kMinLayerK = 512;
  const std::uint64_t by_groups = std::max<std::uint64_t>(1, (kTargetGroups + tiles / 2) / tiles);
  const std::uint64_t by_k = std::max<std::uint64_t>(1, k / kMinLayerK);
  return static_cast<std::uint32_t>(std::min(by_groups, by_k));
}

namespace {

// The GEMM's dispatches for a checked shape, with B (a buffer, or the
// transient plane of an expanded bitmap) bound in `mode`.
template <class B>
Ops gemm_dispatches(Context& ctx, const Buffer& act, const B& b, GemmB mode, const Buffer& out, const GemmShape& shape,
                    const GemmTile* forced_tile, std::uint32_t lda, std::uint32_t ldo, std::uint32_t ldb) {
  const std::uint32_t m = shape.m, n = shape.n, k = shape.k;
  const GemmTile tile = forced_tile ? *forced_tile : gemm_tile_for(ctx, m, n, k);
  check_gemm_tile(ctx, tile);
  const Caps& caps = ctx.caps();
  const std::uint32_t wg = workgroup_size(caps, tile);
  // Split-K (set up after the dispatch below): layers of whole K tiles; one layer is the plain GEMM.
  const std::uint32_t asked = shape.k_splits ? shape.k_splits : gemm_splits_for(ctx, tile, m, n, k);
  require(asked <= 64, "gemm: k_splits = {} (at most 64)", asked);
  const std::uint32_t k_tiles = detail::ceil_div(k, tile.bk);
  const std::uint32_t k_split = detail::ceil_div(k_tiles, std::min(asked, k_tiles)) * tile.bk;
  std::uint32_t splits = detail::ceil_div(k, k_split);
  if (std::uint64_t{splits} * m * n > 0xffffffffull || splits > caps.max_workgroup_count[2]) splits = 1;
  std::vector<SpecConstant> spec;
  if (tile.kernel == GemmKernel::coopmat2) {  // the driver tiles the workgroup
    spec = {{GEMM2_SPEC_WG_SIZE, wg},   {GEMM2_SPEC_BM, tile.bm},
            {GEMM2_SPEC_BN, tile.bn},   {GEMM2_SPEC_BK, tile.bk},
            {GEMM2_SPEC_B_MODE, static_cast<std::uint32_t>(mode)},
            {GEMM2_SPEC_UNROLL, tile.stages}};
  } else {
    spec = {{GEMM_SPEC_WG_SIZE, wg},   {GEMM_SPEC_BM, tile.bm},
            {GEMM_SPEC_BN, tile.bn},   {GEMM_SPEC_BK, tile.bk},
            {GEMM_SPEC_WM, tile.wm},   {GEMM_SPEC_WN, tile.wn},
            {GEMM_SPEC_B_MODE, static_cast<std::uint32_t>(mode)},
            {GEMM_SPEC_STAGES, tile.stages}};
    // K tiles in flight: two ahead for the bitmap modes (a word and 16
    // halves of A more in registers), one for the plane, whose extra 32
    // registers pass the budget (docs/benchmarks.md, "The GEMM defaults against the alternatives")
    if (tile.kernel == GemmKernel::coopmat) {
      spec.push_back({GEMM_SPEC_PREFETCH, tile.prefetch ? tile.prefetch : (mode == GemmB::plane ? 1u : 2u)});
      // bits_n words four K tiles at a time (one 16-byte load per row), where
      // every layer's words start at a multiple of 4 in rows of a multiple of
      // 4 words (docs/benchmarks.md, "The GEMM defaults against the alternatives")
      const bool group = mode == GemmB::bits_n && tile.bk == 32 && k % 128 == 0 &&
                         (splits == 1 || k_split % 128 == 0) && ctx.gemm_policy().word_groups;
      spec.push_back({GEMM_SPEC_WORD_GROUP, group ? 4u : 1u});
    }
  }
  detail::KernelOptions options;
  detail::KernelId id = detail::KernelId::gemm_plain;
  const char* name = "gemm_plain";
  if (tile.kernel == GemmKernel::coopmat) {
    const auto f = *caps.f16_fragment();
    spec.push_back({GEMM_SPEC_SUBGROUP, caps.subgroup_size});
    spec.push_back({GEMM_SPEC_FM, f.m});
    spec.push_back({GEMM_SPEC_FN, f.n});
    spec.push_back({GEMM_SPEC_FK, f.k});
    spec.push_back({GEMM_SPEC_EPI_COLS, epilogue_cols(tile, f.n)});
    options = {caps.subgroup_size_control ? caps.subgroup_size : 0, true};
    id = detail::KernelId::gemm_coopmat;
    name = "gemm";
  } else if (tile.kernel == GemmKernel::coopmat2) {
    options = {0, true};
    id = detail::KernelId::gemm_coopmat2;
    name = "gemm";
  }
  Dispatch d = detail::make_dispatch(ctx, id, name, std::span<const SpecConstant>(spec), options);
  GemmPush p{};
  p.m = m;
  p.n = n;
  p.k = k;
  p.lda = lda;
  p.ldb = ldb;
  p.ldo = ldo;
  p.ocol = shape.ocol;
  p.accumulate = shape.accumulate ? 1u : 0u;
  p.oscale = shape.oscale;
  d.groups = {detail::ceil_div(n, tile.bn), detail::ceil_div(m, tile.bm), 1};
  require(d.groups[1] <= caps.max_workgroup_count[1], "gemm: m = {} needs {} row tiles, the device allows {}", m,
          d.groups[1], caps.max_workgroup_count[1]);
  d.bind(0, act, Access::read);
  d.bind(mode == GemmB::plane ? 1 : 2, b, Access::read);

  if (splits == 1) {
    d.set_push(p).bind(3, out, shape.accumulate ? Access::read_write : Access::write);
    return {d};
  }
  const std::uint64_t layer_floats = std::uint64_t{m} * n;
  const std::uint64_t bytes = splits * layer_floats * 4;
  const Transient ws = make_transient(bytes);  // the layers' products [splits][m][n]
  GemmPush layers = p;
  layers.ldo = n;
  layers.ocol = 0;
  layers.accumulate = 0;
  layers.oscale = 1.0f;
  layers.k_split = k_split;
  layers.z_stride = static_cast<std::uint32_t>(layer_floats);
  d.set_push(layers).bind(3, ws, Access::write);
  d.groups[2] = splits;

  Dispatch reduce = detail::make_dispatch(ctx, detail::KernelId::gemm_splitk_reduce, "gemm_splitk_reduce");
  GemmPush r = p;
  r.splits = splits;
  reduce.set_push(r).bind(0, ws, Access::read).bind(3, out, shape.accumulate ? Access::read_write : Access::write);
  reduce.groups = detail::elt_grid(layer_floats / 4, "gemm_splitk_reduce");
  return {d, reduce};
}

}  // namespace

Ops gemm(Context& ctx, const Buffer& act, const Buffer& b, GemmB mode, const Buffer& out, const GemmShape& shape,
         const GemmTile* forced_tile) {
  const char* op = "gemm";
  const std::uint32_t m = detail::dim(op, "m", shape.m);
  const std::uint32_t n = detail::dim(op, "n", shape.n);
  const std::uint32_t k = detail::dim(op, "k", shape.k);
  require(n % 16 == 0, "gemm: n = {} is not a multiple of 16", n);
  require(k % 16 == 0, "gemm: k = {} is not a multiple of 16", k);
  require(mode != GemmB::bits_n || k % 32 == 0, "gemm (bits_n): k = {} is not a multiple of 32", k);
  require(mode != GemmB::bits_t || n % 32 == 0, "gemm (bits_t): n = {} is not a multiple of 32", n);
  const std::uint32_t lda = shape.lda ? shape.lda : k;
  const std::uint32_t ldo = shape.ldo ? shape.ldo : n;
  require(lda >= k && lda % 8 == 0, "gemm: lda = {} must be >= k = {} and a multiple of 8", lda, k);
  require(std::uint64_t{shape.ocol} + n <= ldo, "gemm: columns {}..{} exceed ldo = {}", shape.ocol,
          std::uint64_t{shape.ocol} + n, ldo);
  detail::elements_fit(op, std::uint64_t{m} * lda);
  detail::elements_fit(op, std::uint64_t{m} * ldo);
  detail::need_bytes(op, "act", act, (std::uint64_t{m - 1} * lda + k) * 2);
  detail::need_bytes(op, "out", out, (std::uint64_t{m - 1} * ldo + shape.ocol + n) * 4);
  std::uint32_t ldb = 0;
  switch (mode) {
    case GemmB::plane:
      ldb = k;
      detail::need_bytes(op, "plane", b, std::uint64_t{n} * k * 2);
      break;
    case GemmB::bits_n:
      ldb = k / 32;
      detail::need_bytes(op, "bitmap (bits_n)", b, std::uint64_t{n} * ldb * 4);
      break;
    case GemmB::bits_t:
      ldb = n / 32;
      detail::need_bytes(op, "bitmap (bits_t)", b, std::uint64_t{k} * ldb * 4);
      break;
  }

  // Without bitmap staging (GemmPolicy::bitmap_staging): the bitmap becomes
  // an f16 plane [n][k] in a transient first (expand_n of bits_n, expand_t
  // of bits_t), then the plane GEMM runs with the same tile: the same
  // products, the same bits.
  if (mode != GemmB::plane && !ctx.gemm_policy().bitmap_staging) {
    const Transient plane = make_transient(std::uint64_t{n} * k * 2);
    Ops ops{mode == GemmB::bits_n ? ops::expand_n(ctx, b, plane, n, k) : ops::expand_t(ctx, b, plane, k, n)};
    for (Dispatch& d : gemm_dispatches(ctx, act, plane, GemmB::plane, out, shape, forced_tile, lda, ldo, k)) {
      ops.push_back(d);
    }
    return ops;
  }
  return gemm_dispatches(ctx, act, b, mode, out, shape, forced_tile, lda, ldo, ldb);
}

}  // namespace vkblr
