#pragma once
// SingleInstance: one app per user. The first instance listens on a per-user local socket; a
// second one tells it to show its window and exits.

#include <QObject>
#include <QString>

class QLocalServer;

namespace tessera::manager {

class SingleInstance final : public QObject {
    Q_OBJECT

public:
    // name: the socket's name ("tessera-<user>"); tests pass their own.
    explicit SingleInstance(QString name, QObject* parent = nullptr);
    ~SingleInstance() override;

    // True when this process is the first: it now listens. False when another instance answered;
    // it has been asked to show itself.
    bool claim();

Q_SIGNALS:
    void showRequested();

private:
    // Connects to a running instance and asks it to show itself; false when none answers.
    bool askToShow() const;

    QString m_name;
    QLocalServer* m_server = nullptr;
};

QString defaultInstanceName();

} // namespace tessera::manager
