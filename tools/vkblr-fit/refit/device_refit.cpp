// The device state of the GPU refit (device_refit.hpp): the paths, their
// factors, the products with the residual and the exact training loss.
// The steps are in refit_sign_steps.cpp (S_U, S_V) and
// refit_scale_steps.cpp (ℓ, g).
#include <algorithm>
#include <cmath>

#include "vkblr-fit/refit/device_refit_impl.hpp"
#include "vkblr/error.hpp"
#include "vkblr/ops/colsum.hpp"
#include "vkblr/ops/expand_f32.hpp"

namespace vkblr::fit {
namespace {

std::uint64_t round_up(std::uint64_t v, std::uint64_t to) { return (v + to - 1) / to * to; }

}  // namespace

DeviceRefit::DeviceRefit(Context& ctx, const DeviceMatrix& w, const DeviceMatrix& c, double w_c_w,
                         const LayerShape& shape, const std::vector<BlrPathInit>& paths,
                         const DeviceRefitOptions& options)
    : ctx_(ctx), w_(w), c_(c), w_c_w_(w_c_w), shape_(shape), options_(options) {
  check_layer_shape(shape, "GPU refit");
  check_path_sizes(shape, paths, "GPU refit");
  require(w.rows == shape.m && w.cols == shape.n, "GPU refit: W is {}×{}, the layer {}×{}", w.rows, w.cols, shape.m,
          shape.n);
  require(c.rows == shape.n && c.cols == shape.n, "GPU refit: C is {}×{}; want {}×{}", c.rows, c.cols, shape.n,
          shape.n);
  require(std::isfinite(w_c_w) && w_c_w > 0, "GPU refit: tr(W·C·Wᵀ) = {} (must be finite and > 0)", w_c_w);
  require(options.block_rows >= 1, "GPU refit: block_rows = 0");
  require(options.block_rounds >= 1, "GPU refit: block_rounds = 0");
  const std::uint32_t m = shape.m, n = shape.n, r = shape.rank;
  for (const BlrPathInit& init : paths) {
    Path p;
    p.bits_u = ctx.upload(init.bits_u, "fit.refit.bits_u");
    p.bits_v = ctx.upload(init.bits_v, "fit.refit.bits_v");
    p.h = ctx.upload(init.h, "fit.refit.h");
    p.l = ctx.upload(init.l, "fit.refit.l");
    p.g = ctx.upload(init.g, "fit.refit.g");
    p.l_host = init.l;
    p.a = device_matrix(ctx, m, r, "fit.refit.a");
    p.sg = device_matrix(ctx, n, r, "fit.refit.sg");
    p.cs = device_matrix(ctx, n, r, "fit.refit.cs");
    p.wcs = device_matrix(ctx, m, r, "fit.refit.wcs");
    paths_.push_back(std::move(p));
  }
  work_ = std::make_unique<Work>(ctx, shape, options);
  gather_c_blocks();
  Recorder rec(ctx);
  for (std::uint32_t p = 0; p < shape.paths; ++p) record_factors(rec, p);
  rec.run();
}

DeviceRefit::~DeviceRefit() = default;

DeviceRefit::Work::Work(Context& ctx, const LayerShape& shape, const DeviceRefitOptions& options) {
  const std::uint32_t m = shape.m, n = shape.n, r = shape.rank, words = r / 32;
  const std::uint32_t b = std::min(options.block_rows, n);
  block_rows = b;
  for (DeviceMatrix& each : mr) each = device_matrix(ctx, m, r, "fit.refit.mr");
  for (DeviceMatrix& each : nr) each = device_matrix(ctx, n, r, "fit.refit.nr");
  for (DeviceMatrix& each : rr) each = device_matrix(ctx, r, r, "fit.refit.rr");
  rr_small = device_matrix(ctx, r, r, "fit.refit.rr_small");
  ncra = device_matrix(ctx, n, r, "fit.refit.ncra");
  gram = device_matrix(ctx, n, n, "fit.refit.gram");
  c_diag = ctx.buffer(std::uint64_t{n} * 4, "fit.refit.c_diag");
  e = device_matrix(ctx, b, r, "fit.refit.e");
  dg = device_matrix(ctx, b, r, "fit.refit.dg");
  z = device_matrix(ctx, b, r, "fit.refit.z");
  dg_total = device_matrix(ctx, b, r, "fit.refit.dg_total");
  ones = ctx.upload(std::vector<float>(r, 1.0f), "fit.refit.ones");
  cross = device_matrix(ctx, b, b, "fit.refit.cross", std::uint64_t{b} * b + b);
  proposed = ctx.buffer(std::uint64_t{b} * words * 4, "fit.refit.proposed");
  dl = ctx.buffer(std::uint64_t{b} * 4, "fit.refit.dl");
  accept = ctx.host_buffer(std::uint64_t{b} * 4, "fit.refit.accept");
  col_mask = ctx.buffer(std::uint64_t{words} * 4, "fit.refit.col_mask");
  col_scale = ctx.buffer(std::uint64_t{r} * 4, "fit.refit.col_scale");
  rhs_l = ctx.buffer(std::uint64_t{r} * 4, "fit.refit.rhs_l");
  rhs_g = device_matrix(ctx, n, 1, "fit.refit.rhs_g");
  x = device_matrix(ctx, n, 1, "fit.refit.x");
  cg = CgWork(ctx, n);
  const std::uint64_t alignment = std::max<std::uint64_t>(ctx.caps().min_storage_buffer_offset_alignment, 4);
  loss_slot_bytes = round_up(std::uint64_t{r} * 4, alignment);
  const std::uint64_t terms = shape.paths + std::uint64_t{shape.paths} * (shape.paths + 1) / 2;
  loss_sums = ctx.buffer(terms * loss_slot_bytes, "fit.refit.loss_sums");
}

void DeviceRefit::gather_c_blocks() {
  const std::uint32_t n = shape_.n, b = work_->block_rows;
  // block k (rows k·b ..) packed at k·b·b: every block before it is full
  Buffer packed = ctx_.buffer(std::uint64_t{n} * b * 4, "fit.refit.c_blocks");
  Recorder rec(ctx_);
  for (std::uint32_t row0 = 0; row0 < n; row0 += b) {
    const std::uint32_t rows = std::min(b, n - row0);
    for (std::uint32_t i = 0; i < rows; ++i) {
      rec.copy(c_.buffer, packed, std::uint64_t{rows} * 4, (std::uint64_t{row0 + i} * n + row0) * 4,
               (std::uint64_t{row0} * b + std::uint64_t{i} * rows) * 4);
    }
  }
  rec.run();
  work_->c_blocks = packed.download<float>(std::uint64_t{n} * b);
  std::vector<float> diagonal(n);
  for (std::uint32_t row0 = 0; row0 < n; row0 += b) {
    const std::uint32_t rows = std::min(b, n - row0);
    for (std::uint32_t i = 0; i < rows; ++i) {
      diagonal[row0 + i] = work_->c_blocks[std::uint64_t{row0} * b + std::uint64_t{i} * rows + i];
    }
  }
  work_->c_diag.upload(diagonal);
}

void DeviceRefit::record_factors(Recorder& rec, std::uint32_t p) {
  Path& path = paths_[p];
  rec.add(ops::expand_f32(ctx_, path.bits_u, &path.h, &path.l, path.a.buffer, shape_.m, shape_.rank));
  rec.add(ops::expand_f32(ctx_, path.bits_v, &path.g, nullptr, path.sg.buffer, shape_.n, shape_.rank));
}

void DeviceRefit::ensure_products(std::uint32_t p) {
  Path& path = paths_[p];
  if (path.cs_current && path.wcs_current) return;
  Recorder rec(ctx_);
  if (!path.cs_current) rec.add(product(ctx_, c_, false, path.sg, false, path.cs));
  rec.add(product(ctx_, w_, false, path.cs, false, path.wcs));
  rec.run();
  path.cs_current = path.wcs_current = true;
}

void DeviceRefit::record_residual_product(Recorder& rec, std::uint32_t p, bool transpose, const DeviceMatrix& in,
                                          const DeviceMatrix& out, const DeviceMatrix* w_times_in) {
  if (w_times_in != nullptr) {
    rec.copy(w_times_in->buffer, out.buffer, out.elements() * 4);
  } else {
    rec.add(product(ctx_, w_, transpose, in, false, out));
  }
  DeviceMatrix& small = work_->rr_small;
  small.rows = shape_.rank;
  small.cols = in.cols;
  for (std::uint32_t q = 0; q < shape_.paths; ++q) {
    if (q == p) continue;
    // R·x: out −= A_q·(Sg_qᵀ·x); Rᵀ·y: out −= Sg_q·(A_qᵀ·y)
    const DeviceMatrix& near = transpose ? paths_[q].sg : paths_[q].a;
    const DeviceMatrix& far = transpose ? paths_[q].a : paths_[q].sg;
    rec.add(product(ctx_, far, true, in, false, small));
    rec.add(product(ctx_, near, false, small, false, out, -1.0f, true));
  }
}

double DeviceRefit::train_error() {
  for (std::uint32_t p = 0; p < shape_.paths; ++p) ensure_products(p);
  const std::uint32_t r = shape_.rank, paths = shape_.paths;
  Work& work = *work_;
  Recorder rec(ctx_);
  rec.fill(work.loss_sums, 0);
  std::uint64_t slot = 0;
  const auto sum_into = [&](const DeviceMatrix& a, const DeviceMatrix& b) {
    const Buffer out = work.loss_sums.view(slot++ * work.loss_slot_bytes, std::uint64_t{r} * 4);
    rec.add(ops::colsum_prod(ctx_, a.buffer, b.buffer, out, a.rows, a.cols));
  };
  // tr(A_pᵀ·W·C·Sg_p) = Σ A_p ⊙ WCS_p
  for (std::uint32_t p = 0; p < paths; ++p) sum_into(paths_[p].a, paths_[p].wcs);
  // tr((A_pᵀA_q)·(Sg_qᵀ·C·Sg_p)) = Σ (A_pᵀA_q) ⊙ (Sg_pᵀ·CS_q)
  for (std::uint32_t p = 0; p < paths; ++p) {
    for (std::uint32_t q = p; q < paths; ++q) {
      rec.add(product(ctx_, paths_[p].a, true, paths_[q].a, false, work.rr[0]));
      rec.add(product(ctx_, paths_[p].sg, true, paths_[q].cs, false, work.rr[1]));
      sum_into(work.rr[0], work.rr[1]);
    }
  }
  rec.run();
  const std::uint64_t stride = work.loss_slot_bytes / 4;
  const std::vector<float> sums = work.loss_sums.download<float>(slot * stride);
  const auto term = [&](std::uint64_t s) {
    double total = 0;
    for (std::uint32_t k = 0; k < r; ++k) total += sums[s * stride + k];
    return total;
  };
  double loss = w_c_w_;
  slot = 0;
  for (std::uint32_t p = 0; p < paths; ++p) loss -= 2 * term(slot++);
  for (std::uint32_t p = 0; p < paths; ++p) {
    for (std::uint32_t q = p; q < paths; ++q) loss += (q == p ? 1.0 : 2.0) * term(slot++);
  }
  return std::sqrt(std::max(loss, 0.0) / w_c_w_);
}

void DeviceRefit::save() {
  Recorder rec(ctx_);
  for (Path& p : paths_) {
    if (p.saved.empty()) {
      for (const Buffer* live : p.device_state()) p.saved.push_back(ctx_.buffer(live->size(), "fit.refit.saved"));
    }
    const auto live = p.device_state();
    for (std::size_t i = 0; i < live.size(); ++i) rec.copy(*live[i], p.saved[i]);
    p.saved_l = p.l_host;
  }
  rec.run();
}

void DeviceRefit::restore() {
  Recorder rec(ctx_);
  for (Path& p : paths_) {
    require(!p.saved.empty(), "GPU refit: restore() before save()");
    const auto live = p.device_state();
    for (std::size_t i = 0; i < live.size(); ++i) rec.copy(p.saved[i], *live[i]);
    p.l_host = p.saved_l;
    p.l.upload(p.l_host);
    p.cs_current = p.wcs_current = false;
  }
  for (std::uint32_t i = 0; i < paths_.size(); ++i) record_factors(rec, i);
  rec.run();
}

std::vector<BlrPathInit> DeviceRefit::paths() const {
  std::vector<BlrPathInit> out;
  for (const Path& p : paths_) {
    out.push_back({p.bits_u.download<std::uint32_t>(), p.bits_v.download<std::uint32_t>(), p.h.download<float>(),
                   p.l_host, p.g.download<float>()});
  }
  return out;
}

}  // namespace vkblr::fit
