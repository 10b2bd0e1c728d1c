#include "vkblr-fit/refit/device_cg.hpp"

#include "vkblr/error.hpp"
#include "vkblr/ops/refit.hpp"

namespace vkblr::fit {

CgWork::CgWork(Context& ctx, std::uint32_t n)
    : p(device_matrix(ctx, n, 1, "fit.cg.p")),
      q(device_matrix(ctx, n, 1, "fit.cg.q")),
      state(ctx.buffer(ops::refit_cg_state_floats(n) * 4, "fit.cg.state")) {}

void record_cg(Context& ctx, Recorder& rec, const DeviceMatrix& gram, const DeviceMatrix& rhs, const DeviceMatrix& x,
               CgWork& work, std::uint32_t iterations) {
  const std::uint32_t n = gram.rows;
  require(gram.cols == n && rhs.rows == n && rhs.cols == 1 && x.rows == n && x.cols == 1 && work.p.rows == n &&
              work.q.rows == n,
          "conjugate gradients: G {}×{}, b {}×{}, x {}×{}, work for {}: shapes do not match", gram.rows, gram.cols,
          rhs.rows, rhs.cols, x.rows, x.cols, work.p.rows);
  rec.add(ops::refit_matvec(ctx, gram.buffer, x.buffer, work.q.buffer, n));
  rec.add(ops::refit_cg_begin(ctx, gram.buffer, rhs.buffer, x.buffer, work.p.buffer, work.q.buffer, work.state, n));
  for (std::uint32_t i = 0; i < iterations; ++i) {
    rec.add(ops::refit_matvec(ctx, gram.buffer, work.p.buffer, work.q.buffer, n));
    rec.add(ops::refit_cg_step(ctx, gram.buffer, rhs.buffer, x.buffer, work.p.buffer, work.q.buffer, work.state, n));
  }
}

}  // namespace vkblr::fit
