// The alignment the host promises plugins for every buffer and workspace (rk_backend.h): below
// both the arena layout, which places buffers at it, and the backend kernels, which allocate
// workspaces at it.
#pragma once

#include <cstdint>

namespace rematkit {

constexpr int64_t kBufferAlignment = 64;  // every offset and size: a cache line, and AVX-512's vector

}  // namespace rematkit
