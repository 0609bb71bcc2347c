// SPDX-License-Identifier: Apache-2.0
#pragma once
// What the swarm tests read from the coordinator's /v1/status.

#include <QJsonObject>
#include <QNetworkAccessManager>
#include <QSslConfiguration>
#include <QString>
#include <QStringView>

#include <functional>

// An integer field of a status object; -1 when absent.
qint64 integer(const QJsonObject& o, QStringView key);

// One line for the test log: step, loss, tokens, churn, nodes per stage and the microbatch counts.
QString describeSwarm(const QJsonObject& status);

// Polls a coordinator's /v1/status (TLS, its certificate trusted) until a condition holds or the time
// is up; `s` keeps the last answer.
struct StatusPoll {
    QNetworkAccessManager net;
    QSslConfiguration ssl;
    QString url;
    QJsonObject s;

    StatusPoll(const QString& coordinatorUrl, const QString& caFile);
    bool until(const std::function<bool(const QJsonObject&)>& done, int ms = 300'000);
    // Until the training step is at least `step`.
    bool reached(qint64 step, int ms = 300'000);
    qint64 step() const { return integer(s, u"step"); }
};
