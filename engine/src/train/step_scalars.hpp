// step_scalars.hpp (internal) — the live scalars of a training step's two
// optimizers, the sign steps and Adam on the scales (ops::LiveScalars): one
// small host-visible buffer, [sign lr, step, skip, scale lr, step, skip],
// written before each replay of a recorded step; the step's non-finite
// guard sets both skip words on the GPU. Shared by BlrTrainer and
// model::LlamaTrainer.
#pragma once

#include <cmath>
#include <cstdint>

#include "vkblr/buffer.hpp"
#include "vkblr/context.hpp"
#include "vkblr/error.hpp"
#include "vkblr/ops/optim.hpp"

namespace vkblr::detail {

class StepScalars {
 public:
  static constexpr std::uint32_t kSignWord = 0;
  static constexpr std::uint32_t kScaleWord = ops::kLiveScalarWords;

  explicit StepScalars(Context& ctx) : buffer_(ctx.host_buffer(2 * ops::kLiveScalarWords * 4, "trainer.scalars")) {
    buffer_.fill(0);
  }

  const Buffer& buffer() const noexcept { return buffer_; }
  ops::LiveScalars sign() const noexcept { return {&buffer_, kSignWord}; }
  ops::LiveScalars scale() const noexcept { return {&buffer_, kScaleWord}; }
  // The words the guard sets: the sign block's skip, then the scale block's.
  static constexpr std::uint32_t kSkipWords[2] = {kSignWord + 2, kScaleWord + 2};

  // Step `applied + 1`'s rates into both blocks (skip words cleared);
  // returns that step number. Throws vkblr::Error naming `op` for a rate
  // that is not finite.
  std::uint32_t set(const char* op, float sign_lr, float scale_lr, std::uint32_t applied) {
    require(std::isfinite(sign_lr) && std::isfinite(scale_lr), "{}: learning rates {} and {}", op, sign_lr, scale_lr);
    const std::uint32_t t = applied + 1;
    ops::write_live_scalars(buffer_, kSignWord, sign_lr, t);
    ops::write_live_scalars(buffer_, kScaleWord, scale_lr, t);
    return t;
  }

  // Whether the guard skipped the step that last ran (a device write the
  // caller waited for).
  bool skipped() const {
    std::uint32_t skip = 0;
    buffer_.read(&skip, 4, kSkipWords[0] * 4);
    return skip != 0;
  }

 private:
  Buffer buffer_;
};

}  // namespace vkblr::detail
