// summary_svg.hpp — the chart of a manifest run (<out>.svg), read at a
// glance: one row per layer, in the manifest's order, with its name, its
// held-out output error (the init's as a pale bar, the trained layer's as a
// dark one over it, on one linear axis from 0 for every layer) and its bits
// per weight (a bar, and the model's bpw as a dashed line); a skipped
// layer's row says why it was skipped.
#pragma once

#include <span>
#include <string>

#include "vkblr-fit/manifest/manifest_report.hpp"

namespace vkblr::fit {

// The SVG document: 960 user units wide, 18 per row. Names are cut to 60
// bytes; every text is escaped. Each panel's caption (a bold title, then
// the axis's range) is wrapped to the panel's width, so captions never run
// into each other whatever the numbers; the rows start below the longest.
std::string manifest_summary_svg(std::span<const LayerRow> rows, const std::string& title);

}  // namespace vkblr::fit
