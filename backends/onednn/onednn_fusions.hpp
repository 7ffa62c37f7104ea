// Fused equations (rematkit/plugin/fusion_view.hpp) on oneDNN: a product with its bias and
// post-ops as one matmul (or its sgemm, then the bias and post-ops as one binary), and an
// elementwise chain led by a binary op as that binary with the rest as post-ops.
#pragma once
#include <oneapi/dnnl/dnnl.hpp>

#include "onednn_products.hpp"
#include "onednn_recipe.hpp"
#include "rematkit/plugin/plugin.hpp"

namespace rematkit_onednn {

bool fused_matmul_recipe(const dnnl::engine& engine, const ProductOptions& products, const rk_equation_view* e,
                         Recipe& r);
bool fused_binary_recipe(const dnnl::engine& engine, const rk_equation_view* e, Recipe& r);

}  // namespace rematkit_onednn
