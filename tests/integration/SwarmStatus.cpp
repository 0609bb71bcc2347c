// SPDX-License-Identifier: Apache-2.0
#include "SwarmStatus.h"

#include "CoordinatorHttp.h"

#include <QJsonArray>
#include <QSslCertificate>
#include <QStringList>
#include <QTest>

qint64 integer(const QJsonObject& o, QStringView key) {
    return o.value(key).toInteger(-1);
}

QString describeSwarm(const QJsonObject& s) {
    QStringList perStage;
    for (const QJsonValue& v : s.value(u"stages").toArray())
        perStage << u"%1+%2"_qs.arg(v.toObject().value(u"nodes").toInt())
                        .arg(v.toObject().value(u"ghosts").toInt());
    const QJsonObject mb = s.value(u"microbatches").toObject();
    return u"step %1 loss %2 tokens %3 joins %4 leaves %5 nodes/stage (routed+ghosts) [%6] microbatches "
           u"issued %7 completed %8 abandoned %9 in flight %10"_qs.arg(integer(s, u"step"))
               .arg(s.value(u"loss").toDouble(-1), 0, 'f', 4)
               .arg(integer(s, u"tokens"))
               .arg(integer(s, u"joins"))
               .arg(integer(s, u"leaves"))
               .arg(perStage.join(u' '))
               .arg(integer(mb, u"issued"))
               .arg(integer(mb, u"completed"))
               .arg(integer(mb, u"abandoned"))
               .arg(integer(mb, u"in_flight"));
}

StatusPoll::StatusPoll(const QString& coordinatorUrl, const QString& caFile)
    : ssl(QSslConfiguration::defaultConfiguration())
    , url(coordinatorUrl) {
    ssl.setCaCertificates(QSslCertificate::fromPath(caFile, QSsl::Pem));
}

using tessera::test::HttpReply;
using tessera::test::httpRequest;

bool StatusPoll::until(const std::function<bool(const QJsonObject&)>& done, int ms) {
    return QTest::qWaitFor(
        [&] {
            const HttpReply r = httpRequest(net, ssl, url + u"/v1/status"_qs, "GET", QByteArray(), 10'000);
            if (r.status == 200)
                s = r.json();
            return r.status == 200 && done(s);
        },
        ms);
}

bool StatusPoll::reached(qint64 step, int ms) {
    return until([step](const QJsonObject& status) { return integer(status, u"step") >= step; }, ms);
}
