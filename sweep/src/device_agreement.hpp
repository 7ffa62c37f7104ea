// What the devices of a mesh agree on when each runs its own part of a sweep's group (a rank of
// mpirun each): the values exchanged through the group's transport, so that every device decides
// the same (how much memory there is, when timing stops) and the rows say the worst of any device.
#pragma once
#include <cstdint>

#include "rematkit/interpreter/mesh_transport.hpp"

namespace rematkit::sweep {

int64_t least_of_devices(MeshTransport& transport, int64_t mine, const char* what);
int64_t most_of_devices(MeshTransport& transport, int64_t mine, const char* what);
// NaN where any device's is NaN.
double most_of_devices(MeshTransport& transport, double mine, const char* what);
// Device 0's, on every device.
bool device_0s(MeshTransport& transport, bool mine, const char* what);

}  // namespace rematkit::sweep
