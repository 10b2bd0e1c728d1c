// The end of a manifest run's fits (manifest/rank_outcome.hpp): every
// rank's rows gathered by layer, each with its rank, every field as it was
// sent; a stop reported; failures named on every rank, with the --resume
// hint when there are several ranks. (Two ranks sending the same outcome
// stand in for an MPI job: support/fake_ranks.hpp.)
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include "support/fake_ranks.hpp"
#include "support/fit_files.hpp"
#include "vkblr-fit/manifest/rank_outcome.hpp"

using namespace vkblr;
using Catch::Matchers::ContainsSubstring;

namespace {

fit::LayerRow fitted_row() {
  fit::LayerRow row;
  row.name = "model.layers.0.mlp.up_proj.weight";
  row.entry = "layers[1]";
  row.weight_source = "w.safetensors:model.layers.0.mlp.up_proj.weight";
  row.activation_source = "x.safetensors:model.layers.0.mlp.up_proj";
  row.stored_shape = "[128, 64]";
  row.shape = {128, 64, 32, 2};
  row.scale_dtype = fit::ScaleDtype::f32;
  row.init = {0.75, 0.5, 0.625};
  row.trained = {0.25, 0.1875, 0.3125};
  row.stages = {{"train", {{"wall_s", 1.5}, {"device_s", 1.25}}}};
  row.wall_s = 2.5;
  row.resumed = true;
  row.result = "model.layers/model.layers.0.mlp.up_proj.weight.safetensors";
  row.mpi_rank = 7;
  return row;
}

}  // namespace

TEST_CASE("rank outcome: the rows of every rank by layer, as sent, with their rank", "[fit]") {
  fit::RankOutcome mine;
  mine.rows.emplace_back(2, fitted_row());
  vkt::FakeRanks two(0, 2);
  bool stopped = true;
  const std::vector<std::optional<fit::LayerRow>> rows = fit::gather_outcomes(two, mine, 4, 1.0, "out.layers", stopped);
  CHECK_FALSE(stopped);
  REQUIRE(rows.size() == 4);
  CHECK_FALSE(rows[0]);
  CHECK_FALSE(rows[3]);
  REQUIRE(rows[2]);
  // the last rank's copy of layer 2, every field of the report's row as sent
  fit::LayerRow want = fitted_row();
  want.mpi_rank = 1;
  CHECK(fit::to_json(*rows[2]) == fit::to_json(want));
  CHECK(rows[2]->resumed);

  mine.stopped = true;
  fit::gather_outcomes(two, mine, 4, 1.0, "out.layers", stopped);
  CHECK(stopped);
}

TEST_CASE("rank outcome: a failed layer fails every rank, naming it", "[fit][errors]") {
  fit::RankOutcome mine;
  mine.rows.emplace_back(0, fitted_row());
  mine.error = "layer 2/4 'b' (layers[1]) on rank 0: W has a NaN";
  bool stopped = false;
  vkt::FakeRanks two(1, 2);
  const std::string several = vkt::error_of([&] { fit::gather_outcomes(two, mine, 4, 1.0, "out.layers", stopped); });
  CHECK_THAT(several, ContainsSubstring("layer 2/4 'b' (layers[1]) on rank 0: W has a NaN\nlayer 2/4 'b'"));
  CHECK_THAT(several, ContainsSubstring("The layers finished are in out.layers: --resume continues with them"));
  vkt::FakeRanks one(0, 1);
  const std::string alone = vkt::error_of([&] { fit::gather_outcomes(one, mine, 4, 1.0, "out.layers", stopped); });
  CHECK(alone == "layer 2/4 'b' (layers[1]) on rank 0: W has a NaN");
  // a layer index beyond the job: refused
  mine.error.clear();
  CHECK_THAT(vkt::error_of([&] { fit::gather_outcomes(one, mine, 0, 1.0, "out.layers", stopped); }),
             ContainsSubstring("layer 0 of 0"));
}
