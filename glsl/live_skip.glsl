// live_skip.glsl — the skip word of a live-scalars block (ops::LiveScalars:
// lr, step, skip). A training step's non-finite guard sets it on the GPU;
// every dispatch that changes optimizer state returns at once when it is
// set, so a bad step changes nothing. The includer declares push constants
// `pc` with `live` and `live_word` and a readonly `scalars` array.
#ifndef VKBLR_LIVE_SKIP_GLSL
#define VKBLR_LIVE_SKIP_GLSL
bool step_skipped() { return pc.live != 0u && scalars[pc.live_word + 2] != 0u; }
#endif
