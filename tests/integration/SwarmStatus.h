#pragma once
// What the swarm tests read from the coordinator's /v1/status.

#include <QJsonObject>
#include <QString>
#include <QStringView>

// An integer field of a status object; -1 when absent.
qint64 integer(const QJsonObject& o, QStringView key);

// One line for the test log: step, loss, tokens, churn, nodes per stage and the microbatch counts.
QString describeSwarm(const QJsonObject& status);
