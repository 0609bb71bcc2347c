// SPDX-License-Identifier: Apache-2.0
#include "tray/TrayIcons.h"

#include <QIconEngine>
#include <QPainter>
#include <QPainterPath>

#include <algorithm>

namespace tessera::ui {

using manager::AppState;

namespace {

// Draws the mosaic into rect. Colour is not the only cue (colour-blind users, monochrome
// panels): paused carries two bars, an error an exclamation mark, preparing a missing tile, and
// not started is drawn as outlines.
void paintMosaic(QPainter& p, const QRectF& rect, AppState state, bool disabled) {
    const qreal s = std::min(rect.width(), rect.height());
    const QPointF origin = rect.center() - QPointF(s / 2, s / 2);
    const qreal margin = s * 0.06;
    const qreal gap = std::max<qreal>(1.0, s * 0.08);
    const qreal tile = (s - 2 * margin - gap) / 2;
    const qreal radius = tile * 0.22;
    const QColor base = disabled ? QColor(0x8a, 0x8f, 0x98) : TrayIcons::colour(state);
    // A mosaic's tiles are never quite the same shade.
    const QColor shades[4] = {base, base.lighter(118), base.darker(112), base.lighter(106)};

    p.setRenderHint(QPainter::Antialiasing);
    for (int i = 0; i < 4; ++i) {
        const QRectF r(origin.x() + margin + (i % 2) * (tile + gap),
                       origin.y() + margin + (i / 2) * (tile + gap), tile, tile);
        const bool hollow = state == AppState::NotStarted ||
                            ((state == AppState::Preparing || state == AppState::Waiting) && i == 3);
        if (hollow) {
            const qreal pen = std::max<qreal>(1.0, s / 16);
            p.setPen(QPen(shades[i], pen));
            p.setBrush(Qt::NoBrush);
            p.drawRoundedRect(r.adjusted(pen / 2, pen / 2, -pen / 2, -pen / 2), radius, radius);
        } else {
            p.setPen(Qt::NoPen);
            p.setBrush(shades[i]);
            p.drawRoundedRect(r, radius, radius);
        }
        if (i != 3)
            continue;
        // The glyph sits on the last tile, in white.
        p.setPen(Qt::NoPen);
        p.setBrush(Qt::white);
        const qreal w = std::max<qreal>(1.0, tile * 0.2);
        if (state == AppState::Paused) {
            const qreal h = tile * 0.56;
            const qreal top = r.center().y() - h / 2;
            p.drawRect(QRectF(r.center().x() - w * 1.4, top, w, h));
            p.drawRect(QRectF(r.center().x() + w * 0.4, top, w, h));
        } else if (state == AppState::Error) {
            p.drawRect(QRectF(r.center().x() - w / 2, r.top() + tile * 0.16, w, tile * 0.44));
            p.drawRect(QRectF(r.center().x() - w / 2, r.top() + tile * 0.68, w, w));
        }
    }
}

class MosaicIconEngine final : public QIconEngine {
public:
    explicit MosaicIconEngine(AppState state)
        : m_state(state) {}

    void paint(QPainter* painter, const QRect& rect, QIcon::Mode mode, QIcon::State) override {
        painter->save();
        paintMosaic(*painter, rect, m_state, mode == QIcon::Disabled);
        painter->restore();
    }

    QPixmap pixmap(const QSize& size, QIcon::Mode mode, QIcon::State state) override {
        QPixmap pm(size);
        pm.fill(Qt::transparent);
        QPainter p(&pm);
        paint(&p, QRect(QPoint(0, 0), size), mode, state);
        return pm;
    }

    QIconEngine* clone() const override { return new MosaicIconEngine(m_state); }

    QList<QSize> availableSizes(QIcon::Mode, QIcon::State) override {
        return {{16, 16}, {22, 22}, {24, 24}, {32, 32}, {48, 48}, {64, 64}, {128, 128}, {256, 256}};
    }

private:
    AppState m_state;
};

} // namespace

QColor TrayIcons::colour(AppState state) {
    switch (state) {
    case AppState::Contributing:
        return QColor(0x2e, 0x9d, 0x57);
    case AppState::Paused:
        return QColor(0xe0, 0x98, 0x00);
    case AppState::Preparing:
    case AppState::Waiting:
        return QColor(0x3b, 0x7d, 0xd8);
    case AppState::Error:
        return QColor(0xd6, 0x45, 0x41);
    case AppState::NotStarted:
        break;
    }
    return QColor(0x8a, 0x8f, 0x98);
}

QIcon TrayIcons::icon(AppState state) {
    return QIcon(new MosaicIconEngine(state));
}

QPixmap TrayIcons::pixmap(AppState state, int size) {
    return icon(state).pixmap(size, size);
}

} // namespace tessera::ui
