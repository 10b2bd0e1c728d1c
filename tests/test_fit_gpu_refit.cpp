// vkblr-fit's GPU refit: its kernels against f64 host references of the
// host refit's steps (refit.cpp) on real layers, the host choice of an S_V
// block's rows, conjugate gradients, and the whole refit against the host
// refit (refit.hpp) with the exact f64 training error after every sweep.
#include <algorithm>
#include <bit>
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_floating_point.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <string>

#include "support/gpu.hpp"
#include "support/host.hpp"
#include "vkblr-fit/init/dual_svid.hpp"
#include "vkblr-fit/init/gpu_dual_svid.hpp"
#include "vkblr-fit/init/host_lapack.hpp"
#include "vkblr-fit/refit/refit.hpp"
#include "vkblr-fit/refit/block_choice.hpp"
#include "vkblr-fit/refit/device_cg.hpp"
#include "vkblr-fit/refit/device_refit.hpp"
#include "vkblr-fit/refit/gpu_refit.hpp"
#include "vkblr/io/sign_bits.hpp"
#include "vkblr-fit/io_names.hpp"
#include "vkblr-fit/io/synthetic.hpp"
#include "vkblr/ops/colsum.hpp"
#include "vkblr/ops/random.hpp"
#include "vkblr/ops/refit.hpp"
#include "vkblr/ops/scale.hpp"
#include "vkblr/recorder.hpp"

using namespace vkblr;
using namespace vkblr::fit;
using Catch::Matchers::ContainsSubstring;
using Catch::Matchers::WithinRel;

namespace {

constexpr int kMaxPasses = 8;  // coordinate-descent passes over a row, as the host refit's

// ---- f64 host algebra of the references --------------------------------

MatrixF64 matmul(const MatrixF64& a, const MatrixF64& b) {
  MatrixF64 out(a.rows, b.cols);
  for (std::size_t i = 0; i < a.rows; ++i) {
    for (std::size_t k = 0; k < a.cols; ++k) {
      const double v = a(i, k);
      for (std::size_t j = 0; j < b.cols; ++j) out(i, j) += v * b(k, j);
    }
  }
  return out;
}

MatrixF64 transpose(const MatrixF64& a) {
  MatrixF64 out(a.cols, a.rows);
  for (std::size_t i = 0; i < a.rows; ++i) {
    for (std::size_t j = 0; j < a.cols; ++j) out(j, i) = a(i, j);
  }
  return out;
}

// The values as the device holds them: rounded to f32.
std::vector<float> narrow(const MatrixF64& a) { return {a.values.begin(), a.values.end()}; }
MatrixF64 through_f32(const MatrixF64& a) {
  MatrixF64 out = a;
  for (double& v : out.values) v = static_cast<float>(v);
  return out;
}

// C = XᵀX/T.
MatrixF64 second_moment(const Matrix& x) {
  MatrixF64 c(x.cols, x.cols);
  for (std::size_t t = 0; t < x.rows; ++t) {
    for (std::size_t i = 0; i < x.cols; ++i) {
      const double xi = x(t, i);
      for (std::size_t j = 0; j < x.cols; ++j) c(i, j) += xi * x(t, j);
    }
  }
  for (double& v : c.values) v /= static_cast<double>(x.rows);
  return c;
}

MatrixF64 signs(const std::vector<std::uint32_t>& bits, std::size_t rows, std::size_t r) {
  MatrixF64 s(rows, r);
  for (std::size_t i = 0; i < rows; ++i) {
    for (std::size_t k = 0; k < r; ++k) s(i, k) = sign_at(bits, r, i, k);
  }
  return s;
}

// diag(row)·a·diag(col) (either may be empty: 1).
MatrixF64 scaled(MatrixF64 a, const std::vector<float>& row, const std::vector<float>& col) {
  for (std::size_t i = 0; i < a.rows; ++i) {
    for (std::size_t j = 0; j < a.cols; ++j) {
      a(i, j) *= (row.empty() ? 1.0 : row[i]) * (col.empty() ? 1.0 : col[j]);
    }
  }
  return a;
}

// A layer to refit: W, training tokens X, C, and Dual-SVID paths.
struct RefitCase {
  LayerShape shape;
  Matrix w, x;
  MatrixF64 c;
  std::vector<BlrPathInit> paths;
};

RefitCase make_case(const LayerShape& shape, double activation_decay, std::uint64_t seed) {
  RefitCase out{shape,
                synthetic_weight({.m = shape.m, .n = shape.n, .seed = seed}),
                synthetic_activations(
                    {.tokens = 4 * shape.n, .n = shape.n, .spectrum_decay = activation_decay, .seed = seed + 1}),
                {},
                {}};
  out.c = second_moment(out.x);
  out.paths = dual_svid_init(out.w, shape);
  return out;
}

// R = W − Σ_{q≠p} Ŵ_q.
MatrixF64 residual(const RefitCase& rc, std::uint32_t p) {
  MatrixF64 r(rc.shape.m, rc.shape.n);
  for (std::size_t i = 0; i < r.values.size(); ++i) r.values[i] = rc.w.values[i];
  for (std::uint32_t q = 0; q < rc.shape.paths; ++q) {
    if (q == p) continue;
    const LayerShape one_path{rc.shape.m, rc.shape.n, rc.shape.rank, 1};
    const MatrixF64 wq = reconstruct_weight(one_path, std::span(&rc.paths[q], 1));
    for (std::size_t i = 0; i < r.values.size(); ++i) r.values[i] -= wq.values[i];
  }
  return r;
}

// ---- f64 references of the row kernels ----------------------------------

// How close the closest decision of a reference came to 0, relative to the
// terms it compares (a case is fit for an exact comparison when this is
// far above f32 rounding).
struct Margin {
  double worst = std::numeric_limits<double>::infinity();
  void see(double delta, double scale) { worst = std::min(worst, std::abs(delta) / std::max(scale, 1e-300)); }
};

// The host refit's refit_u on one row (refit.cpp): signs s [r] and h in place.
void reference_u_row(std::vector<double>& s, double& h, const double* p, const MatrixF64& q, const double* qs_in,
                     Margin& margin) {
  const std::size_t r = s.size();
  std::vector<double> qs(qs_in, qs_in + r);
  const double hi = h;
  for (int pass = 0; pass < kMaxPasses; ++pass) {
    bool changed = false;
    for (std::size_t k = 0; k < r; ++k) {
      const double a = hi * hi * (q(k, k) - s[k] * qs[k]), b = hi * s[k] * p[k];
      margin.see(a + b, std::abs(hi * hi * q(k, k)) + std::abs(hi * hi * s[k] * qs[k]) + std::abs(b));
      if (a + b < 0) {
        s[k] = -s[k];
        for (std::size_t j = 0; j < r; ++j) qs[j] += 2 * s[k] * q(k, j);
        changed = true;
      }
    }
    if (!changed) break;
  }
  double num = 0, den = 0;
  for (std::size_t k = 0; k < r; ++k) {
    num += s[k] * p[k];
    den += s[k] * qs[k];
  }
  if (den > 0) {
    double ratio = num / den;
    if (ratio < 0) {
      for (double& v : s) v = -v;
      ratio = -ratio;
    }
    if (ratio > 0) h = ratio;
  }
}

// The host refit's refit_v on one row j, alone against e = g_j·(C·Fᵀ)[j]:
// signs s in place; returns the row's ΔL.
double reference_v_row(std::vector<double>& s, std::vector<double> e, double kjj, const MatrixF64& qa, Margin& margin) {
  const std::size_t r = s.size();
  double total = 0;
  for (int pass = 0; pass < kMaxPasses; ++pass) {
    bool changed = false;
    for (std::size_t k = 0; k < r; ++k) {
      const double delta = -4 * s[k] * e[k] + 4 * qa(k, k) * kjj;
      margin.see(delta, std::abs(4 * e[k]) + std::abs(4 * qa(k, k) * kjj));
      if (delta < 0) {
        const double step = -2 * s[k];
        s[k] = -s[k];
        for (std::size_t c = 0; c < r; ++c) e[c] += step * kjj * qa(k, c);
        total += delta;
        changed = true;
      }
    }
    if (!changed) break;
  }
  return total;
}

// ---- the row kernels ------------------------------------------------------

// The rows of a case are compared exactly when every decision of the
// reference on them was this far from a tie (relative to the terms it
// compared): closer than that, f32 and f64 may honestly disagree.
constexpr double kDecisive = 2e-5;

struct UCase {
  RefitCase rc;
  MatrixF64 q, pm, qs;  // as uploaded (f32 values)
  MatrixF64 want_s;
  std::vector<double> want_h;
  std::vector<double> row_margin;  // [m]
};

// The host refit's S_U step of path 0, row by row, on the case's P, Q, QS.
UCase u_case(const LayerShape& shape, std::uint64_t seed) {
  UCase u{make_case(shape, 1.0, seed), {}, {}, {}, {}, {}, {}};
  const std::uint32_t m = shape.m, n = shape.n, r = shape.rank;
  const BlrPathInit& path = u.rc.paths[0];
  const MatrixF64 bt = scaled(signs(path.bits_v, n, r), path.g, path.l);  // diag(g)·S_V·diag(ℓ)
  const MatrixF64 cbt = matmul(u.rc.c, bt);
  u.q = through_f32(matmul(transpose(bt), cbt));
  u.pm = through_f32(matmul(residual(u.rc, 0), cbt));
  u.qs = through_f32(matmul(signs(path.bits_u, m, r), u.q));
  u.want_s = signs(path.bits_u, m, r);
  u.want_h.assign(path.h.begin(), path.h.end());
  for (std::uint32_t i = 0; i < m; ++i) {
    std::vector<double> row(u.want_s.values.begin() + i * r, u.want_s.values.begin() + (i + 1) * r);
    Margin margin;
    reference_u_row(row, u.want_h[i], &u.pm.values[i * r], u.q, &u.qs.values[i * r], margin);
    std::copy(row.begin(), row.end(), u.want_s.values.begin() + i * r);
    u.row_margin.push_back(margin.worst);
  }
  return u;
}

struct VCase {
  RefitCase rc;
  MatrixF64 qa, cft;  // as uploaded (f32 values)
  std::vector<float> c_diag;
  std::uint32_t row0 = 0, rows = 0;
  MatrixF64 want_s;                // [rows][r]
  std::vector<double> want_own;    // [rows]
  std::vector<double> row_margin;  // [rows]
};

// The host refit's S_V descent of each row of a block of path 0, alone
// against the same half-gradient.
VCase v_case(const LayerShape& shape, std::uint64_t seed) {
  VCase v{make_case(shape, 1.0, seed), {}, {}, {}, 8, shape.n - 13, {}, {}, {}};
  const std::uint32_t m = shape.m, n = shape.n, r = shape.rank;
  const BlrPathInit& path = v.rc.paths[0];
  const MatrixF64 a = scaled(signs(path.bits_u, m, r), path.h, path.l);
  v.qa = through_f32(matmul(transpose(a), a));
  MatrixF64 ft = matmul(scaled(signs(path.bits_v, n, r), path.g, {}), v.qa);  // Fᵀ = Sg·QA − Rᵀ·A
  const MatrixF64 ra = matmul(transpose(residual(v.rc, 0)), a);
  for (std::size_t i = 0; i < ft.values.size(); ++i) ft.values[i] -= ra.values[i];
  v.cft = through_f32(matmul(v.rc.c, ft));
  v.c_diag.resize(n);
  for (std::uint32_t j = 0; j < n; ++j) v.c_diag[j] = static_cast<float>(v.rc.c(j, j));
  v.want_own.resize(v.rows);
  v.want_s = MatrixF64(v.rows, r);
  for (std::uint32_t jl = 0; jl < v.rows; ++jl) {
    const std::uint32_t j = v.row0 + jl;
    std::vector<double> row(r), e(r);
    for (std::uint32_t k = 0; k < r; ++k) {
      row[k] = sign_at(path.bits_v, r, j, k);
      e[k] = static_cast<double>(path.g[j]) * v.cft(j, k);
    }
    const double kjj = double(path.g[j]) * double(path.g[j]) * double(v.c_diag[j]);
    Margin margin;
    v.want_own[jl] = reference_v_row(row, e, kjj, v.qa, margin);
    std::copy(row.begin(), row.end(), v.want_s.values.begin() + jl * r);
    v.row_margin.push_back(margin.worst);
  }
  return v;
}

// The rows of a case fit for an exact comparison; at least 90 % of them.
std::vector<std::uint32_t> decisive_rows(const std::vector<double>& row_margin) {
  std::vector<std::uint32_t> rows;
  for (std::uint32_t i = 0; i < row_margin.size(); ++i) {
    if (row_margin[i] > kDecisive) rows.push_back(i);
  }
  INFO(rows.size() << " of " << row_margin.size() << " rows have no decision near a tie");
  CHECK(rows.size() >= row_margin.size() * 9 / 10);
  return rows;
}

}  // namespace

// ---- the row kernels ------------------------------------------------------

GPU_TEST("refit_u_rows makes the host refit's S_U decisions and row scales", "[fit][gpu_refit]") {
  for (const LayerShape shape : {LayerShape{128, 96, 32, 2}, LayerShape{256, 192, 64, 2}}) {
    const UCase u = u_case(shape, 21 + shape.rank);
    const std::uint32_t m = shape.m, r = shape.rank, words = r / 32;
    const BlrPathInit& path = u.rc.paths[0];
    Buffer p_d = ctx.upload(narrow(u.pm)), q_d = ctx.upload(narrow(u.q)), qs_d = ctx.upload(narrow(u.qs));
    Buffer bits = ctx.upload(path.bits_u), h = ctx.upload(path.h);
    Recorder rec(ctx);
    rec.add(ops::refit_u_rows(ctx, p_d, q_d, qs_d, bits, h, m, r));
    rec.run();
    const std::vector<std::uint32_t> got_bits = bits.download<std::uint32_t>();
    const std::vector<float> got_h = h.download<float>();
    const std::vector<std::uint32_t> want_bits = pack_signs(std::span<const double>(u.want_s.values), m, r);
    std::size_t flipped = 0, wrong_rows = 0;
    double worst_h = 0;
    for (const std::uint32_t i : decisive_rows(u.row_margin)) {
      for (std::uint32_t w = 0; w < words; ++w) {
        flipped += std::popcount(want_bits[i * words + w] ^ path.bits_u[i * words + w]);
        wrong_rows += got_bits[i * words + w] != want_bits[i * words + w] ? 1 : 0;
      }
      worst_h = std::max(worst_h, std::abs(got_h[i] - u.want_h[i]) / u.want_h[i]);
    }
    INFO(m << "x" << shape.n << " r " << r << ": signs flipped by the reference " << flipped);
    CHECK(flipped > m);
    CHECK(wrong_rows == 0);
    CHECK(worst_h < 1e-5);
  }
}

GPU_TEST("refit_v_rows runs each row of a block as the host refit runs it alone", "[fit][gpu_refit]") {
  for (const LayerShape shape : {LayerShape{128, 96, 32, 2}, LayerShape{256, 192, 64, 2}}) {
    const VCase v = v_case(shape, 31 + shape.rank);
    const std::uint32_t n = shape.n, r = shape.rank, words = r / 32;
    const std::uint32_t row0 = v.row0, rows = v.rows;
    const BlrPathInit& path = v.rc.paths[0];
    const std::vector<float> cft_f32 = narrow(v.cft);
    const std::vector<float> e_block(cft_f32.begin() + row0 * r, cft_f32.begin() + (row0 + rows) * r);
    Buffer e_d = ctx.upload(e_block), qa_d = ctx.upload(narrow(v.qa)), c_diag_d = ctx.upload(v.c_diag);
    Buffer g_d = ctx.upload(path.g), bits = ctx.upload(path.bits_v);
    Buffer proposed = ctx.buffer(std::uint64_t{rows} * words * 4), dg = ctx.buffer(std::uint64_t{rows} * r * 4),
           dl = ctx.buffer(std::uint64_t{rows} * 4);
    for (Buffer* b : {&proposed, &dg, &dl}) b->fill(vkt::kPoison32);
    Recorder rec(ctx);
    rec.add(ops::refit_v_rows(ctx, e_d, qa_d, c_diag_d, g_d, bits, {n, row0, rows}, r, proposed, dg, dl));
    rec.run();
    const std::vector<std::uint32_t> got_bits = proposed.download<std::uint32_t>();
    const std::vector<float> got_dg = dg.download<float>(), got_dl = dl.download<float>();
    const std::vector<std::uint32_t> want_bits = pack_signs(std::span<const double>(v.want_s.values), rows, r);
    CHECK(bits.download<std::uint32_t>() == path.bits_v);  // read only
    std::size_t changed_rows = 0, wrong_words = 0, dg_mismatch = 0;
    double own_scale = 0, own_error = 0;
    for (const std::uint32_t jl : decisive_rows(v.row_margin)) {
      for (std::uint32_t w = 0; w < words; ++w) wrong_words += got_bits[jl * words + w] != want_bits[jl * words + w];
      for (std::uint32_t k = 0; k < r; ++k) {
        const float step = static_cast<float>(v.want_s(jl, k) - sign_at(path.bits_v, r, row0 + jl, k));
        dg_mismatch += got_dg[jl * r + k] != path.g[row0 + jl] * step ? 1 : 0;
      }
      changed_rows += v.want_own[jl] < 0 ? 1 : 0;
      own_scale = std::max(own_scale, std::abs(v.want_own[jl]));
      own_error = std::max(own_error, std::abs(got_dl[jl] - v.want_own[jl]));
    }
    INFO(shape.m << "x" << n << " r " << r << ": rows that changed " << changed_rows << " of " << rows);
    CHECK(changed_rows > rows / 4);
    CHECK(wrong_words == 0);
    CHECK(dg_mismatch == 0);
    CHECK(own_error < 1e-4 * own_scale);
  }
}

GPU_TEST("refit_v_commit keeps the accepted rows' proposals and takes back the others' changes", "[fit][gpu_refit]") {
  const std::uint32_t n = 70, r = 64, words = 2, row0 = 10, rows = 50;
  vkt::Rng rng(5);
  std::vector<std::uint32_t> bits(n * words), proposed(rows * words), accept(rows);
  for (auto& v : bits) v = static_cast<std::uint32_t>(rng.next());
  for (auto& v : proposed) v = static_cast<std::uint32_t>(rng.next());
  for (auto& v : accept) v = rng.below(2) * (1 + rng.below(3));  // 0, or any non-zero
  const std::vector<float> dg = vkt::random_floats(rows * r, 6), z = vkt::random_floats(rows * r, 7);
  Buffer bits_d = ctx.upload(bits), proposed_d = ctx.upload(proposed), accept_d = ctx.upload(accept),
         dg_d = ctx.upload(dg), z_d = ctx.upload(z);
  Recorder rec(ctx);
  rec.add(ops::refit_v_commit(ctx, accept_d, proposed_d, bits_d, dg_d, z_d, {n, row0, rows}, r));
  rec.run();
  std::vector<std::uint32_t> want_bits = bits;
  std::vector<float> want_dg = dg, want_z = z;
  for (std::uint32_t jl = 0; jl < rows; ++jl) {
    if (accept[jl] != 0) {
      for (std::uint32_t w = 0; w < words; ++w) want_bits[(row0 + jl) * words + w] = proposed[jl * words + w];
    } else {
      std::fill_n(want_dg.begin() + jl * r, r, 0.0f);
      std::fill_n(want_z.begin() + jl * r, r, 0.0f);
    }
  }
  CHECK(bits_d.download<std::uint32_t>() == want_bits);
  CHECK(dg_d.download<float>() == want_dg);
  CHECK(z_d.download<float>() == want_z);
}

GPU_TEST("refit_flip_columns and refit_row_scales flip exactly the signs they name", "[fit][gpu_refit]") {
  const std::uint32_t rows = 45, r = 96, words = 3;
  vkt::Rng rng(7);
  std::vector<std::uint32_t> bits(rows * words), mask(words);
  for (auto& v : bits) v = static_cast<std::uint32_t>(rng.next());
  for (auto& v : mask) v = static_cast<std::uint32_t>(rng.next());
  std::vector<float> x = vkt::random_floats(rows, 8, 3.0f), scale = vkt::random_floats(rows, 9, 1.0f);
  x[3] = 0.0f;
  x[4] = std::numeric_limits<float>::quiet_NaN();
  x[5] = -std::numeric_limits<float>::infinity();
  x[6] = -0.0f;
  Buffer bits_d = ctx.upload(bits), mask_d = ctx.upload(mask), x_d = ctx.upload(x), scale_d = ctx.upload(scale);
  Recorder rec(ctx);
  rec.add(ops::refit_flip_columns(ctx, mask_d, bits_d, rows, r));
  rec.run();
  std::vector<std::uint32_t> want = bits;
  for (std::uint32_t i = 0; i < rows * words; ++i) want[i] ^= mask[i % words];
  CHECK(bits_d.download<std::uint32_t>() == want);

  rec.add(ops::refit_row_scales(ctx, x_d, bits_d, scale_d, rows, r));
  rec.run();
  std::vector<float> want_scale = scale;
  for (std::uint32_t i = 0; i < rows; ++i) {
    if (!std::isfinite(x[i]) || x[i] == 0.0f) continue;
    want_scale[i] = std::abs(x[i]);
    if (x[i] < 0) {
      for (std::uint32_t w = 0; w < words; ++w) want[i * words + w] = ~want[i * words + w];
    }
  }
  CHECK(bits_d.download<std::uint32_t>() == want);
  CHECK(scale_d.download<float>() == want_scale);
}

GPU_TEST("refit_sign_dot, refit_hadamard and refit_matvec compute what they say", "[fit][gpu_refit]") {
  const std::uint32_t rows = 37, r = 96, words = 3;
  vkt::Rng rng(11);
  std::vector<std::uint32_t> bits(rows * words);
  for (auto& v : bits) v = static_cast<std::uint32_t>(rng.next());
  const std::vector<float> a = vkt::random_floats(rows * r, 12), col = vkt::random_floats(r, 13, 2.0f);
  Buffer bits_d = ctx.upload(bits), a_d = ctx.upload(a), col_d = ctx.upload(col), out = ctx.buffer(rows * 4);
  out.fill(vkt::kPoison32);
  Recorder rec(ctx);
  rec.add(ops::refit_sign_dot(ctx, bits_d, a_d, col_d, out, rows, r));
  rec.run();
  const std::vector<float> got = out.download<float>();
  for (std::uint32_t i = 0; i < rows; ++i) {
    double want = 0, scale = 0;
    for (std::uint32_t k = 0; k < r; ++k) {
      want += sign_at(bits, r, i, k) * double(a[i * r + k]) * col[k];
      scale += std::abs(double(a[i * r + k]) * col[k]);
    }
    CHECK(std::abs(got[i] - want) < 1e-6 * scale);
  }

  const std::uint64_t count = 1000;
  const std::vector<float> x = vkt::random_floats(count, 14, 5.0f), y = vkt::random_floats(count, 15, 5.0f);
  Buffer x_d = ctx.upload(x), y_d = ctx.upload(y);
  rec.add(ops::refit_hadamard(ctx, x_d, y_d, count));
  rec.run();
  std::vector<float> want(count);
  for (std::size_t i = 0; i < count; ++i) want[i] = x[i] * y[i];
  CHECK(x_d.download<float>() == want);

  const std::uint32_t n = 300;
  const std::vector<float> a_nn = vkt::random_floats(n * n, 16), v = vkt::random_floats(n, 17);
  Buffer a_nn_d = ctx.upload(a_nn), v_d = ctx.upload(v), mv = ctx.buffer(n * 4);
  mv.fill(vkt::kPoison32);
  rec.add(ops::refit_matvec(ctx, a_nn_d, v_d, mv, n));
  rec.run();
  const std::vector<float> got_mv = mv.download<float>();
  for (std::uint32_t i = 0; i < n; ++i) {
    double want_i = 0, scale = 0;
    for (std::uint32_t j = 0; j < n; ++j) {
      want_i += double(a_nn[i * n + j]) * v[j];
      scale += std::abs(double(a_nn[i * n + j]) * v[j]);
    }
    CHECK(std::abs(got_mv[i] - want_i) < 1e-6 * scale);
  }
  rec.add(ops::refit_matvec(ctx, a_nn_d, v_d, mv, n));
  rec.run();
  CHECK(mv.download<float>() == got_mv);
}

GPU_TEST("refit_cg_begin and refit_cg_step are Jacobi-preconditioned CG, lowering the objective", "[fit][gpu_refit]") {
  // G = B·Bᵀ + diag, well conditioned, with a varied diagonal (the
  // preconditioner matters); matrix-vector products on the host here
  const std::uint32_t n = 50;
  vkt::Rng rng(17);
  MatrixF64 b(n, n / 2), g(n, n);
  for (double& v : b.values) v = rng.normal();
  g = matmul(b, transpose(b));
  for (std::uint32_t i = 0; i < n; ++i) g(i, i) += 5.0 + 20.0 * (i % 7);
  g = through_f32(g);
  std::vector<double> rhs(n), x(n);
  for (double& v : rhs) v = static_cast<float>(rng.normal());
  for (double& v : x) v = static_cast<float>(rng.normal());
  const auto times_g = [&](const std::vector<double>& v) {
    std::vector<double> out(n, 0.0);
    for (std::uint32_t i = 0; i < n; ++i) {
      for (std::uint32_t j = 0; j < n; ++j) out[i] += g(i, j) * v[j];
    }
    return out;
  };
  const auto objective = [&](const std::vector<double>& v) {
    const std::vector<double> gv = times_g(v);
    double f = 0;
    for (std::uint32_t i = 0; i < n; ++i) f += 0.5 * v[i] * gv[i] - rhs[i] * v[i];
    return f;
  };
  const auto to_f32 = [](const std::vector<double>& v) { return std::vector<float>(v.begin(), v.end()); };
  const auto to_f64 = [](const std::vector<float>& v) { return std::vector<double>(v.begin(), v.end()); };

  // f64 reference of the same iteration
  std::vector<double> want = x, res(n), dinv(n), p(n);
  const std::vector<double> gx = times_g(want);
  double rz = 0;
  for (std::uint32_t i = 0; i < n; ++i) {
    res[i] = rhs[i] - gx[i];
    dinv[i] = 1.0 / g(i, i);
    p[i] = dinv[i] * res[i];
    rz += res[i] * p[i];
  }
  const std::uint32_t iterations = 12;
  for (std::uint32_t it = 0; it < iterations; ++it) {
    const std::vector<double> q = times_g(p);
    double pq = 0;
    for (std::uint32_t i = 0; i < n; ++i) pq += p[i] * q[i];
    const double alpha = rz / pq;
    double rz_new = 0;
    for (std::uint32_t i = 0; i < n; ++i) {
      want[i] += alpha * p[i];
      res[i] -= alpha * q[i];
      rz_new += res[i] * dinv[i] * res[i];
    }
    for (std::uint32_t i = 0; i < n; ++i) p[i] = dinv[i] * res[i] + rz_new / rz * p[i];
    rz = rz_new;
  }

  Buffer g_d = ctx.upload(narrow(g)), rhs_d = ctx.upload(to_f32(rhs)), x_d = ctx.upload(to_f32(x));
  Buffer p_d = ctx.buffer(n * 4), q_d = ctx.upload(to_f32(times_g(x)));
  Buffer state = ctx.buffer(ops::refit_cg_state_floats(n) * 4);
  Recorder rec(ctx);
  rec.add(ops::refit_cg_begin(ctx, g_d, rhs_d, x_d, p_d, q_d, state, n));
  rec.run();
  double last = objective(x);
  for (std::uint32_t it = 0; it < iterations; ++it) {
    q_d.upload(to_f32(times_g(to_f64(p_d.download<float>()))));
    rec.add(ops::refit_cg_step(ctx, g_d, rhs_d, x_d, p_d, q_d, state, n));
    rec.run();
    const double now = objective(to_f64(x_d.download<float>()));
    CHECK(now <= last + 1e-6 * std::abs(last));
    last = now;
  }
  const std::vector<float> got = x_d.download<float>();
  CHECK(vkt::rel_error(got, want) < 1e-4);
  // a converged state: further steps change nothing (p·q or rz no longer > 0)
  std::vector<float> zero_res(ops::refit_cg_state_floats(n), 0.0f);
  state.upload(zero_res);
  rec.add(ops::refit_cg_step(ctx, g_d, rhs_d, x_d, p_d, q_d, state, n));
  rec.run();
  CHECK(x_d.download<float>() == got);
}

// ---- the host choice of an S_V block's rows -------------------------------

TEST_CASE("block choice: rows that do not interact are all kept", "[fit][gpu_refit]") {
  const std::vector<double> own = {-1.0, 0.0, -2.5, -0.5};
  const std::vector<double> cross(16, 0.0);
  const BlockChoice c = choose_block_rows(own, cross);
  CHECK(c.accept == std::vector<std::uint32_t>{1, 0, 1, 1});
  CHECK(c.accepted == 3);
  CHECK_THAT(c.delta, WithinRel(-4.0, 1e-12));
}

TEST_CASE("block choice: rows that undo each other keep only the better one", "[fit][gpu_refit]") {
  // rows 0 and 1 alone: -1 and -2; together +3 (cross 3 each way): keep row 1
  const std::vector<double> own = {-1.0, -2.0};
  const std::vector<double> cross = {0.0, 3.0, 3.0, 0.0};
  const BlockChoice c = choose_block_rows(own, cross);
  CHECK(c.accept == std::vector<std::uint32_t>{0, 1});
  CHECK(c.delta == -2.0);
  // one row: kept when it lowers the loss
  CHECK(choose_block_rows(std::vector<double>{-0.25}, std::vector<double>{7.0}).accepted == 1);
  CHECK(choose_block_rows(std::vector<double>{0.0}, std::vector<double>{0.0}).accepted == 0);
}

TEST_CASE("block choice never accepts a positive ΔL, whatever the cross terms", "[fit][gpu_refit]") {
  vkt::Rng rng(23);
  std::size_t kept_several = 0;
  for (int trial = 0; trial < 400; ++trial) {
    const std::size_t rows = 1 + rng.below(14);
    std::vector<double> own(rows), cross(rows * rows);
    for (double& v : own) v = rng.below(5) == 0 ? 0.0 : -std::abs(rng.normal());
    const double bias = 0.5 * rng.normal();  // some trials cooperate, others fight
    for (double& v : cross) v = bias + 0.6 * rng.normal();
    const BlockChoice c = choose_block_rows(own, cross);
    const double delta = block_delta(own, cross, c.accept);
    CAPTURE(trial, rows);
    CHECK(delta <= 1e-12);
    CHECK(std::abs(delta - c.delta) <= 1e-12 * (1 + std::abs(delta)));
    double best_single = 0;
    for (std::size_t a = 0; a < rows; ++a) {
      best_single = std::min(best_single, own[a]);
      if (own[a] == 0) CHECK(c.accept[a] == 0);  // nothing to commit
    }
    CHECK(c.delta <= best_single + 1e-12);
    // no single removal improves it
    for (std::size_t a = 0; a < rows; ++a) {
      if (c.accept[a] == 0) continue;
      std::vector<std::uint32_t> fewer = c.accept;
      fewer[a] = 0;
      CHECK(block_delta(own, cross, fewer) >= c.delta - 1e-12);
    }
    kept_several += c.accepted > 1 ? 1 : 0;
  }
  CHECK(kept_several > 50);
}

TEST_CASE("block choice refuses sizes that do not match", "[fit][gpu_refit][errors]") {
  CHECK_THROWS_WITH(choose_block_rows(std::vector<double>(3), std::vector<double>(8)),
                    ContainsSubstring("block choice") && ContainsSubstring("8"));
  CHECK_THROWS_WITH(block_delta(std::vector<double>(2), std::vector<double>(4), std::vector<std::uint32_t>(3)),
                    ContainsSubstring("block choice") && ContainsSubstring("3"));
}

GPU_TEST("the refit kernels refuse bad shapes and buffers, naming themselves", "[fit][gpu_refit][errors]") {
  Buffer small = ctx.buffer(64), big = ctx.buffer(1 << 20), big2 = ctx.buffer(1 << 20), big3 = ctx.buffer(1 << 20);
  Buffer bits = ctx.buffer(1 << 16), h = ctx.buffer(1 << 16);
  CHECK_THROWS_WITH(ops::refit_u_rows(ctx, big, big2, big3, bits, h, 8, 48),
                    ContainsSubstring("refit_u_rows") && ContainsSubstring("48"));
  CHECK_THROWS_WITH(ops::refit_u_rows(ctx, small, big2, big3, bits, h, 8, 32),
                    ContainsSubstring("refit_u_rows") && ContainsSubstring("p holds 64 bytes"));
  CHECK_THROWS_WITH(ops::refit_u_rows(ctx, big, big2, big3, bits, bits, 8, 32),
                    ContainsSubstring("refit_u_rows") && ContainsSubstring("same buffer"));
  const std::uint32_t huge_rank = 32 * ((ctx.caps().max_shared_memory / 12) / 32 + 1);
  Buffer huge = ctx.buffer(std::uint64_t{huge_rank} * huge_rank * 4);
  CHECK_THROWS_WITH(ops::refit_v_rows(ctx, big, huge, big2, big3, bits, {8, 0, 1}, huge_rank, small, h, big2),
                    ContainsSubstring("refit_v_rows") && ContainsSubstring("shared memory"));
  CHECK_THROWS_WITH(ops::refit_v_rows(ctx, big, big2, big3, h, bits, {8, 4, 5}, 32, small, h, big2),
                    ContainsSubstring("refit_v_rows") && ContainsSubstring("rows 4..9 of a bitmap of 8"));
  CHECK_THROWS_WITH(ops::refit_hadamard(ctx, big, big, 16), ContainsSubstring("refit_hadamard"));
  CHECK_THROWS_WITH(ops::refit_matvec(ctx, big, big2, big2, 64), ContainsSubstring("refit_matvec"));
  CHECK_THROWS_WITH(ops::refit_matvec(ctx, small, big2, big3, 64),
                    ContainsSubstring("refit_matvec") && ContainsSubstring("a holds 64 bytes"));
  CHECK_THROWS_WITH(ops::refit_cg_step(ctx, big, big2, big3, bits, h, small, 100),
                    ContainsSubstring("refit_cg_step") && ContainsSubstring("state"));
}

// ---- the whole refit (f32 GEMMs on the device) -----------------------------

namespace {

// The case's W, C (f32) and tr(W·C·Wᵀ) on the device.
struct DeviceInputs {
  DeviceMatrix w, c;
  double w_c_w = 0;
};

DeviceInputs device_inputs(Context& ctx, const RefitCase& rc) {
  MatrixF64 w(rc.w.rows, rc.w.cols);
  for (std::size_t i = 0; i < w.values.size(); ++i) w.values[i] = rc.w.values[i];
  const MatrixF64 wc = matmul(w, rc.c);
  double w_c_w = 0;
  for (std::size_t i = 0; i < w.values.size(); ++i) w_c_w += wc.values[i] * w.values[i];
  const auto rows = static_cast<std::uint32_t>(w.rows), cols = static_cast<std::uint32_t>(w.cols);
  return {upload_matrix(ctx, w.values, rows, cols, "test.w"), upload_matrix(ctx, rc.c.values, cols, cols, "test.c"),
          w_c_w};
}

double host_error(const RefitCase& rc, const std::vector<BlrPathInit>& paths) {
  return training_output_errors(rc.w, rc.x, rc.shape, std::span(&paths, 1))[0];
}

}  // namespace

GPU_TEST("the GPU refit's exact training error is the host's f64 one", "[fit][gpu_refit]") {
  for (const double decay : {1.0, 0.0}) {
    const RefitCase rc = make_case({128, 96, 32, 2}, decay, 41);
    const DeviceInputs in = device_inputs(ctx, rc);
    DeviceRefit refit(ctx, in.w, in.c, in.w_c_w, rc.shape, rc.paths);
    CHECK_THAT(refit.train_error(), WithinRel(host_error(rc, rc.paths), 1e-5));
    CHECK(refit.paths()[1].bits_v == rc.paths[1].bits_v);
  }
}

GPU_TEST("the GPU refit takes a sweep back: restore() brings back the saved layer", "[fit][gpu_refit]") {
  const RefitCase rc = make_case({128, 96, 32, 2}, 1.0, 45);
  const DeviceInputs in = device_inputs(ctx, rc);
  DeviceRefit refit(ctx, in.w, in.c, in.w_c_w, rc.shape, rc.paths);
  const double before = refit.train_error();
  refit.save();
  for (std::uint32_t p = 0; p < 2; ++p) {
    refit.refit_u(p);
    refit.refit_v(p);
    refit.refit_l(p);
    refit.refit_g(p);
  }
  const std::vector<BlrPathInit> changed = refit.paths();
  CHECK(changed[0].bits_v != rc.paths[0].bits_v);
  CHECK(changed[1].l != rc.paths[1].l);
  CHECK(refit.train_error() < before);
  refit.restore();
  const std::vector<BlrPathInit> back = refit.paths();
  for (std::uint32_t p = 0; p < 2; ++p) {
    CHECK(back[p].bits_u == rc.paths[p].bits_u);
    CHECK(back[p].bits_v == rc.paths[p].bits_v);
    CHECK(back[p].h == rc.paths[p].h);
    CHECK(back[p].l == rc.paths[p].l);
    CHECK(back[p].g == rc.paths[p].g);
  }
  CHECK(refit.train_error() == before);  // the factors and products are the saved layer's again
}

GPU_TEST("the GPU refit's S_V step with blocks of one row makes the host refit's sequential decisions",
         "[fit][gpu_refit]") {
  const RefitCase rc = make_case({128, 96, 32, 2}, 1.0, 43);
  const DeviceInputs in = device_inputs(ctx, rc);
  const std::uint32_t m = rc.shape.m, n = rc.shape.n, r = rc.shape.rank;
  DeviceRefit refit(ctx, in.w, in.c, in.w_c_w, rc.shape, rc.paths, {.block_rows = 1, .block_rounds = 1});
  refit.refit_u(0);
  RefitCase after_u = rc;
  after_u.paths = refit.paths();
  const VStepStats stats = refit.refit_v(0);
  const std::vector<BlrPathInit> got = refit.paths();

  // the host's refit_v from the same state, f64
  const BlrPathInit& path = after_u.paths[0];
  const MatrixF64 a = scaled(signs(path.bits_u, m, r), path.h, path.l);
  const MatrixF64 qa = matmul(transpose(a), a);
  MatrixF64 sv = signs(path.bits_v, n, r);
  MatrixF64 ft = matmul(scaled(sv, path.g, {}), qa);
  const MatrixF64 ra = matmul(transpose(residual(after_u, 0)), a);
  for (std::size_t i = 0; i < ft.values.size(); ++i) ft.values[i] -= ra.values[i];
  MatrixF64 cft = matmul(rc.c, ft);  // E[k][j] = g_j·cft[j][k], kept current
  Margin margin;
  std::size_t changed_rows = 0;
  for (std::uint32_t j = 0; j < n; ++j) {
    std::vector<double> s(r), e(r);
    for (std::uint32_t k = 0; k < r; ++k) {
      s[k] = sv(j, k);
      e[k] = path.g[j] * cft(j, k);
    }
    const double kjj = double(path.g[j]) * path.g[j] * rc.c(j, j);
    if (reference_v_row(s, e, kjj, qa, margin) == 0) continue;
    ++changed_rows;
    // cft += C[:, j]·g_j·(s_new − s_old)·QA
    std::vector<double> dqa(r, 0.0);
    for (std::uint32_t k = 0; k < r; ++k) {
      const double d = path.g[j] * (s[k] - sv(j, k));
      if (d == 0) continue;
      for (std::uint32_t c = 0; c < r; ++c) dqa[c] += d * qa(k, c);
    }
    for (std::uint32_t i = 0; i < n; ++i) {
      for (std::uint32_t c = 0; c < r; ++c) cft(i, c) += rc.c(i, j) * dqa[c];
    }
    for (std::uint32_t k = 0; k < r; ++k) sv(j, k) = s[k];
  }
  INFO("rows changed " << changed_rows << ", closest decision " << margin.worst);
  REQUIRE(margin.worst > kDecisive);
  CHECK(changed_rows > n / 4);
  CHECK(stats.rows_changed == changed_rows);
  CHECK(stats.rows_rejected == 0);
  CHECK(got[0].bits_v == pack_signs(std::span<const double>(sv.values), n, r));
  CHECK(got[0].bits_u == after_u.paths[0].bits_u);
  CHECK(got[1].bits_v == rc.paths[1].bits_v);
}

GPU_TEST("conjugate gradients on the device: the exact solve, and never a higher objective", "[fit][gpu_refit]") {
  const std::uint32_t n = 64;
  vkt::Rng rng(29);
  MatrixF64 b(n, n), g(n, n);
  for (double& v : b.values) v = rng.normal();
  g = matmul(b, transpose(b));
  for (std::uint32_t i = 0; i < n; ++i) g(i, i) += 0.5 * n * (1 + i % 5);
  g = through_f32(g);
  std::vector<double> rhs(n), x0(n);
  for (double& v : rhs) v = static_cast<float>(rng.normal());
  for (double& v : x0) v = static_cast<float>(rng.normal() / n);  // the size of the solution: a warm start
  const std::vector<double> exact = solve_ridged(g.values, rhs, n, 0.0);
  REQUIRE(exact.size() == n);
  const auto objective = [&](const std::vector<float>& v) {
    double f = 0;
    for (std::uint32_t i = 0; i < n; ++i) {
      double gv = 0;
      for (std::uint32_t j = 0; j < n; ++j) gv += g(i, j) * v[j];
      f += 0.5 * v[i] * gv - rhs[i] * v[i];
    }
    return f;
  };
  const DeviceMatrix g_d = upload_matrix(ctx, g.values, n, n, "test.g"), rhs_d = upload_matrix(ctx, rhs, n, 1, "b");
  DeviceMatrix x = device_matrix(ctx, n, 1, "test.x");
  CgWork work(ctx, n);
  double last = objective(std::vector<float>(x0.begin(), x0.end()));
  std::vector<float> got;
  for (const std::uint32_t iterations : {1u, 2u, 3u, 5u, 8u, 13u, 40u}) {
    upload_values(x, x0);
    Recorder rec(ctx);
    record_cg(ctx, rec, g_d, rhs_d, x, work, iterations);
    rec.run();
    got = x.buffer.download<float>(n);
    const double now = objective(got);
    CAPTURE(iterations);
    CHECK(now <= last + 1e-7 * std::abs(last));
    last = now;
  }
  CHECK(vkt::rel_error(got, exact) < 1e-5);
  Recorder unused(ctx);
  CHECK_THROWS_WITH(record_cg(ctx, unused, g_d, g_d, x, work, 3), ContainsSubstring("conjugate gradients"));
}

GPU_TEST("the GPU refit: no sweep raises the f64 training error, and 4 sweeps reach the host refit's",
         "[fit][gpu_refit]") {
  for (const LayerShape shape : {LayerShape{128, 96, 32, 2}, LayerShape{256, 192, 64, 2}}) {
    for (const double decay : {1.0, 0.0}) {
      const RefitCase rc = make_case(shape, decay, 51 + shape.rank);
      const DeviceInputs in = device_inputs(ctx, rc);
      std::vector<BlrPathInit> host = rc.paths;
      std::vector<double> host_trace;
      for (int sweep = 0; sweep < 4; ++sweep) {
        refit_paths(rc.w, rc.x, shape, host, {.sweeps = 1});
        host_trace.push_back(host_error(rc, host));
      }
      // every row of S_V in one block; and blocks of 32 rows (several blocks, several rounds each)
      for (const std::uint32_t block_rows : {256u, 32u}) {
        std::vector<BlrPathInit> gpu = rc.paths;
        double last = host_error(rc, gpu);
        const double init = last;
        std::string trace = "init " + std::to_string(init);
        for (int sweep = 0; sweep < 4; ++sweep) {
          const GpuRefitStats s = gpu_refit_paths(ctx, in.w, in.c, in.w_c_w, shape, gpu,
                                                  {.sweeps = 1, .steps = {.block_rows = block_rows}});
          const double now = host_error(rc, gpu);
          REQUIRE(s.train_error.size() == 2);
          CHECK_THAT(s.train_error[0], WithinRel(last, 1e-4));
          if (s.sweeps_kept == 1) CHECK_THAT(s.train_error[1], WithinRel(now, 1e-4));
          CHECK(now <= last * (1 + 1e-6));
          trace += "; sweep " + std::to_string(sweep) + ": gpu " + std::to_string(now) + " host " +
                   std::to_string(host_trace[sweep]);
          last = now;
        }
        INFO(shape.m << "x" << shape.n << " r " << shape.rank << ", activation decay " << decay << ", blocks of "
                     << block_rows << ": " << trace);
        CHECK(last < 0.9 * init);
        CHECK(last <= 1.03 * host_trace.back());
      }
    }
  }
}

GPU_TEST("the GPU refit is deterministic; 0 sweeps change nothing; bad inputs are refused", "[fit][gpu_refit]") {
  const RefitCase rc = make_case({128, 96, 32, 2}, 1.0, 61);
  const DeviceInputs in = device_inputs(ctx, rc);
  std::vector<BlrPathInit> a = rc.paths, b = rc.paths, none = rc.paths;
  const GpuRefitStats sa = gpu_refit_paths(ctx, in.w, in.c, in.w_c_w, rc.shape, a, {.sweeps = 2});
  const GpuRefitStats sb = gpu_refit_paths(ctx, in.w, in.c, in.w_c_w, rc.shape, b, {.sweeps = 2});
  CHECK(sa.train_error == sb.train_error);
  CHECK(sa.sign_changes == sb.sign_changes);
  CHECK(sa.sign_changes > 0);
  for (std::size_t p = 0; p < a.size(); ++p) {
    CHECK(a[p].bits_u == b[p].bits_u);
    CHECK(a[p].bits_v == b[p].bits_v);
    CHECK(a[p].h == b[p].h);
    CHECK(a[p].l == b[p].l);
    CHECK(a[p].g == b[p].g);
  }
  const GpuRefitStats s0 = gpu_refit_paths(ctx, in.w, in.c, in.w_c_w, rc.shape, none, {.sweeps = 0});
  CHECK(s0.train_error.empty());
  CHECK(none[0].bits_u == rc.paths[0].bits_u);
  CHECK(none[1].g == rc.paths[1].g);

  CHECK_THROWS_WITH(gpu_refit_paths(ctx, in.c, in.c, in.w_c_w, rc.shape, none),
                    ContainsSubstring("GPU refit") && ContainsSubstring("W is 96×96"));
  CHECK_THROWS_WITH(gpu_refit_paths(ctx, in.w, in.w, in.w_c_w, rc.shape, none),
                    ContainsSubstring("GPU refit") && ContainsSubstring("C is 128×96"));
  CHECK_THROWS_WITH(gpu_refit_paths(ctx, in.w, in.c, 0.0, rc.shape, none), ContainsSubstring("GPU refit"));
  std::vector<BlrPathInit> one = {rc.paths[0]};
  CHECK_THROWS_WITH(gpu_refit_paths(ctx, in.w, in.c, in.w_c_w, rc.shape, one), ContainsSubstring("GPU refit"));
}

// ---- timing on a real device (hidden: run it by its tag) --------------------

namespace {

// VKBLR_REFIT_BENCH="m,n,rank,paths,sweeps[,block_rows,block_rounds,cg_iterations[,tokens]]".
struct BenchCase {
  LayerShape shape{4096, 14336, 1568, 2};
  std::uint32_t sweeps = 4, tokens = 32768;
  DeviceRefitOptions steps;
};

BenchCase bench_case() {
  BenchCase b;
  if (const char* text = std::getenv("VKBLR_REFIT_BENCH")) {
    unsigned v[9] = {b.shape.m, b.shape.n,          b.shape.rank,         b.shape.paths,
                     b.sweeps,  b.steps.block_rows, b.steps.block_rounds, b.steps.cg_iterations,
                     b.tokens};
    const int got =
        std::sscanf(text, "%u,%u,%u,%u,%u,%u,%u,%u,%u", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7], &v[8]);
    REQUIRE(got >= 5);
    b.shape = {v[0], v[1], v[2], v[3]};
    b.sweeps = v[4];
    b.steps = {.block_rows = v[5], .block_rounds = v[6], .cg_iterations = v[7]};
    b.tokens = v[8];
  }
  return b;
}

double seconds_since(std::chrono::steady_clock::time_point& t0) {
  const auto t1 = std::chrono::steady_clock::now();
  const double s = std::chrono::duration<double>(t1 - t0).count();
  t0 = t1;
  return s;
}

}  // namespace

// The LLM layer family on the device (W with singular values
// exp(−k/(r/6)) + 0.05 between Gaussian factors; Gaussian tokens with 1/64
// of the channels ×8), the GPU Dual-SVID init, then the GPU refit with each
// step timed (wall clock, every step ends waiting for the device). Its own
// context, without validation. Skipped on a device whose storage bindings
// cannot hold the case's matrices whole (lavapipe allows 128 MiB; C of the
// default case is 14336² f32, 784 MiB): VKBLR_REFIT_BENCH sets a smaller one.
TEST_CASE("GPU refit timing on an LLM-sized layer", "[.gpu_refit_bench]") {
  const BenchCase bc = bench_case();
  const LayerShape shape = bc.shape;
  const std::uint32_t m = shape.m, n = shape.n, r = shape.rank, k = std::min(m, n);
  Context ctx;
  // the largest of W [m][n], C [n][n], the factors [m|n][k <= n] and a chunk of tokens [<= 4096][n]
  const std::uint64_t largest = std::uint64_t{std::max({m, n, 4096u})} * n * 4;
  if (largest > ctx.caps().max_storage_buffer_range) {
    SKIP(ctx.caps().device_name << " binds at most " << ctx.caps().max_storage_buffer_range
                                << " bytes; this case binds a matrix of " << largest
                                << " (VKBLR_REFIT_BENCH=m,n,rank,paths,sweeps sets a smaller case)");
  }
  std::printf("device %s; %u×%u rank %u, %u paths, %u sweeps, %u tokens; blocks of %u rows, %u rounds, %u CG\n",
              ctx.caps().device_name.c_str(), m, n, r, shape.paths, bc.sweeps, bc.tokens, bc.steps.block_rows,
              bc.steps.block_rounds, bc.steps.cg_iterations);
  auto t0 = std::chrono::steady_clock::now();
  // W = (G1·diag(σ))·G2ᵀ
  DeviceMatrix g1 = device_matrix(ctx, m, k, "bench.g1"), g1s = device_matrix(ctx, m, k, "bench.g1s");
  DeviceMatrix g2 = device_matrix(ctx, n, k, "bench.g2"), w = device_matrix(ctx, m, n, "bench.w");
  std::vector<float> sigma(k);
  for (std::uint32_t i = 0; i < k; ++i) sigma[i] = static_cast<float>(std::exp(-double(i) / (r / 6.0)) + 0.05);
  Buffer sigma_d = ctx.upload(sigma);
  {
    Recorder rec(ctx);
    rec.add(ops::gaussian(ctx, g1.buffer, g1.elements(), 7, 0));
    rec.add(ops::gaussian(ctx, g2.buffer, g2.elements(), 7, 1));
    rec.add(ops::scale_acc(ctx, g1.buffer, sigma_d, g1s.buffer, m, k, false));
    rec.add(product(ctx, g1s, false, g2, true, w, 1.0f / std::sqrt(float(k))));
    rec.run();
  }
  // C = XᵀX/T over chunks of tokens
  const std::uint32_t chunk = std::min<std::uint32_t>(4096, bc.tokens);
  DeviceMatrix x = device_matrix(ctx, chunk, n, "bench.x"), xs = device_matrix(ctx, chunk, n, "bench.xs");
  DeviceMatrix c = device_matrix(ctx, n, n, "bench.c");
  std::vector<float> channel(n, 1.0f);
  for (std::uint32_t j = 0; j < n; j += 64) channel[j] = 8.0f;
  Buffer channel_d = ctx.upload(channel);
  for (std::uint32_t t0_tok = 0, part = 0; t0_tok < bc.tokens; t0_tok += chunk, ++part) {
    Recorder rec(ctx);
    rec.add(ops::gaussian(ctx, x.buffer, x.elements(), 11, part));
    rec.add(ops::scale_acc(ctx, x.buffer, channel_d, xs.buffer, chunk, n, false));
    rec.add(product(ctx, xs, true, xs, false, c, 1.0f / float(bc.tokens), part > 0));
    rec.run();
  }
  // tr(W·C·Wᵀ)
  double w_c_w = 0;
  {
    DeviceMatrix wc = device_matrix(ctx, m, n, "bench.wc");
    Buffer sums = ctx.buffer(std::uint64_t{n} * 4);
    Recorder rec(ctx);
    rec.add(product(ctx, w, false, c, false, wc));
    rec.fill(sums, 0);
    rec.add(ops::colsum_prod(ctx, w.buffer, wc.buffer, sums, m, n));
    rec.run();
    for (const float v : sums.download<float>()) w_c_w += v;
  }
  std::printf("data on the device: %.3f s\n", seconds_since(t0));
  std::vector<BlrPathInit> paths = gpu_dual_svid_init(ctx, w, shape);
  std::printf("GPU Dual-SVID init: %.3f s\n", seconds_since(t0));

  DeviceRefit refit(ctx, w, c, w_c_w, shape, paths, bc.steps);
  const double setup = seconds_since(t0);
  double step_time[5] = {0, 0, 0, 0, 0};  // u, v, ℓ, g, loss
  std::vector<double> errors = {refit.train_error()};
  step_time[4] += seconds_since(t0);
  std::uint64_t rows_changed = 0, rows_rejected = 0;
  for (std::uint32_t sweep = 0; sweep < bc.sweeps; ++sweep) {
    for (std::uint32_t p = 0; p < shape.paths; ++p) {
      refit.refit_u(p);
      step_time[0] += seconds_since(t0);
      const VStepStats vs = refit.refit_v(p);
      rows_changed += vs.rows_changed;
      rows_rejected += vs.rows_rejected;
      step_time[1] += seconds_since(t0);
      refit.refit_l(p);
      step_time[2] += seconds_since(t0);
      refit.refit_g(p);
      step_time[3] += seconds_since(t0);
    }
    errors.push_back(refit.train_error());
    step_time[4] += seconds_since(t0);
    std::printf("sweep %u: training error %.6f -> %.6f\n", sweep, errors[sweep], errors[sweep + 1]);
    CHECK(errors[sweep + 1] <= errors[sweep] * (1 + 1e-5));
  }
  const double total = step_time[0] + step_time[1] + step_time[2] + step_time[3] + step_time[4];
  std::printf(
      "refit: setup %.3f s; S_U %.3f, S_V %.3f (rows committed %llu, taken back %llu), ℓ %.3f, g %.3f, "
      "exact losses %.3f; sweeps %.3f s\n",
      setup, step_time[0], step_time[1], static_cast<unsigned long long>(rows_changed),
      static_cast<unsigned long long>(rows_rejected), step_time[2], step_time[3], step_time[4], total);
}
