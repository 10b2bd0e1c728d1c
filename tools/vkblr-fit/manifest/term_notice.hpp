// term_notice.hpp — the last words of a rank of a layer-parallel manifest
// run (run_manifest.hpp) that the launcher ends: when a rank dies, Open
// MPI's mpirun sends SIGTERM to the others. A rank that gets SIGTERM while
// a TermNotice lives writes its text on stderr (one write(2), which is
// safe in a signal handler) and then dies of the signal as it would have.
#pragma once

#include <csignal>
#include <memory>
#include <string>

namespace vkblr::fit {

// Not copyable: the handler holds its text.
class TermNotice {
 public:
  // Installs the SIGTERM handler; `text` is written as it is (end it with a
  // newline). Throws vkblr::Error while another TermNotice lives.
  explicit TermNotice(std::string text);
  // Puts the earlier SIGTERM disposition back.
  ~TermNotice();

 private:
  std::unique_ptr<const std::string> text_;
  struct sigaction previous_ {};
};

}  // namespace vkblr::fit
