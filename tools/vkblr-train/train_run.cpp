#include "vkblr-train/train_run.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <format>
#include <fstream>
#include <numbers>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "vkblr-train/dual_svid_start.hpp"
#include "vkblr-train/sample.hpp"
#include "vkblr-train/token_windows.hpp"
#include "vkblr-train/train_checkpoint.hpp"
#include "vkblr-train/train_progress.hpp"
#include "vkblr-fit/report/progress.hpp"
#include "vkblr-fit/report/report.hpp"
#include "vkblr-fit/report/stages.hpp"
#include "vkblr-fit/report/svg_chart.hpp"
#include "vkblr-fit/train/latent_start.hpp"
#include "vkblr/error.hpp"
#include "vkblr/file_io.hpp"
#include "vkblr/half.hpp"
#include "vkblr/io/blr_model.hpp"
#include "vkblr/io/bpw.hpp"
#include "vkblr/io/checksum.hpp"
#include "vkblr/io/llama_checkpoint.hpp"
#include "vkblr/io/npy.hpp"
#include "vkblr/model/blr_download.hpp"
#include "vkblr/model/held_out.hpp"
#include "vkblr/model/llama_forward.hpp"
#include "vkblr/model/llama_trainer.hpp"
#include "vkblr/recorder.hpp"

namespace vkblr::train {
namespace {

using nlohmann::json;

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// A view of `b` (an empty buffer stays empty).
Buffer view_of(const Buffer& b) { return b ? b.view(0) : Buffer(); }

// The student before its blr layers go in: every buffer a view of the
// teacher's (embedding, norms, head and dense projections are frozen, so
// one copy serves both). The teacher must outlive it.
model::LlamaWeights share_dense_parts(const model::LlamaWeights& t) {
  model::LlamaWeights s;
  s.embed = view_of(t.embed);
  s.final_norm = view_of(t.final_norm);
  s.head = view_of(t.head);
  for (const model::LlamaWeights::Block& tb : t.blocks) {
    model::LlamaWeights::Block b;
    b.input_norm = view_of(tb.input_norm);
    b.post_norm = view_of(tb.post_norm);
    const auto share = [](const model::Projection& p) {
      model::Projection q;
      q.out = p.out;
      q.in = p.in;
      q.plane = view_of(p.plane);
      return q;
    };
    b.q = share(tb.q);
    b.k = share(tb.k);
    b.v = share(tb.v);
    b.o = share(tb.o);
    b.gate = share(tb.gate);
    b.up = share(tb.up);
    b.down = share(tb.down);
    s.blocks.push_back(std::move(b));
  }
  return s;
}

// Every blr layer's scales rounded to f16 (nearest even) in place, as the
// model file stores them, for as long as it lives; the f32 values restored
// after.
class F16Scales {
 public:
  explicit F16Scales(const std::vector<BlrLayer*>& layers) : layers_(layers) {
    for (BlrLayer* layer : layers_) {
      require(static_cast<bool>(layer->scales), "f16 scales: a blr layer without its concatenated scale buffer");
      std::vector<float> values = layer->scales.download<float>();
      std::vector<float> rounded(values.size());
      for (std::size_t i = 0; i < values.size(); ++i) rounded[i] = f16_to_f32(f32_to_f16(values[i]));
      layer->scales.upload(rounded);
      saved_.push_back(std::move(values));
    }
  }
  ~F16Scales() {
    for (std::size_t i = 0; i < saved_.size(); ++i) layers_[i]->scales.upload(saved_[i]);
  }
  F16Scales(const F16Scales&) = delete;
  F16Scales& operator=(const F16Scales&) = delete;

 private:
  std::vector<BlrLayer*> layers_;
  std::vector<std::vector<float>> saved_;
};

// xxh3 of a file's bytes, read in pieces (the hash of the pieces' hashes).
std::uint64_t file_checksum(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  require(in.good(), "{}: cannot open it to take its checksum", path.string());
  constexpr std::size_t kPiece = std::size_t{64} << 20;
  std::vector<char> piece(kPiece);
  std::vector<std::uint64_t> hashes;
  while (in) {
    in.read(piece.data(), static_cast<std::streamsize>(kPiece));
    const auto got = static_cast<std::size_t>(in.gcount());
    if (got == 0) break;
    hashes.push_back(io::xxh3_64(std::as_bytes(std::span(piece.data(), got))));
  }
  return io::xxh3_64(std::as_bytes(std::span(hashes)));
}

// The checkpoint directory's files that make the model: config.json, the
// safetensors index and every .safetensors file, by name.
std::string model_checksum(const std::string& directory) {
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(directory)) {
    const std::string name = entry.path().filename().string();
    if (entry.is_regular_file() &&
        (name == "config.json" || name.ends_with(".safetensors") || name.ends_with(".safetensors.index.json"))) {
      files.push_back(entry.path());
    }
  }
  std::sort(files.begin(), files.end());
  std::string text;
  for (const auto& f : files) text += f.filename().string() + ":" + io::checksum_hex(file_checksum(f)) + ";";
  return io::checksum_hex(io::xxh3_64(text));
}

// What the run's results depend on: a checkpoint resumes only a run with
// the same (the memory plan, the rank count for the same parts per step and
// the output options are free).
json resume_key(const TrainOptions& o, const std::string& model_xxh3, const TrainWindows& windows,
                std::uint64_t held_out_xxh3, std::uint64_t held_out_bytes, std::uint32_t parts, bool cache,
                std::uint32_t eval_every) {
  return {{"model_xxh3", model_xxh3},
          {"blr_xxh3", o.blr.empty() ? std::format("{} bpw {} rank {} paths {} latents {} {}", o.init,
                                                   o.bpw.value_or(0), o.rank.value_or(0), o.paths, o.latent_init,
                                                   o.latent_rms)
                                     : std::format("{} latents {}", io::checksum_hex(file_checksum(o.blr)),
                                                   o.latent_rms)},
          {"train_xxh3", io::checksum_hex(windows.checksum)},
          {"windows", windows.count},
          {"context", windows.context},
          {"held_out_xxh3", io::checksum_hex(held_out_xxh3)},
          {"held_out_bytes", held_out_bytes},
          {"steps", o.steps},
          {"batch", o.batch},
          {"parts", parts},
          {"sign_lr", o.sign_rate()},
          {"scale_lr", o.scale_rate()},
          {"warmup", o.warmup},
          {"temperature", o.temperature},
          {"blr_route", model::to_string(o.blr_route)},
          {"seed", o.seed},
          {"eval_every", eval_every},
          {"eval_batch", o.eval_batch},
          {"teacher", cache ? "cache" : "live"},
          {"vkblr_version", std::string(vkblr::version())}};
}

json settings_json(const TrainOptions& o, std::uint32_t context, std::uint32_t eval_every, std::uint32_t parts,
                   bool cache, int ranks) {
  return {{"model", o.model},
          {"blr", o.blr},
          {"init", o.init},
          {"init_bpw", o.bpw ? json(*o.bpw) : json(nullptr)},
          {"init_rank", o.rank ? json(*o.rank) : json(nullptr)},
          {"init_paths", o.init.empty() ? json(nullptr) : json(o.paths)},
          {"latent_init", o.init.empty() ? json(nullptr) : json(o.latent_init)},
          {"latent_rms", !o.init.empty() && o.latent_init != "magnitude" ? json(nullptr) : json(o.latent_rms)},
          {"train", o.train},
          {"held_out", o.held_out},
          {"context", context},
          {"steps", o.steps},
          {"batch", o.batch},
          {"micro_batches", o.micro_batches},
          {"ranks", ranks},
          {"parts", parts},
          {"lr", o.lr},
          {"sign_lr", o.sign_rate()},
          {"scale_lr", o.scale_rate()},
          {"warmup", o.warmup},
          {"temperature", o.temperature},
          {"memory", model::to_string(o.memory)},
          {"blr_route", model::to_string(o.blr_route)},
          {"seed", o.seed},
          {"teacher", cache ? "cache" : "live"},
          {"eval_every", eval_every},
          {"eval_batch", o.eval_batch},
          {"checkpoint_every", o.checkpoint_every},
          {"resume", o.resume}};
}

json config_json(const io::LlamaConfig& c) {
  return {{"vocab_size", c.vocab_size},
          {"hidden_size", c.hidden_size},
          {"intermediate_size", c.intermediate_size},
          {"num_hidden_layers", c.num_hidden_layers},
          {"num_attention_heads", c.num_attention_heads},
          {"num_key_value_heads", c.num_key_value_heads},
          {"head_dim", c.head_dim},
          {"max_position_embeddings", c.max_position_embeddings},
          {"rms_norm_eps", c.rms_norm_eps},
          {"rope_theta", c.rope_theta},
          {"tie_word_embeddings", c.tie_word_embeddings}};
}

// model_bits.py's count: the blr layers as stored (F16 scales), every
// other parameter at 16 bits.
json bits_json(const io::LlamaConfig& config, const std::vector<io::BlrModelLayer>& layers) {
  std::set<std::string> blr;
  std::uint64_t blr_bits = 0, blr_weights = 0;
  for (const io::BlrModelLayer& l : layers) {
    blr.insert(l.name);
    blr_bits += io::bits_per_weight(l.result.shape, io::ScaleDtype::f16).bits();
    blr_weights += std::uint64_t{l.result.shape.m} * l.result.shape.n;
  }
  std::uint64_t dense_weights = 0;
  for (const io::LlamaParameter& p : io::llama_parameters(config)) {
    if (blr.contains(p.name)) continue;
    std::uint64_t count = 1;
    for (const std::uint64_t side : p.shape) count *= side;
    dense_weights += count;
  }
  const std::uint64_t weights = blr_weights + dense_weights, bits = blr_bits + 16 * dense_weights;
  return {{"weights", weights},
          {"bits", bits},
          {"bpw", static_cast<double>(bits) / static_cast<double>(weights)},
          {"blr",
           {{"layers", layers.size()},
            {"weights", blr_weights},
            {"bits", blr_bits},
            {"bpw", static_cast<double>(blr_bits) / static_cast<double>(blr_weights)}}},
          {"dense", {{"weights", dense_weights}, {"bits", 16 * dense_weights}, {"bits_per_value", 16}}}};
}

// "12.3k", "4.5M": the chart's token ticks.
std::string tokens_text(double n) {
  if (n >= 1e9) return std::format("{:.4g}G", n / 1e9);
  if (n >= 1e6) return std::format("{:.4g}M", n / 1e6);
  if (n >= 1e3) return std::format("{:.4g}k", n / 1e3);
  return std::format("{}", n);
}

std::string curve_svg(const TrainProgress& p, const std::string& title) {
  fit::LogChart chart;
  chart.title = title;
  chart.x_label = "training tokens";
  chart.y_label = "held-out perplexity (log scale)";
  chart.points.emplace_back(0.0, p.init.perplexity);
  for (const CurvePoint& c : p.curve) chart.points.emplace_back(static_cast<double>(c.tokens), c.held_out.perplexity);
  chart.curve_label = "student";
  chart.levels.push_back({"teacher", p.teacher.perplexity, "#2ca02c"});
  chart.x_tick = tokens_text;
  chart.label_minor = true;
  return fit::log_chart_svg(chart);
}

}  // namespace

double lr_factor(std::uint32_t step, std::uint32_t steps, std::uint32_t warmup) {
  if (step < warmup) return static_cast<double>(step + 1) / warmup;
  return 0.5 * (1 + std::cos(std::numbers::pi * (step - warmup) / std::max<std::uint32_t>(1, steps - warmup)));
}

json run_train(Context& ctx, const TrainOptions& o, TrainRanks& ranks) {
  const bool writer = ranks.rank() == 0;
  fit::StageProgress progress(ctx, stderr,
                              writer ? fit::progress_style_for(stderr, o.quiet) : fit::ProgressStyle::quiet);
  const double run_started = now_s();

  // load
  progress.begin("load", 5, "inputs");
  if (writer) std::filesystem::create_directories(o.out);
  const io::LlamaCheckpoint checkpoint(o.model);
  const io::LlamaConfig& config = checkpoint.config();
  const std::uint32_t context = o.context ? o.context : config.max_position_embeddings;
  require(context >= 2 && context <= config.max_position_embeddings,
          "--context {}: want 2 to the model's max_position_embeddings ({})", context,
          config.max_position_embeddings);
  std::vector<std::uint32_t> prompt;
  if (o.sample > 0) {
    prompt = !o.prompt_ids.empty() ? o.prompt_ids
             : config.vocab_size == kByteVocabulary || !o.prompt.empty()
                 ? byte_prompt(o.prompt.empty() ? std::string("The ") : o.prompt, config.vocab_size)
                 : std::vector<std::uint32_t>{};
    require(!prompt.empty(), "--sample: the model's vocabulary of {} is not byte-level; give --prompt-ids",
            config.vocab_size);
    for (std::size_t i = 0; i < prompt.size(); ++i) {
      require(prompt[i] < config.vocab_size, "--prompt-ids: id {} (position {}) is outside the vocabulary of {}",
              prompt[i], i, config.vocab_size);
    }
    require(prompt.size() + o.sample <= context, "--sample {}: the prompt's {} tokens and {} more exceed the context of {}",
            o.sample, prompt.size(), o.sample, context);
  }
  progress.update(1);
  io::BlrModel init_file = o.blr.empty() ? io::BlrModel{} : io::read_blr_model(o.blr);
  std::vector<std::vector<fit::SignMagnitudes>> init_magnitudes;  // --init, --latent-init magnitude
  progress.update(2);
  const TrainWindows windows = load_train_windows(o.train, config.vocab_size, context, o.windows, o.seed);
  progress.update(3);
  const std::vector<std::uint32_t> held_out = io::read_npy_token_ids(o.held_out, config.vocab_size);
  require(held_out.size() >= 2, "{}: a held-out stream of {} token has nothing to predict", o.held_out,
          held_out.size());
  const std::uint64_t text_bytes = held_out_text_bytes(o.held_out, o.held_out_bytes);
  const auto parts = static_cast<std::uint32_t>(ranks.size()) * o.micro_batches;
  require(o.batch % parts == 0, "--batch {}: not a multiple of {} rank(s) × --micro-batches {}", o.batch, ranks.size(),
          o.micro_batches);
  DataOrder order(windows.count, o.batch, o.seed);
  progress.update(4);
  if (!o.init.empty()) {
    progress.begin("init", 0, "layers");
    init_file = dual_svid_start(
        ctx, checkpoint, {o.bpw, o.rank, o.paths, o.seed},
        [&](std::size_t k, std::size_t n) {
          progress.set_total(n);
          progress.update(k);
        },
        o.latent_init == "magnitude" ? &init_magnitudes : nullptr);
    progress.end();
    progress.begin("load", 5, "inputs");
    progress.update(4);
  }
  model::LlamaWeights teacher = model::upload_dense_llama(ctx, checkpoint);
  model::LlamaWeights student = share_dense_parts(teacher);
  model::use_blr_layers(ctx, student, init_file);
  std::vector<std::string> names;
  std::vector<io::InputChecksums> inputs;
  std::vector<BlrLayer*> layers;
  for (const io::BlrModelLayer& l : init_file.layers) {
    names.push_back(l.name);
    inputs.push_back(l.result.inputs);
    layers.push_back(student.projection(l.name)->blr.get());
  }
  progress.update(5);
  progress.end();

  const model::HeldOutOptions measure_options{context, std::max<std::uint32_t>(1, context / 2), o.eval_batch};
  const auto measure = [&](const model::LlamaWeights& weights) {
    return held_out_figures(model::evaluate_held_out(ctx, config, weights, held_out, measure_options), text_bytes);
  };
  const auto measure_student = [&] {
    const F16Scales rounded(layers);
    return measure(student);
  };

  // teacher: its figures (unless resumed: the checkpoint has them), the cache
  TrainProgress prog;
  const std::uint64_t rows = std::uint64_t{windows.count} * context;
  const std::uint64_t cache_bytes = rows * config.hidden_size * 4;
  const bool cache_fits_range = cache_bytes <= ctx.caps().max_storage_buffer_range && cache_bytes / 4 < (1ull << 32);
  const bool use_cache =
      o.teacher == TeacherMode::cache ||
      (o.teacher == TeacherMode::automatic && cache_fits_range &&
       static_cast<double>(cache_bytes) <= o.teacher_cache_fraction * static_cast<double>(ctx.caps().device_local_bytes));
  require(!use_cache || cache_fits_range,
          "--teacher cache: the hidden states of {} windows of {} take {} bytes, more than one buffer of this device "
          "holds ({}); use --teacher live",
          windows.count, context, cache_bytes, ctx.caps().max_storage_buffer_range);
  const model::LlamaBatch micro{o.batch / parts, context};
  progress.begin("teacher", use_cache ? windows.count : 0, "windows");
  const double teacher_started = now_s();
  if (o.resume.empty()) prog.teacher = measure(teacher);
  const double teacher_eval_s = now_s() - teacher_started;
  Buffer cache;
  double cache_s = 0;
  if (use_cache) {
    const double t0 = now_s();
    cache = ctx.buffer(cache_bytes, "train.teacher_cache");
    const std::uint32_t chunk = std::min(micro.sequences, windows.count);
    const std::uint64_t row_bytes = std::uint64_t{config.hidden_size} * 4;
    model::LlamaForward forward(ctx, config, {chunk, context});
    Buffer ids = ctx.buffer(std::uint64_t{chunk} * context * 4, "train.teacher_ids");
    Buffer out = ctx.buffer(std::uint64_t{chunk} * context * row_bytes, "train.teacher_out");
    for (std::uint32_t first = 0; first < windows.count; first += chunk) {
      const std::uint32_t n = std::min(chunk, windows.count - first);
      ids.upload(std::span<const std::uint32_t>(windows.ids).subspan(std::uint64_t{first} * context,
                                                                    std::uint64_t{n} * context));
      Recorder rec(ctx);
      forward.record(rec, teacher, ids, out, {n, context});
      rec.copy(out, cache, std::uint64_t{n} * context * row_bytes, 0, std::uint64_t{first} * context * row_bytes);
      rec.run();
      progress.update(first + n);
    }
    cache_s = now_s() - t0;
  }
  progress.end();

  // the trainer
  model::LlamaTrainConfig tc;
  tc.memory = o.memory;
  tc.blr_route = o.blr_route;
  tc.temperature = o.temperature;
  tc.split = parts > 1;
  if (!o.blr.empty()) tc.sign_init.tau = o.latent_rms;  // --blr: every latent at ±latent_rms
  tc.tokens_per_step = parts > 1 ? o.batch * context : 0;
  model::LlamaTrainer trainer(ctx, config, student, config, teacher, micro, tc);
  if (use_cache) trainer.set_teacher_cache(cache, rows);
  if (!init_magnitudes.empty()) {
    // the latents of each layer's sign matrices (U0 V0 U1 V1 ..., layers in
    // the trainer's order, that of the model file's layers) at their
    // Dual-SVID magnitudes; a resumed run restores them after this
    const std::vector<std::string> trained = trainer.layer_names();
    const std::vector<SignMatrix*> signs = trainer.sign_matrices();
    require(trained == names && signs.size() == 2 * o.paths * names.size(),
            "--latent-init magnitude: {} layers with {} sign matrices, {} layers from --init", trained.size(),
            signs.size(), names.size());
    for (std::size_t k = 0; k < names.size(); ++k) {
      fit::start_latents_from_magnitudes(ctx, std::span<SignMatrix* const>(signs).subspan(2 * o.paths * k, 2 * o.paths),
                                         init_magnitudes[k], o.latent_rms, 1.0f);
    }
  }
  // the step's graphs and pipelines now, outside the training clock (the
  // peer's compile is outside its clock too); the stage's time is reported
  progress.begin("prepare", 1, "graphs");
  trainer.prepare();
  progress.update(1);
  progress.end();
  const std::uint32_t eval_every = o.eval_every ? o.eval_every : std::max<std::uint32_t>(1, o.steps / 10);
  const bool keyed = o.checkpoint_every > 0 || !o.resume.empty() || ranks.size() > 1;
  const json key = keyed ? resume_key(o, model_checksum(o.model), windows,
                                      io::xxh3_64(std::as_bytes(std::span(held_out))), text_bytes, parts, use_cache,
                                      eval_every)
                         : json::object();
  ranks.check_agreement(ctx, key.dump());
  // where the data order stands after a step (a function of the step; recorded for readers)
  const auto data_order = [&](std::uint32_t next) {
    return json{{"pass", order.pass(next)}, {"position", order.position(next)}, {"steps_per_pass", order.steps_per_pass()}};
  };
  if (!o.resume.empty()) {
    progress.begin("resume", 1, "checkpoint");
    prog = restore_train_checkpoint(o.resume, key, o.steps, trainer.state());
    trainer.set_steps(prog.applied, prog.skipped);
    if (prog.gscale != 0) trainer.set_gscale(prog.gscale, prog.gscale_clean);
    progress.update(1);
    progress.end();
  } else {
    progress.begin("init-eval", 1, "measure");
    prog.init = measure_student();
    progress.update(1);
    progress.end();
    progress.say(std::format("teacher: held-out perplexity {:.4f}, {:.4f} bits per byte; student at the start "
                             "({}): {:.4f}, {:.4f}",
                             prog.teacher.perplexity, prog.teacher.bits_per_byte,
                             o.blr.empty() ? "--init " + o.init : std::string("--blr"), prog.init.perplexity,
                             prog.init.bits_per_byte));
  }

  // train
  const std::string checkpoint_path = (std::filesystem::path(o.out) / "checkpoint.safetensors").string();
  std::vector<std::uint32_t> ids(micro.tokens()), cache_rows(use_cache ? micro.tokens() : 0);
  const auto fill = [&](const std::vector<std::uint32_t>& step_windows, std::uint32_t part) {
    for (std::uint32_t i = 0; i < micro.sequences; ++i) {
      const std::uint32_t w = step_windows[std::uint64_t{part} * micro.sequences + i];
      std::copy_n(windows.ids.begin() + static_cast<std::ptrdiff_t>(std::uint64_t{w} * context), context,
                  ids.begin() + static_cast<std::ptrdiff_t>(std::uint64_t{i} * context));
      for (std::uint32_t t = 0; use_cache && t < context; ++t) cache_rows[std::uint64_t{i} * context + t] = w * context + t;
    }
  };
  const std::uint64_t tokens_per_step = std::uint64_t{o.batch} * context;
  progress.begin("train", o.steps, "steps");
  progress.update(prog.next_step);
  double started = now_s();
  const std::uint32_t first_step = prog.next_step;
  for (std::uint32_t s = prog.next_step; s < o.steps; ++s) {
    const double factor = lr_factor(s, o.steps, o.warmup);
    const auto sign_lr = static_cast<float>(o.sign_rate() * factor);
    const auto scale_lr = static_cast<float>(o.scale_rate() * factor);
    const std::vector<std::uint32_t> step_windows = order.windows(s);
    model::LlamaStepResult r;
    if (parts == 1) {
      fill(step_windows, 0);
      r = trainer.step(ids, cache_rows, sign_lr, scale_lr);
    } else {
      for (std::uint32_t k = 0; k < o.micro_batches; ++k) {
        fill(step_windows, static_cast<std::uint32_t>(ranks.rank()) * o.micro_batches + k);
        trainer.accumulate(ids, cache_rows);
      }
      if (ranks.size() > 1) {
        const model::LlamaGradientBlock& block = trainer.gradient_block();
        std::vector<float> sums = block.buffer->download<float>(block.floats);
        ranks.allreduce_sum(sums, std::format("gradients of step {}", s + 1));
        block.buffer->upload(sums);
      }
      r = trainer.apply(sign_lr, scale_lr);
    }
    prog.losses.push_back(r.loss);
    ++(r.applied ? prog.applied : prog.skipped);
    prog.next_step = s + 1;
    prog.gscale = trainer.gscale();
    prog.gscale_clean = trainer.gscale_clean_steps();
    if (!r.applied) {
      // skipped at the smallest scale: no scale keeps these gradients finite
      require(r.gscale > model::kMinGscale,
              "step {}: the gradients hold NaN or Inf even at the smallest loss scale (2^-24), after {} skipped "
              "steps: a learning rate too large, or a model or blr file with values out of range",
              s + 1, prog.skipped);
      progress.say(std::format("step {}: skipped (a gradient overflowed f16 at loss scale {:g}; now {:g})", s + 1,
                               r.gscale, prog.gscale));
    }
    const double elapsed = prog.train_s + (now_s() - started);
    progress.update(s + 1, std::format("loss {:.4f}  {:.0f} tokens/s", r.loss,
                                       static_cast<double>(std::uint64_t{s + 1 - first_step} * tokens_per_step) /
                                           std::max(1e-9, now_s() - started)));
    const bool last = s + 1 == o.steps;
    const bool eval_now = (s + 1) % eval_every == 0 || last;
    const bool checkpoint_now = o.checkpoint_every > 0 && (s + 1) % o.checkpoint_every == 0 && !last;
    if (!eval_now && !checkpoint_now) continue;
    prog.train_s = elapsed;
    if (eval_now) {
      progress.begin("eval", 1, "measure");
      CurvePoint point{s + 1, std::uint64_t{s + 1} * tokens_per_step, prog.train_s, measure_student()};
      prog.curve.push_back(point);
      progress.update(1);
      progress.end();
      progress.say(std::format("step {}/{}: {} tokens, held-out perplexity {:.4f}, {:.4f} bits per byte (teacher "
                               "{:.4f}); {:.1f} s training",
                               s + 1, o.steps, point.tokens, point.held_out.perplexity, point.held_out.bits_per_byte,
                               prog.teacher.perplexity, point.train_s));
    }
    if (checkpoint_now && writer) {
      write_train_checkpoint(checkpoint_path, key, data_order(s + 1), prog, trainer.state());
    }
    if (!last) {
      progress.begin("train", o.steps, "steps");
      progress.update(s + 1);
    }
    started = now_s();
  }
  progress.end();

  // sample, then the files
  json report;
  if (o.sample > 0) {
    progress.begin("sample", 2, "models");
    const std::vector<std::uint32_t> by_student =
        generate(ctx, config, student, prompt, o.sample, context, o.sample_seed);
    progress.update(1);
    const std::vector<std::uint32_t> by_teacher =
        generate(ctx, config, teacher, prompt, o.sample, context, o.sample_seed);
    progress.update(2);
    progress.end();
    report["sample"] = {{"prompt_ids", prompt}, {"student_ids", by_student}, {"teacher_ids", by_teacher},
                        {"seed", o.sample_seed}};
    if (config.vocab_size == kByteVocabulary) {
      const std::string lead = byte_text(prompt);
      report["sample"]["prompt"] = lead;
      report["sample"]["student"] = byte_text(by_student);
      report["sample"]["teacher"] = byte_text(by_teacher);
      if (writer) {
        std::printf("prompt: %s\n%s", lead.c_str(),
                    side_by_side(lead + byte_text(by_student), lead + byte_text(by_teacher)).c_str());
      }
    } else if (writer) {
      std::string s = "student:", t = "teacher:";
      for (const std::uint32_t id : by_student) s += std::format(" {}", id);
      for (const std::uint32_t id : by_teacher) t += std::format(" {}", id);
      std::printf("%s\n%s\n", s.c_str(), t.c_str());
    }
    std::fflush(stdout);
  }

  std::uint64_t flips = 0;
  for (const SignMatrix* m : trainer.sign_matrices()) flips += m->telemetry(ctx).total_flips;
  const std::uint64_t tokens = std::uint64_t{o.steps} * tokens_per_step;
  report["tool"] = "vkblr-train";
  report["tool_version"] = std::string(vkblr::version());
  report["command_line"] = o.command_line;
  report["device"] = ctx.caps().device_name;
  report["settings"] = settings_json(o, context, eval_every, parts, use_cache, ranks.size());
  report["model"] = config_json(config);
  report["bits"] = bits_json(config, init_file.layers);
  report["data"] = {{"windows", windows.count},
                    {"drawn_from_stream", windows.drawn},
                    {"stream_tokens", windows.stream_tokens},
                    {"steps_per_pass", order.steps_per_pass()},
                    {"held_out_tokens", held_out.size()},
                    {"held_out_bytes", text_bytes}};
  report["teacher"] = to_json(prog.teacher);
  report["init"] = to_json(prog.init);
  json curve = json::array();
  for (const CurvePoint& c : prog.curve) {
    curve.push_back({{"step", c.step},
                     {"tokens", c.tokens},
                     {"train_s", c.train_s},
                     {"perplexity", c.held_out.perplexity},
                     {"bits_per_byte", c.held_out.bits_per_byte},
                     {"loss_nats", c.held_out.loss_nats},
                     {"tokens_scored", c.held_out.tokens_scored}});
  }
  report["curve"] = curve;
  report["final"] = to_json(prog.curve.back().held_out);
  json losses = json::array();
  for (const double l : prog.losses) losses.push_back(fit::json_number(l));
  report["loss"] = losses;
  report["steps"] = {{"run", o.steps}, {"applied", prog.applied}, {"skipped", prog.skipped},
                     {"gscale", trainer.gscale()}};
  report["tokens"] = tokens;
  report["train_s"] = prog.train_s;
  report["tokens_per_s"] = static_cast<double>(tokens) / std::max(1e-9, prog.train_s);
  report["teacher_pass"] = {{"cache", use_cache},
                            {"cache_bytes", use_cache ? cache_bytes : 0},
                            {"cache_s", cache_s},
                            {"held_out_s", teacher_eval_s}};
  report["flips"] = flips;
  report["memory"] = {{"trainer_bytes", trainer.device_bytes()},
                      {"activation_bytes", trainer.activation_bytes()},
                      {"teacher_cache_bytes", use_cache ? cache_bytes : 0},
                      {"plan", model::to_string(o.memory)}};
  report["stages"] = progress.to_json();
  report["wall_s"] = now_s() - run_started;

  if (writer) {
    progress.begin("write", 3, "files");
    const std::filesystem::path out(o.out);
    const std::string model_path = (out / "blr.safetensors").string();
    io::BlrModel trained;
    trained.layers =
        model::download_blr_layers(student, names, io::ScaleDtype::f16, inputs, std::string(vkblr::version()));
    trained.tool_version = std::string(vkblr::version());
    trained.manifest_checksum = init_file.manifest_checksum;
    const std::string model_bytes = io::serialize_blr_model(model_path, trained);
    report["files"] = {{"model", model_path},
                       {"report", (out / "report.json").string()},
                       {"curve", (out / "curve.svg").string()}};
    const std::string report_text = fit::json_file_text(report);
    const std::string svg = curve_svg(prog, std::format("vkblr-train: {} blr layers at {:.3f} bpw, {} blocks",
                                                        names.size(), report["bits"]["blr"]["bpw"].get<double>(),
                                                        config.num_hidden_layers));
    const std::vector<FileToWrite> files{{model_path, model_bytes, {}},
                                         {(out / "report.json").string(), report_text, {}},
                                         {(out / "curve.svg").string(), svg, {}}};
    write_files_atomic(files);
    progress.update(3);
    progress.end();
  }
  return report;
}

}  // namespace vkblr::train
