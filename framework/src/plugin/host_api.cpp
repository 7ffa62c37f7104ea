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

bool known_code(int32_t code) {
  switch (code) {
    case RK_INVALID_ARGUMENT:
    case RK_NOT_FOUND:
    case RK_ALREADY_EXISTS:
    case RK_RESOURCE_EXHAUSTED:
    case RK_FAILED_PRECONDITION:
    case RK_UNIMPLEMENTED:
    case RK_INTERNAL: return true;
    default: return false;
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
  // What a plugin hands back is checked, not trusted: a code the ABI does not have, or no words,
  // still make a message that says what the plugin did wrong.
  std::string message = error->message.empty() ? "(the plugin's error has no message)" : error->message;
  if (error->code == RK_OK) message = "an error with the code RK_OK (0): " + message;
  else if (!known_code(error->code)) message = "an error with the unknown code " + std::to_string(error->code) + ": " + message;
  // Invalid arguments speak for themselves; other codes say what kind of failure it was.
  else if (error->code != RK_INVALID_ARGUMENT) message = std::string(code_name(error->code)) + ": " + message;
  if (error != &out_of_memory) delete error;
  return message;
}

}  // namespace rematkit::plugin_host
