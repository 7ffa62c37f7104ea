#include "highway/kernel_list.hpp"

namespace rematkit::hwy_backend {
namespace {

using Offer = std::optional<Kernel> (*)(const Equation&);

template <class Kind>
std::optional<Kernel> offer(const Equation& eq) {
  if (std::optional<Kind> k = Kind::prepare(eq)) return Kernel(std::in_place_type<Kind>, std::move(*k));
  return std::nullopt;
}

// In order of preference. Kinds that read the same primitive: integer comparisons before f32 ones,
// a conversion into f32 before the f32-to-f32 copy (UnaryKernel), reductions that need no copy
// before those that permute first.
constexpr Offer kKernelList[] = {
    offer<FusedProductKernel>, offer<FusedElementwiseKernel>,
    offer<ScatterSumRowsKernel>,
    offer<GatherRowsKernel>,   offer<ScatterAddRowsKernel>,
    offer<CompareIntKernel>,   offer<CompareKernel>,
    offer<SelectKernel>,       offer<BitwiseKernel>,
    offer<BitcastKernel>,      offer<BroadcastKernel>,
    offer<IotaKernel>,         offer<RandomBitsKernel>,
    offer<RandomFoldInKernel>, offer<ConvertToF32Kernel>,
    offer<ReshapeKernel>,      offer<SliceKernel>,
    offer<ConcatenateKernel>,  offer<SplitKernel>,
    offer<PadKernel>,
    offer<PowKernel>,          offer<UnaryKernel>,
    offer<BinaryKernel>,       offer<SoftmaxKernel>,
    offer<PermuteKernel>,      offer<ReverseKernel>,
    offer<ReduceLeadingKernel>, offer<ReduceKernel>,
    offer<GemmKernel>,
};
static_assert(std::size(kKernelList) == std::variant_size_v<Kernel>, "every kind of Kernel is in the list once");

}  // namespace

std::optional<Kernel> choose_kernel(const rk_equation_view* e) {
  const Equation eq = Equation::of(e);
  for (const Offer offer_to : kKernelList)
    if (std::optional<Kernel> k = offer_to(eq)) return k;
  return std::nullopt;
}

}  // namespace rematkit::hwy_backend
