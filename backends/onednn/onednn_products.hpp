// dot_general on oneDNN 2.6's matmul (onednn_products.cpp): which products it takes, the layouts it
// reads them in, and what one costs. Shared by onednn_backend.cpp's plain and fused products.
#pragma once
#include <oneapi/dnnl/dnnl.hpp>

#include <functional>
#include <optional>

#include "onednn_recipe.hpp"

namespace rematkit_onednn {

// An operand of a matrix product as oneDNN sees it: logical dims (batch..., rows, cols) and the
// strides that read them from the row-major buffer.
struct Layout {
  dnnl::memory::dims dims, strides;
};

// How an operand whose columns are not contiguous (a transposed weight, A^T of a weight's
// gradient) reaches the matmul: by its strides, or copied once per run into the workspace in the
// plain layout. kChosen follows the rule in onednn_products.cpp; the others are the backend's
// `transposed_operands` option, for measuring both.
enum class TransposedOperands { kChosen, kStrides, kReordered };

// How bf16 operands are multiplied (the backend's bf16_matmul): natively where the CPU has
// AVX512_BF16, else widened; emulated by oneDNN on any AVX-512 core too; or widened everywhere (to
// measure, and test, the widening path on a CPU that has the native one).
enum class Bf16Products { kNative, kEmulated, kWidened };

// How a product's weights (its second operand) reach the matmul: in the blocked layout oneDNN's
// matmul prefers, copied there before each run where the rule in onednn_products.cpp pays for the
// copy (kPreferred), or as they lie (kAsItLies): the backend's `weights_layout` option.
enum class WeightsLayout { kPreferred, kAsItLies };
// How a large f32 product that oneDNN's matmul would run badly (the rule in onednn_products.cpp)
// is run: on oneDNN's sgemm (kSgemm) or on the matmul regardless (kMatmul): the backend's
// `large_operands` option.
enum class LargeOperands { kSgemm, kMatmul };

struct ProductOptions {
  Bf16Products bf16 = Bf16Products::kNative;
  TransposedOperands transposed = TransposedOperands::kChosen;
  WeightsLayout weights = WeightsLayout::kPreferred;
  LargeOperands large_operands = LargeOperands::kSgemm;
  // The backend's widened_block_bytes: the f32 bytes of a widened product's slices and result per
  // block (onednn_blocked_products.hpp); 0 widens every operand whole. The default, chosen by
  // timing the 768-wide gpt's bf16 step (docs/performance.md), keeps a block in a shared L3 rather
  // than a core's L2: smaller blocks made the step slower than widening whole, as each block's
  // primitive packs the uncut operand again.
  size_t widened_block_bytes = size_t{8} << 20;
};

// Whether oneDNN multiplies bf16 here, asked `how`: natively (AVX512_BF16 or AMX); when emulating,
// on any AVX-512 core too; never when asked to widen. Products and convolutions it does not
// multiply in bf16 are widened to f32.
bool multiplies_bf16(Bf16Products how);

// An operand whose columns are not contiguous: a matrix read transposed.
inline bool transposed(const Layout& l) { return l.dims.back() > 1 && l.strides.back() != 1; }

// The layouts of a dot_general whose operands' batch, free and contracted dims each read as one
// strided dim (a [B, S, D] activation times a [D, F] weight is (B*S, D) x (D, F); attention's
// [B, H, S, Dh] products batch over B*H); false otherwise. Dims only: the dtypes are the caller's.
bool matmul_layouts(const rk_equation_view* e, Layout& a, Layout& b, Layout& c, bool batch_dims_apart = false);

// A dot_general as a matmul: f32; bf16 natively where the CPU has AVX512_BF16 (or emulated on
// AVX-512 when asked); elsewhere bf16 and f16 widened to f32 in the workspace, the result rounded
// back when it is not f32. False for a product this backend does not run.
bool product_recipe(const dnnl::engine& engine, const rk_equation_view* e, const ProductOptions& options, Recipe& r);
// A fused product whose one reader is a transpose of its result (attention's heads put back in
// [B, S, H, Dh]: p v, and q's, k's and v's gradients, which dot_general's transpose rule permutes
// into the operands' dims): the matmul writes its result in the transposed layout, one pass fewer.
// Only where the product alone runs as one matmul on its operands as they lie and the kernel is
// the same: the same sums in the same order, stored elsewhere, so the unfused bits.
bool transposed_product_recipe(const dnnl::engine& engine, const rk_equation_view* e, const ProductOptions& options,
                               Recipe& r);

// The layout oneDNN's matmul of (am, bm[, bias], cm) prefers for its weights, where the rule in
// onednn_products.cpp takes it and it is not bm's; else nothing.
std::optional<dnnl::memory::desc> preferred_weights(const dnnl::engine& engine, const dnnl::memory::desc& am,
                                                    const dnnl::memory::desc& bm, const dnnl::memory::desc& bias,
                                                    const dnnl::memory::desc& cm, const dnnl::primitive_attr& attr,
                                                    const ProductOptions& options);

// Equation input `input` (laid out as `lies`) copied into `preferred` before each run: the copy and
// its reorder's scratchpad placed in `r`'s workspace after what `r` holds, the copy chained after
// `r`'s stage, and the input read from it.
void stage_weights(const dnnl::engine& engine, int input, const dnnl::memory::desc& lies,
                   const dnnl::memory::desc& preferred, Recipe& r);

// An f32 product of these layouts on dnnl_sgemm (beta 0: C written, never read), where the rule in
// onednn_products.cpp sends it there (a large operand the matmul would repack as it goes); else
// nothing. It asks for no workspace.
using SgemmCall = std::function<void(const float* a, const float* b, float* c)>;
std::optional<SgemmCall> large_product_on_sgemm(const dnnl::engine& engine, const Layout& a, const Layout& b,
                                                const Layout& c, const ProductOptions& options);

// One call's nanoseconds on one thread, from the measured rates (docs/performance.md); -1 when the
// backend does not run the product.
double product_expected_ns(const rk_equation_view* e, const ProductOptions& options);

}  // namespace rematkit_onednn
