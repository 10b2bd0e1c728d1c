// blr_backward: input and scale gradients with fused column reductions, and
// the sign gradients in the same batch.
#include <algorithm>
#include <cmath>
#include <tuple>
#include <vector>

#include "../ops/op_util.hpp"
#include "path_gemm.hpp"
#include "sign_destinations.hpp"
#include "vkblr/blr.hpp"
#include "vkblr/gemm.hpp"
#include "vkblr/ops/blr_lane.hpp"
#include "vkblr/ops/colsum.hpp"
#include "vkblr/ops/cvt.hpp"
#include "vkblr/ops/scale.hpp"

namespace vkblr {
namespace {
using detail::round32;

// A path's backward steps, in order (Recorder::parallel).
enum Step : std::size_t { kDh, kB, kDl, kDxp, kDg, kGv, kSteps };

// sum[k] += Σ_t a⊙b with `fuse` on the operand it names, and, when
// `transposed` is given, that operand's transposed f16 copy [k32][t32] for
// the sign GEMMs. The seed's fallback: colsum_fused_t, else colsum_fused +
// cvt_t, else (options.fuse off) colsum_prod + the separate op + cvt_t —
// the same bits at every level. `staged` is what the transposed copy
// stages: source f32 [ntok][k], column factor and scale.
struct Transposed {
  const Buffer* dst;
  const Buffer* src;
  const Buffer* col;
  float scale;
};

Ops reduce(Context& ctx, const Buffer& a, const Buffer& b, const Buffer& sum, std::uint32_t ntok, std::uint32_t k,
           const ops::Fuse& fuse, const Transposed* transposed, bool allow_fusion) {
  if (allow_fusion && transposed && ops::colsum_fused_t_fits(ntok, k)) {
    return ops::colsum_fused_t(ctx, a, b, sum, ntok, k, fuse, *transposed->dst);
  }
  Ops out;
  auto append = [&out](Ops more) { out.insert(out.end(), more.begin(), more.end()); };
  if (allow_fusion) {
    append(ops::colsum_fused(ctx, a, b, sum, ntok, k, fuse));
  } else {
    append(ops::colsum_prod(ctx, a, b, sum, ntok, k));
    switch (fuse.kind) {
      case ops::Fuse::Kind::cvt_a:
        append({ops::cvt_col(ctx, a, *fuse.col, *fuse.dst, ntok, k, fuse.scale)});
        break;
      case ops::Fuse::Kind::cvt_b:
        append({ops::cvt_col(ctx, b, *fuse.col, *fuse.dst, ntok, k, fuse.scale)});
        break;
      case ops::Fuse::Kind::scale_b:
        append({ops::scale_acc(ctx, b, *fuse.col, *fuse.dst, ntok, k, fuse.accumulate)});
        break;
    }
  }
  if (transposed) {
    append({ops::cvt_t(ctx, *transposed->src, transposed->col, *transposed->dst, ntok, k, transposed->scale,
                       round32(k), round32(ntok))});
  }
  return out;
}

// The branches of paths [first, first + lanes) of the backward with path
// p's sign gradients into out[p] (both null: none for that path), one per
// path on its lane's transients. Checks the call.
std::vector<Branch> backward_branches(Context& ctx, const BlrLayer& layer, BlrScratch& s, const Buffer& x,
                                      const Buffer& dy, const Buffer& dx, std::uint32_t ntok,
                                      std::span<const BlrSignGrads> out, const BlrBackward& o, std::size_t first) {
  const char* op = "blr_backward";
  detail::dim(op, "ntok", ntok);
  require(ntok <= s.ntok, "{}: ntok = {} exceeds the scratch's {}", op, ntok, s.ntok);
  require(s.a.size() == layer.paths.size(), "{}: scratch made for {} paths, the layer has {}", op, s.a.size(),
          layer.paths.size());
  detail::require_gscale(op, o.gscale);
  const auto [m, n, r] = std::array{layer.m, layer.n, layer.r};
  const std::uint32_t t32 = round32(ntok);
  const float gs = o.gscale, inv = 1.0f / o.gscale;
  ops::BlrShared& sh = *s.shared;

  const std::size_t np = layer.paths.size();
  const auto paths = static_cast<std::uint32_t>(np);
  std::vector<Branch> group;
  for (std::size_t p = first; p < std::min(np, first + sh.lanes.size()); ++p) {
    const BlrPath& path = layer.paths[p];
    const ops::BlrLane& t = sh.lanes[p - first];
    const bool sign = o.sign_grads && out[p].g_u && out[p].g_v;
    Branch& st = group.emplace_back(kSteps);
    // dh += Σ dy⊙c; xh = f16(dy⊙h·gs); (dy⊙h·gs)ᵀ
    const Transposed dyh{&t.dyh_t, &dy, &path.h, gs};
    st[kDh].push_back({"", reduce(ctx, dy, s.c[p], path.dh, ntok, m, ops::Fuse::cvt_a(path.h, t.xh, gs),
                                  sign ? &dyh : nullptr, o.fuse)});
    // b = (dy⊙h)·S_U: B[r][m] = S_Uᵀ, the bitmap [m][r/32] read transposed
    st[kB].push_back({"", gemm(ctx, t.xh, path.bits_u, GemmB::bits_t, t.t2,
                               detail::path_gemm(ctx, paths, {.m = ntok, .n = r, .k = m, .oscale = inv}))});
    // dℓ += Σ a⊙b; xh = f16(b⊙ℓ·gs); (b⊙ℓ·gs)ᵀ
    const Transposed bl{&t.bl_t, &t.t2, &path.l, gs};
    st[kDl].push_back({"", reduce(ctx, s.a[p], t.t2, path.dl, ntok, r, ops::Fuse::cvt_b(path.l, t.xh, gs),
                                  sign ? &bl : nullptr, o.fuse)});
    // dx' = (b⊙ℓ)·S_Vᵀ: B[n][r] = S_V, the bitmap's own rows
    st[kDxp].push_back({"", gemm(ctx, t.xh, path.bits_v, GemmB::bits_n, t.t1,
                                 detail::path_gemm(ctx, paths, {.m = ntok, .n = n, .k = r, .oscale = inv}))});
    // dg += Σ x⊙dx'; dx (+)= g⊙dx' (path order: one pass of every path's
    // reduction writes dx); (x⊙g)ᵀ
    const Transposed xg{&t.xg_t, &x, &path.g, 1.0f};
    st[kDg].push_back({"", reduce(ctx, x, t.t1, path.dg, ntok, n, ops::Fuse::scale_b(path.g, dx, p > 0, 1.0f),
                                  sign ? &xg : nullptr, o.fuse)});
    if (!sign) continue;
    // G_U = diag(h)·dyᵀ·a·diag(ℓ) = (dy⊙h·gs)ᵀ·(a⊙ℓ) / gs, tokens as K;
    // (a⊙ℓ)ᵀ staged with the dh step, the GEMM beside b's
    st[kDh].push_back({"sign", {ops::cvt_t(ctx, s.a[p], &path.l, t.al_t, ntok, r, 1.0f, round32(r), t32)}});
    const GemmShape gu{.m = m, .n = r, .k = t32, .lda = t32, .oscale = inv, .accumulate = o.accumulate_sign_grads};
    st[kB].push_back(
        {"sign", gemm(ctx, t.dyh_t, t.al_t, GemmB::plane, *out[p].g_u, detail::path_gemm(ctx, paths, gu))});
    // G_V = diag(g)·xᵀ·b·diag(ℓ) = (x⊙g)ᵀ·(b⊙ℓ·gs) / gs
    const GemmShape gv{.m = n, .n = r, .k = t32, .lda = t32, .oscale = inv, .accumulate = o.accumulate_sign_grads};
    st[kGv].push_back(
        {"sign", gemm(ctx, t.xg_t, t.bl_t, GemmB::plane, *out[p].g_v, detail::path_gemm(ctx, paths, gv))});
  }
  return group;
}

// The backward: paths in groups of the shared lanes, each group's paths
// side by side.
void record_backward(Recorder& rec, Context& ctx, const BlrLayer& layer, BlrScratch& s, const Buffer& x,
                     const Buffer& dy, const Buffer& dx, std::uint32_t ntok, std::span<const BlrSignGrads> out,
                     const BlrBackward& o) {
  for (std::size_t first = 0; first < layer.paths.size(); first += s.shared->lanes.size()) {
    rec.parallel(backward_branches(ctx, layer, s, x, dy, dx, ntok, out, o, first));
  }
}

}  // namespace

void blr_backward(Recorder& rec, Context& ctx, const BlrLayer& layer, BlrScratch& s, const Buffer& x, const Buffer& dy,
                  const Buffer& dx, std::uint32_t ntok, const BlrBackward& options) {
  layer.check("blr_backward");
  record_backward(rec, ctx, layer, s, x, dy, dx, ntok, detail::own_sign_grads(layer), options);
}

void blr_backward(Recorder& rec, Context& ctx, const BlrLayer& layer, BlrScratch& s, const Buffer& x, const Buffer& dy,
                  const Buffer& dx, std::uint32_t ntok, std::span<const BlrSignGrads> sign_grads,
                  const BlrBackward& options) {
  const char* op = "blr_backward";
  layer.check(op);
  record_backward(rec, ctx, layer, s, x, dy, dx, ntok, detail::sign_destinations(op, layer, sign_grads, options),
                  options);
}

void blr_backward_side_by_side(Recorder& rec, Context& ctx, std::span<const BlrBackwardJob> jobs, std::uint32_t ntok,
                               const BlrBackward& options) {
  const char* op = "blr_backward_side_by_side";
  std::vector<std::vector<BlrSignGrads>> out;
  bool together = true;
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    const BlrBackwardJob& j = jobs[i];
    require(j.layer && j.scratch && j.x && j.dy && j.dx, "{}: job {} lacks a layer, scratch, x, dy or dx", op, i);
    j.layer->check(op);
    out.push_back(detail::sign_destinations(op, *j.layer, j.sign_grads, options));
    together = together && j.scratch->shared->lanes.size() >= j.layer->paths.size();
    for (std::size_t k = 0; k < i; ++k) {
      require(jobs[k].scratch->shared != j.scratch->shared && jobs[k].dx != j.dx,
              "{}: jobs {} and {} share transients or an output", op, k, i);
    }
  }
  if (!together) {  // a layer's paths take several groups: one layer after another
    for (std::size_t i = 0; i < jobs.size(); ++i) {
      const BlrBackwardJob& j = jobs[i];
      record_backward(rec, ctx, *j.layer, *j.scratch, *j.x, *j.dy, *j.dx, ntok, out[i], options);
    }
    return;
  }
  std::vector<Branch> all;
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    const BlrBackwardJob& j = jobs[i];
    std::vector<Branch> group = backward_branches(ctx, *j.layer, *j.scratch, *j.x, *j.dy, *j.dx, ntok, out[i], options, 0);
    all.insert(all.end(), std::make_move_iterator(group.begin()), std::make_move_iterator(group.end()));
  }
  rec.parallel(all);
}

}  // namespace vkblr
