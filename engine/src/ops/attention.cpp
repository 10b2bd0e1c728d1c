// Causal self-attention builders: shape checks, kernel and tile choice,
// dispatches (glsl/attention_plain.comp, attention_coopmat.comp,
// attention_delta.comp).
#include "vkblr/ops/attention.hpp"

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <iterator>
#include <numbers>
#include <optional>
#include <span>
#include <vector>

#include "attention.h"
#include "op_util.hpp"
#include "vkblr/ops/cvt.hpp"

namespace vkblr::ops {
namespace {

using detail::dim;
using detail::need_bytes;
using detail::SpecConstant;
using shader::AttentionPush;
static_assert(sizeof(AttentionPush) == 48);

constexpr std::uint32_t kPlainTpr = ATTN_PLAIN_TPR;
constexpr std::uint32_t kWarps = ATTN_COOPMAT_WARPS;

enum class Pass { forward, dkdv, dq };

// Each pass's kernel on the three paths, and the name the profiler shows (by Pass).
struct PassKernels {
  detail::KernelId plain, coopmat, coopmat2;
  const char* name;
};
constexpr PassKernels kPassKernels[] = {
    {detail::KernelId::attention_fwd_plain, detail::KernelId::attention_fwd_coopmat,
     detail::KernelId::attention_fwd_coopmat2, "attention_fwd"},
    {detail::KernelId::attention_dkdv_plain, detail::KernelId::attention_dkdv_coopmat,
     detail::KernelId::attention_dkdv_coopmat2, "attention_dkdv"},
    {detail::KernelId::attention_dq_plain, detail::KernelId::attention_dq_coopmat,
     detail::KernelId::attention_dq_coopmat2, "attention_dq"},
};

bool on_coopmat(AttentionKernel kernel) {
  return kernel == AttentionKernel::coopmat || kernel == AttentionKernel::coopmat2;
}

// A checked shape.
struct Dims {
  std::uint32_t tokens = 0, q_stride = 0, kv_stride = 0, group = 0;
  float scale = 0;
};

Dims check_shape(const char* op, const Context& ctx, const AttentionShape& s) {
  dim(op, "batch", s.batch);
  dim(op, "seq", s.seq);
  dim(op, "heads", s.heads);
  dim(op, "kv_heads", s.kv_heads);
  dim(op, "head_dim", s.head_dim);
  require(s.heads % s.kv_heads == 0, "{}: heads = {} is not a multiple of kv_heads = {}", op, s.heads, s.kv_heads);
  require(s.head_dim % 32 == 0 && s.head_dim <= 128, "{}: head_dim = {} is not supported (32, 64, 96 or 128)", op,
          s.head_dim);
  const std::uint64_t tokens = std::uint64_t{s.batch} * s.seq;
  require(tokens <= 0xffffffffull, "{}: batch · seq = {} · {} = {} tokens exceed 32 bits", op, s.batch, s.seq,
          tokens);
  detail::elements_fit(op, tokens * s.heads * s.head_dim);
  require(s.scale == 0 || (std::isfinite(s.scale) && s.scale > 0), "{}: scale = {} is not finite and positive", op,
          s.scale);
  const Caps& caps = ctx.caps();
  require(s.batch <= caps.max_workgroup_count[2], "{}: batch = {} exceeds the device's {} workgroups along z", op,
          s.batch, caps.max_workgroup_count[2]);
  require(s.heads <= caps.max_workgroup_count[1], "{}: heads = {} exceeds the device's {} workgroups along y", op,
          s.heads, caps.max_workgroup_count[1]);
  Dims d;
  d.tokens = static_cast<std::uint32_t>(tokens);
  d.q_stride = s.heads * s.head_dim;
  d.kv_stride = s.kv_heads * s.head_dim;
  d.group = s.heads / s.kv_heads;
  d.scale = s.scale != 0 ? s.scale : static_cast<float>(1.0 / std::sqrt(static_cast<double>(s.head_dim)));
  return d;
}

// An operand bound to one slot: its name, buffer, the bytes the kernels
// touch (from the start) and whether it is written.
struct Operand {
  const char* name;
  const Buffer* buffer;
  std::uint64_t bytes;
  bool written;
};

// Each operand must hold its bytes; a written one must not share a byte
// with any other operand.
void check_operands(const char* op, std::initializer_list<Operand> operands) {
  for (const Operand& x : operands) need_bytes(op, x.name, *x.buffer, x.bytes);
  for (auto a = operands.begin(); a != operands.end(); ++a) {
    for (auto b = a + 1; b != operands.end(); ++b) {
      if (!a->written && !b->written) continue;
      const std::uint64_t a0 = a->buffer->offset(), b0 = b->buffer->offset();
      const bool overlap = a->buffer->id() == b->buffer->id() && a0 < b0 + b->bytes && b0 < a0 + a->bytes;
      require(!overlap, "{}: {} and {} overlap", op, a->name, b->name);
    }
  }
}

// ---------------------------------------------------------------- tiles

// Plain kernels: B rows per block (queries and keys), 8·B invocations.
std::uint64_t plain_shared_bytes(Pass pass, std::uint32_t d, std::uint32_t b) {
  const std::uint64_t row = (d / 4 + 1) * 16;       // a staged row, padded
  const std::uint64_t scores = std::uint64_t{b} * (b + 1) * 4;
  switch (pass) {
    case Pass::forward:
      return 2 * b * row + scores + 2 * b * 4;
    case Pass::dkdv:
      return 4 * b * row + 2 * scores + 2 * b * 4;
    case Pass::dq:
      return 4 * b * row + scores;
  }
  return 0;
}

std::optional<std::uint32_t> plain_rows(const Caps& caps, Pass pass, std::uint32_t d) {
  for (std::uint32_t b : {32u, 16u, 8u}) {
    if (kPlainTpr * b <= caps.max_workgroup_invocations && plain_shared_bytes(pass, d, b) <= caps.max_shared_memory) {
      return b;
    }
  }
  return std::nullopt;
}

// Cooperative-matrix kernels: 4 warps of the device's subgroup size, F×F×F
// fragments, each warp F rows of the block. fwd, dq: BQ = 4F query rows,
// BK keys per block; dkdv: BK = 4F keys, BQ queries per block. epi: output
// columns per epilogue chunk.
struct CoopTile {
  std::uint32_t f = 0, sg = 0, bq = 0, bk = 0, epi = 0;
  std::uint64_t shared = 0;
};

// The widest chunk of output columns (a divisor of d, a multiple of f)
// whose `rows` rows of (chunk + 4) floats fit `vecs` 16-byte vectors.
std::uint32_t epilogue_cols(std::uint32_t d, std::uint32_t f, std::uint32_t rows, std::uint64_t vecs) {
  for (std::uint32_t c = d; c >= f; c -= f) {
    if (d % c == 0 && std::uint64_t{rows} * (c + 4) <= vecs * 4) return c;
  }
  return 0;
}

// Whether the device has f16 accumulators of F×F fragments: the backward
// kernels round P and dS to f16 as accumulators and store them as such.
bool f16_accumulator(const Caps& caps, std::uint32_t f) {
  return std::ranges::any_of(caps.coopmat_shapes, [f](const CoopMatShape& s) {
    return s.m == f && s.n == f && (s.c_type == "f16" || s.result_type == "f16");
  });
}

// The blocks a coopmat tile may take, in the order the automatic choice
// tries them (the fastest on an H100 first, docs/benchmarks.md): the
// forward and dK/dV 32, then the longest that fits; dq 16 (head_dim 64 and
// 128); coopmat2's dK/dV at head_dim <= 64: 64.
constexpr std::uint32_t kCoopBlocks[] = {32, 64, 16};
constexpr std::uint32_t kCoopBlocksDq[] = {16, 32, 64};
constexpr std::uint32_t kCoop2BlocksDkdv64[] = {64, 32, 16};

std::span<const std::uint32_t> block_order(Pass pass, AttentionKernel kernel, std::uint32_t d) {
  if (pass == Pass::dq) return kCoopBlocksDq;
  if (pass == Pass::dkdv && kernel == AttentionKernel::coopmat2 && d <= 64) return kCoop2BlocksDkdv64;
  return kCoopBlocks;
}

// The tile of `pass` on `kernel` (coopmat or coopmat2; the KHR kernel's
// shared arrays, in bytes, mirrored: coopmat2 needs at most as much) with
// `block` (0: the first of the pass's blocks that fits), or nothing when it
// does not fit the device.
std::optional<CoopTile> coop_tile(const Caps& caps, Pass pass, AttentionKernel kernel, std::uint32_t d,
                                  std::uint32_t block_asked = 0) {
  const auto frag = caps.f16_fragment();
  if (!caps.coopmat || !frag || frag->m != frag->n || frag->n != frag->k) return std::nullopt;
  const std::uint32_t f = frag->m, sg = caps.subgroup_size;
  if (f == 0 || sg == 0 || d % f != 0 || sg % f != 0 || kWarps * sg > caps.max_workgroup_invocations ||
      !f16_accumulator(caps, f)) {
    return std::nullopt;
  }
  const std::uint64_t sh8 = (d + 8) / 8;
  const std::uint64_t index_matrices = 4ull * 2 * f * f;
  for (std::uint32_t block : block_order(pass, kernel, d)) {
    if (block % f != 0 || (block_asked != 0 && block != block_asked)) continue;
    CoopTile t;
    t.f = f;
    t.sg = sg;
    std::uint64_t vecs = 0;
    if (pass == Pass::dkdv) {
      t.bk = kWarps * f;
      t.bq = block;
      // the Q and dO tiles, the K (then V) rows, the epilogue's narrowest chunk
      vecs = std::max({2 * t.bq * sh8, t.bk * sh8, std::uint64_t{2} * t.bk * (f + 4) / 4});
      t.epi = epilogue_cols(d, f, 2 * t.bk, vecs);
      t.shared = 16 * vecs + 2ull * 2 * t.bk * (t.bq + 8) + index_matrices + 4ull * 2 * t.bq;
    } else {
      t.bq = kWarps * f;
      t.bk = block;
      const std::uint32_t lpr = sg / f;  // softmax invocations per row
      if (t.bk % lpr != 0 || (pass == Pass::forward && (t.bk / lpr) % 8 != 0)) continue;  // P in uvec4 stores
      vecs = std::max(2 * t.bk * sh8, t.bq * sh8);
      t.epi = epilogue_cols(d, f, t.bq, vecs);
      const std::uint64_t halves = 2ull * t.bq * (t.bk + 8);
      t.shared = pass == Pass::forward ? 16 * vecs + 4ull * t.bq * (t.bk + 4) + halves + 4ull * t.bq * (lpr + 1)
                                       : 16 * vecs + halves + index_matrices + 4ull * 2 * t.bq;
    }
    if (t.epi != 0 && t.shared <= caps.max_shared_memory) return t;
  }
  return std::nullopt;
}

bool coopmat_allowed(const Context& ctx) { return ctx.gemm_policy().coopmat; }

bool coopmat_fits(const Caps& caps, std::uint32_t d) {
  const AttentionKernel k = AttentionKernel::coopmat;
  return coop_tile(caps, Pass::forward, k, d) && coop_tile(caps, Pass::dkdv, k, d) && coop_tile(caps, Pass::dq, k, d);
}

bool coopmat2_fits(const Caps& caps, std::uint32_t d) { return caps.coopmat2_subgroup_ops && coopmat_fits(caps, d); }

AttentionKernel choose_kernel(const char* op, const Context& ctx, const AttentionShape& s, AttentionKernel asked) {
  const Caps& caps = ctx.caps();
  if (asked == AttentionKernel::automatic) return attention_kernel_for(ctx, s.head_dim);
  if (asked == AttentionKernel::coopmat) {
    require(coopmat_fits(caps, s.head_dim),
            "{}: device {} cannot run the cooperative-matrix kernels for head_dim = {} (no square f16 fragment "
            "dividing it with f16 accumulators of its shape, or its tiles exceed {} bytes of shared memory)",
            op, caps.device_name, s.head_dim, caps.max_shared_memory);
  }
  if (asked == AttentionKernel::coopmat2) {
    require(coopmat2_fits(caps, s.head_dim),
            "{}: device {} cannot run the coopmat2 kernels for head_dim = {} (no VK_NV_cooperative_matrix2 "
            "conversions, reductions and per-element functions, or the coopmat kernels do not fit)",
            op, caps.device_name, s.head_dim);
  }
  return asked;
}

// A forced block (AttentionOptions::block) must be one of the blocks
// (whether its tile fits is attention_dispatch's check).
void check_block(const char* op, std::uint32_t block) {
  require(block == 0 || std::ranges::find(kCoopBlocks, block) != std::end(kCoopBlocks),
          "{}: block = {} is not 64, 32 or 16", op, block);
}

void check_prefetch(const char* op, AttentionPrefetch prefetch) {
  require(prefetch == AttentionPrefetch::automatic || prefetch == AttentionPrefetch::on ||
              prefetch == AttentionPrefetch::off,
          "{}: prefetch = {} is not automatic (0), on (1) or off (2)", op, static_cast<std::uint32_t>(prefetch));
}

// ---------------------------------------------------------------- dispatches

// Whether `pass` with tile t prefetches: `automatic` does where the next
// block's two tiles take at most 16 uvec4 (64 registers) per invocation,
// except dK/dV at head_dim > 64 (its registers are full already: slower on
// an H100).
bool prefetch_on(AttentionPrefetch prefetch, Pass pass, const CoopTile& t, std::uint32_t head_dim) {
  if (prefetch != AttentionPrefetch::automatic) return prefetch == AttentionPrefetch::on;
  const std::uint64_t rows = pass == Pass::dkdv ? t.bq : t.bk;
  const std::uint64_t per_invocation = detail::ceil_div(2 * rows * (head_dim / 8), std::uint64_t{kWarps} * t.sg);
  return per_invocation <= 16 && (pass != Pass::dkdv || head_dim <= 64);
}

AttentionPush push_of(const AttentionShape& s, const Dims& d, float gscale) {
  AttentionPush p{};
  p.seq = s.seq;
  p.heads = s.heads;
  p.group = d.group;
  p.q_stride = d.q_stride;
  p.kv_stride = d.kv_stride;
  p.scale_log2 = static_cast<float>(static_cast<double>(d.scale) * std::numbers::log2e);
  p.dk_scale = d.scale / gscale;
  p.dv_scale = 1.0f / gscale;
  p.gscale = gscale;
  p.tokens = d.tokens;
  p.head_dim = s.head_dim;
  return p;
}

// The attention kernel of `pass` with its tile; groups over (blocks, heads
// or kv heads, sequences).
Dispatch attention_dispatch(const char* op, Context& ctx, AttentionKernel kernel, Pass pass, const AttentionShape& s,
                            std::uint32_t coop_block, AttentionPrefetch prefetch) {
  const Caps& caps = ctx.caps();
  std::vector<SpecConstant> spec;
  detail::KernelOptions options;
  std::uint32_t block = 0;  // rows per workgroup along the sequence
  if (kernel == AttentionKernel::plain) {
    const std::optional<std::uint32_t> b = plain_rows(caps, pass, s.head_dim);
    require(b.has_value(), "{}: device {} has too little shared memory ({} bytes) for head_dim = {}", op,
            caps.device_name, caps.max_shared_memory, s.head_dim);
    spec = {{ATTN_SPEC_WG_SIZE, kPlainTpr * *b}, {ATTN_SPEC_D, s.head_dim}, {ATTN_SPEC_BQ, *b}};
    block = *b;
  } else {
    const std::optional<CoopTile> t = coop_tile(caps, pass, kernel, s.head_dim, coop_block);
    require(t.has_value() || coop_block == 0,
            "{}: block = {} does not fit device {} for head_dim = {} (not a multiple of its fragment side, or the "
            "tile exceeds {} bytes of shared memory)",
            op, coop_block, caps.device_name, s.head_dim, caps.max_shared_memory);
    require(t.has_value(), "{}: no cooperative-matrix tile fits device {}", op, caps.device_name);
    spec = {{ATTN_SPEC_WG_SIZE, kWarps * t->sg}, {ATTN_SPEC_D, s.head_dim}, {ATTN_SPEC_BQ, t->bq},
            {ATTN_SPEC_BK, t->bk},           {ATTN_SPEC_SG, t->sg},     {ATTN_SPEC_F, t->f},
            {ATTN_SPEC_EPI, t->epi},         {ATTN_SPEC_PF, prefetch_on(prefetch, pass, *t, s.head_dim) ? 1u : 0u}};
    options = {caps.subgroup_size_control ? t->sg : 0, true};
    block = pass == Pass::dkdv ? t->bk : t->bq;
  }
  const PassKernels& kernels = kPassKernels[static_cast<std::size_t>(pass)];
  const detail::KernelId id = kernel == AttentionKernel::plain     ? kernels.plain
                              : kernel == AttentionKernel::coopmat2 ? kernels.coopmat2
                                                                    : kernels.coopmat;
  Dispatch d = detail::make_dispatch(ctx, id, kernels.name, std::span<const SpecConstant>(spec), options);
  const std::uint32_t blocks = detail::ceil_div(s.seq, block);
  require(blocks <= caps.max_workgroup_count[0], "{}: seq = {} needs {} blocks, the device allows {}", op, s.seq,
          blocks, caps.max_workgroup_count[0]);
  d.groups = {blocks, pass == Pass::dkdv ? s.kv_heads : s.heads, s.batch};
  return d;
}

// f16 copies of q, k, v (and dout · gscale) for the coopmat kernels.
struct Staged {
  Transient q, k, v, dout;
};

Staged stage_f16(Context& ctx, Ops& ops, const Dims& d, const Buffer& q, const Buffer& k, const Buffer& v,
                 const Buffer* dout, float gscale) {
  Staged st;
  st.q = make_transient(std::uint64_t{d.tokens} * d.q_stride * 2);
  st.k = make_transient(std::uint64_t{d.tokens} * d.kv_stride * 2);
  st.v = make_transient(std::uint64_t{d.tokens} * d.kv_stride * 2);
  ops.push_back(cvt(ctx, q, st.q, d.tokens, d.q_stride, 1.0f));
  ops.push_back(cvt(ctx, k, st.k, d.tokens, d.kv_stride, 1.0f));
  ops.push_back(cvt(ctx, v, st.v, d.tokens, d.kv_stride, 1.0f));
  if (dout) {
    st.dout = make_transient(std::uint64_t{d.tokens} * d.q_stride * 2);
    ops.push_back(cvt(ctx, *dout, st.dout, d.tokens, d.q_stride, gscale));
  }
  return st;
}

}  // namespace

const char* to_string(AttentionPrefetch prefetch) noexcept {
  switch (prefetch) {
    case AttentionPrefetch::automatic:
      return "automatic";
    case AttentionPrefetch::on:
      return "on";
    case AttentionPrefetch::off:
      return "off";
  }
  return "?";
}

const char* to_string(AttentionKernel kernel) noexcept {
  switch (kernel) {
    case AttentionKernel::automatic:
      return "automatic";
    case AttentionKernel::plain:
      return "plain";
    case AttentionKernel::coopmat:
      return "coopmat";
    case AttentionKernel::coopmat2:
      return "coopmat2";
  }
  return "?";
}

AttentionKernel attention_kernel_for(const Context& ctx, std::uint32_t head_dim) {
  if (!coopmat_allowed(ctx)) return AttentionKernel::plain;
  if (coopmat2_fits(ctx.caps(), head_dim)) return AttentionKernel::coopmat2;
  return coopmat_fits(ctx.caps(), head_dim) ? AttentionKernel::coopmat : AttentionKernel::plain;
}

bool attention_kernel_available(const Context& ctx, AttentionKernel kernel, std::uint32_t head_dim) {
  return attention_kernel_available(ctx.caps(), kernel, head_dim);
}

bool attention_kernel_available(const Caps& caps, AttentionKernel kernel, std::uint32_t head_dim) {
  switch (kernel) {
    case AttentionKernel::automatic:
      return true;
    case AttentionKernel::plain:
      return plain_rows(caps, Pass::forward, head_dim) && plain_rows(caps, Pass::dkdv, head_dim) &&
             plain_rows(caps, Pass::dq, head_dim);
    case AttentionKernel::coopmat:
      return coopmat_fits(caps, head_dim);
    case AttentionKernel::coopmat2:
      return coopmat2_fits(caps, head_dim);
  }
  return false;
}

Ops attention_forward(Context& ctx, const Buffer& q, const Buffer& k, const Buffer& v, const Buffer& o,
                      const Buffer& lse, const AttentionShape& shape, const AttentionOptions& options) {
  const char* op = "attention_forward";
  const Dims d = check_shape(op, ctx, shape);
  const std::uint64_t q_bytes = std::uint64_t{d.tokens} * d.q_stride * 4;
  const std::uint64_t kv_bytes = std::uint64_t{d.tokens} * d.kv_stride * 4;
  const std::uint64_t lse_bytes = std::uint64_t{d.tokens} * shape.heads * 4;
  check_operands(op, {{"q", &q, q_bytes, false},
                      {"k", &k, kv_bytes, false},
                      {"v", &v, kv_bytes, false},
                      {"o", &o, q_bytes, true},
                      {"lse", &lse, lse_bytes, true}});
  const AttentionKernel kernel = choose_kernel(op, ctx, shape, options.kernel);
  check_block(op, options.block);
  check_prefetch(op, options.prefetch);
  Ops ops;
  Dispatch fwd = attention_dispatch(op, ctx, kernel, Pass::forward, shape, options.block, options.prefetch);
  fwd.set_push(push_of(shape, d, 1.0f));
  if (on_coopmat(kernel)) {
    const Staged st = stage_f16(ctx, ops, d, q, k, v, nullptr, 1.0f);
    fwd.bind(0, st.q, Access::read).bind(1, st.k, Access::read).bind(2, st.v, Access::read);
  } else {
    fwd.bind(0, q, Access::read, 0, q_bytes).bind(1, k, Access::read, 0, kv_bytes).bind(2, v, Access::read, 0, kv_bytes);
  }
  fwd.bind(3, o, Access::write, 0, q_bytes).bind(4, lse, Access::write, 0, lse_bytes);
  ops.push_back(fwd);
  return ops;
}

Ops attention_backward(Context& ctx, const Buffer& q, const Buffer& k, const Buffer& v, const Buffer& o,
                       const Buffer& lse, const Buffer& dout, const Buffer& dq, const Buffer& dk, const Buffer& dv,
                       const AttentionShape& shape, const AttentionOptions& options) {
  const char* op = "attention_backward";
  const Dims d = check_shape(op, ctx, shape);
  detail::require_gscale(op, options.gscale);
  const std::uint64_t q_bytes = std::uint64_t{d.tokens} * d.q_stride * 4;
  const std::uint64_t kv_bytes = std::uint64_t{d.tokens} * d.kv_stride * 4;
  const std::uint64_t lse_bytes = std::uint64_t{d.tokens} * shape.heads * 4;
  check_operands(op, {{"q", &q, q_bytes, false},
                      {"k", &k, kv_bytes, false},
                      {"v", &v, kv_bytes, false},
                      {"o", &o, q_bytes, false},
                      {"lse", &lse, lse_bytes, false},
                      {"dout", &dout, q_bytes, false},
                      {"dq", &dq, q_bytes, true},
                      {"dk", &dk, kv_bytes, true},
                      {"dv", &dv, kv_bytes, true}});
  const AttentionKernel kernel = choose_kernel(op, ctx, shape, options.kernel);
  check_block(op, options.block);
  check_prefetch(op, options.prefetch);
  const float gscale = on_coopmat(kernel) ? options.gscale : 1.0f;
  const AttentionPush p = push_of(shape, d, gscale);
  Ops ops;
  std::optional<Staged> st;
  if (on_coopmat(kernel)) st = stage_f16(ctx, ops, d, q, k, v, &dout, gscale);

  const Transient delta = make_transient(lse_bytes);
  const std::uint32_t delta_spec[] = {shape.head_dim / 4};
  Dispatch dd = detail::make_dispatch(ctx, detail::KernelId::attention_delta, "attention_delta", delta_spec);
  dd.set_push(p).bind(3, o, Access::read, 0, q_bytes).bind(5, dout, Access::read, 0, q_bytes);
  dd.bind(6, delta, Access::write);
  dd.groups = detail::elt_grid(std::uint64_t{d.tokens} * shape.heads, op);
  ops.push_back(dd);

  // the inputs of both gradient kernels
  auto bind_inputs = [&](Dispatch& x) {
    x.set_push(p);
    if (st) {
      x.bind(0, st->q, Access::read).bind(1, st->k, Access::read).bind(2, st->v, Access::read);
      x.bind(5, st->dout, Access::read);
    } else {
      x.bind(0, q, Access::read, 0, q_bytes).bind(1, k, Access::read, 0, kv_bytes);
      x.bind(2, v, Access::read, 0, kv_bytes).bind(5, dout, Access::read, 0, q_bytes);
    }
    x.bind(4, lse, Access::read, 0, lse_bytes).bind(6, delta, Access::read);
  };
  Dispatch dkdv = attention_dispatch(op, ctx, kernel, Pass::dkdv, shape, options.block, options.prefetch);
  bind_inputs(dkdv);
  dkdv.bind(8, dk, Access::write, 0, kv_bytes).bind(9, dv, Access::write, 0, kv_bytes);
  ops.push_back(dkdv);
  Dispatch dqd = attention_dispatch(op, ctx, kernel, Pass::dq, shape, options.block, options.prefetch);
  bind_inputs(dqd);
  dqd.bind(7, dq, Access::write, 0, q_bytes);
  ops.push_back(dqd);
  return ops;
}

}  // namespace vkblr::ops
