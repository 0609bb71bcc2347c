// SPDX-License-Identifier: Apache-2.0
#pragma once
// Migrations: the coordinator's schema history, one numbered step after another, never edited
// once released (a new version is appended instead).

#include <vector>

namespace tessera::coordinator {

struct Migration {
    int version;
    const char* description;
    // Run in order inside one transaction. Portable SQL only: the same text runs on SQLite and
    // PostgreSQL (BIGINT, TEXT, INTEGER; explicit keys; times as BIGINT milliseconds since the
    // Unix epoch, UTC).
    std::vector<const char*> statements;
};

// Ascending by version, starting at 1, without gaps.
const std::vector<Migration>& migrations();

} // namespace tessera::coordinator
