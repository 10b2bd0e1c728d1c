#include "vkblr-fit/manifest/term_notice.hpp"

#include <unistd.h>

#include "vkblr/error.hpp"

namespace vkblr::fit {
namespace {

// The text the handler writes (set before the handler is installed).
const char* volatile notice_text = nullptr;
volatile std::size_t notice_bytes = 0;

extern "C" void write_notice_and_die(int signal) {
  if (notice_text != nullptr) {
    const ssize_t written = write(STDERR_FILENO, notice_text, notice_bytes);
    (void)written;  // nothing more can be done in a handler
  }
  std::signal(signal, SIG_DFL);
  std::raise(signal);
}

}  // namespace

TermNotice::TermNotice(std::string text) : text_(std::make_unique<const std::string>(std::move(text))) {
  require(notice_text == nullptr, "TermNotice: one at a time");
  notice_text = text_->data();
  notice_bytes = text_->size();
  struct sigaction action {};
  action.sa_handler = write_notice_and_die;
  sigemptyset(&action.sa_mask);
  sigaction(SIGTERM, &action, &previous_);
}

TermNotice::~TermNotice() {
  sigaction(SIGTERM, &previous_, nullptr);
  notice_text = nullptr;
  notice_bytes = 0;
}

}  // namespace vkblr::fit
