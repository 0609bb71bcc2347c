// SPDX-License-Identifier: Apache-2.0
#pragma once
// What a manifest may name: a plain file name in its own directory (never a path that points
// elsewhere) and a SHA-256 as 64 lowercase hex characters. Shared by the shard and dataset
// manifests.

#include <algorithm>
#include <string_view>

namespace tessera::gpu {

inline bool isPlainFileNameChar(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
           c == '_' || c == '-';
}

// Letters, digits, '.', '_', '-'; not starting with '.'; at most 255 bytes; ending in `suffix` and
// longer than it.
inline bool isPlainFileName(std::string_view s, std::string_view suffix = {}) {
    return std::all_of(s.begin(), s.end(), isPlainFileNameChar) && s.size() > suffix.size() &&
           s.size() <= 255 && s.front() != '.' && s.ends_with(suffix);
}

inline bool isSha256Hex(std::string_view s) {
    return s.size() == 64 && std::all_of(s.begin(), s.end(), [](char c) {
               return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
           });
}

} // namespace tessera::gpu
