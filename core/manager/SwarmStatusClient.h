// SPDX-License-Identifier: Apache-2.0
#pragma once
// SwarmStatusClient: fetches the coordinator's /v1/status (nodes online, global step, loss
// curve) for the dashboard, trusting the configured certificate like the node does.

#include <QJsonObject>
#include <QObject>
#include <QString>

class QNetworkAccessManager;
class QNetworkReply;

namespace tessera::manager {

class SwarmStatusClient final : public QObject {
    Q_OBJECT

public:
    // The most a status may weigh; a larger answer is refused, not buffered.
    static constexpr qint64 kMaxReplyBytes = 1 << 20;

    explicit SwarmStatusClient(QObject* parent = nullptr);
    ~SwarmStatusClient() override;

    void setCoordinator(const QString& url, const QString& caFile);
    // One request (a request already in flight is not repeated); the answer comes as a signal.
    void refresh();
    const QJsonObject& lastStatus() const { return m_status; }
    const QString& lastError() const { return m_error; }

Q_SIGNALS:
    void statusChanged(const QJsonObject& status);
    void failed(const QString& error);

private:
    void finish(QNetworkReply* reply);
    void fail(const QString& error);

    QNetworkAccessManager* m_network;
    QString m_url;
    QString m_caFile;
    QJsonObject m_status;
    QString m_error;
    QNetworkReply* m_reply = nullptr; // the request in flight
    QString m_sslErrors;              // why the certificate was refused, for the message
    bool m_tooLarge = false;          // the reply in flight passed kMaxReplyBytes
};

} // namespace tessera::manager
