// What rematkit gives plugins: the host api (error factory, log) and the errors it makes.
// Internal to the plugin host.
#pragma once
#include <string>

#include "rematkit/plugin/rk_plugin.h"

namespace rematkit::plugin_host {

const rk_host_api* host_api();
// The message of a plugin's error (with its kind unless it is an invalid argument); frees it.
std::string take_error(rk_error* error);

}  // namespace rematkit::plugin_host
