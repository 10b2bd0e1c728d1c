// vkblr::mpi::DistributedTrainer: BlrTrainer's split steps with the
// gradient block summed over the ranks between graph A and graph B.
#include <chrono>
#include <cmath>
#include <format>

#include "vkblr/error.hpp"
#include "vkblr/mpi.hpp"

namespace vkblr::mpi {
namespace {

BlrTrainerConfig split(BlrTrainerConfig config) {
  config.split = true;
  return config;
}

// Appends a device buffer's bytes (for a hash).
void append(std::vector<std::byte>& out, const Buffer& b) {
  const auto bytes = b.download<std::byte>();
  out.insert(out.end(), bytes.begin(), bytes.end());
}

// What every rank must share for their steps to stay identical bit for bit.
Fingerprint fingerprint(const Context& ctx, const BlrLayer& layer, std::uint32_t total_tokens,
                        const BlrTrainerConfig& c, BlrTrainer& trainer) {
  Fingerprint f;
  f.add_device(ctx);
  f.add("m", std::to_string(layer.m));
  f.add("n", std::to_string(layer.n));
  f.add("r", std::to_string(layer.r));
  f.add("paths", std::to_string(layer.paths.size()));
  std::string segments;
  for (const ScaleSegment& s : layer.segments) segments += std::format("{}+{} ", s.offset, s.length);
  f.add("scale layout", std::format("{}of {}", segments, layer.scale_count));
  f.add("tokens per batch", std::to_string(total_tokens));
  f.add("loss_norm", std::format("{}", c.loss_norm));
  f.add("gscale", std::format("{}", c.gscale));
  f.add("train h, l, g", std::format("{} {} {}", c.train_h, c.train_l, c.train_g));
  f.add("train signs", std::format("{}", c.train_signs));
  f.add("scale_rel_floor", std::format("{}", c.scale_rel_floor));
  const ops::AdamOptions& a = c.scale_adam;
  f.add("scale_adam", std::format("beta1 {} beta2 {} eps {} grad_scale {}", a.beta1, a.beta2, a.eps, a.grad_scale));
  const SignInit& i = c.sign_init;
  f.add("sign_init", std::format("{} tau {} state {} seed {} keep_bits0 {}", to_string(i.opt), i.tau,
                                 i.state == StateType::bf16 ? "bf16" : "f32", i.seed, i.keep_bits0));
  const SignStep& s = c.sign_step;
  f.add("sign_step", std::format("beta1 {} beta2 {} eps {} clamp {} hyst {} flip_budget {} grad_scale {}", s.beta1,
                                 s.beta2, s.eps, s.clamp, s.hyst, s.flip_budget, s.grad_scale));
  f.add("steps applied, skipped", std::format("{} {}", trainer.steps(), trainer.skipped()));
  std::vector<std::byte> bytes;
  for (const BlrPath& p : layer.paths) {
    append(bytes, p.bits_u);
    append(bytes, p.bits_v);
  }
  append(bytes, layer.scales);
  f.add_hash("layer bits and scales (hash)", bytes);
  bytes.clear();
  for (const auto& [name, buffer] : trainer.state()) append(bytes, *buffer);
  f.add_hash("optimizer state (hash)", bytes);
  return f;
}

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace

DistributedTrainer::DistributedTrainer(RankGroup& group, Context& ctx, const BlrLayer& layer,
                                       std::uint32_t total_tokens, const BlrTrainerConfig& config,
                                       const DistributedOptions& options)
    : group_(group),
      ctx_(ctx),
      layer_(layer),
      total_tokens_(total_tokens),
      config_(split(config)),
      slice_(group.slice(total_tokens)),
      options_(options),
      trainer_(ctx, layer, slice_.count, config_) {
  if (group.exchange() == Exchange::shared_memory) share_blocks();
  check_agreement();
}

// The shared blocks, when /dev/shm has room for them and every rank's
// device imports them; else none (the ranks exchange messages) and a note
// of why.
void DistributedTrainer::share_blocks() {
  const GradientBlock& block = trainer_.gradient_block();
  // every rank alike: a note of the first rank that refuses, or none
  auto first_refusal = [&](const std::string& mine, std::string_view what) {
    const std::vector<std::string> all = group_.allgather_strings(mine, what);
    for (std::size_t r = 0; r < all.size(); ++r) {
      if (!all[r].empty()) return std::format("rank {}: {}", r, all[r]);
    }
    return std::string();
  };
  shared_note_ = first_refusal(SharedBlocks::lack_of_room(block.floats, group_.size()), "room for the shared blocks");
  if (!shared_note_.empty()) return;
  auto blocks = std::make_unique<SharedBlocks>(group_, block.floats, "gradient blocks");  // collective
  const std::uint64_t bytes = std::uint64_t{block.floats} * 4;
  std::string refusal;
  try {
    shared_input_ = ctx_.import_host_memory(blocks->input(group_.rank()), blocks->padded_bytes(), "mpi.input");
    shared_result_ = ctx_.import_host_memory(blocks->result(), blocks->padded_bytes(), "mpi.result");
  } catch (const Error& e) {
    refusal = e.what();
  }
  shared_note_ = first_refusal(refusal, "importing the shared blocks");
  if (!shared_note_.empty()) {
    shared_input_ = Buffer();
    shared_result_ = Buffer();
    return;  // the blocks go (every rank alike)
  }
  input_view_ = shared_input_.view(0, bytes);
  result_view_ = shared_result_.view(0, bytes);
  trainer_.use_external_blocks(input_view_, result_view_);
  shared_ = std::move(blocks);
}

void DistributedTrainer::check_agreement() {
  group_.check_agreement(fingerprint(ctx_, layer_, total_tokens_, config_, trainer_));
}

std::size_t DistributedTrainer::add_batch(const Buffer& x, const Buffer& target, BatchInput input) {
  return trainer_.add_batch(x, target, input);
}

std::size_t DistributedTrainer::add_eval_batch(const Buffer& x, const Buffer& target, BatchInput input) {
  return trainer_.add_eval_batch(x, target, input);
}

StepResult DistributedTrainer::step(std::size_t batch, float sign_lr, float scale_lr) {
  require(std::isfinite(sign_lr) && std::isfinite(scale_lr), "DistributedTrainer::step: learning rates {} and {}",
          sign_lr, scale_lr);
  using clock = std::chrono::steady_clock;
  auto t = clock::now();
  trainer_.accumulate(batch);
  timing_.accumulate_s += seconds_since(t);
  if (options_.timing_barrier) {
    t = clock::now();
    group_.barrier("timing barrier before the gradient exchange");
    timing_.wait_s += seconds_since(t);
  }
  t = clock::now();
  const GradientBlock& block = trainer_.gradient_block();
  const std::string what = std::format("gradients of step {}", trainer_.steps() + trainer_.skipped() + 1);
  if (shared_) {
    group_.sum_shared(*shared_, what);  // graph A wrote the input, graph B reads the result
  } else {
    group_.allreduce_sum(std::span<float>(static_cast<float*>(block.buffer->mapped()), block.floats), what);
  }
  timing_.exchange_s += seconds_since(t);
  t = clock::now();
  const StepResult r = trainer_.apply(sign_lr, scale_lr);
  timing_.apply_s += seconds_since(t);
  ++timing_.steps;
  return r;
}

double DistributedTrainer::eval(std::size_t batch) {
  return group_.sum(trainer_.eval(batch), "evaluation loss");
}

}  // namespace vkblr::mpi
