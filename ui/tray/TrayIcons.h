// SPDX-License-Identifier: Apache-2.0
#pragma once
// TrayIcons: the app's icon for each state — a 2×2 mosaic of tiles in the state's colour, painted
// at whatever size the tray or the window manager asks for (no image files, no SVG plugin).

#include "manager/Manager.h"

#include <QColor>
#include <QIcon>
#include <QPixmap>

namespace tessera::ui {

class TrayIcons final {
public:
    // Painted on demand at every size requested; the disabled mode is drawn in grey.
    static QIcon icon(manager::AppState state);
    static QPixmap pixmap(manager::AppState state, int size);
    // Green contributing, amber paused, blue preparing or waiting, red error, grey not started.
    static QColor colour(manager::AppState state);
};

} // namespace tessera::ui
