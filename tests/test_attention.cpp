// Causal self-attention (ops::attention_forward / attention_backward) on
// both kernels against the f64 host reference (support/attention_ref.hpp),
// the reference's gradients against finite differences, plain against
// coopmat, the same bits run after run, the kernel choice and the refusals.
//
// Tolerances (relative Frobenius error against f64, and the largest error
// over the largest magnitude): plain 2e-5 — f32 dot products of head_dim
// terms, sums over up to seq keys and exp2 within a few ulps; coopmat 4e-3
// — q, k, v, P and dS (and dout · gscale) rounded to f16 (2^-11 relative)
// before f32 products. lse is compared in absolute terms (it is a log).
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "support/attention_ref.hpp"
#include "support/gpu.hpp"
#include "support/host.hpp"
#include "support/poisoned.hpp"
#include "vkblr/ops.hpp"
#include "vkblr/recorder.hpp"

using namespace vkblr;
using Catch::Matchers::ContainsSubstring;
using vkt::poisoned;
using ops::AttentionKernel;
using vkt::AttentionDims;

namespace {

struct Inputs {
  std::vector<float> q, k, v, dout;
};

// q, k uniform in ±qk (a peaked softmax: logits of a few units), v in ±1,
// dout in ±dout_scale (a loss gradient's size).
Inputs make_inputs(const AttentionDims& a, std::uint64_t seed, float qk = 2.0f, float dout_scale = 1e-3f) {
  return {vkt::random_floats(a.q_elements(), seed, qk), vkt::random_floats(a.kv_elements(), seed + 1, qk),
          vkt::random_floats(a.kv_elements(), seed + 2, 1.0f),
          vkt::random_floats(a.q_elements(), seed + 3, dout_scale)};
}

ops::AttentionShape shape_of(const AttentionDims& a) {
  return {a.batch, a.seq, a.heads, a.kv_heads, a.head_dim, static_cast<float>(a.scale)};
}

struct Outputs {
  std::vector<float> o, lse, dq, dk, dv;
};

// Device buffers of one problem; outputs poisoned.
struct Problem {
  Buffer q, k, v, dout, o, lse, dq, dk, dv;
  Problem(Context& ctx, const AttentionDims& a, const Inputs& in)
      : q(ctx.upload(in.q)),
        k(ctx.upload(in.k)),
        v(ctx.upload(in.v)),
        dout(ctx.upload(in.dout)),
        o(poisoned(ctx, a.q_elements())),
        lse(poisoned(ctx, a.tokens() * a.heads)),
        dq(poisoned(ctx, a.q_elements())),
        dk(poisoned(ctx, a.kv_elements())),
        dv(poisoned(ctx, a.kv_elements())) {}

  void record(Context& ctx, Recorder& rec, const AttentionDims& a, const ops::AttentionOptions& opt, bool backward) {
    rec.add(ops::attention_forward(ctx, q, k, v, o, lse, shape_of(a), opt));
    if (backward) rec.add(ops::attention_backward(ctx, q, k, v, o, lse, dout, dq, dk, dv, shape_of(a), opt));
  }

  Outputs download(bool backward) const {
    Outputs out{o.download<float>(), lse.download<float>(), {}, {}, {}};
    if (backward) {
      out.dq = dq.download<float>();
      out.dk = dk.download<float>();
      out.dv = dv.download<float>();
    }
    return out;
  }
};

Outputs run_attention(Context& ctx, const AttentionDims& a, const Inputs& in, AttentionKernel kernel, bool backward,
                      float gscale = ops::AttentionOptions{}.gscale, std::uint32_t block = 0,
                      ops::AttentionPrefetch prefetch = ops::AttentionPrefetch::automatic) {
  Problem p(ctx, a, in);
  Recorder rec(ctx);
  p.record(ctx, rec, a, {.kernel = kernel, .gscale = gscale, .block = block, .prefetch = prefetch}, backward);
  rec.run();
  return p.download(backward);
}

// run_attention at a forced block, or nothing where the block does not fit
// the device (the refusal checked to say so).
std::optional<Outputs> run_at_block(Context& ctx, const AttentionDims& a, const Inputs& in, AttentionKernel kernel,
                                    std::uint32_t block) {
  try {
    return run_attention(ctx, a, in, kernel, true, ops::AttentionOptions{}.gscale, block);
  } catch (const Error& e) {
    CHECK_THAT(e.what(), ContainsSubstring("block = " + std::to_string(block) + " does not fit"));
    return std::nullopt;
  }
}

// dq, dk, dv of `kernel`'s backward at `block` from coopmat's o and lse
// (its automatic block).
Outputs backward_after_coopmat(Context& ctx, const AttentionDims& a, const Inputs& in, AttentionKernel kernel,
                               std::uint32_t block) {
  Problem p(ctx, a, in);
  Recorder rec(ctx);
  rec.add(ops::attention_forward(ctx, p.q, p.k, p.v, p.o, p.lse, shape_of(a), {.kernel = AttentionKernel::coopmat}));
  rec.add(ops::attention_backward(ctx, p.q, p.k, p.v, p.o, p.lse, p.dout, p.dq, p.dk, p.dv, shape_of(a),
                                  {.kernel = kernel, .block = block}));
  rec.run();
  return p.download(true);
}

// max |got − want| / max |want| (NaN anywhere: infinity).
double max_error(const std::vector<float>& got, const std::vector<double>& want) {
  double err = 0, mag = 0;
  for (std::size_t i = 0; i < want.size(); ++i) {
    if (!std::isfinite(got[i])) return INFINITY;
    err = std::max(err, std::abs(got[i] - want[i]));
    mag = std::max(mag, std::abs(want[i]));
  }
  return err / (mag > 0 ? mag : 1e-300);
}

double max_abs_error(const std::vector<float>& got, const std::vector<double>& want) {
  double err = 0;
  for (std::size_t i = 0; i < want.size(); ++i) {
    if (!std::isfinite(got[i])) return INFINITY;
    err = std::max(err, std::abs(got[i] - want[i]));
  }
  return err;
}

double tolerance(AttentionKernel kernel) { return kernel == AttentionKernel::plain ? 2e-5 : 4e-3; }

void check_close(const char* what, const std::vector<float>& got, const std::vector<double>& want, double tol) {
  INFO(what);
  REQUIRE(got.size() == want.size());
  const double frob = vkt::rel_error(got, want), worst = max_error(got, want);
  INFO("relative error " << frob << ", largest error / largest value " << worst);
  CHECK(frob <= tol);
  CHECK(worst <= 2 * tol);
}

void check_forward(const Outputs& got, const vkt::AttentionRef& want, AttentionKernel kernel) {
  check_close("o", got.o, want.o, tolerance(kernel));
  INFO("lse");
  CHECK(max_abs_error(got.lse, want.lse) <= 20 * tolerance(kernel));
}

void check_backward(const Outputs& got, const vkt::AttentionRef& want, AttentionKernel kernel) {
  check_close("dq", got.dq, want.dq, tolerance(kernel));
  check_close("dk", got.dk, want.dk, tolerance(kernel));
  check_close("dv", got.dv, want.dv, tolerance(kernel));
}

std::vector<AttentionKernel> kernels_of(const Context& ctx, std::uint32_t head_dim) {
  std::vector<AttentionKernel> out{AttentionKernel::plain};
  if (ops::attention_kernel_available(ctx, AttentionKernel::coopmat, head_dim)) {
    out.push_back(AttentionKernel::coopmat);
  }
  if (ops::attention_kernel_available(ctx, AttentionKernel::coopmat2, head_dim)) {
    out.push_back(AttentionKernel::coopmat2);
  }
  return out;
}

// Cases of the reference tests: GQA 2:1 and 4:1 and plain multi-head; seq
// not a multiple of any tile (77, 100) and ones that are (128, 256); head_dim
// 64, 128.
const AttentionDims kCases[] = {
    {.batch = 2, .seq = 100, .heads = 4, .kv_heads = 2, .head_dim = 64},
    {.batch = 1, .seq = 128, .heads = 4, .kv_heads = 4, .head_dim = 64},
    {.batch = 3, .seq = 77, .heads = 4, .kv_heads = 2, .head_dim = 128},
    {.batch = 2, .seq = 256, .heads = 8, .kv_heads = 2, .head_dim = 64},
};

}  // namespace

GPU_TEST("attention_forward matches the f64 reference on every kernel", "[attention]") {
  std::uint64_t seed = 9100;
  for (const AttentionDims& a : kCases) {
    const Inputs in = make_inputs(a, seed += 10);
    const vkt::AttentionRef want = vkt::attention_reference(a, in.q, in.k, in.v);
    for (AttentionKernel kernel : kernels_of(ctx, a.head_dim)) {
      INFO("B " << a.batch << " T " << a.seq << " heads " << a.heads << "/" << a.kv_heads << " d " << a.head_dim
                << ", " << ops::to_string(kernel));
      check_forward(run_attention(ctx, a, in, kernel, false), want, kernel);
    }
  }
}

GPU_TEST("attention_backward matches the f64 reference on every kernel", "[attention]") {
  std::uint64_t seed = 9200;
  for (const AttentionDims& a : kCases) {
    const Inputs in = make_inputs(a, seed += 10);
    const vkt::AttentionRef want = vkt::attention_reference(a, in.q, in.k, in.v, &in.dout);
    for (AttentionKernel kernel : kernels_of(ctx, a.head_dim)) {
      INFO("B " << a.batch << " T " << a.seq << " heads " << a.heads << "/" << a.kv_heads << " d " << a.head_dim
                << ", " << ops::to_string(kernel));
      const Outputs got = run_attention(ctx, a, in, kernel, true);
      check_forward(got, want, kernel);
      check_backward(got, want, kernel);
    }
  }
}

GPU_TEST("attention gradients: the reference against finite differences, the device against the reference",
         "[attention]") {
  // tiny: 2 sequences of 5 tokens, 2 query heads on 1 kv head, head_dim 64
  // (the other tests' pipelines: lavapipe takes tens of seconds to compile
  // each new one)
  const AttentionDims a{.batch = 2, .seq = 5, .heads = 2, .kv_heads = 1, .head_dim = 64, .scale = 0.3};
  const Inputs in = make_inputs(a, 9300, 1.0f, 1.0f);
  const vkt::AttentionRef want = vkt::attention_reference(a, in.q, in.k, in.v, &in.dout);
  // L = Σ dout ⊙ o in f64, central differences of step 1e-5 on every input
  std::vector<double> q(in.q.begin(), in.q.end()), k(in.k.begin(), in.k.end()), v(in.v.begin(), in.v.end());
  const std::vector<double> w(in.dout.begin(), in.dout.end());
  auto loss = [&] {
    const vkt::AttentionRef r = vkt::attention_reference(a, q, k, v);
    double l = 0;
    for (std::size_t i = 0; i < w.size(); ++i) l += w[i] * r.o[i];
    return l;
  };
  auto check_fd = [&](const char* what, std::vector<double>& x, const std::vector<double>& grad) {
    INFO(what);
    double worst = 0, mag = 0;
    for (std::size_t i = 0; i < x.size(); ++i) {
      const double x0 = x[i], step = 1e-5;
      x[i] = x0 + step;
      const double up = loss();
      x[i] = x0 - step;
      const double down = loss();
      x[i] = x0;
      worst = std::max(worst, std::abs((up - down) / (2 * step) - grad[i]));
      mag = std::max(mag, std::abs(grad[i]));
    }
    INFO("largest |fd − grad| " << worst << ", largest |grad| " << mag);
    CHECK(worst <= 1e-8 * std::max(1.0, mag));
  };
  check_fd("dq", q, want.dq);
  check_fd("dk", k, want.dk);
  check_fd("dv", v, want.dv);
  for (AttentionKernel kernel : kernels_of(ctx, a.head_dim)) {
    INFO(ops::to_string(kernel));
    // dout of size 1 here: gscale 1 keeps dS · gscale far inside f16's range
    const Outputs got = run_attention(ctx, a, in, kernel, true, 1.0f);
    check_forward(got, want, kernel);
    check_backward(got, want, kernel);
  }
}

GPU_TEST("attention plain and coopmat agree within the f16 tolerance", "[attention]") {
  const AttentionDims a{.batch = 2, .seq = 100, .heads = 4, .kv_heads = 2, .head_dim = 64};
  if (!ops::attention_kernel_available(ctx, AttentionKernel::coopmat, a.head_dim)) SKIP("no cooperative matrices");
  const Inputs in = make_inputs(a, 9400);
  const Outputs plain = run_attention(ctx, a, in, AttentionKernel::plain, true);
  const Outputs coop = run_attention(ctx, a, in, AttentionKernel::coopmat, true);
  auto as_double = [](const std::vector<float>& x) { return std::vector<double>(x.begin(), x.end()); };
  check_close("o", coop.o, as_double(plain.o), 4e-3);
  check_close("dq", coop.dq, as_double(plain.dq), 4e-3);
  check_close("dk", coop.dk, as_double(plain.dk), 4e-3);
  check_close("dv", coop.dv, as_double(plain.dv), 4e-3);
  CHECK(vkt::count_bit_diffs(coop.o, plain.o) > 0);  // two kernels, not one
}

// (The automatic choice runs dq at block 16 and the others at 32; dq's bits
// do not depend on its block, so the comparison with block 32 holds.)
GPU_TEST("attention coopmat matches the reference at each block; automatic takes 32 where it fits",
         "[attention]") {
  const AttentionDims a{.batch = 2, .seq = 100, .heads = 4, .kv_heads = 2, .head_dim = 64};
  if (!ops::attention_kernel_available(ctx, AttentionKernel::coopmat, a.head_dim)) SKIP("no cooperative matrices");
  const Inputs in = make_inputs(a, 9450);
  const vkt::AttentionRef want = vkt::attention_reference(a, in.q, in.k, in.v, &in.dout);
  const Outputs automatic = run_attention(ctx, a, in, AttentionKernel::coopmat, true);
  bool first = true;  // blocks in the automatic choice's order (AttentionOptions::block)
  int others = 0, others_other_o = 0;  // other blocks that fit; of them, those whose o differs in bits
  for (std::uint32_t block : {32u, 64u, 16u}) {
    INFO("block " << block);
    const std::optional<Outputs> fits = run_at_block(ctx, a, in, AttentionKernel::coopmat, block);
    if (!fits) continue;
    const Outputs& got = *fits;
    check_forward(got, want, AttentionKernel::coopmat);
    check_backward(got, want, AttentionKernel::coopmat);
    if (first) {
      for (auto member : {&Outputs::o, &Outputs::lse, &Outputs::dq, &Outputs::dk, &Outputs::dv}) {
        CHECK(vkt::count_bit_diffs(got.*member, automatic.*member) == 0);
      }
      first = false;
    } else {
      ++others;
      others_other_o += vkt::count_bit_diffs(got.o, automatic.o) > 0 ? 1 : 0;
    }
    // from the same o and lse, the gradients are the same bits at any block
    const Outputs mixed = backward_after_coopmat(ctx, a, in, AttentionKernel::coopmat, block);
    for (auto member : {&Outputs::dq, &Outputs::dk, &Outputs::dv}) {
      CHECK(vkt::count_bit_diffs(mixed.*member, automatic.*member) == 0);
    }
  }
  CHECK_FALSE(first);  // some block fits
  CHECK(others_other_o == others);  // the block is used: the online softmax rescales per key block
}

GPU_TEST("attention coopmat2 matches the reference at each block; from the same o and lse its gradients are the "
         "same bits at any block",
         "[attention]") {
  const AttentionDims a{.batch = 2, .seq = 100, .heads = 4, .kv_heads = 2, .head_dim = 64};
  if (!ops::attention_kernel_available(ctx, AttentionKernel::coopmat2, a.head_dim)) {
    SKIP("no VK_NV_cooperative_matrix2 conversions, reductions and per-element functions");
  }
  const Inputs in = make_inputs(a, 9470);
  const vkt::AttentionRef want = vkt::attention_reference(a, in.q, in.k, in.v, &in.dout);
  const Outputs coop = run_attention(ctx, a, in, AttentionKernel::coopmat, true);
  auto as_double = [](const std::vector<float>& x) { return std::vector<double>(x.begin(), x.end()); };
  std::optional<Outputs> first;  // coopmat's forward, coopmat2's backward at the first block that fits
  for (std::uint32_t block : {32u, 64u, 16u}) {
    INFO("block " << block);
    const std::optional<Outputs> got = run_at_block(ctx, a, in, AttentionKernel::coopmat2, block);
    if (!got) continue;
    check_forward(*got, want, AttentionKernel::coopmat2);
    check_backward(*got, want, AttentionKernel::coopmat2);
    const Outputs mixed = backward_after_coopmat(ctx, a, in, AttentionKernel::coopmat2, block);
    // within the f16 tolerance of coopmat's gradients from the same o and lse
    check_close("dq", mixed.dq, as_double(coop.dq), 4e-3);
    check_close("dk", mixed.dk, as_double(coop.dk), 4e-3);
    check_close("dv", mixed.dv, as_double(coop.dv), 4e-3);
    if (!first) {
      first = mixed;
      continue;
    }
    for (auto member : {&Outputs::dq, &Outputs::dk, &Outputs::dv}) {
      CHECK(vkt::count_bit_diffs(mixed.*member, (*first).*member) == 0);
    }
  }
  CHECK(first.has_value());  // some block fits
}

GPU_TEST("attention coopmat: prefetching the next block gives the same bits as staging each block", "[attention]") {
  // head_dim 64, every block that fits. (At 128 lavapipe's compiler takes
  // minutes over the prefetching kernels' register arrays, 32 vectors per
  // invocation at its subgroups of 8; the automatic choice does not
  // prefetch there.)
  for (const AttentionDims& a : {AttentionDims{.batch = 2, .seq = 100, .heads = 4, .kv_heads = 2, .head_dim = 64},
                                 AttentionDims{.batch = 1, .seq = 77, .heads = 4, .kv_heads = 1, .head_dim = 64}}) {
    INFO("T " << a.seq);
    if (!ops::attention_kernel_available(ctx, AttentionKernel::coopmat, a.head_dim)) SKIP("no cooperative matrices");
    const Inputs in = make_inputs(a, 9470 + a.head_dim);
    const float gscale = ops::AttentionOptions{}.gscale;
    for (std::uint32_t block : {32u, 64u, 16u}) {
      INFO("block " << block);
      Outputs on, off;
      try {
        on = run_attention(ctx, a, in, AttentionKernel::coopmat, true, gscale, block, ops::AttentionPrefetch::on);
      } catch (const Error& e) {
        CHECK_THAT(e.what(), ContainsSubstring("does not fit"));
        continue;
      }
      off = run_attention(ctx, a, in, AttentionKernel::coopmat, true, gscale, block, ops::AttentionPrefetch::off);
      for (auto member : {&Outputs::o, &Outputs::lse, &Outputs::dq, &Outputs::dk, &Outputs::dv}) {
        CHECK(vkt::count_bit_diffs(on.*member, off.*member) == 0);
      }
    }
  }
}

GPU_TEST("attention gives the same bits run after run", "[attention]") {
  const AttentionDims a{.batch = 2, .seq = 100, .heads = 4, .kv_heads = 2, .head_dim = 64};
  const Inputs in = make_inputs(a, 9500);
  for (AttentionKernel kernel : kernels_of(ctx, a.head_dim)) {
    INFO(ops::to_string(kernel));
    Problem p(ctx, a, in);
    Recorder rec(ctx);
    p.record(ctx, rec, a, {.kernel = kernel}, true);
    Graph g = rec.finish();
    g.run();
    const Outputs first = p.download(true);
    g.run();
    const Outputs again = p.download(true);
    const Outputs fresh = run_attention(ctx, a, in, kernel, true);  // recorded anew, new buffers
    std::vector<const Outputs*> same = {&again, &fresh};
    // the plain kernel ignores gscale: its bits whatever it is
    Outputs other_gscale;
    if (kernel == AttentionKernel::plain) {
      other_gscale = run_attention(ctx, a, in, kernel, true, 1.0f);
      same.push_back(&other_gscale);
    }
    for (const Outputs* x : same) {
      CHECK(vkt::count_bit_diffs(x->o, first.o) == 0);
      CHECK(vkt::count_bit_diffs(x->lse, first.lse) == 0);
      CHECK(vkt::count_bit_diffs(x->dq, first.dq) == 0);
      CHECK(vkt::count_bit_diffs(x->dk, first.dk) == 0);
      CHECK(vkt::count_bit_diffs(x->dv, first.dv) == 0);
    }
  }
}

GPU_TEST("attention takes cooperative matrices as the GEMM policy says, coopmat2 where the device has it",
         "[attention]") {
  const bool coop = ops::attention_kernel_available(ctx, AttentionKernel::coopmat, 64);
  const bool coop2 = ops::attention_kernel_available(ctx, AttentionKernel::coopmat2, 64);
  CHECK(coop2 == (coop && ctx.caps().coopmat2_subgroup_ops));
  GemmPolicy on, off;
  off.coopmat = false;
  vkt::with_gemm_policy(on, [&](Context& c) {
    CHECK(ops::attention_kernel_for(c, 64) == (coop2  ? AttentionKernel::coopmat2
                                               : coop ? AttentionKernel::coopmat
                                                      : AttentionKernel::plain));
  });
  vkt::with_gemm_policy(off, [&](Context& c) {
    CHECK(ops::attention_kernel_for(c, 64) == AttentionKernel::plain);
    // automatic runs the plain kernel: its bits exactly
    const AttentionDims a{.batch = 1, .seq = 40, .heads = 2, .kv_heads = 1, .head_dim = 64};
    const Inputs in = make_inputs(a, 9600);
    const Outputs automatic = run_attention(c, a, in, AttentionKernel::automatic, true);
    const Outputs plain = run_attention(c, a, in, AttentionKernel::plain, true);
    CHECK(vkt::count_bit_diffs(automatic.o, plain.o) == 0);
    CHECK(vkt::count_bit_diffs(automatic.dq, plain.dq) == 0);
  });
}

TEST_CASE("attention tiles fit an H100's caps and Vulkan's minimum shared memory", "[attention]") {
  // what NVIDIA's driver reports on an H100: subgroups of 32 (size control),
  // 48 KiB of shared memory, 16×16×16 f16 fragments, f16 accumulators too
  Caps h100;
  h100.subgroup_size = h100.min_subgroup_size = h100.max_subgroup_size = 32;
  h100.subgroup_size_control = true;
  h100.max_shared_memory = 49152;
  h100.max_workgroup_invocations = 1024;
  h100.coopmat = true;
  h100.coopmat_shapes = {{16, 8, 16, "f16", "f16", "f32", "f32", false},
                         {16, 16, 16, "f16", "f16", "f32", "f32", false},
                         {16, 16, 16, "f16", "f16", "f16", "f16", false}};
  for (std::uint32_t d : {32u, 64u, 96u, 128u}) {
    INFO("head_dim " << d);
    CHECK(ops::attention_kernel_available(h100, AttentionKernel::plain, d));
    CHECK(ops::attention_kernel_available(h100, AttentionKernel::coopmat, d));
    CHECK_FALSE(ops::attention_kernel_available(h100, AttentionKernel::coopmat2, d));  // no subgroup ops
  }
  // VK_NV_cooperative_matrix2's subgroup operations: coopmat2 where coopmat fits
  Caps h100_cm2 = h100;
  h100_cm2.coopmat2_subgroup_ops = true;
  for (std::uint32_t d : {32u, 64u, 96u, 128u}) CHECK(ops::attention_kernel_available(h100_cm2, AttentionKernel::coopmat2, d));
  // the backward stores P and dS as f16 accumulators: none of 16×16, no coopmat
  Caps no_f16_acc = h100;
  no_f16_acc.coopmat_shapes.pop_back();
  CHECK_FALSE(ops::attention_kernel_available(no_f16_acc, AttentionKernel::coopmat, 64));
  // Vulkan's minimum: 16 KiB, 128 invocations, no cooperative matrices
  Caps least = h100;
  least.max_shared_memory = 16384;
  least.max_workgroup_invocations = 128;
  least.coopmat = false;
  least.coopmat_shapes.clear();
  for (std::uint32_t d : {32u, 64u, 96u}) CHECK(ops::attention_kernel_available(least, AttentionKernel::plain, d));
  CHECK_FALSE(ops::attention_kernel_available(least, AttentionKernel::plain, 128));
  CHECK_FALSE(ops::attention_kernel_available(least, AttentionKernel::coopmat, 64));
}

GPU_TEST("attention refuses bad shapes, small buffers and overlapping outputs", "[attention][errors]") {
  const AttentionDims a{.batch = 2, .seq = 8, .heads = 4, .kv_heads = 2, .head_dim = 32};
  const Inputs in = make_inputs(a, 9700);
  Problem p(ctx, a, in);
  auto fwd = [&](const ops::AttentionShape& s, const ops::AttentionOptions& opt = {}) {
    return ops::attention_forward(ctx, p.q, p.k, p.v, p.o, p.lse, s, opt);
  };
  auto bwd = [&](const ops::AttentionShape& s, const ops::AttentionOptions& opt = {}) {
    return ops::attention_backward(ctx, p.q, p.k, p.v, p.o, p.lse, p.dout, p.dq, p.dk, p.dv, s, opt);
  };
  ops::AttentionShape s = shape_of(a);
  CHECK_NOTHROW(fwd(s));
  CHECK_NOTHROW(bwd(s));
  s.kv_heads = 3;
  CHECK_THROWS_WITH(fwd(s), ContainsSubstring("attention_forward: heads = 4 is not a multiple of kv_heads = 3"));
  CHECK_THROWS_WITH(bwd(s), ContainsSubstring("attention_backward: heads = 4 is not a multiple of kv_heads = 3"));
  for (std::uint32_t d : {16u, 48u, 256u}) {
    s = shape_of(a);
    s.head_dim = d;
    CHECK_THROWS_WITH(fwd(s), ContainsSubstring("attention_forward: head_dim = " + std::to_string(d) +
                                                " is not supported"));
  }
  s = shape_of(a);
  s.seq = 0;
  CHECK_THROWS_WITH(fwd(s), ContainsSubstring("attention_forward: seq = 0"));
  s = shape_of(a);
  s.batch = 65536;
  s.seq = 65536;
  CHECK_THROWS_WITH(fwd(s), ContainsSubstring("batch · seq = 65536 · 65536 = 4294967296 tokens exceed 32 bits"));
  s = shape_of(a);
  s.batch = 3;  // 24 tokens: every buffer too small
  CHECK_THROWS_WITH(fwd(s), ContainsSubstring("attention_forward: q holds 8192 bytes, needs 12288"));
  CHECK_THROWS_WITH(bwd(s), ContainsSubstring("attention_backward: q holds 8192 bytes, needs 12288"));
  s = shape_of(a);
  s.scale = -1.0f;
  CHECK_THROWS_WITH(fwd(s), ContainsSubstring("attention_forward: scale = -1 is not finite and positive"));
  s.scale = std::nanf("");
  CHECK_THROWS_WITH(fwd(s), ContainsSubstring("is not finite and positive"));
  CHECK_THROWS_WITH(bwd(shape_of(a), {.gscale = 3.0f}),
                    ContainsSubstring("attention_backward: gscale = 3 is not a power of two"));
  for (AttentionKernel kernel : kernels_of(ctx, a.head_dim)) {
    CHECK_THROWS_WITH(fwd(shape_of(a), {.kernel = kernel, .block = 48}),
                      ContainsSubstring("attention_forward: block = 48 is not 64, 32 or 16"));
    CHECK_THROWS_WITH(bwd(shape_of(a), {.kernel = kernel, .block = 8}),
                      ContainsSubstring("attention_backward: block = 8 is not 64, 32 or 16"));
  }
  CHECK_THROWS_WITH(fwd(shape_of(a), {.prefetch = static_cast<ops::AttentionPrefetch>(3)}),
                    ContainsSubstring("attention_forward: prefetch = 3 is not automatic (0), on (1) or off (2)"));
  // outputs overlapping an operand (o over q; dk over dv through a view)
  CHECK_THROWS_WITH(ops::attention_forward(ctx, p.q, p.k, p.v, p.q, p.lse, shape_of(a)),
                    ContainsSubstring("attention_forward: q and o overlap"));
  Buffer both = ctx.buffer(2 * a.kv_elements() * 4);
  CHECK_NOTHROW(ops::attention_backward(ctx, p.q, p.k, p.v, p.o, p.lse, p.dout, p.dq, both.view(0, a.kv_elements() * 4),
                                        both.view(a.kv_elements() * 4), shape_of(a)));
  CHECK_THROWS_WITH(ops::attention_backward(ctx, p.q, p.k, p.v, p.o, p.lse, p.dout, p.dq, both, both.view(64),
                                            shape_of(a)),
                    ContainsSubstring("attention_backward: dk and dv overlap"));
}
