// RMSNorm forward and backward against the f64 reference, the reference's
// gradients against finite differences, the fused residual add ≡ add_into +
// rmsnorm_fwd bit for bit, accumulation ≡ the host's f32 addition, a row's
// bits independent of the batch, the same bits run after run, bad shapes
// refused.
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include "support/gpu.hpp"
#include "support/host.hpp"
#include "support/llama_ref.hpp"
#include "support/poisoned.hpp"
#include "vkblr/ops.hpp"
#include "vkblr/recorder.hpp"

using namespace vkblr;
using Catch::Matchers::ContainsSubstring;
using vkt::poisoned;

namespace {
// Tolerances in f32 units of each value's magnitude (llama_ref.hpp). A
// row's sum of squares passes through at most 16 + 32 + 32 additions
// (columns of an invocation, invocations of a lane, lanes), inversesqrt
// adds 2 ulp and the division and products a few more: 128 ulp bounds y,
// inv and dx with room. dw adds one term per row on top of x̂'s error.
constexpr double kTol = 128 * 0x1p-24;
double dw_tol(std::uint32_t tokens) { return (128.0 + tokens) * 0x1p-24; }

struct Inputs {
  std::vector<float> x, w, dy;
};
// x in ±2 with row 1 scaled by 1e-3 and row 2 by 30 (the norm is
// scale-free: both must come out as accurate), w in ±1.5, dy in ±1.
Inputs random_inputs(std::uint32_t tokens, std::uint32_t hidden, std::uint64_t seed) {
  Inputs in{vkt::random_floats(std::size_t{tokens} * hidden, seed, 2.0f), vkt::random_floats(hidden, seed + 1, 1.5f),
            vkt::random_floats(std::size_t{tokens} * hidden, seed + 2, 1.0f)};
  for (std::uint32_t c = 0; c < hidden; ++c) {
    if (tokens > 1) in.x[hidden + c] *= 1e-3f;
    if (tokens > 2) in.x[2 * hidden + c] *= 30.0f;
  }
  return in;
}

void check_values(const char* name, const std::vector<float>& got, const vkt::RefValues& want, double tol) {
  const vkt::Worst w = vkt::worst_error(got, want, tol);
  INFO(name << ": worst error " << w.ratio << " of the tolerance at " << w.at);
  CHECK(w.ratio <= 1.0);
}
}  // namespace

GPU_TEST("rmsnorm forward and backward match the f64 reference", "[ops][rmsnorm]") {
  // hidden 40: workgroups of 32, the second column of each invocation
  // partial; 520: 128 with 5 columns, partial; 896: 128 with 7 (Qwen's);
  // 4100: 1024 with 5, partial. The backward's rows side by side: 16 of
  // 32 invocations (37 tokens: blocks of 16 rows, the last 5), 4 of 128.
  for (const auto& [tokens, hidden] : {std::pair{37u, 40u}, std::pair{37u, 520u}, std::pair{9u, 896u},
                                       std::pair{5u, 4100u}}) {
    INFO("tokens = " << tokens << ", hidden = " << hidden);
    const ops::RmsNorm shape{tokens, hidden, 1e-5f};
    const std::size_t n = std::size_t{tokens} * hidden;
    const Inputs in = random_inputs(tokens, hidden, 900 + hidden);
    Buffer x = ctx.upload(in.x), w = ctx.upload(in.w), dy = ctx.upload(in.dy);
    Buffer y = poisoned(ctx, n), inv = poisoned(ctx, tokens), dx = poisoned(ctx, n), dw = poisoned(ctx, hidden);
    Recorder rec(ctx);
    rec.add(ops::rmsnorm_fwd(ctx, x, w, y, inv, shape));
    rec.add(ops::rmsnorm_bwd(ctx, x, w, inv, dy, dx, dw, shape));
    rec.run();
    const auto x64 = vkt::widen(in.x), w64 = vkt::widen(in.w), dy64 = vkt::widen(in.dy);
    const vkt::RmsNormRef f = vkt::rmsnorm_fwd_ref(x64, w64, tokens, hidden, shape.eps);
    const vkt::RmsNormGradRef b = vkt::rmsnorm_bwd_ref(x64, w64, dy64, tokens, hidden, shape.eps);
    check_values("y", y.download<float>(), f.y, kTol);
    check_values("inv_rms", inv.download<float>(), f.inv, kTol);
    check_values("dx", dx.download<float>(), b.dx, kTol);
    check_values("dw", dw.download<float>(), b.dw, dw_tol(tokens));
  }
}

GPU_TEST("rmsnorm's gradients match finite differences of its forward", "[ops][rmsnorm]") {
  // L = Σ dy·y as a function of x and of w, in f64, central differences
  const std::uint32_t tokens = 3, hidden = 40;
  const double eps = 1e-5;
  const Inputs in = random_inputs(tokens, hidden, 930);
  const auto x64 = vkt::widen(in.x), w64 = vkt::widen(in.w), dy64 = vkt::widen(in.dy);
  auto loss = [&](const std::vector<double>& x, const std::vector<double>& w) {
    const vkt::RmsNormRef f = vkt::rmsnorm_fwd_ref(x, w, tokens, hidden, eps);
    double l = 0;
    for (std::size_t i = 0; i < f.y.value.size(); ++i) l += dy64[i] * f.y.value[i];
    return l;
  };
  std::vector<std::size_t> all_x(x64.size()), all_w(w64.size());
  for (std::size_t i = 0; i < all_x.size(); ++i) all_x[i] = i;
  for (std::size_t i = 0; i < all_w.size(); ++i) all_w[i] = i;
  const vkt::RmsNormGradRef ref = vkt::rmsnorm_bwd_ref(x64, w64, dy64, tokens, hidden, eps);
  vkt::RefValues fd_dx = ref.dx, fd_dw = ref.dw;  // magnitudes of the reference, values from differences
  fd_dx.value = vkt::finite_differences(x64, [&](const std::vector<double>& x) { return loss(x, w64); }, all_x);
  fd_dw.value = vkt::finite_differences(w64, [&](const std::vector<double>& w) { return loss(x64, w); }, all_w);
  // truncation (h² times a third derivative, with x as small as 1e-3: the
  // second row) and cancellation (1e-16 · |L| / h): within 1e-5 of the
  // magnitude
  CHECK(vkt::worst_error(ref.dx.value, fd_dx, 1e-5).ratio <= 1.0);
  CHECK(vkt::worst_error(ref.dw.value, fd_dw, 1e-5).ratio <= 1.0);

  Buffer x = ctx.upload(in.x), w = ctx.upload(in.w), dy = ctx.upload(in.dy);
  Buffer y = poisoned(ctx, x64.size()), inv = poisoned(ctx, tokens), dx = poisoned(ctx, x64.size()),
         dw = poisoned(ctx, hidden);
  const ops::RmsNorm shape{tokens, hidden, static_cast<float>(eps)};
  Recorder rec(ctx);
  rec.add(ops::rmsnorm_fwd(ctx, x, w, y, inv, shape));
  rec.add(ops::rmsnorm_bwd(ctx, x, w, inv, dy, dx, dw, shape));
  rec.run();
  check_values("dx against differences", dx.download<float>(), fd_dx, kTol + 1e-5);
  check_values("dw against differences", dw.download<float>(), fd_dw, dw_tol(tokens) + 1e-5);
}

GPU_TEST("rmsnorm: fused residual ≡ add_into + rmsnorm_fwd, accumulation ≡ f32 addition, rows independent of the "
         "batch, same bits every run",
         "[ops][rmsnorm]") {
  const std::uint32_t tokens = 37, hidden = 520;
  const std::size_t n = std::size_t{tokens} * hidden;
  const ops::RmsNorm shape{tokens, hidden, 1e-6f};
  const Inputs in = random_inputs(tokens, hidden, 940);
  const auto stream0 = vkt::random_floats(n, 944, 4.0f), dx0 = vkt::random_floats(n, 945, 1.0f),
             dw0 = vkt::random_floats(hidden, 946, 1.0f);
  Buffer x = ctx.upload(in.x), w = ctx.upload(in.w), dy = ctx.upload(in.dy);

  // fused: stream += x, normed
  Buffer stream = ctx.upload(stream0), y = poisoned(ctx, n), inv = poisoned(ctx, tokens);
  // unfused: add_into, then rmsnorm_fwd
  Buffer stream2 = ctx.upload(stream0), y2 = poisoned(ctx, n), inv2 = poisoned(ctx, tokens);
  // backward overwriting, and accumulating onto dx0 and dw0
  Buffer dx = poisoned(ctx, n), dw = poisoned(ctx, hidden), dx_acc = ctx.upload(dx0), dw_acc = ctx.upload(dw0);
  Recorder rec(ctx);
  rec.add(ops::rmsnorm_fwd_residual(ctx, x, stream, w, y, inv, shape));
  rec.add(ops::add_into(ctx, x, stream2, static_cast<std::uint32_t>(n)));
  rec.add(ops::rmsnorm_fwd(ctx, stream2, w, y2, inv2, shape));
  rec.add(ops::rmsnorm_bwd(ctx, stream, w, inv, dy, dx, dw, shape));
  rec.add(ops::rmsnorm_bwd(ctx, stream, w, inv, dy, dx_acc, dw_acc, shape, {.accumulate_dx = true, .accumulate_dw = true}));
  rec.run();
  const auto got_stream = stream.download<float>(), got_y = y.download<float>(), got_inv = inv.download<float>();
  CHECK(vkt::count_bit_diffs(stream2.download<float>(), got_stream) == 0);
  CHECK(vkt::count_bit_diffs(y2.download<float>(), got_y) == 0);
  CHECK(vkt::count_bit_diffs(inv2.download<float>(), got_inv) == 0);
  std::vector<float> want_stream(n);
  for (std::size_t i = 0; i < n; ++i) want_stream[i] = stream0[i] + in.x[i];
  CHECK(vkt::count_bit_diffs(got_stream, want_stream) == 0);

  const auto got_dx = dx.download<float>(), got_dw = dw.download<float>();
  std::vector<float> want_dx_acc(n), want_dw_acc(hidden);
  for (std::size_t i = 0; i < n; ++i) want_dx_acc[i] = dx0[i] + got_dx[i];
  for (std::size_t c = 0; c < hidden; ++c) want_dw_acc[c] = dw0[c] + got_dw[c];
  CHECK(vkt::count_bit_diffs(dx_acc.download<float>(), want_dx_acc) == 0);
  CHECK(vkt::count_bit_diffs(dw_acc.download<float>(), want_dw_acc) == 0);

  // one row alone (row 20 as a batch of 1): the batch's bits of y, inv, dx
  const std::uint32_t row = 20;
  const ops::RmsNorm one{1, hidden, shape.eps};
  Buffer y1 = poisoned(ctx, hidden), inv1 = poisoned(ctx, 1), dx1 = poisoned(ctx, hidden), dw1 = poisoned(ctx, hidden);
  const Buffer stream_row = stream.view(std::uint64_t{row} * hidden * 4, std::uint64_t{hidden} * 4);
  // views must sit at aligned offsets: copy the row's inputs instead when they do not
  const std::uint64_t align = std::max<std::uint64_t>(ctx.caps().min_storage_buffer_offset_alignment, 4);
  REQUIRE(std::uint64_t{row} * hidden * 4 % align == 0);
  const Buffer dy_row = dy.view(std::uint64_t{row} * hidden * 4, std::uint64_t{hidden} * 4);
  rec.add(ops::rmsnorm_fwd(ctx, stream_row, w, y1, inv1, one));
  rec.add(ops::rmsnorm_bwd(ctx, stream_row, w, inv1, dy_row, dx1, dw1, one));
  rec.run();
  const std::vector<float> y_row(got_y.begin() + row * hidden, got_y.begin() + (row + 1) * hidden),
      dx_row(got_dx.begin() + row * hidden, got_dx.begin() + (row + 1) * hidden);
  CHECK(vkt::count_bit_diffs(y1.download<float>(), y_row) == 0);
  CHECK(vkt::count_bit_diffs(inv1.download<float>(), std::vector<float>{got_inv[row]}) == 0);
  CHECK(vkt::count_bit_diffs(dx1.download<float>(), dx_row) == 0);

  // a second run of the same ops: the same bits
  Buffer y3 = poisoned(ctx, n), inv3 = poisoned(ctx, tokens), dx3 = poisoned(ctx, n), dw3 = poisoned(ctx, hidden);
  rec.add(ops::rmsnorm_fwd(ctx, stream2, w, y3, inv3, shape));
  rec.add(ops::rmsnorm_bwd(ctx, stream2, w, inv3, dy, dx3, dw3, shape));
  rec.run();
  CHECK(vkt::count_bit_diffs(y3.download<float>(), got_y) == 0);
  CHECK(vkt::count_bit_diffs(inv3.download<float>(), got_inv) == 0);
  CHECK(vkt::count_bit_diffs(dx3.download<float>(), got_dx) == 0);
  CHECK(vkt::count_bit_diffs(dw3.download<float>(), got_dw) == 0);
}

GPU_TEST("rmsnorm folds more than 65535 rows; the backward's slots take several rows each", "[ops][rmsnorm]") {
  // 66000 rows: the forward's grid folds into y; the backward's workgroups
  // hold 16 rows side by side, 17 rows each: 243 blocks of 272 rows
  const std::uint32_t tokens = 66000, hidden = 32;
  const std::size_t n = std::size_t{tokens} * hidden;
  const ops::RmsNorm shape{tokens, hidden, 1e-5f};
  const Inputs in = random_inputs(tokens, hidden, 950);
  Buffer x = ctx.upload(in.x), w = ctx.upload(in.w), dy = ctx.upload(in.dy);
  Buffer y = poisoned(ctx, n), inv = poisoned(ctx, tokens), dx = poisoned(ctx, n), dw = poisoned(ctx, hidden);
  const Dispatch fwd = ops::rmsnorm_fwd(ctx, x, w, y, inv, shape);
  CHECK(fwd.groups[1] == 2);
  Recorder rec(ctx);
  rec.add(fwd);
  const Ops bwd = ops::rmsnorm_bwd(ctx, x, w, inv, dy, dx, dw, shape);
  CHECK(bwd[0].groups[0] == 243);
  rec.add(bwd);
  rec.run();
  const auto x64 = vkt::widen(in.x), w64 = vkt::widen(in.w), dy64 = vkt::widen(in.dy);
  const vkt::RmsNormRef f = vkt::rmsnorm_fwd_ref(x64, w64, tokens, hidden, shape.eps);
  const vkt::RmsNormGradRef b = vkt::rmsnorm_bwd_ref(x64, w64, dy64, tokens, hidden, shape.eps);
  check_values("y", y.download<float>(), f.y, kTol);
  check_values("inv_rms", inv.download<float>(), f.inv, kTol);
  check_values("dx", dx.download<float>(), b.dx, kTol);
  // dw: 17 rows per slot, 16 slots, then 8 blocks per slice and 32 slices
  check_values("dw", dw.download<float>(), b.dw, (128.0 + 17 + 16 + 8 + 32) * 0x1p-24);
}

GPU_TEST("rmsnorm refuses bad shapes, small buffers and overlapping outputs", "[ops][rmsnorm][errors]") {
  const std::uint32_t tokens = 4, hidden = 8;
  Buffer x = ctx.buffer(32 * 4), w = ctx.buffer(8 * 4), y = ctx.buffer(32 * 4), inv = ctx.buffer(4 * 4),
         dy = ctx.buffer(32 * 4), dx = ctx.buffer(32 * 4), dw = ctx.buffer(8 * 4), small = ctx.buffer(3 * 4);
  const ops::RmsNorm shape{tokens, hidden, 1e-5f};
  CHECK_THROWS_WITH(ops::rmsnorm_fwd(ctx, x, w, y, inv, {0, hidden}), ContainsSubstring("rmsnorm_fwd: tokens = 0"));
  CHECK_THROWS_WITH(ops::rmsnorm_fwd(ctx, x, w, y, inv, {tokens, 16385}),
                    ContainsSubstring("rmsnorm_fwd: hidden = 16385 exceeds 16384"));
  CHECK_THROWS_WITH(ops::rmsnorm_fwd(ctx, x, w, y, inv, {tokens, hidden, -1.0f}),
                    ContainsSubstring("rmsnorm_fwd: eps = -1"));
  CHECK_THROWS_WITH(ops::rmsnorm_fwd(ctx, x, w, y, small, shape),
                    ContainsSubstring("rmsnorm_fwd: inv_rms holds 12 bytes, needs 16"));
  CHECK_THROWS_WITH(ops::rmsnorm_fwd(ctx, x, w, x, inv, shape), ContainsSubstring("rmsnorm_fwd: y overlaps x"));
  CHECK_THROWS_WITH(ops::rmsnorm_fwd_residual(ctx, x, x, w, y, inv, shape),
                    ContainsSubstring("rmsnorm_fwd_residual: stream overlaps x"));
  CHECK_THROWS_WITH(ops::rmsnorm_bwd(ctx, x, w, inv, dy, dx, small, shape),
                    ContainsSubstring("rmsnorm_bwd: dw holds 12 bytes, needs 32"));
  CHECK_THROWS_WITH(ops::rmsnorm_bwd(ctx, x, w, inv, dy, dy, dw, shape), ContainsSubstring("rmsnorm_bwd: dx overlaps dy"));
  CHECK_THROWS_WITH(ops::rmsnorm_bwd(ctx, x, w, inv, dy, dx, w, shape), ContainsSubstring("rmsnorm_bwd: dw overlaps w"));
}
