#include "rematkit/ir/near_names.hpp"

#include <algorithm>
#include <numeric>

namespace rematkit {

size_t edit_distance(const std::string& a, const std::string& b) {
  // Three rows of the dynamic program suffice: a transposition looks two rows back.
  std::vector<size_t> before(b.size() + 1), previous(b.size() + 1), current(b.size() + 1);
  std::iota(previous.begin(), previous.end(), size_t{0});
  for (size_t i = 1; i <= a.size(); ++i) {
    current[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t substitute = previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      current[j] = std::min({previous[j] + 1, current[j - 1] + 1, substitute});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        current[j] = std::min(current[j], before[j - 2] + 1);
    }
    std::swap(before, previous);
    std::swap(previous, current);
  }
  return previous[b.size()];
}

std::vector<std::string> near_names(const std::string& word, const std::vector<std::string>& known) {
  const size_t limit = std::max<size_t>(2, word.size() / 3);
  std::vector<std::pair<size_t, size_t>> scored;  // (distance, position in known)
  for (size_t k = 0; k < known.size(); ++k)
    if (const size_t d = edit_distance(word, known[k]); d <= limit && known[k] != word) scored.emplace_back(d, k);
  std::stable_sort(scored.begin(), scored.end());
  std::vector<std::string> out;
  for (size_t i = 0; i < scored.size() && i < 3; ++i) out.push_back(known[scored[i].second]);
  return out;
}

std::string did_you_mean(const std::string& word, const std::vector<std::string>& known) {
  const std::vector<std::string> near = near_names(word, known);
  if (near.empty()) return "";
  std::string out = " (did you mean ";
  for (size_t i = 0; i < near.size(); ++i)
    out += (i == 0 ? "" : i + 1 == near.size() ? " or " : ", ") + ("'" + near[i] + "'");
  return out + "?)";
}

}  // namespace rematkit
