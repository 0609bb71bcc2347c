// SPDX-License-Identifier: Apache-2.0
#pragma once
// CreditsApi: GET /v1/nodes/{node_id}/credits — a node's signed, hash-chained credit receipts.

#include "coordinator/http/HttpRequest.h"
#include "coordinator/http/HttpResponse.h"

#include <QString>

namespace tessera::coordinator {

class Database;

class CreditsApi final {
public:
    // A page holds at most this many receipts; `?after=` the last seq fetches the next.
    static constexpr int kPageSize = 1000;

    CreditsApi(Database& db, QString coordinatorKey)
        : m_db(db)
        , m_coordinatorKey(std::move(coordinatorKey)) {}

    // 200 {node_id, receipts, total_micro_credits, total_credits, last_seq, coordinator_key};
    // 404 unknown node; 400 a bad `after`. Totals cover every receipt, not only the page.
    http::HttpResponse credits(const http::HttpRequest& request);

private:
    Database& m_db;
    QString m_coordinatorKey;
};

} // namespace tessera::coordinator
