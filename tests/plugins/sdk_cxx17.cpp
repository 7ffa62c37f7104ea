// The SDK's C++ headers compile as C++17 with -Wall -Wextra -pedantic -Werror (built by CMake; a
// failure fails the build): plugins are built with the SDK alone, by compilers rematkit's C++20
// does not require of them.
#include "rematkit/plugin/dimension_numbers.hpp"
#include "rematkit/plugin/fusion_view.hpp"
#include "rematkit/plugin/measured_cost.hpp"
#include "rematkit/plugin/param_reader.hpp"
#include "rematkit/plugin/plugin.hpp"
#include "rematkit/plugin/primitive_table.hpp"
#include "rematkit/plugin/threefry2x32.hpp"

// Instantiates the readers over an equation view, as a plugin does.
rematkit::ConvParams rematkit_sdk_cxx17_check(const rk_equation_view* eqn);
rematkit::ConvParams rematkit_sdk_cxx17_check(const rk_equation_view* eqn) {
  (void)rematkit::plugin::window_params(eqn);
  (void)rematkit::plugin::indexing_dims(eqn);
  return rematkit::plugin::conv_params(eqn);
}
