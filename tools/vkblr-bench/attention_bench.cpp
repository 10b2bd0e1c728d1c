// vkblr-bench attention: forward and forward + backward times of causal
// self-attention per case, with the reference FLOP rate.
#include "attention_bench.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <format>
#include <random>
#include <stdexcept>
#include <string_view>

#include "bench_args.hpp"

namespace bench {
namespace {

std::vector<float> random_floats(std::size_t n, std::uint32_t seed, float scale) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> d(-scale, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = d(gen);
  return v;
}

// Host copies of one case's inputs and what --check compares.
struct HostCase {
  std::vector<float> q, k, v, dout;
};

// The largest error of o, lse and dq over 16 sampled (sequence, head,
// query) rows, each against an f64 evaluation of that row, over the
// largest magnitude of the same quantity.
double sampled_error(const AttentionCase& c, const HostCase& in, const std::vector<float>& o,
                     const std::vector<float>& lse, const std::vector<float>& dq) {
  const std::size_t qs = std::size_t{c.heads} * c.head_dim, ks = std::size_t{c.kv_heads} * c.head_dim;
  const double scale = 1.0 / std::sqrt(static_cast<double>(c.head_dim));
  std::mt19937 gen(11);
  double err[3] = {0, 0, 0}, mag[3] = {0, 0, 0};
  std::vector<double> p(c.seq), dp(c.seq);
  for (int sample = 0; sample < 16; ++sample) {
    auto pick = [&](std::uint32_t n) { return static_cast<std::uint32_t>(gen() % n); };
    const std::uint32_t b = pick(c.batch), h = pick(c.heads), i = pick(c.seq);
    const std::uint32_t g = h / (c.heads / c.kv_heads);
    const std::size_t row = std::size_t{b} * c.seq + i, qrow = row * qs + std::size_t{h} * c.head_dim;
    auto krow = [&](std::uint32_t j) { return (std::size_t{b} * c.seq + j) * ks + std::size_t{g} * c.head_dim; };
    double m = -INFINITY;
    for (std::uint32_t j = 0; j <= i; ++j) {
      double s = 0;
      for (std::uint32_t d = 0; d < c.head_dim; ++d) s += static_cast<double>(in.q[qrow + d]) * in.k[krow(j) + d];
      p[j] = scale * s;
      m = std::max(m, p[j]);
    }
    double l = 0;
    for (std::uint32_t j = 0; j <= i; ++j) l += std::exp(p[j] - m);
    double delta = 0;
    for (std::uint32_t j = 0; j <= i; ++j) {
      p[j] = std::exp(p[j] - m) / l;
      double s = 0;
      for (std::uint32_t d = 0; d < c.head_dim; ++d) s += static_cast<double>(in.dout[qrow + d]) * in.v[krow(j) + d];
      dp[j] = s;
      delta += p[j] * s;
    }
    const double want_lse = m + std::log(l);
    err[1] = std::max(err[1], std::abs(lse[row * c.heads + h] - want_lse));
    mag[1] = std::max(mag[1], std::abs(want_lse));
    for (std::uint32_t d = 0; d < c.head_dim; ++d) {
      double want_o = 0, want_dq = 0;
      for (std::uint32_t j = 0; j <= i; ++j) {
        want_o += p[j] * in.v[krow(j) + d];
        want_dq += scale * p[j] * (dp[j] - delta) * in.k[krow(j) + d];
      }
      err[0] = std::max(err[0], std::abs(o[qrow + d] - want_o));
      mag[0] = std::max(mag[0], std::abs(want_o));
      err[2] = std::max(err[2], std::abs(dq[qrow + d] - want_dq));
      mag[2] = std::max(mag[2], std::abs(want_dq));
    }
  }
  double worst = 0;
  for (int x = 0; x < 3; ++x) worst = std::max(worst, mag[x] > 0 ? err[x] / mag[x] : err[x]);
  return std::isnan(worst) ? INFINITY : worst;
}

// What --check accepts: f32 arithmetic, or f16 operands.
double check_limit(std::string_view kernel) { return kernel == "plain" ? 1e-4 : 1e-2; }

}  // namespace

AttentionCase parse_attention_case(std::string_view text) {
  const auto v = parse_numbers(text, ',', 5, 5, "B,T,H,KVH,D");
  const AttentionCase c{v[0], v[1], v[2], v[3], v[4]};
  auto rule = [&](bool ok, std::string_view what) {
    if (!ok) throw std::invalid_argument(std::format("case {}: {} (vkblr/ops/attention.hpp)", text, what));
  };
  rule(c.batch > 0 && c.seq > 0 && c.heads > 0 && c.kv_heads > 0, "every size must be at least 1");
  rule(c.heads % c.kv_heads == 0, std::format("heads = {} is not a multiple of kv_heads = {}", c.heads, c.kv_heads));
  rule(c.head_dim % 32 == 0 && c.head_dim > 0 && c.head_dim <= 128,
       std::format("head_dim = {} is not 32, 64, 96 or 128", c.head_dim));
  return c;
}

std::string to_string(const AttentionCase& c) {
  return std::format("attention B={} T={} heads={}/{} d={}", c.batch, c.seq, c.heads, c.kv_heads, c.head_dim);
}

double attention_forward_flops(const AttentionCase& c) {
  return 4.0 * c.batch * c.heads * static_cast<double>(c.seq) * c.seq * c.head_dim / 2.0;
}

MemoryNeed attention_memory(const AttentionCase& c) {
  const double tokens = static_cast<double>(c.batch) * c.seq;
  const double qb = tokens * c.heads * c.head_dim * 4, kvb = tokens * c.kv_heads * c.head_dim * 4;
  const double rows = tokens * c.heads * 4;
  MemoryNeed need;
  need.largest_buffer = qb;
  // q, o, dout, dq; k, v, dk, dv; lse, delta; the f16 copies; the upload's staging
  need.device_bytes = 4 * qb + 4 * kvb + 2 * rows + (qb + kvb) + qb;
  need.host_bytes = 2 * qb + 2 * kvb + 2 * qb + rows;  // inputs, and the downloads of --check
  return need;
}

bool failed(const AttentionResult& r) {
  return !r.error.empty() || (r.check_error >= 0 && !(r.check_error <= check_limit(r.kernel)));
}

namespace {

// One case with one block (0: the library's choice) and prefetch setting.
AttentionResult run_attention_case(vkblr::Context& ctx, const AttentionBenchOptions& o, const AttentionCase& c,
                                   std::uint32_t block, vkblr::ops::AttentionPrefetch prefetch) {
  AttentionResult r;
  r.c = c;
  r.block = block;
  r.prefetch = prefetch;
  try {
    require_fits(ctx.caps(), attention_memory(c), to_string(c));
    const vkblr::ops::AttentionShape shape{c.batch, c.seq, c.heads, c.kv_heads, c.head_dim, 0.0f};
    const vkblr::ops::AttentionKernel kernel = o.kernel == vkblr::ops::AttentionKernel::automatic
                                                   ? vkblr::ops::attention_kernel_for(ctx, c.head_dim)
                                                   : o.kernel;
    r.kernel = vkblr::ops::to_string(kernel);
    const std::size_t tokens = std::size_t{c.batch} * c.seq;
    const std::size_t qn = tokens * c.heads * c.head_dim, kvn = tokens * c.kv_heads * c.head_dim;
    HostCase in{random_floats(qn, 1, 1.0f), random_floats(kvn, 2, 1.0f), random_floats(kvn, 3, 1.0f),
                random_floats(qn, 4, 1e-3f)};
    vkblr::Buffer q = ctx.upload(in.q), k = ctx.upload(in.k), v = ctx.upload(in.v), dout = ctx.upload(in.dout);
    if (!o.check) in = {};
    vkblr::Buffer out_o = ctx.buffer(qn * 4), lse = ctx.buffer(tokens * c.heads * 4);
    vkblr::Buffer dq = ctx.buffer(qn * 4), dk = ctx.buffer(kvn * 4), dv = ctx.buffer(kvn * 4);
    const vkblr::ops::AttentionOptions options{.kernel = kernel, .block = block, .prefetch = prefetch};
    const vkblr::Ops fwd = vkblr::ops::attention_forward(ctx, q, k, v, out_o, lse, shape, options);
    const vkblr::Ops bwd = vkblr::ops::attention_backward(ctx, q, k, v, out_o, lse, dout, dq, dk, dv, shape, options);
    if (o.stats && ctx.caps().kernel_statistics) {
      for (const vkblr::Ops* ops : {&fwd, &bwd}) {
        for (const vkblr::Dispatch& d : *ops) {
          if (std::string_view(d.name).starts_with("attention_")) add_kernel_stats(r.kernel_stats, d);
        }
      }
    }
    r.forward = time_gpu(ctx, o.warmup, o.reps, [&](vkblr::Recorder& rec, std::uint32_t) { rec.add(fwd); });
    ctx.profiler().reset();
    r.step = time_gpu(ctx, o.warmup, o.reps, [&](vkblr::Recorder& rec, std::uint32_t) {
      rec.add(fwd);
      rec.add(bwd);
    });
    for (const vkblr::ProfileEvent& e : ctx.profiler().events()) {
      r.per_name_ms[e.name] += e.duration_us * 1e-3 / static_cast<double>(o.reps);
    }
    const double flops = attention_forward_flops(c);
    r.forward_tflops = flops / (r.forward.median_ms * 1e-3) / 1e12;
    r.step_tflops = 3.5 * flops / (r.step.median_ms * 1e-3) / 1e12;
    if (o.check) {
      r.check_error = sampled_error(c, in, out_o.download<float>(), lse.download<float>(), dq.download<float>());
    }
  } catch (const std::exception& e) {  // vkblr::Error, or host memory
    r.error = e.what();
  }
  return r;
}

}  // namespace

std::vector<AttentionResult> run_attention_bench(vkblr::Context& ctx, const AttentionBenchOptions& o) {
  std::vector<AttentionResult> out;
  const std::vector<std::uint32_t> blocks = o.blocks.empty() ? std::vector<std::uint32_t>{0} : o.blocks;
  if (o.stats && !ctx.caps().kernel_statistics) {
    std::fprintf(stderr, "attention: --stats: device %s keeps no kernel statistics\n", ctx.caps().device_name.c_str());
  }
  const std::vector<vkblr::ops::AttentionPrefetch> prefetches =
      o.prefetches.empty() ? std::vector{vkblr::ops::AttentionPrefetch::automatic} : o.prefetches;
  for (const AttentionCase& c : o.cases) {
    for (const std::uint32_t block : blocks) {
      for (const vkblr::ops::AttentionPrefetch prefetch : prefetches) {
        AttentionResult r = run_attention_case(ctx, o, c, block, prefetch);
        if (!o.quiet) std::fprintf(stderr, "%s\n", format_attention_result(r).c_str());
        out.push_back(std::move(r));
      }
    }
  }
  return out;
}

std::string format_attention_result(const AttentionResult& r) {
  std::string s = to_string(r.c) + (r.kernel.empty() ? "" : " [" + r.kernel + "]") +
                  (r.block != 0 ? std::format(" block {}", r.block) : "") +
                  (r.prefetch != vkblr::ops::AttentionPrefetch::automatic
                       ? std::format(" prefetch {}", vkblr::ops::to_string(r.prefetch))
                       : "") +
                  ": ";
  if (!r.error.empty()) return s + "error: " + r.error;
  s += std::format("forward {:.4f} ms ({:.3g} TFLOP/s), forward+backward {:.4f} ms ({:.3g} TFLOP/s), {} reps",
                   r.forward.median_ms, r.forward_tflops, r.step.median_ms, r.step_tflops, r.step.reps);
  if (r.check_error >= 0) {
    s += std::format(" check {:.2g} {}", r.check_error, r.check_error <= check_limit(r.kernel) ? "ok" : "FAIL");
  }
  for (const auto& [name, ms] : r.per_name_ms) s += std::format("\n    {:<20} {:.4f} ms/step", name, ms);
  return s + format_kernel_stats(r.kernel_stats);
}

nlohmann::json to_json(const AttentionResult& r) {
  const AttentionCase& c = r.c;
  nlohmann::json j = {{"batch", c.batch},       {"seq", c.seq},           {"heads", c.heads},
                      {"kv_heads", c.kv_heads}, {"head_dim", c.head_dim}, {"kernel", r.kernel}};
  if (r.block != 0) j["block"] = r.block;
  if (r.prefetch != vkblr::ops::AttentionPrefetch::automatic) j["prefetch"] = vkblr::ops::to_string(r.prefetch);
  if (!r.error.empty()) {
    j["error"] = r.error;
    return j;
  }
  j["forward_ms"] = r.forward.median_ms;
  j["forward_min_ms"] = r.forward.min_ms;
  j["forward_tflops"] = r.forward_tflops;
  j["step_ms"] = r.step.median_ms;
  j["step_min_ms"] = r.step.min_ms;
  j["step_tflops"] = r.step_tflops;
  j["forward_flops"] = attention_forward_flops(c);
  j["reps"] = r.step.reps;
  j["per_name_ms"] = r.per_name_ms;
  put_kernel_stats(j, r.kernel_stats);
  if (r.check_error >= 0) j["check_error"] = r.check_error;
  return j;
}

}  // namespace bench
