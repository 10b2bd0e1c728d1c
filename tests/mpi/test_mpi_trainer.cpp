// vkblr::mpi under `mpirun -np 2` (any rank count works):
//   - the device mapping and the start-up agreement check, the GEMM
//     policies of the ranks' contexts included;
//   - N ranks with a slice of the tokens each ≡ one rank accumulating the
//     same slices as micro-batches in rank order, bit for bit (bits, scales,
//     optimizer state, loss), step after step, through each exchange:
//     shared memory that the GPUs read and write, and messages;
//   - every rank holds the same bits, scales and state after each step;
//   - uneven slices (tokens per rank differ by one): the summed gradients
//     and the loss are those of the whole batch on one rank;
//   - allgather_strings (strings of other lengths on each rank, an empty
//     one among them) and a collective without a deadline;
//   - allreduce_sum (messages) and sum_shared (shared memory), on one and
//     on several threads: the rank-order sums, bit for bit;
// and with --timing [FLOATS]: the share of step time the exchange costs,
// and allreduce_sum's and sum_shared's times (no validation layer;
// printed, not checked).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <format>
#include <limits>
#include <memory>
#include <span>

#include "mpi/mpi_test.hpp"
#include "vkblr/error.hpp"

using namespace vkblr;
using vkt::mpi::Checks;

namespace {

void device_mapping(Checks& checks) {
  auto device = [](const char* type) {
    Caps c;
    c.device_type = type;
    return c;
  };
  const std::vector<Caps> gpus{device("cpu"), device("discrete"), device("discrete")};
  checks.expect(mpi::device_for_local_rank(0, 1, "", gpus).empty(), "a lone rank keeps the Context's choice");
  checks.expect(mpi::device_for_local_rank(0, 3, "", gpus) == "1", "local rank 0 -> the first discrete GPU");
  checks.expect(mpi::device_for_local_rank(1, 3, "", gpus) == "2", "local rank 1 -> the second discrete GPU");
  checks.expect(mpi::device_for_local_rank(2, 3, "", gpus) == "1", "local rank 2 -> modulo the discrete GPUs");
  checks.expect(mpi::device_for_local_rank(1, 2, "", {device("cpu")}) == "0", "one CPU device is every rank's");
  checks.expect(mpi::device_for_local_rank(3, 4, "H200", gpus) == "H200", "one VKBLR_DEVICE entry is every rank's");
  checks.expect(mpi::device_for_local_rank(3, 4, "0,2,1", gpus) == "0", "VKBLR_DEVICE list entry local rank mod 3");
  checks.expect(mpi::device_for_local_rank(1, 4, "0,2,1", gpus) == "2", "VKBLR_DEVICE list entry 1");
}

// Ranks that disagree get the same Error naming every differing field.
void agreement(Context& ctx, mpi::RankGroup& group, Checks& checks) {
  const vkt::mpi::Problem p = vkt::mpi::make_problem(32, 48, 32, 1, 2 * static_cast<std::uint32_t>(group.size()), 1, 5);
  BlrTrainerConfig c = vkt::mpi::config(p);
  vkt::HostLayer start = p.start;
  const bool odd = group.rank() == group.size() - 1 && group.size() > 1;
  if (odd) {
    c.gscale = 512.0f;
    start.paths[0].su[0] = -start.paths[0].su[0];
  }
  BlrLayer layer = make_blr_layer(ctx, p.m, p.n, p.r, start.init(), false);
  std::string message;
  try {
    mpi::DistributedTrainer trainer(group, ctx, layer, p.tokens, c);
  } catch (const Error& e) {
    message = e.what();
  }
  if (group.size() == 1) {
    checks.expect(message.empty(), "one rank agrees with itself: " + message);
    return;
  }
  const std::string last = std::to_string(group.size() - 1);
  checks.expect(message.find("ranks disagree") != std::string::npos, "agreement check: got \"" + message + "\"");
  checks.expect(message.find("gscale = 1024 on rank") != std::string::npos &&
                    message.find("vs 512 on rank " + last) != std::string::npos,
                "the message names gscale and its values: " + message);
  checks.expect(message.find("layer bits and scales (hash) =") != std::string::npos,
                "the message names the layer's bits: " + message);
  checks.expect(message.find("loss_norm") == std::string::npos, "fields that agree are not named: " + message);
  if (group.rank() == 0) std::printf("agreement check: %s\n", message.c_str());
}

// Ranks whose contexts have different GEMM policies are refused, naming the
// field that differs.
void policy_agreement(mpi::RankGroup& group, const ContextOptions& options, Checks& checks) {
  ContextOptions with_policy = options;
  GemmPolicy policy = gemm_policy_from_env();
  const bool odd = group.rank() == group.size() - 1 && group.size() > 1;
  if (odd) policy.word_groups = !policy.word_groups;
  with_policy.gemm_policy = policy;
  Context ctx(with_policy);
  const vkt::mpi::Problem p = vkt::mpi::make_problem(32, 48, 32, 1, 2 * static_cast<std::uint32_t>(group.size()), 1, 5);
  BlrLayer layer = make_blr_layer(ctx, p.m, p.n, p.r, p.start.init(), false);
  std::string message;
  try {
    mpi::DistributedTrainer trainer(group, ctx, layer, p.tokens, vkt::mpi::config(p));
  } catch (const Error& e) {
    message = e.what();
  }
  for (const std::string& m : ctx.validation_messages()) checks.expect(false, "validation: " + m);
  if (group.size() == 1) {
    checks.expect(message.empty(), "one rank agrees with itself: " + message);
    return;
  }
  const std::string last = std::to_string(group.size() - 1);
  checks.expect(message.find("ranks disagree: gemm policy word_groups = ") != std::string::npos &&
                    message.find(" on rank " + last) != std::string::npos,
                "the message names the policy's field: " + message);
  checks.expect(message.find(';') == std::string::npos, "only the policy's field is named: " + message);
  if (group.rank() == 0) std::printf("policy agreement check: %s\n", message.c_str());
}

// Every rank's snapshot hash, gathered; true when all equal.
bool same_on_every_rank(mpi::RankGroup& group, std::uint64_t h) {
  std::vector<std::uint64_t> all(static_cast<std::size_t>(group.size()));
  MPI_Allgather(&h, 1, MPI_UINT64_T, all.data(), 1, MPI_UINT64_T, group.comm());
  for (std::uint64_t v : all) {
    if (v != h) return false;
  }
  return true;
}

// N ranks ≡ one rank with N micro-batches in rank order; every rank alike.
// `how` names the exchange in messages.
void equivalence(Context& ctx, mpi::RankGroup& group, const mpi::DistributedOptions& options, std::string_view how,
                 Checks& checks) {
  const auto ranks = static_cast<std::uint32_t>(group.size());
  constexpr int kBatches = 2, kSteps = 6;
  const std::uint32_t per_rank = 32, tokens = per_rank * ranks;
  const vkt::mpi::Problem p = vkt::mpi::make_problem(32, 48, 32, 2, tokens, kBatches, 7);
  const BlrTrainerConfig c = vkt::mpi::config(p);
  BlrLayer layer = make_blr_layer(ctx, p.m, p.n, p.r, p.start.init(), false);
  mpi::DistributedTrainer dist(group, ctx, layer, tokens, c, options);
  const bool shares = group.exchange() == mpi::Exchange::shared_memory && ctx.caps().host_memory_import;
  checks.expect(dist.shares_blocks() == shares, std::format("{}: the GPUs share the blocks: {}, expected {} ({})", how,
                                                            dist.shares_blocks(), shares, dist.shared_note()));
  checks.expect(dist.slice().first == per_rank * static_cast<std::uint32_t>(group.rank()) &&
                    dist.slice().count == per_rank,
                "an even slice");
  std::vector<Buffer> xs, targets;
  for (int b = 0; b < kBatches; ++b) {
    xs.push_back(ctx.upload(vkt::mpi::rows(p.x[b], p.n, dist.slice().first, per_rank)));
    targets.push_back(ctx.upload(vkt::mpi::rows(p.target[b], p.m, dist.slice().first, per_rank)));
    dist.add_batch(xs.back(), targets.back());
  }
  // rank 0's reference: one trainer, the ranks' slices as micro-batches
  BlrLayer ref_layer = make_blr_layer(ctx, p.m, p.n, p.r, p.start.init(), false);
  std::unique_ptr<BlrTrainer> ref;
  std::vector<Buffer> ref_x, ref_target;
  if (group.rank() == 0) {
    BlrTrainerConfig split = c;
    split.split = true;
    ref = std::make_unique<BlrTrainer>(ctx, ref_layer, per_rank, split);
    for (int b = 0; b < kBatches; ++b) {
      for (std::uint32_t s = 0; s < ranks; ++s) {
        ref_x.push_back(ctx.upload(vkt::mpi::rows(p.x[b], p.n, s * per_rank, per_rank)));
        ref_target.push_back(ctx.upload(vkt::mpi::rows(p.target[b], p.m, s * per_rank, per_rank)));
        ref->add_batch(ref_x.back(), ref_target.back());
      }
    }
  }
  const auto initial_scales = layer.scales.download<std::uint32_t>();
  for (int s = 0; s < kSteps; ++s) {
    const int b = s % kBatches;
    const float sign_lr = 0.1f, scale_lr = 2e-3f;  // signs flip within a few steps
    const StepResult r = dist.step(static_cast<std::size_t>(b), sign_lr, scale_lr);
    const auto got = vkt::trainer_snapshot(layer, dist.trainer());
    checks.expect(same_on_every_rank(group, vkt::mpi::hash(got)),
                  std::format("{}, step {}: bits, scales and state differ between ranks", how, s + 1));
    checks.expect(r.applied && r.step == static_cast<std::uint32_t>(s + 1),
                  std::format("{}, step {} applied", how, s + 1));
    if (!ref) continue;
    for (std::uint32_t k = 0; k < ranks; ++k) ref->accumulate(static_cast<std::size_t>(b) * ranks + k);
    const StepResult want = ref->apply(sign_lr, scale_lr);
    const auto expect = vkt::trainer_snapshot(ref_layer, *ref);
    const std::size_t diffs = vkt::count_bit_diffs(got, expect);
    checks.expect(diffs == 0, std::format("{}, step {}: {} words differ from micro-batches on one rank", how, s + 1,
                                          diffs));
    checks.expect(std::memcmp(&r.sq_error, &want.sq_error, sizeof(double)) == 0 && r.applied == want.applied,
                  std::format("{}, step {}: loss {} vs {} on one rank", how, s + 1, r.sq_error, want.sq_error));
    std::printf("%.*s, step %d: loss %.6g, %zu words differ from one rank's micro-batches\n",
                static_cast<int>(how.size()), how.data(), s + 1, r.loss, diffs);
  }
  std::uint64_t flips = 0;
  for (SignMatrix& sm : dist.trainer().signs()) flips += sm.telemetry(ctx).total_flips;
  checks.expect(flips > 0, "signs flipped (the test can tell a sign step from none)");
  checks.expect(layer.scales.download<std::uint32_t>() != initial_scales, "scales moved");
  if (group.rank() == 0) std::printf("equivalence: %d steps, %llu flips\n", kSteps, static_cast<unsigned long long>(flips));
}

// Tokens per rank differing by one: the gradients summed over the ranks are
// the whole batch's on one rank (other f32 summation order: close, not
// equal), and the ranks stay identical.
void uneven(Context& ctx, mpi::RankGroup& group, Checks& checks) {
  const auto ranks = static_cast<std::uint32_t>(group.size());
  const std::uint32_t tokens = 32 * ranks + 1;
  const vkt::mpi::Problem p = vkt::mpi::make_problem(32, 48, 32, 1, tokens, 1, 9);
  const BlrTrainerConfig c = vkt::mpi::config(p);
  BlrLayer layer = make_blr_layer(ctx, p.m, p.n, p.r, p.start.init(), false);
  mpi::DistributedTrainer dist(group, ctx, layer, tokens, c);
  const mpi::TokenSlice slice = dist.slice();
  checks.expect(slice.count == (group.rank() == 0 ? 33u : 32u), std::format("slice of {} tokens", slice.count));
  Buffer x = ctx.upload(vkt::mpi::rows(p.x[0], p.n, slice.first, slice.count));
  Buffer target = ctx.upload(vkt::mpi::rows(p.target[0], p.m, slice.first, slice.count));
  dist.add_batch(x, target);
  const StepResult r = dist.step(0, 0.05f, 2e-3f);
  if (group.rank() == 0) {
    BlrLayer whole_layer = make_blr_layer(ctx, p.m, p.n, p.r, p.start.init(), false);
    BlrTrainerConfig split = c;
    split.split = true;
    BlrTrainer whole(ctx, whole_layer, tokens, split);
    Buffer wx = ctx.upload(p.x[0]), wt = ctx.upload(p.target[0]);
    whole.add_batch(wx, wt);
    const double sq = whole.accumulate(0);
    const GradientBlock& a = dist.trainer().gradient_block();
    const GradientBlock& b = whole.gradient_block();
    const auto* ga = static_cast<const float*>(a.summed->mapped());
    const auto* gb = static_cast<const float*>(b.buffer->mapped());
    const std::span<const float> grads_a(ga + a.scales, a.floats - a.scales), grads_b(gb + b.scales, b.floats - b.scales);
    const double err = vkt::rel_error(grads_a, grads_b);
    checks.expect(err < 1e-5, std::format("summed gradients vs the whole batch: relative error {}", err));
    checks.expect(std::abs(r.sq_error - sq) <= 1e-5 * sq, std::format("loss {} vs {} of the whole batch", r.sq_error, sq));
    std::printf("uneven slices (%u tokens): gradients within %.2g of the whole batch's, loss %.9g vs %.9g\n", tokens,
                err, r.sq_error, sq);
  }
  for (int s = 0; s < 3; ++s) {
    dist.step(0, 0.05f, 2e-3f);
    checks.expect(same_on_every_rank(group, vkt::mpi::hash(vkt::trainer_snapshot(layer, dist.trainer()))),
                  std::format("uneven step {}: ranks differ", s + 2));
  }
}

// Every rank's string, in rank order, whatever their lengths; the device
// fields of a fingerprint; a deadline of +infinity waits, others are checked.
void gather_and_deadline(const Context& ctx, mpi::RankGroup& group, Checks& checks) {
  const std::string mine(static_cast<std::size_t>(3 * group.rank()), static_cast<char>('a' + group.rank()));
  const std::vector<std::string> all = group.allgather_strings(mine, "test strings");
  checks.expect(all.size() == static_cast<std::size_t>(group.size()), std::format("{} strings gathered", all.size()));
  for (std::size_t r = 0; r < all.size(); ++r) {
    checks.expect(all[r] == std::string(3 * r, static_cast<char>('a' + r)), std::format("rank {}'s string: '{}'", r, all[r]));
  }
  mpi::Fingerprint f;
  f.add_device(ctx);
  checks.expect(f.fields().size() > 2 && f.fields()[0].first == "vkblr version" && f.fields()[1].first == "device" &&
                    f.fields()[1].second.find(ctx.caps().device_name) == 0 &&
                    f.fields()[2].first.starts_with("gemm policy "),
                "add_device: the version, the device and the GEMM policy's fields");
  const double before = group.timeout_s();
  for (const double bad : {0.0, -1.0, std::nan("")}) {
    bool refused = false;
    try {
      group.set_timeout_s(bad);
    } catch (const Error&) {
      refused = true;
    }
    checks.expect(refused && group.timeout_s() == before, std::format("set_timeout_s({}) refused", bad));
  }
  group.set_timeout_s(std::numeric_limits<double>::infinity());
  group.barrier("a barrier without a deadline");
  group.set_timeout_s(before);
}

// Rank r's value i of a test block: a spread of signs and magnitudes.
float block_value(int rank, std::size_t i) {
  std::uint64_t h = (i + 1) * 0x9e3779b97f4a7c15ull ^ (static_cast<std::uint64_t>(rank) + 7) * 0xc2b2ae3d27d4eb4full;
  h ^= h >> 29;
  h *= 0xbf58476d1ce4e5b9ull;
  h ^= h >> 32;
  const float mantissa = static_cast<float>(h & 0xffffff) / 16777216.0f - 0.5f;
  return std::ldexp(mantissa, static_cast<int>((h >> 24) % 40) - 20);
}

// allreduce_sum (messages) and sum_shared (shared memory), on 1 and 3
// sum threads, give every element ((0 + v0) + v1) + ... in f32, bit for
// bit, for lengths below and above a thread's share, with shared blocks
// used twice; ranks asking for different exchanges (or a bad
// VKBLR_MPI_EXCHANGE) fail on every rank.
void exchanges(mpi::RankGroup& group, Checks& checks) {
  checks.expect(group.exchange() == mpi::Exchange::shared_memory,
                std::format("ranks on one host exchange through shared memory, not {}", to_string(group.exchange())));
  auto rank_order_sums = [&](std::size_t floats) {
    std::vector<float> want(floats, 0.0f);
    for (int r = 0; r < group.size(); ++r) {
      for (std::size_t i = 0; i < floats; ++i) want[i] += block_value(r, i);
    }
    return want;
  };
  for (const unsigned threads : {1u, 3u}) {
    mpi::RankGroupOptions o;
    o.timeout_s = 120;
    o.sum_threads = threads;
    mpi::RankGroup g(MPI_COMM_WORLD, o);
    for (const std::size_t floats : {std::size_t{7}, std::size_t{3} << 18 | 5}) {
      const std::vector<float> want = rank_order_sums(floats);
      std::vector<float> values(floats);
      for (std::size_t i = 0; i < floats; ++i) values[i] = block_value(g.rank(), i);
      g.allreduce_sum(values, "test block");
      checks.expect(std::memcmp(values.data(), want.data(), floats * sizeof(float)) == 0,
                    std::format("allreduce_sum of {} floats on {} threads: not the rank-order sums", floats, threads));
      mpi::SharedBlocks blocks(g, floats, "test blocks");
      for (int use = 0; use < 2; ++use) {
        float* const input = blocks.input(g.rank());
        for (std::size_t i = 0; i < floats; ++i) input[i] = block_value(g.rank(), i) * (use == 0 ? 1.0f : 2.0f);
        g.sum_shared(blocks, "test blocks");
        bool same = true;
        for (std::size_t i = 0; i < floats; ++i) same = same && blocks.result()[i] == want[i] * (use == 0 ? 1.0f : 2.0f);
        checks.expect(same, std::format("sum_shared of {} floats on {} threads, use {}: not the rank-order sums",
                                        floats, threads, use + 1));
      }
    }
  }
  auto refused = [&](const mpi::RankGroupOptions& o, std::string_view expected, std::string_view label) {
    std::string message;
    try {
      mpi::RankGroup g(MPI_COMM_WORLD, o);
    } catch (const Error& e) {
      message = e.what();
    }
    checks.expect(message.find(expected) != std::string::npos, std::format("{}: '{}'", label, message));
  };
  if (group.size() > 1) {
    mpi::RankGroupOptions o;
    o.exchange = group.rank() == 0 ? mpi::Exchange::messages : mpi::Exchange::shared_memory;
    refused(o, "different exchanges: messages on rank 0 vs shared_memory on rank 1", "exchanges that differ");
    ::setenv("VKBLR_MPI_EXCHANGE", group.rank() == 0 ? "shared" : "pipes", 1);
    refused({}, "VKBLR_MPI_EXCHANGE=pipes (shared or messages) (rank 1)", "a bad VKBLR_MPI_EXCHANGE on one rank");
    ::unsetenv("VKBLR_MPI_EXCHANGE");
  }
}

// The median time over 9 calls of allreduce_sum (messages, from and to
// this rank's values) and of sum_shared (shared memory, in place: the
// host's part when the GPUs read and write the blocks), on `floats`.
void exchange_timing(std::size_t floats) {
  mpi::RankGroup g(MPI_COMM_WORLD);
  std::vector<float> values(floats);
  for (std::size_t i = 0; i < floats; ++i) values[i] = block_value(g.rank(), i);
  // rank 0's view of /dev/shm decides for all
  const std::string lack = g.allgather_strings(mpi::SharedBlocks::lack_of_room(floats, g.size()), "room")[0];
  if (!lack.empty() && g.rank() == 0) std::printf("sum_shared of %zu KiB: not timed: %s\n", floats * 4 / 1024, lack.c_str());
  std::unique_ptr<mpi::SharedBlocks> blocks;
  if (lack.empty()) {
    blocks = std::make_unique<mpi::SharedBlocks>(g, floats, "timed blocks");
    std::copy(values.begin(), values.end(), blocks->input(g.rank()));
  }
  for (const bool shared : {false, true}) {
    if (shared && !blocks) continue;
    std::vector<double> ms;
    for (int k = 0; k < 10; ++k) {
      g.barrier("timing");
      const auto t0 = std::chrono::steady_clock::now();
      if (shared) {
        g.sum_shared(*blocks, "timed blocks");
      } else {
        g.allreduce_sum(values, "timed block");
      }
      ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
      for (std::size_t i = 0; i < floats; i += 1024) values[i] *= 0.5f;  // bounded values
    }
    std::sort(ms.begin() + 1, ms.end());  // the first call sets up
    if (g.rank() == 0) {
      std::printf("%s of %zu KiB, %u sum threads: median %.3f ms (%.2f GB/s of block)\n",
                  shared ? "sum_shared" : "allreduce_sum", floats * 4 / 1024, g.sum_threads(), ms[5],
                  static_cast<double>(floats) * 4e-6 / ms[5]);
      std::fflush(stdout);
    }
  }
}

// One layer's step through `group` with `options`: rank `rank`'s split of
// the step time, printed. Returns the block's length.
std::size_t step_timing(Context& ctx, mpi::RankGroup& group, mpi::DistributedOptions options, std::string_view how) {
  const std::uint32_t m = 256, n = 256, r = 64, tokens = 128 * static_cast<std::uint32_t>(group.size());
  const vkt::mpi::Problem p = vkt::mpi::make_problem(m, n, r, 1, tokens, 1, 13);
  BlrLayer layer = make_blr_layer(ctx, m, n, r, p.start.init(), false);
  options.timing_barrier = true;
  mpi::DistributedTrainer dist(group, ctx, layer, tokens, vkt::mpi::config(p), options);
  Buffer x = ctx.upload(vkt::mpi::rows(p.x[0], n, dist.slice().first, dist.slice().count));
  Buffer target = ctx.upload(vkt::mpi::rows(p.target[0], m, dist.slice().first, dist.slice().count));
  dist.add_batch(x, target);
  dist.step(0, 0.01f, 1e-3f);  // warm-up: pipelines
  const mpi::StepTiming warm = dist.timing();
  constexpr int kSteps = 20;
  for (int s = 0; s < kSteps; ++s) dist.step(0, 0.01f, 1e-3f);
  mpi::StepTiming t = dist.timing();
  t.accumulate_s -= warm.accumulate_s;
  t.wait_s -= warm.wait_s;
  t.exchange_s -= warm.exchange_s;
  t.apply_s -= warm.apply_s;
  const GradientBlock& block = dist.trainer().gradient_block();
  const std::string line = std::format(
      "rank {} ({}): {}x{} r{} {} tokens/rank, block {} KiB; per step: graph A {:.2f} ms, wait {:.2f} ms, exchange "
      "{:.3f} ms, graph B {:.2f} ms; exchange share {:.2f} %",
      group.rank(), how, m, n, r, dist.slice().count, block.floats * 4 / 1024, 1e3 * t.accumulate_s / kSteps,
      1e3 * t.wait_s / kSteps, 1e3 * t.exchange_s / kSteps, 1e3 * t.apply_s / kSteps, 100 * t.exchange_share());
  std::printf("%s\n", line.c_str());
  std::fflush(stdout);
  return block.floats;
}

// The exchange's share of step time on a layer of some size, through each
// exchange; then allreduce_sum and sum_shared alone on that block, on 13 MB
// and on `extra_floats` (--timing FLOATS; 0: not).
void timing(Context& ctx, mpi::RankGroup& group, std::size_t extra_floats) {
  mpi::RankGroupOptions by_messages;
  by_messages.exchange = mpi::Exchange::messages;
  mpi::RankGroup messages_group(MPI_COMM_WORLD, by_messages);
  step_timing(ctx, messages_group, {}, "messages");
  const std::size_t floats = step_timing(ctx, group, {}, "shared memory");
  exchange_timing(floats);
  exchange_timing(3276800);  // 13 MB: vkblr-fit's default layer with sign training
  if (extra_floats > 0) exchange_timing(extra_floats);
}

}  // namespace

int main(int argc, char** argv) {
  mpi::Session session(argc, argv);
  mpi::RankGroupOptions group_options;
  group_options.timeout_s = 120;
  mpi::RankGroup group(MPI_COMM_WORLD, group_options);
  const bool timing_only = argc > 1 && std::strcmp(argv[1], "--timing") == 0;
  Checks checks(group);
  try {
    ContextOptions options;
    options.device = group.device();
    options.validation = !timing_only;
    Context ctx(options);
    if (timing_only) {
      timing(ctx, group, argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 0);
    } else {
      device_mapping(checks);
      gather_and_deadline(ctx, group, checks);
      exchanges(group, checks);
      agreement(ctx, group, checks);
      policy_agreement(group, options, checks);
      equivalence(ctx, group, {}, "shared memory", checks);
      mpi::RankGroupOptions by_messages = group_options;
      by_messages.exchange = mpi::Exchange::messages;
      mpi::RankGroup messages_group(MPI_COMM_WORLD, by_messages);
      equivalence(ctx, messages_group, {}, "messages", checks);
      uneven(ctx, group, checks);
      for (const std::string& m : ctx.validation_messages()) checks.expect(false, "validation: " + m);
    }
  } catch (const std::exception& e) {
    group.abort(std::string("error: ") + e.what());
  }
  return checks.finish();
}
