// vkblr-bench rows: the row-wise transformer ops against the copy ceiling.
#include "rows_bench.hpp"

#include <algorithm>
#include <deque>
#include <cstdio>
#include <format>
#include <functional>
#include <map>

#include "memory_need.hpp"

namespace bench {
namespace {

// Uniform in ±scale from a 32-bit LCG: fast enough for tens of millions of
// values, never all zero (data-dependent speed would flatter zeros).
std::vector<float> random_floats(std::size_t n, std::uint32_t seed, float scale) {
  std::vector<float> v(n);
  std::uint32_t s = seed * 2654435761u + 1;
  for (auto& x : v) {
    s = s * 1664525u + 1013904223u;
    x = (static_cast<float>(s >> 8) * 0x1p-23f - 1.0f) * scale;
  }
  return v;
}

// One case ready to time: its dispatches, the buffers they bind, its traffic.
struct Prepared {
  std::deque<vkblr::Buffer> buffers;  // stable addresses: the dispatches name them
  vkblr::Ops ops;
  std::string shape;
  double bytes = 0, device_bytes = 0;
  std::uint64_t copy_elements = 0;
};

Prepared prepare(vkblr::Context& ctx, const RowsModel& m, std::uint32_t tokens, const std::string& op) {
  namespace ops = vkblr::ops;
  Prepared p;
  const std::uint64_t th = std::uint64_t{tokens} * m.hidden, ti = std::uint64_t{tokens} * m.inter,
                      vh = std::uint64_t{m.vocab} * m.hidden;
  const auto f = [](std::uint64_t v) { return static_cast<double>(v); };
  auto upload_random = [&](std::uint64_t n, std::uint32_t seed, float scale) -> vkblr::Buffer& {
    p.device_bytes += 4.0 * static_cast<double>(n);
    return p.buffers.emplace_back(ctx.upload(random_floats(n, seed, scale)));
  };
  auto scratch = [&](std::uint64_t n) -> vkblr::Buffer& {
    p.device_bytes += 4.0 * static_cast<double>(n);
    return p.buffers.emplace_back(ctx.buffer(n * 4));
  };
  if (op.starts_with("rmsnorm")) {
    const ops::RmsNorm shape{tokens, m.hidden, 1e-6f};
    p.shape = std::format("{}x{}", tokens, m.hidden);
    p.copy_elements = th;
    const vkblr::Buffer &x = upload_random(th, 1, 2.0f), &w = upload_random(m.hidden, 2, 1.0f), &y = scratch(th),
                        &inv = scratch(tokens);
    const double small = 4.0 * f(m.hidden + tokens);  // w, inv_rms
    if (op == "rmsnorm_fwd") {
      p.ops = {ops::rmsnorm_fwd(ctx, x, w, y, inv, shape)};
      p.bytes = 8.0 * f(th) + small;
    } else if (op == "rmsnorm_fwd_residual") {
      const vkblr::Buffer& stream = upload_random(th, 3, 2.0f);
      p.ops = {ops::rmsnorm_fwd_residual(ctx, x, stream, w, y, inv, shape)};
      p.bytes = 16.0 * f(th) + small;
    } else {  // rmsnorm_bwd: dx and dw overwritten
      const vkblr::Buffer &dy = upload_random(th, 4, 1.0f), &dx = scratch(th), &dw = scratch(m.hidden);
      vkblr::Recorder init(ctx);
      init.add(ops::rmsnorm_fwd(ctx, x, w, y, inv, shape));
      init.run();
      p.ops = ops::rmsnorm_bwd(ctx, x, w, inv, dy, dx, dw, shape);
      p.bytes = 12.0 * f(th) + small + 4.0 * f(m.hidden);
    }
  } else if (op.starts_with("swiglu")) {
    p.shape = std::format("{}x{}", tokens, m.inter);
    p.copy_elements = ti;
    const vkblr::Buffer &g = upload_random(ti, 5, 4.0f), &u = upload_random(ti, 6, 2.0f), &h = scratch(ti);
    if (op == "swiglu_fwd") {
      p.ops = {ops::swiglu_fwd(ctx, g, u, h, tokens, m.inter)};
      p.bytes = 12.0 * f(ti);
    } else {
      const vkblr::Buffer &dg = scratch(ti), &du = scratch(ti);
      p.ops = {ops::swiglu_bwd(ctx, g, u, h, dg, du, tokens, m.inter)};  // h stands for dh
      p.bytes = 20.0 * f(ti);
    }
  } else if (op.starts_with("embedding")) {
    const ops::Embedding shape{tokens, m.vocab, m.hidden};
    p.shape = std::format("{} ids, {}x{}", tokens, m.vocab, m.hidden);
    // ids uniform over the vocabulary, a quarter of them one id (a long segment)
    std::vector<std::uint32_t> ids(tokens);
    std::uint32_t s = 12345;
    for (auto& id : ids) {
      s = s * 1664525u + 1013904223u;
      id = (s >> 30) == 0 ? 13 % m.vocab : (s >> 8) % m.vocab;
    }
    if (op == "embedding_fwd") {
      p.copy_elements = th;
      const vkblr::Buffer& ids_b = p.buffers.emplace_back(ctx.upload(ids));
      vkblr::Buffer &table = scratch(vh), &out = scratch(th);
      table.fill(0x3f9e0419u);  // 1.2345f: values do not change a lookup's speed
      p.ops = {ops::embedding_fwd(ctx, ids_b, table, out, shape)};
      p.bytes = 4.0 * f(tokens) + 8.0 * f(th);
    } else {
      p.copy_elements = vh;
      const ops::EmbeddingIndex index = ops::embedding_index(ids, m.vocab);
      const vkblr::Buffer& offsets = p.buffers.emplace_back(ctx.upload(index.offsets));
      const vkblr::Buffer& positions = p.buffers.emplace_back(ctx.upload(index.positions));
      const vkblr::Buffer& chunks = p.buffers.emplace_back(ctx.upload(index.chunks));
      const vkblr::Buffer &dy = upload_random(th, 7, 1.0f), &dtable = scratch(vh);
      p.ops = ops::embedding_bwd(ctx, dy, offsets, positions, chunks, dtable, shape);
      p.bytes = 4.0 * f(th) + 4.0 * f(m.vocab + 1) + 4.0 * f(tokens) + 4.0 * f(vh);
    }
  }
  if (op.starts_with("rope")) {  // q and k, one dispatch
    const std::uint64_t qn = std::uint64_t{tokens} * m.heads * m.head_dim,
                        kn = std::uint64_t{tokens} * m.kv_heads * m.head_dim;
    p.shape = std::format("q {}x{}x{}, k {}x{}x{}", tokens, m.heads, m.head_dim, tokens, m.kv_heads, m.head_dim);
    p.copy_elements = qn;
    std::vector<std::uint32_t> pos(tokens);
    for (std::uint32_t t = 0; t < tokens; ++t) pos[t] = t % m.sequence;
    vkblr::Buffer &q = upload_random(qn, 8, 2.0f), &k = upload_random(kn, 9, 2.0f);
    const vkblr::Buffer& positions = p.buffers.emplace_back(ctx.upload(pos));
    const vkblr::Buffer& table = p.buffers.emplace_back(ctx.upload(ops::rope_table(m.head_dim, m.rope_base, m.sequence)));
    const ops::RopeQk shape{tokens, m.heads, m.kv_heads, m.head_dim, m.sequence};
    p.ops = {op == "rope_fwd" ? ops::rope_fwd(ctx, q, k, positions, table, shape)
                              : ops::rope_bwd(ctx, q, k, positions, table, shape)};
    // q and k read and written, positions read twice, each used table row once
    p.bytes = 8.0 * f(qn + kn) + 8.0 * f(tokens) + 4.0 * f(std::min(tokens, m.sequence)) * m.head_dim;
  }
  return p;
}

// Device memory a case will need, before it allocates (its buffers, the
// copy's two, staging for the largest upload).
MemoryNeed need_of(const RowsModel& m, std::uint32_t tokens, const std::string& op) {
  const double th = 4.0 * tokens * m.hidden, ti = 4.0 * tokens * m.inter, vh = 4.0 * m.vocab * m.hidden;
  MemoryNeed n;
  if (op.starts_with("rmsnorm")) n.largest_buffer = th, n.device_bytes = 4 * th;
  if (op.starts_with("swiglu")) n.largest_buffer = ti, n.device_bytes = 5 * ti;
  if (op.starts_with("embedding")) n.largest_buffer = vh, n.device_bytes = 2 * vh + 2 * th;
  if (op.starts_with("rope")) n.largest_buffer = 4.0 * tokens * m.heads * m.head_dim, n.device_bytes = 2 * n.largest_buffer;
  n.device_bytes += 2 * n.largest_buffer + n.largest_buffer;  // the copy's pair, staging
  n.host_bytes = n.largest_buffer;
  return n;
}

}  // namespace

const std::vector<RowsModel>& rows_models() {
  static const std::vector<RowsModel> models{{"ref", 512, 8, 4, 64, 1536, 272, 4 * 1024, 1024, 1e4},
                                             {"qwen-0.5b", 896, 14, 2, 64, 4864, 151936, 4096, 4096, 1e6},
                                             {"llama-8b", 4096, 32, 8, 128, 14336, 128256, 4096, 4096, 5e5}};
  return models;
}

const std::vector<std::string>& rows_ops() {
  static const std::vector<std::string> names{"rmsnorm_fwd",  "rmsnorm_fwd_residual", "rmsnorm_bwd",  "swiglu_fwd",
                                              "swiglu_bwd",   "embedding_fwd",        "embedding_bwd",
                                              "rope_fwd",     "rope_bwd"};
  return names;
}

bool failed(const RowsResult& r) { return !r.error.empty(); }

std::vector<RowsResult> run_rows_bench(vkblr::Context& ctx, const RowsBenchOptions& o) {
  std::vector<RowsResult> out;
  if (o.stats && !ctx.caps().kernel_statistics) {
    std::fprintf(stderr, "rows: --stats: device %s keeps no kernel statistics\n", ctx.caps().device_name.c_str());
  }
  std::map<std::uint64_t, double> copy_gbps;  // by elements
  auto copy_rate = [&](std::uint64_t n) {
    if (auto it = copy_gbps.find(n); it != copy_gbps.end()) return it->second;
    vkblr::Buffer a = ctx.buffer(n * 4), b = ctx.buffer(n * 4);
    a.fill(0x3f9e0419u);
    const vkblr::Dispatch d = vkblr::ops::copy(ctx, a, b, static_cast<std::uint32_t>(n));
    const Stats s = time_gpu(ctx, o.warmup, o.reps, [&](vkblr::Recorder& rec, std::uint32_t) { rec.add(d); });
    return copy_gbps[n] = 8.0 * static_cast<double>(n) / (s.median_ms * 1e-3) / 1e9;
  };
  for (const RowsModel& m : rows_models()) {
    if (!o.models.empty() && std::find(o.models.begin(), o.models.end(), m.name) == o.models.end()) continue;
    const std::uint32_t tokens = o.tokens ? o.tokens : m.tokens;
    for (const std::string& op : rows_ops()) {
      if (!o.ops.empty() && std::find(o.ops.begin(), o.ops.end(), op) == o.ops.end()) continue;
      RowsResult r;
      r.model = m.name;
      r.op = op;
      r.tokens = tokens;
      try {
        require_fits(ctx.caps(), need_of(m, tokens, op), std::format("rows {} {}", m.name, op));
        Prepared p = prepare(ctx, m, tokens, op);
        r.shape = p.shape;
        r.bytes = p.bytes;
        if (o.stats && ctx.caps().kernel_statistics) {
          for (const vkblr::Dispatch& d : p.ops) add_kernel_stats(r.kernel_stats, d);
        }
        r.stats = time_gpu(ctx, o.warmup, o.reps, [&](vkblr::Recorder& rec, std::uint32_t) { rec.add(p.ops); });
        for (const vkblr::ProfileEvent& e : ctx.profiler().events()) {
          r.per_name_ms[e.name] += e.duration_us * 1e-3 / static_cast<double>(o.reps);
        }
        r.gbps = p.bytes / (r.stats.median_ms * 1e-3) / 1e9;
        const std::uint64_t copy_elements = p.copy_elements;
        p = {};  // freed before the copy's buffers
        r.copy_elements = static_cast<double>(copy_elements);
        r.copy_gbps = copy_rate(copy_elements);
        r.of_copy = r.gbps / r.copy_gbps;
      } catch (const std::exception& e) {  // vkblr::Error, or host memory
        r.error = e.what();
      }
      out.push_back(r);
      if (!o.quiet) std::fprintf(stderr, "%s\n", format_rows_result(r).c_str());
    }
  }
  return out;
}

std::string format_rows_result(const RowsResult& r) {
  const std::string what = std::format("{} {} [{}]", r.model, r.op, r.shape);
  if (!r.error.empty()) return std::format("{}: {}", what, r.error);
  std::string s =
      std::format("{}: median {:.4f} ms (min {:.4f}, max {:.4f}, {} reps) {:.1f} GB/s, copy {:.1f} GB/s, {:.2f}× copy",
                  what, r.stats.median_ms, r.stats.min_ms, r.stats.max_ms, r.stats.reps, r.gbps, r.copy_gbps, r.of_copy);
  if (r.per_name_ms.size() > 1) {
    for (const auto& [name, ms] : r.per_name_ms) s += std::format("\n    {:<24} {:.4f} ms", name, ms);
  }
  return s + format_kernel_stats(r.kernel_stats);
}

nlohmann::json to_json(const RowsResult& r) {
  nlohmann::json j = {{"model", r.model}, {"op", r.op}, {"shape", r.shape}, {"tokens", r.tokens}};
  if (!r.error.empty()) {
    j["error"] = r.error;
    return j;
  }
  put_stats(j, r.stats);
  j["bytes"] = r.bytes;
  j["gbps"] = r.gbps;
  j["copy_elements"] = r.copy_elements;
  j["copy_gbps"] = r.copy_gbps;
  j["of_copy"] = r.of_copy;
  j["per_name_ms"] = r.per_name_ms;
  put_kernel_stats(j, r.kernel_stats);
  return j;
}

}  // namespace bench
