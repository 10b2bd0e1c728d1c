// vkblr-fit-manifest-model DIR — writes the six-layer model of the manifest
// tests into DIR (tests/support/manifest_files.hpp: w0/w1.safetensors,
// x0/x1.safetensors) and job.json, the six-layer manifest over them. For
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
    vkt::write_manifest((std::filesystem::path(argv[1]) / "job.json").string(), vkt::six_layer_manifest());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "vkblr-fit-manifest-model: %s\n", e.what());
    return 1;
  }
  return 0;
}
