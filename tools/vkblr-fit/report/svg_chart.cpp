#include "vkblr-fit/report/svg_chart.hpp"

#include <algorithm>
#include <cmath>
#include <format>
#include <vector>

#include "vkblr/file_io.hpp"

namespace vkblr::fit {
namespace {

constexpr double kWidth = 720, kHeight = 420;
constexpr double kLeft = 84, kRight = 24, kTop = 44, kBottom = 58;  // plot margins
constexpr double kPlotWidth = kWidth - kLeft - kRight, kPlotHeight = kHeight - kTop - kBottom;

bool on_log_axis(double v) { return std::isfinite(v) && v > 0; }

// A step between ticks of 1, 2 or 5 times a power of ten giving at most
// about `ticks` intervals over `span`.
double nice_step(double span, int ticks) {
  const double raw = span / ticks;
  const double power = std::pow(10.0, std::floor(std::log10(raw)));
  for (const double m : {1.0, 2.0, 5.0}) {
    if (m * power >= raw) return m * power;
  }
  return 10 * power;
}

// "1e-3", "0.01" ... for a decade 10^k.
std::string decade_label(int k) { return k >= -2 && k <= 3 ? std::format("{}", std::pow(10.0, k)) : std::format("1e{}", k); }

}  // namespace

std::string escape_xml(const std::string& text) {
  std::string out;
  for (const char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string log_chart_svg(const LogChart& chart) {
  std::vector<std::pair<double, double>> points;
  for (const auto& p : chart.points) {
    if (on_log_axis(p.second)) points.push_back(p);
  }
  std::vector<ChartLevel> levels;
  for (const ChartLevel& level : chart.levels) {
    if (on_log_axis(level.y)) levels.push_back(level);
  }
  // Axis ranges: x from 0 to the last point; whole decades around every
  // y drawn.
  double max_x = 1;
  double low = INFINITY, high = -INFINITY;
  for (const auto& [x, y] : points) {
    max_x = std::max(max_x, x);
    low = std::min(low, y);
    high = std::max(high, y);
  }
  for (const ChartLevel& level : levels) {
    low = std::min(low, level.y);
    high = std::max(high, level.y);
  }
  if (!(low <= high)) low = high = 1;  // nothing to draw: one decade around 1
  const int low_decade = static_cast<int>(std::floor(std::log10(low)));
  const int high_decade = std::max(static_cast<int>(std::ceil(std::log10(high))), low_decade + 1);
  const auto x_of = [&](double x) { return kLeft + kPlotWidth * x / max_x; };
  const auto y_of = [&](double y) {
    return kTop + kPlotHeight * (high_decade - std::log10(y)) / (high_decade - low_decade);
  };

  std::string svg = std::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\" "
      "font-family=\"sans-serif\" font-size=\"12\">\n"
      "<rect width=\"{0}\" height=\"{1}\" fill=\"white\"/>\n"
      "<text x=\"{2}\" y=\"24\" text-anchor=\"middle\" font-size=\"15\">{3}</text>\n",
      kWidth, kHeight, kWidth / 2, escape_xml(chart.title));

  // y grid: decades labelled, 2..9 faint (labelled too with label_minor).
  for (int k = low_decade; k <= high_decade; ++k) {
    const double y = y_of(std::pow(10.0, k));
    svg += std::format("<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#cccccc\"/>\n", kLeft, y,
                       kLeft + kPlotWidth, y);
    svg += std::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"end\">{}</text>\n", kLeft - 6, y + 4,
                       decade_label(k));
    for (int minor = 2; minor <= 9 && k < high_decade; ++minor) {
      const double ym = y_of(minor * std::pow(10.0, k));
      svg += std::format("<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#eeeeee\"/>\n", kLeft,
                         ym, kLeft + kPlotWidth, ym);
      if (chart.label_minor) {
        svg += std::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"end\" fill=\"#777777\">{}</text>\n",
                           kLeft - 6, ym + 4, std::format("{}", minor * std::pow(10.0, k)));
      }
    }
  }
  // x ticks.
  const double x_step = nice_step(max_x, 6);
  for (double s = 0; s <= max_x * (1 + 1e-9); s += x_step) {
    const double x = x_of(s);
    svg += std::format("<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{0:.1f}\" y2=\"{2:.1f}\" stroke=\"#333333\"/>\n", x,
                       kTop + kPlotHeight, kTop + kPlotHeight + 5);
    svg += std::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">{}</text>\n", x,
                       kTop + kPlotHeight + 19, escape_xml(chart.x_tick ? chart.x_tick(s) : std::format("{}", s)));
  }
  // Axes and their labels.
  svg += std::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#333333\"/>\n", kLeft,
                     kTop, kPlotWidth, kPlotHeight);
  svg += std::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">{}</text>\n", kLeft + kPlotWidth / 2,
                     kHeight - 14, escape_xml(chart.x_label));
  svg += std::format(
      "<text x=\"18\" y=\"{0:.1f}\" text-anchor=\"middle\" transform=\"rotate(-90 18 {0:.1f})\">{1}</text>\n",
      kTop + kPlotHeight / 2, escape_xml(chart.y_label));
  // The levels.
  for (const ChartLevel& level : levels) {
    const double y = y_of(level.y);
    svg += std::format(
        "<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"{}\" stroke-dasharray=\"6 4\"/>\n",
        kLeft, y, kLeft + kPlotWidth, y, escape_xml(level.color));
    svg += std::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"end\" fill=\"{}\">{} {:.4g}</text>\n",
                       kLeft + kPlotWidth - 4, y - 5, escape_xml(level.color), escape_xml(level.label), level.y);
  }
  // The curve.
  if (!points.empty()) {
    svg += "<polyline fill=\"none\" stroke=\"#1f77b4\" stroke-width=\"1.5\" points=\"";
    for (std::size_t i = 0; i < points.size(); ++i) {
      svg += std::format("{}{:.1f},{:.1f}", i ? " " : "", x_of(points[i].first), y_of(points[i].second));
    }
    svg += "\"/>\n";
    const double last = points.back().second;
    svg += std::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"end\" fill=\"#1f77b4\">{} {:.4g}</text>\n",
                       kLeft + kPlotWidth - 4, std::min(y_of(last) + 16, kTop + kPlotHeight - 4),
                       escape_xml(chart.curve_label), last);
  }
  svg += "</svg>\n";
  return svg;
}

std::string error_chart_svg(std::span<const CurvePoint> curve, double init_error, const std::string& title) {
  LogChart chart;
  chart.title = title;
  chart.x_label = "step";
  chart.y_label = "held-out relative output error (log scale)";
  for (const CurvePoint& p : curve) chart.points.emplace_back(static_cast<double>(p.step), p.held_out_error);
  chart.levels.push_back({"init", init_error});
  return log_chart_svg(chart);
}

void write_error_chart(const std::string& path, std::span<const CurvePoint> curve, double init_error,
                       const std::string& title) {
  write_file_atomic(path, error_chart_svg(curve, init_error, title));
}

}  // namespace vkblr::fit
