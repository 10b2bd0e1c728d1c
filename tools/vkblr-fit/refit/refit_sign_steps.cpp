// The GPU refit's sign steps (device_refit.hpp; docs/sign-optimizer.md,
// "GPU refit"): S_U rows in parallel, S_V rows in blocks.
#include <algorithm>
#include <cstring>

#include "vkblr-fit/refit/block_choice.hpp"
#include "vkblr-fit/refit/device_refit_impl.hpp"
#include "vkblr/error.hpp"
#include "vkblr/ops/expand_f32.hpp"
#include "vkblr/ops/refit.hpp"
#include "vkblr/ops/scale.hpp"

namespace vkblr::fit {

// 1. S_U, h. With Bt = Sg·diag(ℓ) [n][r] (= the host's Bᵀ):
//    Q = Btᵀ·C·Bt = Btᵀ·(CS·diag(ℓ)), P = R·C·Bt = (R·CS)·diag(ℓ) (R·CS from
//    W·CS), QS = S_U·Q; then refit_u_rows.
void DeviceRefit::refit_u(std::uint32_t p) {
  ensure_products(p);
  Path& path = paths_[p];
  Work& work = *work_;
  const std::uint32_t m = shape_.m, n = shape_.n, r = shape_.rank;
  DeviceMatrix &bt = work.nr[0], &cbt = work.nr[1];
  DeviceMatrix& q = work.rr[0];
  DeviceMatrix &scratch = work.mr[0], &pm = work.mr[1], &qs = work.mr[2];
  Recorder rec(ctx_);
  rec.add(ops::scale_acc(ctx_, path.sg.buffer, path.l, bt.buffer, n, r, false));
  rec.add(ops::scale_acc(ctx_, path.cs.buffer, path.l, cbt.buffer, n, r, false));
  rec.add(product(ctx_, bt, true, cbt, false, q));
  record_residual_product(rec, p, false, path.cs, scratch, &path.wcs);
  rec.add(ops::scale_acc(ctx_, scratch.buffer, path.l, pm.buffer, m, r, false));
  rec.add(ops::expand_f32(ctx_, path.bits_u, nullptr, nullptr, scratch.buffer, m, r));
  rec.add(product(ctx_, scratch, false, q, false, qs));
  rec.add(ops::refit_u_rows(ctx_, pm.buffer, q.buffer, qs.buffer, path.bits_u, path.h, m, r));
  record_factors(rec, p);
  rec.run();
  if (work.ncra_path == p) work.ncra_path = -1;  // made with the old A
}

// 2. S_V. With QA = AᵀA and the half-gradient without its row factor,
//    Et/g = C·Fᵀ = CS·QA − C·Rᵀ·A [n][r]. Block by block: the block's rows of
//    Et/g, then rounds (run_v_block) that each run the block's descents side
//    by side, commit the rows the host keeps and bring the block's Et/g up
//    to date (+= C_BB·g·D·QA); after the block, CS += C[:, B]·g·D for every
//    row (the later blocks' half-gradient, and the ℓ step's C·Sg).
VStepStats DeviceRefit::refit_v(std::uint32_t p) {
  Path& path = paths_[p];
  Work& work = *work_;
  const std::uint32_t n = shape_.n, r = shape_.rank;
  DeviceMatrix& qa = work.rr[0];
  DeviceMatrix& ra = work.nr[0];
  Recorder rec(ctx_);
  if (!path.cs_current) {
    rec.add(product(ctx_, c_, false, path.sg, false, path.cs));
    path.cs_current = true;
  }
  rec.add(product(ctx_, path.a, true, path.a, false, qa));
  record_residual_product(rec, p, true, path.a, ra);
  rec.add(product(ctx_, c_, false, ra, false, work.ncra, -1.0f));
  work.ncra_path = p;
  VStepStats stats;
  for (std::uint32_t row0 = 0; row0 < n; row0 += work.block_rows) {
    const std::uint32_t rows = std::min(work.block_rows, n - row0);
    const MatrixBlock e = row_block(work.e, 0, rows), dg_total = row_block(work.dg_total, 0, rows);
    rec.copy(work.ncra.buffer, work.e.buffer, std::uint64_t{rows} * r * 4, std::uint64_t{row0} * r * 4, 0);
    rec.add(product(ctx_, row_block(path.cs, row0, rows), false, all_of(qa), false, e, 1.0f, true));
    rec.fill(work.dg_total.buffer, 0, 0, std::uint64_t{rows} * r * 4);
    bool changed = false;
    for (std::uint32_t round = 0; round < options_.block_rounds; ++round) {
      if (run_v_block(rec, p, row0, rows, stats) == 0) break;
      changed = true;
    }
    if (changed) rec.add(product(ctx_, row_block(c_, row0, rows), true, dg_total, false, all_of(path.cs), 1.0f, true));
  }
  record_factors(rec, p);
  rec.run();
  path.wcs_current = false;
  return stats;
}

std::uint32_t DeviceRefit::run_v_block(Recorder& rec, std::uint32_t p, std::uint32_t row0, std::uint32_t rows,
                                       VStepStats& stats) {
  Path& path = paths_[p];
  Work& work = *work_;
  const std::uint32_t n = shape_.n, r = shape_.rank;
  const DeviceMatrix& qa = work.rr[0];
  const ops::RefitBlock block{n, row0, rows};
  const MatrixBlock e = row_block(work.e, 0, rows), dg = row_block(work.dg, 0, rows), z = row_block(work.z, 0, rows);
  work.cross.rows = work.cross.cols = rows;
  rec.add(ops::refit_v_rows(ctx_, work.e.buffer, qa.buffer, work.c_diag, path.g, path.bits_v, block, r, work.proposed,
                            work.dg.buffer, work.dl));
  // cross terms g·D·QA·Dᵀ·g, then the rows' own ΔL after them
  rec.add(product(ctx_, dg, false, all_of(qa), false, z));
  rec.add(product(ctx_, z, false, dg, true, all_of(work.cross)));
  rec.copy(work.dl, work.cross.buffer, std::uint64_t{rows} * 4, 0, std::uint64_t{rows} * rows * 4);
  rec.run();
  const std::vector<float> values = work.cross.buffer.download<float>(std::uint64_t{rows} * rows + rows);

  // ΔL(S) terms: K_jj'·(D_j·QA·D_j'ᵀ) = C_jj'·(g_j·D_j·QA·g_j'·D_j'ᵀ)
  const float* c_block = work.c_blocks.data() + std::uint64_t{row0} * work.block_rows;
  std::vector<double> own(rows), cross(std::uint64_t{rows} * rows);
  for (std::uint32_t a = 0; a < rows; ++a) {
    own[a] = values[std::uint64_t{rows} * rows + a];
    for (std::uint32_t b = 0; b < rows; ++b) {
      const std::uint64_t at = std::uint64_t{a} * rows + b;
      cross[at] = double(c_block[at]) * values[at];
    }
  }
  const BlockChoice choice = choose_block_rows(own, cross);
  std::uint32_t changed = 0;
  for (const double v : own) changed += v != 0 ? 1 : 0;
  stats.rows_changed += choice.accepted;
  stats.rows_rejected += changed - choice.accepted;
  stats.predicted_delta += choice.delta;
  if (choice.accepted == 0) return 0;
  std::memcpy(work.accept.mapped(), choice.accept.data(), std::uint64_t{rows} * 4);
  work.accept.flush(0, std::uint64_t{rows} * 4);
  // commit; the block's half-gradient += C_BB·(g·D·QA); the block's total change += g·D
  rec.add(ops::refit_v_commit(ctx_, work.accept, work.proposed, path.bits_v, work.dg.buffer, work.z.buffer, block, r));
  rec.add(product(ctx_, block_of(c_, row0, rows, row0, rows), false, z, false, e, 1.0f, true));
  rec.add(ops::scale_acc(ctx_, work.dg.buffer, work.ones, work.dg_total.buffer, rows, r, true));
  return choice.accepted;
}

}  // namespace vkblr::fit
