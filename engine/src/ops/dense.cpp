// Small dense f32 linears (glsl/dense.comp, dense_fwd_t.comp, dense_bwd_t.comp).
#include "dense.h"

#include "op_util.hpp"
#include "vkblr/ops/dense.hpp"

namespace vkblr::ops {
namespace {
using detail::dim;
using detail::need_bytes;
using shader::DensePush;
static_assert(sizeof(DensePush) == 16);

constexpr std::uint32_t kTileRows = VKBLR_DENSE_TILE_ROWS;
constexpr std::uint32_t kTileOutputs = VKBLR_DENSE_TILE_OUTPUTS;
constexpr std::uint32_t kBwdRows = VKBLR_DENSE_BWD_ROWS;

// The checks both directions share: sizes, the three buffers (`in` = a or
// dy, `out` = out or dx, with their element counts and names) and no
// aliasing of the output with an input.
DensePush dense_push(const char* op, const Buffer& in, const Buffer& w, const Buffer& out, std::uint32_t m,
                     std::uint32_t k, std::uint32_t r, std::uint64_t in_elements, std::uint64_t out_elements,
                     const char* in_name, const char* out_name) {
  dim(op, "m", m);
  dim(op, "k", k);
  dim(op, "r", r);
  detail::elements_fit(op, std::uint64_t{m} * k);
  detail::elements_fit(op, std::uint64_t{m} * r);
  detail::elements_fit(op, std::uint64_t{r} * k);
  need_bytes(op, in_name, in, in_elements * 4);
  need_bytes(op, "w", w, std::uint64_t{r} * k * 4);
  need_bytes(op, out_name, out, out_elements * 4);
  require(out.id() != in.id(), "{}: {} is the same buffer as {}", op, out_name, in_name);
  require(out.id() != w.id(), "{}: {} is the same buffer as w", op, out_name);
  DensePush p{};
  p.m = m;
  p.k = k;
  p.r = r;
  return p;
}

// dense_fwd_t computes at most 48 outputs, loads rows as vec4 and takes one
// workgroup per 64 rows along x (no folding).
bool tiled_forward_applies(std::uint32_t m, std::uint32_t k, std::uint32_t r) {
  return r <= kTileOutputs && k % 4 == 0 && detail::ceil_div(m, kTileRows) <= detail::kFoldWidth;
}

// dense_bwd_t's grid: 256 columns per workgroup along x, 4 rows per
// invocation along y (no folding).
bool tiled_backward_applies(std::uint32_t m, std::uint32_t k) {
  return detail::ceil_div(m, kBwdRows) <= detail::kFoldWidth &&
         detail::ceil_div(k, detail::kEltWorkgroup) <= detail::kFoldWidth;
}
}  // namespace

Dispatch dense_fwd(Context& ctx, const Buffer& a, const Buffer& w, const Buffer& out, std::uint32_t m,
                   std::uint32_t k, std::uint32_t r, bool accumulate, DenseKernel kernel) {
  const char* op = "dense_fwd";
  DensePush p = dense_push(op, a, w, out, m, k, r, std::uint64_t{m} * k, std::uint64_t{m} * r, "a", "out");
  p.accumulate = accumulate ? 1 : 0;
  const bool applies = tiled_forward_applies(m, k, r);
  require(kernel != DenseKernel::tiled || applies,
          "dense_fwd: the tiled kernel needs r <= {} (r = {}), k % 4 == 0 (k = {}) and m <= {} (m = {})",
          kTileOutputs, r, k, std::uint64_t{kTileRows} * detail::kFoldWidth, m);
  const bool tiled = kernel == DenseKernel::tiled || (kernel == DenseKernel::automatic && applies);
  Dispatch d = tiled ? detail::make_dispatch(ctx, detail::KernelId::dense_fwd_t, "dense_fwd_t")
                     : detail::make_dispatch(ctx, detail::KernelId::dense_fwd, "dense_fwd");
  d.set_push(p).bind(0, a, Access::read).bind(1, w, Access::read);
  d.bind(2, out, accumulate ? Access::read_write : Access::write);
  d.groups = tiled ? std::array<std::uint32_t, 3>{detail::ceil_div(m, kTileRows), 1, 1}
                   : detail::elt_grid(std::uint64_t{m} * r, op);
  return d;
}

Dispatch dense_bwd(Context& ctx, const Buffer& dy, const Buffer& w, const Buffer& dx, std::uint32_t m,
                   std::uint32_t k, std::uint32_t r, DenseKernel kernel) {
  const char* op = "dense_bwd";
  const DensePush p = dense_push(op, dy, w, dx, m, k, r, std::uint64_t{m} * r, std::uint64_t{m} * k, "dy", "dx");
  const bool applies = tiled_backward_applies(m, k);
  require(kernel != DenseKernel::tiled || applies,
          "dense_bwd: the tiled kernel needs m <= {} (m = {}) and k <= {} (k = {})",
          std::uint64_t{kBwdRows} * detail::kFoldWidth, m, std::uint64_t{detail::kEltWorkgroup} * detail::kFoldWidth,
          k);
  const bool tiled = kernel == DenseKernel::tiled || (kernel == DenseKernel::automatic && applies);
  Dispatch d = tiled ? detail::make_dispatch(ctx, detail::KernelId::dense_bwd_t, "dense_bwd_t")
                     : detail::make_dispatch(ctx, detail::KernelId::dense_bwd, "dense_bwd");
  d.set_push(p).bind(0, dy, Access::read).bind(1, w, Access::read).bind(2, dx, Access::read_write);
  d.groups = tiled ? std::array<std::uint32_t, 3>{detail::ceil_div(k, detail::kEltWorkgroup),
                                                  detail::ceil_div(m, kBwdRows), 1}
                   : detail::elt_grid(std::uint64_t{m} * k, op);
  return d;
}

}  // namespace vkblr::ops
