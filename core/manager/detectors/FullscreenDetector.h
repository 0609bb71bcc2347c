// SPDX-License-Identifier: Apache-2.0
#pragma once
// FullscreenDetector: the "fullscreen" rule — pauses while a full-screen app (a game, a video, a
// presentation) is in front.

#include "manager/PauseDetector.h"
#include "manager/detectors/X11Connection.h"

#include <QHash>

namespace tessera::manager {

struct DetectorContext;

class FullscreenDetector final : public PauseDetector {
public:
    // Reads context.x11Display (X11) and context.procRoot (the window's process name).
    explicit FullscreenDetector(const DetectorContext& context);
    ~FullscreenDetector() override;

    QString rule() const override { return QStringLiteral("fullscreen"); }
    std::optional<PauseCause> check() override;
    bool available() const override;
    QString unavailableReason() const override;

private:
#if !defined(Q_OS_WIN)
    // X11 (EWMH): the name of the full-screen window in front; nullopt when there is none.
    std::optional<QString> frontFullscreenWindow();
    bool isFullscreen(unsigned long window);
    std::optional<unsigned long> fullscreenTopLevel(); // without a window manager
    QString windowName(unsigned long window);

    X11Connection m_x11;
    QString m_procRoot;
    QHash<unsigned long, QString> m_names; // window → its app's name
#endif
};

} // namespace tessera::manager
