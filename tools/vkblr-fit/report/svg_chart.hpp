// svg_chart.hpp — learning-curve charts as plain SVG: a curve on a log y
// axis with decade ticks and labels, a linear x axis, and levels drawn as
// dashed lines. vkblr-fit's held-out relative output error against step
// (its init level) is one; vkblr-train's held-out perplexity against
// training tokens (the teacher's level) another.
#pragma once

#include <functional>
#include <span>
#include <string>
#include <vector>

#include "vkblr-fit/report/curve.hpp"

namespace vkblr::fit {

// `text` with &, <, > and " as XML entities (for text and attribute
// values of SVG documents).
std::string escape_xml(const std::string& text);

// A horizontal dashed line at y, labelled "<label> <y>" at the right.
struct ChartLevel {
  std::string label;
  double y = 0;
  std::string color = "#d62728";
};

struct LogChart {
  std::string title, x_label, y_label;
  std::vector<std::pair<double, double>> points;  // (x >= 0, y) in x order
  std::string curve_label = "trained";             // the last point is labelled "<curve_label> <y>"
  std::vector<ChartLevel> levels;
  // The x ticks' text (default: the shortest decimal); label_minor also
  // labels 2..9 × 10^k on the y axis (for curves that span little more
  // than a decade, such as perplexities).
  std::function<std::string(double)> x_tick;
  bool label_minor = false;
};

// The SVG document (720×420 user units). Points and levels whose y is not
// finite and positive cannot sit on a log axis and are left out. Texts are
// escaped.
std::string log_chart_svg(const LogChart& chart);

// vkblr-fit's chart: held-out relative output error against step, the
// init level as a red dashed line ("init"), the last point "trained".
std::string error_chart_svg(std::span<const CurvePoint> curve, double init_error, const std::string& title);

// error_chart_svg written atomically to `path`; throws vkblr::Error naming
// the path when it cannot be written.
void write_error_chart(const std::string& path, std::span<const CurvePoint> curve, double init_error,
                       const std::string& title);

}  // namespace vkblr::fit
