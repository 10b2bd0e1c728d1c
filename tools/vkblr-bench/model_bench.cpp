// vkblr-bench model: whole-model distillation steps per second.
#include "model_bench.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <format>
#include <functional>
#include <random>
#include <stdexcept>

#include <vkblr/model/random_llama.hpp>

#include "bench_args.hpp"

namespace bench {
namespace {

// The exclusive attribution of `events` (ProfileEvent, several submits):
// per submit, every stretch between two consecutive start/end instants is
// split equally among the dispatches running through it; stretches with
// none running are idle. Totals over all submits, in µs.
struct Exclusive {
  std::map<std::string, double> per_name_us;
  double busy_us = 0, idle_us = 0;
};
Exclusive exclusive_times(const std::vector<vkblr::ProfileEvent>& events) {
  Exclusive out;
  std::map<std::uint64_t, std::vector<const vkblr::ProfileEvent*>> by_submit;
  for (const vkblr::ProfileEvent& e : events) {
    if (e.name.find('/') == std::string::npos) by_submit[e.submit].push_back(&e);
  }
  for (const auto& [submit, list] : by_submit) {
    std::vector<double> cuts;
    for (const vkblr::ProfileEvent* e : list) {
      cuts.push_back(e->start_us);
      cuts.push_back(e->start_us + e->duration_us);
    }
    std::sort(cuts.begin(), cuts.end());
    for (std::size_t i = 0; i + 1 < cuts.size(); ++i) {
      const double a = cuts[i], b = cuts[i + 1];
      if (b <= a) continue;
      std::vector<const vkblr::ProfileEvent*> running;
      for (const vkblr::ProfileEvent* e : list) {
        if (e->start_us <= a && e->start_us + e->duration_us >= b) running.push_back(e);
      }
      if (running.empty()) {
        out.idle_us += b - a;
        continue;
      }
      out.busy_us += b - a;
      for (const vkblr::ProfileEvent* e : running) out.per_name_us[e->name] += (b - a) / double(running.size());
    }
  }
  return out;
}

vkblr::io::LlamaConfig shape(std::uint32_t vocab, std::uint32_t hidden, std::uint32_t inter, std::uint32_t layers,
                             std::uint32_t heads, std::uint32_t kv_heads, std::uint32_t head_dim,
                             std::uint32_t positions, bool tied) {
  vkblr::io::LlamaConfig c;
  c.vocab_size = vocab;
  c.hidden_size = hidden;
  c.intermediate_size = inter;
  c.num_hidden_layers = layers;
  c.num_attention_heads = heads;
  c.num_key_value_heads = kv_heads;
  c.head_dim = head_dim;
  c.max_position_embeddings = positions;
  c.rms_norm_eps = 1e-6;
  c.rope_theta = 10000.0;
  c.tie_word_embeddings = tied;
  c.torch_dtype = "float32";
  return c;
}

std::uint64_t weights_bytes(const vkblr::model::LlamaWeights& w) {
  std::uint64_t bytes = w.embed.size() + w.final_norm.size() + w.head.size();
  for (const auto& b : w.blocks) {
    bytes += b.input_norm.size() + b.post_norm.size();
    for (const auto* p : {&b.q, &b.k, &b.v, &b.o, &b.gate, &b.up, &b.down}) {
      bytes += p->plane.size();
      if (p->is_blr()) {
        bytes += p->blr->scales.size() + p->blr->scale_grads.size();
        for (const auto& path : p->blr->paths) bytes += path.bits_u.size() + path.bits_v.size();
      }
    }
  }
  return bytes;
}

}  // namespace

vkblr::io::LlamaConfig model_config(const std::string& name) {
  if (name == "ref") return shape(272, 512, 1536, 8, 8, 4, 64, 1024, false);
  if (name == "qwen0.5b") return shape(151936, 896, 4864, 24, 14, 2, 64, 4096, true);
  if (name == "llama8b") return shape(128256, 4096, 14336, 32, 32, 8, 128, 4096, false);
  throw std::invalid_argument("model '" + name + "': want ref, qwen0.5b or llama8b");
}

ModelCase parse_model_case(const std::string& text) {
  ModelCase c;
  const std::size_t a = text.find(',');
  if (a == std::string::npos) {
    throw std::invalid_argument("'" + text + "': want MODEL,SEQUENCESxSEQ[,keep|recompute][,dense|factored]");
  }
  c.model = text.substr(0, a);
  const vkblr::io::LlamaConfig config = model_config(c.model);
  const std::size_t b = text.find(',', a + 1);
  const std::vector<std::uint32_t> batch =
      parse_numbers(text.substr(a + 1, b == std::string::npos ? std::string::npos : b - a - 1), 'x', 2, 2,
                    "SEQUENCESxSEQ");
  if (batch[0] == 0 || batch[1] == 0 || batch[1] > config.max_position_embeddings) {
    throw std::invalid_argument(std::format("'{}': {} sequences of {} tokens (1 to {} tokens)", text, batch[0],
                                            batch[1], config.max_position_embeddings));
  }
  c.batch = {batch[0], batch[1]};
  // the optional memory plan and blr route, in either order
  for (std::size_t at = b; at != std::string::npos;) {
    const std::size_t next = text.find(',', at + 1);
    const std::string word = text.substr(at + 1, next == std::string::npos ? std::string::npos : next - at - 1);
    if (word == "dense" || word == "factored") {
      c.route = vkblr::model::blr_route_from_string(word);
    } else {
      try {
        c.memory = vkblr::model::memory_plan_from_string(word);
      } catch (const vkblr::Error& e) {
        throw std::invalid_argument(std::format("'{}': {} (or dense, factored)", text, e.what()));
      }
    }
    at = next;
  }
  return c;
}

std::vector<ModelResult> run_model_bench(vkblr::Context& ctx, const ModelBenchOptions& o) {
  std::vector<ModelResult> out;
  for (const ModelCase& c : o.cases) {
    ModelResult res;
    res.c = c;
    res.live_teacher = o.live_teacher;
    try {
      const vkblr::io::LlamaConfig config = model_config(c.model);
      const vkblr::model::LlamaWeights teacher = vkblr::model::random_dense_llama(ctx, config, 1);
      res.blr_layers = 7 * config.num_hidden_layers;

      const std::uint32_t tokens = c.batch.tokens();
      std::vector<std::uint32_t> ids(tokens), rows;
      std::mt19937 rng(3);
      for (std::uint32_t& id : ids) id = static_cast<std::uint32_t>(rng() % config.vocab_size);
      vkblr::Buffer cache;
      if (!o.live_teacher) {
        cache = ctx.buffer(std::uint64_t{tokens} * config.hidden_size * 4, "bench.teacher_cache");
        vkblr::Buffer id_buffer = ctx.upload(ids, "bench.ids");
        vkblr::model::LlamaForward forward(ctx, config, c.batch);
        vkblr::Recorder rec(ctx);
        forward.record(rec, teacher, id_buffer, cache, c.batch);
        rec.run();
        rows.resize(tokens);
        for (std::uint32_t t = 0; t < tokens; ++t) rows[t] = t;
      }
      vkblr::model::LlamaTrainConfig tc;
      tc.memory = c.memory;
      tc.blr_route = c.route;
      // `steps` steps of a trainer of a fresh student; each step's wall time
      const auto run = [&](std::uint32_t warmup, std::uint32_t steps, std::vector<double>& ms,
                           const std::function<void()>& warm = [] {}) {
        vkblr::model::LlamaWeights student = vkblr::model::random_dense_llama(ctx, config, 1);
        vkblr::model::use_random_blr_layers(ctx, student, o.paths, o.bpw, 2);
        res.weights_bytes = double(weights_bytes(teacher)) + double(weights_bytes(student));
        vkblr::model::LlamaTrainer trainer(ctx, config, student, config, teacher, c.batch, tc);
        if (!o.live_teacher) trainer.set_teacher_cache(cache, tokens);
        const auto step = [&] { return trainer.step(ids, rows, 1e-3f, 1e-3f); };
        for (std::uint32_t s = 0; s < warmup; ++s) step();
        warm();
        for (std::uint32_t s = 0; s < steps; ++s) {
          const auto a = std::chrono::steady_clock::now();
          const vkblr::model::LlamaStepResult r = step();
          ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - a).count());
          if (s == 0) res.first_loss = r.loss;
          res.last_loss = r.loss;
        }
        res.trainer_bytes = trainer.device_bytes();
        res.activation_bytes = trainer.activation_bytes();
      };
      std::vector<double> ms;
      run(o.warmup, o.steps, ms);
      res.step_wall = stats_of(ms);
      // the steps' own time (the student's upload and the warm-up excluded)
      double total = 0;
      for (double m : ms) total += m * 1e-3;
      res.tokens_per_s = double(tokens) * o.steps / total;
      if (o.profile) {
        // a second trainer whose graphs carry GPU timestamps (recorded while
        // the profiler is on): GPU time per dispatch name over 3 steps after one
        vkblr::Profiler& prof = ctx.profiler();
        prof.enable(true);
        std::vector<double> profiled;
        run(1, 3, profiled, [&] { prof.reset(); });
        prof.enable(false);
        for (const auto& [name, total_] : prof.totals()) res.per_name_ms[name] = total_.total_us * 1e-3 / 3;
        const Exclusive ex = exclusive_times(prof.events());
        for (const auto& [name, us] : ex.per_name_us) res.exclusive_ms[name] = us * 1e-3 / 3;
        res.busy_ms = ex.busy_us * 1e-3 / 3;
        res.idle_ms = ex.idle_us * 1e-3 / 3;
        if (!o.trace.empty()) prof.write_chrome_trace(o.trace);
        prof.reset();
      }
    } catch (const std::exception& e) {  // vkblr::Error, or host memory
      res.error = e.what();
    }
    if (!o.quiet) std::fprintf(stderr, "%s\n", format_model_result(res).c_str());
    out.push_back(res);
  }
  return out;
}

std::string format_model_result(const ModelResult& r) {
  std::string s = std::format("model {} {}x{} {} {}{}: ", r.c.model, r.c.batch.sequences, r.c.batch.seq,
                              vkblr::model::to_string(r.c.memory), vkblr::model::to_string(r.c.route),
                              r.live_teacher ? ", live teacher" : "");
  if (!r.error.empty()) return s + "error: " + r.error;
  const double gib = 1024.0 * 1024 * 1024;
  s += std::format("{:.0f} tokens/s (median step {:.2f} ms, min {:.2f}); trainer {:.2f} GiB ({:.2f} GiB kept "
                   "activations), weights {:.2f} GiB; KL {:.4g} -> {:.4g}",
                   r.tokens_per_s, r.step_wall.median_ms, r.step_wall.min_ms, static_cast<double>(r.trainer_bytes) / gib,
                   static_cast<double>(r.activation_bytes) / gib, r.weights_bytes / gib, r.first_loss, r.last_loss);
  std::vector<std::pair<double, std::string>> by_time;
  double busy = 0;
  for (const auto& [name, ms] : r.per_name_ms) {
    if (name.find('/') == std::string::npos) busy += ms;
    by_time.emplace_back(ms, name);
  }
  std::sort(by_time.rbegin(), by_time.rend());
  if (!by_time.empty()) s += std::format("\n    GPU busy {:.3f} ms/step; by dispatch name:", busy);
  for (const auto& [ms, name] : by_time) s += std::format("\n    {:<36} {:.4f} ms/step", name, ms);
  if (!r.exclusive_ms.empty()) {
    std::vector<std::pair<double, std::string>> ex;
    for (const auto& [name, ms] : r.exclusive_ms) ex.emplace_back(ms, name);
    std::sort(ex.rbegin(), ex.rend());
    s += std::format("\n    GPU time shared among the dispatches running at once: busy {:.3f} ms/step, idle (between "
                     "dispatches) {:.3f} ms/step; by dispatch name:",
                     r.busy_ms, r.idle_ms);
    for (const auto& [ms, name] : ex) s += std::format("\n    {:<36} {:.4f} ms/step", name, ms);
  }
  return s;
}

nlohmann::json to_json(const ModelResult& r) {
  nlohmann::json j = {{"model", r.c.model},
                      {"sequences", r.c.batch.sequences},
                      {"seq", r.c.batch.seq},
                      {"memory", vkblr::model::to_string(r.c.memory)},
                      {"route", vkblr::model::to_string(r.c.route)},
                      {"live_teacher", r.live_teacher}};
  if (!r.error.empty()) {
    j["error"] = r.error;
    return j;
  }
  j["tokens_per_s"] = r.tokens_per_s;
  j["step_wall_ms"] = {{"median", r.step_wall.median_ms}, {"min", r.step_wall.min_ms}, {"max", r.step_wall.max_ms}};
  j["trainer_bytes"] = r.trainer_bytes;
  j["activation_bytes"] = r.activation_bytes;
  j["weights_bytes"] = r.weights_bytes;
  j["kl_first"] = r.first_loss;
  j["kl_last"] = r.last_loss;
  j["blr_layers"] = r.blr_layers;
  if (!r.per_name_ms.empty()) j["per_name_ms"] = r.per_name_ms;
  if (!r.exclusive_ms.empty()) {
    j["exclusive_ms"] = r.exclusive_ms;
    j["busy_ms"] = r.busy_ms;
    j["idle_ms"] = r.idle_ms;
  }
  return j;
}

}  // namespace bench
