// vkblr/gemm_policy.hpp — the switches over vkblr's GEMM kernel, tile and
// split-K choices: one value per Context, fixed when it is created.
//
// A Context takes ContextOptions::gemm_policy when it is set, whole (no
// field of the environment is merged into it), else gemm_policy_from_env()
// once, at creation; Context::gemm_policy() is the one in effect. The GEMM
// builders read it from the context and never from the environment, so a
// policy holds for every GEMM recorded on that context, and two contexts of
// one process may differ.
//
// The default policy lets the device and the shape decide. Fields other
// than the default change kernels, tiles or split-K only: the bitmap and
// word-group switches keep every result bit; coopmat, coopmat2, a tile and
// split-K change the f32 summation order (docs/kernels.md). The policy is
// part of what MPI ranks must agree on (vkblr/mpi.hpp) and vkblr-info
// prints it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "vkblr/gemm_tile.hpp"

namespace vkblr {

struct GemmPolicy {
  // The tile of every f16 GEMM whose caller passes none (gemm(),
  // gemm_tile_for), on whichever kernel it runs (`kernel` is ignored).
  // Unset: chosen by device and shape. A tile the device cannot run throws
  // when a GEMM uses it (check_gemm_tile). Environment:
  // VKBLR_GEMM_TILE=bm,bn,bk,wm,wn,stages[,prefetch].
  std::optional<GemmTile> tile;
  // Split-K layers of every f16 GEMM whose shape leaves k_splits = 0:
  // 1..64 (1: none). Unset: chosen by shape (gemm_splits_for).
  // Environment: VKBLR_GEMM_SPLITK=s.
  std::optional<std::uint32_t> k_splits;
  // Subgroup-scope KHR cooperative matrices where the device has them;
  // false: the plain kernel everywhere (and no coopmat2). Environment:
  // VKBLR_MM_COOPMAT=0 (1: the default).
  bool coopmat = true;
  // The workgroup-scope VK_NV_cooperative_matrix2 kernel where the device
  // has it and `coopmat` is on; not the default (slower for the bitmap
  // modes where measured, docs/benchmarks.md). Environment:
  // VKBLR_MM_COOPMAT2=1 (0: the default).
  bool coopmat2 = false;
  // Bitmaps expanded to ±1 while the GEMM stages them; false: an `expand`
  // dispatch into an f16 plane first, then the plane GEMM (the same bits).
  // Environment: VKBLR_MM_BITS=0 (1: the default).
  bool bitmap_staging = true;
  // bits_n GEMMs on the cooperative-matrix kernel read a row's bitmap words
  // four K tiles at a time (one 16-byte load) where K allows; false: a word
  // per K tile (the same bits). Environment: VKBLR_MM_WORD_GROUPS=0 (1: the
  // default).
  bool word_groups = true;
  // The tile of every f32 GEMM whose caller passes none (ops::gemm_f32,
  // ops::gemm_f32_tile_for). Unset: chosen by device and shape. A tile the
  // device cannot run throws when a GEMM uses it (ops::check_gemm_f32_tile).
  // Environment: VKBLR_GEMM_F32_TILE=bm,bn,bk,tm,tn.
  std::optional<ops::GemmF32Tile> f32_tile;

  bool operator==(const GemmPolicy&) const = default;
};

// A tile as VKBLR_GEMM_TILE and vkblr-bench's --tile write it,
// "bm,bn,bk,wm,wn,stages[,prefetch]" (unsigned decimal fields; kernel
// plain: the caller sets it). Throws vkblr::Error "expected
// bm,bn,bk,wm,wn,stages[,prefetch] (unsigned decimal numbers), got 'TEXT'"
// for any other text. Whether a device can run the tile is checked where a
// GEMM uses it (check_gemm_tile).
GemmTile parse_gemm_tile(std::string_view text);
// "bm,bn,bk,tm,tn" likewise (VKBLR_GEMM_F32_TILE, vkblr-bench's
// --f32-tile); checked for a device by ops::check_gemm_f32_tile.
ops::GemmF32Tile parse_gemm_f32_tile(std::string_view text);

// The policy the environment variables above give; a variable unset or
// empty leaves its field at the default. Throws vkblr::Error naming the
// variable and its value when one is malformed (a tile of the wrong number
// of fields or not numbers, split-K outside 1..64, a switch other than 0
// or 1).
GemmPolicy gemm_policy_from_env();

// Throws vkblr::Error naming the field when `policy` has a value no GEMM
// accepts (k_splits outside 1..64). Whether a tile fits the device is
// checked when a GEMM uses it. Context creation calls it.
void check_gemm_policy(const GemmPolicy& policy);

// Every field of `policy` as (name, value) in declaration order, values as
// the environment writes them or "auto" for a choice left to vkblr:
// ("tile", "auto"), ("k_splits", "3"), ("coopmat", "1"), ... What
// vkblr-info prints and the MPI ranks compare, field by field.
std::vector<std::pair<std::string, std::string>> gemm_policy_fields(const GemmPolicy& policy);
// The same on one line: "tile auto, k_splits 3, coopmat 1, ...".
std::string to_string(const GemmPolicy& policy);

}  // namespace vkblr
