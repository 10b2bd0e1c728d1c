// Token embedding: the lookup copies table rows exactly (an out-of-range id
// gives a NaN row), the gradient matches the f64 reference and is bit for
// bit the host's f32 sum in position order (the order the op promises),
// accumulation ≡ one more f32 addition, the same bits run after run, the
// index is a stable sort that refuses bad ids, bad shapes are refused.
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <cmath>
#include <cstring>

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
// `tokens` ids in [0, vocab): a third of them one frequent id (a long
// segment, like a padding or "the" token), the rest uniform; a few table
// rows are never used.
std::vector<std::uint32_t> skewed_ids(std::uint32_t tokens, std::uint32_t vocab, std::uint64_t seed) {
  vkt::Rng r(seed);
  std::vector<std::uint32_t> ids(tokens);
  for (auto& id : ids) id = r.below(3) == 0 ? 7 % vocab : r.below(vocab);
  return ids;
}

// The promised arithmetic on the host, in f32: per table element, +0 then
// dy of each of its tokens in ascending position; for an id of more than 32
// tokens, +0 then the sums of its runs of 32 tokens (the last shorter), each
// summed so.
std::vector<float> host_grad_f32(const std::vector<std::uint32_t>& ids, const std::vector<float>& dy,
                                 std::uint32_t vocab, std::uint32_t hidden) {
  std::vector<std::vector<std::size_t>> tokens_of(vocab);
  for (std::size_t t = 0; t < ids.size(); ++t) tokens_of[ids[t]].push_back(t);
  std::vector<float> g(std::size_t{vocab} * hidden, 0.0f);
  for (std::uint32_t v = 0; v < vocab; ++v) {
    const auto& ts = tokens_of[v];
    const std::size_t run = ts.size() <= 32 ? ts.size() : 32;
    for (std::uint32_t c = 0; c < hidden; ++c) {
      float total = 0.0f;
      for (std::size_t k = 0; k < ts.size(); k += run) {
        float piece = 0.0f;
        for (std::size_t i = k; i < std::min(ts.size(), k + run); ++i) piece += dy[ts[i] * hidden + c];
        total += piece;
      }
      g[std::size_t{v} * hidden + c] = total;
    }
  }
  return g;
}
}  // namespace

TEST_CASE("embedding_index is a stable counting sort and refuses ids out of range", "[ops][embedding]") {
  const std::vector<std::uint32_t> ids{3, 1, 3, 0, 3, 1};
  const ops::EmbeddingIndex index = ops::embedding_index(ids, 5);
  CHECK(index.offsets == std::vector<std::uint32_t>{0, 1, 3, 3, 6, 6});
  CHECK(index.positions == std::vector<std::uint32_t>{3, 1, 5, 0, 2, 4});
  CHECK(index.chunks == std::vector<std::uint32_t>(2 * 3, 0));  // no segment longer than 32

  // 40 tokens of id 1 after 30 of id 0, then 70 of id 2 (segments 30, 40
  // and 70 long at positions 0, 30 and 70): 2 + 3 pieces, the slots
  // 2·⌊begin/32⌋ + j; 2·ceil(140/32) = 10 entries
  std::vector<std::uint32_t> runs(30, 0);
  runs.insert(runs.end(), 40, 1);
  runs.insert(runs.end(), 70, 2);
  const ops::EmbeddingIndex long_runs = ops::embedding_index(runs, 3);
  std::vector<std::uint32_t> want{30, 62, 0, 62, 70, 1, 70, 102, 4, 102, 134, 5, 134, 140, 6};
  want.resize(10 * 3, 0);
  CHECK(long_runs.chunks == want);
  const std::vector<std::uint32_t> bad{0, 4, 5, 1};
  CHECK_THROWS_WITH(ops::embedding_index(bad, 5),
                    ContainsSubstring("embedding_index: ids[2] = 5 is out of range (vocab = 5)"));
  CHECK_THROWS_WITH(ops::embedding_index(std::vector<std::uint32_t>{}, 5),
                    ContainsSubstring("embedding_index: no ids"));
  CHECK_THROWS_WITH(ops::embedding_index(ids, 0), ContainsSubstring("embedding_index: vocab = 0"));
}

GPU_TEST("embedding forward copies rows; backward matches the f64 reference and the promised f32 order",
         "[ops][embedding]") {
  // vocab 272 (the reference model's), hidden 40 and 520 (the backward in
  // vec4) and 42 (in floats); 300 tokens, a third of them id 7 (a 100-long
  // segment)
  for (const std::uint32_t hidden : {40u, 42u, 520u}) {
    INFO("hidden = " << hidden);
    const std::uint32_t tokens = 300, vocab = 272;
    const ops::Embedding shape{tokens, vocab, hidden};
    auto ids = skewed_ids(tokens, vocab, 960 + hidden);
    const auto table_h = vkt::random_floats(std::size_t{vocab} * hidden, 961, 1.0f);
    const auto dy_h = vkt::random_floats(std::size_t{tokens} * hidden, 962, 1.0f);
    const ops::EmbeddingIndex index = ops::embedding_index(ids, vocab);
    // the device lookup of an out-of-range id: a NaN row (the index refused it above had it been there)
    auto ids_dev = ids;
    ids_dev[11] = vocab;
    ids_dev[12] = 0xffffffffu;
    Buffer ids_b = ctx.upload(ids_dev), table = ctx.upload(table_h), dy = ctx.upload(dy_h);
    Buffer offsets = ctx.upload(index.offsets), positions = ctx.upload(index.positions),
           chunks = ctx.upload(index.chunks);
    Buffer out = poisoned(ctx, std::size_t{tokens} * hidden), dtable = poisoned(ctx, std::size_t{vocab} * hidden);
    Recorder rec(ctx);
    rec.add(ops::embedding_fwd(ctx, ids_b, table, out, shape));
    rec.add(ops::embedding_bwd(ctx, dy, offsets, positions, chunks, dtable, shape));
    rec.run();

    const auto got = out.download<float>();
    std::vector<float> want(got.size());
    for (std::uint32_t t = 0; t < tokens; ++t) {
      for (std::uint32_t c = 0; c < hidden; ++c) {
        const std::size_t i = std::size_t{t} * hidden + c;
        if (t == 11 || t == 12) {
          const std::uint32_t nan = 0x7fc00000u;
          std::memcpy(&want[i], &nan, 4);
        } else {
          want[i] = table_h[std::size_t{ids[t]} * hidden + c];
        }
      }
    }
    CHECK(vkt::count_bit_diffs(got, want) == 0);

    const auto grad = dtable.download<float>();
    CHECK(vkt::count_bit_diffs(grad, host_grad_f32(ids, dy_h, vocab, hidden)) == 0);
    // against f64: a segment of k terms is within k ulps of Σ|dy|
    vkt::RefValues ref(grad.size());
    std::vector<double> count(vocab, 0.0);
    for (std::uint32_t t = 0; t < tokens; ++t) {
      count[ids[t]] += 1;
      for (std::uint32_t c = 0; c < hidden; ++c) {
        const std::size_t i = std::size_t{ids[t]} * hidden + c;
        ref.value[i] += dy_h[std::size_t{t} * hidden + c];
        ref.magnitude[i] += std::abs(dy_h[std::size_t{t} * hidden + c]);
      }
    }
    const vkt::Worst w = vkt::worst_error(grad, ref, (tokens / 3.0 + 60) * 0x1p-24);
    INFO("worst error " << w.ratio << " of the tolerance at " << w.at);
    CHECK(w.ratio <= 1.0);
    std::size_t unused = 0;
    for (std::uint32_t v = 0; v < vocab; ++v) {
      if (count[v] > 0) continue;
      ++unused;
      for (std::uint32_t c = 0; c < hidden; ++c) CHECK(grad[std::size_t{v} * hidden + c] == 0.0f);
    }
    CHECK(unused > 0);  // the test covers rows no token uses
  }
}

GPU_TEST("embedding's gradient of a frequent id has the same bits wherever its segment starts", "[ops][embedding]") {
  // id 7 holds about a third of 300 tokens (pieces of 32); a second batch
  // moves every id below 7 to 9, so id 7's segment starts at position 0
  // instead of past them, with its tokens and their dy unchanged
  const std::uint32_t tokens = 300, vocab = 272, hidden = 40;
  const ops::Embedding shape{tokens, vocab, hidden};
  const auto ids = skewed_ids(tokens, vocab, 980);
  auto moved = ids;
  for (auto& id : moved) id = id < 7 ? 9 : id;
  const auto dy_h = vkt::random_floats(std::size_t{tokens} * hidden, 981, 1.0f);
  const ops::EmbeddingIndex a = ops::embedding_index(ids, vocab), b = ops::embedding_index(moved, vocab);
  REQUIRE(a.offsets[8] - a.offsets[7] > 2 * ops::kEmbeddingChunk);  // three pieces or more
  REQUIRE(b.offsets[7] == 0);
  REQUIRE(a.offsets[7] % ops::kEmbeddingChunk != 0);  // the pieces sit at other slots, cut elsewhere in positions
  Buffer dy = ctx.upload(dy_h);
  Buffer a_offsets = ctx.upload(a.offsets), a_positions = ctx.upload(a.positions), a_chunks = ctx.upload(a.chunks);
  Buffer b_offsets = ctx.upload(b.offsets), b_positions = ctx.upload(b.positions), b_chunks = ctx.upload(b.chunks);
  Buffer ga = poisoned(ctx, std::size_t{vocab} * hidden), gb = poisoned(ctx, std::size_t{vocab} * hidden);
  Recorder rec(ctx);
  rec.add(ops::embedding_bwd(ctx, dy, a_offsets, a_positions, a_chunks, ga, shape));
  rec.add(ops::embedding_bwd(ctx, dy, b_offsets, b_positions, b_chunks, gb, shape));
  rec.run();
  const auto got_a = ga.download<float>(), got_b = gb.download<float>();
  const std::vector<float> row_a(got_a.begin() + 7 * hidden, got_a.begin() + 8 * hidden),
      row_b(got_b.begin() + 7 * hidden, got_b.begin() + 8 * hidden);
  CHECK(vkt::count_bit_diffs(row_a, row_b) == 0);
  CHECK(vkt::count_bit_diffs(got_b, host_grad_f32(moved, dy_h, vocab, hidden)) == 0);
}

GPU_TEST("embedding's gradient matches finite differences; accumulation ≡ f32 addition; same bits every run",
         "[ops][embedding]") {
  const std::uint32_t tokens = 64, vocab = 50;
  // hidden 24: the backward in vec4; 26: in floats
  for (const std::uint32_t hidden : {24u, 26u}) {
    INFO("hidden = " << hidden);
    const ops::Embedding shape{tokens, vocab, hidden};
    const auto ids = skewed_ids(tokens, vocab, 970);
    const auto table_h = vkt::random_floats(std::size_t{vocab} * hidden, 971, 1.0f);
    const auto dy_h = vkt::random_floats(std::size_t{tokens} * hidden, 972, 1.0f);
    const auto acc0 = vkt::random_floats(std::size_t{vocab} * hidden, 973, 1.0f);

    // L(table) = Σ dy·out in f64, central differences on every table element:
    // L is linear, so the differences are its gradient up to rounding
    const auto table64 = vkt::widen(table_h), dy64 = vkt::widen(dy_h);
    auto loss = [&](const std::vector<double>& table) {
      double l = 0;
      for (std::uint32_t t = 0; t < tokens; ++t) {
        for (std::uint32_t c = 0; c < hidden; ++c) l += dy64[t * hidden + c] * table[ids[t] * hidden + c];
      }
      return l;
    };
    std::vector<std::size_t> all(table64.size());
    for (std::size_t i = 0; i < all.size(); ++i) all[i] = i;
    vkt::RefValues fd(table64.size());
    fd.value = vkt::finite_differences(table64, loss, all);
    for (std::uint32_t t = 0; t < tokens; ++t) {
      for (std::uint32_t c = 0; c < hidden; ++c) fd.magnitude[ids[t] * hidden + c] += std::abs(dy64[t * hidden + c]);
    }
    for (auto& m : fd.magnitude) m = std::max(m, 1.0);  // unused rows: 0 within 1e-5 absolute

    const ops::EmbeddingIndex index = ops::embedding_index(ids, vocab);
    Buffer dy = ctx.upload(dy_h), offsets = ctx.upload(index.offsets), positions = ctx.upload(index.positions),
           chunks = ctx.upload(index.chunks);
    Buffer g1 = poisoned(ctx, table64.size()), g2 = poisoned(ctx, table64.size()), acc = ctx.upload(acc0);
    Recorder rec(ctx);
    rec.add(ops::embedding_bwd(ctx, dy, offsets, positions, chunks, g1, shape));
    rec.add(ops::embedding_bwd(ctx, dy, offsets, positions, chunks, g2, shape));
    rec.add(ops::embedding_bwd(ctx, dy, offsets, positions, chunks, acc, shape, true));
    rec.run();
    const auto got = g1.download<float>();
    const vkt::Worst w = vkt::worst_error(got, fd, 1e-5);
    INFO("worst error against differences " << w.ratio << " of the tolerance at " << w.at);
    CHECK(w.ratio <= 1.0);
    CHECK(vkt::count_bit_diffs(g2.download<float>(), got) == 0);
    std::vector<float> want_acc(acc0.size());
    for (std::size_t i = 0; i < acc0.size(); ++i) want_acc[i] = acc0[i] + got[i];
    CHECK(vkt::count_bit_diffs(acc.download<float>(), want_acc) == 0);
  }
}

GPU_TEST("embedding refuses bad shapes, small buffers and overlapping outputs", "[ops][embedding][errors]") {
  const ops::Embedding shape{4, 10, 8};
  Buffer ids = ctx.buffer(4 * 4), table = ctx.buffer(80 * 4), out = ctx.buffer(32 * 4), dy = ctx.buffer(32 * 4),
         offsets = ctx.buffer(11 * 4), positions = ctx.buffer(4 * 4), chunks = ctx.buffer(2 * 3 * 4),
         small = ctx.buffer(3 * 4);
  CHECK_THROWS_WITH(ops::embedding_fwd(ctx, ids, table, out, {0, 10, 8}), ContainsSubstring("embedding_fwd: tokens = 0"));
  CHECK_THROWS_WITH(ops::embedding_fwd(ctx, ids, table, out, {4, 10, 0}), ContainsSubstring("embedding_fwd: hidden = 0"));
  CHECK_THROWS_WITH(ops::embedding_fwd(ctx, ids, table, out, {4, 0x10000000u, 16}),
                    ContainsSubstring("embedding_fwd: 4294967296 elements exceed 32-bit indexing"));
  CHECK_THROWS_WITH(ops::embedding_fwd(ctx, small, table, out, shape),
                    ContainsSubstring("embedding_fwd: ids holds 12 bytes, needs 16"));
  CHECK_THROWS_WITH(ops::embedding_fwd(ctx, ids, small, out, shape),
                    ContainsSubstring("embedding_fwd: table holds 12 bytes, needs 320"));
  CHECK_THROWS_WITH(ops::embedding_fwd(ctx, ids, table, table, shape), ContainsSubstring("embedding_fwd: out overlaps table"));
  CHECK_THROWS_WITH(ops::embedding_bwd(ctx, dy, small, positions, chunks, table, shape),
                    ContainsSubstring("embedding_bwd: offsets holds 12 bytes, needs 44"));
  CHECK_THROWS_WITH(ops::embedding_bwd(ctx, dy, offsets, positions, small, table, shape),
                    ContainsSubstring("embedding_bwd: chunks holds 12 bytes, needs 24"));
  CHECK_THROWS_WITH(ops::embedding_bwd(ctx, dy, offsets, positions, chunks, small, shape),
                    ContainsSubstring("embedding_bwd: dtable holds 12 bytes, needs 320"));
  CHECK_THROWS_WITH(ops::embedding_bwd(ctx, table, offsets, positions, chunks, table, shape),
                    ContainsSubstring("embedding_bwd: dtable overlaps dy"));
  CHECK_THROWS_WITH(ops::embedding_bwd(ctx, dy, offsets, positions, table, table, shape),
                    ContainsSubstring("embedding_bwd: dtable overlaps chunks"));
}
