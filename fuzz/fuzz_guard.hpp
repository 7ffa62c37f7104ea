// What every fuzz target holds rematkit to: bad input may be refused, but only with a bad-input
// rematkit::Error (a one-line message, exit code 2 in the CLI). An internal error, any other
// exception, a crash, a leak or undefined behaviour (the sanitizers) is a finding.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <exception>

#include "rematkit/error.hpp"

namespace rematkit::fuzz {

template <class Work>
void expect_only_bad_input(Work&& work) {
  try {
    work();
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::kBadInput) return;
    std::fprintf(stderr, "fuzz: an internal error: %s\n", e.what());
    std::abort();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fuzz: an exception that is not a rematkit::Error: %s\n", e.what());
    std::abort();
  }
}

}  // namespace rematkit::fuzz
