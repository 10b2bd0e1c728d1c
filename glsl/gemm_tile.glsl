// gemm_tile.glsl — the GEMM's global -> shared staging, shared by the
// cooperative-matrix and the plain kernel.
//
// A workgroup computes a BM × BN block of out over K in tiles of BK. Per K
// tile the workgroup copies
//   A: act[m0 .. m0+BM)[k0 .. k0+BK)  -> A region, rows of SA = BK + 8 halves
//   B: plane / bits_n: B[n0 .. n0+BN)[k0 .. k0+BK) -> B region, rows of SB = BK + 8
//      bits_t: Bᵀ[k0 .. k0+BK)[n0 .. n0+BN)        -> B region, rows of SBT = BN + 8
// with 16-byte global loads (uvec4 = 8 halves) and, for bitmaps, one 32-bit
// word read per 32 signs (per 16 for bits_n when BK = 16) and expanded to
// ±1 halves while stored (no plane in device memory). Rows are padded by 16
// bytes so that the 16-byte fragment loads of 8 consecutive rows hit
// distinct shared-memory banks. Elements
// past m, n or k are staged as zeros (a bitmap word out of range is never
// expanded: zero is not a sign).
//
// The includer declares: spec constants WG_SIZE, BM, BN, BK, B_MODE,
// STAGES; buffers act (uvec4), plane (uvec4), bits (uvec4: four words
// each, the faster of the loads measured, docs/benchmarks.md); and
// includes gemm.h for pc.

const uint SA = BK + 8;   // A row stride, halves
const uint SB = BK + 8;   // B row stride (plane, bits_n), halves
const uint SBT = BN + 8;  // B row stride (bits_t), halves
const uint A_TILE_VECS = BM * SA / 8;
const uint B_TILE_VECS = (B_MODE == GEMM_B_BITS_T) ? (BK * SBT / 8) : (BN * SB / 8);
const uint A_LOADS = BM * BK / 8 / WG_SIZE;  // uvec4 per invocation (C++ checks divisibility)
const uint B_PLANE_LOADS = BN * BK / 8 / WG_SIZE;
// bits_n reads KCHUNK signs of a row per word (all 32 unless BK = 16);
// bits_t always 32 of a K row.
const uint KCHUNK = (B_MODE == GEMM_B_BITS_N && BK < 32) ? BK : 32;
const uint B_WORDS = BN * BK / KCHUNK;       // bitmap words read per tile
const uint B_WORD_LOADS = (B_WORDS + WG_SIZE - 1) / WG_SIZE;
const uint B_LOADS = (B_MODE == GEMM_B_PLANE) ? B_PLANE_LOADS : B_WORD_LOADS;

// One array for both operands (stage s: A at s·STAGE_VECS, B after it), so
// the epilogue can reuse all of it.
const uint STAGE_VECS = A_TILE_VECS + B_TILE_VECS;
shared uvec4 smem[STAGES * STAGE_VECS];

// Registers holding the next tile between its global load and its store;
// set 1 holds the tile after it where the includer prefetches two tiles
// ahead (every call names its set with a literal, so the arrays stay in
// registers).
uvec4 a_regs[A_LOADS];
uvec4 b_regs[B_LOADS];  // bitmaps: .x = word, .y = 1 when in range
uvec4 a_regs1[A_LOADS];
uvec4 b_regs1[B_LOADS];

// Word `index` of the bitmap.
uint bits_word(uint index) { return bits[index >> 2][index & 3u]; }

// Eight signs (bits 0..7 of `b`, 1 = +1) as eight f16 ±1: 0x3c00 | sign << 15.
uvec4 expand8(uint b) {
  const uint nb = ~b;
  return uvec4(0x3c003c00u | ((nb & 1u) << 15) | ((nb & 2u) << 30),
               0x3c003c00u | ((nb & 4u) << 13) | ((nb & 8u) << 28),
               0x3c003c00u | ((nb & 16u) << 11) | ((nb & 32u) << 26),
               0x3c003c00u | ((nb & 64u) << 9) | ((nb & 128u) << 24));
}

void load_a(uint m0, uint k0, uint set) {
  const uint tid = gl_LocalInvocationIndex;
  [[unroll]] for (uint i = 0; i < A_LOADS; ++i) {
    const uint v = tid + i * WG_SIZE;
    const uint row = v / (BK / 8);
    const uint col = k0 + (v % (BK / 8)) * 8;
    const uvec4 v4 = (m0 + row < pc.m && col < pc.k) ? act[((m0 + row) * pc.lda + col) / 8] : uvec4(0);
    if (set == 0u) a_regs[i] = v4; else a_regs1[i] = v4;
  }
}

void load_b(uint n0, uint k0, uint set) {
  const uint tid = gl_LocalInvocationIndex;
  if (B_MODE == GEMM_B_PLANE) {
    [[unroll]] for (uint i = 0; i < B_PLANE_LOADS; ++i) {
      const uint v = tid + i * WG_SIZE;
      const uint row = v / (BK / 8);
      const uint col = k0 + (v % (BK / 8)) * 8;
      const uvec4 v4 = (n0 + row < pc.n && col < pc.k) ? plane[((n0 + row) * pc.ldb + col) / 8] : uvec4(0);
      if (set == 0u) b_regs[i] = v4; else b_regs1[i] = v4;
    }
  } else {
    [[unroll]] for (uint i = 0; i < B_WORD_LOADS; ++i) {
      const uint v = tid + i * WG_SIZE;
      bool ok = v < B_WORDS;
      uint index = 0;
      uint shift = 0;
      if (B_MODE == GEMM_B_BITS_N) {  // tile row = n, KCHUNK k per word
        const uint n = n0 + v / (BK / KCHUNK);
        const uint kk = k0 + (v % (BK / KCHUNK)) * KCHUNK;
        ok = ok && n < pc.n && kk < pc.k;
        index = n * pc.ldb + kk / 32;
        shift = kk % 32;
      } else {  // tile row = k, 32 n per word
        const uint kk = k0 + v / (BN / 32);
        const uint n = n0 + (v % (BN / 32)) * 32;
        ok = ok && kk < pc.k && n < pc.n;
        index = kk * pc.ldb + n / 32;
      }
      const uvec4 w4 = uvec4(ok ? bits_word(index) >> shift : 0u, ok ? 1u : 0u, 0u, 0u);
      if (set == 0u) b_regs[i] = w4; else b_regs1[i] = w4;
    }
  }
}

void load_tile(uint m0, uint n0, uint k0, uint set) {
  load_a(m0, k0, set);
  load_b(n0, k0, set);
}

// bits_n with WORD_GROUP = 4 (BK = 32, so one word per row and tile; the
// host sets it only where ldb and every layer's first word are multiples of
// 4): a row's words come four K tiles at a time, one 16-byte load, words
// w..w+3 (w a multiple of 4) of rows n0 + v into grp_next; the K loop moves
// grp_next to grp_cur every four tiles and take_word reads a tile's word
// from either, always by a literal component.
uvec4 grp_cur[B_WORD_LOADS];
uvec4 grp_next[B_WORD_LOADS];

void load_word_group(uint n0, uint w) {
  const uint tid = gl_LocalInvocationIndex;
  [[unroll]] for (uint i = 0; i < B_WORD_LOADS; ++i) {
    const uint v = tid + i * WG_SIZE;
    const uint n = n0 + v;
    grp_next[i] = (v < B_WORDS && n < pc.n && w < pc.ldb) ? bits[(n * pc.ldb + w) >> 2] : uvec4(0);
  }
}

void advance_word_group() {
  [[unroll]] for (uint i = 0; i < B_WORD_LOADS; ++i) grp_cur[i] = grp_next[i];
}

// Register set `set` <- the words of the tile at k0: component `comp` of
// grp_next (from_next) or grp_cur.
void take_word(uint n0, uint k0, uint set, bool from_next, uint comp) {
  const uint tid = gl_LocalInvocationIndex;
  [[unroll]] for (uint i = 0; i < B_WORD_LOADS; ++i) {
    const uint v = tid + i * WG_SIZE;
    const bool ok = v < B_WORDS && n0 + v < pc.n && k0 < pc.k;
    const uint w = from_next ? grp_next[i][comp] : grp_cur[i][comp];
    const uvec4 w4 = uvec4(ok ? w : 0u, ok ? 1u : 0u, 0u, 0u);
    if (set == 0u) b_regs[i] = w4; else b_regs1[i] = w4;
  }
}

uint a_base_of(uint stage) { return stage * STAGE_VECS; }
uint b_base_of(uint stage) { return stage * STAGE_VECS + A_TILE_VECS; }

// Bitmaps: register set `set`'s words as ±1 halves (zeros where out of
// range), 8 halves per uvec4, KCHUNK halves per word.
uvec4 b_signs[B_WORD_LOADS][KCHUNK / 8];

void expand_b(uint set) {
  [[unroll]] for (uint i = 0; i < B_WORD_LOADS; ++i) {
    const uvec4 w4 = set == 0u ? b_regs[i] : b_regs1[i];
    const uint w = w4.x;
    const bool ok = w4.y != 0u;
    [[unroll]] for (uint q = 0; q < KCHUNK / 8; ++q) b_signs[i][q] = ok ? expand8(w >> (8 * q)) : uvec4(0);
  }
}

void store_a(uint stage, uint set) {
  const uint tid = gl_LocalInvocationIndex;
  const uint a_base = a_base_of(stage);
  [[unroll]] for (uint i = 0; i < A_LOADS; ++i) {
    const uint v = tid + i * WG_SIZE;
    smem[a_base + ((v / (BK / 8)) * SA + (v % (BK / 8)) * 8) / 8] = set == 0u ? a_regs[i] : a_regs1[i];
  }
}

// The plane from register set `set`; bitmaps from b_signs (expand_b first).
void store_b(uint stage, uint set) {
  const uint tid = gl_LocalInvocationIndex;
  const uint b_base = b_base_of(stage);
  if (B_MODE == GEMM_B_PLANE) {
    [[unroll]] for (uint i = 0; i < B_PLANE_LOADS; ++i) {
      const uint v = tid + i * WG_SIZE;
      smem[b_base + ((v / (BK / 8)) * SB + (v % (BK / 8)) * 8) / 8] = set == 0u ? b_regs[i] : b_regs1[i];
    }
  } else {
    [[unroll]] for (uint i = 0; i < B_WORD_LOADS; ++i) {
      const uint v = tid + i * WG_SIZE;
      if (v < B_WORDS) {
        uint first;  // first half of the word's signs in the B region
        if (B_MODE == GEMM_B_BITS_N) {
          first = (v / (BK / KCHUNK)) * SB + (v % (BK / KCHUNK)) * KCHUNK;
        } else {
          first = (v / (BN / 32)) * SBT + (v % (BN / 32)) * 32;
        }
        [[unroll]] for (uint q = 0; q < KCHUNK / 8; ++q) smem[b_base + first / 8 + q] = b_signs[i][q];
      }
    }
  }
}

// A's vectors stored first, then every bitmap word expanded, then B stored:
// the fastest of the orders measured (expanding and storing 8 signs at a
// time, expanding before A's stores; docs/benchmarks.md, GEMM section).
void store_tile(uint stage, uint set) {
  store_a(stage, set);
  if (B_MODE != GEMM_B_PLANE) expand_b(set);
  store_b(stage, set);
}
