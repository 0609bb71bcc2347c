#pragma once
// AdmissionApi: POST /v1/admission/challenge and POST /v1/admission over an AdmissionService.

#include "coordinator/http/HttpRequest.h"
#include "coordinator/http/HttpResponse.h"

namespace tessera::coordinator {

class AdmissionService;
class Database;
class Metrics;

class AdmissionApi final {
public:
    AdmissionApi(AdmissionService& service, Database& db, Metrics& metrics)
        : m_service(service)
        , m_db(db)
        , m_metrics(metrics) {}

    // {node_key} → 200 {nonce}; 400 naming the field.
    http::HttpResponse challenge(const http::HttpRequest& request);
    // Signed claims → 200 {node_id, session_token, stage, manifest}; 400 naming the field;
    // 401 bad signature or nonce; 403 denied; 503 + Retry-After {retry_after} waitlisted.
    http::HttpResponse admit(const http::HttpRequest& request);

private:
    AdmissionService& m_service;
    Database& m_db;
    Metrics& m_metrics;
};

} // namespace tessera::coordinator
