// The Recorder: barriers exactly where the data needs them, Graph replays,
// buffer views, VKBLR_BARRIERS-independent results, profiler output,
// determinism and refusals; branches side by side (parallel) and the
// transients it provides.
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <chrono>
#include <nlohmann/json.hpp>

#include "support/gpu.hpp"
#include "support/host.hpp"
#include "vkblr/ops/colsum.hpp"
#include "vkblr/ops/cvt.hpp"
#include "vkblr/ops/scale.hpp"
#include "vkblr/profiler.hpp"
#include "vkblr/recorder.hpp"

using namespace vkblr;

GPU_TEST("a chain of dependent dispatches gets one barrier per dependency", "[recorder]") {
  const std::uint32_t m = 70, k = 300;
  const auto a = vkt::random_floats(std::size_t{m} * k, 1), col = vkt::random_floats(k, 2);
  Buffer ba = ctx.upload(a), bcol = ctx.upload(col), t1 = ctx.buffer(std::size_t{m} * k * 4),
         t2 = ctx.buffer(std::size_t{m} * k * 4), t3 = ctx.buffer(std::size_t{m} * k * 4);
  t3.fill(vkt::kPoison32);
  Recorder rec(ctx);
  rec.add(ops::scale_acc(ctx, ba, bcol, t1, m, k, false));  // t1 = a·col
  rec.add(ops::scale_acc(ctx, t1, bcol, t2, m, k, false));  // reads t1: barrier
  rec.add(ops::scale_acc(ctx, t2, bcol, t3, m, k, false));  // reads t2: barrier
  rec.add(ops::scale_acc(ctx, t1, bcol, t3, m, k, true));   // writes t3 (written): barrier
  CHECK(rec.barriers() == 3);
  CHECK(rec.dispatches() == 4);
  rec.run();
  const auto got = t3.download<float>();
  std::size_t bad = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const float c = col[i % k];
    const float x1 = a[i] * c, x2 = x1 * c, x3 = x2 * c;
    bad += got[i] != x3 + x1 * c;
  }
  CHECK(bad == 0);
}

GPU_TEST("independent dispatches get no barrier; a write after a read gets one", "[recorder]") {
  const std::uint32_t m = 16, k = 64;
  Buffer a = ctx.upload(vkt::random_floats(m * k, 3)), col = ctx.upload(vkt::random_floats(k, 4));
  std::vector<Buffer> outs;
  for (int i = 0; i < 4; ++i) outs.push_back(ctx.buffer(m * k * 4));
  Recorder rec(ctx);
  for (const Buffer& o : outs) rec.add(ops::scale_acc(ctx, a, col, o, m, k, false));  // all read a, write their own
  CHECK(rec.barriers() == 0);
  rec.add(ops::scale_acc(ctx, outs[1], col, a, m, k, false));  // writes a, read above: WAR
  CHECK(rec.barriers() == 1);
  rec.barrier();
  CHECK(rec.barriers() == 2);
  rec.run();
}

GPU_TEST("views of one buffer are tracked by their byte ranges", "[recorder]") {
  const std::uint32_t n = 256;  // floats per half: 1 KiB, a multiple of any storage alignment
  Buffer whole = ctx.buffer(2 * n * 4), col = ctx.upload(std::vector<float>(n, 2.0f));
  const auto v = vkt::random_floats(2 * n, 5);
  whole.upload(v);
  Buffer lo = whole.view(0, n * 4), hi = whole.view(n * 4, n * 4);
  CHECK(hi.offset() == n * 4);
  CHECK(hi.is_view());
  Buffer out = ctx.buffer(n * 4);
  Recorder rec(ctx);
  rec.add(ops::scale_acc(ctx, lo, col, out, 1, n, false));  // reads lo
  rec.add(ops::scale_acc(ctx, out, col, hi, 1, n, false));  // reads out (written): barrier; writes hi
  CHECK(rec.barriers() == 1);
  rec.add(ops::scale_acc(ctx, lo, col, out, 1, n, true));  // lo untouched by the write of hi: only the out hazard
  CHECK(rec.barriers() == 2);
  rec.run();
  const auto got = whole.download<float>();
  std::size_t bad = 0;
  for (std::uint32_t i = 0; i < n; ++i) {
    bad += got[i] != v[i];
    bad += got[n + i] != v[i] * 2.0f * 2.0f;
  }
  CHECK(bad == 0);
  CHECK(hi.download<float>(4) == std::vector<float>(got.begin() + n, got.begin() + n + 4));
  CHECK_THROWS_AS(whole.view(2 * n * 4, 4), Error);
}

GPU_TEST("a Graph replays without re-recording", "[recorder]") {
  const std::uint32_t m = 8, k = 32;
  Buffer a = ctx.upload(vkt::random_floats(m * k, 6)), col = ctx.upload(std::vector<float>(k, 1.0f)),
         acc = ctx.upload(std::vector<float>(m * k, 0.0f));
  Recorder rec(ctx);
  rec.add(ops::scale_acc(ctx, a, col, acc, m, k, true));
  Graph g = rec.finish();
  CHECK(rec.empty());
  CHECK(g.dispatches() == 1);
  const std::uint64_t submits = ctx.profiler().counters().submits;
  for (int i = 0; i < 5; ++i) g.run();
  CHECK(ctx.profiler().counters().submits - submits == 5);
  const auto got = acc.download<float>();
  const auto av = a.download<float>();
  std::size_t bad = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    float want = 0;
    for (int r = 0; r < 5; ++r) want = want + av[i];
    bad += got[i] != want;
  }
  CHECK(bad == 0);
  g.submit();
  CHECK_THROWS_AS(g.submit(), Error);  // not waited for
  g.wait();
}

GPU_TEST("the device's busy time counts every completed batch, within the host's wall time", "[recorder]") {
  const std::uint32_t m = 512, k = 1024;
  Buffer a = ctx.upload(vkt::random_floats(std::size_t{m} * k, 9)), col = ctx.upload(vkt::random_floats(k, 10)),
         out = ctx.buffer(std::size_t{m} * k * 4);
  Recorder rec(ctx);
  for (int i = 0; i < 8; ++i) rec.add(ops::scale_acc(ctx, a, col, out, m, k, i > 0));
  Graph g = rec.finish();
  const std::uint64_t before = ctx.profiler().counters().device_busy_ns;
  const auto t0 = std::chrono::steady_clock::now();
  g.run();
  g.run();
  const auto wall_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0);
  const std::uint64_t busy = ctx.profiler().counters().device_busy_ns - before;
  if (!ctx.caps().timestamps) {
    CHECK(busy == 0);
    return;
  }
  CHECK(busy > 0);
  CHECK(busy <= static_cast<std::uint64_t>(wall_ns.count()));
  // a submit without its wait adds nothing yet
  g.submit();
  CHECK(ctx.profiler().counters().device_busy_ns - before == busy);
  g.wait();
  CHECK(ctx.profiler().counters().device_busy_ns - before > busy);
}

GPU_TEST("a batch gives the same bits run after run", "[recorder][determinism]") {
  const std::uint32_t m = 257, k = 129;
  Buffer x = ctx.upload(vkt::random_floats(std::size_t{m} * k, 7, 3.0f)), col = ctx.upload(vkt::random_floats(k, 8));
  Buffer h = ctx.buffer((std::size_t{m} * k + 1) / 2 * 4), t = ctx.buffer(std::size_t{160} * 288 * 2),
         y = ctx.buffer(std::size_t{m} * k * 4);
  auto run = [&] {
    h.fill(vkt::kPoison16x2);
    t.fill(vkt::kPoison16x2);
    y.fill(vkt::kPoison32);
    Recorder rec(ctx);
    rec.add(ops::cvt_col(ctx, x, col, h, m, k, 3.0f));
    rec.add(ops::cvt_t(ctx, x, &col, t, m, k, 3.0f, 160, 288));
    rec.add(ops::scale_acc(ctx, x, col, y, m, k, false));
    rec.add(ops::scale_acc(ctx, x, col, y, m, k, true));
    rec.run();
    auto a = h.download<std::uint32_t>();
    const auto b = t.download<std::uint32_t>(), c = y.download<std::uint32_t>();
    a.insert(a.end(), b.begin(), b.end());
    a.insert(a.end(), c.begin(), c.end());
    return a;
  };
  const auto first = run();
  CHECK(vkt::count_bit_diffs(run(), first) == 0);
}

GPU_TEST("the profiler times dispatches and writes a Chrome trace", "[recorder]") {
  if (!ctx.caps().timestamps) SKIP("device has no timestamps");
  Profiler& prof = ctx.profiler();
  prof.reset();
  prof.enable(true);
  Buffer a = ctx.upload(vkt::random_floats(4096, 9)), col = ctx.upload(vkt::random_floats(64, 10)),
         o = ctx.buffer(4096 * 4);
  Recorder rec(ctx);
  rec.add(ops::scale_acc(ctx, a, col, o, 64, 64, false));
  rec.tag("sign");
  rec.add(ops::scale_acc(ctx, a, col, o, 64, 64, true));
  Graph g = rec.finish();
  prof.enable(false);
  g.run();
  g.run();
  CHECK(prof.events().size() == 4);
  CHECK(prof.totals().at("scale_acc").count == 4);
  CHECK(prof.tag_totals().at("sign").count == 2);
  const auto trace = nlohmann::json::parse(prof.chrome_trace());
  REQUIRE(trace["traceEvents"].size() == 4);
  CHECK(trace["traceEvents"][0]["ph"] == "X");
  CHECK(trace["traceEvents"][1]["cat"] == "sign");
  CHECK(prof.summary().find("scale_acc") != std::string::npos);
  // a batch recorded while the profiler was off carries no timestamps
  Recorder off(ctx);
  off.add(ops::scale_acc(ctx, a, col, o, 64, 64, false));
  off.run();
  CHECK(prof.events().size() == 4);
  prof.reset();
}

GPU_TEST("the recorder refuses bad fills, copies and grids", "[recorder][errors]") {
  Buffer a = ctx.buffer(64), b = ctx.buffer(64);
  Recorder rec(ctx);
  CHECK_THROWS_AS(rec.fill(a, 0, 2, 8), Error);
  CHECK_THROWS_AS(rec.fill(a, 0, 0, 128), Error);
  CHECK_THROWS_AS(rec.copy(a, b, 65), Error);
  CHECK_THROWS_AS(rec.copy(a, a, 32, 0, 16), Error);  // overlapping ranges
  Dispatch d = ops::scale_acc(ctx, a, b, b, 1, 16, false);
  d.groups = {ctx.caps().max_workgroup_count[0] + 1u, 1, 1};
  CHECK_THROWS_AS(rec.add(d), Error);
  Dispatch e = ops::scale_acc(ctx, a, b, b, 1, 16, false);
  e.push_size = 4;
  CHECK_THROWS_AS(rec.add(e), Error);
}

GPU_TEST("parallel records branches step by step and pass by pass, each op under its tag", "[recorder]") {
  if (!ctx.caps().timestamps) SKIP("device has no timestamps");
  const std::uint32_t m = 300, k = 200;
  Buffer a0 = ctx.upload(vkt::random_floats(std::size_t{m} * k, 11)), a1 = ctx.upload(vkt::random_floats(m * k, 12));
  Buffer col = ctx.upload(vkt::random_floats(k, 13)), after = ctx.buffer(std::size_t{m} * k * 4);
  // every output's words after recording the ops by `record`
  auto run = [&](auto&& record) {
    Buffer sum0 = ctx.upload(std::vector<float>(k, 1.0f)), sum1 = ctx.upload(std::vector<float>(k, 2.0f));
    Buffer o1 = ctx.buffer(std::size_t{m} * k * 4), o0 = ctx.buffer(std::size_t{k} * 4);
    const Ops r0 = ops::colsum_prod(ctx, a0, a1, sum0, m, k), r1 = ops::colsum_prod(ctx, a1, a1, sum1, m, k);
    const Dispatch s1 = ops::scale_acc(ctx, a1, col, o1, m, k, false);
    const Dispatch s0 = ops::scale_acc(ctx, sum0, col, o0, 1, k, false);  // reads branch 0's sum
    record(r0, r1, s1, s0);
    std::vector<std::uint32_t> out;
    for (const Buffer* b : {&sum0, &sum1, &o1, &o0}) {
      const auto v = b->download<std::uint32_t>();
      out.insert(out.end(), v.begin(), v.end());
    }
    return out;
  };
  const auto in_turn = run([&](const Ops& r0, const Ops& r1, const Dispatch& s1, const Dispatch& s0) {
    Recorder rec(ctx);
    rec.add(r0).add(r1).add(s1).add(s0).run();
  });
  Profiler& prof = ctx.profiler();
  prof.reset();
  prof.enable(true);
  std::uint32_t barriers = 0;
  const auto side_by_side = run([&](const Ops& r0, const Ops& r1, const Dispatch& s1, const Dispatch& s0) {
    const Branch branches[] = {{{{"", r0}}, {{"", {s0}}}},  // two steps
                               {{{"b", r1}, {"b2", {s1}}}}};   // one step of two ops
    Recorder rec(ctx);
    rec.tag("outer");
    rec.parallel(branches);
    rec.add(ops::scale_acc(ctx, a1, col, after, m, k, false));  // after the branches, under the outer tag
    barriers = rec.barriers();
    rec.run();
  });
  prof.enable(false);
  CHECK(vkt::count_bit_diffs(side_by_side, in_turn) == 0);
  CHECK(barriers == 2);  // first passes | second passes | s0 (reads sum0), the last
  std::vector<std::string> order;
  for (const ProfileEvent& e : prof.events()) order.push_back(e.tag + "/" + e.name);
  const std::vector<std::string> want = {"outer/colsum_part",  "b/colsum_part",   "b2/scale_acc",
                                         "outer/colsum_finish", "b/colsum_finish", "outer/scale_acc",
                                         "outer/scale_acc"};
  CHECK(order == want);
  prof.reset();
}

GPU_TEST("transients: ops side by side get their own, later ops reuse them past a barrier, the graph keeps them",
         "[recorder]") {
  const std::uint32_t m = 300, k = 200;
  const auto av = vkt::random_floats(std::size_t{m} * k, 21), bv = vkt::random_floats(std::size_t{m} * k, 22);
  Buffer a = ctx.upload(av), b = ctx.upload(bv);
  // s = Σ_rows a·b alone, to predict the sums below bit for bit
  Buffer alone = ctx.upload(std::vector<float>(k, 0.0f));
  Recorder first(ctx);
  first.add(ops::colsum_prod(ctx, a, b, alone, m, k));
  const std::uint64_t partials = first.transient_bytes();
  CHECK(partials > 0);
  first.run();
  const auto s = alone.download<float>();

  // one after the other: the second runs right after the first's last use
  // of its partials (no barrier between), so it gets its own; the third
  // comes after a barrier and takes the first's again
  Buffer sum = ctx.upload(std::vector<float>(k, 1.0f));
  const Ops op = ops::colsum_prod(ctx, a, b, sum, m, k);  // the same Ops, recorded three times
  Recorder rec(ctx);
  rec.add(op).add(op).add(op);
  CHECK(rec.transient_bytes() == 2 * partials);
  Graph g = rec.finish();
  CHECK(rec.transient_bytes() == 0);
  CHECK(g.transient_bytes() == 2 * partials);
  g.run();
  g.run();  // a replay, on the transients the graph kept
  const auto got = sum.download<float>();
  std::size_t bad = 0;
  for (std::uint32_t c = 0; c < k; ++c) {
    float want = 1.0f;
    for (int i = 0; i < 6; ++i) want = want + s[c];
    bad += got[c] != want;
  }
  CHECK(bad == 0);

  // side by side: each branch its own
  std::vector<Buffer> sums;
  std::vector<Branch> branches;
  for (int i = 0; i < 3; ++i) {
    sums.push_back(ctx.upload(std::vector<float>(k, 0.0f)));
    branches.push_back({{{"", ops::colsum_prod(ctx, a, b, sums.back(), m, k)}}});
  }
  Recorder together(ctx);
  together.parallel(branches);
  CHECK(together.transient_bytes() == 3 * partials);
  CHECK(together.barriers() == 1);
  together.run();
  for (const Buffer& each : sums) {
    CHECK(vkt::count_bit_diffs(each.download<std::uint32_t>(), alone.download<std::uint32_t>()) == 0);
  }

  // an op holds its transient until its last dispatch, across barriers:
  // branch 0's partials outlive the barrier its own chain needs, and branch
  // 1's reduction, first recorded after that barrier, gets other partials
  Buffer held = ctx.upload(std::vector<float>(k, 0.0f)), other = ctx.upload(std::vector<float>(k, 0.0f));
  Buffer col = ctx.upload(vkt::random_floats(k, 23)), t1 = ctx.buffer(std::size_t{m} * k * 4),
         t2 = ctx.buffer(std::size_t{m} * k * 4), u = ctx.buffer(std::size_t{m} * k * 4);
  const Ops reduce0 = ops::colsum_prod(ctx, a, b, held, m, k);
  const Ops long_op = {reduce0[0], ops::scale_acc(ctx, a, col, t1, m, k, false),
                       ops::scale_acc(ctx, t1, col, t2, m, k, false), reduce0[1]};  // a barrier before the third
  const Ops reduce1 = ops::colsum_prod(ctx, a, a, other, m, k);  // other sums than branch 0's
  const Ops late_op = {ops::scale_acc(ctx, b, col, u, m, k, false), ops::scale_acc(ctx, b, col, u, m, k, true),
                       reduce1[0], reduce1[1]};
  const Branch apart[] = {{{{"", long_op}}}, {{{"", late_op}}}};
  Recorder across(ctx);
  across.parallel(apart);
  CHECK(across.transient_bytes() == 2 * partials);
  across.run();
  Buffer squares = ctx.upload(std::vector<float>(k, 0.0f));
  Recorder by_itself(ctx);
  by_itself.add(ops::colsum_prod(ctx, a, a, squares, m, k)).run();
  CHECK(vkt::count_bit_diffs(held.download<std::uint32_t>(), alone.download<std::uint32_t>()) == 0);
  CHECK(vkt::count_bit_diffs(other.download<std::uint32_t>(), squares.download<std::uint32_t>()) == 0);

  // a transient's dispatches are recorded with their Ops, not one by one
  Recorder single(ctx);
  CHECK_THROWS_WITH(single.add(op.front()), Catch::Matchers::ContainsSubstring("binds a transient"));
  CHECK(single.empty());
}
