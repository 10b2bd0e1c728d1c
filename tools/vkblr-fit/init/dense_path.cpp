#include "vkblr-fit/init/dense_path.hpp"

#include <cmath>
#include <span>
#include <vector>

#include "vkblr/io/sign_bits.hpp"
#include "vkblr-fit/io_names.hpp"

namespace vkblr::fit {
namespace {

std::vector<std::uint32_t> pack(const Eigen::MatrixXd& signs) {
  const Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> rows = signs;
  return pack_signs(std::span<const double>(rows.data(), static_cast<std::size_t>(rows.size())),
                    static_cast<std::size_t>(rows.rows()), static_cast<std::size_t>(rows.cols()));
}

std::vector<float> to_f32(const Eigen::VectorXd& v) {
  std::vector<float> out(static_cast<std::size_t>(v.size()));
  for (Eigen::Index i = 0; i < v.size(); ++i) out[static_cast<std::size_t>(i)] = static_cast<float>(v(i));
  return out;
}

}  // namespace

Eigen::MatrixXd DensePath::weight() const {
  return h.asDiagonal() * su * l.asDiagonal() * sv.transpose() * g.asDiagonal();
}

DensePath unpack_path(const BlrPathInit& p, const LayerShape& s) {
  DensePath d;
  d.su.resize(s.m, s.rank);
  d.sv.resize(s.n, s.rank);
  for (std::size_t i = 0; i < s.m; ++i) {
    for (std::size_t k = 0; k < s.rank; ++k) d.su(i, k) = sign_at(p.bits_u, s.rank, i, k);
  }
  for (std::size_t j = 0; j < s.n; ++j) {
    for (std::size_t k = 0; k < s.rank; ++k) d.sv(j, k) = sign_at(p.bits_v, s.rank, j, k);
  }
  d.h = Eigen::Map<const Eigen::VectorXf>(p.h.data(), s.m).cast<double>();
  d.l = Eigen::Map<const Eigen::VectorXf>(p.l.data(), s.rank).cast<double>();
  d.g = Eigen::Map<const Eigen::VectorXf>(p.g.data(), s.n).cast<double>();
  return d;
}

BlrPathInit pack_path(const DensePath& p) { return {pack(p.su), pack(p.sv), to_f32(p.h), to_f32(p.l), to_f32(p.g)}; }

void balance_scales(DensePath& p) {
  const double rh = p.h.norm() / std::sqrt(double(p.h.size())), rl = p.l.norm() / std::sqrt(double(p.l.size())),
               rg = p.g.norm() / std::sqrt(double(p.g.size()));
  if (!(rh > 0 && rl > 0 && rg > 0)) return;
  const double common = std::cbrt(rh * rl * rg);
  p.h *= common / rh;
  p.l *= common / rl;
  p.g *= common / rg;
}

}  // namespace vkblr::fit
