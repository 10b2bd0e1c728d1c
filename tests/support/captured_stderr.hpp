// Everything the process writes to file descriptor 2 while one of these
// lives (stdio's stderr and direct writes alike) goes to a temporary file
// instead of the terminal; text() reads it back. For checks of warnings a
// library prints, e.g. at a destructor where nothing else can see them.
#pragma once

#include <unistd.h>

#include <cstdio>
#include <stdexcept>
#include <string>

namespace vkt {

class CapturedStderr {
 public:
  CapturedStderr() : file_(std::tmpfile()) {
    if (!file_) throw std::runtime_error("CapturedStderr: no temporary file");
    std::fflush(stderr);
    saved_ = ::dup(2);
    if (saved_ < 0 || ::dup2(::fileno(file_), 2) < 0) {
      std::fclose(file_);
      throw std::runtime_error("CapturedStderr: cannot redirect stderr");
    }
  }
  ~CapturedStderr() {
    restore();
    std::fclose(file_);
  }
  CapturedStderr(const CapturedStderr&) = delete;
  CapturedStderr& operator=(const CapturedStderr&) = delete;

  // What was written so far.
  std::string text() const {
    std::fflush(stderr);
    std::string s;
    char buf[4096];
    // pread: the file offset, shared with descriptor 2, stays where the
    // next write goes
    for (ssize_t n; (n = ::pread(::fileno(file_), buf, sizeof buf, static_cast<off_t>(s.size()))) > 0;) {
      s.append(buf, static_cast<std::size_t>(n));
    }
    return s;
  }

 private:
  void restore() {
    if (saved_ < 0) return;
    std::fflush(stderr);
    ::dup2(saved_, 2);
    ::close(saved_);
    saved_ = -1;
  }

  std::FILE* file_;
  int saved_ = -1;
};

}  // namespace vkt
