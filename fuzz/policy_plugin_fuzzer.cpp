// A policy plugin that answers at random: the input is the script of the scripted test plugin
// (tests/plugins/scripted_policy.c), so create, survey and every decide answer what its bytes
// say: decisions, strengths and offload spaces in and out of the ABI's ranges, and errors with any
// code and with or without a message. Loaded through the real loader, called through the C ABI.
#include <dlfcn.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "fuzz_guard.hpp"
#include "rematkit/autodiff/linearize.hpp"
#include "rematkit/ir/parser.hpp"
#include "rematkit/plugin_host/plugin_registry.hpp"
#include "rematkit/autodiff/residual_report.hpp"

namespace {

using SetScript = void (*)(const unsigned char*, size_t);

struct Loaded {
  rematkit::PluginRegistry plugins;
  SetScript set_script = nullptr;
  rematkit::Program program;
};

const Loaded& loaded() {
  static const Loaded l = [] {
    Loaded out;
    out.plugins.load(REMATKIT_FUZZ_SCRIPTED_POLICY);
    void* handle = dlopen(REMATKIT_FUZZ_SCRIPTED_POLICY, RTLD_NOW | RTLD_NOLOAD);
    out.set_script = handle ? reinterpret_cast<SetScript>(dlsym(handle, "rk_scripted_policy_set")) : nullptr;
    if (!out.set_script) {
      std::fprintf(stderr, "fuzz: %s has no rk_scripted_policy_set\n", REMATKIT_FUZZ_SCRIPTED_POLICY);
      std::abort();
    }
    // Offloadable answers are honoured on pinned-host residuals; a checkpoint nests a second policy.
    out.program = rematkit::parse_program(
        "{ lambda ; x:f32[4,3] w:f32[3,5]. let\n"
        "    a:f32[4,5] = dot_general[dimension_numbers=(([1], [0]), ([], []))] x w\n"
        "    b:f32[4,5] = sin a\n"
        "    c:f32[4,5] = checkpoint[jaxpr={ lambda ; p:f32[4,5]. let q:f32[4,5] = cos p in (q,) } "
        "policy=scripted prevent_cse=True differentiated=False] b\n"
        "    d:f32[] = reduce_sum[axes=(0, 1)] c\n"
        "  in (d,) }\n",
        "policy_plugin_fuzzer.jaxpr");
    return out;
  }();
  return l;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const Loaded& l = loaded();
  l.set_script(data, size);
  rematkit::fuzz::expect_only_bad_input([&] {
    rematkit::LinearizeOptions options;
    options.policies = &l.plugins.policies();
    options.policy = "scripted";
    const rematkit::Linearization lin = rematkit::linearize(l.program, options);
    (void)rematkit::format_residual_report(lin, /*explain=*/false);
  });
  return 0;
}
