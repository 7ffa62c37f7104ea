// What every fuzz target holds rematkit to: bad input may be refused, but only with a bad-input
// rematkit::Error (a one-line message, exit code 2 in the CLI). An internal error, any other
// exception, a crash, a leak or undefined behaviour (the sanitizers) is a finding.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

#include "rematkit/ir/error.hpp"

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

// A target's whole body: `work` on the input as text, held to the rule above.
template <class Work>
int on_text(const uint8_t* data, size_t size, Work&& work) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  expect_only_bad_input([&] { work(text); });
  return 0;
}

}  // namespace rematkit::fuzz
