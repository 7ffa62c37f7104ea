#include "prepared_kernels.hpp"

namespace rematkit {
namespace {

// The memoised answer for `key`, made by `make` on the first ask (nothing is kept when it throws).
template <typename Map, typename Make>
typename Map::mapped_type remembered(Map& answers, const typename Map::key_type& key, const Make& make) {
  if (auto it = answers.find(key); it != answers.end()) return it->second;
  return answers.emplace(key, make()).first->second;
}

}  // namespace

std::shared_ptr<const PreparedKernel> PreparedKernels::equation(const FlatGraph& graph, const FlatEquation& eqn) {
  return remembered(equations_, &eqn, [&] { return std::shared_ptr<const PreparedKernel>(backends_.bind(graph, eqn)); });
}

int PreparedKernels::chosen(const FlatGraph& graph, const FlatEquation& eqn) {
  return remembered(chosen_, &eqn, [&] { return backends_.chosen(graph, eqn); });
}

std::shared_ptr<const LoopProgram> PreparedKernels::loop(const FlatGraph& graph, const FlatEquation& eqn) {
  return remembered(loops_, &eqn, [&] { return std::shared_ptr<const LoopProgram>(build_loop_program(graph, eqn, backends_)); });
}

std::shared_ptr<const PreparedKernel> PreparedKernels::fused(const FusedKey& key,
                                                            const std::function<std::unique_ptr<PreparedKernel>()>& prepare) {
  return remembered(fused_, key, [&] { return std::shared_ptr<const PreparedKernel>(prepare()); });
}

}  // namespace rematkit
