#include "vkblr-fit/manifest/summary_svg.hpp"

#include <algorithm>
#include <cmath>
#include <format>
#include <vector>

#include "vkblr/io/bpw.hpp"
#include "vkblr/io/excerpt.hpp"
#include "vkblr-fit/io_names.hpp"
#include "vkblr-fit/report/svg_chart.hpp"

namespace vkblr::fit {
namespace {

constexpr double kWidth = 960, kRow = 18, kBottom = 28;
constexpr double kNameRight = 380;                     // names end here (right-aligned)
constexpr double kErrorLeft = 392, kErrorWidth = 300;  // the error panel (its labels end before the next)
constexpr double kBpwLeft = 752, kBpwWidth = 180;      // the bpw panel
constexpr double kGap = 12;                            // between a panel's caption and the next panel
constexpr double kFontSize = 11, kCaptionLine = 14, kCaptionTop = 44;

double finite_or_zero(double v) { return std::isfinite(v) && v > 0 ? v : 0.0; }

// An upper bound of the width of `text` at 11 user units: 0.7 em a
// character (0.75 em in bold), wider than a sans-serif's average over the
// lower case, digits and punctuation of the captions.
double text_width(const std::string& text, bool bold) {
  return static_cast<double>(text.size()) * kFontSize * (bold ? 0.75 : 0.7);
}

// `text` cut at spaces into lines no wider than `width` (a word wider than
// that stays whole on a line of its own, cut to fit).
std::vector<std::string> wrap(const std::string& text, double width, bool bold) {
  std::vector<std::string> lines;
  std::string line;
  std::size_t at = 0;
  while (at < text.size()) {
    const std::size_t space = std::min(text.find(' ', at), text.size());
    const std::string word = text.substr(at, space - at);
    at = space + 1;
    const std::string longer = line.empty() ? word : line + " " + word;
    if (text_width(longer, bold) <= width || line.empty()) {
      line = longer;
    } else {
      lines.push_back(line);
      line = word;
    }
  }
  if (!line.empty()) lines.push_back(line);
  for (std::string& l : lines) {
    while (l.size() > 1 && text_width(l, bold) > width) l.pop_back();
  }
  return lines;
}

// A panel's caption: a bold title and a plain detail, each wrapped to the
// width from `left` to `right`.
struct Caption {
  double left, right;
  std::vector<std::string> title, detail;
  std::size_t lines() const { return title.size() + detail.size(); }
};

Caption caption(double left, double right, const std::string& title, const std::string& detail) {
  return {left, right, wrap(title, right - left, true), wrap(detail, right - left, false)};
}

std::string text(double x, double y, const std::string& anchor, const std::string& content,
                 const std::string& extra = {}) {
  return std::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"{}\"{}>{}</text>\n", x, y, anchor, extra,
                     escape_xml(content));
}

std::string bar(double x, double y, double width, const char* fill) {
  return std::format("<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" fill=\"{}\"/>\n", x, y,
                     std::max(width, 0.0), kRow - 6, fill);
}

}  // namespace

std::string manifest_summary_svg(std::span<const LayerRow> rows, const std::string& title) {
  const ManifestTotals totals = manifest_totals(rows);
  double max_error = 0, max_bpw = 0;
  for (const LayerRow& row : rows) {
    if (!row.skipped.empty()) continue;
    max_error = std::max({max_error, finite_or_zero(row.init.output), finite_or_zero(row.trained.output)});
    max_bpw = std::max(max_bpw, bits_per_weight(row.shape, row.scale_dtype).total);
  }
  if (max_error == 0) max_error = 1;
  if (max_bpw == 0) max_bpw = 1;
  const Caption captions[] = {
      caption(kErrorLeft, kBpwLeft - kGap, "held-out output error",
              std::format("init (pale), trained (dark); 0 to {:.3g}", max_error)),
      caption(kBpwLeft, kWidth - 4, "bits per weight", std::format("0 to {:.3g}; the model's (dashed line)", max_bpw))};
  std::size_t caption_lines = 0;
  for (const Caption& c : captions) caption_lines = std::max(caption_lines, c.lines());
  const double top = kCaptionTop + kCaptionLine * static_cast<double>(caption_lines);
  const double height = top + kRow * static_cast<double>(rows.size()) + kBottom;
  std::string svg = std::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\" "
      "font-family=\"sans-serif\" font-size=\"11\">\n"
      "<rect width=\"{0}\" height=\"{1}\" fill=\"white\"/>\n",
      kWidth, height);
  svg += text(kWidth / 2, 22, "middle", title, " font-size=\"15\"");
  for (const Caption& c : captions) {
    double y = kCaptionTop;
    for (const std::string& line : c.title) {
      svg += text(c.left, y, "start", line, " font-weight=\"bold\"");
      y += kCaptionLine;
    }
    for (const std::string& line : c.detail) {
      svg += text(c.left, y, "start", line);
      y += kCaptionLine;
    }
  }
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const LayerRow& row = rows[i];
    const double y = top + kRow * static_cast<double>(i);
    if (i % 2 == 0) {
      svg += std::format("<rect x=\"0\" y=\"{:.1f}\" width=\"{}\" height=\"{}\" fill=\"#f4f4f4\"/>\n", y, kWidth, kRow);
    }
    svg += text(kNameRight, y + 13, "end", excerpt(row.name, 60));
    if (!row.skipped.empty()) {
      svg += text(kErrorLeft, y + 13, "start", "skipped: " + excerpt(row.skipped, 120),
                  " fill=\"#a0522d\" font-style=\"italic\"");
      continue;
    }
    const double init = finite_or_zero(row.init.output), trained = finite_or_zero(row.trained.output);
    svg += bar(kErrorLeft, y + 3, kErrorWidth * init / max_error, "#aec7e8");
    svg += bar(kErrorLeft, y + 3, kErrorWidth * trained / max_error, "#1f77b4");
    svg += text(kErrorLeft + kErrorWidth * std::max(init, trained) / max_error + 4, y + 13, "start",
                std::format("{:.4g}", row.trained.output));
    const double bpw = bits_per_weight(row.shape, row.scale_dtype).total;
    svg += bar(kBpwLeft, y + 3, kBpwWidth * bpw / max_bpw * 0.85, "#2ca02c");
    svg += text(kBpwLeft + kBpwWidth * bpw / max_bpw * 0.85 + 4, y + 13, "start", std::format("{:.3f}", bpw));
  }
  if (totals.fitted > 0) {
    const double x = kBpwLeft + kBpwWidth * totals.bpw / max_bpw * 0.85;
    svg += std::format("<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{0:.1f}\" y2=\"{2:.1f}\" stroke=\"#d62728\" "
                       "stroke-dasharray=\"4 3\"/>\n",
                       x, top - 6, top + kRow * static_cast<double>(rows.size()));
  }
  svg += text(kWidth / 2, height - 10, "middle",
              std::format("{} layers: {} fitted ({} from an earlier run), {} skipped; model {:.4f} bpw (dashed line) "
                          "over {} weights",
                          totals.layers, totals.fitted, totals.resumed, totals.skipped, totals.bpw, totals.weights));
  svg += "</svg>\n";
  return svg;
}

}  // namespace vkblr::fit
