// svg_chart.hpp — the learning-curve chart of a vkblr-fit run as plain SVG:
// held-out relative output error against step, log y axis with decade
// ticks and labels, a linear step axis, the init level as a dashed line.
#pragma once

#include <span>
#include <string>

#include "vkblr-fit/report/curve.hpp"

namespace vkblr::fit {

// `text` with &, <, > and " as XML entities (for text and attribute
// values of SVG documents).
std::string escape_xml(const std::string& text);

// The SVG document (720×420 user units). Points whose error is not finite
// and positive cannot sit on a log axis and are left out; an init level
// that is not finite and positive draws no line. The title is escaped.
std::string error_chart_svg(std::span<const CurvePoint> curve, double init_error, const std::string& title);

// error_chart_svg written atomically to `path`; throws vkblr::Error naming
// the path when it cannot be written.
void write_error_chart(const std::string& path, std::span<const CurvePoint> curve, double init_error,
                       const std::string& title);

}  // namespace vkblr::fit
