// SPDX-License-Identifier: Apache-2.0
#pragma once
// BatteryDetector: the "battery" rule — pauses while the computer runs on its battery.

#include "manager/PauseDetector.h"

#include <QDBusConnection>
#include <QObject>
#include <QStringList>
#include <QVariantMap>

namespace tessera::manager {

class BatteryDetector final : public QObject, public PauseDetector {
    Q_OBJECT

public:
    // busAddress (Linux): the D-Bus bus UPower is on, an address such as "unix:path=…" (tests: a
    // private bus); empty: the system bus. UPower is asked once and then followed through its
    // change signals, so check() only reads a cached answer and never waits on D-Bus.
    explicit BatteryDetector(const QString& busAddress = {}, QObject* parent = nullptr);
    ~BatteryDetector() override;

    QString rule() const override { return QStringLiteral("battery"); }
    std::optional<PauseCause> check() override;
    bool available() const override;
    QString unavailableReason() const override;

private Q_SLOTS:
    void onPropertiesChanged(const QString& interface, const QVariantMap& changed,
                             const QStringList& invalidated);
    void onUPowerAppeared();
    void onUPowerGone();

private:
    void askOnBattery();

    QString m_connectionName; // our own connection to a private bus; empty: the shared system bus
    QDBusConnection m_bus;
    bool m_onBattery = false;
    QString m_unavailable; // why UPower's answer is not known; empty once it is
};

} // namespace tessera::manager
