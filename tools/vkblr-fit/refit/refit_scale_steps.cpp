// The GPU refit's scale steps (device_refit.hpp; docs/sign-optimizer.md,
// "GPU refit"): ℓ by its exact least squares on the host (r×r), g by
// conjugate gradients on the device (n×n).
#include <cmath>

#include "vkblr-fit/init/host_lapack.hpp"
#include "vkblr-fit/refit/device_refit_impl.hpp"
#include "vkblr/error.hpp"
#include "vkblr/ops/colsum.hpp"
#include "vkblr/ops/expand_f32.hpp"
#include "vkblr/ops/refit.hpp"

namespace vkblr::fit {
namespace {

constexpr double kRidge = 1e-9;  // relative ridge of the ℓ solve, as the host refit's

}  // namespace

// 3a. ℓ: Gram (S̃_UᵀS̃_U) ⊙ (Sgᵀ·C·Sg) [r][r] with S̃_U = diag(h)·S_U,
//     rhs_k = Σ_i S̃_U[i][k]·(R·CS)[i][k] on the device; solved on the host. A negative ℓ_k
//     flips S_V's column k.
void DeviceRefit::refit_l(std::uint32_t p) {
  Path& path = paths_[p];
  Work& work = *work_;
  const std::uint32_t m = shape_.m, r = shape_.rank;
  DeviceMatrix &su = work.mr[0], &rcs = work.mr[1];
  DeviceMatrix &gram_u = work.rr[0], &gram_v = work.rr[1];
  Recorder rec(ctx_);
  if (!path.cs_current) {
    rec.add(product(ctx_, c_, false, path.sg, false, path.cs));
    path.cs_current = true;
    path.wcs_current = false;
  }
  rec.add(ops::expand_f32(ctx_, path.bits_u, &path.h, nullptr, su.buffer, m, r));
  rec.add(product(ctx_, su, true, su, false, gram_u));
  rec.add(product(ctx_, path.sg, true, path.cs, false, gram_v));
  rec.add(ops::refit_hadamard(ctx_, gram_u.buffer, gram_v.buffer, std::uint64_t{r} * r));
  record_residual_product(rec, p, false, path.cs, rcs, path.wcs_current ? &path.wcs : nullptr);
  rec.fill(work.rhs_l, 0);
  rec.add(ops::colsum_prod(ctx_, su.buffer, rcs.buffer, work.rhs_l, m, r));
  rec.run();
  std::vector<double> gram = download_matrix(gram_u);
  const std::vector<float> rhs_f = work.rhs_l.download<float>(r);
  const std::vector<double> solution = solve_ridged(std::move(gram), {rhs_f.begin(), rhs_f.end()}, r, kRidge);

  path.g_rhs_scale.assign(r, -1.0f);
  path.recompute_ncra = false;
  if (solution.empty()) return;  // no finite solution: ℓ stays
  std::vector<std::uint32_t> mask(r / 32, 0);
  bool flips = false;
  for (std::uint32_t k = 0; k < r; ++k) {
    const double v = solution[k];
    if (v == 0) continue;
    const float old = path.l_host[k];
    const float now = static_cast<float>(std::abs(v));
    if (v < 0) {
      mask[k / 32] |= 1u << (k % 32);
      flips = true;
    }
    if (old == 0) {
      path.recompute_ncra = true;
    } else {
      path.g_rhs_scale[k] = static_cast<float>(-double(now) / double(old));
    }
    path.l_host[k] = now;
  }
  path.l.upload(path.l_host);
  if (flips) {
    work.col_mask.upload(mask);
    rec.add(ops::refit_flip_columns(ctx_, work.col_mask, path.bits_v, shape_.n, r));
    path.cs_current = path.wcs_current = false;
  }
  record_factors(rec, p);
  rec.run();
}

// 3b. g: Gram (FᵀF) ⊙ C [n][n] with FᵀF = S_V·(AᵀA)·S_Vᵀ,
//     rhs_j = Σ_k S_V[j][k]·(C·Rᵀ·A)[j][k] (the S_V step's −C·Rᵀ·A with the
//     ℓ step's column factors); CG from the current g. A negative g_j flips
//     S_V's row j.
void DeviceRefit::refit_g(std::uint32_t p) {
  Path& path = paths_[p];
  Work& work = *work_;
  const std::uint32_t n = shape_.n, r = shape_.rank;
  DeviceMatrix &signs = work.nr[0], &t = work.nr[1];
  DeviceMatrix& ga = work.rr[0];
  Recorder rec(ctx_);
  if (path.recompute_ncra || work.ncra_path != p || path.g_rhs_scale.size() != r) {
    record_residual_product(rec, p, true, path.a, work.nr[0]);
    rec.add(product(ctx_, c_, false, work.nr[0], false, work.ncra, -1.0f));
    path.g_rhs_scale.assign(r, -1.0f);
    path.recompute_ncra = false;
  }
  work.col_scale.upload(path.g_rhs_scale);
  rec.add(ops::refit_sign_dot(ctx_, path.bits_v, work.ncra.buffer, work.col_scale, work.rhs_g.buffer, n, r));
  rec.add(product(ctx_, path.a, true, path.a, false, ga));
  rec.add(ops::expand_f32(ctx_, path.bits_v, nullptr, nullptr, signs.buffer, n, r));
  rec.add(product(ctx_, signs, false, ga, false, t));
  rec.add(product(ctx_, t, false, signs, true, work.gram));
  rec.add(ops::refit_hadamard(ctx_, work.gram.buffer, c_.buffer, std::uint64_t{n} * n));
  rec.copy(path.g, work.x.buffer, std::uint64_t{n} * 4);
  record_cg(ctx_, rec, work.gram, work.rhs_g, work.x, work.cg, options_.cg_iterations);
  rec.add(ops::refit_row_scales(ctx_, work.x.buffer, path.bits_v, path.g, n, r));
  record_factors(rec, p);
  rec.run();
  path.cs_current = path.wcs_current = false;
  path.g_rhs_scale.clear();
  work.ncra_path = -1;
}

}  // namespace vkblr::fit
