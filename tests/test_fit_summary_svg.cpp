// The chart of a manifest run (manifest/summary_svg.hpp): its panel
// captions never run into each other or into the rows, whatever the
// numbers they show.
#include <catch2/catch_test_macros.hpp>
#include <regex>
#include <string>
#include <vector>

#include "vkblr-fit/manifest/summary_svg.hpp"

namespace {

struct SvgText {
  double x = 0, y = 0;
  std::string anchor;
  bool bold = false;
  std::string content;
};

std::vector<SvgText> texts(const std::string& svg) {
  static const std::regex element(R"re(<text x="([-0-9.]+)" y="([-0-9.]+)" text-anchor="([a-z]+)"([^>]*)>([^<]*)</text>)re");
  std::vector<SvgText> out;
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), element); it != std::sregex_iterator(); ++it) {
    const std::smatch& m = *it;
    out.push_back({std::stod(m[1]), std::stod(m[2]), m[3], m[4].str().find("bold") != std::string::npos, m[5]});
  }
  return out;
}

// A wide upper bound of the drawn width at 11 user units: 0.75 em a
// character, more than any sans-serif's average over lower case, digits
// and punctuation.
double wide_width(const SvgText& t) { return static_cast<double>(t.content.size()) * 11 * 0.75; }

vkblr::fit::LayerRow fitted(const std::string& name, std::uint32_t rank, double init, double trained) {
  vkblr::fit::LayerRow row;
  row.name = name;
  row.shape = {2816, 1024, rank, 2};
  row.init.output = init;
  row.trained.output = trained;
  return row;
}

}  // namespace

TEST_CASE("summary chart: the panel captions never overlap", "[fit]") {
  // the figures of the run whose caption ran into the next ("0 to
  // 0.80Bits per weight"), then numbers as long as %.3g makes them
  const std::vector<std::pair<double, std::uint32_t>> cases = {{0.8, 352}, {1.23e-300, 32}, {9.99e+300, 1024}};
  for (const auto& [error, rank] : cases) {
    CAPTURE(error, rank);
    const std::vector<vkblr::fit::LayerRow> rows = {fitted("model.layers.0.mlp.gate_proj.weight", rank, error, error / 2),
                                                    fitted("model.layers.0.mlp.down_proj.weight", 32, error / 3, 0)};
    const std::vector<SvgText> all = texts(vkblr::fit::manifest_summary_svg(rows, "a model"));
    // the captions: the bold titles and the lines under them, left-aligned
    // above the first row (the layer names, right-aligned, sit at each
    // row's top + 13)
    double bpw_left = 0, first_row = 1e9;
    for (const SvgText& t : all) {
      if (t.bold && t.content.find("bits per weight") == 0) bpw_left = t.x;
      if (t.anchor == "end") first_row = std::min(first_row, t.y);
    }
    REQUIRE(bpw_left > 0);
    REQUIRE(first_row < 1e9);
    std::vector<SvgText> error_caption, bpw_caption;
    for (const SvgText& t : all) {
      if (t.anchor != "start" || t.y >= first_row - 13) continue;  // the title, a row's label
      (t.x < bpw_left ? error_caption : bpw_caption).push_back(t);
    }
    REQUIRE(!error_caption.empty());
    REQUIRE(!bpw_caption.empty());
    for (const SvgText& t : error_caption) {
      CAPTURE(t.content);
      CHECK(t.x + wide_width(t) < bpw_left);  // ends before the next panel's caption begins
    }
    for (const SvgText& t : bpw_caption) {
      CAPTURE(t.content);
      CHECK(t.x + wide_width(t) <= 960);  // inside the chart
    }
    // the lowest caption line sits above the first row (its band starts at
    // first_row - 13)
    double lowest = 0;
    for (const SvgText& t : error_caption) lowest = std::max(lowest, t.y);
    for (const SvgText& t : bpw_caption) lowest = std::max(lowest, t.y);
    CHECK(lowest + 4 <= first_row - 13);
  }
}
