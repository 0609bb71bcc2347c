// SPDX-License-Identifier: Apache-2.0
#pragma once
// What the ui/ tests share: an app on a settings file of its own in a temporary folder, with a
// Manager whose pause detectors cannot see this machine's processes, GPU or display (a test must
// not pause because someone runs Steam on the build machine).

#include "IsolatedDetectors.h"
#include "manager/AppSettings.h"
#include "manager/Manager.h"
#include "manager/detectors/PauseDetectors.h"

#include <QAction>
#include <QDateTime>
#include <QFile>
#include <QTemporaryDir>
#include <QTest>
#include <QWidget>

#include <memory>

namespace tessera::test {

class UiFixture final {
public:
    UiFixture() {
        m_settings = std::make_unique<manager::AppSettings>(path(u"tessera.ini"));
        m_settings->setValue(manager::AppSettings::Key::DataDir, path(u"node"));
        // Nothing listens on port 1: the swarm's status fails fast and quietly.
        m_settings->setValue(manager::AppSettings::Key::CoordinatorUrl,
                             QStringLiteral("https://127.0.0.1:1"));
    }

    // The detectors' surroundings: an empty /proc, no NVML, no X display, no system bus.
    manager::DetectorContext isolated() const { return isolatedDetectors(m_dir.path()); }

    manager::Manager& manager() {
        if (!m_manager)
            m_manager = std::make_unique<manager::Manager>(*m_settings, isolated());
        return *m_manager;
    }

    // A stand-in node that starts and never answers on its control socket (a node still busy
    // starting up), for tests about the app rather than the node.
    void useSilentNode() {
        const QString script = path(u"silent-node.sh");
        QFile f(script);
        (void)f.open(QIODevice::WriteOnly);
        f.write("#!/bin/sh\nexec sleep 600\n");
        f.close();
        f.setPermissions(QFile::ReadOwner | QFile::WriteOwner | QFile::ExeOwner);
        m_settings->setValue(manager::AppSettings::Key::NodeProgram, script);
    }

    // Pins the manager's clock half a minute past the last noon that has passed (local time): a
    // test of "today" and "a moment ago" then never straddles midnight (CI ran one at 00:00 and
    // "a minute ago" fell on yesterday) nor a minute's turn. Returns that time.
    qint64 pinClockAtNoon() {
        const QDateTime now = QDateTime::currentDateTime();
        QDateTime noon(now.date(), QTime(12, 0, 30));
        if (noon > now)
            noon = noon.addDays(-1);
        const qint64 ms = noon.toMSecsSinceEpoch();
        manager().setClock([ms] { return ms; });
        return ms;
    }

    QString path(QStringView name) const { return m_dir.filePath(name.toString()); }
    manager::AppSettings& settings() { return *m_settings; }
    // The settings file as another process would read it.
    std::unique_ptr<manager::AppSettings> reread() {
        m_settings->sync();
        return std::make_unique<manager::AppSettings>(path(u"tessera.ini"));
    }

    // Stops the node cleanly (as Quit does) before the temporary folder goes.
    ~UiFixture() {
        if (m_manager) {
            m_manager->shutdown();
            bool done = false;
            QObject::connect(m_manager.get(), &manager::Manager::finished, [&done] { done = true; });
            for (int i = 0; i < 200 && !done; ++i)
                QTest::qWait(50);
        }
    }

private:
    QTemporaryDir m_dir;
    std::unique_ptr<manager::AppSettings> m_settings;
    std::unique_ptr<manager::Manager> m_manager;
};

// An action or a widget by its objectName, under root.
template <class T>
T* child(const QObject& root, const QString& name) {
    return root.findChild<T*>(name);
}

inline QAction* menuAction(const QWidget& menu, const QString& name) {
    for (QAction* action : menu.actions())
        if (action->objectName() == name)
            return action;
    return nullptr;
}

} // namespace tessera::test
