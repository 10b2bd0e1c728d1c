#include "vkblr/recorder.hpp"

#include <algorithm>
#include <atomic>

#include "context_impl.hpp"
#include "vkblr/context.hpp"
#include "vkblr/error.hpp"

namespace vkblr {
namespace detail {

// Timestamp queries come in pools of this many (two per timed dispatch).
constexpr std::uint32_t kQueriesPerPool = 512;

struct TimedDispatch {
  const char* name;
  std::string tag;
};

// One recorded command buffer with its fence and profiling queries.
struct RecordedBatch {
  ContextImpl* ctx = nullptr;
  VkCommandBuffer cb = VK_NULL_HANDLE;
  VkFence fence = VK_NULL_HANDLE;
  bool pending = false;
  std::vector<VkQueryPool> pools;
  std::uint32_t queries = 0;
  std::vector<TimedDispatch> timed;
  std::uint32_t dispatches = 0;
  std::uint32_t barriers = 0;
  // timestamps at the batch's start and end (device busy time), where the
  // queue writes timestamps
  VkQueryPool span_pool = VK_NULL_HANDLE;
  // the transients the commands name; destroyed after the wait below
  std::vector<Buffer> transients;

  // The command buffer, fence and span pool come from the context's spares
  // (ContextImpl::take_batch_objects) and go back there.
  explicit RecordedBatch(ContextImpl* c) : ctx(c) {
    const ContextImpl::BatchObjects o = ctx->take_batch_objects();
    cb = o.cb;
    fence = o.fence;
    span_pool = o.span_pool;
  }

  ~RecordedBatch() {
    if (pending) vkWaitForFences(ctx->device, 1, &fence, VK_TRUE, UINT64_MAX);
    for (VkQueryPool p : pools) vkDestroyQueryPool(ctx->device, p, nullptr);
    if (span_pool != VK_NULL_HANDLE) vkResetQueryPool(ctx->device, span_pool, 0, 2);
    ctx->give_back_batch_objects({cb, fence, span_pool});
  }

  // The query pool and index of the next timestamp (a new pool when full).
  std::pair<VkQueryPool, std::uint32_t> next_query() {
    if (queries == pools.size() * kQueriesPerPool) {
      VkQueryPoolCreateInfo info{VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO};
      info.queryType = VK_QUERY_TYPE_TIMESTAMP;
      info.queryCount = kQueriesPerPool;
      VkQueryPool pool = VK_NULL_HANDLE;
      VKBLR_VK(vkCreateQueryPool(ctx->device, &info, nullptr, &pool));
      vkResetQueryPool(ctx->device, pool, 0, kQueriesPerPool);
      pools.push_back(pool);
    }
    const std::uint32_t q = queries++;
    return {pools[q / kQueriesPerPool], q % kQueriesPerPool};
  }

  void submit() {
    require(!pending, "Graph::submit: the previous submit of this graph has not been waited for");
    ctx->submit(cb, fence);
    pending = true;
  }

  // Starts (query 0) or ends (query 1) the batch's span.
  void write_span(std::uint32_t query) {
    if (query == 0 && span_pool == VK_NULL_HANDLE) {
      VkQueryPoolCreateInfo info{VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO};
      info.queryType = VK_QUERY_TYPE_TIMESTAMP;
      info.queryCount = 2;
      VKBLR_VK(vkCreateQueryPool(ctx->device, &info, nullptr, &span_pool));
      vkResetQueryPool(ctx->device, span_pool, 0, 2);
    }
    vkCmdWriteTimestamp2(cb, query == 0 ? VK_PIPELINE_STAGE_2_TOP_OF_PIPE_BIT : VK_PIPELINE_STAGE_2_ALL_COMMANDS_BIT,
                         span_pool, query);
  }

  void wait() {
    if (!pending) return;
    ctx->wait(fence);
    pending = false;
    if (span_pool != VK_NULL_HANDLE) {
      std::uint64_t span[2] = {};
      VKBLR_VK(vkGetQueryPoolResults(ctx->device, span_pool, 0, 2, sizeof span, span, sizeof(std::uint64_t),
                                     VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT));
      vkResetQueryPool(ctx->device, span_pool, 0, 2);
      if (span[1] > span[0]) {
        ctx->profiler.counters().device_busy_ns +=
            static_cast<std::uint64_t>(static_cast<double>(span[1] - span[0]) * ctx->caps.timestamp_period_ns);
      }
    }
    if (timed.empty()) return;
    std::vector<std::uint64_t> ticks(queries);
    for (std::size_t p = 0; p < pools.size(); ++p) {
      const std::uint32_t first = static_cast<std::uint32_t>(p) * kQueriesPerPool;
      const std::uint32_t n = std::min(kQueriesPerPool, queries - first);
      VKBLR_VK(vkGetQueryPoolResults(ctx->device, pools[p], 0, n, n * sizeof(std::uint64_t), ticks.data() + first,
                                     sizeof(std::uint64_t), VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT));
      vkResetQueryPool(ctx->device, pools[p], 0, kQueriesPerPool);
    }
    const std::uint64_t submit_no = ctx->profiler.counters().submits;
    for (std::size_t i = 0; i < timed.size(); ++i) {
      ctx->profiler.add_timed(timed[i].name, timed[i].tag, ticks[2 * i], ticks[2 * i + 1],
                              ctx->caps.timestamp_period_ns, submit_no);
    }
  }
};

}  // namespace detail

Transient make_transient(std::uint64_t bytes) {
  require(bytes > 0, "make_transient: 0 bytes");
  static std::atomic<std::uint64_t> next{1};
  return {next.fetch_add(1, std::memory_order_relaxed), bytes};
}

// ---- Graph -----------------------------------------------------------------

Graph::Graph() noexcept = default;
Graph::~Graph() = default;
Graph::Graph(Graph&&) noexcept = default;
Graph& Graph::operator=(Graph&&) noexcept = default;
Graph::Graph(std::unique_ptr<detail::RecordedBatch> batch) noexcept : batch_(std::move(batch)) {}

void Graph::run() {
  submit();
  wait();
}

void Graph::submit() {
  require(static_cast<bool>(batch_), "Graph::submit on an empty graph");
  batch_->submit();
}

void Graph::wait() {
  if (batch_) batch_->wait();
}

std::uint32_t Graph::dispatches() const noexcept { return batch_ ? batch_->dispatches : 0; }
std::uint32_t Graph::barriers() const noexcept { return batch_ ? batch_->barriers : 0; }
std::uint64_t Graph::transient_bytes() const noexcept {
  std::uint64_t bytes = 0;
  if (batch_) {
    for (const Buffer& b : batch_->transients) bytes += b.size();
  }
  return bytes;
}

// ---- Recorder --------------------------------------------------------------

namespace {

// A byte range of one buffer touched since the last barrier.
struct Range {
  std::uint64_t buffer_id;
  std::uint64_t begin;
  std::uint64_t end;
};

bool overlaps(const std::vector<Range>& set, const Range& r) {
  return std::any_of(set.begin(), set.end(), [&](const Range& s) {
    return s.buffer_id == r.buffer_id && s.begin < r.end && r.begin < s.end;
  });
}

void memory_barrier(VkCommandBuffer cb, VkPipelineStageFlags2 src_stage, VkAccessFlags2 src_access,
                    VkPipelineStageFlags2 dst_stage, VkAccessFlags2 dst_access) {
  VkMemoryBarrier2 mb{VK_STRUCTURE_TYPE_MEMORY_BARRIER_2};
  mb.srcStageMask = src_stage;
  mb.srcAccessMask = src_access;
  mb.dstStageMask = dst_stage;
  mb.dstAccessMask = dst_access;
  VkDependencyInfo dep{VK_STRUCTURE_TYPE_DEPENDENCY_INFO};
  dep.memoryBarrierCount = 1;
  dep.pMemoryBarriers = &mb;
  vkCmdPipelineBarrier2(cb, &dep);
}

constexpr VkPipelineStageFlags2 kWorkStages = VK_PIPELINE_STAGE_2_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_2_ALL_TRANSFER_BIT;
constexpr VkAccessFlags2 kWorkAccess = VK_ACCESS_2_SHADER_STORAGE_READ_BIT | VK_ACCESS_2_SHADER_STORAGE_WRITE_BIT |
                                       VK_ACCESS_2_TRANSFER_READ_BIT | VK_ACCESS_2_TRANSFER_WRITE_BIT;
constexpr VkAccessFlags2 kWorkWrites = VK_ACCESS_2_SHADER_STORAGE_WRITE_BIT | VK_ACCESS_2_TRANSFER_WRITE_BIT;

}  // namespace

// The transients of one op being recorded: Transient::id -> pool index.
struct OpTransients {
  std::vector<std::pair<std::uint64_t, std::size_t>> held;

  const std::size_t* find(std::uint64_t id) const {
    for (const auto& [held_id, index] : held) {
      if (held_id == id) return &index;
    }
    return nullptr;
  }
};

struct Recorder::State {
  // A transient buffer of the batch: held by an op being recorded, or free;
  // last touched when `last_epoch` barriers had been recorded.
  struct Pooled {
    Buffer buffer;
    bool held = false;
    std::uint64_t last_epoch = 0;
  };

  detail::ContextImpl* ctx;
  std::unique_ptr<detail::RecordedBatch> batch;
  std::vector<Range> reads;
  std::vector<Range> writes;
  std::string tag;
  VkPipeline bound = VK_NULL_HANDLE;
  std::vector<Pooled> pool;
  std::uint64_t epoch = 0;  // barriers recorded in this batch

  VkCommandBuffer cb() {
    if (!batch) {
      batch = std::make_unique<detail::RecordedBatch>(ctx);
      VkCommandBufferBeginInfo begin{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
      VKBLR_VK(vkBeginCommandBuffer(batch->cb, &begin));
      // entry barrier: after everything submitted before (other batches,
      // transfers), whatever they wrote is visible here
      memory_barrier(batch->cb, VK_PIPELINE_STAGE_2_ALL_COMMANDS_BIT, VK_ACCESS_2_MEMORY_WRITE_BIT, kWorkStages,
                     kWorkAccess);
      if (ctx->caps.timestamps) batch->write_span(0);
      bound = VK_NULL_HANDLE;
    }
    return batch->cb;
  }

  void barrier() {
    memory_barrier(cb(), kWorkStages, kWorkWrites, kWorkStages, kWorkAccess);
    ++batch->barriers;
    ++ctx->profiler.counters().barriers;
    ++epoch;
    reads.clear();
    writes.clear();
  }

  // Whether the accesses conflict with unbarriered work.
  bool conflicts(const Range* rs, const bool* is_write, std::size_t n) const {
    for (std::size_t i = 0; i < n; ++i) {
      if (overlaps(writes, rs[i]) || (is_write[i] && overlaps(reads, rs[i]))) return true;
    }
    return false;
  }

  // Emits a barrier when the accesses conflict with unbarriered work, then
  // records them.
  void track(const Range* rs, const bool* is_write, std::size_t n) {
    if (conflicts(rs, is_write, n)) barrier();
    for (std::size_t i = 0; i < n; ++i) (is_write[i] ? writes : reads).push_back(rs[i]);
  }

  void after_command() {
    if (ctx->barriers_all) barrier();
  }

  // A free pooled buffer of at least `bytes` that no unbarriered work
  // touched (any free one when a barrier comes before the command anyway),
  // the smallest such; else a new one. Held until release().
  std::size_t acquire(std::uint64_t bytes, bool barrier_coming) {
    std::size_t best = pool.size();
    for (std::size_t i = 0; i < pool.size(); ++i) {
      const Pooled& p = pool[i];
      if (p.held || p.buffer.size() < bytes || (!barrier_coming && p.last_epoch == epoch)) continue;
      if (best == pool.size() || p.buffer.size() < pool[best].buffer.size()) best = i;
    }
    if (best == pool.size()) pool.push_back({ctx->make_buffer(bytes, false, "vkblr.transient"), false, 0});
    pool[best].held = true;
    return best;
  }

  void release(OpTransients& op) {
    for (const auto& [id, index] : op.held) pool[index].held = false;
    op.held.clear();
  }

  // Records one dispatch of an op whose transients `op` holds (nullptr: a
  // dispatch that binds none).
  void record(const Dispatch& d, OpTransients* op);
};

void Recorder::State::record(const Dispatch& d, OpTransients* op) {
  require(d.kernel != nullptr, "Recorder::add: dispatch '{}' has no kernel", d.name);
  const detail::Kernel& k = *d.kernel;
  k.check(d);
  for (int i = 0; i < 3; ++i) {
    require(d.groups[i] <= ctx->caps.max_workgroup_count[i], "{}: {} workgroups along axis {} exceed the device's {}",
            d.name, d.groups[i], i, ctx->caps.max_workgroup_count[i]);
  }
  if (d.groups[0] == 0 || d.groups[1] == 0 || d.groups[2] == 0) return;  // nothing to do
  const Caps& caps = ctx->caps;
  const auto& slots = k.interface().bindings;
  require(slots.size() <= kMaxBindings, "{}: kernel {} has too many bindings", d.name, k.name());
  for (std::uint32_t i = 0; i < d.binding_count; ++i) {
    const Binding& b = d.bindings[i];
    require(b.offset % caps.min_storage_buffer_offset_alignment == 0,
            "{}: binding {} offset {} is not a multiple of the device's storage alignment {}", d.name, b.slot,
            b.offset, caps.min_storage_buffer_offset_alignment);
    require(b.size <= caps.max_storage_buffer_range, "{}: binding {} spans {} bytes, the device allows {}", d.name,
            b.slot, b.size, caps.max_storage_buffer_range);
  }
  VkCommandBuffer cb = this->cb();

  // The bound buffers: the bindings' own, or the transients the op holds.
  // Transients it does not hold yet are placed after the hazard check of the
  // rest: a barrier that comes anyway lets them take any free buffer.
  std::array<VkBuffer, kMaxBindings> handles{};
  std::array<Range, kMaxBindings> ranges{};
  std::array<bool, kMaxBindings> is_write{};
  std::array<bool, kMaxBindings> pending{};
  std::array<std::size_t, kMaxBindings> pool_index{};  // a transient binding's buffer in `pool`
  std::array<Range, kMaxBindings> placed{};
  std::array<bool, kMaxBindings> placed_write{};
  std::uint32_t n_placed = 0;
  auto place = [&](std::uint32_t i, const Buffer& buffer) {
    handles[i] = detail::from_handle<VkBuffer>(buffer.vk_handle());
    ranges[i] = {buffer.id(), d.bindings[i].offset, d.bindings[i].offset + d.bindings[i].size};
  };
  for (std::uint32_t i = 0; i < d.binding_count; ++i) {
    const Binding& b = d.bindings[i];
    is_write[i] = vkblr::writes(b.access);
    if (b.transient == 0) {
      handles[i] = detail::from_handle<VkBuffer>(b.buffer);
      ranges[i] = {b.buffer_id, b.offset, b.offset + b.size};
    } else if (const std::size_t* held = op ? op->find(b.transient) : nullptr) {
      pool_index[i] = *held;
      place(i, pool[*held].buffer);
    } else {
      pending[i] = true;
      continue;
    }
    placed[n_placed] = ranges[i];
    placed_write[n_placed++] = is_write[i];
  }
  const bool barrier_coming = conflicts(placed.data(), placed_write.data(), n_placed);
  for (std::uint32_t i = 0; i < d.binding_count; ++i) {
    if (!pending[i]) continue;
    const Binding& b = d.bindings[i];
    require(op != nullptr, "Recorder: dispatch '{}' binds a transient outside an op", d.name);
    if (const std::size_t* held = op->find(b.transient)) {  // bound twice by this dispatch
      pool_index[i] = *held;
    } else {
      pool_index[i] = acquire(b.offset + b.size, barrier_coming);
      op->held.push_back({b.transient, pool_index[i]});
    }
    place(i, pool[pool_index[i]].buffer);
  }
  track(ranges.data(), is_write.data(), d.binding_count);
  for (std::uint32_t i = 0; i < d.binding_count; ++i) {
    if (d.bindings[i].transient != 0) pool[pool_index[i]].last_epoch = epoch;
  }

  // Descriptors: every slot the kernel declares; unbound ones get the dummy.
  std::array<VkDescriptorBufferInfo, kMaxBindings> infos{};
  std::array<VkWriteDescriptorSet, kMaxBindings> writes_ds{};
  std::uint32_t n = 0;
  for (const auto& slot : slots) {
    VkDescriptorBufferInfo& info = infos[n];
    info = {detail::from_handle<VkBuffer>(ctx->dummy().vk_handle()), 0, VK_WHOLE_SIZE};
    for (std::uint32_t i = 0; i < d.binding_count; ++i) {
      if (d.bindings[i].slot == slot.slot) info = {handles[i], ranges[i].begin, d.bindings[i].size};
    }
    VkWriteDescriptorSet& w = writes_ds[n];
    w = {VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
    w.dstBinding = slot.slot;
    w.descriptorCount = 1;
    w.descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    w.pBufferInfo = &info;
    ++n;
  }

  const bool timed = ctx->profiler.enabled() && caps.timestamps;
  if (timed) {
    auto [pool_q, q] = batch->next_query();
    vkCmdWriteTimestamp2(cb, VK_PIPELINE_STAGE_2_TOP_OF_PIPE_BIT, pool_q, q);
  }
  if (bound != k.pipeline()) {
    vkCmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_COMPUTE, k.pipeline());
    bound = k.pipeline();
  }
  if (n > 0) vkCmdPushDescriptorSetKHR(cb, VK_PIPELINE_BIND_POINT_COMPUTE, k.layout(), 0, n, writes_ds.data());
  if (d.push_size > 0) vkCmdPushConstants(cb, k.layout(), VK_SHADER_STAGE_COMPUTE_BIT, 0, d.push_size, d.push.data());
  vkCmdDispatch(cb, d.groups[0], d.groups[1], d.groups[2]);
  if (timed) {
    auto [pool_q, q] = batch->next_query();
    vkCmdWriteTimestamp2(cb, VK_PIPELINE_STAGE_2_ALL_COMMANDS_BIT, pool_q, q);
    batch->timed.push_back({d.name, tag});
  }
  ++batch->dispatches;
  ++ctx->profiler.counters().dispatches;
  after_command();
}

Recorder::Recorder(Context& ctx) : s_(std::make_unique<State>()) {
  s_->ctx = &detail::ContextAccess::impl(ctx);
}
Recorder::~Recorder() = default;

Recorder& Recorder::add(const Dispatch& d) {
  for (std::uint32_t i = 0; i < d.binding_count; ++i) {
    require(d.bindings[i].transient == 0,
            "Recorder::add: dispatch '{}' binds a transient; record its whole Ops (add(Ops) or parallel)", d.name);
  }
  s_->record(d, nullptr);
  return *this;
}

Recorder& Recorder::add(const Ops& ops) {
  OpTransients op;
  for (const Dispatch& d : ops) s_->record(d, &op);
  s_->release(op);
  return *this;
}

Recorder& Recorder::parallel(std::span<const Branch> branches) {
  const std::string outer = s_->tag;
  std::size_t steps = 0;
  for (const Branch& b : branches) steps = std::max(steps, b.size());
  for (std::size_t t = 0; t < steps; ++t) {
    std::vector<const TaggedOps*> ops;  // step t of every branch, in order
    for (const Branch& b : branches) {
      if (t < b.size()) {
        for (const TaggedOps& o : b[t]) ops.push_back(&o);
      }
    }
    std::vector<OpTransients> held(ops.size());
    std::size_t passes = 0;
    for (const TaggedOps* o : ops) passes = std::max(passes, o->ops.size());
    for (std::size_t pass = 0; pass < passes; ++pass) {
      for (std::size_t i = 0; i < ops.size(); ++i) {
        const Ops& own = ops[i]->ops;
        if (pass >= own.size()) continue;
        s_->tag = ops[i]->tag.empty() ? outer : ops[i]->tag;
        s_->record(own[pass], &held[i]);
        if (pass + 1 == own.size()) s_->release(held[i]);
      }
    }
  }
  s_->tag = outer;
  return *this;
}

Recorder& Recorder::fill(const Buffer& dst, std::uint32_t word, std::uint64_t offset, std::uint64_t bytes) {
  require(static_cast<bool>(dst), "Recorder::fill: empty buffer");
  if (bytes == kWholeBuffer) bytes = dst.size() - std::min(offset, dst.size());
  require(offset <= dst.size() && bytes <= dst.size() - offset, "Recorder::fill: {} bytes at {} outside {} bytes",
          bytes, offset, dst.size());
  require(offset % 4 == 0 && bytes % 4 == 0, "Recorder::fill: offset {} and size {} must be multiples of 4", offset,
          bytes);
  if (bytes == 0) return *this;
  VkCommandBuffer cb = s_->cb();
  const std::uint64_t at = dst.offset() + offset;
  const Range r{dst.id(), at, at + bytes};
  const bool w = true;
  s_->track(&r, &w, 1);
  vkCmdFillBuffer(cb, detail::from_handle<VkBuffer>(dst.vk_handle()), at, bytes, word);
  s_->after_command();
  return *this;
}

Recorder& Recorder::copy(const Buffer& src, const Buffer& dst, std::uint64_t bytes, std::uint64_t src_offset,
                         std::uint64_t dst_offset) {
  require(src && dst, "Recorder::copy: empty buffer");
  if (bytes == kWholeBuffer) bytes = std::min(src.size() - std::min(src_offset, src.size()), dst.size() - std::min(dst_offset, dst.size()));
  require(src_offset <= src.size() && bytes <= src.size() - src_offset && dst_offset <= dst.size() &&
              bytes <= dst.size() - dst_offset,
          "Recorder::copy: {} bytes from {} (of {}) to {} (of {}) out of range", bytes, src_offset, src.size(),
          dst_offset, dst.size());
  const std::uint64_t from = src.offset() + src_offset, to = dst.offset() + dst_offset;
  require(src.id() != dst.id() || from + bytes <= to || to + bytes <= from,
          "Recorder::copy: source and destination ranges overlap");
  if (bytes == 0) return *this;
  VkCommandBuffer cb = s_->cb();
  const Range rs[2] = {{src.id(), from, from + bytes}, {dst.id(), to, to + bytes}};
  const bool ws[2] = {false, true};
  s_->track(rs, ws, 2);
  const VkBufferCopy region{from, to, bytes};
  vkCmdCopyBuffer(cb, detail::from_handle<VkBuffer>(src.vk_handle()), detail::from_handle<VkBuffer>(dst.vk_handle()),
                  1, &region);
  s_->after_command();
  return *this;
}

Recorder& Recorder::barrier() {
  s_->barrier();
  return *this;
}

Recorder& Recorder::tag(std::string name) {
  s_->tag = std::move(name);
  return *this;
}

std::uint32_t Recorder::dispatches() const noexcept { return s_->batch ? s_->batch->dispatches : 0; }
std::uint32_t Recorder::barriers() const noexcept { return s_->batch ? s_->batch->barriers : 0; }
std::uint64_t Recorder::transient_bytes() const noexcept {
  std::uint64_t bytes = 0;
  for (const State::Pooled& p : s_->pool) bytes += p.buffer.size();
  return bytes;
}
bool Recorder::empty() const noexcept { return !s_->batch; }

void Recorder::run() {
  Graph g = finish();
  if (g) g.run();
}

Graph Recorder::finish() {
  if (!s_->batch) return Graph();
  if (s_->batch->span_pool != VK_NULL_HANDLE) s_->batch->write_span(1);
  // exit barrier: results visible to host reads of mapped buffers
  memory_barrier(s_->batch->cb, kWorkStages, kWorkWrites, VK_PIPELINE_STAGE_2_HOST_BIT, VK_ACCESS_2_HOST_READ_BIT);
  VKBLR_VK(vkEndCommandBuffer(s_->batch->cb));
  s_->reads.clear();
  s_->writes.clear();
  s_->tag.clear();
  for (State::Pooled& p : s_->pool) s_->batch->transients.push_back(std::move(p.buffer));
  s_->pool.clear();
  s_->epoch = 0;
  return Graph(std::move(s_->batch));
}

}  // namespace vkblr
