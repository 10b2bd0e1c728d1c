// vkblr-info — the Vulkan devices vkblr sees and what it would use of them.
//
//   vkblr-info            one block of text per device, after the GEMM
//                         policy a context made here would take from the
//                         environment (vkblr/gemm_policy.hpp)
//   vkblr-info --json     the same as JSON
//   vkblr-info --check    also create a context on the chosen device
//                         (VKBLR_DEVICE) and run the coopmat smoke kernel
//
// Exit status: 0 on success; 1 when there is no device, the check fails
// (a wrong product, or with --validate any validation message), Vulkan
// cannot be used or a GEMM policy variable is malformed; 2 for a command-line usage error; --help: 0.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <format>
#include <nlohmann/json.hpp>
#include <vkblr/gemm.hpp>
#include <vkblr/kernel_stats.hpp>
#include <vkblr/ops.hpp>
#include <vkblr/vkblr.hpp>

namespace {

nlohmann::json to_json(const vkblr::Caps& c) {
  nlohmann::json shapes = nlohmann::json::array();
  for (const auto& s : c.coopmat_shapes) {
    shapes.push_back({{"m", s.m}, {"n", s.n}, {"k", s.k}, {"a", s.a_type}, {"b", s.b_type}, {"c", s.c_type},
                      {"result", s.result_type}, {"saturating", s.saturating}});
  }
  nlohmann::json flexible = nlohmann::json::array();
  for (const auto& f : c.coopmat2_f16_shapes) {
    flexible.push_back({{"m", f.m}, {"n", f.n}, {"k", f.k}, {"invocations", f.invocations}});
  }
  nlohmann::json j = {
      {"name", c.device_name},
      {"type", c.device_type},
      {"driver", c.driver_name},
      {"driver_info", c.driver_info},
      {"vendor_id", c.vendor_id},
      {"device_id", c.device_id},
      {"api_version", c.api_version_string},
      {"subgroup_size", c.subgroup_size},
      {"subgroup_size_range", {c.min_subgroup_size, c.max_subgroup_size}},
      {"subgroup_size_control", c.subgroup_size_control},
      {"shared_memory_bytes", c.max_shared_memory},
      {"max_workgroup_invocations", c.max_workgroup_invocations},
      {"max_workgroup_count", c.max_workgroup_count},
      {"max_push_constants", c.max_push_constants},
      {"max_storage_buffer_range", c.max_storage_buffer_range},
      {"device_local_bytes", c.device_local_bytes},
      {"timestamps", c.timestamps},
      {"timestamp_period_ns", c.timestamp_period_ns},
      {"kernel_statistics", c.kernel_statistics},
      {"host_memory_import", c.host_memory_import},
      {"host_import_alignment", c.host_import_alignment},
      {"cooperative_matrix", !c.coopmat_shapes.empty()},
      {"cooperative_matrix2_nv", c.coopmat2},
      {"cooperative_matrix2_subgroup_ops", c.coopmat2_subgroup_ops},
      {"cooperative_matrix2_f16_workgroup_shapes", flexible},
      {"cooperative_matrix2_max_workgroup_size", c.coopmat2_max_workgroup_size},
      {"cooperative_matrix2_max_dimension", c.coopmat2_max_dimension},
      {"cooperative_matrix2_reserved_shared_memory", c.coopmat2_reserved_shared_memory},
      {"cooperative_matrix_shapes", shapes},
  };
  if (const auto f = c.f16_fragment()) j["gemm_fragment"] = {f->m, f->n, f->k};
  return j;
}

std::string to_text(std::size_t index, const vkblr::Caps& c) {
  std::string s = std::format("device {}: {} ({}, {} — {})\n", index, c.device_name, c.device_type, c.driver_name,
                              c.driver_info);
  s += std::format("  Vulkan {}, vendor 0x{:04x} device 0x{:04x}\n", c.api_version_string, c.vendor_id, c.device_id);
  s += std::format("  subgroup {} (range {}..{}{}), shared memory {} B/workgroup, {} invocations/workgroup\n",
                   c.subgroup_size, c.min_subgroup_size, c.max_subgroup_size,
                   c.subgroup_size_control ? ", controllable" : "", c.max_shared_memory, c.max_workgroup_invocations);
  s += std::format("  device-local memory {:.1f} GiB, storage range {} B, timestamps {}\n",
                   static_cast<double>(c.device_local_bytes) / (1u << 30), c.max_storage_buffer_range,
                   c.timestamps ? std::format("{} ns/tick", c.timestamp_period_ns) : std::string("no"));
  s += std::format("  kernel compiler statistics (VK_KHR_pipeline_executable_properties): {}\n",
                   c.kernel_statistics ? "yes" : "no");
  s += std::format("  host memory as buffers (VK_EXT_external_memory_host): {}\n",
                   c.host_memory_import ? std::format("yes, {} B aligned", c.host_import_alignment) : std::string("no"));
  if (c.coopmat_shapes.empty()) {
    s += "  cooperative matrices: none (plain shared-memory GEMM)\n";
  } else {
    s += "  cooperative matrices (subgroup scope):\n";
    for (const auto& m : c.coopmat_shapes) {
      s += std::format("    M{}N{}K{}  {}×{} + {} -> {}{}\n", m.m, m.n, m.k, m.a_type, m.b_type, m.c_type,
                       m.result_type, m.saturating ? " (saturating)" : "");
    }
    if (const auto f = c.f16_fragment()) s += std::format("  GEMM fragment: {}×{}×{} f16 -> f32\n", f->m, f->n, f->k);
  }
  if (c.coopmat2_subgroup_ops) {
    s += "  VK_NV_cooperative_matrix2 on subgroup matrices: conversions, row reductions, per-element functions\n";
  }
  if (c.coopmat2) {
    s += std::format("  VK_NV_cooperative_matrix2: workgroups up to {} invocations, matrices up to {}, "
                     "{} B shared memory reserved\n",
                     c.coopmat2_max_workgroup_size, c.coopmat2_max_dimension, c.coopmat2_reserved_shared_memory);
    for (const auto& f : c.coopmat2_f16_shapes) {
      s += std::format("    f16 workgroup scope, {} invocations: M, N, K in steps of {}, {}, {}\n", f.invocations, f.m,
                       f.n, f.k);
    }
  }
  return s;
}

bool smoke(vkblr::Context& ctx, std::string& report) {
  const auto f = ctx.caps().f16_fragment();
  if (!f) {
    report = "coopmat smoke: skipped (no cooperative matrices)";
    return true;
  }
  std::vector<float> a(f->m * f->k), b(f->k * f->n);
  for (std::size_t i = 0; i < a.size(); ++i) a[i] = static_cast<float>(static_cast<int>(i * 7 % 9) - 4);
  for (std::size_t i = 0; i < b.size(); ++i) b[i] = static_cast<float>(static_cast<int>(i * 5 % 7) - 3);
  vkblr::Buffer ba = ctx.upload(vkblr::to_f16(a)), bb = ctx.upload(vkblr::to_f16(b)), bc = ctx.buffer(f->m * f->n * 4);
  vkblr::Recorder rec(ctx);
  rec.add(vkblr::ops::coopmat_probe(ctx, ba, bb, bc));
  rec.run();
  const auto c = bc.download<float>();
  std::size_t bad = 0;
  for (std::uint32_t i = 0; i < f->m; ++i) {
    for (std::uint32_t j = 0; j < f->n; ++j) {
      float want = 0;
      for (std::uint32_t p = 0; p < f->k; ++p) want += a[i * f->k + p] * b[p * f->n + j];
      bad += c[i * f->n + j] != want;
    }
  }
  report = std::format("coopmat smoke ({}×{}×{}): {}", f->m, f->n, f->k,
                       bad == 0 ? std::string("exact") : std::format("{} wrong elements", bad));
  return bad == 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"vkblr-info: the Vulkan devices vkblr sees and their capabilities"};
  bool json = false, check = false, validate = false;
  app.add_flag("--json", json, "Print JSON instead of text");
  app.add_flag("--check", check, "Create a context on the chosen device and run the coopmat smoke kernel");
  app.add_flag("--validate", validate, "With --check: Khronos validation on; any message fails");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;  // --help: 0
  }
  try {
    const vkblr::GemmPolicy policy = vkblr::gemm_policy_from_env();
    const auto devices = vkblr::list_devices();
    nlohmann::json policy_json = nlohmann::json::object();
    for (const auto& [name, value] : vkblr::gemm_policy_fields(policy)) policy_json[name] = value;
    nlohmann::json out = {{"vkblr", std::string(vkblr::version())},
                          {"shader_compiler", std::string(vkblr::shader_compiler())},
                          {"gemm_policy", policy_json},
                          {"devices", nlohmann::json::array()}};
    std::string text = std::format("vkblr {} (SPIR-V from {})\nGEMM policy: {}\n", vkblr::version(),
                                   vkblr::shader_compiler(), vkblr::to_string(policy));
    for (std::size_t i = 0; i < devices.size(); ++i) {
      out["devices"].push_back(to_json(devices[i]));
      text += to_text(i, devices[i]);
    }
    if (devices.empty()) text += "no Vulkan devices\n";
    int rc = devices.empty() ? 1 : 0;
    if (check && !devices.empty()) {
      vkblr::ContextOptions options;
      options.validation = validate;
      vkblr::Context ctx(options);
      std::string report;
      const bool ok = smoke(ctx, report);
      const auto messages = ctx.validation_messages();
      out["check"] = {{"device", ctx.caps().device_name}, {"smoke", report}, {"ok", ok && messages.empty()},
                      {"validation_messages", messages}};
      text += std::format("check on {}: {}{}\n", ctx.caps().device_name, report,
                          validate ? std::format(", {} validation messages", messages.size()) : "");
      for (const auto& m : messages) text += "  " + m + "\n";
      const auto set_aside = ctx.set_aside_validation_messages();
      if (!set_aside.empty()) {
        out["check"]["set_aside_validation_messages"] = set_aside;
        text += std::format("  {} message(s) of the loader or driver set aside during vkCreateDevice:\n", set_aside.size());
        for (const auto& m : set_aside) text += "    " + m + "\n";
      }
      if (!ok || !messages.empty()) rc = 1;
    }
    std::fputs(json ? (out.dump(2) + "\n").c_str() : text.c_str(), stdout);
    return rc;
  } catch (const vkblr::Error& e) {
    std::fprintf(stderr, "vkblr-info: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "vkblr-info: unexpected error: %s\n", e.what());
    return 1;
  }
}
