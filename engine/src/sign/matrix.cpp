// SignMatrix: state allocation and initialization, telemetry, checkpoints
// (glsl/sign_init.comp, sign_hamming.comp). The step is in step.cpp.
#include <cmath>

#include "../ops/op_util.hpp"
#include "sign_kernels.hpp"
#include "vkblr/half.hpp"
#include "vkblr/sign.hpp"

namespace vkblr {
namespace {
using detail::dim;
using detail::need_bytes;
using namespace detail::sign;

constexpr const char* kInit = "sign_init";

// Bytes per element of the latent and moments.
std::uint64_t state_size(StateType t) { return t == StateType::bf16 ? 2 : 4; }

std::uint64_t size_of(const Buffer& b) { return b ? b.size() : 0; }
}  // namespace

const char* to_string(SignOpt opt) noexcept {
  switch (opt) {
    case SignOpt::adam:
      return "adam";
    case SignOpt::fact:
      return "fact";
    case SignOpt::bop:
      return "bop";
  }
  return "?";
}

SignOpt sign_opt_from_string(const std::string& name) {
  for (SignOpt opt : {SignOpt::adam, SignOpt::fact, SignOpt::bop}) {
    if (name == to_string(opt)) return opt;
  }
  fail("sign optimizer '{}' unknown (adam, fact, bop)", name);
}

SignMatrix::SignMatrix(Context& ctx, const Buffer& bits, std::uint32_t rows, std::uint32_t r, const SignInit& init,
                       std::uint32_t matrix_id)
    : rows_(rows), r_(r), id_(matrix_id), key_(shader::stream_key(init.seed, matrix_id)), init_(init), bits_(&bits) {
  dim(kInit, "rows", rows);
  dim(kInit, "r", r);
  require(r % 32 == 0, "{}: r = {} is not a multiple of 32", kInit, r);
  const std::uint64_t n = std::uint64_t{rows} * r;
  detail::elements_fit(kInit, n);
  need_bytes(kInit, "bits", bits, n / 8);
  require(std::isfinite(init.tau) && init.tau >= 0.0f, "{}: tau = {} (must be finite and >= 0)", kInit, init.tau);
  require(init.opt == SignOpt::adam || init.opt == SignOpt::fact || init.opt == SignOpt::bop, "{}: opt = {} unknown",
          kInit, static_cast<int>(init.opt));

  const std::uint64_t elem = state_size(init.state);
  if (init.opt != SignOpt::bop) w_ = ctx.buffer(n * elem, "sign.w");
  m_ = ctx.buffer(n * elem, "sign.m");
  if (init.opt == SignOpt::adam) v_ = ctx.buffer(n * elem, "sign.v");
  if (init.opt == SignOpt::fact) {
    row_v_ = ctx.buffer(std::uint64_t{rows} * 4, "sign.row_v");
    col_v_ = ctx.buffer(std::uint64_t{r} * 4, "sign.col_v");
    const std::uint64_t blocks = detail::ceil_div(rows, VKBLR_SIGN_FACT_ROWS);
    sums_ = ctx.buffer((blocks * r + 1) * 4, "sign.sums");
  }
  if (init.keep_bits0) bits0_ = ctx.buffer(n / 8, "sign.bits0");
  flipped_ = ctx.buffer(n / 8, "sign.flipped");
  counters_ = ctx.buffer(VKBLR_SIGN_COUNTERS * 4, "sign.counters");
  if (init.deferred) kept_ = ctx.buffer(n * 4, "sign.kept");
  reinit(ctx);
}

void SignMatrix::reinit(Context& ctx) {
  const std::uint64_t n = std::uint64_t{rows_} * r_;
  Recorder rec(ctx);
  rec.fill(m_, 0);
  if (v_) rec.fill(v_, 0);
  if (row_v_) rec.fill(row_v_, 0).fill(col_v_, 0);
  if (bits0_) rec.copy(*bits_, bits0_, n / 8);
  rec.fill(flipped_, 0).fill(counters_, 0);
  if (kept_) rec.fill(kept_, 0);
  if (w_) {
    const detail::KernelId id =
        init_.state == StateType::bf16 ? detail::KernelId::sign_init_bf16 : detail::KernelId::sign_init_f32;
    Dispatch d = detail::make_dispatch(ctx, id, kInit);
    shader::SignPush p{};
    p.n = static_cast<std::uint32_t>(n);
    p.rows = rows_;
    p.r = r_;
    p.tau = init_.tau;
    p.key = key_;
    d.set_push(p).bind(kLatent, w_, Access::write).bind(kBits, *bits_, Access::read);
    d.groups = detail::elt_grid(n, kInit);
    rec.add(d);
  }
  rec.run();
}

void SignMatrix::set_latent_magnitudes(Context& ctx, std::span<const float> magnitudes, float clamp) {
  constexpr const char* op = "sign_latents";
  require(static_cast<bool>(w_), "{}: {} keeps no latents", op, to_string(init_.opt));
  const std::uint64_t n = std::uint64_t{rows_} * r_;
  require(magnitudes.size() == n, "{}: {} magnitudes for a {}×{} matrix", op, magnitudes.size(), rows_, r_);
  require(std::isfinite(clamp) && clamp > 0.0f, "{}: clamp = {} (must be finite and > 0)", op, clamp);
  ctx.wait_idle();
  const std::vector<std::uint32_t> words = bits_->download<std::uint32_t>(n / 32);
  std::vector<float> latents(n);
  for (std::uint64_t i = 0; i < n; ++i) {
    const float a = magnitudes[i];
    require(std::isfinite(a) && a >= 0.0f && a <= clamp, "{}: magnitude {} at element {} (want 0 <= a <= {})", op,
            a, i, clamp);
    latents[i] = (words[i / 32] >> (i % 32)) & 1u ? a : -a;
  }
  if (init_.state == StateType::f32) {
    w_.upload(latents);
  } else {
    std::vector<std::uint16_t> rounded(n);
    for (std::uint64_t i = 0; i < n; ++i) rounded[i] = f32_to_bf16(latents[i]);
    w_.upload(rounded);
  }
}

SignTelemetry SignMatrix::telemetry(Context& ctx) const {
  if (bits0_) {
    const char* op = "sign_hamming";
    const std::uint64_t words = std::uint64_t{rows_} * r_ / 32;
    shader::SignPush p{};
    p.n = rows_ * r_;
    p.rows = rows_;
    p.r = r_;
    Dispatch d = detail::make_dispatch(ctx, detail::KernelId::sign_hamming, op);
    d.set_push(p)
        .bind(kBits, *bits_, Access::read)
        .bind(kBits0, bits0_, Access::read)
        .bind(kCounters, counters_, Access::read_write);
    d.groups = detail::elt_grid(words, op);
    Recorder rec(ctx);
    rec.fill(counters_, 0, VKBLR_SIGN_HAMMING * 4, 4).add(d);
    rec.run();
  }
  const auto c = counters_.download<std::uint32_t>(VKBLR_SIGN_COUNTERS);
  SignTelemetry t;
  t.flips = c[VKBLR_SIGN_FLIPS];
  t.oscillations = c[VKBLR_SIGN_OSC];
  t.in_band = c[VKBLR_SIGN_IN_BAND];
  t.hamming = bits0_ ? c[VKBLR_SIGN_HAMMING] : 0;
  t.total_flips = (std::uint64_t{c[VKBLR_SIGN_TOTAL_HI]} << 32 | c[VKBLR_SIGN_TOTAL_LO]) + t.flips;
  return t;
}

double SignMatrix::bytes_per_sign() const {
  const double state = static_cast<double>(size_of(w_) + size_of(m_) + size_of(v_) + size_of(row_v_) + size_of(col_v_));
  return state / (static_cast<double>(rows_) * r_);
}

std::uint64_t SignMatrix::state_bytes() const {
  std::uint64_t total = 0;
  for (const Buffer* b : {&w_, &m_, &v_, &row_v_, &col_v_, &sums_, &bits0_, &flipped_, &counters_, &scores_, &select_,
                          &ties_, &kept_}) {
    total += size_of(*b);
  }
  return total;
}

std::vector<std::pair<std::string, Buffer*>> SignMatrix::state() {
  std::vector<std::pair<std::string, Buffer*>> out;
  const std::pair<const char*, Buffer*> all[] = {{"w", &w_},         {"m", &m_},         {"v", &v_},
                                                 {"row_v", &row_v_}, {"col_v", &col_v_}, {"bits0", &bits0_},
                                                 {"flipped", &flipped_}, {"counters", &counters_}, {"kept", &kept_}};
  for (const auto& [name, b] : all) {
    if (*b) out.emplace_back(name, b);
  }
  return out;
}

}  // namespace vkblr
