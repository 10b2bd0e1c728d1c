// vkblr::mpi::RankGroup::check_agreement: every rank's fingerprint the same,
// or an Error on every rank naming what differs.
#include <algorithm>
#include <format>
#include <map>
#include <string>

#include "vkblr/error.hpp"
#include "vkblr/mpi.hpp"

namespace vkblr::mpi {
namespace {

// "0, 2" / "0, 1, 2 and 5 more"
std::string rank_list(const std::vector<int>& ranks) {
  constexpr std::size_t kShown = 8;
  std::string s;
  for (std::size_t i = 0; i < ranks.size() && i < kShown; ++i) s += std::format("{}{}", i ? ", " : "", ranks[i]);
  if (ranks.size() > kShown) s += std::format(" and {} more", ranks.size() - kShown);
  return s;
}

}  // namespace

void RankGroup::check_agreement(const Fingerprint& fingerprint) {
  // Field names, then each value, gathered once as one string: the
  // fingerprints are small (hashes stand in for large values).
  std::string mine;
  for (const auto& [name, value] : fingerprint.fields()) {
    mine += std::format("{}:{}\n{}:{}\n", name.size(), name, value.size(), value);
  }
  const std::vector<std::string> all = allgather_strings(mine, "configuration check");
  if (std::all_of(all.begin(), all.end(), [&](const std::string& s) { return s == all[0]; })) return;

  // every rank decodes every rank's fields: the same message everywhere
  auto decode = [](const std::string& s) {
    std::vector<std::pair<std::string, std::string>> fields;
    std::size_t at = 0;
    auto next = [&] {
      const std::size_t colon = s.find(':', at);
      const std::size_t length = std::stoul(s.substr(at, colon - at));
      std::string text = s.substr(colon + 1, length);
      at = colon + 1 + length + 1;
      return text;
    };
    while (at < s.size()) {
      std::string name = next();
      fields.emplace_back(std::move(name), next());
    }
    return fields;
  };
  std::vector<std::vector<std::pair<std::string, std::string>>> fields;
  for (const std::string& s : all) fields.push_back(decode(s));
  std::string message = "vkblr::mpi: ranks disagree:";
  std::size_t differing = 0;
  const std::size_t count = fields[0].size();
  bool same_names = true;
  for (const auto& f : fields) {
    same_names = same_names && f.size() == count;
    for (std::size_t i = 0; same_names && i < count; ++i) same_names = f[i].first == fields[0][i].first;
  }
  if (!same_names) {
    for (std::size_t r = 0; r < fields.size(); ++r) {
      std::string names;
      for (const auto& [name, value] : fields[r]) names += (names.empty() ? "" : ", ") + name;
      message += std::format(" rank {} checks [{}];", r, names);
    }
    fail("{} different fields (ranks built from different versions?)", message);
  }
  for (std::size_t i = 0; i < count; ++i) {
    std::map<std::string, std::vector<int>> ranks_of;  // value -> ranks holding it
    std::vector<std::string> order;                    // values by first rank
    for (std::size_t r = 0; r < fields.size(); ++r) {
      const std::string& value = fields[r][i].second;
      if (!ranks_of.contains(value)) order.push_back(value);
      ranks_of[value].push_back(static_cast<int>(r));
    }
    if (order.size() == 1) continue;
    message += std::format("{} {} =", differing++ ? ";" : "", fields[0][i].first);
    for (std::size_t v = 0; v < order.size(); ++v) {
      const std::vector<int>& ranks = ranks_of[order[v]];
      message += std::format("{} {} on rank{} {}", v ? " vs" : "", order[v], ranks.size() > 1 ? "s" : "",
                             rank_list(ranks));
    }
  }
  fail("{}", message);
}

}  // namespace vkblr::mpi
