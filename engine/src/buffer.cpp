#include "vkblr/buffer.hpp"

#include <algorithm>
#include <utility>

#include "context_impl.hpp"
#include "vkblr/error.hpp"

namespace vkblr {

Buffer::~Buffer() { release(); }

Buffer::Buffer(Buffer&& other) noexcept
    : owner_(std::exchange(other.owner_, nullptr)),
      handle_(std::exchange(other.handle_, 0)),
      allocation_(std::exchange(other.allocation_, nullptr)),
      mapped_(std::exchange(other.mapped_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      id_(std::exchange(other.id_, 0)),
      offset_(std::exchange(other.offset_, 0)),
      owning_(std::exchange(other.owning_, false)) {}

Buffer& Buffer::operator=(Buffer&& other) noexcept {
  if (this != &other) {
    release();
    owner_ = std::exchange(other.owner_, nullptr);
    handle_ = std::exchange(other.handle_, 0);
    allocation_ = std::exchange(other.allocation_, nullptr);
    mapped_ = std::exchange(other.mapped_, nullptr);
    size_ = std::exchange(other.size_, 0);
    id_ = std::exchange(other.id_, 0);
    offset_ = std::exchange(other.offset_, 0);
    owning_ = std::exchange(other.owning_, false);
  }
  return *this;
}

void Buffer::release() noexcept {
  if (owning_ && owner_ && handle_) owner_->destroy_buffer(handle_, allocation_);
  owner_ = nullptr;
  handle_ = 0;
  allocation_ = nullptr;
  mapped_ = nullptr;
  size_ = 0;
  id_ = 0;
  offset_ = 0;
  owning_ = false;
}

Buffer Buffer::view(std::uint64_t offset, std::uint64_t bytes) const {
  require(handle_ != 0, "Buffer::view of an empty buffer");
  if (bytes == kWholeBuffer) bytes = size_ - std::min(offset, size_);
  require(offset <= size_ && bytes <= size_ - offset && bytes > 0,
          "Buffer::view: {} bytes at offset {} outside a buffer of {} bytes", bytes, offset, size_);
  Buffer v;
  v.owner_ = owner_;
  v.handle_ = handle_;
  v.allocation_ = allocation_;
  v.mapped_ = mapped_ ? static_cast<char*>(mapped_) + offset : nullptr;
  v.size_ = bytes;
  v.id_ = id_;
  v.offset_ = offset_ + offset;
  v.owning_ = false;
  return v;
}

void Buffer::write(const void* data, std::uint64_t bytes, std::uint64_t offset) {
  require(owner_ != nullptr, "Buffer::write on an empty buffer");
  owner_->write(*this, data, bytes, offset);
}

void Buffer::read(void* data, std::uint64_t bytes, std::uint64_t offset) const {
  require(owner_ != nullptr, "Buffer::read on an empty buffer");
  owner_->read(*this, data, bytes, offset);
}

void Buffer::fill(std::uint32_t word, std::uint64_t offset, std::uint64_t bytes) {
  require(owner_ != nullptr, "Buffer::fill on an empty buffer");
  owner_->fill(*this, word, offset, bytes);
}

namespace {

// The VMA range of [offset, offset + bytes) of a mapped buffer (a view's
// offset added), after checking it.
std::pair<std::uint64_t, std::uint64_t> mapped_range(const Buffer& b, std::uint64_t offset, std::uint64_t bytes,
                                                     const char* what) {
  require(b.mapped() != nullptr, "{}: not a host_buffer", what);
  if (bytes == kWholeBuffer) bytes = b.size() - std::min(offset, b.size());
  require(offset <= b.size() && bytes <= b.size() - offset, "{}: {} bytes at offset {} outside a buffer of {} bytes",
          what, bytes, offset, b.size());
  return {b.offset() + offset, bytes};
}

}  // namespace

void Buffer::invalidate(std::uint64_t offset, std::uint64_t bytes) const {
  const auto [first, n] = mapped_range(*this, offset, bytes, "Buffer::invalidate");
  if (allocation_ == nullptr) return;  // imported host memory: host-coherent
  VKBLR_VK(vmaInvalidateAllocation(owner_->allocator, static_cast<VmaAllocation>(allocation_), first, n));
}

void Buffer::flush(std::uint64_t offset, std::uint64_t bytes) const {
  const auto [first, n] = mapped_range(*this, offset, bytes, "Buffer::flush");
  if (allocation_ == nullptr) return;  // imported host memory: host-coherent
  VKBLR_VK(vmaFlushAllocation(owner_->allocator, static_cast<VmaAllocation>(allocation_), first, n));
}

}  // namespace vkblr
