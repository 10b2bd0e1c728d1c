// name_pattern.hpp — the tensor-name patterns and name templates of a
// manifest (manifest.hpp).
//
// A pattern is a tensor name in which `*` stands for any run of characters,
// dots included, possibly none; every other character stands for itself.
// It matches a name as a whole. The k-th `*` captures the text it stands
// for, each as short as a match allows from left to right: "a.*.b.*" on
// "a.1.b.2.b.3" captures "1" and "2.b.3".
//
// A template is a text with placeholders, each in braces:
//   {tensor}  the weight tensor's name
//   {module}  the same without a final ".weight" (PyTorch's module name:
//             "model.layers.0.mlp.up_proj.weight" -> "model.layers.0.mlp.up_proj")
//   {1}, {2}, ...  the text the 1st, 2nd, ... `*` of the pattern captured
// Any other brace is an error.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace vkblr::fit {

// The captures of `pattern` on `name`, one per `*`; nullopt when it does
// not match.
std::optional<std::vector<std::string>> match_name_pattern(std::string_view pattern, std::string_view name);

// `text` with its placeholders replaced. `captures` are the pattern's (none
// for a layer named without a pattern). Throws vkblr::Error
//   "{what}: '{text}': unknown placeholder {x} (...)", or
//   "{what}: '{text}': {3} but the pattern has 2 '*'", or
//   "{what}: '{text}': a '{' without '}'" (and a '}' without '{').
std::string expand_name_template(std::string_view text, std::string_view tensor,
                                 const std::vector<std::string>& captures, std::string_view what);

// a before b in natural order: runs of digits compare by their value
// ("layers.2" before "layers.10"), the rest byte by byte; names equal so
// far (as "01" and "1") fall back to plain byte order.
bool natural_less(std::string_view a, std::string_view b);

}  // namespace vkblr::fit
