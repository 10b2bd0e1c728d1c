// An environment variable set (or unset) for one scope, restored after it
// even when a check throws: for the tests of what the engine reads from the
// environment (gemm_policy_from_env, the pipeline cache's switches). Tests
// of a GEMM policy set it through ContextOptions (vkt::with_gemm_policy).
#pragma once

#include <cstdlib>
#include <optional>
#include <string>

namespace vkt {

class ScopedEnv {
 public:
  // value = nullptr: unset for the scope.
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* v = std::getenv(name)) old_ = v;
    set(value);
  }
  ~ScopedEnv() { set(old_ ? old_->c_str() : nullptr); }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

  void set(const char* value) const {
    if (value) {
      ::setenv(name_.c_str(), value, 1);
    } else {
      ::unsetenv(name_.c_str());
    }
  }

 private:
  std::string name_;
  std::optional<std::string> old_;
};

}  // namespace vkt
