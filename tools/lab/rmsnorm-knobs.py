#!/usr/bin/env python3
"""Adds the environment knobs of tools/lab/rmsnorm-sweep.sh to engine/src/ops/rmsnorm.cpp in the working
tree (a lab build only; never commit the result; `git checkout engine/src/ops/rmsnorm.cpp` undoes it):
  VKBLR_LAB_RMS_WG         the backward row pass's workgroup (default 512 invocations)
  VKBLR_LAB_RMS_INV_LOG2   log2 of the invocations that cover the batch (default 17)
  VKBLR_LAB_RMS_DW_COLS, VKBLR_LAB_RMS_DW_SLICES   rmsnorm_dw's columns per workgroup and slices (8, 32)
  VKBLR_LAB_RMS_ROWS_ONLY  1: the row pass alone (its time; dw is not computed)
Then tools/lab/gpu-kit.sh --old <rev>, and the call runs tools/lab/rmsnorm-sweep.sh."""
p = 'engine/src/ops/rmsnorm.cpp'
s = open(p).read()
def rep(a, b):
    global s
    assert s.count(a) == 1, a
    s = s.replace(a, b)
rep('#include <tuple>\n', '#include <tuple>\n#include <cstdlib>\n')
rep("constexpr std::uint32_t kBwdWorkgroup = 512;",
    "std::uint64_t lab_knob(const char* n, std::uint64_t d) { const char* v = std::getenv(n); return v ? std::strtoull(v, nullptr, 10) : d; }\n"
    "const std::uint32_t kBwdWorkgroup = static_cast<std::uint32_t>(lab_knob(\"VKBLR_LAB_RMS_WG\", 512));")
rep("constexpr std::uint64_t kBwdInvocations = std::uint64_t{1} << 17;",
    "const std::uint64_t kBwdInvocations = std::uint64_t{1} << lab_knob(\"VKBLR_LAB_RMS_INV_LOG2\", 17);")
rep("constexpr std::uint32_t kDwCols = VKBLR_RMSNORM_DW_COLS, kDwSlices = VKBLR_RMSNORM_DW_SLICES;",
    "const std::uint32_t kDwCols = static_cast<std::uint32_t>(lab_knob(\"VKBLR_LAB_RMS_DW_COLS\", VKBLR_RMSNORM_DW_COLS)), "
    "kDwSlices = static_cast<std::uint32_t>(lab_knob(\"VKBLR_LAB_RMS_DW_SLICES\", VKBLR_RMSNORM_DW_SLICES));")
rep("  return {rows, finish};", "  if (lab_knob(\"VKBLR_LAB_RMS_ROWS_ONLY\", 0)) return {rows};\n  return {rows, finish};")
open(p, 'w').write(s)
