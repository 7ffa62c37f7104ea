#include "debug_print.hpp"

#include <cstdio>

namespace rematkit {
namespace {

// NumPy's way with an array: nested brackets, elements apart by spaces; scalars bare.
void append_value(std::string& out, const Tensor& t, size_t dim, size_t& index) {
  if (dim == t.type.shape.size()) {
    char text[64];
    const double v = t.data[index++];
    if (is_complex(t.type.dtype)) std::snprintf(text, sizeof text, "%.8g%+.8gj", v, t.imag[index - 1]);
    else if (t.type.dtype == DType::kBool) std::snprintf(text, sizeof text, "%s", v != 0 ? "True" : "False");
    else if (is_floating(t.type.dtype)) std::snprintf(text, sizeof text, "%.8g", v);
    else std::snprintf(text, sizeof text, "%lld", static_cast<long long>(v));
    out += text;
    return;
  }
  out += "[";
  for (int64_t i = 0; i < t.type.shape[dim]; ++i) {
    if (i) out += " ";
    append_value(out, t, dim + 1, index);
  }
  out += "]";
}

std::string value_text(const Tensor& t) {
  std::string out;
  size_t index = 0;
  append_value(out, t, 0, index);
  return out;
}

}  // namespace

std::string format_debug_print(const FlatEquation& eqn, const std::vector<Tensor>& operands) {
  const ParamValue* fmt = eqn.params.find("fmt");
  if (!fmt || fmt->kind != ParamValue::Kind::kString) {
    std::string out = "debug_callback at " + eqn.where.str() + ":";
    for (const Tensor& t : operands) out += " " + value_text(t);
    return out;
  }
  std::string out;
  size_t next = 0;
  const std::string& f = fmt->text;
  for (size_t i = 0; i < f.size(); ++i) {
    if (f[i] == '{' && i + 1 < f.size() && f[i + 1] == '{') {
      out += '{';
      ++i;
    } else if (f[i] == '}' && i + 1 < f.size() && f[i + 1] == '}') {
      out += '}';
      ++i;
    } else if (f[i] == '{' && f.find('}', i) != std::string::npos) {
      i = f.find('}', i);
      out += next < operands.size() ? value_text(operands[next++]) : std::string("{?}");
    } else {
      out += f[i];
    }
  }
  return out;
}

}  // namespace rematkit
