// Pieces of the SVG files rematkit writes by hand (sweep charts, memory timelines).
#pragma once

#include <string>

#include "rematkit/io/export.hpp"

namespace rematkit {

// `text` with & < > " ' as XML entities: safe in an element's text and in a quoted attribute.
REMATKIT_IO_EXPORT std::string xml_escape(const std::string& text);

// A round distance between axis ticks, 1, 2 or 5 times a power of ten, that cuts (0, span] into
// about `ticks` parts (at most `ticks`, at least ticks / 2.5); 1 for a span that is not positive.
REMATKIT_IO_EXPORT double round_tick_step(double span, int ticks);

}  // namespace rematkit
