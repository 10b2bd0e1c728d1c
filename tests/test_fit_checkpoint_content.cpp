// vkblr-fit's checkpoints and results are checked by content: a checkpoint
// whose numbers no run writes (next_step out of range or wrapped, step
// counts that do not add up, an unordered curve, NaN or Inf scales and
// optimizer state, arrays of the wrong size or unexpected, fields of the
// wrong JSON type) is refused with a message naming the field, as is one
// made with other options or from another W or X of the same shape and
// name (their checksums); --eval says whether W and X are those the layer
// was fitted to.
#include <bit>
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <cmath>
#include <functional>
#include <limits>

#include "support/fit_files.hpp"
#include "support/fit_run.hpp"
#include "support/gpu.hpp"
#include "vkblr/io/checkpoint.hpp"
#include "vkblr-fit/fit_job.hpp"
#include "vkblr/io/safetensors.hpp"
#include "vkblr-fit/io_names.hpp"
#include "vkblr-fit/io/synthetic.hpp"

using namespace vkblr;
using Catch::Matchers::ContainsSubstring;

namespace {

void write_weight(const std::string& path, std::uint64_t seed) {
  vkt::write_matrix_file(path, fit::synthetic_weight({.m = 128, .n = 96, .seed = seed}));
}

}  // namespace

GPU_TEST("vkblr-fit refuses a checkpoint whose content no run writes", "[fit][gpu][errors]") {
  vkt::TempDir dir;
  write_weight(dir.file("w.safetensors"), 3);
  fit::FitOptions o = vkt::small_fit_run(dir.file("first"));
  o.weight_path = dir.file("w.safetensors");
  o.checkpoint_every = 6;
  fit::run_fit(ctx, o);
  const fit::Checkpoint good = fit::read_checkpoint(dir.file("first.ckpt"));
  fit::FitOptions resumed = o;
  resumed.out = dir.file("resumed");
  resumed.checkpoint_every = 0;
  resumed.resume = dir.file("bad.ckpt");
  const auto refusal = [&](const std::function<void(fit::Checkpoint&)>& edit) {
    fit::Checkpoint c = good;
    edit(c);
    fit::write_checkpoint(resumed.resume, c);  // with valid checksums: the content is what is checked
    return vkt::error_of([&] { fit::run_fit(ctx, resumed); });
  };
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();

  // the step counters
  CHECK_THAT(refusal([](fit::Checkpoint& c) { c.metadata["next_step"] = 1000; }),
             ContainsSubstring("next_step 1000 is outside [1, 12)"));
  CHECK_THAT(refusal([](fit::Checkpoint& c) { c.metadata["next_step"] = 4294967296ull; }),  // 2^32: 0 in a u32
             ContainsSubstring("'next_step' is 4294967296 (a number), want an integer in [0, 2^32)"));
  CHECK_THAT(refusal([](fit::Checkpoint& c) { c.metadata["next_step"] = 0; }),
             ContainsSubstring("next_step 0 is outside"));
  CHECK_THAT(refusal([](fit::Checkpoint& c) { c.metadata["next_step"] = -1; }),
             ContainsSubstring("'next_step' is -1 (a number), want an integer in [0, 2^32)"));
  CHECK_THAT(refusal([](fit::Checkpoint& c) { c.metadata["next_step"] = "6"; }),
             ContainsSubstring("'next_step' is \"6\" (a string), want an integer"));
  CHECK_THAT(refusal([](fit::Checkpoint& c) { c.metadata["applied"] = c.metadata["applied"].get<int>() + 1; }),
             ContainsSubstring("applied + 0 skipped steps, but next_step is 6"));
  CHECK_THAT(refusal([](fit::Checkpoint& c) {  // a sum that wraps to next_step in 64 bits
               c.metadata["applied"] = 18446744073709551615ull;
               c.metadata["skipped"] = 7;
             }),
             ContainsSubstring("'applied' is 18446744073709551615 (a number), want an integer in [0, 2^32)"));
  CHECK_THAT(refusal([](fit::Checkpoint& c) {  // a sum that wraps to next_step in 32 bits
               c.metadata["applied"] = 4294967295ull;
               c.metadata["skipped"] = 7;
             }),
             ContainsSubstring("4294967295 applied + 7 skipped steps, but next_step is 6"));
  CHECK_THAT(refusal([](fit::Checkpoint& c) { c.metadata.erase("skipped"); }),
             ContainsSubstring("checkpoint metadata: 'skipped' is missing"));
  // the curve, the init, the best layer
  CHECK_THAT(refusal([](fit::Checkpoint& c) {
               c.metadata["curve"].push_back({2, 0.5});
             }),
             ContainsSubstring("curve point at step 2 (after step 4"));
  CHECK_THAT(refusal([](fit::Checkpoint& c) {
               c.metadata["curve"].push_back({9, 0.5});
             }),
             ContainsSubstring("curve point at step 9"));
  CHECK_THAT(refusal([](fit::Checkpoint& c) { c.metadata["curve"][0][1] = nullptr; }),  // NaN, as JSON writes it
             ContainsSubstring("'curve[0][1]' is null, want a finite number >= 0"));
  CHECK_THAT(refusal([](fit::Checkpoint& c) {
               c.metadata["init"] = {1, 2};
             }),
             ContainsSubstring("'init' is [1, 2], want an array of 3"));
  CHECK_THAT(refusal([](fit::Checkpoint& c) { c.metadata["best"]["stage"] = "dream"; }),
             ContainsSubstring("'best.stage' is \"dream\""));
  CHECK_THAT(refusal([](fit::Checkpoint& c) {
               c.metadata["best"]["stage"] = "training";
               c.metadata["best"]["step"] = 0;
             }),
             ContainsSubstring("the best layer's step 0 does not fit its origin 'training'"));
  CHECK_THAT(refusal([&](fit::Checkpoint& c) { c.f32.at("best.path1.l")[3] = nan; }),
             ContainsSubstring("best.path1.l[3] is nan"));
  // the layer and the optimizer state
  CHECK_THAT(refusal([&](fit::Checkpoint& c) { c.u32.at("layer.scales")[5] = std::bit_cast<std::uint32_t>(nan); }),
             ContainsSubstring("layer.scales[5] is nan: every value must be finite"));
  CHECK_THAT(
      refusal([&](fit::Checkpoint& c) { c.u32.at("state.scales.adam_m1")[2] = std::bit_cast<std::uint32_t>(-inf); }),
      ContainsSubstring("state.scales.adam_m1[2] is -inf"));
  CHECK_THAT(
      refusal([&](fit::Checkpoint& c) { c.u32.at("state.scales.adam_m2")[7] = std::bit_cast<std::uint32_t>(-1.0f); }),
      ContainsSubstring("state.scales.adam_m2[7] = -1 is a negative second moment"));
  CHECK_THAT(refusal([](fit::Checkpoint& c) { c.u32.at("path1.bits_v").pop_back(); }),
             ContainsSubstring("path1.bits_v holds 95 words, the run has 96"));
  CHECK_THAT(refusal([](fit::Checkpoint& c) { c.u32.erase("best.path0.bits_u"); }),
             ContainsSubstring("lacks the array best.path0.bits_u"));
  CHECK_THAT(refusal([](fit::Checkpoint& c) { c.f32["stowaway"] = {1.0f}; }),
             ContainsSubstring("unexpected array 'stowaway'"));
  CHECK_THAT(refusal([](fit::Checkpoint& c) {
               c.metadata = nlohmann::json::array({1, 2});
             }),
             ContainsSubstring("checkpoint metadata is [1, 2] (an array), want an object"));

  // made by other options, or from other inputs of the same shape and name
  resumed.resume = dir.file("first.ckpt");
  fit::FitOptions other = resumed;
  other.scale_lr = 1e-3f;
  CHECK_THAT(vkt::error_of([&] { fit::run_fit(ctx, other); }),
             ContainsSubstring("another configuration or other inputs: scale_lr 0.0020000000949949026 (this run: "
                               "0.0010000000474974513)"));
  other = resumed;
  other.activation_decay = 0.5;  // synthetic X: another X, and the setting differs
  CHECK_THAT(vkt::error_of([&] { fit::run_fit(ctx, other); }),
             ContainsSubstring("activation_decay 1.0 (this run: 0.5)") && ContainsSubstring("activations_xxh3"));
  write_weight(dir.file("w.safetensors"), 4);  // another W, same shape, same name
  const std::string message = vkt::error_of([&] { fit::run_fit(ctx, resumed); });
  CHECK_THAT(message, ContainsSubstring("weight_xxh3"));
  CHECK_THAT(message, !ContainsSubstring("activations_xxh3"));
  write_weight(dir.file("w.safetensors"), 3);
  fit::run_fit(ctx, resumed);  // the same inputs and options: resumes
}

GPU_TEST("vkblr-fit --eval refuses a damaged result and tells other inputs", "[fit][gpu][errors]") {
  vkt::TempDir dir;
  write_weight(dir.file("w.safetensors"), 3);
  fit::FitOptions o = vkt::small_fit_run(dir.file("run"));
  o.weight_path = dir.file("w.safetensors");
  o.steps = 4;
  fit::run_fit(ctx, o);
  fit::FitOptions e = o;
  e.eval = dir.file("run.safetensors");
  nlohmann::json j = fit::run_eval(ctx, e);
  CHECK(j.at("inputs") == nlohmann::json({{"weight", "as fitted"}, {"activations", "as fitted"}}));
  e.activation_decay = 0.5;
  j = fit::run_eval(ctx, e);
  CHECK(j.at("inputs") == nlohmann::json({{"weight", "as fitted"}, {"activations", "other"}}));

  std::string bytes = vkt::read_raw_file(e.eval);
  bytes[bytes.size() - 1] = static_cast<char>(bytes[bytes.size() - 1] ^ 0x01);
  vkt::write_raw_file(e.eval, bytes);
  CHECK_THAT(vkt::error_of([&] { fit::run_eval(ctx, e); }), ContainsSubstring("does not match its checksum"));
}
