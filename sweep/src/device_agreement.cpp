#include "device_agreement.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <vector>

namespace rematkit::sweep {
namespace {

// Every device's `mine`, in device order.
template <typename T>
std::vector<T> gathered(MeshTransport& transport, T mine, const char* what) {
  std::vector<int64_t> everyone(static_cast<size_t>(transport.mesh().num_devices()));
  std::iota(everyone.begin(), everyone.end(), int64_t{0});
  std::vector<T> all(everyone.size());
  transport.all_gather(std::string("sweep: ") + what, everyone, &mine, sizeof mine, all.data());
  return all;
}

}  // namespace

int64_t least_of_devices(MeshTransport& transport, int64_t mine, const char* what) {
  const std::vector<int64_t> all = gathered(transport, mine, what);
  return *std::min_element(all.begin(), all.end());
}

int64_t most_of_devices(MeshTransport& transport, int64_t mine, const char* what) {
  const std::vector<int64_t> all = gathered(transport, mine, what);
  return *std::max_element(all.begin(), all.end());
}

double most_of_devices(MeshTransport& transport, double mine, const char* what) {
  const std::vector<double> all = gathered(transport, mine, what);
  double most = all[0];
  for (double v : all) {
    if (std::isnan(v)) return v;
    most = std::max(most, v);
  }
  return most;
}

bool device_0s(MeshTransport& transport, bool mine, const char* what) {
  return gathered(transport, static_cast<uint8_t>(mine), what)[0] != 0;
}

}  // namespace rematkit::sweep
