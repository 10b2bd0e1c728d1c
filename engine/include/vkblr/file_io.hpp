// vkblr/file_io.hpp — atomic file writes for trainers and tools.
//
// The data goes to a temporary file in the target's directory, named
// ".<target's file name>.XXXXXX" (six letters or digits, mkstemp's), is
// fsync'ed, then renamed over the target and the directory fsync'ed: a
// reader sees the old file or the new one, never a torn one. Throws
// vkblr::Error naming the path when any step fails (the temporary file is
// removed). A process killed mid-write can leave its temporary behind;
// remove_stale_temporaries removes such files.
#pragma once

#include <cstddef>
#include <functional>
#include <span>
#include <string>
#include <string_view>

namespace vkblr {

void write_file_atomic(const std::string& path, const void* data, std::size_t bytes);

inline void write_file_atomic(const std::string& path, std::string_view text) {
  write_file_atomic(path, text.data(), text.size());
}

// Appends the next piece of a file being written (FileToWrite::produce).
using AppendBytes = std::function<void(std::span<const std::byte>)>;

// One file of a set written together: `bytes`, or, when `produce` is set,
// what it appends, in order (for a file too large to hold in memory at
// once; `bytes` is then ignored). An exception from `produce` fails the
// set as a write error does, and propagates.
struct FileToWrite {
  std::string path;
  std::string_view bytes;
  std::function<void(const AppendBytes& append)> produce;
};

// Writes a set of files together: first every file to its temporary
// (fsync'ed; each produced file's pieces in order), then, once all are written, renames them over their targets
// in order and fsyncs their directories. When a temporary cannot be
// written (a full disk, a missing directory, a name too long), no target
// is touched and every temporary is removed. A target that is a directory
// is refused before any rename. A rename that fails after earlier ones
// succeeded (rare: the data is already on disk, only directory entries
// change) leaves the earlier targets new and the later ones old; the
// message names the files replaced. Throws vkblr::Error naming the path.
void write_files_atomic(std::span<const FileToWrite> files);

// Removes the regular files beside `path` that write_file_atomic's
// temporaries of `path` are named like (".<file name>.XXXXXX", six letters
// or digits; not links, not directories, other names untouched) and
// returns how many it removed. Call it only where no other process writes
// `path` at the same time. A file that cannot be removed is left as it is.
std::size_t remove_stale_temporaries(const std::string& path);

}  // namespace vkblr
