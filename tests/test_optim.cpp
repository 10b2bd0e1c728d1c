// Optimizer ops: adam against a host replay of its f32 arithmetic, adam_cat
// ≡ adam per parameter, AdamW (weight decay, f16/bf16 storage copies)
// against the f64 reference (support/adam_ref.hpp) over several
// live-scalar steps with the copies ≡ the host's rounding of the f32
// master bit for bit, sumsq against the host
// (bit for bit and in f64), sumsq_cat ≡ sumsq per parameter, non-finite
// values through sumsq, and a Graph replayed with live step scalars ≡
// separately recorded steps.
#include <algorithm>
#include <bit>
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <cmath>
#include <limits>
#include <string>

#include "support/adam_ref.hpp"
#include "support/gpu.hpp"
#include "support/host.hpp"
#include "support/poisoned.hpp"
#include "vkblr/half.hpp"
#include "vkblr/ops.hpp"
#include "vkblr/recorder.hpp"

using namespace vkblr;
using Catch::Matchers::ContainsSubstring;
using vkt::poisoned;
using vkt::poisoned16;

namespace {

// Adam state on the host and on the device. `slack` (host): the error the
// device's weights may carry, per entry (see host_adam).
struct HostAdam {
  std::vector<float> w, g, m1, m2;
  std::vector<double> slack;
};

struct DeviceAdam {
  Buffer w, g, m1, m2;
};

// Seeded random state of n entries: weights and gradients in ±1, first
// moments in ±0.1, second moments in [0, 0.01).
HostAdam random_state(std::size_t n, std::uint64_t seed) {
  HostAdam s{vkt::random_floats(n, seed, 1.0f), vkt::random_floats(n, seed + 1, 1.0f),
             vkt::random_floats(n, seed + 2, 0.1f), vkt::random_floats(n, seed + 3, 0.01f),
             std::vector<double>(n, 0.0)};
  for (float& v : s.m2) v = std::abs(v);
  return s;
}

DeviceAdam upload(Context& ctx, const HostAdam& s) {
  return {ctx.upload(s.w), ctx.upload(s.g), ctx.upload(s.m1), ctx.upload(s.m2)};
}

// 0 for about a quarter of the entries (frozen), 1 elsewhere.
std::vector<float> random_mask(std::size_t n, std::uint64_t seed) {
  vkt::Rng r(seed);
  std::vector<float> m(n);
  for (float& v : m) v = r.below(4) == 0 ? 0.0f : 1.0f;
  return m;
}

// adam.comp's arithmetic on every entry, in f32 and in its order (GCC
// targets x86-64 without FMA here, so nothing is contracted either), with
// o.lr and o.step. floors: per entry (null: `floor` for all); mask: null =
// every entry trains.
//
// The moments are products and sums, which Vulkan rounds exactly: the
// device must match them bit for bit. The step s also goes through pow, a
// division and a square root, which Vulkan does not round exactly: pow(β2,
// t) = exp2(t·log2 β2) with log2 exact to 2^-21 absolute, so 1 − β2^t
// (≈ 1e-3 at t = 1) may be off by ~3e-4 relative, half of that in s. Each
// step therefore adds 2 ulp of the weight plus 2^-11 of the step's size to
// the entry's slack: the tolerance of the device's weights.
void host_adam(HostAdam& s, const ops::AdamOptions& o, const float* mask, const float* floors, float floor) {
  const float t = static_cast<float>(o.step);
  const float c1 = 1.0f - std::pow(o.beta1, t);
  const float c2 = 1.0f - std::pow(o.beta2, t);
  for (std::size_t i = 0; i < s.w.size(); ++i) {
    if (mask && mask[i] == 0.0f) continue;
    const float g = s.g[i] * o.grad_scale;
    const float m = o.beta1 * s.m1[i] + (1.0f - o.beta1) * g;
    const float v = o.beta2 * s.m2[i] + (1.0f - o.beta2) * g * g;
    s.m1[i] = m;
    s.m2[i] = v;
    const float step_size = o.lr * (m / c1) / (std::sqrt(v / c2) + o.eps);
    const float f = floors ? floors[i] : floor;
    const float before = s.w[i];
    s.w[i] = f > 0.0f ? before - step_size * std::max(std::abs(before), f) : before - step_size;
    const double moved = std::abs(double(s.w[i]) - before);
    s.slack[i] += 2 * vkt::f32_ulp(std::max(std::abs(before), std::abs(s.w[i]))) + std::ldexp(moved, -11);
  }
}

// Entries of the device's weights farther from the host's than its slack;
// `worst`: the largest error as a fraction of the slack.
std::size_t weights_outside(const std::vector<float>& got, const HostAdam& want, double* worst) {
  std::size_t bad = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double err = std::abs(double(got[i]) - want.w[i]);
    bad += !(err <= want.slack[i]);
    if (want.slack[i] > 0) *worst = std::max(*worst, err / want.slack[i]);
  }
  return bad;
}

// Sum-of-squares partials as sumsq.comp forms them, in f32: invocation t
// of workgroup x adds a[i]² for i = 256x + t, + 16384, ... in order, then
// the workgroup's 256 sums are added in a fixed tree.
std::vector<float> host_partials(const float* a, std::size_t n) {
  std::vector<float> out(ops::kSumsqPartials);
  for (std::size_t x = 0; x < ops::kSumsqPartials; ++x) {
    float sums[256];
    for (std::size_t t = 0; t < 256; ++t) {
      float acc = 0.0f;
      for (std::size_t i = x * 256 + t; i < n; i += 256 * ops::kSumsqPartials) acc = acc + a[i] * a[i];
      sums[t] = acc;
    }
    for (std::size_t s = 128; s > 0; s >>= 1) {
      for (std::size_t t = 0; t < s; ++t) sums[t] = sums[t] + sums[t + s];
    }
    out[x] = sums[0];
  }
  return out;
}

}  // namespace

GPU_TEST("adam matches the host's f32 arithmetic: mask, relative steps, gradient multiplier", "[ops]") {
  const std::uint32_t n = 1000003;
  struct Case {
    const char* name;
    bool masked;
    float rel_floor;
    float grad_scale;
  };
  for (const Case c : {Case{"plain", false, 0.0f, 1.0f}, Case{"masked, relative", true, 0.01f, 1.0f},
                       Case{"masked, gradient multiplier", true, 0.0f, 0.125f}}) {
    INFO(c.name);
    HostAdam host = random_state(n, 601);
    const HostAdam start = host;
    DeviceAdam dev = upload(ctx, host);
    const auto mask = random_mask(n, 605);
    Buffer bmask = ctx.upload(mask);
    ops::AdamOptions o;
    o.grad_scale = c.grad_scale;
    Recorder rec(ctx);
    for (std::uint32_t step = 1; step <= 3; ++step) {
      o.step = step;
      o.lr = 1e-3f * static_cast<float>(step);
      rec.add(ops::adam(ctx, dev.w, dev.g, dev.m1, dev.m2, c.masked ? &bmask : nullptr, n, o, c.rel_floor));
      host_adam(host, o, c.masked ? mask.data() : nullptr, nullptr, c.rel_floor);
    }
    rec.run();
    const auto w = dev.w.download<float>(), m1 = dev.m1.download<float>(), m2 = dev.m2.download<float>();
    CHECK(vkt::count_bit_diffs(m1, host.m1) == 0);
    CHECK(vkt::count_bit_diffs(m2, host.m2) == 0);
    double worst = 0;
    const std::size_t outside = weights_outside(w, host, &worst);
    INFO("worst weight error: " << worst << " of its tolerance");
    CHECK(outside == 0);
    if (c.masked) {
      std::size_t moved = 0;
      for (std::size_t i = 0; i < n; ++i) {
        if (mask[i] == 0.0f) moved += w[i] != start.w[i] || m1[i] != start.m1[i] || m2[i] != start.m2[i];
      }
      CHECK(moved == 0);
    }
  }
}

GPU_TEST("adam folds a grid of more than 65535 workgroups", "[ops]") {
  // 17 000 000 entries = 66 407 workgroups of 256: the grid folds into y.
  const std::uint32_t n = 17'000'000;
  HostAdam host = random_state(n, 611);
  DeviceAdam dev = upload(ctx, host);
  ops::AdamOptions o;
  o.lr = 1e-3f;
  o.step = 7;
  const Dispatch d = ops::adam(ctx, dev.w, dev.g, dev.m1, dev.m2, nullptr, n, o);
  CHECK(d.groups[1] > 1);
  Recorder rec(ctx);
  rec.add(d);
  rec.run();
  host_adam(host, o, nullptr, nullptr, 0.0f);
  // moments bit for bit: every entry, up to the last, was written once
  CHECK(vkt::count_bit_diffs(dev.m1.download<float>(), host.m1) == 0);
  CHECK(vkt::count_bit_diffs(dev.m2.download<float>(), host.m2) == 0);
  double worst = 0;
  CHECK(weights_outside(dev.w.download<float>(), host, &worst) == 0);
}

GPU_TEST("adam_cat equals adam per parameter bit for bit (masks and floors)", "[ops]") {
  // three parameters: no mask, plain steps; a mask, plain steps; a mask,
  // relative steps with floor 0.05
  const std::size_t sizes[3] = {257, 5000, 70001};
  const bool masked[3] = {false, true, true};
  const float floors[3] = {0.0f, 0.0f, 0.05f};
  const std::size_t total = sizes[0] + sizes[1] + sizes[2];
  HostAdam cat = random_state(total, 621);
  std::vector<float> cat_mask = random_mask(total, 625), cat_floor(total);
  std::vector<DeviceAdam> parts;
  std::vector<Buffer> part_masks;
  std::size_t offset = 0;
  for (int p = 0; p < 3; ++p) {
    auto slice = [&](const std::vector<float>& v) {
      return std::vector<float>(v.begin() + static_cast<std::ptrdiff_t>(offset),
                                v.begin() + static_cast<std::ptrdiff_t>(offset + sizes[p]));
    };
    if (!masked[p]) std::fill_n(cat_mask.begin() + static_cast<std::ptrdiff_t>(offset), sizes[p], 1.0f);
    std::fill_n(cat_floor.begin() + static_cast<std::ptrdiff_t>(offset), sizes[p], floors[p]);
    parts.push_back({ctx.upload(slice(cat.w)), ctx.upload(slice(cat.g)), ctx.upload(slice(cat.m1)),
                     ctx.upload(slice(cat.m2))});
    part_masks.push_back(ctx.upload(slice(cat_mask)));
    offset += sizes[p];
  }
  DeviceAdam dcat = upload(ctx, cat);
  Buffer bmask = ctx.upload(cat_mask), bfloor = ctx.upload(cat_floor);
  ops::AdamOptions o;
  o.grad_scale = 0.25f;
  o.lr = 2e-3f;
  Recorder rec(ctx);
  for (std::uint32_t step = 1; step <= 2; ++step) {
    o.step = step;
    for (int p = 0; p < 3; ++p) {
      const auto n = static_cast<std::uint32_t>(sizes[p]);
      rec.add(ops::adam(ctx, parts[p].w, parts[p].g, parts[p].m1, parts[p].m2, masked[p] ? &part_masks[p] : nullptr,
                        n, o, floors[p]));
    }
    rec.add(ops::adam_cat(ctx, dcat.w, dcat.g, dcat.m1, dcat.m2, bmask, bfloor, static_cast<std::uint32_t>(total), o));
  }
  rec.run();
  offset = 0;
  for (int p = 0; p < 3; ++p) {
    INFO("parameter " << p);
    for (const auto& [part, whole] :
         {std::pair{&parts[p].w, &dcat.w}, std::pair{&parts[p].m1, &dcat.m1}, std::pair{&parts[p].m2, &dcat.m2}}) {
      CHECK(vkt::count_bit_diffs(part->download<float>(), whole->download<float>(sizes[p], offset)) == 0);
    }
    offset += sizes[p];
  }
  // and the concatenation against the host
  HostAdam want = cat;
  for (std::uint32_t step = 1; step <= 2; ++step) {
    o.step = step;
    host_adam(want, o, cat_mask.data(), cat_floor.data(), 0.0f);
  }
  CHECK(vkt::count_bit_diffs(dcat.m1.download<float>(), want.m1) == 0);
  double worst = 0;
  CHECK(weights_outside(dcat.w.download<float>(), want, &worst) == 0);
  // and against the f64 reference, relative steps included
  vkt::AdamRef ref = vkt::adam_ref_from(cat.w, cat.m1, cat.m2);
  const std::vector<double> g64(cat.g.begin(), cat.g.end());
  for (std::uint32_t step = 1; step <= 2; ++step) vkt::adam_ref_step(ref, g64, o, o.lr, step, cat_mask, cat_floor);
  CHECK(vkt::entries_outside(dcat.w.download<float>(), ref.w, ref.w_tol) == 0);
  CHECK(vkt::entries_outside(dcat.m2.download<float>(), ref.m2, ref.m2_tol) == 0);
}

GPU_TEST("a Graph replayed with live step scalars equals separately recorded adam steps", "[ops][recorder]") {
  const std::uint32_t n = 10007, cat_n = 3001, word = 2;  // word 2: the scalars need not start the buffer
  const HostAdam start = random_state(n, 631), cat_start = random_state(cat_n, 641);
  const auto mask = random_mask(n, 635), cat_mask = random_mask(cat_n, 645);
  std::vector<float> cat_floor(cat_n);
  for (std::size_t i = 0; i < cat_n; ++i) cat_floor[i] = i % 2 ? 0.02f : 0.0f;
  Buffer bmask = ctx.upload(mask), bcat_mask = ctx.upload(cat_mask), bcat_floor = ctx.upload(cat_floor);
  DeviceAdam live = upload(ctx, start), fixed = upload(ctx, start);
  DeviceAdam live_cat = upload(ctx, cat_start), fixed_cat = upload(ctx, cat_start);
  Buffer scalars = ctx.host_buffer(5 * 4);
  scalars.fill(vkt::kPoison32);

  ops::AdamOptions o;
  o.grad_scale = 0.5f;
  o.lr = 0.0f;  // the immediates must not matter when live
  o.step = 0;
  o.live = {&scalars, word};
  Recorder rec(ctx);
  rec.add(ops::adam(ctx, live.w, live.g, live.m1, live.m2, &bmask, n, o, 0.01f));
  rec.add(ops::adam_cat(ctx, live_cat.w, live_cat.g, live_cat.m1, live_cat.m2, bcat_mask, bcat_floor, cat_n, o));
  Graph graph = rec.finish();
  CHECK(graph.dispatches() == 2);
  CHECK(graph.barriers() == 0);  // independent updates that only share read-only scalars

  auto lr_of = [](std::uint32_t step) { return 1e-3f * (1.0f + 0.5f * static_cast<float>(step)); };
  for (std::uint32_t step = 1; step <= 5; ++step) {
    ops::write_live_scalars(scalars, word, lr_of(step), step);
    graph.run();
  }

  ops::AdamOptions imm = o;
  imm.live = {};
  for (std::uint32_t step = 1; step <= 5; ++step) {
    imm.lr = lr_of(step);
    imm.step = step;
    Recorder one(ctx);
    one.add(ops::adam(ctx, fixed.w, fixed.g, fixed.m1, fixed.m2, &bmask, n, imm, 0.01f));
    one.add(ops::adam_cat(ctx, fixed_cat.w, fixed_cat.g, fixed_cat.m1, fixed_cat.m2, bcat_mask, bcat_floor, cat_n,
                          imm));
    one.run();
  }
  for (const auto& [a, b] : {std::pair{&live.w, &fixed.w}, std::pair{&live.m1, &fixed.m1},
                             std::pair{&live.m2, &fixed.m2}, std::pair{&live_cat.w, &fixed_cat.w},
                             std::pair{&live_cat.m1, &fixed_cat.m1}, std::pair{&live_cat.m2, &fixed_cat.m2}}) {
    CHECK(vkt::count_bit_diffs(a->download<float>(), b->download<float>()) == 0);
  }
  // five steps were taken: the weights moved
  CHECK(vkt::count_bit_diffs(live.w.download<float>(), start.w) > n / 2);

  // a replay with the skip word set changes nothing
  const auto before = live.w.download<std::uint32_t>(), before_m1 = live_cat.m1.download<std::uint32_t>();
  ops::write_live_scalars(scalars, word, lr_of(6), 6);
  const std::uint32_t skip = 1;
  scalars.write(&skip, 4, (word + 2) * 4);
  graph.run();
  CHECK(vkt::count_bit_diffs(live.w.download<std::uint32_t>(), before) == 0);
  CHECK(vkt::count_bit_diffs(live_cat.m1.download<std::uint32_t>(), before_m1) == 0);
}

namespace {

// The host's rounding of every element: f16 or bf16 bits.
std::vector<std::uint16_t> rounded(const std::vector<float>& w, ops::CopyType type) {
  std::vector<std::uint16_t> out(w.size());
  for (std::size_t i = 0; i < w.size(); ++i) {
    out[i] = type == ops::CopyType::f16 ? f32_to_f16(w[i]) : f32_to_bf16(w[i]);
  }
  return out;
}

}  // namespace

GPU_TEST("adamw matches an f64 reference over live-scalar steps; its copies are the rounded master", "[ops][adamw]") {
  // n odd and past one workgroup's multiple; a mask; weight decay 0.1; five
  // steps of a schedule replayed from one Graph; adam and adam_cat, each
  // without a copy, with an f16 and with a bf16 copy
  const std::uint32_t n = 20011, word = 1;
  const HostAdam start = random_state(n, 701);
  const auto mask = random_mask(n, 705);
  std::vector<float> floors(n, 0.0f);
  Buffer bmask = ctx.upload(mask), bfloors = ctx.upload(floors);
  Buffer scalars = ctx.host_buffer((word + ops::kLiveScalarWords) * 4);
  scalars.fill(vkt::kPoison32);
  ops::AdamOptions o;
  o.weight_decay = 0.1f;
  o.grad_scale = 0.5f;
  o.lr = 0.0f;  // live: the immediates must not matter
  o.step = 0;
  o.live = {&scalars, word};
  struct Run {
    DeviceAdam dev;
    Buffer copy;
    ops::CopyType type;
    bool has_copy, concat;
  };
  std::vector<Run> runs;
  for (const bool concat : {false, true}) {
    for (int c = 0; c < 3; ++c) {
      runs.push_back({upload(ctx, start), poisoned16(ctx, n), c == 1 ? ops::CopyType::f16 : ops::CopyType::bf16,
                      c != 0, concat});
    }
  }
  Recorder rec(ctx);
  for (Run& r : runs) {
    ops::AdamOptions ro = o;
    if (r.has_copy) ro.copy = {&r.copy, r.type};
    rec.add(r.concat ? ops::adam_cat(ctx, r.dev.w, r.dev.g, r.dev.m1, r.dev.m2, bmask, bfloors, n, ro)
                     : ops::adam(ctx, r.dev.w, r.dev.g, r.dev.m1, r.dev.m2, &bmask, n, ro));
  }
  Graph graph = rec.finish();
  auto lr_of = [](std::uint32_t step) { return 1e-2f / static_cast<float>(step); };
  const std::vector<double> g64(start.g.begin(), start.g.end());
  vkt::AdamRef want = vkt::adam_ref_from(start.w, start.m1, start.m2);
  for (std::uint32_t step = 1; step <= 5; ++step) {
    ops::write_live_scalars(scalars, word, lr_of(step), step);
    graph.run();
    vkt::adam_ref_step(want, g64, o, lr_of(step), step, mask);
  }
  const auto w0 = runs[0].dev.w.download<std::uint32_t>();
  for (const Run& r : runs) {
    INFO((r.concat ? "adam_cat" : "adam") << (r.has_copy ? (r.type == ops::CopyType::f16 ? ", f16 copy" : ", bf16 copy")
                                                         : ", no copy"));
    const auto w = r.dev.w.download<float>(), m1 = r.dev.m1.download<float>(), m2 = r.dev.m2.download<float>();
    double worst = 0;
    CHECK(vkt::entries_outside(m1, want.m1, want.m1_tol, &worst) == 0);
    CHECK(vkt::entries_outside(m2, want.m2, want.m2_tol, &worst) == 0);
    CHECK(vkt::entries_outside(w, want.w, want.w_tol, &worst) == 0);
    INFO("worst error: " << worst << " of its tolerance");
    CHECK(worst > 0);
    // every variant computes the same master bits; frozen entries untouched
    CHECK(vkt::count_bit_diffs(r.dev.w.download<std::uint32_t>(), w0) == 0);
    std::size_t moved = 0;
    for (std::size_t i = 0; i < n; ++i) {
      if (mask[i] == 0.0f) moved += w[i] != start.w[i] || m1[i] != start.m1[i] || m2[i] != start.m2[i];
    }
    CHECK(moved == 0);
    // the copy: the host's rounding of the device's master, every entry (frozen ones too)
    if (r.has_copy) CHECK(vkt::count_bit_diffs(r.copy.download<std::uint16_t>(n), rounded(w, r.type)) == 0);
  }
  // the decay moved the weights: without it they differ
  vkt::AdamRef plain = vkt::adam_ref_from(start.w, start.m1, start.m2);
  ops::AdamOptions no_decay = o;
  no_decay.weight_decay = 0.0f;
  for (std::uint32_t step = 1; step <= 5; ++step) vkt::adam_ref_step(plain, g64, no_decay, lr_of(step), step, mask);
  std::size_t decayed = 0;
  const auto w = runs[0].dev.w.download<float>();
  for (std::size_t i = 0; i < n; ++i) decayed += std::abs(w[i] - plain.w[i]) > 10 * want.w_tol[i];
  CHECK(decayed > n / 2);

  // a skipped step writes nothing, the copies included
  const auto copy_before = runs[2].copy.download<std::uint16_t>(n);
  const auto w_before = runs[2].dev.w.download<std::uint32_t>();
  ops::write_live_scalars(scalars, word, lr_of(6), 6);
  const std::uint32_t skip = 1;
  scalars.write(&skip, 4, (word + 2) * 4);
  graph.run();
  CHECK(vkt::count_bit_diffs(runs[2].copy.download<std::uint16_t>(n), copy_before) == 0);
  CHECK(vkt::count_bit_diffs(runs[2].dev.w.download<std::uint32_t>(), w_before) == 0);
}

GPU_TEST("adam with weight_decay 0 and a copy gives plain adam's bits", "[ops][adamw]") {
  const std::uint32_t n = 4099;
  const HostAdam start = random_state(n, 711);
  DeviceAdam plain = upload(ctx, start), copied = upload(ctx, start);
  Buffer copy = poisoned16(ctx, n);
  ops::AdamOptions o;
  o.lr = 3e-3f;
  Recorder rec(ctx);
  for (std::uint32_t step = 1; step <= 3; ++step) {
    o.step = step;
    ops::AdamOptions oc = o;
    oc.copy = {&copy, ops::CopyType::bf16};
    rec.add(ops::adam(ctx, plain.w, plain.g, plain.m1, plain.m2, nullptr, n, o, 0.01f));
    rec.add(ops::adam(ctx, copied.w, copied.g, copied.m1, copied.m2, nullptr, n, oc, 0.01f));
  }
  rec.run();
  for (const auto& [a, b] : {std::pair{&plain.w, &copied.w}, std::pair{&plain.m1, &copied.m1},
                             std::pair{&plain.m2, &copied.m2}}) {
    CHECK(vkt::count_bit_diffs(a->download<std::uint32_t>(), b->download<std::uint32_t>()) == 0);
  }
  CHECK(vkt::count_bit_diffs(copy.download<std::uint16_t>(n), rounded(copied.w.download<float>(), ops::CopyType::bf16)) ==
        0);
}

GPU_TEST("adam's f16 and bf16 copies round like vkblr/half.hpp on every kind of value", "[ops][adamw]") {
  // every entry frozen (mask 0): the copy is the rounding of the uploaded
  // weights, which are chosen for it: ties to even and just off them in both
  // formats, f16 subnormals and the boundaries of its range, overflow, ±0,
  // ±Inf, NaNs with payloads, and random bit patterns (every exponent)
  std::vector<std::uint32_t> bits = {0x00000000u, 0x80000000u, 0x7f800000u, 0xff800000u, 0x7fc00000u, 0xffc00001u,
                                     0x7f800001u, 0x7fa5a5a5u, 0x3f808000u, 0x3f818000u, 0x3f808001u, 0x3f807fffu,
                                     0x3f801000u, 0x3f803000u, 0x3f801001u, 0x3f800fffu, 0x477fe000u, 0x477fefffu,
                                     0x477ff000u, 0x477ff001u, 0x47800000u, 0x38800000u, 0x387fffffu, 0x33000000u,
                                     0x33000001u, 0x32ffffffu, 0x33c00000u, 0x34000000u, 0x38000000u, 0x00000001u,
                                     0x7f7fffffu, 0xff7fffffu, 0x7f7f8000u, 0x3580c000u, 0x35804000u};
  const std::size_t special = bits.size();
  for (std::size_t i = 0; i < special; ++i) bits.push_back(bits[i] ^ 0x80000000u);
  const auto noise = vkt::random_words(50000, 721);
  bits.insert(bits.end(), noise.begin(), noise.end());
  const auto n = static_cast<std::uint32_t>(bits.size());
  std::vector<float> w(n);
  for (std::size_t i = 0; i < n; ++i) w[i] = std::bit_cast<float>(bits[i]);
  const HostAdam state = random_state(n, 723);
  Buffer bw = ctx.upload(bits), g = ctx.upload(state.g), m1 = ctx.upload(state.m1), m2 = ctx.upload(state.m2);
  Buffer mask = ctx.upload(std::vector<float>(n, 0.0f));
  for (const ops::CopyType type : {ops::CopyType::f16, ops::CopyType::bf16}) {
    INFO((type == ops::CopyType::f16 ? "f16" : "bf16"));
    Buffer copy = poisoned16(ctx, n);
    ops::AdamOptions o;
    o.copy = {&copy, type};
    o.weight_decay = 0.5f;
    Recorder rec(ctx);
    rec.add(ops::adam(ctx, bw, g, m1, m2, &mask, n, o));
    rec.run();
    CHECK(vkt::count_bit_diffs(copy.download<std::uint16_t>(n), rounded(w, type)) == 0);
    CHECK(vkt::count_bit_diffs(bw.download<std::uint32_t>(), bits) == 0);  // frozen: untouched
  }
}

GPU_TEST("sumsq partials reproduce the host's fixed order bit for bit", "[ops]") {
  for (const std::uint32_t n : {1000003u, 100u}) {
    INFO("n = " << n);
    const auto a = vkt::random_floats(n, 651, 3.0f);
    Buffer ba = ctx.upload(a), partials = poisoned(ctx, ops::kSumsqPartials);
    Recorder rec(ctx);
    rec.add(ops::sumsq(ctx, ba, n, partials));
    rec.run();
    const auto got = partials.download<float>();
    CHECK(vkt::count_bit_diffs(got, host_partials(a.data(), n)) == 0);
    double total = 0, want = 0;
    for (float p : got) total += p;
    for (float v : a) want += double(v) * v;
    CHECK(std::abs(total - want) <= 1e-5 * want);
  }
}

GPU_TEST("sumsq_cat equals sumsq per parameter bit for bit", "[ops]") {
  // parameters at offsets with a gap between the second and the third; the
  // last table entry runs past n and is cut there
  const std::uint32_t n = 400000;
  const std::uint32_t table[] = {0, 100, 100, 70000, 80000, 300001, 390000, 50000};
  const std::uint32_t params = 4;
  const auto a = vkt::random_floats(n, 661, 1.0f);
  Buffer ba = ctx.upload(a), btable = ctx.upload(std::vector<std::uint32_t>(std::begin(table), std::end(table)));
  Buffer cat = poisoned(ctx, params * ops::kSumsqPartials);
  std::vector<Buffer> singles, inputs;
  Recorder rec(ctx);
  rec.add(ops::sumsq_cat(ctx, ba, n, btable, params, cat));
  for (std::uint32_t p = 0; p < params; ++p) {
    const std::uint32_t off = table[2 * p], len = std::min(table[2 * p + 1], n - off);
    inputs.push_back(ctx.upload(std::vector<float>(a.begin() + off, a.begin() + off + len)));
    singles.push_back(poisoned(ctx, ops::kSumsqPartials));
    rec.add(ops::sumsq(ctx, inputs.back(), len, singles.back()));
  }
  rec.run();
  const auto got = cat.download<float>();
  for (std::uint32_t p = 0; p < params; ++p) {
    INFO("parameter " << p);
    const std::vector<float> row(got.begin() + p * ops::kSumsqPartials, got.begin() + (p + 1) * ops::kSumsqPartials);
    CHECK(vkt::count_bit_diffs(row, singles[p].download<float>()) == 0);
    const std::uint32_t off = table[2 * p], len = std::min(table[2 * p + 1], n - off);
    CHECK(vkt::count_bit_diffs(row, host_partials(a.data() + off, len)) == 0);
  }
}

GPU_TEST("non-finite values propagate through sumsq and sumsq_cat", "[ops]") {
  const std::uint32_t n = 100000;
  auto a = vkt::random_floats(n, 671, 1.0f);
  a[5] = std::numeric_limits<float>::quiet_NaN();          // partial 0
  a[3 * 256 + 7] = std::numeric_limits<float>::infinity();  // partial 3
  a[60000] = -std::numeric_limits<float>::infinity();       // (60000 / 256) % 64 = 42
  Buffer ba = ctx.upload(a);
  const std::vector<std::uint32_t> table = {0, 1000, 1000, 50000, 50000, 50000};  // NaN+Inf; none; -Inf
  Buffer btable = ctx.upload(table);
  Buffer partials = poisoned(ctx, ops::kSumsqPartials), cat = poisoned(ctx, 3 * ops::kSumsqPartials);
  Recorder rec(ctx);
  rec.add(ops::sumsq(ctx, ba, n, partials));
  rec.add(ops::sumsq_cat(ctx, ba, n, btable, 3, cat));
  rec.run();
  const auto p = partials.download<float>(), c = cat.download<float>();
  CHECK(std::isnan(p[0]));
  CHECK(std::isinf(p[3]));
  CHECK(std::isinf(p[42]));
  std::size_t finite = 0;
  for (float v : p) finite += std::isfinite(v);
  CHECK(finite == ops::kSumsqPartials - 3);
  // parameter 0 holds the NaN (partial 0) and the +Inf (partial 3)
  CHECK(std::isnan(c[0]));
  CHECK(std::isinf(c[3]));
  // parameter 1 is finite; parameter 2 holds the -Inf at its element 10000: partial (10000 / 256) % 64 = 39
  CHECK(std::all_of(c.begin() + 64, c.begin() + 128, [](float v) { return std::isfinite(v); }));
  CHECK(std::isinf(c[128 + 39]));
}

GPU_TEST("optimizer builders refuse bad arguments and small buffers", "[ops][errors]") {
  const std::uint32_t n = 64;
  Buffer w = ctx.buffer(n * 4), g = ctx.buffer(n * 4), m1 = ctx.buffer(n * 4), m2 = ctx.buffer(n * 4);
  Buffer mask = ctx.buffer(n * 4), small = ctx.buffer(16), scalars = ctx.host_buffer(16);
  ops::AdamOptions o;
  CHECK_THROWS_WITH(ops::adam(ctx, w, g, m1, small, nullptr, n, o),
                    ContainsSubstring("adam") && ContainsSubstring("m2 holds 16 bytes"));
  CHECK_THROWS_WITH(ops::adam(ctx, w, g, m1, m2, &small, n, o),
                    ContainsSubstring("adam") && ContainsSubstring("mask holds 16 bytes"));
  CHECK_THROWS_WITH(ops::adam(ctx, w, g, m1, m2, nullptr, 0, o), ContainsSubstring("adam: n = 0"));
  CHECK_THROWS_WITH(ops::adam(ctx, w, w, m1, m2, nullptr, n, o), ContainsSubstring("adam: w, g, m1 and m2"));
  CHECK_THROWS_WITH(ops::adam(ctx, w, g, m1, m2, nullptr, n, o, -1.0f), ContainsSubstring("adam: rel_floor = -1"));
  o.step = 0;
  CHECK_THROWS_WITH(ops::adam(ctx, w, g, m1, m2, nullptr, n, o), ContainsSubstring("adam: step = 0"));
  o.step = 1;
  o.beta2 = 1.0f;
  CHECK_THROWS_WITH(ops::adam(ctx, w, g, m1, m2, nullptr, n, o), ContainsSubstring("adam: beta2 = 1"));
  o.beta2 = 0.999f;
  o.live = {&scalars, 2};  // words 2, 3 and 4 of a 4-word buffer
  CHECK_THROWS_WITH(ops::adam(ctx, w, g, m1, m2, nullptr, n, o),
                    ContainsSubstring("adam") && ContainsSubstring("live scalars holds 16 bytes, needs 20"));
  o.live = {};
  CHECK_THROWS_WITH(ops::adam_cat(ctx, w, g, m1, m2, mask, small, n, o),
                    ContainsSubstring("adam_cat") && ContainsSubstring("rel_floor holds 16 bytes"));
  o.weight_decay = -0.1f;
  CHECK_THROWS_WITH(ops::adam(ctx, w, g, m1, m2, nullptr, n, o), ContainsSubstring("adam: weight_decay = -0.1"));
  o.weight_decay = std::numeric_limits<float>::infinity();
  CHECK_THROWS_WITH(ops::adam_cat(ctx, w, g, m1, m2, mask, mask, n, o),
                    ContainsSubstring("adam_cat: weight_decay = inf"));
  o.weight_decay = 0.1f;
  o.copy = {&small, ops::CopyType::bf16};
  CHECK_THROWS_WITH(ops::adam(ctx, w, g, m1, m2, nullptr, n, o),
                    ContainsSubstring("adam") && ContainsSubstring("copy holds 16 bytes, needs 128"));
  o.copy = {&w, ops::CopyType::f16};
  CHECK_THROWS_WITH(ops::adam(ctx, w, g, m1, m2, nullptr, n, o), ContainsSubstring("adam: the copy must be a buffer"));
  o.copy = {&mask, static_cast<ops::CopyType>(7)};
  CHECK_THROWS_WITH(ops::adam(ctx, w, g, m1, m2, nullptr, n, o), ContainsSubstring("adam: copy type 7"));
  o.copy = {};
  CHECK_THROWS_WITH(ops::write_live_scalars(scalars, 0, 1e-3f, 0), ContainsSubstring("step = 0"));
  CHECK_THROWS_AS(ops::write_live_scalars(scalars, 2, 1e-3f, 1), Error);
  Buffer partials = ctx.buffer(ops::kSumsqPartials * 4);
  CHECK_THROWS_WITH(ops::sumsq(ctx, w, n, small),
                    ContainsSubstring("sumsq") && ContainsSubstring("partials holds 16 bytes"));
  CHECK_THROWS_WITH(ops::sumsq(ctx, w, n + 1, partials), ContainsSubstring("sumsq") && ContainsSubstring("a holds"));
  Buffer partials3 = ctx.buffer(3 * ops::kSumsqPartials * 4);
  CHECK_THROWS_WITH(ops::sumsq_cat(ctx, w, n, small, 3, partials3),
                    ContainsSubstring("sumsq_cat") && ContainsSubstring("table holds 16 bytes"));
  CHECK_THROWS_WITH(ops::sumsq_cat(ctx, w, n, mask, 2, partials),
                    ContainsSubstring("sumsq_cat") && ContainsSubstring("partials holds 256 bytes, needs 512"));
  CHECK_THROWS_WITH(ops::sumsq_cat(ctx, w, n, mask, 0, partials), ContainsSubstring("sumsq_cat: params = 0"));
}
