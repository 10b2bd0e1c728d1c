// context_impl.hpp — what a Context owns, for the library's own sources.
//
// Ownership: ContextImpl owns the instance, debug messenger, device, VMA
// allocator, command pool, pipeline cache, every Kernel it created, the
// staging buffer of synchronous transfers and a small dummy buffer bound to
// kernel slots an op leaves unbound. Destruction waits for the device.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "kernel.hpp"
#include "vk.hpp"
#include "vkblr/buffer.hpp"
#include "vkblr/context.hpp"
#include "vkblr/profiler.hpp"

namespace vkblr::detail {

class ContextImpl {
 public:
  explicit ContextImpl(const ContextOptions& options);
  ~ContextImpl();
  ContextImpl(const ContextImpl&) = delete;
  ContextImpl& operator=(const ContextImpl&) = delete;

  // Buffers. host_visible: persistently mapped (device-local if offered).
  Buffer make_buffer(std::uint64_t bytes, bool host_visible, std::string_view label);
  Buffer import_host_memory(void* pointer, std::uint64_t bytes, std::string_view label);
  void destroy_buffer(std::uint64_t handle, void* allocation) noexcept;

  // Synchronous transfers through the staging buffer.
  void write(const Buffer& dst, const void* data, std::uint64_t bytes, std::uint64_t offset);
  void read(const Buffer& src, void* data, std::uint64_t bytes, std::uint64_t offset);
  void fill(const Buffer& dst, std::uint32_t word, std::uint64_t offset, std::uint64_t bytes);

  // The cached pipeline of (id, spec constants, options); created on first use.
  const Kernel& kernel(KernelId id, std::span<const SpecConstant> spec = {}, const KernelOptions& options = {});
  // Constants with ids 0, 1, 2, ... in order.
  const Kernel& kernel(KernelId id, std::span<const std::uint32_t> spec_by_id, const KernelOptions& options = {});

  VkCommandBuffer allocate_command_buffer();
  void free_command_buffer(VkCommandBuffer cb) noexcept;
  VkFence create_fence();

  // What a recorded batch needs besides its commands: a command buffer, a
  // fence, and the two-timestamp query pool of its device time (null until
  // first used). Batches take them from here and give them back when they
  // end, so that a program running many small batches (the init's and the
  // rank curves' linear algebra) does not create and destroy three Vulkan
  // objects for each. Given back: the fence unsignalled, the command
  // buffer not pending (it is reset here), the query pool reset by its
  // user.
  struct BatchObjects {
    VkCommandBuffer cb = VK_NULL_HANDLE;
    VkFence fence = VK_NULL_HANDLE;
    VkQueryPool span_pool = VK_NULL_HANDLE;
  };
  BatchObjects take_batch_objects();
  void give_back_batch_objects(const BatchObjects& objects) noexcept;
  // Submits `cb` signalling `fence` (unsignalled); counts the submit.
  void submit(VkCommandBuffer cb, VkFence fence);
  void wait(VkFence fence);

  const Buffer& dummy() const noexcept { return dummy_; }

  void add_validation_message(std::string text);
  // The one message set aside during vkCreateDevice (Context::set_aside_validation_messages).
  void set_aside_validation_message(std::string text);
  std::vector<std::string> set_aside_validation_messages() const;
  bool creating_device = false;  // vkCreateDevice is running
  std::vector<std::string> validation_messages() const;
  std::size_t validation_message_count() const;
  void clear_validation_messages();

  VkInstance instance = VK_NULL_HANDLE;
  VkDebugUtilsMessengerEXT messenger = VK_NULL_HANDLE;
  // VK_EXT_debug_utils's destroy command of this context's own instance
  // (vk.hpp: volk's global pointer follows the last instance loaded);
  // null without validation.
  PFN_vkDestroyDebugUtilsMessengerEXT destroy_messenger = nullptr;
  VkPhysicalDevice physical = VK_NULL_HANDLE;
  VkDevice device = VK_NULL_HANDLE;
  std::uint32_t queue_family = 0;
  VkQueue queue = VK_NULL_HANDLE;
  VmaAllocator allocator = VK_NULL_HANDLE;
  // VK_EXT_external_memory_host's query, of this device (null without it)
  PFN_vkGetMemoryHostPointerPropertiesEXT get_host_pointer_properties = nullptr;
  VkCommandPool command_pool = VK_NULL_HANDLE;
  VkPipelineCache pipeline_cache = VK_NULL_HANDLE;
  std::string pipeline_cache_file;     // empty: not persisted
  std::string pipeline_cache_warning;  // the one warning printed about the file; empty: none
  Caps caps;
  Profiler profiler;
  bool validation = false;
  bool barriers_all = false;  // VKBLR_BARRIERS=all
  GemmPolicy gemm_policy;     // ContextOptions::gemm_policy, else the environment's

 private:
  void release() noexcept;
  void create_instance(const ContextOptions& options);
  void pick_device(const ContextOptions& options);
  void create_device(bool want_kernel_statistics);
  // The pipeline cache file is optional: a problem reading or writing it
  // (pipeline_cache_file.hpp) is printed once on stderr, naming the file
  // and the reason, and the context runs on without the file.
  void load_pipeline_cache(const ContextOptions& options);
  void save_pipeline_cache() noexcept;
  // Prints "vkblr: warning: pipeline cache <file> <before><problem><after>"
  // and keeps it in pipeline_cache_warning, the first time only.
  void warn_pipeline_cache(std::string_view before, std::string_view problem, std::string_view after) noexcept;
  void ensure_staging(std::uint64_t bytes);
  // One-shot transfer command buffer: begin, record via `fn`, submit, wait.
  template <class Fn>
  void transfer(Fn&& fn);

  std::map<std::vector<std::uint32_t>, std::unique_ptr<Kernel>> kernels_;
  Buffer staging_;
  Buffer dummy_;
  VkCommandBuffer transfer_cb_ = VK_NULL_HANDLE;
  VkFence transfer_fence_ = VK_NULL_HANDLE;
  std::vector<BatchObjects> spare_batches_;  // at most kSpareBatches
  std::uint64_t next_buffer_id_ = 1;
  // import_host_memory's buffers (by handle) and the memory each imported
  std::unordered_map<std::uint64_t, VkDeviceMemory> imported_memory_;
  bool pipeline_cache_warned_ = false;
  mutable std::mutex messages_mutex_;
  std::vector<std::string> messages_;
  std::vector<std::string> set_aside_;
};

// Capabilities of a physical device (no logical device needed).
Caps query_caps(VkPhysicalDevice physical);
bool has_device_extension(VkPhysicalDevice physical, const char* name);

// The state behind a Context, for the engine's code (the public headers do
// not expose it).
struct ContextAccess {
  static ContextImpl& impl(Context& ctx) noexcept { return *ctx.impl_; }
};

}  // namespace vkblr::detail
