#include "rematkit/text_file.hpp"

#include <fstream>
#include <sstream>

#include "rematkit/error.hpp"

namespace rematkit {

std::string read_text_file(const std::string& path, const std::string& what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(path + ": cannot open the " + what);
  std::stringstream buffer;
  buffer << in.rdbuf();
  if (in.bad()) fail(path + ": cannot read the " + what);
  return buffer.str();
}

}  // namespace rematkit
