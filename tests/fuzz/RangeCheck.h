// SPDX-License-Identifier: Apache-2.0
#pragma once
// What any ByteRange must be for a file of `size` bytes: the whole file, one range inside it, or
// unsatisfiable; never a range that starts past the end or runs backwards.

#include "FuzzCheck.h"
#include "coordinator/http/ByteRange.h"

namespace tessera::fuzz {

inline void checkRange(const coordinator::http::ByteRange& range, qint64 size) {
    using Kind = coordinator::http::ByteRange::Kind;
    switch (range.kind) {
    case Kind::Whole:
        FUZZ_CHECK(range.first == 0 && range.last == size - 1);
        break;
    case Kind::Partial:
        FUZZ_CHECK(range.first >= 0 && range.first <= range.last && range.last < size);
        FUZZ_CHECK(range.length() >= 1 && range.length() <= size);
        break;
    case Kind::Unsatisfiable:
        FUZZ_CHECK(range.length() == 0);
        break;
    default:
        FUZZ_CHECK(!"unknown kind");
    }
}

} // namespace tessera::fuzz
