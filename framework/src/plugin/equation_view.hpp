// One equation as the C ABI's rk_equation_view, with the storage it points into. Shared by
// plugin policies and backends. Internal to the plugin host.
#pragma once
#include <string>
#include <vector>

#include "c_values.hpp"
#include "rematkit/ir/params.hpp"
#include "rematkit/plugin/rk_plugin.h"
#include "rematkit/ir/types.hpp"

namespace rematkit::plugin_host {

rk_type c_type(const Type& type);

class CEquationView {
 public:
  CEquationView(std::string_view primitive, const Params& params, const std::vector<Type>& inputs,
                const std::vector<Type>& outputs, std::string_view site = {}, double flops = 0.0);
  CEquationView(const CEquationView&) = delete;
  CEquationView& operator=(const CEquationView&) = delete;
  const rk_equation_view* get() const { return &view_; }

 private:
  std::string primitive_, site_;
  CValues values_;
  std::vector<rk_value> params_;
  std::vector<Type> input_types_, output_types_;  // the shapes the views point into
  std::vector<rk_type> inputs_, outputs_;
  rk_equation_view view_{};
};

}  // namespace rematkit::plugin_host
