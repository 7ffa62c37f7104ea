#include "rematkit/io/tensor_json.hpp"
#include "rematkit/io/text_file.hpp"
#include "rematkit/ir/nesting_limit.hpp"

#include <cmath>
#include <cstdio>
#include <set>

#include <nlohmann/json.hpp>

namespace rematkit {
namespace {

using Json = nlohmann::json;

// Appends the elements of `j` in row-major order, checking it has `shape` from dim `d` on.
void flatten(const Json& j, const Shape& shape, size_t d, std::vector<double>& out, const std::string& what,
             std::string path) {
  if (d == shape.size()) {
    if (j.is_boolean()) out.push_back(j.get<bool>() ? 1.0 : 0.0);
    else if (j.is_number()) out.push_back(j.get<double>());
    else fail(what + path + " must be a number, got " + std::string(j.type_name()));
    return;
  }
  if (!j.is_array() || static_cast<int64_t>(j.size()) != shape[d])
    fail(what + path + " must be a list of " + std::to_string(shape[d]) + " (the binder's shape is " +
         shape_str(shape) + "), got " + (j.is_array() ? "a list of " + std::to_string(j.size()) : std::string(j.type_name())));
  for (size_t i = 0; i < j.size(); ++i) flatten(j[i], shape, d + 1, out, what, path + "[" + std::to_string(i) + "]");
}

Tensor read_binder(const Json& j, const Var& var, const std::string& source) {
  const std::string what = source + ": input '" + var.name + "'";
  Tensor t{var.type, {}};
  t.type.space = MemorySpace::kDevice;
  if (var.type.dtype == DType::kKeyFry) {  // each key as its two u32 words, as random_unwrap gives them
    Shape words_shape = var.type.shape;
    words_shape.push_back(2);
    std::vector<double> words;
    flatten(j, words_shape, 0, words, what, "");
    for (size_t i = 0; i < words.size(); ++i)
      if (words[i] != std::floor(words[i]) || words[i] < 0 || words[i] > 4294967295.0)
        fail(what + " word " + std::to_string(i) + " is not a u32 value (a key is two u32 words)");
    for (size_t i = 0; i < words.size(); i += 2)
      t.data.push_back(key_element(static_cast<uint32_t>(words[i]), static_cast<uint32_t>(words[i + 1])));
    return t;
  }
  if (is_complex(var.type.dtype)) {  // each element as [real, imaginary]
    Shape parts_shape = var.type.shape;
    parts_shape.push_back(2);
    std::vector<double> parts;
    flatten(j, parts_shape, 0, parts, what, "");
    for (size_t i = 0; i < parts.size(); ++i) {
      const double stored = round_to_dtype(parts[i], var.type.dtype, Arithmetic::kFloat32);
      if (!std::isfinite(stored))
        fail(what + " element " + std::to_string(i / 2) + " has a part that is not a finite " +
             std::string(dtype_name(complex_part_dtype(var.type.dtype))) + " value");
      (i % 2 ? t.imag : t.data).push_back(stored);
    }
    return t;
  }
  flatten(j, var.type.shape, 0, t.data, what, "");
  for (size_t i = 0; i < t.data.size(); ++i) {
    double v = t.data[i];
    double stored = round_to_dtype(v, var.type.dtype, Arithmetic::kFloat32);
    if (!std::isfinite(stored) || (!is_floating(var.type.dtype) && stored != v)) {
      char shown[32];
      std::snprintf(shown, sizeof shown, "%g", v);
      fail(what + " element " + std::to_string(i) + " (" + shown + ") is not a finite " +
           std::string(dtype_name(var.type.dtype)) + " value");
    }
    t.data[i] = stored;
  }
  return t;
}

// A real number with the digits that read `dtype` back exactly (9 for f32 and narrower, 17 for f64);
// null for NaN and infinities, which JSON lacks.
std::string json_number(double v, DType dtype) {
  if (!std::isfinite(v)) return "null";
  char buf[32];
  std::snprintf(buf, sizeof buf, dtype == DType::kF64 ? "%.17g" : "%.9g", v);
  return buf;
}

void write_json(std::string& out, const Tensor& t, size_t d, int64_t& index) {
  if (d == t.type.shape.size()) {
    double v = t.data[static_cast<size_t>(index++)];
    if (is_complex(t.type.dtype)) {
      const DType part = complex_part_dtype(t.type.dtype);
      out += "[" + json_number(v, part) + ", " + json_number(t.imag[static_cast<size_t>(index - 1)], part) + "]";
    } else if (t.type.dtype == DType::kKeyFry) {
      out += "[" + std::to_string(key_word(v, 0)) + ", " + std::to_string(key_word(v, 1)) + "]";
    } else if (t.type.dtype == DType::kBool) {
      out += v != 0 ? "true" : "false";
    } else if (!std::isfinite(v)) {
      out += "null";  // JSON has no NaN or infinity
    } else if (is_integer(t.type.dtype)) {
      out += std::to_string(static_cast<int64_t>(v));
    } else {
      out += json_number(v, t.type.dtype);
    }
    return;
  }
  out += "[";
  for (int64_t i = 0; i < t.type.shape[d]; ++i) {
    if (i) out += ", ";
    write_json(out, t, d + 1, index);
  }
  out += "]";
}

// Refuses arrays and objects nested past kMaxDocumentNesting at the bracket that goes past it.
// nlohmann-json parses any depth without recursing; this keeps the reader's promise (one limit for
// every document) and names the place, which its parser callback cannot.
void check_nesting(const std::string& text, const std::string& source) {
  int depth = 0, line = 1, column = 0;
  bool in_string = false, escaped = false;
  for (const char c : text) {
    ++column;
    if (c == '\n') ++line, column = 0;
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if ((c == '[' || c == '{') && ++depth > kMaxDocumentNesting) {
      fail_too_deep(SourceLocation{source, line, column}, "JSON arrays and objects", kMaxDocumentNesting);
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
}

// `text` read as JSON. Not only a syntax error: a number past a double's range is
// nlohmann-json's out_of_range (found by fuzzing), and both are bad input.
Json parsed_json(const std::string& text, const std::string& source) {
  check_nesting(text, source);
  try {
    return Json::parse(text);
  } catch (const Json::exception& e) {
    std::string message = e.what();
    if (auto p = message.find("] "); message.rfind("[json.exception.", 0) == 0 && p != std::string::npos)
      message = message.substr(p + 2);
    fail(source + ": not valid JSON: " + message);
  }
}

}  // namespace

ProgramInputs parse_program_inputs(const std::string& text, const std::string& source, const Program& program) {
  const Json root = parsed_json(text, source);
  if (!root.is_object()) fail(source + ": must be a JSON object mapping argument names to values");
  std::set<std::string> names;
  auto take = [&](int var) {
    const Var& v = program.vars[var];
    names.insert(v.name);
    auto it = root.find(v.name);
    if (it == root.end()) fail(source + ": missing input '" + v.name + "' (" + v.type.str() + ")");
    return read_binder(*it, v, source);
  };
  ProgramInputs inputs;
  for (int v : program.constvars) inputs.constants.push_back(take(v));
  for (int v : program.invars) inputs.arguments.push_back(take(v));
  for (const auto& [key, value] : root.items())
    if (!names.count(key)) fail(source + ": '" + key + "' is not an argument or constant of the program");
  return inputs;
}

ProgramInputs load_program_inputs(const std::string& path, const Program& program) {
  const std::string text = read_text_file(path, "inputs file");
  if (text.find_first_not_of(" \t\r\n") == std::string::npos) fail(path + ": the inputs file is empty");
  return parse_program_inputs(text, path, program);
}

std::vector<float> parse_json_vector(const std::string& text, const std::string& source) {
  const Json root = parsed_json(text, source);
  if (!root.is_array()) fail(source + ": must be a JSON array of numbers");
  std::vector<float> out;
  for (size_t i = 0; i < root.size(); ++i) {
    if (!root[i].is_number()) fail(source + ": element " + std::to_string(i) + " is not a number");
    out.push_back(static_cast<float>(root[i].get<double>()));
  }
  return out;
}

std::string tensor_to_json(const Tensor& tensor) {
  std::string out;
  int64_t index = 0;
  write_json(out, tensor, 0, index);
  return out;
}

}  // namespace rematkit
