#include "vkblr-train/token_windows.hpp"

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <span>
#include <sstream>

#include "vkblr-fit/random.hpp"
#include "vkblr/error.hpp"
#include "vkblr/io/checksum.hpp"
#include "vkblr/io/npy.hpp"

namespace vkblr::train {

TrainWindows load_train_windows(const std::string& path, std::uint32_t vocab_size, std::uint32_t context,
                                std::uint32_t windows, std::uint64_t seed) {
  io::TokenArray data = io::read_npy_token_array(path, vocab_size);
  TrainWindows out;
  out.context = context;
  if (data.shape.size() == 2) {
    require(data.shape[1] == context,
            "{}: windows of {} tokens, but the context is {} (--context, else the model's max_position_embeddings): "
            "export windows of the context",
            path, data.shape[1], context);
    require(data.shape[0] <= (1u << 31), "{}: {} windows: at most 2^31", path, data.shape[0]);
    require(windows == 0 || windows == data.shape[0],
            "--windows {}: {} holds its {} windows already (2-D); leave --windows out", windows, path, data.shape[0]);
    out.count = static_cast<std::uint32_t>(data.shape[0]);
    out.ids = std::move(data.ids);
    out.stream_tokens = out.ids.size();
  } else {
    require(windows > 0, "--windows: {} is a 1-D stream of {} tokens: say how many windows of {} to draw from it", path,
            data.shape[0], context);
    require(data.shape[0] >= context, "{}: a stream of {} tokens has no window of {} (the context)", path,
            data.shape[0], context);
    fit::Rng rng(seed);
    const std::uint64_t starts = data.shape[0] - context + 1;
    out.count = windows;
    out.drawn = true;
    out.stream_tokens = data.shape[0];
    out.ids.resize(std::uint64_t{windows} * context);
    for (std::uint32_t w = 0; w < windows; ++w) {
      const std::uint64_t start = rng.below(starts);
      std::copy_n(data.ids.begin() + static_cast<std::ptrdiff_t>(start), context,
                  out.ids.begin() + static_cast<std::ptrdiff_t>(std::uint64_t{w} * context));
    }
  }
  out.checksum = io::xxh3_64(std::as_bytes(std::span(out.ids)));
  return out;
}

DataOrder::DataOrder(std::uint32_t count, std::uint32_t batch, std::uint64_t seed)
    : count_(count), batch_(batch), steps_per_pass_(batch == 0 ? 0 : count / batch), seed_(seed) {
  require(batch > 0 && count >= batch, "--batch {}: the training data has {} windows; want at least one batch", batch,
          count);
}

std::vector<std::uint32_t> DataOrder::windows(std::uint64_t step) {
  const std::uint64_t p = pass(step);
  if (p != current_pass_) {
    // numpy's stream of permutations from its start (a jump back) or from
    // the pass drawn last
    if (!numpy_ || p < current_pass_) {
      numpy_ = std::make_unique<NumpyPermutations>(seed_);
      current_pass_ = ~0ull;
    }
    for (std::uint64_t next = current_pass_ + 1; next <= p; ++next) permutation_ = numpy_->next(count_);
    current_pass_ = p;
  }
  const std::uint64_t at = position(step);
  return {permutation_.begin() + static_cast<std::ptrdiff_t>(at),
          permutation_.begin() + static_cast<std::ptrdiff_t>(at + batch_)};
}

std::uint64_t held_out_text_bytes(const std::string& held_out_path, const std::optional<std::uint64_t>& given) {
  if (given) {
    require(*given > 0, "--held-out-bytes {}: want the held-out text's byte count (> 0)", *given);
    return *given;
  }
  const std::filesystem::path stream(held_out_path);
  const std::filesystem::path manifest = stream.parent_path() / "tokens.json";
  std::ifstream in(manifest);
  require(in.good(), "--held-out-bytes: no {} beside {} (export_tokens.py writes it) to read the held-out text's "
          "byte count from; give --held-out-bytes N", manifest.string(), held_out_path);
  std::stringstream text;
  text << in.rdbuf();
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text.str());
  } catch (const nlohmann::json::exception& e) {
    fail("{}: not JSON ({}); give --held-out-bytes N", manifest.string(), e.what());
  }
  const std::string name = stream.filename().string();
  if (j.is_object() && j.contains("splits") && j["splits"].is_object()) {
    for (const auto& [split, entry] : j["splits"].items()) {
      if (entry.is_object() && entry.value("file", std::string()) == name) {
        require(entry.contains("bytes") && entry["bytes"].is_number_unsigned() && entry["bytes"].get<std::uint64_t>() > 0,
                "{}: splits.{}.bytes is not a positive integer; give --held-out-bytes N", manifest.string(), split);
        return entry["bytes"].get<std::uint64_t>();
      }
    }
  }
  fail("{}: no split whose \"file\" is {}; give --held-out-bytes N", manifest.string(), name);
}

}  // namespace vkblr::train
