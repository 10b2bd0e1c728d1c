// kernel_stats_report.hpp — the drivers' kernel statistics (--stats) of a
// bench case, by dispatch name: gathered once per name, printed and written
// to JSON the same way by every subcommand that reports them.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include <vkblr/dispatch.hpp>
#include <vkblr/kernel_stats.hpp>

namespace bench {

// dispatch name -> the statistics of every executable of its kernel
using KernelStatsByName = std::map<std::string, std::vector<vkblr::KernelStatistic>>;

// Adds the statistics of d's kernel under d.name unless that name has them
// already. Throws vkblr::Error as vkblr::kernel_statistics does.
inline void add_kernel_stats(KernelStatsByName& by_name, const vkblr::Dispatch& d) {
  if (by_name.contains(d.name)) return;
  auto& into = by_name[d.name];
  for (auto& e : vkblr::kernel_statistics(d)) into.insert(into.end(), e.values.begin(), e.values.end());
}

// "\n    NAME: stat=value ..." per dispatch name.
inline std::string format_kernel_stats(const KernelStatsByName& by_name) {
  std::string s;
  for (const auto& [name, values] : by_name) {
    s += "\n    " + name + ":";
    for (const auto& st : values) s += " " + st.name + "=" + st.value;
  }
  return s;
}

// j["kernel_stats"][NAME][stat] = value (nothing when there are none).
inline void put_kernel_stats(nlohmann::json& j, const KernelStatsByName& by_name) {
  for (const auto& [name, values] : by_name) {
    for (const auto& st : values) j["kernel_stats"][name][st.name] = st.value;
  }
}

}  // namespace bench
