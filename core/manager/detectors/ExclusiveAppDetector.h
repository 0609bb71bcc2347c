// SPDX-License-Identifier: Apache-2.0
#pragma once
// ExclusiveAppDetector: the "exclusive-app" rule — pauses while a process the user listed (a game,
// a launcher) is running.

#include "manager/PauseDetector.h"
#include "manager/detectors/ProcessScanner.h"

#include <QSet>
#include <QStringList>

namespace tessera::manager {

class ExclusiveAppDetector final : public PauseDetector {
public:
    // apps: process names as the user wrote them; case and a trailing ".exe" do not matter, so
    // that "Witcher3" finds witcher3.exe under Wine and "steam.exe" finds Linux's steam.
    explicit ExclusiveAppDetector(const QStringList& apps, const QString& procRoot = QStringLiteral("/proc"));

    QString rule() const override { return QStringLiteral("exclusive-app"); }
    std::optional<PauseCause> check() override;

    // The form names are compared in: lower case, without ".exe".
    static QString normalized(const QString& name);

private:
    bool matches(const QString& processName) const;

    QSet<QString> m_apps;          // normalized
    QStringList m_truncatableApps; // normalized, longer than Linux keeps in comm
    ProcessScanner m_scanner;
};

} // namespace tessera::manager
