// vkblr-bench loss: a training step's loss over a large vocabulary, its
// rate, and the bandwidth of its memory-bound dispatches against a copy.
#include "loss_bench.hpp"

#include <algorithm>
#include <cstdio>
#include <format>
#include <stdexcept>

#include "bench_args.hpp"
#include "layer_case.hpp"

namespace bench {
namespace {

std::uint64_t round32(std::uint64_t v) { return (v + 31) / 32 * 32; }

// What one step computes and moves, counted from its shapes (the op's
// method, docs/kernels.md "Losses over a vocabulary in slices").
struct StepCount {
  double gemm_flops = 0;     // executed, padded columns included
  double model_flops = 0;    // 6·N·V·H (+ 2·N·V·H_T)
  double memory_bytes = 0;   // read and written by the memory-bound dispatches
  std::uint32_t slices = 0;
};

StepCount count_step(const LossCase& c, std::uint32_t slice, bool kl, std::uint32_t teacher_hidden) {
  const double n = c.tokens, h = c.hidden, v = c.vocab, ht = kl ? teacher_hidden : 0;
  const double n32 = static_cast<double>(round32(c.tokens)), h32 = static_cast<double>(round32(c.hidden));
  const std::uint64_t s = std::min<std::uint64_t>(slice ? slice : round32(c.vocab), round32(c.vocab));
  StepCount r;
  r.slices = static_cast<std::uint32_t>((c.vocab + s - 1) / s);
  r.model_flops = 6 * n * v * h + 2 * n * v * ht;
  const double sides = kl ? 2 : 1;  // logits read per element
  // staging of h (and h_T): cvt; hᵀ for dW: cvt_t
  r.memory_bytes += n * h * 6 + n * ht * 6 + n * h * 4 + h32 * n32 * 2;
  for (std::uint32_t j = 0; j < r.slices; ++j) {
    const double cols = static_cast<double>(std::min<std::uint64_t>(s, c.vocab - j * s));
    const double ldz = static_cast<double>(round32(static_cast<std::uint64_t>(cols)));
    const bool kept = j + 1 == r.slices;
    const double passes = kept ? 1 : 2;  // the logits of every slice but the last are made twice
    r.gemm_flops += passes * 2 * n * ldz * (h + ht);
    r.memory_bytes += passes * (cols * (h + ht) * 4 + ldz * (h + ht) * 2);  // cvt of W's (and W_T's) rows
    r.memory_bytes += sides * n * cols * 4 + n * 4 * 8;                     // stats: logits, state
    r.memory_bytes += cols * h * 4 + h32 * ldz * 2;                          // cvt_t of W's rows
    r.memory_bytes += sides * n * cols * 4 + n * ldz * 2 + ldz * n32 * 2;   // grad: logits in, dz16 and dzᵀ16 out
    r.gemm_flops += 2 * n * h * ldz + 2 * cols * h * n32;                    // dh, dW
  }
  return r;
}

bool memory_bound(const std::string& name) {
  return name == "cvt" || name == "cvt_t" || name == "ce_stats" || name == "ce_grad" || name == "kl_stats" ||
         name == "kl_grad" || name == "logit_loss_reduce";
}

}  // namespace

LossCase parse_loss_case(const std::string& text) {
  const auto v = parse_numbers(text, ',', 3, 3, "tokens,hidden,vocab");
  const LossCase c{v[0], v[1], v[2]};
  auto rule = [&](bool ok, const std::string& what) {
    if (!ok) throw std::invalid_argument(std::format("case {}: {} (vkblr/ops/logit_loss.hpp)", text, what));
  };
  rule(c.tokens >= 1, "tokens = 0");
  rule(c.hidden > 0 && c.hidden % 16 == 0, std::format("hidden = {} is not a positive multiple of 16", c.hidden));
  rule(c.vocab >= 1, "vocab = 0");
  return c;
}

std::uint32_t parse_loss_slice(const std::string& text) {
  const std::uint32_t s = parse_numbers(text, ',', 1, 1, "a slice size")[0];
  if (s % 32 != 0) {
    throw std::invalid_argument(std::format("slice {} is not a multiple of 32 (0: the whole vocabulary)", s));
  }
  return s;
}

// The slice as the op takes it: 0 (the whole vocabulary) becomes the
// vocabulary rounded up to 32, kept within 32 bits.
namespace {
std::uint32_t op_slice(const LossCase& c, std::uint32_t slice) {
  return slice ? slice : static_cast<std::uint32_t>(std::min<std::uint64_t>(round32(c.vocab), 0xFFFFFFE0u));
}
}  // namespace

MemoryNeed loss_memory(const LossCase& c, std::uint32_t slice, bool kl, std::uint32_t teacher_hidden) {
  // counted in doubles from the shapes (logit_loss_scratch_bytes' terms), so
  // that a case too large for 32-bit indices is still sized and refused here
  const double n = c.tokens, v = c.vocab, h = c.hidden, ht = kl ? teacher_hidden : 0;
  const double sl = static_cast<double>(std::min<std::uint64_t>(op_slice(c, slice), round32(c.vocab)));
  const double n32 = static_cast<double>(round32(c.tokens)), h32 = static_cast<double>(round32(c.hidden));
  const double scratch = n * h * 2 + sl * h * 2 + n * sl * 4 + n * 9 * 4 + n * ht * 2 + sl * ht * 2 +
                         (kl ? n * sl * 4 : 0) + h32 * n32 * 2 + h32 * sl * 2 + n * sl * 2 + sl * n32 * 2;
  MemoryNeed need;
  // h, W, dh, dW (+ h_T, W_T), the targets, the scratch, the staging buffer
  // of the largest upload; the host copies of h and W (h_T, W_T)
  need.largest_buffer = std::max({v * h * 4, v * ht * 4, n * sl * 4});
  need.device_bytes = 2 * (n * h + v * h) * 4 + (n * ht + v * ht) * 4 + n * 4 + scratch + v * std::max(h, ht) * 4;
  need.host_bytes = (n * h + v * h + n * ht + v * ht) * 4;
  return need;
}

double copy_bandwidth(vkblr::Context& ctx, std::uint64_t floats, std::uint32_t warmup, std::uint32_t reps) {
  const std::uint32_t k = 4096;
  const auto m = static_cast<std::uint32_t>(floats / k);
  vkblr::Buffer a = ctx.upload(random_floats(std::size_t{m} * k, 5, -1.0f, 1.0f));
  vkblr::Buffer col = ctx.upload(std::vector<float>(k, 1.0f));
  vkblr::Buffer out = ctx.buffer(std::size_t{m} * k * 4);
  const vkblr::Dispatch d = vkblr::ops::scale_acc(ctx, a, col, out, m, k, false);
  const Stats s = time_gpu(ctx, warmup, reps, [&](vkblr::Recorder& rec, std::uint32_t) { rec.add(d); });
  return 8.0 * m * k / (s.median_ms * 1e-3) / 1e9;
}

double copy_baseline(vkblr::Context& ctx, std::uint32_t warmup, std::uint32_t reps, bool quiet) {
  try {
    const double gbs = copy_bandwidth(ctx, ctx.caps().device_type == "cpu" ? (1u << 24) : (1u << 26), warmup,
                                      std::max(reps, 20u));
    if (!quiet) std::fprintf(stderr, "copy (scale_acc): %.1f GB/s\n", gbs);
    return gbs;
  } catch (const std::exception& e) {  // vkblr::Error, or host memory
    if (!quiet) std::fprintf(stderr, "copy baseline failed: %s\n", e.what());
    return 0;
  }
}

std::vector<LossResult> run_loss_bench(vkblr::Context& ctx, const LossBenchOptions& o) {
  std::vector<LossResult> out;
  const double copy_gbs = copy_baseline(ctx, o.warmup, o.reps, o.quiet);
  for (const LossCase& c : o.cases) {
    for (const std::uint32_t slice : o.slices) {
      LossResult res;
      res.c = c;
      res.slice = slice;
      res.kl = o.kl;
      res.teacher_hidden = o.kl ? (o.teacher_hidden ? o.teacher_hidden : c.hidden) : 0;
      res.copy_gbs = copy_gbs;
      try {
        const std::string what =
            std::format("loss {},{},{} slice {}", c.tokens, c.hidden, c.vocab, slice ? std::to_string(slice) : "all");
        require_fits(ctx.caps(), loss_memory(c, slice, o.kl, res.teacher_hidden), what);
        vkblr::ops::LogitLossShape shape;
        shape.tokens = c.tokens;
        shape.hidden = c.hidden;
        shape.vocab = c.vocab;
        shape.slice = op_slice(c, slice);
        shape.teacher_hidden = res.teacher_hidden;
        const StepCount count = count_step(c, shape.slice, o.kl, res.teacher_hidden);
        res.slices = count.slices;

        // random inputs of a real step's magnitudes: h ~ unit (after the
        // final norm), W ~ 0.02-0.05, targets spread over the vocabulary
        vkblr::Buffer h = ctx.upload(random_floats(std::size_t{c.tokens} * c.hidden, 1, -1.0f, 1.0f));
        vkblr::Buffer w = ctx.upload(random_floats(std::size_t{c.vocab} * c.hidden, 2, -0.05f, 0.05f));
        std::vector<std::uint32_t> ids(c.tokens);
        for (std::uint32_t t = 0; t < c.tokens; ++t) ids[t] = static_cast<std::uint32_t>((std::uint64_t{t} * 7919) % c.vocab);
        vkblr::Buffer targets = ctx.upload(ids);
        vkblr::Buffer th, tw;
        if (o.kl) {
          th = ctx.upload(random_floats(std::size_t{c.tokens} * res.teacher_hidden, 3, -1.0f, 1.0f));
          tw = ctx.upload(random_floats(std::size_t{c.vocab} * res.teacher_hidden, 4, -0.05f, 0.05f));
        }
        vkblr::Buffer dh = ctx.buffer(std::size_t{c.tokens} * c.hidden * 4);
        vkblr::Buffer dw = ctx.buffer(std::size_t{c.vocab} * c.hidden * 4);
        vkblr::Buffer loss = ctx.buffer(16);
        const vkblr::ops::LogitLossScratch scratch = vkblr::ops::make_logit_loss_scratch(ctx, shape);
        res.scratch_bytes = vkblr::ops::logit_loss_scratch_bytes(shape);
        vkblr::ops::LogitLossGrads grads;
        grads.dh = &dh;
        grads.dw = &dw;
        grads.grad_scale = 1.0f / static_cast<float>(c.tokens);
        grads.accumulate_dh = grads.accumulate_dw = false;
        const vkblr::Ops step = o.kl ? vkblr::ops::kl_distill(ctx, shape, h, w, th, tw, loss, grads, scratch)
                                     : vkblr::ops::cross_entropy(ctx, shape, h, w, targets, loss, grads, scratch);
        res.dispatches = static_cast<std::uint32_t>(step.size());

        // profiled: per-step span, busy time and per-name times
        vkblr::Profiler& prof = ctx.profiler();
        prof.enable(true);
        vkblr::Recorder rec(ctx);
        for (std::uint32_t r = 0; r < o.reps; ++r) rec.add(step);
        res.barriers = rec.barriers() / std::max(1u, o.reps);
        vkblr::Graph profiled = rec.finish();
        prof.enable(false);
        warm_up(o.warmup, [&] { profiled.run(); });
        prof.reset();
        profiled.run();
        const RepTimes times = rep_times(
            prof.events(), o.reps, [&](std::uint32_t) { return res.dispatches; },
            [&](const vkblr::ProfileEvent& ev) {
              const double ms = ev.duration_us * 1e-3 / static_cast<double>(o.reps);
              res.per_name_ms[ev.name] += ms;
              if (ev.name.rfind("gemm", 0) == 0) res.gemm_ms += ms;
              if (memory_bound(ev.name)) res.memory_ms += ms;
            });
        res.span = times.span;
        res.busy = times.busy;

        // unprofiled replay: wall time of `reps` steps in one submit
        vkblr::Recorder plain(ctx);
        for (std::uint32_t r = 0; r < o.reps; ++r) plain.add(step);
        vkblr::Graph graph = plain.finish();
        res.replay_ms = replay_ms(graph, o.warmup, o.reps);
        res.model_tflops = count.model_flops / (res.replay_ms * 1e-3) / 1e12;
        res.gemm_tflops = res.gemm_ms > 0 ? count.gemm_flops / (res.gemm_ms * 1e-3) / 1e12 : 0;
        res.memory_bytes = count.memory_bytes;
        res.memory_gbs = res.memory_ms > 0 ? count.memory_bytes / (res.memory_ms * 1e-3) / 1e9 : 0;
        res.loss = vkblr::ops::read_logit_loss(loss).mean;
      } catch (const std::exception& err) {  // vkblr::Error, or host memory
        res.error = err.what();
      }
      if (!o.quiet) std::fprintf(stderr, "%s\n", format_loss_result(res).c_str());
      out.push_back(std::move(res));
    }
  }
  return out;
}

std::string format_loss_result(const LossResult& r) {
  const LossCase& c = r.c;
  std::string s = std::format("loss {} tokens={} hidden={} vocab={}{} slice={}: ", r.kl ? "kl" : "ce", c.tokens,
                              c.hidden, c.vocab, r.kl ? std::format(" teacher_hidden={}", r.teacher_hidden) : "",
                              r.slice ? std::to_string(r.slice) : "all");
  if (!r.error.empty()) return s + "error: " + r.error;
  s += std::format("step {:.3f} ms (replay {:.3f} ms, busy {:.3f} ms, {} slices, {} dispatches, {} barriers), "
                   "{:.1f} TFLOP/s effective; GEMMs {:.3f} ms at {:.1f} TFLOP/s; memory-bound {:.3f} ms, "
                   "{:.3g} GB at {:.0f} GB/s",
                   r.span.median_ms, r.replay_ms, r.busy.median_ms, r.slices, r.dispatches, r.barriers,
                   r.model_tflops, r.gemm_ms, r.gemm_tflops, r.memory_ms, r.memory_bytes / 1e9, r.memory_gbs);
  if (r.copy_gbs > 0) s += std::format(" = {:.2f}x the copy's {:.0f} GB/s", r.memory_gbs / r.copy_gbs, r.copy_gbs);
  s += std::format("; scratch {:.1f} MiB; loss {:.4f}", static_cast<double>(r.scratch_bytes) / (1 << 20), r.loss);
  for (const auto& [name, ms] : r.per_name_ms) s += std::format("\n    {:<28} {:.4f} ms/step", name, ms);
  return s;
}

nlohmann::json to_json(const LossResult& r) {
  const LossCase& c = r.c;
  nlohmann::json j = {{"kind", r.kl ? "kl" : "ce"}, {"tokens", c.tokens}, {"hidden", c.hidden},
                      {"vocab", c.vocab},           {"slice", r.slice},     {"teacher_hidden", r.teacher_hidden}};
  if (!r.error.empty()) {
    j["error"] = r.error;
    return j;
  }
  j["slices"] = r.slices;
  j["step_ms"] = r.span.median_ms;
  j["step_min_ms"] = r.span.min_ms;
  j["replay_ms"] = r.replay_ms;
  j["busy_ms"] = r.busy.median_ms;
  j["effective_tflops"] = r.model_tflops;
  j["gemm_ms"] = r.gemm_ms;
  j["gemm_tflops"] = r.gemm_tflops;
  j["memory_ms"] = r.memory_ms;
  j["memory_bytes"] = r.memory_bytes;
  j["memory_gbs"] = r.memory_gbs;
  j["copy_gbs"] = r.copy_gbs;
  if (r.copy_gbs > 0) j["memory_vs_copy"] = r.memory_gbs / r.copy_gbs;
  j["scratch_bytes"] = r.scratch_bytes;
  j["dispatches"] = r.dispatches;
  j["barriers"] = r.barriers;
  j["loss"] = r.loss;
  j["per_name_ms"] = r.per_name_ms;
  j["reps"] = r.span.reps;
  return j;
}

}  // namespace bench
