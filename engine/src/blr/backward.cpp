// blr_backward: input and scale gradients with fused column reductions, and
// the sign gradients in the same batch.
#include <cmath>

#include "../ops/op_util.hpp"
#include "vkblr/blr.hpp"
#include "vkblr/gemm.hpp"
#include "vkblr/ops/colsum.hpp"
#include "vkblr/ops/cvt.hpp"
#include "vkblr/ops/scale.hpp"

namespace vkblr {
namespace {

std::uint32_t round32(std::uint32_t v) { return (v + 31) / 32 * 32; }

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

void reduce(Recorder& rec, Context& ctx, const Buffer& a, const Buffer& b, const Buffer& sum, std::uint32_t ntok,
            std::uint32_t k, const ops::Fuse& fuse, const Transposed* transposed, bool allow_fusion) {
  if (allow_fusion && transposed && ops::colsum_fused_t_fits(ntok, k)) {
    rec.add(ops::colsum_fused_t(ctx, a, b, sum, ntok, k, fuse, *transposed->dst));
    return;
  }
  if (allow_fusion) {
    rec.add(ops::colsum_fused(ctx, a, b, sum, ntok, k, fuse));
  } else {
    rec.add(ops::colsum_prod(ctx, a, b, sum, ntok, k));
    switch (fuse.kind) {
      case ops::Fuse::Kind::cvt_a:
        rec.add(ops::cvt_col(ctx, a, *fuse.col, *fuse.dst, ntok, k, fuse.scale));
        break;
      case ops::Fuse::Kind::cvt_b:
        rec.add(ops::cvt_col(ctx, b, *fuse.col, *fuse.dst, ntok, k, fuse.scale));
        break;
      case ops::Fuse::Kind::scale_b:
        rec.add(ops::scale_acc(ctx, b, *fuse.col, *fuse.dst, ntok, k, fuse.accumulate));
        break;
    }
  }
  if (transposed) {
    rec.add(ops::cvt_t(ctx, *transposed->src, transposed->col, *transposed->dst, ntok, k, transposed->scale,
                       round32(k), round32(ntok)));
  }
}

}  // namespace

void blr_backward(Recorder& rec, Context& ctx, const BlrLayer& layer, BlrScratch& s, const Buffer& x, const Buffer& dy,
                  const Buffer& dx, std::uint32_t ntok, const BlrBackward& o) {
  const char* op = "blr_backward";
  layer.check(op);
  detail::dim(op, "ntok", ntok);
  require(ntok <= s.ntok, "{}: ntok = {} exceeds the scratch's {}", op, ntok, s.ntok);
  require(s.a.size() == layer.paths.size(), "{}: scratch made for {} paths, the layer has {}", op, s.a.size(),
          layer.paths.size());
  int exponent = 0;
  require(o.gscale > 0 && std::isfinite(o.gscale) && std::frexp(o.gscale, &exponent) == 0.5f,
          "{}: gscale = {} is not a power of two", op, o.gscale);
  const auto [m, n, r] = std::array{layer.m, layer.n, layer.r};
  const std::uint32_t t32 = round32(ntok);
  const float gs = o.gscale, inv = 1.0f / o.gscale;
  BlrShared& sh = *s.shared;

  for (std::size_t p = 0; p < layer.paths.size(); ++p) {
    const BlrPath& path = layer.paths[p];
    const bool sign = o.sign_grads && path.g_u && path.g_v;
    // dh += Σ dy⊙c; xh = f16(dy⊙h·gs); (dy⊙h·gs)ᵀ
    const Transposed dyh{&sh.dyh_t, &dy, &path.h, gs};
    reduce(rec, ctx, dy, s.c[p], path.dh, ntok, m, ops::Fuse::cvt_a(path.h, sh.xh, gs), sign ? &dyh : nullptr,
           o.fuse);
    // b = (dy⊙h)·S_U: B[r][m] = S_Uᵀ, the bitmap [m][r/32] read transposed
    rec.add(gemm(ctx, sh.xh, path.bits_u, GemmB::bits_t, sh.t2, {ntok, r, m, 0, 0, 0, inv, false}));
    // dℓ += Σ a⊙b; xh = f16(b⊙ℓ·gs); (b⊙ℓ·gs)ᵀ
    const Transposed bl{&sh.bl_t, &sh.t2, &path.l, gs};
    reduce(rec, ctx, s.a[p], sh.t2, path.dl, ntok, r, ops::Fuse::cvt_b(path.l, sh.xh, gs), sign ? &bl : nullptr,
           o.fuse);
    // dx' = (b⊙ℓ)·S_Vᵀ: B[n][r] = S_V, the bitmap's own rows
    rec.add(gemm(ctx, sh.xh, path.bits_v, GemmB::bits_n, sh.t1, {ntok, n, r, 0, 0, 0, inv, false}));
    // dg += Σ x⊙dx'; dx (+)= g⊙dx'; (x⊙g)ᵀ
    const Transposed xg{&sh.xg_t, &x, &path.g, 1.0f};
    reduce(rec, ctx, x, sh.t1, path.dg, ntok, n, ops::Fuse::scale_b(path.g, dx, p > 0, 1.0f), sign ? &xg : nullptr,
           o.fuse);
    if (!sign) continue;
    // G_U = diag(h)·dyᵀ·a·diag(ℓ) = (dy⊙h·gs)ᵀ·(a⊙ℓ) / gs, tokens as K
    rec.tag("sign");
    rec.add(ops::cvt_t(ctx, s.a[p], &path.l, sh.al_t, ntok, r, 1.0f, round32(r), t32));
    rec.add(gemm(ctx, sh.dyh_t, sh.al_t, GemmB::plane, path.g_u, {m, r, t32, t32, 0, 0, inv, o.accumulate_sign_grads}));
    // G_V = diag(g)·xᵀ·b·diag(ℓ) = (x⊙g)ᵀ·(b⊙ℓ·gs) / gs
    rec.add(gemm(ctx, sh.xg_t, sh.bl_t, GemmB::plane, path.g_v, {n, r, t32, t32, 0, 0, inv, o.accumulate_sign_grads}));
    rec.tag("");
  }
}

}  // namespace vkblr
