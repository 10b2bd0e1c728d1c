// vkblr/buffer.hpp — a move-only storage buffer on the device.
//
// Buffers come from Context::buffer / host_buffer / upload; one VMA
// allocation each (VMA sub-allocates from large device blocks). write/read
// are synchronous host <-> device transfers through the context's staging
// memory (they wait for the device); inside a recorded batch use
// Recorder::fill / copy instead. A Buffer must not outlive its Context.
//
// view(offset, bytes) is a non-owning Buffer over a byte range of another:
// ops take it wherever they take a buffer (several parameter vectors that
// one optimizer dispatch updates as a concatenation, say). It shares the
// parent's id, so the Recorder tracks hazards on the exact bytes. A view
// must not outlive its parent.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <vector>

namespace vkblr {

namespace detail {
class ContextImpl;
}

inline constexpr std::uint64_t kWholeBuffer = std::numeric_limits<std::uint64_t>::max();

class Buffer {
 public:
  Buffer() noexcept = default;
  ~Buffer();
  Buffer(Buffer&& other) noexcept;
  Buffer& operator=(Buffer&& other) noexcept;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  explicit operator bool() const noexcept { return handle_ != 0; }
  // Bytes of this buffer (of the range, for a view).
  std::uint64_t size() const noexcept { return size_; }
  // Byte offset of the range in the underlying allocation (0 unless a view).
  std::uint64_t offset() const noexcept { return offset_; }
  // A non-owning view of [offset, offset + bytes) (bytes = kWholeBuffer: to
  // the end). Throws Error outside the buffer. The offset must suit the
  // device's storage-buffer alignment where the view is bound.
  Buffer view(std::uint64_t offset, std::uint64_t bytes = kWholeBuffer) const;
  bool is_view() const noexcept { return !owning_; }
  // Unique per allocation of a process (hazard tracking, profiling).
  std::uint64_t id() const noexcept { return id_; }
  // Host pointer of a host_buffer (nullptr for device buffers).
  void* mapped() const noexcept { return mapped_; }

  // Synchronous transfers of `bytes` at byte `offset`; throw Error when the
  // range is outside the buffer.
  void write(const void* data, std::uint64_t bytes, std::uint64_t offset = 0);
  void read(void* data, std::uint64_t bytes, std::uint64_t offset = 0) const;
  // Sets every 32-bit word of [offset, offset + bytes) to `word` (synchronous).
  void fill(std::uint32_t word, std::uint64_t offset = 0, std::uint64_t bytes = kWholeBuffer);

  // Direct access through mapped() to a host_buffer, with no copy: after a
  // batch that wrote [offset, offset + bytes) has finished, invalidate()
  // makes those writes visible to host reads of mapped(); after host writes
  // through mapped(), flush() makes them visible to batches submitted later.
  // (read/write do both themselves.) No-ops on host-coherent memory. Throw
  // Error for a device buffer or a range outside the buffer.
  void invalidate(std::uint64_t offset = 0, std::uint64_t bytes = kWholeBuffer) const;
  void flush(std::uint64_t offset = 0, std::uint64_t bytes = kWholeBuffer) const;

  template <class T>
  void upload(std::span<const T> values, std::uint64_t first = 0) {
    write(values.data(), values.size_bytes(), first * sizeof(T));
  }
  template <class T>
  void upload(const std::vector<T>& values, std::uint64_t first = 0) {
    upload(std::span<const T>(values), first);
  }
  // `count` elements from element `first`; count = kWholeBuffer: to the end.
  template <class T>
  std::vector<T> download(std::uint64_t count = kWholeBuffer, std::uint64_t first = 0) const {
    if (count == kWholeBuffer) count = size_ / sizeof(T) - std::min<std::uint64_t>(first, size_ / sizeof(T));
    std::vector<T> out(count);
    read(out.data(), count * sizeof(T), first * sizeof(T));
    return out;
  }

  // Library internals.
  std::uint64_t vk_handle() const noexcept { return handle_; }
  detail::ContextImpl* owner() const noexcept { return owner_; }
  void* vma_allocation() const noexcept { return allocation_; }
  Buffer(detail::ContextImpl* owner, std::uint64_t handle, void* allocation, void* mapped, std::uint64_t size,
         std::uint64_t id) noexcept
      : owner_(owner), handle_(handle), allocation_(allocation), mapped_(mapped), size_(size), id_(id), owning_(true) {}

 private:
  void release() noexcept;

  detail::ContextImpl* owner_ = nullptr;
  std::uint64_t handle_ = 0;  // VkBuffer
  void* allocation_ = nullptr;  // VmaAllocation
  void* mapped_ = nullptr;
  std::uint64_t size_ = 0;
  std::uint64_t id_ = 0;
  std::uint64_t offset_ = 0;
  bool owning_ = false;
};

}  // namespace vkblr
