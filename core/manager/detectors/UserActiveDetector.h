// SPDX-License-Identifier: Apache-2.0
#pragma once
// UserActiveDetector: the "user-active" rule of "contribute only when idle" — pauses while someone
// has used the keyboard or mouse within the last few minutes.

#include "manager/PauseDetector.h"
#include "manager/detectors/X11Connection.h"

#include <chrono>

namespace tessera::manager {

class UserActiveDetector final : public PauseDetector {
public:
    // idleAfter: how long without input counts as idle. x11Display: empty: $DISPLAY.
    explicit UserActiveDetector(std::chrono::milliseconds idleAfter, const QString& x11Display = {});

    QString rule() const override { return QStringLiteral("user-active"); }
    std::optional<PauseCause> check() override;
    bool available() const override;
    QString unavailableReason() const override;

    // Time since the last keyboard or mouse input; nullopt when this machine cannot tell.
    std::optional<std::chrono::milliseconds> idleTime() const;

private:
    std::chrono::milliseconds m_idleAfter;
#if !defined(Q_OS_WIN) && !defined(Q_OS_MACOS)
    bool hasIdleExtension() const;

    X11Connection m_x11;
    mutable std::optional<bool> m_hasExtension; // MIT-SCREEN-SAVER, asked once
#endif
};

} // namespace tessera::manager
