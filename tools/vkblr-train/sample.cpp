#include "vkblr-train/sample.hpp"

#include <algorithm>
#include <cmath>
#include <format>

#include "vkblr-fit/random.hpp"
#include "vkblr/error.hpp"
#include "vkblr/recorder.hpp"

namespace vkblr::train {
namespace {

// UTF-8 text cut into code points (an invalid byte is one U+FFFD).
std::vector<std::string> code_points(const std::string& text) {
  std::vector<std::string> out;
  std::size_t i = 0;
  while (i < text.size()) {
    const auto c = static_cast<unsigned char>(text[i]);
    const std::size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xe ? 3 : (c >> 3) == 0x1e ? 4 : 0;
    bool ok = n > 0 && i + n <= text.size();
    for (std::size_t k = 1; ok && k < n; ++k) ok = (static_cast<unsigned char>(text[i + k]) >> 6) == 0x2;
    if (ok) {
      out.push_back(text.substr(i, n));
      i += n;
    } else {
      out.push_back("\xef\xbf\xbd");
      ++i;
    }
  }
  return out;
}

// Rows of at most `width` code points; a newline ends a row.
std::vector<std::vector<std::string>> rows_of(const std::string& text, std::size_t width) {
  std::vector<std::vector<std::string>> rows(1);
  for (const std::string& cp : code_points(text)) {
    if (cp == "\n") {
      rows.emplace_back();
      continue;
    }
    if (rows.back().size() == width) rows.emplace_back();
    const bool control = cp.size() == 1 && (static_cast<unsigned char>(cp[0]) < 0x20 || cp[0] == 0x7f);
    rows.back().push_back(control ? " " : cp);
  }
  return rows;
}

}  // namespace

std::vector<std::uint32_t> byte_prompt(const std::string& text, std::uint32_t vocab_size) {
  require(vocab_size == kByteVocabulary,
          "--prompt: the model's vocabulary of {} is not the byte-level one of tools/model/byte_tokenizer.py ({}); "
          "give the prompt's token ids with --prompt-ids",
          vocab_size, kByteVocabulary);
  std::vector<std::uint32_t> ids{kEndOfText};
  for (const char c : text) ids.push_back(static_cast<unsigned char>(c));
  return ids;
}

std::string byte_text(const std::vector<std::uint32_t>& ids) {
  std::string bytes;
  for (const std::uint32_t id : ids) {
    if (id < 256) bytes.push_back(static_cast<char>(id));
  }
  std::string out;
  for (const std::string& cp : code_points(bytes)) out += cp;
  return out;
}

std::vector<std::uint32_t> generate(Context& ctx, const io::LlamaConfig& config, const model::LlamaWeights& weights,
                                    const std::vector<std::uint32_t>& prompt, std::uint32_t count,
                                    std::uint32_t context, std::uint64_t seed) {
  require(!prompt.empty(), "--sample: the prompt has no tokens");
  require(prompt.size() + count <= context,
          "--sample {}: the prompt's {} tokens and {} more do not fit the context of {}", count, prompt.size(), count,
          context);
  for (std::size_t i = 0; i < prompt.size(); ++i) {
    require(prompt[i] < config.vocab_size, "--prompt-ids: id {} (position {}) is outside the vocabulary of {}",
            prompt[i], i, config.vocab_size);
  }
  const std::uint32_t hidden = config.hidden_size, vocab = config.vocab_size;
  const std::vector<float> head = weights.head_weight().download<float>(std::uint64_t{vocab} * hidden);
  model::LlamaForward forward(ctx, config, {1, context});
  Buffer ids_buffer = ctx.buffer(std::uint64_t{context} * 4, "sample.ids");
  Buffer out = ctx.buffer(std::uint64_t{context} * hidden * 4, "sample.hidden");
  fit::Rng rng(seed);
  std::vector<std::uint32_t> ids = prompt, generated;
  std::vector<double> logits(vocab);
  for (std::uint32_t t = 0; t < count; ++t) {
    const auto length = static_cast<std::uint32_t>(ids.size());
    ids_buffer.upload(ids);
    Recorder rec(ctx);
    forward.record(rec, weights, ids_buffer, out, {1, length});
    rec.run();
    const std::vector<float> h = out.download<float>(hidden, std::uint64_t{length - 1} * hidden);
    for (std::uint32_t v = 0; v < vocab; ++v) {
      double z = 0;
      for (std::uint32_t k = 0; k < hidden; ++k) z += static_cast<double>(head[std::uint64_t{v} * hidden + k]) * h[k];
      logits[v] = z;
    }
    std::uint32_t next = 0;
    if (seed == 0) {
      next = static_cast<std::uint32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
    } else {
      const double top = *std::max_element(logits.begin(), logits.end());
      double total = 0;
      for (double& z : logits) total += (z = std::exp(z - top));
      double u = rng.uniform_open() * total;
      next = vocab - 1;
      for (std::uint32_t v = 0; v < vocab; ++v) {
        if ((u -= logits[v]) <= 0) {
          next = v;
          break;
        }
      }
    }
    ids.push_back(next);
    generated.push_back(next);
  }
  return generated;
}

std::string side_by_side(const std::string& student, const std::string& teacher, std::size_t width) {
  const auto left = rows_of(student, width), right = rows_of(teacher, width);
  const auto row_text = [](const std::vector<std::string>& row) {
    std::string s;
    for (const std::string& cp : row) s += cp;
    return s;
  };
  std::string out = std::format("{:<{}} | {}\n{} | {}\n", "student", width, "teacher", std::string(width, '-'),
                                std::string(width, '-'));
  for (std::size_t i = 0; i < std::max(left.size(), right.size()); ++i) {
    const std::vector<std::string> none;
    const auto& l = i < left.size() ? left[i] : none;
    const auto& r = i < right.size() ? right[i] : none;
    out += row_text(l) + std::string(width - l.size(), ' ') + " | " + row_text(r) + "\n";
  }
  return out;
}

}  // namespace vkblr::train
