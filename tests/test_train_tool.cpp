// vkblr-train's host pieces (tools/vkblr-train/, vkblr_train_core): the
// learning-rate schedule against qat_peer.py's formula, the data order
// (permutations per pass, a function of the step), training windows from a
// 1-D stream or a 2-D file and their refusals, the held-out byte count from
// tokens.json, the progress's JSON round trip and its checks, the byte
// prompts and the side-by-side text.
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <algorithm>
#include <cmath>
#include <fstream>
#include <numbers>
#include <set>

#include "support/fit_files.hpp"
#include "vkblr-train/sample.hpp"
#include "vkblr-train/token_windows.hpp"
#include "vkblr-train/train_progress.hpp"
#include "vkblr-train/train_run.hpp"

using namespace vkblr::train;
using Catch::Matchers::ContainsSubstring;

namespace {

// A '<u2' .npy of `ids`: 1-D, or 2-D with `cols` columns.
void write_npy(const std::string& path, const std::vector<std::uint16_t>& ids, std::uint64_t cols = 0) {
  const std::string shape = cols ? "(" + std::to_string(ids.size() / cols) + ", " + std::to_string(cols) + ")"
                                 : "(" + std::to_string(ids.size()) + ",)";
  vkt::write_raw_file(path, vkt::npy_bytes(1, "{'descr': '<u2', 'fortran_order': False, 'shape': " + shape + ", }",
                                           std::string(reinterpret_cast<const char*>(ids.data()), ids.size() * 2)));
}

using vkt::error_of;

}  // namespace

TEST_CASE("train tool: the schedule is qat_peer.py's, warm-up then cosine to 0", "[train]") {
  // qat_peer.py: (step + 1) / warmup for step < warmup, else
  // 0.5 (1 + cos(π (step − warmup) / max(1, steps − warmup)))
  CHECK(lr_factor(0, 100, 10) == 0.1);
  CHECK(lr_factor(9, 100, 10) == 1.0);
  CHECK(lr_factor(10, 100, 10) == 1.0);
  CHECK(lr_factor(55, 100, 10) == 0.5 * (1 + std::cos(std::numbers::pi * 45 / 90)));
  CHECK(lr_factor(99, 100, 10) == 0.5 * (1 + std::cos(std::numbers::pi * 89 / 90)));
  CHECK(lr_factor(0, 1, 0) == 1.0);
  CHECK(lr_factor(3, 4, 0) == 0.5 * (1 + std::cos(std::numbers::pi * 3 / 4)));
}

TEST_CASE("train tool: the data order is a permutation per pass, a function of the step", "[train]") {
  DataOrder order(10, 3, 7);  // 3 steps per pass; one window waits for the next pass
  CHECK(order.steps_per_pass() == 3);
  std::vector<std::vector<std::uint32_t>> steps;
  for (std::uint64_t s = 0; s < 9; ++s) steps.push_back(order.windows(s));
  for (std::uint64_t pass = 0; pass < 3; ++pass) {
    std::set<std::uint32_t> seen;
    for (std::uint64_t s = 3 * pass; s < 3 * pass + 3; ++s) {
      REQUIRE(steps[s].size() == 3);
      for (const std::uint32_t w : steps[s]) {
        CHECK(w < 10);
        CHECK(seen.insert(w).second);  // no window twice in a pass
      }
    }
  }
  CHECK(steps[0] != steps[3]);  // reshuffled
  // another instance (a resumed run) jumping straight to step 7, then back
  DataOrder again(10, 3, 7);
  CHECK(again.windows(7) == steps[7]);
  CHECK(again.windows(1) == steps[1]);
  CHECK(again.pass(7) == 2);
  CHECK(again.position(7) == 3);
  CHECK(DataOrder(10, 3, 8).windows(0) != steps[0]);  // another seed
  // numpy's order: np.random.Generator(np.random.PCG64(7)).permutation(10), twice
  CHECK(steps[0] == std::vector<std::uint32_t>{8, 0, 7});
  CHECK(steps[2] == std::vector<std::uint32_t>{2, 4, 5});
  CHECK(steps[3] == std::vector<std::uint32_t>{4, 2, 8});
  CHECK_THAT(error_of([] { DataOrder(2, 3, 1); }), ContainsSubstring("--batch 3: the training data has 2 windows"));
}

TEST_CASE("train tool: numpy's permutations, bit for bit", "[train]") {
  // np.random.Generator(np.random.PCG64(seed)).permutation(n), written by numpy 2.2.4 (the peer's order)
  NumpyPermutations one(1);
  CHECK(one.next(36) == std::vector<std::uint32_t>{6,  0,  9, 7,  35, 3,  24, 17, 15, 23, 16, 1,  11, 27, 22, 20, 31, 29,
                                                   26, 33, 30, 14, 21, 34, 25, 2,  28, 12, 10, 19, 4, 5, 8, 32, 18, 13});
  NumpyPermutations wide(~0ull);  // a seed of two 32-bit words
  CHECK(wide.next(36) == std::vector<std::uint32_t>{20, 13, 7,  16, 18, 26, 33, 9,  1,  8,  2,  22, 30, 23, 11, 27, 6,  31,
                                                    12, 29, 21, 5,  3,  4,  32, 19, 14, 0,  24, 28, 35, 17, 34, 10, 25, 15});
  NumpyPermutations two(4294967296ull);  // 2^32: one word of zero, then a one
  CHECK(two.next(3) == std::vector<std::uint32_t>{2, 0, 1});
  CHECK(two.next(3) == std::vector<std::uint32_t>{1, 2, 0});
  CHECK(two.next(3) == std::vector<std::uint32_t>{1, 0, 2});
  CHECK(two.next(1) == std::vector<std::uint32_t>{0});
}

TEST_CASE("train tool: training windows from a 2-D file or drawn from a stream, and their refusals", "[train][errors]") {
  vkt::TempDir dir;
  std::vector<std::uint16_t> stream(100);
  for (std::size_t i = 0; i < stream.size(); ++i) stream[i] = static_cast<std::uint16_t>(i);
  write_npy(dir.file("stream.npy"), stream);
  const TrainWindows drawn = load_train_windows(dir.file("stream.npy"), 272, 8, 5, 3);
  CHECK(drawn.drawn);
  CHECK(drawn.count == 5);
  CHECK(drawn.stream_tokens == 100);
  REQUIRE(drawn.ids.size() == 40);
  for (std::uint32_t w = 0; w < 5; ++w) {
    for (std::uint32_t t = 1; t < 8; ++t) CHECK(drawn.ids[w * 8 + t] == drawn.ids[w * 8] + t);  // consecutive tokens
    CHECK(drawn.ids[w * 8] <= 92);
  }
  CHECK(load_train_windows(dir.file("stream.npy"), 272, 8, 5, 3).ids == drawn.ids);
  CHECK(load_train_windows(dir.file("stream.npy"), 272, 8, 5, 4).checksum != drawn.checksum);

  write_npy(dir.file("windows.npy"), std::vector<std::uint16_t>(stream.begin(), stream.begin() + 24), 8);
  const TrainWindows given = load_train_windows(dir.file("windows.npy"), 272, 8, 0, 3);
  CHECK(!given.drawn);
  CHECK(given.count == 3);
  CHECK(given.ids == std::vector<std::uint32_t>(stream.begin(), stream.begin() + 24));

  CHECK_THAT(error_of([&] { load_train_windows(dir.file("windows.npy"), 272, 16, 0, 3); }),
             ContainsSubstring("windows of 8 tokens, but the context is 16"));
  CHECK_THAT(error_of([&] { load_train_windows(dir.file("windows.npy"), 272, 8, 4, 3); }),
             ContainsSubstring("--windows 4: ") && ContainsSubstring("holds its 3 windows already"));
  CHECK_THAT(error_of([&] { load_train_windows(dir.file("stream.npy"), 272, 8, 0, 3); }),
             ContainsSubstring("--windows: ") && ContainsSubstring("is a 1-D stream of 100 tokens"));
  CHECK_THAT(error_of([&] { load_train_windows(dir.file("stream.npy"), 272, 101, 2, 3); }),
             ContainsSubstring("a stream of 100 tokens has no window of 101"));
  CHECK_THAT(error_of([&] { load_train_windows(dir.file("windows.npy"), 20, 8, 0, 3); }),
             ContainsSubstring("token 20 (row 2, column 4) is 20, outside the vocabulary of 20"));
}

TEST_CASE("train tool: the held-out text's bytes from tokens.json beside the stream", "[train][errors]") {
  vkt::TempDir dir;
  CHECK(held_out_text_bytes(dir.file("heldout.npy"), 1234) == 1234);
  CHECK_THAT(error_of([&] { held_out_text_bytes(dir.file("heldout.npy"), std::nullopt); }),
             ContainsSubstring("give --held-out-bytes N"));
  std::ofstream(dir.file("tokens.json")) << R"({"splits": {"train": {"file": "train.npy", "bytes": 9},
                                                "heldout": {"file": "heldout.npy", "bytes": 5169}}})";
  CHECK(held_out_text_bytes(dir.file("heldout.npy"), std::nullopt) == 5169);
  CHECK_THAT(error_of([&] { held_out_text_bytes(dir.file("other.npy"), std::nullopt); }),
             ContainsSubstring("no split whose \"file\" is other.npy"));
}

TEST_CASE("train tool: progress round-trips through JSON exactly, and bad progress is refused", "[train][errors]") {
  TrainProgress p;
  p.next_step = 4;
  p.applied = 3;
  p.skipped = 1;
  p.gscale = 0x1p-3f;
  p.gscale_clean = 2;
  p.train_s = 1.25;
  p.teacher = {100, 4, 90, 250.1234567890123, 12.3, 3.6, 4.0};
  p.init = {100, 4, 90, 260.0000000000001, 13.1, 3.7, 4.1};
  p.curve.push_back({2, 1024, 0.5, p.init});
  p.curve.push_back({4, 2048, 1.25, p.teacher});
  p.losses = {0.1, 0.2, NAN, 0.05};
  const TrainProgress q = progress_from_json(nlohmann::json::parse(to_json(p).dump()), "ckpt");
  CHECK(to_json(q).dump() == to_json(p).dump());
  CHECK(q.curve[1].held_out.loss_nats == p.teacher.loss_nats);
  CHECK(std::isnan(q.losses[2]));
  CHECK(q.gscale == 0x1p-3f);
  CHECK(q.gscale_clean == 2);
  // a checkpoint from before the loss scale was kept: the trainer's own start
  nlohmann::json older = to_json(p);
  older.erase("gscale");
  older.erase("gscale_clean");
  CHECK(progress_from_json(older, "ckpt").gscale == 0);
  nlohmann::json bad = to_json(p);
  bad["gscale"] = -1;
  CHECK_THAT(error_of([&] { progress_from_json(bad, "ckpt"); }), ContainsSubstring("'gscale' = -1"));
  bad = to_json(p);
  bad["skipped"] = 2;
  CHECK_THAT(error_of([&] { progress_from_json(bad, "ckpt"); }),
             ContainsSubstring("3 applied + 2 skipped steps, but next_step is 4"));
  bad = to_json(p);
  bad["curve"][1]["step"] = 2;
  CHECK_THAT(error_of([&] { progress_from_json(bad, "ckpt"); }), ContainsSubstring("curve point at step 2"));
  bad = to_json(p);
  bad["losses"].erase(0);
  CHECK_THAT(error_of([&] { progress_from_json(bad, "ckpt"); }), ContainsSubstring("3 losses for 4 steps"));
}

TEST_CASE("train tool: byte prompts and the side-by-side text", "[train][errors]") {
  CHECK(byte_prompt("Hé", kByteVocabulary) == std::vector<std::uint32_t>{256, 'H', 0xc3, 0xa9});
  CHECK_THAT(error_of([] { byte_prompt("x", 151936); }), ContainsSubstring("give the prompt's token ids with --prompt-ids"));
  CHECK(byte_text({256, 'a', 0xc3, 0xa9, 0xff, 'b'}) == "a\xc3\xa9\xef\xbf\xbd" "b");
  const std::string text = side_by_side("ab\ncd", "wxyz", 3);
  CHECK(text == "student | teacher\n--- | ---\nab  | wxy\ncd  | z\n");
}
