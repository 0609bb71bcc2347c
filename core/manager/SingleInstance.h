// SPDX-License-Identifier: Apache-2.0
#pragma once
// SingleInstance: one app per user. The first instance listens on a per-user local socket in a
// private directory (PrivateSocketDir: $XDG_RUNTIME_DIR/tessera, else <temp>/tessera-<uid>, 0700);
// a second one tells it to show its window, hears it answer, and exits. A name held by something
// else — another user's listener, a program that does not answer, a private directory another user
// created — is Blocked, with what holds it, so the app can say so instead of quitting silently.

#include <QObject>
#include <QString>

#include <optional>

class QLocalServer;

namespace tessera::manager {

class SingleInstance final : public QObject {
    Q_OBJECT

public:
    enum class Claim {
        First,   // this process listens now
        Second,  // another instance of this user answered; it has been asked to show itself
        Blocked, // the name is held by something that is not this user's app: see blocker()
    };

    // What holds the name when claim() said Blocked.
    struct Blocker {
        QString path;                  // the socket or the directory
        std::optional<unsigned> owner; // the uid of whoever holds it, when known
        QString detail;                // why, in English (the log; the ui words it with tr())
    };

    // name: a bare name ("tessera-<user>") is placed in the private socket directory; tests may
    // pass an absolute path.
    explicit SingleInstance(QString name, QObject* parent = nullptr);
    ~SingleInstance() override;

    Claim claim();
    const Blocker& blocker() const { return m_blocker; }
    QString socketPath() const { return m_path; } // empty until claim() placed it

Q_SIGNALS:
    void showRequested();

private:
    enum class Asked { NoOne, Shown, Blocked };
    // Connects to a running instance and asks it to show itself.
    Asked askToShow();
    Claim blocked(QString path, std::optional<unsigned> owner, QString detail);
    void serve();

    QString m_name;
    QString m_path;
    QLocalServer* m_server = nullptr;
    Blocker m_blocker;
};

QString defaultInstanceName();

} // namespace tessera::manager
