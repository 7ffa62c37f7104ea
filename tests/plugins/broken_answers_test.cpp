// A policy plugin whose answers break the ABI (an enum value it does not have, an error without
// a message or with an unknown code, no policy and no error) is an error that names the policy and
// what it answered: never undefined behaviour, never a guess.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <vector>

#include "rematkit/autodiff/linearize.hpp"
#include "rematkit/ir/parser.hpp"
#include "rematkit/plugin_host/plugin_registry.hpp"

namespace rematkit::testing {
namespace {

using SetScript = void (*)(const unsigned char*, size_t);

class BrokenAnswers : public ::testing::Test {
 protected:
  void SetUp() override {
    plugins_.load(REMATKIT_TEST_SCRIPTED_POLICY);
    void* handle = dlopen(REMATKIT_TEST_SCRIPTED_POLICY, RTLD_NOW | RTLD_NOLOAD);
    ASSERT_NE(handle, nullptr);
    set_ = reinterpret_cast<SetScript>(dlsym(handle, "rk_scripted_policy_set"));
    ASSERT_NE(set_, nullptr);
  }

  // The message of the error linearizing a two-equation program under the scripted policy, whose
  // create, survey and decide answer `script` in that order ("" when there is none).
  std::string error_of(const std::vector<int>& script) {
    std::vector<unsigned char> bytes;
    for (int b : script) bytes.push_back(static_cast<unsigned char>(static_cast<signed char>(b)));
    set_(bytes.data(), bytes.size());
    const Program program = parse_program("{ lambda ; x:f32[3]. let\n    y:f32[3] = sin x\n"
                                          "    z:f32[] = reduce_sum[axes=(0,)] y\n  in (z,) }\n", "p.jaxpr");
    LinearizeOptions options;
    options.policies = &plugins_.policies();
    options.policy = "scripted";
    try {
      linearize(program, options);
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kBadInput) << e.what();
      return e.what();
    }
    return "";
  }

  PluginRegistry plugins_;
  SetScript set_ = nullptr;
};

// Bytes: create, survey, then per decide kind, strength, offload source, offload destination.
constexpr int kOk = 0, kSaveable = 0, kOffloadable = 2, kMust = 0, kError = 100;

TEST_F(BrokenAnswers, AWellFormedScriptLinearizes) {
  EXPECT_EQ(error_of({kOk, kOk, kSaveable, kMust, 0, 0}), "");
  EXPECT_EQ(error_of({kOk, kOk, kSaveable, 1 /* RK_PREFER */, 0, 0}), "");
}

TEST_F(BrokenAnswers, EnumValuesOutsideTheAbiAreNamed) {
  EXPECT_NE(error_of({kOk, kOk, 7, kMust, 0, 0}).find("policy scripted answered an unknown decision 7"),
            std::string::npos);
  EXPECT_NE(error_of({kOk, kOk, -1, kMust, 0, 0}).find("policy scripted answered an unknown decision -1"),
            std::string::npos);
  EXPECT_NE(error_of({kOk, kOk, kSaveable, 5, 0, 0}).find("policy scripted answered an unknown decision strength 5"),
            std::string::npos);
  EXPECT_NE(error_of({kOk, kOk, kOffloadable, kMust, 0, 9}).find("policy scripted answered an unknown memory space 9"),
            std::string::npos);
}

TEST_F(BrokenAnswers, ErrorsWithoutAMessageOrWithAnUnknownCodeSaySo) {
  EXPECT_NE(error_of({kOk, kOk, kError, 13 /* RK_INTERNAL */, 0 /* NULL */})
                .find("policy scripted: internal error: (the plugin's error has no message)"),
            std::string::npos);
  EXPECT_NE(error_of({kOk, kOk, kError, 3 /* RK_INVALID_ARGUMENT */, 1 /* "" */})
                .find("policy scripted: (the plugin's error has no message)"),
            std::string::npos);
  EXPECT_NE(error_of({kOk, kOk, kError, 77, 2}).find("policy scripted: an error with the unknown code 77: the script says no"),
            std::string::npos);
  EXPECT_NE(error_of({kOk, kOk, kError, 0, 2}).find("policy scripted: an error with the code RK_OK (0): the script says no"),
            std::string::npos);
}

TEST_F(BrokenAnswers, CreateAndSurveyAreNamedWhenTheyFail) {
  EXPECT_NE(error_of({7}).find("policy scripted: create returned no policy and no error"), std::string::npos);
  EXPECT_NE(error_of({6, 3, 2}).find("the script says no"), std::string::npos);
  EXPECT_NE(error_of({kOk, 5, 3, 2}).find("policy scripted (survey): the script says no"), std::string::npos);
}

}  // namespace
}  // namespace rematkit::testing
