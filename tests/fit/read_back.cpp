// vkblr-fit-read-back — what vkblr-fit's C++ readers make of a file, written
// as plain tensors for the tests of the Python tools (tests/fit/*.py):
//
//   vkblr-fit-read-back dense FILE OUT   FILE a model file (blr_model.hpp) or a
//                                        result file (blr_result.hpp), read and
//                                        validated by read_blr_model /
//                                        read_blr_result; OUT every layer's
//                                        Ŵ = Σ_p DensePath::weight(), F64 [m][n],
//                                        under the layer's name ("weight" for a
//                                        result file)
//   vkblr-fit-read-back widen FILE OUT   every tensor of FILE as
//                                        SafetensorsReader::read_f32 reads it (F32,
//                                        F16, BF16, F64), as F32 under its name
//
// Exit status 0; 1 with the reader's message on stderr; 2 for bad usage.
#include <cstdio>
#include <exception>
#include <span>
#include <string>
#include <vector>

#include "vkblr/io/blr_model.hpp"
#include "vkblr-fit/init/dense_path.hpp"
#include "vkblr/io/safetensors.hpp"
#include "vkblr-fit/io_names.hpp"

namespace {

using vkblr::fit::BlrResult;

void add_dense(vkblr::fit::SafetensorsWriter& out, const std::string& name, const BlrResult& layer) {
  const vkblr::fit::LayerShape& s = layer.shape;
  Eigen::MatrixXd w = Eigen::MatrixXd::Zero(s.m, s.n);
  for (const vkblr::BlrPathInit& p : layer.paths) w += vkblr::fit::unpack_path(p, s).weight();
  const Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> rows = w;
  out.add_bytes(name, vkblr::fit::Dtype::F64, {s.m, s.n},
                std::as_bytes(std::span(rows.data(), static_cast<std::size_t>(rows.size()))));
}

void dense(const std::string& file, const std::string& out_path) {
  vkblr::fit::SafetensorsWriter out;
  const vkblr::fit::SafetensorsReader reader(file);
  const auto format = reader.metadata().find("format");
  if (format != reader.metadata().end() && format->second == "vkblr-blr-model") {
    for (const vkblr::fit::BlrModelLayer& layer : vkblr::fit::read_blr_model(file).layers) {
      add_dense(out, layer.name, layer.result);
    }
  } else {
    add_dense(out, "weight", vkblr::fit::read_blr_result(file));
  }
  out.write(out_path);
}

void widen(const std::string& file, const std::string& out_path) {
  vkblr::fit::SafetensorsReader reader(file);
  vkblr::fit::SafetensorsWriter out;
  for (const vkblr::fit::TensorInfo& t : reader.tensors()) out.add_f32(t.name, t.shape, reader.read_f32(t));
  out.write(out_path);
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc == 4 ? argv[1] : "";
  if (mode != "dense" && mode != "widen") {
    std::fprintf(stderr, "usage: vkblr-fit-read-back dense|widen FILE OUT.safetensors\n");
    return 2;
  }
  try {
    if (mode == "dense") {
      dense(argv[2], argv[3]);
    } else {
      widen(argv[2], argv[3]);
    }
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "vkblr-fit-read-back: %s\n", e.what());
    return 1;
  }
}
