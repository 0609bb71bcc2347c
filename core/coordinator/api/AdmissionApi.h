// SPDX-License-Identifier: Apache-2.0
#pragma once
// AdmissionApi: POST /v1/admission/challenge and POST /v1/admission over an AdmissionService.

#include "coordinator/api/AddressRateLimiter.h"
#include "coordinator/http/HttpRequest.h"
#include "coordinator/http/HttpResponse.h"

namespace tessera::coordinator {

class AdmissionService;
class Database;
class Metrics;

class AdmissionApi final {
public:
    // perAddressPerMinute: requests to each route from one address in a minute (0: no limit);
    // one more gets 429 with Retry-After, before its body is looked at.
    AdmissionApi(AdmissionService& service, Database& db, Metrics& metrics, int perAddressPerMinute = 0)
        : m_service(service)
        , m_db(db)
        , m_metrics(metrics)
        , m_challenges(perAddressPerMinute)
        , m_admissions(perAddressPerMinute) {}

    // {node_key} → 200 {nonce} (nothing is written); 400 naming the field.
    http::HttpResponse challenge(const http::HttpRequest& request);
    // Signed claims → 200 {node_id, session_token, stage, manifest}; 400 naming the field;
    // 401 bad signature or nonce; 403 denied; 503 + Retry-After {retry_after} waitlisted;
    // 429 + Retry-After over the address's rate (both routes).
    http::HttpResponse admit(const http::HttpRequest& request);

private:
    AdmissionService& m_service;
    Database& m_db;
    Metrics& m_metrics;
    AddressRateLimiter m_challenges;
    AddressRateLimiter m_admissions;
};

} // namespace tessera::coordinator
