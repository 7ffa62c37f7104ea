#include "onednn_elementwise.hpp"

#include <algorithm>

namespace rematkit_onednn {
namespace {

// Runs of an output's dims that every operand reads alike (each has the run's dims, or broadcasts
// along all of them) collapsed into one dim, at least two dims in all. Collapsed, a softmax's
// [B, H, S, 1] row max beside its [B, H, S, S] scores is [B*H*S, 1] beside [B*H*S, S], and a bias
// row [1, 1, D] beside [B, S, D] is [1, D] beside [B*S, D]: oneDNN 2.6 runs both with its JIT
// kernels, where as they were it runs its reference code.
class CollapsedDims {
 public:
  // Nothing where an operand neither has a dim of `out` nor broadcasts along it.
  static std::optional<CollapsedDims> of(const Dims& out, const std::vector<Dims>& operands) {
    CollapsedDims c;
    c.full_ = out;
    c.group_of_.assign(out.size(), -1);
    Dims runs;
    std::vector<char> last;  // per operand: whether it has the current run's dims
    for (size_t d = 0; d < out.size(); ++d) {
      if (out[d] == 1) continue;  // a size-1 dim reads alike either way
      std::vector<char> has;
      for (const Dims& o : operands) {
        const std::optional<Dims> s = as_rank(o, out.size());
        if (!s || ((*s)[d] != out[d] && (*s)[d] != 1)) return std::nullopt;
        has.push_back((*s)[d] == out[d] ? 1 : 0);
      }
      if (runs.empty() || has != last) runs.push_back(1);
      runs.back() *= out[d];
      c.group_of_[d] = static_cast<int>(runs.size()) - 1;
      last = std::move(has);
    }
    c.leading_ones_ = runs.size() < 2 ? 2 - runs.size() : 0;
    c.out_ = Dims(c.leading_ones_, 1);
    c.out_.insert(c.out_.end(), runs.begin(), runs.end());
    return c;
  }
  const Dims& out() const { return out_; }
  // An operand's dims collapsed the same way; nothing where it reads a run otherwise.
  std::optional<Dims> operand(const Dims& shape) const {
    const std::optional<Dims> padded = as_rank(shape, full_.size());
    if (!padded) return std::nullopt;
    const Dims& s = *padded;
    Dims dims(out_.size(), 1);
    std::vector<int> kind(out_.size(), -1);  // per run: 1 where it has the run's dims, 0 where it broadcasts
    for (size_t d = 0; d < full_.size(); ++d) {
      if (s[d] != full_[d] && s[d] != 1) return std::nullopt;
      if (group_of_[d] < 0) continue;
      const size_t g = static_cast<size_t>(group_of_[d]) + leading_ones_;
      const int k = s[d] == 1 ? 0 : 1;
      if (kind[g] >= 0 && kind[g] != k) return std::nullopt;
      kind[g] = k;
      dims[g] *= s[d];
    }
    return dims;
  }

 private:
  // A shape of lower rank with size-1 dims in front (a scalar: all 1), as broadcasting reads it.
  static std::optional<Dims> as_rank(const Dims& shape, size_t rank) {
    if (shape.size() > rank) return std::nullopt;
    Dims s(rank - shape.size(), 1);
    s.insert(s.end(), shape.begin(), shape.end());
    return s;
  }
  size_t leading_ones_ = 0;
  Dims full_, out_;  // the output's dims, and collapsed
  std::vector<int> group_of_;  // per dim of the output: its run, -1 for a size-1 dim
};

}  // namespace

dnnl::memory::desc row_major(const Dims& shape) {
  Dims dims = shape.empty() ? Dims{1} : shape;  // oneDNN has no rank-0 tensors
  Dims strides(dims.size(), 1);
  for (int i = static_cast<int>(dims.size()) - 2; i >= 0; --i) strides[i] = strides[i + 1] * dims[i + 1];
  return dnnl::memory::desc(dims, dnnl::memory::data_type::f32, strides);
}

std::optional<BinaryOperands> binary_operands(dnnl::algorithm algorithm, Dims s0, Dims s1, const Dims& out,
                                              std::vector<Dims> also) {
  auto as_out_rank = [&](Dims shape) { return shape.empty() ? Dims(out.size(), 1) : shape; };
  s0 = as_out_rank(std::move(s0));
  s1 = as_out_rank(std::move(s1));
  bool swapped = false;
  if (s0 != out) {  // only the second source may broadcast
    const bool commutes = algorithm == dnnl::algorithm::binary_add || algorithm == dnnl::algorithm::binary_mul ||
                          algorithm == dnnl::algorithm::binary_max || algorithm == dnnl::algorithm::binary_min;
    if (!commutes || s1 != out) return std::nullopt;
    std::swap(s0, s1);
    swapped = true;
  }
  also.push_back(s1);
  std::optional<CollapsedDims> dims = CollapsedDims::of(out, also);
  if (!dims) return std::nullopt;
  const std::optional<Dims> c1 = dims->operand(s1);
  if (!c1) return std::nullopt;
  return BinaryOperands{dims->out(), *c1, swapped};
}

}  // namespace rematkit_onednn
