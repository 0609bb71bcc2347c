// SPDX-License-Identifier: Apache-2.0
#pragma once
// FakeUPower: the part of UPower's D-Bus object that the battery rule reads (OnBattery and its
// change signal), registered by the tests on a private bus.

#include <QDBusConnection>
#include <QObject>

namespace tessera::test {

class FakeUPower final : public QObject {
    Q_OBJECT
    Q_CLASSINFO("D-Bus Interface", "org.freedesktop.UPower")
    Q_PROPERTY(bool OnBattery READ onBattery)

public:
    // Registers itself as org.freedesktop.UPower on the bus at `address`.
    FakeUPower(const QString& address, bool onBattery);
    ~FakeUPower() override;

    bool registered() const { return m_registered; }
    bool onBattery() const { return m_onBattery; }
    // Changes OnBattery and announces it with PropertiesChanged, as upowerd does.
    void setOnBattery(bool onBattery);

private:
    QString m_name;
    QDBusConnection m_bus;
    bool m_onBattery;
    bool m_registered = false;
};

} // namespace tessera::test
