// Tensors as JSON nested lists: reading a program's inputs file and writing results.
#pragma once

#include <string>
#include <vector>

#include "rematkit/io/export.hpp"
#include "rematkit/ir/program.hpp"
#include "rematkit/interpreter/tensor.hpp"

namespace rematkit {

struct ProgramInputs {
  std::vector<Tensor> constants;  // in binder order
  std::vector<Tensor> arguments;  // in binder order
};

// Reads `path`: a JSON object mapping every constant and argument name to a number or nested list
// of the binder's shape. Missing or unknown names, wrong shapes, non-numbers and values that are
// not finite in the binder's dtype are bad-input errors naming the file and the binder.
REMATKIT_IO_EXPORT ProgramInputs load_program_inputs(const std::string& path, const Program& program);
REMATKIT_IO_EXPORT ProgramInputs parse_program_inputs(const std::string& json_text, const std::string& source, const Program& program);

// A JSON array of numbers (e.g. an x file) as floats; anything else is a bad-input error naming `source`.
REMATKIT_IO_EXPORT std::vector<float> parse_json_vector(const std::string& json_text, const std::string& source);

// The tensor as a nested JSON list (a bare number for a scalar); floats with 9 significant digits.
REMATKIT_IO_EXPORT std::string tensor_to_json(const Tensor& tensor);

}  // namespace rematkit
