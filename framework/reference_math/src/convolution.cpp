// conv_general_dilated as XLA defines it (operation semantics, "Conv"): each output element sums,
// in double and in row-major order of (input feature, kernel position), the products of the
// kernel with the window of the lhs it covers. The lhs is read as if dilated (holes between its
// elements) and padded (negative padding cuts); holes and padding read as zero.
#include "loops.hpp"

namespace rematkit::reference {

// Groups: with feature_group_count G, output feature o reads the lhs features of its group,
// o / (O/G), each group C/G wide; with batch_group_count B, output feature o reads the lhs batch
// entries of its group, o / (O/B), each group N/B long (the output's batch is N/B).
void conv_general_dilated(const ConvParams& p, const Input& lhs, const Input& rhs, const Output& out) {
  const ConvDims& d = p.dims;
  const size_t spatial = d.lhs_spec.size() - 2;
  const Dims lstr = strides_of(lhs.shape), rstr = strides_of(rhs.shape);
  const int64_t in_features = rhs.shape[d.rhs_spec[1]], out_features = rhs.shape[d.rhs_spec[0]];
  const int64_t per_feature_group = out_features / p.feature_group_count;
  const int64_t per_batch_group = out_features / p.batch_group_count;
  const int64_t batch_group_size = lhs.shape[d.lhs_spec[0]] / p.batch_group_count;
  Dims window(spatial);  // the kernel's spatial sizes, in spec order
  for (size_t s = 0; s < spatial; ++s) window[s] = rhs.shape[d.rhs_spec[2 + s]];
  const int64_t window_size = count(window);
  Dims oc, kc;
  for (int64_t o = 0; o < static_cast<int64_t>(out.data.size()); ++o) {
    coords_of(o, out.shape, oc);
    const int64_t feature = oc[d.out_spec[1]];
    const int64_t batch = oc[d.out_spec[0]] + (feature / per_batch_group) * batch_group_size;
    const int64_t first_in_feature = (feature / per_feature_group) * in_features;
    double acc = 0.0;
    for (int64_t i = 0; i < in_features; ++i) {
      const int64_t lbase = batch * lstr[d.lhs_spec[0]] + (first_in_feature + i) * lstr[d.lhs_spec[1]];
      const int64_t rbase = feature * rstr[d.rhs_spec[0]] + i * rstr[d.rhs_spec[1]];
      for (int64_t k = 0; k < window_size; ++k) {
        coords_of(k, window, kc);
        int64_t loff = lbase, roff = rbase;
        bool inside = true;
        for (size_t s = 0; s < spatial && inside; ++s) {
          // The position in the dilated, padded lhs, then in the lhs itself.
          const int64_t at = oc[d.out_spec[2 + s]] * p.window_strides[s] + kc[s] * p.rhs_dilation[s] - p.padding[s].low;
          const int64_t x = at / p.lhs_dilation[s];
          inside = at >= 0 && at % p.lhs_dilation[s] == 0 && x < lhs.shape[d.lhs_spec[2 + s]];
          loff += x * lstr[d.lhs_spec[2 + s]];
          roff += kc[s] * rstr[d.rhs_spec[2 + s]];
        }
        if (inside) acc += lhs.data[loff] * rhs.data[roff];
      }
    }
    out.data[o] = acc;
  }
}

}  // namespace rematkit::reference
