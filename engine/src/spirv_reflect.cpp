#include "spirv_reflect.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "vkblr/error.hpp"

namespace vkblr::detail {
namespace {

// Opcodes, decorations and storage classes of the SPIR-V spec that matter here.
enum : std::uint32_t {
  OpTypeInt = 21,
  OpTypeFloat = 22,
  OpTypeVector = 23,
  OpTypeMatrix = 24,
  OpTypeStruct = 30,
  OpTypePointer = 32,
  OpVariable = 59,
  OpDecorate = 71,
  OpMemberDecorate = 72,
};
enum : std::uint32_t {
  DecSpecId = 1,
  DecNonWritable = 24,
  DecNonReadable = 25,
  DecBinding = 33,
  DecDescriptorSet = 34,
  DecOffset = 35,
};
enum : std::uint32_t {
  ScUniformConstant = 0,
  ScUniform = 2,
  ScPushConstant = 9,
  ScStorageBuffer = 12,
};

struct Decorations {
  std::optional<std::uint32_t> binding, set, spec_id;
  bool non_writable = false, non_readable = false;
};

}  // namespace

ReflectedModule reflect_spirv(std::span<const std::uint32_t> words, const std::string& name) {
  require(words.size() >= 5 && words[0] == 0x07230203u, "kernel {}: not a SPIR-V module", name);
  std::map<std::uint32_t, Decorations> dec;
  std::map<std::pair<std::uint32_t, std::uint32_t>, Decorations> member_dec;
  std::map<std::pair<std::uint32_t, std::uint32_t>, std::uint32_t> member_offset;
  std::map<std::uint32_t, std::uint32_t> scalar_bytes;              // int/float/vector/matrix id -> bytes
  std::map<std::uint32_t, std::vector<std::uint32_t>> struct_members;  // struct id -> member type ids
  std::map<std::uint32_t, std::pair<std::uint32_t, std::uint32_t>> pointers;  // id -> (storage class, pointee)
  std::vector<std::pair<std::uint32_t, std::uint32_t>> variables;             // (id, pointer type)

  for (std::size_t i = 5; i < words.size();) {
    const std::uint32_t count = words[i] >> 16;
    const std::uint32_t op = words[i] & 0xffffu;
    require(count > 0 && i + count <= words.size(), "kernel {}: truncated SPIR-V instruction", name);
    const std::uint32_t* w = &words[i];
    switch (op) {
      case OpDecorate:
        if (count >= 3) {
          Decorations& d = dec[w[1]];
          if (w[2] == DecBinding && count >= 4) d.binding = w[3];
          if (w[2] == DecDescriptorSet && count >= 4) d.set = w[3];
          if (w[2] == DecSpecId && count >= 4) d.spec_id = w[3];
          if (w[2] == DecNonWritable) d.non_writable = true;
          if (w[2] == DecNonReadable) d.non_readable = true;
        }
        break;
      case OpMemberDecorate:
        if (count >= 4) {
          Decorations& d = member_dec[{w[1], w[2]}];
          if (w[3] == DecNonWritable) d.non_writable = true;
          if (w[3] == DecNonReadable) d.non_readable = true;
          if (w[3] == DecOffset && count >= 5) member_offset[{w[1], w[2]}] = w[4];
        }
        break;
      case OpTypeInt:
      case OpTypeFloat:
        scalar_bytes[w[1]] = w[2] / 8;
        break;
      case OpTypeVector:
      case OpTypeMatrix:
        if (scalar_bytes.count(w[2])) scalar_bytes[w[1]] = scalar_bytes[w[2]] * w[3];
        break;
      case OpTypeStruct:
        struct_members[w[1]] = std::vector<std::uint32_t>(w + 2, w + count);
        break;
      case OpTypePointer:
        pointers[w[1]] = {w[2], w[3]};
        break;
      case OpVariable:
        variables.emplace_back(w[2], w[1]);
        break;
      default:
        break;
    }
    i += count;
  }

  ReflectedModule out;
  std::set<std::uint32_t> slots;
  for (auto [id, ptr_type] : variables) {
    auto p = pointers.find(ptr_type);
    if (p == pointers.end()) continue;
    const auto [storage, pointee] = p->second;
    const Decorations& d = dec[id];
    if (storage == ScPushConstant) {
      const auto members = struct_members.find(pointee);
      require(members != struct_members.end(), "kernel {}: push constants are not a block", name);
      std::uint32_t end = 0;
      for (std::uint32_t m = 0; m < members->second.size(); ++m) {
        const auto bytes = scalar_bytes.find(members->second[m]);
        require(bytes != scalar_bytes.end(), "kernel {}: push-constant member {} is not a scalar or vector", name, m);
        end = std::max(end, member_offset[{pointee, m}] + bytes->second);
      }
      out.push_size = end;
    } else if (storage == ScStorageBuffer || storage == ScUniform || storage == ScUniformConstant) {
      require(storage == ScStorageBuffer, "kernel {}: variable %{} is a descriptor that is not a storage buffer", name,
              id);
      require(d.binding.has_value() && d.set.value_or(0) == 0, "kernel {}: storage buffer %{} is not in set 0", name,
              id);
      require(slots.insert(*d.binding).second, "kernel {}: binding {} declared twice", name, *d.binding);
      ReflectedBinding b;
      b.slot = *d.binding;
      bool all_nw = true, all_nr = true;
      const auto members = struct_members.find(pointee);
      if (members != struct_members.end()) {
        for (std::uint32_t m = 0; m < members->second.size(); ++m) {
          const auto md = member_dec.find({pointee, m});
          all_nw = all_nw && md != member_dec.end() && md->second.non_writable;
          all_nr = all_nr && md != member_dec.end() && md->second.non_readable;
        }
      } else {
        all_nw = all_nr = false;
      }
      b.writable = !(d.non_writable || all_nw);
      b.readable = !(d.non_readable || all_nr);
      out.bindings.push_back(b);
    }
  }
  for (const auto& [id, d] : dec) {
    if (d.spec_id) out.spec_ids.push_back(*d.spec_id);
  }
  std::sort(out.spec_ids.begin(), out.spec_ids.end());
  std::sort(out.bindings.begin(), out.bindings.end(),
            [](const ReflectedBinding& a, const ReflectedBinding& b) { return a.slot < b.slot; });
  return out;
}

}  // namespace vkblr::detail
