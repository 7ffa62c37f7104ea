#include "host_api.hpp"

#include <cstdio>
#include <cstdlib>
#include <new>

// The host's definition of the ABI's opaque error.
struct rk_error {
  int32_t code;
  std::string message;
};

namespace rematkit::plugin_host {
namespace {

const char* code_name(int32_t code) {
  switch (code) {
    case RK_INVALID_ARGUMENT: return "invalid argument";
    case RK_NOT_FOUND: return "not found";
    case RK_ALREADY_EXISTS: return "already exists";
    case RK_RESOURCE_EXHAUSTED: return "resource exhausted";
    case RK_FAILED_PRECONDITION: return "failed precondition";
    case RK_UNIMPLEMENTED: return "unimplemented";
    default: return "internal error";
  }
}

// Handed out when even an error cannot be allocated; never freed.
rk_error out_of_memory{RK_RESOURCE_EXHAUSTED, "out of memory"};

// Called by plugins: must not throw.
rk_error* error_new(int32_t code, const char* message) {
  try {
    return new rk_error{code, message ? message : ""};
  } catch (...) {
    return &out_of_memory;
  }
}

void log(int32_t level, const char* message) {
  // Warnings and errors always; the rest when REMATKIT_LOG is set.
  if (level >= RK_LOG_WARN || std::getenv("REMATKIT_LOG")) std::fprintf(stderr, "rematkit plugin: %s\n", message ? message : "");
}

const rk_host_api kHostApi = {sizeof(rk_host_api), {RK_ABI_MAJOR, RK_ABI_MINOR}, &error_new, &log};

}  // namespace

const rk_host_api* host_api() { return &kHostApi; }

std::string take_error(rk_error* error) {
  std::string message = error->message;
  // Invalid arguments speak for themselves; other codes say what kind of failure it was.
  if (error->code != RK_INVALID_ARGUMENT) message = std::string(code_name(error->code)) + ": " + message;
  if (error != &out_of_memory) delete error;
  return message;
}

}  // namespace rematkit::plugin_host
