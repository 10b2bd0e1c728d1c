#include "vkblr-fit/refit/gpu_refit.hpp"

#include <bit>

#include "vkblr-fit/init/dense_path.hpp"

namespace vkblr::fit {
namespace {

// Rescales one path's h, ℓ, g as balance_scales does (signs unchanged).
void balance(BlrPathInit& path) {
  DensePath scales;
  scales.h = Eigen::Map<const Eigen::VectorXf>(path.h.data(), Eigen::Index(path.h.size())).cast<double>();
  scales.l = Eigen::Map<const Eigen::VectorXf>(path.l.data(), Eigen::Index(path.l.size())).cast<double>();
  scales.g = Eigen::Map<const Eigen::VectorXf>(path.g.data(), Eigen::Index(path.g.size())).cast<double>();
  balance_scales(scales);
  for (std::size_t i = 0; i < path.h.size(); ++i) path.h[i] = static_cast<float>(scales.h(Eigen::Index(i)));
  for (std::size_t i = 0; i < path.l.size(); ++i) path.l[i] = static_cast<float>(scales.l(Eigen::Index(i)));
  for (std::size_t i = 0; i < path.g.size(); ++i) path.g[i] = static_cast<float>(scales.g(Eigen::Index(i)));
}

std::uint64_t differing_bits(const std::vector<std::uint32_t>& a, const std::vector<std::uint32_t>& b) {
  std::uint64_t count = 0;
  for (std::size_t i = 0; i < a.size(); ++i) count += static_cast<std::uint64_t>(std::popcount(a[i] ^ b[i]));
  return count;
}

}  // namespace

GpuRefitStats gpu_refit_paths(Context& ctx, const DeviceMatrix& w, const DeviceMatrix& c, double w_c_w,
                              const LayerShape& shape, std::vector<BlrPathInit>& paths,
                              const GpuRefitOptions& options) {
  DeviceRefit refit(ctx, w, c, w_c_w, shape, paths, options.steps);
  GpuRefitStats stats;
  if (options.sweeps == 0) return stats;
  stats.train_error.push_back(refit.train_error());
  for (std::uint32_t sweep = 0; sweep < options.sweeps; ++sweep) {
    refit.save();
    for (std::uint32_t p = 0; p < shape.paths; ++p) {
      refit.refit_u(p);
      refit.refit_v(p);
      refit.refit_l(p);
      refit.refit_g(p);
    }
    const double error = refit.train_error();
    stats.train_error.push_back(error);
    if (!(error <= stats.train_error[stats.sweeps_kept])) {
      refit.restore();
      break;
    }
    stats.sweeps_kept = sweep + 1;
  }
  std::vector<BlrPathInit> out = refit.paths();
  for (std::size_t p = 0; p < out.size(); ++p) {
    balance(out[p]);
    stats.sign_changes +=
        differing_bits(out[p].bits_u, paths[p].bits_u) + differing_bits(out[p].bits_v, paths[p].bits_v);
  }
  paths = std::move(out);
  return stats;
}

}  // namespace vkblr::fit
