// Large arrays of drawn values without a page fault per page: a gigabyte of params is a quarter of
// a million faults, each slow on a virtual machine (as long as drawing the values, there).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>
#if __has_include(<sys/mman.h>)
#include <sys/mman.h>
#include <unistd.h>
#endif

namespace rematkit::random {

// n value-initialized elements, their pages made present in one call (madvise(2)'s
// MADV_POPULATE_WRITE, Linux 5.14) before they are zeroed rather than faulted in one at a time as
// they are. Where the call is refused or not defined, the pages fault in as usual.
template <class T>
std::vector<T> with_present_pages(size_t n) {
  std::vector<T> values;
  values.reserve(n);
#ifdef MADV_POPULATE_WRITE
  const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const uintptr_t begin = (reinterpret_cast<uintptr_t>(values.data()) + page - 1) / page * page;
  const uintptr_t end = reinterpret_cast<uintptr_t>(values.data() + n) / page * page;
  if (end > begin) madvise(reinterpret_cast<void*>(begin), end - begin, MADV_POPULATE_WRITE);
#endif
  values.resize(n);
  return values;
}

}  // namespace rematkit::random
