// report.hpp — the JSON report of a vkblr-fit run, and writing JSON files.
//
// The report (nlohmann::json, keys in snake_case):
//   tool_version, command_line [..], device, weight_source,
//   activation_source,
//   layer {m, n, rank, paths, scale_dtype},
//   bpw {sign, scales, metadata, total, sign_bits, scale_bits,
//        metadata_bits, formula},
//   errors {init {weight, output, activation_weighted},
//           trained {...}, output_improvement = init.output/trained.output},
//   training {steps, tokens, tokens_per_s, wall_s, flips, oscillations,
//             settings {...},
//             parallel {ranks, micro_batches, tokens_per_part,
//                       step_timing (null, or under mpirun rank 0's {steps,
//                       accumulate_ms, wait_ms, exchange_ms, apply_ms per
//                       step, exchange_share, gradient_block_bytes,
//                       exchange, exchange_note, sum_threads})}},
//   saved {step, stage, held_out_error}: the layer the result file holds,
//         the best seen on the held-out tokens (best_layer.hpp): stage
//         "init", "refit" or "training", step the training steps done
//         then (0 before training),
//   inputs {weight_xxh3, activations_xxh3}: checksums of W and X as read
//          (checksum.hpp),
//   curve [{step, held_out_error}, ...]
// Errors are metrics.hpp's ratios (not squared); output errors are on
// held-out tokens, with the scales as the result file stores them.
// Non-finite numbers are written as null (JSON has none).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "vkblr/io/bpw.hpp"
#include "vkblr/io/checksum.hpp"
#include "vkblr-fit/io_names.hpp"
#include "vkblr-fit/report/curve.hpp"

namespace vkblr::fit {

struct ErrorSummary {
  double weight = 0;               // relative_weight_error
  double output = 0;               // relative_output_error on held-out tokens
  double activation_weighted = 0;  // activation_weighted_error
};

struct FitReport {
  std::string tool_version;
  std::vector<std::string> command_line;
  std::string device;             // the Vulkan device that trained
  std::string weight_source;      // "file.safetensors:name", "file.npy", "synthetic (seed 1)"
  std::string activation_source;  // likewise
  BitsPerWeight bpw;              // with the layer's shape and scale dtype
  ErrorSummary init, trained;
  std::uint64_t steps = 0, tokens = 0;  // training steps and tokens processed
  double wall_s = 0, tokens_per_s = 0;
  std::uint64_t flips = 0, oscillations = 0;  // totals over the run (sign.hpp's telemetry)
  nlohmann::json settings = nlohmann::json::object();  // optimizer and schedule parameters, as named on the CLI
  nlohmann::json parallel = nlohmann::json::object();  // ranks and micro-batches (fit_ranks.hpp), step timing
  std::vector<CurvePoint> curve;
  std::uint64_t saved_step = 0;      // BestLayer::step of the layer saved
  std::string saved_stage = "training";  // layer_stage_name of its stage
  double saved_held_out_error = 0;
  InputChecksums inputs;
  // report/stages.hpp's times: {"load": {"wall_s", "device_s"}, ...}
  nlohmann::json stages = nlohmann::json::object();
};

nlohmann::json to_json(const FitReport& report);

// x, or null when it is not finite (JSON has no NaN or infinity).
nlohmann::json json_number(double x);

// {"weight", "output", "activation_weighted"}, non-finite numbers as null.
nlohmann::json to_json(const ErrorSummary& errors);

// `value` as indented JSON with a final newline.
std::string json_file_text(const nlohmann::json& value);

// json_file_text written atomically. Throws vkblr::Error naming the path
// when it cannot be written.
void write_json_file(const std::string& path, const nlohmann::json& value);

}  // namespace vkblr::fit
