// vkblr-fit-manifest-model DIR — writes the six-layer model of the manifest
// tests into DIR (tests/support/manifest_files.hpp: w0/w1.safetensors,
// x0/x1.safetensors), job.json, the six-layer manifest over them, and
// budget.json, the same without the default rank (for --model-bpw: five
// layers sized by the budget, q_proj of layer 0 by its own rank 64). For
// tests/mpi/fit_layers.cmake.
#include <cstdio>
#include <exception>
#include <filesystem>

#include "support/manifest_files.hpp"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: vkblr-fit-manifest-model DIR\n");
    return 2;
  }
  try {
    vkt::write_manifest_model(argv[1]);
    const std::filesystem::path dir = argv[1];
    vkt::write_manifest((dir / "job.json").string(), vkt::six_layer_manifest());
    nlohmann::json budget = vkt::six_layer_manifest();
    budget["defaults"].erase("rank");
    vkt::write_manifest((dir / "budget.json").string(), budget);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "vkblr-fit-manifest-model: %s\n", e.what());
    return 1;
  }
  return 0;
}
