// fit_outputs.hpp — the files a vkblr-fit run writes: checked before any
// work, written together at the end.
//
// --out PREFIX names PREFIX.safetensors (the layer), PREFIX.json (the
// report), PREFIX.svg (the chart) and, with --checkpoint-every,
// PREFIX.ckpt. The three results are written as one set
// (vkblr::write_files_atomic): all new, or, when a write fails, all as they
// were.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "vkblr-fit/fit_options.hpp"

namespace vkblr::fit {

struct FitOutputPaths {
  std::string safetensors, json, svg;
  std::string checkpoint;  // PREFIX.ckpt (written only with checkpoint_every > 0)
};

// The paths of options.out. Throws vkblr::Error when its file name is
// empty (--out "", --out dir/), "." or "..".
FitOutputPaths fit_output_paths(const FitOptions& options);

// Run before any input is read (by the one process that writes). Throws
// vkblr::Error naming the flag and the paths when
//   - an output is an input: the same file as --weight, --activations,
//     --resume or --eval, by filesystem identity (links included). The
//     checkpoint may be the one resumed: it is read whole first and then
//     replaced by later checkpoints, as intended;
//   - an output cannot be created: its directory is missing or not
//     writable, its name is too long, or a directory stands in its place
//     (found by creating and removing a temporary file named as
//     vkblr::write_file_atomic names its own).
// Then removes the stale temporaries of all four outputs (left by a
// process killed while writing them: vkblr::remove_stale_temporaries) and
// returns how many it removed.
std::size_t prepare_fit_outputs(const FitOutputPaths& paths, const FitOptions& options);

// The checks of prepare_fit_outputs, for other runs' outputs
// (manifest/run_manifest.hpp). same_file: whether `a` and `b` name the
// same file, by identity (device and inode, through links) where both
// exist, else by their resolved paths. check_creatable: throws
// vkblr::Error ("--out: cannot write PATH: ...") unless a file `path` can
// be created where it is named.
bool same_file(const std::string& a, const std::string& b);
void check_creatable(const std::string& path);

// Writes the layer, report and chart files as one set.
void write_fit_outputs(const FitOutputPaths& paths, std::string_view layer, std::string_view report,
                       std::string_view chart);

}  // namespace vkblr::fit
