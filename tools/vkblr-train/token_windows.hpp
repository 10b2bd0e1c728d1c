// token_windows.hpp — vkblr-train's token data: the training windows, the
// order steps take them in, and the held-out stream's byte count.
//
// Training windows come from --train: a 2-D .npy [windows][context] is
// taken as it is (the very windows another trainer used: export_tokens.py
// --windows writes those of token_data.calibration_batches); a 1-D stream
// gives --windows windows of the context at starts drawn uniformly with
// the seeded generator of vkblr-fit (random.hpp: the same seed and stream
// give the same windows on every machine).
//
// Order (DataOrder): the windows are taken `batch` at a time in a seeded
// permutation; when fewer than `batch` are left in a pass, a new pass
// starts in a new permutation (the leftover windows wait for it). The
// permutations are numpy's, np.random.Generator(np.random.PCG64(seed))
// .permutation(count) drawn pass after pass (numpy_order.hpp): the order
// tools/lab/qat_peer.py takes the same windows in with the same seed. The
// permutation of pass p is a function of (seed, p) alone, so step s's
// windows are a function of s: a resumed run takes the same windows as the
// uninterrupted one.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "vkblr-train/numpy_order.hpp"

namespace vkblr::train {

struct TrainWindows {
  std::uint32_t context = 0;
  std::uint32_t count = 0;
  std::vector<std::uint32_t> ids;   // [count][context]
  bool drawn = false;               // from a 1-D stream
  std::uint64_t stream_tokens = 0;  // of that stream (drawn), else count · context
  std::uint64_t checksum = 0;       // xxh3 of ids as u32 little-endian
};

// Throws vkblr::Error naming the file and the field: ids outside the
// vocabulary (with their position), another dtype or rank, 2-D windows of
// another length than `context` or with `windows` given and different, a
// 1-D stream without `windows` or shorter than the context.
TrainWindows load_train_windows(const std::string& path, std::uint32_t vocab_size, std::uint32_t context,
                                std::uint32_t windows, std::uint64_t seed);

class DataOrder {
 public:
  // Throws vkblr::Error when count < batch.
  DataOrder(std::uint32_t count, std::uint32_t batch, std::uint64_t seed);
  // The windows of step `step` (counted from 0), in order.
  std::vector<std::uint32_t> windows(std::uint64_t step);
  std::uint64_t pass(std::uint64_t step) const { return step / steps_per_pass_; }
  std::uint64_t position(std::uint64_t step) const { return step % steps_per_pass_ * batch_; }
  std::uint32_t steps_per_pass() const { return steps_per_pass_; }

 private:
  std::uint32_t count_, batch_, steps_per_pass_;
  std::uint64_t seed_;
  std::uint64_t current_pass_ = ~0ull;
  std::vector<std::uint32_t> permutation_;
  std::unique_ptr<NumpyPermutations> numpy_;  // has drawn the permutation of current_pass_
};

// The byte count of the held-out text, for bits per byte: `given` when
// set, else the "bytes" of the split whose "file" is the stream's file name
// in export_tokens.py's tokens.json beside it. Throws vkblr::Error naming
// the file or field when neither tells it.
std::uint64_t held_out_text_bytes(const std::string& held_out_path, const std::optional<std::uint64_t>& given);

}  // namespace vkblr::train
