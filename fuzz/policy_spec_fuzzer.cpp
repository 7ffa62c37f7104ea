// A policy spec (what --policy and a checkpoint's policy= take, combinators included) parsed and
// then asked about every equation of a program with dots, named values and a checkpoint.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_guard.hpp"
#include "rematkit/autodiff/linearize.hpp"
#include "rematkit/ir/parser.hpp"
#include "rematkit/plugin_host/plugin_registry.hpp"

namespace {

const rematkit::Program& program() {
  static const rematkit::Program p = rematkit::parse_program(
      "{ lambda ; x:f32[4,3] w:f32[3,5] v:f32[2,4,3]. let\n"
      "    a:f32[4,5] = dot_general[dimension_numbers=(([1], [0]), ([], []))] x w\n"
      "    b:f32[4,5] = name[name=hidden] a\n"
      "    c:f32[4,5] = sin b\n"
      "    d:f32[2,4,4] = dot_general[dimension_numbers=(([2], [2]), ([0], [0]))] v v\n"
      "    e:f32[] = reduce_sum[axes=(0, 1)] c\n"
      "    f:f32[] = reduce_sum[axes=(0, 1, 2)] d\n"
      "    g:f32[] = add e f\n"
      "  in (g,) }\n",
      "policy_spec_fuzzer.jaxpr");
  return p;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return rematkit::fuzz::on_text(data, size, [](const std::string& text) {
    (void)rematkit::default_policies().parse(text, rematkit::SourceLocation{"fuzz-policy", 1, 1});
    rematkit::LinearizeOptions options;
    options.policies = &rematkit::default_policies();
    options.policy = text;
    (void)rematkit::linearize(program(), options);
  });
}
