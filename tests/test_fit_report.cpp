// vkblr-fit's outputs for people: the JSON report, the SVG learning curve
// and the progress bar / lines.
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "support/fit_files.hpp"
#include "vkblr-fit/report/progress.hpp"
#include "vkblr-fit/report/report.hpp"
#include "vkblr-fit/report/svg_chart.hpp"

using namespace vkblr::fit;
using Catch::Matchers::ContainsSubstring;

namespace {

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto pos = text.find(what); pos != std::string::npos; pos = text.find(what, pos + 1)) ++n;
  return n;
}

// What `print` writes through a FILE*.
template <class F>
std::string captured(F&& print) {
  std::FILE* f = std::tmpfile();
  REQUIRE(f != nullptr);
  print(f);
  std::fflush(f);
  std::rewind(f);
  std::string out;
  for (int c = std::fgetc(f); c != EOF; c = std::fgetc(f)) out += static_cast<char>(c);
  std::fclose(f);
  return out;
}

}  // namespace

TEST_CASE("report: JSON fields, non-finite numbers as null, atomic file", "[fit]") {
  FitReport r;
  r.tool_version = "0.1.0";
  r.command_line = {"vkblr-fit", "--bpw", "1"};
  r.device = "llvmpipe";
  r.weight_source = "synthetic (seed 1)";
  r.activation_source = "synthetic (seed 2)";
  r.bpw = bits_per_weight({256, 128, 64, 2}, ScaleDtype::f16);
  r.init = {0.5, 0.5, 0.45};
  r.trained = {0.3, 0.125, NAN};
  r.steps = 100;
  r.tokens = 409600;
  r.wall_s = 2.0;
  r.tokens_per_s = 204800;
  r.flips = 1000;
  r.oscillations = 10;
  r.settings = {{"sign_opt", "adam"}, {"lr", 0.01}};
  r.curve = {{0, 0.4}, {50, 0.2}, {100, 0.1}};
  const nlohmann::json j = to_json(r);
  CHECK(j.at("layer") == nlohmann::json{{"m", 256}, {"n", 128}, {"rank", 64}, {"paths", 2}, {"scale_dtype", "F16"}});
  CHECK(j.at("bpw").at("total") == r.bpw.total);
  CHECK(j.at("bpw").at("sign_bits") == r.bpw.sign_bits);
  CHECK(j.at("bpw").at("formula") == r.bpw.formula());
  CHECK(j.at("errors").at("init").at("output") == 0.5);
  CHECK(j.at("errors").at("trained").at("activation_weighted").is_null());
  CHECK(j.at("errors").at("output_improvement") == 4.0);
  CHECK(j.at("training").at("settings").at("sign_opt") == "adam");
  CHECK(j.at("training").at("tokens_per_s") == 204800.0);
  CHECK(j.at("curve").size() == 3);
  CHECK(j.at("curve")[1] == nlohmann::json{{"step", 50}, {"held_out_error", 0.2}});
  CHECK(j.at("command_line") == nlohmann::json{"vkblr-fit", "--bpw", "1"});

  vkt::TempDir dir;
  const std::string path = dir.file("report.json");
  write_json_file(path, j);
  const std::string text = vkt::read_raw_file(path);
  CHECK(text.back() == '\n');
  CHECK(nlohmann::json::parse(text) == j);
  CHECK(dir.entries() == std::vector<std::string>{"report.json"});
}

TEST_CASE("chart: SVG with a log axis, the curve and the init level", "[fit]") {
  const std::vector<CurvePoint> curve = {{0, 0.5}, {100, 0.2}, {200, 0.05}, {300, 0.0}, {400, NAN}, {500, 0.03}};
  const std::string svg = error_chart_svg(curve, 0.6, "q_proj <3584×1024> & friends");
  CHECK(svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""));
  CHECK(svg.ends_with("</svg>\n"));
  CHECK_THAT(svg, ContainsSubstring("q_proj &lt;3584×1024&gt; &amp; friends"));
  CHECK_THAT(svg, ContainsSubstring(">step</text>") && ContainsSubstring("held-out relative output error"));
  CHECK_THAT(svg, ContainsSubstring("stroke-dasharray") && ContainsSubstring("init 0.6"));
  CHECK_THAT(svg, ContainsSubstring("trained 0.03"));
  // Decades 0.01, 0.1 and 1 labelled; the points with error 0 and NaN left out.
  CHECK_THAT(svg, ContainsSubstring(">0.01</text>") && ContainsSubstring(">0.1</text>") && ContainsSubstring(">1</text>"));
  CHECK(count(svg, "<polyline") == 1);
  const auto points_at = svg.find("points=\"");
  const std::string points = svg.substr(points_at, svg.find('"', points_at + 8) - points_at);
  CHECK(count(points, ",") == 4);
  CHECK(count(svg, "<text") == count(svg, "</text>"));
  CHECK_THAT(error_chart_svg(std::vector<CurvePoint>{{10, 1e-5}}, 2.0, "t"), ContainsSubstring(">1e-5</text>"));

  // Nothing to draw still makes a chart.
  const std::string empty = error_chart_svg({}, NAN, "nothing");
  CHECK(empty.ends_with("</svg>\n"));
  CHECK(count(empty, "<polyline") == 0);
  CHECK(count(empty, "stroke-dasharray") == 0);

  vkt::TempDir dir;
  write_error_chart(dir.file("curve.svg"), curve, 0.6, "t");
  CHECK(vkt::read_raw_file(dir.file("curve.svg")) == error_chart_svg(curve, 0.6, "t"));
}

TEST_CASE("progress: lines when not a terminal, quiet when asked", "[fit]") {
  std::FILE* probe = std::tmpfile();
  CHECK(progress_style_for(probe, false) == ProgressStyle::lines);
  CHECK(progress_style_for(probe, true) == ProgressStyle::quiet);
  std::fclose(probe);
}
