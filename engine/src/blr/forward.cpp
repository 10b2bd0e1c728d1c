// blr_forward, blr_stage_inputs, blr_forward_staged.
#include <algorithm>

#include "../ops/op_util.hpp"
#include "path_gemm.hpp"
#include "vkblr/blr.hpp"
#include "vkblr/gemm.hpp"
#include "vkblr/ops/blr_lane.hpp"
#include "vkblr/ops/cvt.hpp"
#include "vkblr/ops/scale.hpp"

namespace vkblr {
namespace {

// A path's forward steps, in order (Recorder::parallel).
enum Step : std::size_t { kStage, kA, kStageA, kC, kSteps };

void check_call(const char* op, const BlrLayer& layer, const BlrScratch& s, std::uint32_t ntok) {
  layer.check(op);
  detail::dim(op, "ntok", ntok);
  require(ntok <= s.ntok, "{}: ntok = {} exceeds the scratch's {}", op, ntok, s.ntok);
  require(s.a.size() == layer.paths.size(), "{}: scratch made for {} paths, the layer has {}", op, s.a.size(),
          layer.paths.size());
}

// The branches of paths [first, first + lanes) of the forward after each
// path's input is staged (xin[p], or the lane's xh staged here when xin is
// empty): one per path, on its lane's transients.
std::vector<Branch> path_branches(Context& ctx, const BlrLayer& layer, BlrScratch& s, const Buffer* x,
                                  std::span<const Buffer* const> xin, std::uint32_t ntok, std::size_t first) {
  const auto [m, n, r] = std::array{layer.m, layer.n, layer.r};
  const std::size_t np = layer.paths.size();
  const auto paths = static_cast<std::uint32_t>(np);
  ops::BlrShared& sh = *s.shared;
  std::vector<Branch> group;
  for (std::size_t p = first; p < std::min(np, first + sh.lanes.size()); ++p) {
    const BlrPath& path = layer.paths[p];
    const ops::BlrLane& t = sh.lanes[p - first];
    Branch& st = group.emplace_back(kSteps);
    const Buffer* input = &t.xh;
    if (xin.empty()) {
      st[kStage].push_back({"", {ops::cvt_col(ctx, *x, path.g, t.xh, ntok, n, 1.0f)}});
    } else {
      input = xin[p];
    }
    // a = (x⊙g)·S_V: B[r][n] = S_Vᵀ, the bitmap [n][r/32] read transposed
    st[kA].push_back({"", gemm(ctx, *input, path.bits_v, GemmB::bits_t, s.a[p],
                               detail::path_gemm(ctx, paths, {.m = ntok, .n = r, .k = n}))});
    st[kStageA].push_back({"", {ops::cvt_col(ctx, s.a[p], path.l, t.xh, ntok, r, 1.0f)}});
    // c = (a⊙ℓ)·S_Uᵀ: B[m][r] = S_U, the bitmap's own rows
    st[kC].push_back({"", gemm(ctx, t.xh, path.bits_u, GemmB::bits_n, s.c[p],
                               detail::path_gemm(ctx, paths, {.m = ntok, .n = m, .k = r}))});
  }
  return group;
}

// y = Σ_p h_p⊙c_p in path order: paths 0 and 1 in one scale_acc2 (the
// rounding of two scale_accs), each further path added by a scale_acc.
void record_output(Recorder& rec, Context& ctx, const BlrLayer& layer, const BlrScratch& s, const Buffer& y,
                   std::uint32_t ntok) {
  const std::size_t np = layer.paths.size();
  std::size_t p = 0;
  if (np >= 2) {
    rec.add(ops::scale_acc2(ctx, s.c[0], layer.paths[0].h, s.c[1], layer.paths[1].h, y, ntok, layer.m));
    p = 2;
  }
  for (; p < np; ++p) rec.add(ops::scale_acc(ctx, s.c[p], layer.paths[p].h, y, ntok, layer.m, p > 0));
}

// The forward after each path's input is staged: paths in groups of the
// shared lanes, each group's paths side by side; then y.
void forward_paths(Recorder& rec, Context& ctx, const BlrLayer& layer, BlrScratch& s, const Buffer* x,
                   std::span<const Buffer* const> xin, const Buffer& y, std::uint32_t ntok) {
  for (std::size_t first = 0; first < layer.paths.size(); first += s.shared->lanes.size()) {
    rec.parallel(path_branches(ctx, layer, s, x, xin, ntok, first));
  }
  record_output(rec, ctx, layer, s, y, ntok);
}

}  // namespace

void blr_forward(Recorder& rec, Context& ctx, const BlrLayer& layer, BlrScratch& s, const Buffer& x, const Buffer& y,
                 std::uint32_t ntok) {
  check_call("blr_forward", layer, s, ntok);
  forward_paths(rec, ctx, layer, s, &x, {}, y, ntok);
}

void blr_forward_side_by_side(Recorder& rec, Context& ctx, std::span<const BlrForwardJob> jobs, std::uint32_t ntok) {
  const char* op = "blr_forward_side_by_side";
  bool together = true;
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    const BlrForwardJob& j = jobs[i];
    require(j.layer && j.scratch && j.x && j.y, "{}: job {} lacks a layer, scratch, x or y", op, i);
    check_call(op, *j.layer, *j.scratch, ntok);
    together = together && j.scratch->shared->lanes.size() >= j.layer->paths.size();
    for (std::size_t k = 0; k < i; ++k) {
      require(jobs[k].scratch->shared != j.scratch->shared && jobs[k].y != j.y,
              "{}: jobs {} and {} share transients or an output", op, k, i);
    }
  }
  if (!together) {  // a layer's paths take several groups: one layer after another
    for (const BlrForwardJob& j : jobs) forward_paths(rec, ctx, *j.layer, *j.scratch, j.x, {}, *j.y, ntok);
    return;
  }
  std::vector<Branch> all;
  for (const BlrForwardJob& j : jobs) {
    std::vector<Branch> group = path_branches(ctx, *j.layer, *j.scratch, j.x, {}, ntok, 0);
    all.insert(all.end(), std::make_move_iterator(group.begin()), std::make_move_iterator(group.end()));
  }
  rec.parallel(all);
  for (const BlrForwardJob& j : jobs) record_output(rec, ctx, *j.layer, *j.scratch, *j.y, ntok);
}

void blr_stage_inputs(Recorder& rec, Context& ctx, const BlrLayer& layer, const Buffer& x,
                      std::span<const Buffer* const> xin, std::uint32_t ntok) {
  layer.check("blr_stage_inputs");
  require(xin.size() == layer.paths.size(), "blr_stage_inputs: {} inputs for {} paths", xin.size(),
          layer.paths.size());
  for (std::size_t first = 0; first < xin.size(); first += 4) {
    std::vector<const Buffer*> cols;
    std::vector<const Buffer*> dsts;
    for (std::size_t p = first; p < std::min(xin.size(), first + 4); ++p) {
      cols.push_back(&layer.paths[p].g);
      dsts.push_back(xin[p]);
    }
    rec.add(ops::cvt_multi(ctx, x, cols, dsts, ntok, layer.n, 1.0f));
  }
}

void blr_forward_staged(Recorder& rec, Context& ctx, const BlrLayer& layer, BlrScratch& s,
                        std::span<const Buffer* const> xin, const Buffer& y, std::uint32_t ntok) {
  check_call("blr_forward_staged", layer, s, ntok);
  require(xin.size() == layer.paths.size(), "blr_forward_staged: {} inputs for {} paths", xin.size(),
          layer.paths.size());
  forward_paths(rec, ctx, layer, s, nullptr, xin, y, ntok);
}

}  // namespace vkblr
