// The last words of a rank of a layer-parallel manifest run
// (manifest/term_notice.hpp): on SIGTERM, the text on stderr and death by
// the signal; the earlier disposition back once the notice is gone; one
// notice at a time.
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch_test_macros.hpp>
#include <csignal>
#include <string>

#include "support/fit_files.hpp"
#include "vkblr-fit/manifest/term_notice.hpp"

using namespace vkblr;

namespace {

// The handler of SIGTERM now.
void (*term_handler())(int) {
  struct sigaction now {};
  sigaction(SIGTERM, nullptr, &now);
  return now.sa_handler;
}

}  // namespace

TEST_CASE("term notice: SIGTERM writes the text, then the process dies of it", "[fit]") {
  int pipe_fds[2];
  REQUIRE(pipe(pipe_fds) == 0);
  pid_t child = -1;
  {
    fit::TermNotice notice("vkblr-fit: rank 1: ended by SIGTERM; --resume continues\n");
    child = fork();
    if (child == 0) {  // only async-signal-safe calls here
      dup2(pipe_fds[1], STDERR_FILENO);
      close(pipe_fds[0]);
      raise(SIGTERM);
      _exit(0);  // not reached: the handler re-raises with the default disposition
    }
  }
  REQUIRE(child > 0);
  close(pipe_fds[1]);
  std::string text;
  char buffer[256];
  for (ssize_t n; (n = read(pipe_fds[0], buffer, sizeof buffer)) > 0;) text.append(buffer, static_cast<std::size_t>(n));
  close(pipe_fds[0]);
  int status = 0;
  REQUIRE(waitpid(child, &status, 0) == child);
  CHECK(text == "vkblr-fit: rank 1: ended by SIGTERM; --resume continues\n");
  CHECK(WIFSIGNALED(status));
  CHECK(WTERMSIG(status) == SIGTERM);
}

TEST_CASE("term notice: the earlier SIGTERM handler is back once it is gone; one at a time", "[fit][errors]") {
  struct sigaction ignore {}, before {};
  ignore.sa_handler = SIG_IGN;
  sigemptyset(&ignore.sa_mask);
  sigaction(SIGTERM, &ignore, &before);
  {
    fit::TermNotice notice("first\n");
    CHECK(term_handler() != SIG_IGN);
    CHECK(vkt::error_of([] { fit::TermNotice second("second\n"); }) == "TermNotice: one at a time");
  }
  CHECK(term_handler() == SIG_IGN);
  { fit::TermNotice again("again\n"); }  // a new one once the first is gone
  sigaction(SIGTERM, &before, nullptr);
}
