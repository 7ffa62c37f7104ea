// A widened bf16/f16 product (onednn_widening.hpp) too large for the caches, run in blocks: each
// block's operand slices widened into the workspace, an f32 matmul run on them, its result rounded
// into the output at once. Widening a whole operand and rounding a whole result goes to DRAM and
// back at these sizes; a block's slices and result stay in cache between the copy, the product and
// the rounding. Used by onednn_products.cpp where oneDNN has no bf16 or f16 kernel.
#pragma once
#include <oneapi/dnnl/dnnl.hpp>

#include <cstdint>
#include <optional>

#include "onednn_products.hpp"
#include "onednn_recipe.hpp"

namespace rematkit_onednn {

// The dim a product is split along. kBatch, kRows (M) and kColumns (N) leave each result element's
// sum over K to one primitive call; kContracted (K) sums the blocks' partial products in the f32
// result with oneDNN's sum post-op.
enum class Split { kBatch, kRows, kColumns, kContracted };

// How a product is split: `size` of the dim's `length` per block, the last block shorter when
// `size` does not divide it. A function of the shapes and the budget alone, so a shape gets the
// same blocks (and bits) in every run and under every policy.
struct BlockPlan {
  Split split;
  int64_t size, length;
  int64_t blocks() const { return (length + size - 1) / size; }
};

// The blocks a widened product with these layouts (matmul_layouts) runs in, for slices and a result
// of about `block_bytes` in f32 (ProductOptions::widened_block_bytes); none where it fits whole, the
// budget is 0, an operand is strided along both its rows and its columns, or one block of the
// smallest length would cover the split dim. A batched product splits its batch, one matrix per
// block at least.
std::optional<BlockPlan> plan_blocks(const Layout& a, const Layout& b, const Layout& c, size_t block_bytes);

// `e` (bf16 or f16 operands, laid out as a, b, c) as a recipe run in blocks (Recipe::make_run), when
// plan_blocks gives a plan; false otherwise, for the unblocked widening.
bool blocked_product_recipe(const dnnl::engine& engine, const rk_equation_view* e, const Layout& a, const Layout& b,
                            const Layout& c, size_t block_bytes, Recipe& r);

}  // namespace rematkit_onednn
