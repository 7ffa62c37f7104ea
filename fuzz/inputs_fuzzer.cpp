// An inputs JSON file (what `rematkit grad --inputs` reads) against a program with an argument of
// each kind of element: f32 of rank 2, bf16 scalar, i32 vector, bool, a PRNG key and a complex vector.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_guard.hpp"
#include "rematkit/io/tensor_json.hpp"
#include "rematkit/ir/parser.hpp"

namespace {

const rematkit::Program& program() {
  static const rematkit::Program p = rematkit::parse_program(
      "{ lambda c:f32[2]; w:f32[2,3] s:bf16[] n:i32[3] m:bool[2] k:key<fry>[] z:c64[2]. let\n"
      "    a:f32[2] = reduce_sum[axes=(1,)] w\n"
      "    b:f32[2] = add a c\n"
      "  in (b,) }\n",
      "inputs_fuzzer.jaxpr");
  return p;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return rematkit::fuzz::on_text(data, size, [](const std::string& text) {
    const rematkit::ProgramInputs inputs = rematkit::parse_program_inputs(text, "fuzz.json", program());
    for (const rematkit::Tensor& t : inputs.arguments) (void)rematkit::tensor_to_json(t);
  });
}
