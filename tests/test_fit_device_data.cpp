// vkblr-fit's data on the device against host references: the inputs as
// uploaded (bit for bit) and their checksums, the targets and their norms,
// the calibration Gram C = XᵀX/T, the weight-space errors, the synthetic
// families, synthetic X made in chunks of tokens, the chunks of f16 rows,
// and the report's stage times.
#include <algorithm>
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "support/fit_files.hpp"
#include "support/fit_run.hpp"
#include "support/gpu.hpp"
#include "vkblr/io/blr_result.hpp"
#include "vkblr/io/checksum.hpp"
#include "vkblr-fit/io_names.hpp"
#include "vkblr-fit/init/dual_svid.hpp"
#include "vkblr-fit/fit_job.hpp"
#include "vkblr-fit/io/calibration.hpp"
#include "vkblr-fit/io/device_data.hpp"
#include "vkblr-fit/io/f16_rows.hpp"
#include "vkblr-fit/io/gpu_synthetic.hpp"
#include "vkblr-fit/report/metrics.hpp"
#include "vkblr-fit/random.hpp"
#include "vkblr-fit/report/device_metrics.hpp"
#include "vkblr-fit/io/synthetic.hpp"
#include "vkblr-fit/train/fit_batches.hpp"
#include "vkblr/half.hpp"
#include "vkblr/recorder.hpp"

using namespace vkblr;
using namespace vkblr::fit;
using Catch::Matchers::ContainsSubstring;

namespace {

// Random values of both signs, never zero, spread over magnitudes.
Matrix random_matrix(std::size_t rows, std::size_t cols, std::uint64_t seed) {
  Rng rng(seed);
  Matrix a(rows, cols);
  for (float& v : a.values) {
    const double u = rng.uniform_open();
    v = static_cast<float>((u < 0.5 ? -1 : 1) * (0.05 + 2 * rng.uniform_open()));
  }
  return a;
}

std::vector<std::byte> file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  const std::vector<char> c((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::byte> b(c.size());
  std::memcpy(b.data(), c.data(), c.size());
  return b;
}

// The f16 rounding of `a` as the device stores it, back in f32.
Matrix f16_rounded(const Matrix& a) {
  Matrix r = a;
  for (float& v : r.values) v = f16_to_f32(f32_to_f16(v));
  return r;
}

// Random blr paths of `shape` (signs and positive scales).
std::vector<BlrPathInit> random_paths(const LayerShape& s, std::uint64_t seed) {
  Rng rng(seed);
  std::vector<BlrPathInit> paths(s.paths);
  for (BlrPathInit& p : paths) {
    p.bits_u.resize(std::size_t{s.m} * s.rank / 32);
    p.bits_v.resize(std::size_t{s.n} * s.rank / 32);
    for (auto& w : p.bits_u) w = static_cast<std::uint32_t>(rng.next());
    for (auto& w : p.bits_v) w = static_cast<std::uint32_t>(rng.next());
    for (auto* v : {&p.h, &p.l, &p.g}) {
      v->resize(v == &p.h ? s.m : v == &p.l ? s.rank : s.n);
      for (float& x : *v) x = static_cast<float>(0.01 + 0.05 * rng.uniform_open());
    }
  }
  return paths;
}

// W and X written to files in `dir` and loaded: the first `train` rows of
// X are training tokens, the next `held_out` held out.
DeviceData load_files(Context& ctx, const vkt::TempDir& dir, const Matrix& w, const Matrix& x, std::uint32_t train,
                      std::uint32_t held_out) {
  vkt::write_matrix_file(dir.file("w.safetensors"), w);
  vkt::write_matrix_file(dir.file("x.safetensors"), x);
  return load_device_data(ctx, {.weight_path = dir.file("w.safetensors"),
                                .activations_path = dir.file("x.safetensors"),
                                .train_tokens = train,
                                .held_out_tokens = held_out});
}

}  // namespace

GPU_TEST("device data: files uploaded as read (W f32, X f16), hashed by their bytes", "[fit][gpu][data]") {
  vkt::TempDir dir;
  const Matrix w = random_matrix(48, 64, 1), x = random_matrix(160, 64, 2);
  vkt::write_matrix_file(dir.file("w.safetensors"), w);
  vkt::write_matrix_file(dir.file("x.safetensors"), x);
  DataSpec spec{.weight_path = dir.file("w.safetensors"),
                .activations_path = dir.file("x.safetensors"),
                .train_tokens = 96,
                .held_out_tokens = 32};
  const DeviceData d = load_device_data(ctx, spec);
  CHECK(d.m == 48);
  CHECK(d.n == 64);
  CHECK(d.w.buffer.download<float>(w.values.size()) == w.values);
  const std::vector<std::uint16_t> x16 = d.x16.download<std::uint16_t>(128 * 64);
  for (std::size_t i = 0; i < x16.size(); ++i) REQUIRE(x16[i] == f32_to_f16(x.values[i]));
  // the held-out view starts at token 96
  CHECK(d.tokens(96, 32).download<std::uint16_t>(64) == std::vector<std::uint16_t>(x16.begin() + 96 * 64, x16.begin() + 97 * 64));
  // the hash covers the stored bytes of W, and of the rows of X used
  const std::vector<std::byte> wb = file_bytes(dir.file("w.safetensors"));
  CHECK(d.weight_hash == xxh3_64(std::span(wb).last(w.values.size() * 4)));
  CHECK(load_device_data(ctx, spec).activation_hash == d.activation_hash);
  Matrix x2 = x;
  x2.values[127 * 64 + 5] += 1;  // the last token used
  vkt::write_matrix_file(dir.file("x.safetensors"), x2);
  CHECK(load_device_data(ctx, spec).activation_hash != d.activation_hash);
  x2 = x;
  x2.values[150 * 64] += 1;  // a token not used
  vkt::write_matrix_file(dir.file("x.safetensors"), x2);
  CHECK(load_device_data(ctx, spec).activation_hash == d.activation_hash);
  spec.train_tokens = 200;
  CHECK_THAT(vkt::error_of([&] { load_device_data(ctx, spec); }), ContainsSubstring("160 tokens"));
}

GPU_TEST("device data: held_out_only reads W and the held-out rows of X alone", "[fit][gpu][data]") {
  vkt::TempDir dir;
  const Matrix w = random_matrix(48, 64, 5);
  Matrix x = random_matrix(160, 64, 6);
  for (std::size_t i = 0; i < 96 * 64; ++i) x.values[i] = std::nanf("");  // training rows: not read
  vkt::write_matrix_file(dir.file("w.safetensors"), w);
  vkt::write_matrix_file(dir.file("x.safetensors"), x);
  DataSpec spec{.weight_path = dir.file("w.safetensors"),
                .activations_path = dir.file("x.safetensors"),
                .train_tokens = 96,
                .held_out_tokens = 32,
                .held_out_only = true};
  const DeviceData d = load_device_data(ctx, spec);
  CHECK(d.train_tokens == 0);
  CHECK(d.held_out_tokens == 32);
  CHECK(!d.w16);
  CHECK(d.w.buffer.download<float>(w.values.size()) == w.values);
  const std::vector<std::uint16_t> held = d.tokens(d.train_tokens, 32).download<std::uint16_t>(32 * 64);
  for (std::size_t i = 0; i < held.size(); ++i) REQUIRE(held[i] == f32_to_f16(x.values[96 * 64 + i]));
  // a NaN among the held-out rows is still refused, naming its place in X
  x.values[100 * 64 + 3] = std::nanf("");
  vkt::write_matrix_file(dir.file("x.safetensors"), x);
  CHECK_THAT(vkt::error_of([&] { load_device_data(ctx, spec); }), ContainsSubstring("[100][3]"));
  // a fit's load reads the training rows, and refuses them
  spec.held_out_only = false;
  CHECK_THAT(vkt::error_of([&] { load_device_data(ctx, spec); }), ContainsSubstring("[0][0]"));
}

GPU_TEST("fit batches: targets X·Wᵀ and their norms against an f64 host product", "[fit][gpu][data]") {
  vkt::TempDir dir;
  const Matrix w = random_matrix(80, 64, 3), x = random_matrix(96, 64, 4);
  const DeviceData d = load_files(ctx, dir, w, x, 64, 32);
  LocalRanks local;
  const std::vector<FitSlice> parts{{0, 16}, {16, 16}};  // two parts per batch
  const FitBatches b = make_fit_batches(ctx, local, d, 32, parts);
  REQUIRE(b.batches() == 2);
  REQUIRE(b.eval_batches() == 1);
  const Matrix w16 = f16_rounded(w), x16 = f16_rounded(x);
  double train_sq = 0, eval_sq = 0;
  for (std::size_t e = 0; e < 6; ++e) {  // entries: 4 training parts, 2 held-out
    const std::vector<float> y = (e < 4 ? b.target[e] : b.target_eval[e - 4]).download<float>(16 * 80);
    const std::size_t first = e * 16;
    for (std::size_t t = 0; t < 16; ++t) {
      for (std::size_t i = 0; i < 80; ++i) {
        double ref = 0, mag = 0;
        for (std::size_t j = 0; j < 64; ++j) {
          ref += double{x16(first + t, j)} * w16(i, j);
          mag += std::abs(double{x16(first + t, j)} * w16(i, j));
        }
        REQUIRE(std::abs(y[t * 80 + i] - ref) <= 64 * 6e-8 * mag + 1e-30);
        (e < 4 ? train_sq : eval_sq) += ref * ref;
      }
    }
  }
  CHECK(std::abs(b.train_target_sq - train_sq / 2) <= 1e-5 * train_sq);
  CHECK(std::abs(b.eval_target_sq - eval_sq) <= 1e-5 * eval_sq);
}

GPU_TEST("calibration Gram: XᵀX/T of the f16 training tokens, the same bits run after run", "[fit][gpu][data]") {
  vkt::TempDir dir;
  const Matrix w = random_matrix(32, 48, 5), x = random_matrix(200, 48, 6);
  const DeviceData d = load_files(ctx, dir, w, x, 160, 40);
  const DeviceMatrix c = calibration_gram(ctx, d);
  REQUIRE(c.rows == 48);
  REQUIRE(c.cols == 48);
  const std::vector<double> got = download_matrix(c);
  const Matrix x16 = f16_rounded(x);
  for (std::size_t a = 0; a < 48; ++a) {
    for (std::size_t b = 0; b < 48; ++b) {
      double ref = 0, mag = 0;
      for (std::size_t t = 0; t < 160; ++t) {  // training tokens only
        ref += double{x16(t, a)} * x16(t, b);
        mag += std::abs(double{x16(t, a)} * x16(t, b));
      }
      REQUIRE(std::abs(got[a * 48 + b] - ref / 160) <= 1e-6 * mag / 160);
    }
  }
  CHECK(download_matrix(calibration_gram(ctx, d)) == got);
}

GPU_TEST("device metrics: weight and activation-weighted errors as the f64 host metrics", "[fit][gpu][data]") {
  vkt::TempDir dir;
  const LayerShape shape{64, 96, 32, 2};
  const Matrix w = random_matrix(64, 96, 7), x = random_matrix(128, 96, 8);
  const DeviceData d = load_files(ctx, dir, w, x, 64, 64);
  DeviceMetrics metrics(ctx, d.w, d.tokens(64, 64), 64);
  const std::vector<BlrPathInit> paths = random_paths(shape, 9);
  const WeightErrors got = metrics.errors(shape, paths);
  const MatrixF64 w_hat = reconstruct_weight(shape, paths);
  Matrix held_out(64, 96);
  const Matrix x16 = f16_rounded(x);
  std::copy(x16.values.begin() + 64 * 96, x16.values.end(), held_out.values.begin());
  const double weight = relative_weight_error(w_hat, w);
  const double weighted = activation_weighted_error(w_hat, w, held_out);
  INFO("weight " << got.weight << " vs " << weight << ", activation-weighted " << got.activation_weighted << " vs "
                 << weighted);
  CHECK(std::abs(got.weight - weight) <= 1e-5 * weight);
  CHECK(std::abs(got.activation_weighted - weighted) <= 1e-5 * weighted);
}

GPU_TEST("synthetic families on the device: deterministic per seed, the spec's scale, planted layers near rank r",
         "[fit][gpu][data]") {
  const SyntheticWeightSpec spec{.m = 96, .n = 64, .spectrum = WeightSpectrum::exponential, .spectrum_scale = 4,
                                 .heavy_columns = 1, .rms = 1.0, .seed = 3};
  const std::vector<double> a = download_matrix(gpu_synthetic_weight(ctx, spec));
  CHECK(download_matrix(gpu_synthetic_weight(ctx, spec)) == a);
  SyntheticWeightSpec other = spec;
  other.seed = 4;
  CHECK(download_matrix(gpu_synthetic_weight(ctx, other)) != a);
  double sq = 0;
  for (double v : a) sq += v * v;
  CHECK(std::abs(std::sqrt(sq / static_cast<double>(a.size())) - 1.0) < 1e-4);
  // a planted layer of rank 32 and 1 % noise: its best rank-32 (2 paths:
  // rank 64) approximation leaves about the noise
  const std::vector<double> p = download_matrix(gpu_planted_weight(ctx, {.m = 96, .n = 64, .rank = 32, .paths = 2, .noise = 0.01, .seed = 5}));
  MatrixF64 pm(96, 64);
  pm.values = p;
  const TruncatedSvd svd = truncated_svd(pm, 64, {.method = SvdMethod::exact});
  double kept = 0, total = 0;
  for (double v : p) total += v * v;
  for (double s : svd.sigma) kept += s * s;
  CHECK(1 - kept / total < 1e-3);
}

GPU_TEST("vkblr-fit's report: each stage's wall and device time", "[fit][gpu][data]") {
  vkt::TempDir dir;
  FitOptions o = vkt::small_fit_run(dir.file("run"));
  o.refit_sweeps = 1;
  o.sign_lr = 0.02f;
  run_fit(ctx, o);
  std::ifstream in(dir.file("run.json"));
  const nlohmann::json report = nlohmann::json::parse(in);
  for (const char* stage : {"load", "statistics", "init", "refit", "train"}) {
    INFO(stage);
    REQUIRE(report["stages"].contains(stage));
    CHECK(report["stages"][stage]["wall_s"].get<double>() > 0);
    CHECK(report["stages"][stage]["device_s"].get<double>() >= 0);
  }
  CHECK(report["stages"]["train"]["device_s"].get<double>() > 0);
}

GPU_TEST("vkblr-fit: X in host memory read over the bus trains to the same bits as X in device memory",
         "[fit][gpu][data]") {
  vkt::TempDir dir;
  FitOptions device = vkt::small_fit_run(dir.file("device"));
  device.x_memory = "device";
  FitOptions host = vkt::small_fit_run(dir.file("host"));
  host.x_memory = "host";
  run_fit(ctx, device);
  run_fit(ctx, host);
  const BlrResult a = read_blr_result(dir.file("device.safetensors"));
  const BlrResult b = read_blr_result(dir.file("host.safetensors"));
  vkt::check_same_layer(a, b);
  std::ifstream in(dir.file("host.json"));
  CHECK(nlohmann::json::parse(in)["training"]["settings"]["x_memory"] == "host");
}

GPU_TEST("synthetic X made a chunk of tokens at a time: the bits of one chunk, in device or host memory",
         "[fit][gpu][data]") {
  const std::uint32_t tokens = 77, n = 80;
  for (const double decay : {1.0, 0.0}) {
    INFO("covariance decay " << decay);
    const SyntheticActivationSpec spec{
        .tokens = tokens, .n = n, .spectrum_decay = decay, .outlier_channels = 2, .outlier_scale = 8, .seed = 6};
    const Buffer whole = ctx.buffer(std::uint64_t{tokens} * n * 2);
    gpu_synthetic_activations(ctx, spec, whole, tokens);
    const std::vector<std::uint16_t> want = whole.download<std::uint16_t>(std::size_t{tokens} * n);
    CHECK(std::ranges::count(want, std::uint16_t{0}) < 10);
    for (const std::uint32_t chunk : {1u, 5u, 32u}) {
      for (const bool host : {false, true}) {
        INFO(chunk << "-token chunks, " << (host ? "host" : "device") << " memory");
        const Buffer x = host ? ctx.host_buffer(whole.size()) : ctx.buffer(whole.size());
        gpu_synthetic_activations(ctx, spec, x, chunk);
        CHECK(x.download<std::uint16_t>(want.size()) == want);
      }
    }
  }
  const SyntheticActivationSpec spec{.tokens = tokens, .n = n};
  const Buffer small = ctx.buffer(tokens * n * 2 - 2);
  CHECK_THAT(vkt::error_of([&] { gpu_synthetic_activations(ctx, spec, small); }),
             ContainsSubstring("synthetic activations: 77x80 f16 values need 12320 bytes, the buffer holds 12318"));
  CHECK_THAT(vkt::error_of([&] { gpu_synthetic_activations(ctx, {.tokens = (1u << 16) + 1, .n = 1u << 15}, small); }),
             ContainsSubstring("65537x32768 = 2147516416 values exceed the 2^31 draws"));
}

GPU_TEST("f16 rows: chunks start at the storage alignment; rows past the end refused", "[fit][gpu][data]") {
  const std::uint64_t align = std::max<std::uint64_t>(ctx.caps().min_storage_buffer_offset_alignment, 4);
  CHECK(f16_chunk_rows(ctx, 1, 1, 100000) == align / 2);              // rows of 2 bytes
  CHECK(f16_chunk_rows(ctx, 3, align + 1, 100000) == 3 * align / 2);  // 6 bytes: steps of align / 2 rows
  CHECK(f16_chunk_rows(ctx, 8 * align, 3, 100000) == 3);              // every row aligned
  CHECK(f16_chunk_rows(ctx, 8 * align, 0, 10) == 1);
  CHECK(f16_chunk_rows(ctx, 1, 1000, 10) == 10);  // at most the rows
  CHECK_THAT(vkt::error_of([&] { f16_chunk_rows(ctx, 0, 1, 1); }), ContainsSubstring("f16 rows"));

  // rows of 2 values: 2 rows at the first aligned row after row 0
  const Buffer src = ctx.upload(std::vector<float>{1.0f, -2.0f, 0.1f, 65520.0f}, "src");
  Buffer dst = ctx.buffer(align * 4, "dst");
  dst.fill(0x55555555u);
  const std::uint64_t first = f16_chunk_rows(ctx, 2, 1, 1000);
  Recorder rec(ctx);
  rec.add(narrow_rows(ctx, src, dst, first, 2, 2));
  rec.run();
  std::vector<std::uint16_t> want(align * 2, 0x5555);
  const std::vector<std::uint16_t> values = {0x3c00, 0xc000, f32_to_f16(0.1f), 0x7c00};  // 65520 rounds to +Inf
  std::ranges::copy(values, want.begin() + static_cast<std::ptrdiff_t>(2 * first));
  CHECK(dst.download<std::uint16_t>(want.size()) == want);
  CHECK_THAT(vkt::error_of([&] { narrow_rows(ctx, src, dst, align, 1, 2); }),
             ContainsSubstring("f16 rows: rows [") && ContainsSubstring("past the destination's"));
}
