// spirv_reflect.hpp — the interface a compute module declares, read from its
// SPIR-V words: storage-buffer bindings (set 0) with whether the shader may
// read or write each, the push-constant block size and specialization ids.
// Kernel creation checks op builders against it.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace vkblr::detail {

struct ReflectedBinding {
  std::uint32_t slot = 0;
  bool writable = true;  // no NonWritable decoration
  bool readable = true;  // no NonReadable decoration
};

struct ReflectedModule {
  std::vector<ReflectedBinding> bindings;  // sorted by slot
  std::uint32_t push_size = 0;             // bytes; 0 = no push constants
  std::vector<std::uint32_t> spec_ids;     // sorted
};

// Throws vkblr::Error naming `name` when the words are not a compute module
// vkblr can bind (bad header, a descriptor that is not a storage buffer of
// set 0, ...).
ReflectedModule reflect_spirv(std::span<const std::uint32_t> words, const std::string& name);

}  // namespace vkblr::detail
