// The ABI's struct layouts are pinned: a change here is an ABI change (docs/plugin-abi.md says
// which version number it needs). Numbers for LP64 (x86-64, AArch64 Linux).
#include <gtest/gtest.h>

#include <cstddef>

#include "rematkit/plugin/plugin.hpp"
#include "rematkit/plugin/rk_backend.h"
#include "rematkit/plugin/rk_plugin.h"
#include "rematkit/plugin/rk_policy.h"

// 1.5 added no field (the rk_fusion equation is a convention of params): the layout is 1.4's.
// 1.8 added the dtype codes RK_DTYPE_C64 and RK_DTYPE_C128, no field.
static_assert(RK_ABI_MAJOR == 1 && RK_ABI_MINOR == 8);
static_assert(RK_DTYPE_C64 == 11 && RK_DTYPE_C128 == 12);

static_assert(sizeof(rk_version) == 4);
static_assert(offsetof(rk_host_api, abi) == 8 && offsetof(rk_host_api, error_new) == 16 &&
              offsetof(rk_host_api, log) == 24 && sizeof(rk_host_api) == 32);
static_assert(offsetof(rk_value, kind) == 8 && offsetof(rk_value, name) == 16 && offsetof(rk_value, int_value) == 24 &&
              offsetof(rk_value, float_value) == 32 && offsetof(rk_value, string_value) == 40 &&
              offsetof(rk_value, items) == 48 && offsetof(rk_value, num_items) == 56 && offsetof(rk_value, policy) == 64 &&
              offsetof(rk_value, policy_api) == 72 && sizeof(rk_value) == 80);
static_assert(offsetof(rk_type, dtype) == 8 && offsetof(rk_type, memory_space) == 12 && offsetof(rk_type, rank) == 16 &&
              offsetof(rk_type, shape) == 24 && sizeof(rk_type) == 32);
static_assert(offsetof(rk_equation_view, primitive) == 8 && offsetof(rk_equation_view, params) == 16 &&
              offsetof(rk_equation_view, num_params) == 24 && offsetof(rk_equation_view, inputs) == 32 &&
              offsetof(rk_equation_view, num_inputs) == 40 && offsetof(rk_equation_view, outputs) == 48 &&
              offsetof(rk_equation_view, num_outputs) == 56 && offsetof(rk_equation_view, site) == 64 &&
              offsetof(rk_equation_view, flops) == 72 && sizeof(rk_equation_view) == 80);
static_assert(offsetof(rk_plugin_api, abi) == 8 && offsetof(rk_plugin_api, name) == 16 &&
              offsetof(rk_plugin_api, version) == 24 && offsetof(rk_plugin_api, initialize) == 32 &&
              offsetof(rk_plugin_api, num_policies) == 40 && offsetof(rk_plugin_api, policies) == 48 &&
              offsetof(rk_plugin_api, num_backends) == 56 && offsetof(rk_plugin_api, backends) == 64 &&
              sizeof(rk_plugin_api) == 72);
static_assert(offsetof(rk_decision, kind) == 8 && offsetof(rk_decision, offload_src) == 12 &&
              offsetof(rk_decision, offload_dst) == 16 && offsetof(rk_decision, strength) == 20 &&
              sizeof(rk_decision) == 24);
static_assert(offsetof(rk_policy_api, name) == 8 && offsetof(rk_policy_api, create) == 16 &&
              offsetof(rk_policy_api, destroy) == 24 && offsetof(rk_policy_api, decide) == 32 &&
              offsetof(rk_policy_api, signature) == 40 && offsetof(rk_policy_api, survey) == 48 &&
              sizeof(rk_policy_api) == 56);
static_assert(offsetof(rk_tensor_view, type) == 8 && offsetof(rk_tensor_view, data) == 40 && sizeof(rk_tensor_view) == 48);
static_assert(offsetof(rk_backend_api, name) == 8 && offsetof(rk_backend_api, flags) == 16 &&
              offsetof(rk_backend_api, create) == 24 && offsetof(rk_backend_api, destroy) == 32 &&
              offsetof(rk_backend_api, supports) == 40 && offsetof(rk_backend_api, prepare) == 48 &&
              offsetof(rk_backend_api, execute) == 56 && offsetof(rk_backend_api, kernel_destroy) == 64 &&
              offsetof(rk_backend_api, expected_ns) == 72 && sizeof(rk_backend_api) == 80);
// Enum values are part of the ABI too.
static_assert(RK_SAVEABLE == 0 && RK_RECOMPUTE == 1 && RK_OFFLOADABLE == 2 && RK_MUST == 0 && RK_PREFER == 1);
static_assert(RK_VALUE_NONE == 0 && RK_VALUE_POLICY == 6 && RK_DTYPE_F32 == 0 && RK_DTYPE_BOOL == 2 &&
              RK_DTYPE_BF16 == 3 && RK_DTYPE_I8 == 9);
static_assert(RK_INVALID_ARGUMENT == 3 && RK_INTERNAL == 13);

TEST(AbiLayout, OldMinorStructsEndBeforeTheFieldsAMinorAdded) {
  // ABI 1.0's policy table ended at decide and its decision at offload_dst: RK_HAS_FIELD must say so.
  rk_policy_api old_table{};
  old_table.struct_size = RK_STRUCT_SIZE(rk_policy_api, decide);
  EXPECT_FALSE(RK_HAS_FIELD(&old_table, rk_policy_api, signature));
  EXPECT_TRUE(RK_HAS_FIELD(&old_table, rk_policy_api, decide));
  rk_decision old_decision{};
  old_decision.struct_size = RK_STRUCT_SIZE(rk_decision, offload_dst);
  EXPECT_FALSE(RK_HAS_FIELD(&old_decision, rk_decision, strength));
  // ABI 1.3's equation view ended at num_outputs: a 1.4 plugin reading it finds no site.
  rk_equation_view old_view{};
  old_view.struct_size = RK_STRUCT_SIZE(rk_equation_view, num_outputs);
  EXPECT_FALSE(RK_HAS_FIELD(&old_view, rk_equation_view, site));
  EXPECT_STREQ(rematkit::plugin::site_of(&old_view), "");
  EXPECT_EQ(rematkit::plugin::flops_of(&old_view), 0.0);
}
