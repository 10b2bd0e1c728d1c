// vkblr-fit's host matrices: layout, conversion, and the finiteness check
// that refuses NaN or infinity in W or X.
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <limits>

#include "support/fit_files.hpp"
#include "vkblr/io/matrix.hpp"

using namespace vkblr::io;
using Catch::Matchers::ContainsSubstring;

TEST_CASE("matrix: row-major layout, conversion, finiteness", "[fit]") {
  Matrix a(2, 3);
  a(1, 2) = 5.0f;
  CHECK(a.values == std::vector<float>{0, 0, 0, 0, 0, 5});
  const MatrixF64 wide = convert_matrix<double>(a);
  CHECK(wide.rows == 2);
  CHECK(wide.cols == 3);
  CHECK(wide(1, 2) == 5.0);
  require_finite(a, "W");

  a(1, 0) = std::numeric_limits<float>::quiet_NaN();
  CHECK_THAT(vkt::error_of([&] { require_finite(a, "W (w.safetensors:q_proj)"); }),
             ContainsSubstring("W (w.safetensors:q_proj) has a NaN at [1][0]"));
  a(1, 0) = 0;
  a(0, 1) = -std::numeric_limits<float>::infinity();
  CHECK_THAT(vkt::error_of([&] { require_finite(a, "X"); }), ContainsSubstring("X has an infinity at [0][1]"));
}
