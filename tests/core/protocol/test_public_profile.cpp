// SPDX-License-Identifier: Apache-2.0
// PublicProfile: a display name and a team are opt-in, at most 32 characters once trimmed and
// printable; hostile texts (control and format characters, bidi overrides, lone surrogates, line
// separators, overlong names, wrong types, unknown members) are refused with the field named; the
// profile a node sends is covered by its admission signature, and a request without one signs the
// same bytes as before profiles existed.
#include "common/Identity.h"
#include "protocol/AdmissionClaims.h"
#include "protocol/PublicProfile.h"

#include <QJsonDocument>
#include <QTest>

using namespace tessera;
using protocol::ProfileTextProblem;

namespace {

template <class R>
const char* failure(const R& r) {
    return r ? "" : r.message().c_str();
}

QJsonObject hardware() {
    return QJsonObject{{QStringLiteral("device"), QStringLiteral("cpu")},
                       {QStringLiteral("name"), QStringLiteral("test CPU")},
                       {QStringLiteral("memory_bytes"), qint64(8) << 30}};
}

QJsonObject bench() {
    return QJsonObject{{QStringLiteral("gflops"), 50.0}, {QStringLiteral("dtype"), QStringLiteral("fp32")}};
}

const QString kNonce = Identity::toBase64Url(QByteArray(32, 'n'));

QString repeated(const QString& s, int n) {
    QString out;
    for (int i = 0; i < n; ++i)
        out += s;
    return out;
}

} // namespace

class TestPublicProfile final : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase();
    void textRules_data();
    void textRules();
    void cleanedTextIsTrimmedAndComposed();
    void signedProfileParses();
    void noProfileSignsWhatOlderNodesSign();
    void tamperedProfileFailsTheSignature();
    void hostileProfileIsRefusedNamingTheField_data();
    void hostileProfileIsRefusedNamingTheField();
    void nodeOptionsAreCheckedToo();

private:
    std::optional<Identity> m_identity;
};

void TestPublicProfile::initTestCase() {
    Result<Identity> id = Identity::generate();
    QVERIFY2(id, failure(id));
    m_identity = *id;
}

void TestPublicProfile::textRules_data() {
    QTest::addColumn<QString>("text");
    QTest::addColumn<ProfileTextProblem>("problem");
    const auto ok = ProfileTextProblem::None;
    const auto tooLong = ProfileTextProblem::TooLong;
    const auto bad = ProfileTextProblem::NotPrintable;
    QTest::newRow("empty") << QString() << ok;
    QTest::newRow("plain") << QStringLiteral("Ada Lovelace") << ok;
    QTest::newRow("accents and scripts") << QStringLiteral("Zoë Ünal — Ковалёва 李") << ok;
    QTest::newRow("emoji (4-byte UTF-8)") << QStringLiteral("GPU fan \U0001F525") << ok;
    QTest::newRow("32 characters") << repeated(QStringLiteral("a"), 32) << ok;
    QTest::newRow("32 emoji (64 UTF-16 units)") << repeated(QStringLiteral("\U0001F600"), 32) << ok;
    QTest::newRow("32 once trimmed") << u"   "_qs + repeated(QStringLiteral("a"), 32) + u"  "_qs << ok;
    QTest::newRow("33 characters") << repeated(QStringLiteral("a"), 33) << tooLong;
    QTest::newRow("33 emoji") << repeated(QStringLiteral("\U0001F600"), 33) << tooLong;
    QTest::newRow("newline") << QStringLiteral("Ada\nLovelace") << bad;
    QTest::newRow("leading newline") << QStringLiteral("\nAda") << bad;
    QTest::newRow("tab") << QStringLiteral("Ada\tL") << bad;
    QTest::newRow("NUL") << QString(QStringLiteral("Ada") + QChar(0) + QStringLiteral("x")) << bad;
    QTest::newRow("escape sequence") << QStringLiteral("\x1b[31mred") << bad;
    QTest::newRow("DEL") << QStringLiteral("Ada\x7f") << bad;
    QTest::newRow("C1 control") << QString(QStringLiteral("Ada") + QChar(0x85)) << bad;
    QTest::newRow("right-to-left override")
        << QString(QStringLiteral("Ada") + QChar(0x202E) + u"cba"_qs) << bad;
    QTest::newRow("zero-width joiner") << QString(u"a"_qs + QChar(0x200D) + u"b"_qs) << bad;
    QTest::newRow("line separator") << QString(u"a"_qs + QChar(0x2028) + u"b"_qs) << bad;
    QTest::newRow("private use") << QString(u"a"_qs + QChar(0xE000)) << bad;
    QTest::newRow("lone high surrogate") << QString(u"a"_qs + QChar(0xD800)) << bad;
    QTest::newRow("lone low surrogate") << QString(QChar(0xDC00) + u"a"_qs) << bad;
}

void TestPublicProfile::textRules() {
    QFETCH(QString, text);
    QFETCH(ProfileTextProblem, problem);
    QCOMPARE(protocol::checkProfileText(text), problem);
}

void TestPublicProfile::cleanedTextIsTrimmedAndComposed() {
    QCOMPARE(protocol::cleanProfileText(QStringLiteral("  Ada  ")), QStringLiteral("Ada"));
    // "e" + combining acute is stored as the one composed "é": two spellings, one name.
    QCOMPARE(protocol::cleanProfileText(QString(u"Zoe"_qs + QChar(0x0301))), QStringLiteral("Zoé"));
}

void TestPublicProfile::signedProfileParses() {
    const protocol::PublicProfile profile{QStringLiteral("Ada"), QStringLiteral("Analytical Engines")};
    const QJsonObject request = protocol::makeAdmissionRequest(*m_identity, kNonce, hardware(), bench(),
                                                               QStringLiteral("0.2.0"), profile);
    QCOMPARE(request.value(u"profile").toObject().value(u"display_name").toString(), QStringLiteral("Ada"));
    Result<protocol::AdmissionClaims> c = protocol::parseAdmissionRequest(request);
    QVERIFY2(c, failure(c));
    QVERIFY(c->signatureValid());
    QCOMPARE(c->profile, profile);
    QVERIFY(c->signingPayload().startsWith("tessera-admission-v2\n"));

    // Only a team: no name, so the node is still shown as anonymous.
    const QJsonObject teamOnly = protocol::makeAdmissionRequest(
        *m_identity, kNonce, hardware(), bench(), QStringLiteral("0.2.0"), {QString(), QStringLiteral("T")});
    c = protocol::parseAdmissionRequest(teamOnly);
    QVERIFY2(c, failure(c));
    QVERIFY(c->signatureValid());
    QVERIFY(c->profile.displayName.isEmpty());
    QCOMPARE(c->profile.team, QStringLiteral("T"));
}

void TestPublicProfile::noProfileSignsWhatOlderNodesSign() {
    const QJsonObject request =
        protocol::makeAdmissionRequest(*m_identity, kNonce, hardware(), bench(), QStringLiteral("0.2.0"));
    QVERIFY(!request.contains(u"profile")); // anonymous: nothing sent at all
    Result<protocol::AdmissionClaims> c = protocol::parseAdmissionRequest(request);
    QVERIFY2(c, failure(c));
    QVERIFY(c->signatureValid());
    QVERIFY(c->profile.isEmpty());
    QCOMPARE(c->signingPayload(),
             protocol::admissionSigningPayload(m_identity->publicKeyBase64(), kNonce, hardware(), bench(),
                                               QStringLiteral("0.2.0")));
    QVERIFY(c->signingPayload().startsWith("tessera-admission-v1\n"));
}

void TestPublicProfile::tamperedProfileFailsTheSignature() {
    QJsonObject request =
        protocol::makeAdmissionRequest(*m_identity, kNonce, hardware(), bench(), QStringLiteral("0.2.0"),
                                       {QStringLiteral("Ada"), QStringLiteral("Analytical")});
    // Someone on the way renames the node, adds a profile to a request without one, or drops it.
    QJsonObject renamed = request;
    renamed.insert(QStringLiteral("profile"), QJsonObject{{QStringLiteral("display_name"), u"Mallory"_qs}});
    QJsonObject dropped = request;
    dropped.remove(QStringLiteral("profile"));
    QJsonObject added =
        protocol::makeAdmissionRequest(*m_identity, kNonce, hardware(), bench(), QStringLiteral("0.2.0"));
    added.insert(QStringLiteral("profile"), QJsonObject{{QStringLiteral("team"), u"Mallory"_qs}});
    for (const QJsonObject& r : {renamed, dropped, added}) {
        Result<protocol::AdmissionClaims> c = protocol::parseAdmissionRequest(r);
        QVERIFY2(c, failure(c));
        QVERIFY(!c->signatureValid());
    }
}

void TestPublicProfile::hostileProfileIsRefusedNamingTheField_data() {
    QTest::addColumn<QJsonValue>("profile");
    QTest::addColumn<QString>("error");
    QTest::newRow("not an object") << QJsonValue(u"Ada"_qs) << u"profile: must be an object"_qs;
    QTest::newRow("null") << QJsonValue(QJsonValue::Null) << u"profile: must be an object"_qs;
    QTest::newRow("name a number") << QJsonValue(QJsonObject{{u"display_name"_qs, 7}})
                                   << u"profile.display_name: must be a string"_qs;
    QTest::newRow("name too long") << QJsonValue(QJsonObject{{u"display_name"_qs, repeated(u"x"_qs, 33)}})
                                   << u"profile.display_name: must be at most 32 characters"_qs;
    QTest::newRow("name with a newline") << QJsonValue(QJsonObject{{u"display_name"_qs, u"a\nb"_qs}})
                                         << u"profile.display_name: must be printable"_qs;
    QTest::newRow("team with an escape") << QJsonValue(QJsonObject{{u"team"_qs, u"\x1b]0;owned\x07"_qs}})
                                         << u"profile.team: must be printable"_qs;
    QTest::newRow("team with a bidi override")
        << QJsonValue(QJsonObject{{u"team"_qs, QString(u"a"_qs + QChar(0x202E))}})
        << u"profile.team: must be printable"_qs;
    QTest::newRow("unknown member") << QJsonValue(QJsonObject{{u"avatar_url"_qs, u"https://x"_qs}})
                                    << u"profile.avatar_url: unknown field"_qs;
}

void TestPublicProfile::hostileProfileIsRefusedNamingTheField() {
    QFETCH(QJsonValue, profile);
    QFETCH(QString, error);
    QJsonObject request =
        protocol::makeAdmissionRequest(*m_identity, kNonce, hardware(), bench(), QStringLiteral("0.2.0"));
    request.insert(QStringLiteral("profile"), profile);
    Result<protocol::AdmissionClaims> c = protocol::parseAdmissionRequest(request);
    QVERIFY(!c);
    QVERIFY2(QString::fromStdString(c.message()).startsWith(error), c.message().c_str());
}

void TestPublicProfile::nodeOptionsAreCheckedToo() {
    Result<protocol::PublicProfile> p = protocol::makePublicProfile(u"  Ada "_qs, QString());
    QVERIFY2(p, failure(p));
    QCOMPARE(p->displayName, u"Ada"_qs);
    QVERIFY(p->team.isEmpty());
    p = protocol::makePublicProfile(QString(), repeated(u"t"_qs, 40));
    QVERIFY(!p);
    QCOMPARE(QString::fromStdString(p.message()), u"--team must be at most 32 characters"_qs);
    p = protocol::makePublicProfile(u"a\x07"_qs, QString());
    QVERIFY(!p);
    QVERIFY(QString::fromStdString(p.message()).startsWith(u"--display-name must be printable"_qs));
}

QTEST_GUILESS_MAIN(TestPublicProfile)
#include "test_public_profile.moc"
