// sign_commit.glsl — flips of one workgroup of the element grid written to
// the bitmaps and counted (sign_update.comp, sign_apply.comp).
//
// A workgroup of VKBLR_ELT_WG invocations covers VKBLR_ELT_WG / 32 whole
// bitmap words (n is a multiple of 32). Each invocation marks its flip in a
// shared mask (an integer atomic OR: the result does not depend on the
// order); then one invocation per word owns it: XORs the mask into BITS,
// ORs it into FLIPPED (the signs that flipped before) and counts flips and
// oscillations; one global integer atomic per counter and workgroup. No
// float atomics, no two invocations write a word: deterministic.
//
// Include after declaring the buffers `bits`, `flipped` and `counters`.
// Every invocation of the workgroup must call sign_commit_begin and
// sign_commit_end (they hold barriers), in-range or not.
#ifndef VKBLR_SIGN_COMMIT_GLSL
#define VKBLR_SIGN_COMMIT_GLSL

#define SIGN_WORDS_PER_WG (VKBLR_ELT_WG / 32)

shared uint flip_mask[SIGN_WORDS_PER_WG];
shared uint wg_flips;
shared uint wg_osc;
shared uint wg_in_band;

void sign_commit_begin() {
  const uint lid = gl_LocalInvocationIndex;
  if (lid < SIGN_WORDS_PER_WG) flip_mask[lid] = 0;
  if (lid == 0) {
    wg_flips = 0;
    wg_osc = 0;
    wg_in_band = 0;
  }
  barrier();
}

// The sign of this invocation (local index) flips.
void sign_mark_flip() {
  const uint lid = gl_LocalInvocationIndex;
  atomicOr(flip_mask[lid / 32], 1u << (lid % 32));
}

// Applies the workgroup's flips; in_band: counted in wg_in_band by the caller.
void sign_commit_end() {
  const uint lid = gl_LocalInvocationIndex;
  barrier();
  if (lid < SIGN_WORDS_PER_WG) {
    const uint word = sign_workgroup() * SIGN_WORDS_PER_WG + lid;
    const uint mask = flip_mask[lid];
    if (word < pc.n / 32 && mask != 0) {
      bits[word] ^= mask;
      const uint before = flipped[word];
      flipped[word] = before | mask;
      atomicAdd(wg_flips, uint(bitCount(mask)));
      atomicAdd(wg_osc, uint(bitCount(mask & before)));
    }
  }
  barrier();
  if (lid == 0) {
    if (wg_flips != 0) atomicAdd(counters[VKBLR_SIGN_FLIPS], wg_flips);
    if (wg_osc != 0) atomicAdd(counters[VKBLR_SIGN_OSC], wg_osc);
    if (wg_in_band != 0) atomicAdd(counters[VKBLR_SIGN_IN_BAND], wg_in_band);
  }
}

#endif
