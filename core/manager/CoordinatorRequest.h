// SPDX-License-Identifier: Apache-2.0
#pragma once
// CoordinatorRequest: how the app asks its coordinator anything over HTTPS (the swarm's status,
// the first-run check): the address as typed made a base URL, whether it is one, and the request
// — trusting the system's authorities plus the coordinator's certificate file, with a transfer
// timeout, no redirects followed, JSON accepted.

#include "base/Result.h"

#include <QNetworkRequest>
#include <QString>
#include <QUrl>

namespace tessera::manager {

// "https://host:7443/" typed with spaces → "https://host:7443".
QString coordinatorBase(const QString& url);
// An http(s) URL with a host.
bool isCoordinatorUrl(const QUrl& url);
// Fails when caFile (empty: none) holds no PEM certificate.
Result<QNetworkRequest> coordinatorRequest(const QUrl& url, const QString& caFile, int timeoutMs);

} // namespace tessera::manager
