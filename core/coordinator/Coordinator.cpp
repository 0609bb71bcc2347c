// SPDX-License-Identifier: Apache-2.0
#include "coordinator/Coordinator.h"

#include "common/Identity.h"
#include "common/TlsCertificate.h"
#include "common/WallClock.h"
#include "coordinator/CoordinatorRun.h"
#include "coordinator/DatasetSpec.h"
#include "coordinator/RunPreparation.h"
#include "coordinator/admission/AdmissionService.h"
#include "coordinator/api/AdmissionApi.h"
#include "coordinator/api/CreditsApi.h"
#include "coordinator/api/Metrics.h"
#include "coordinator/api/NodeMessageCap.h"
#include "coordinator/api/OperatorPage.h"
#include "coordinator/api/SessionApi.h"
#include "coordinator/api/ShardApi.h"
#include "coordinator/api/StatusApi.h"
#include "coordinator/api/SwarmApi.h"
#include "coordinator/http/HttpServer.h"
#include "coordinator/store/Database.h"
#include "coordinator/store/NonceStore.h"
#include "coordinator/store/SessionStore.h"
#include "coordinator/training/StageCheckpoints.h"
#include "coordinator/training/Trainer.h"

#include <QDateTime>
#include <QDir>
#include <QFile>
#include <QHostInfo>
#include <QLockFile>
#include <QTimer>

#include <chrono>
#include <optional>

namespace tessera::coordinator {

using http::HttpRequest;
using http::HttpResponse;

namespace {

std::string str(const QString& s) {
    return s.toStdString();
}

qint64 nowMs() {
    return WallClock::nowMs();
}

// How long a clean stop waits for sessions to take their close frames.
constexpr std::chrono::seconds kStopGrace{2};

// Spent and expired nonces and sessions are only garbage: a slow sweep is enough.
constexpr std::chrono::minutes kPurgeInterval{1};

Status createDataDir(const QString& path) {
    if (path.isEmpty())
        return makeError("--data-dir is required: the folder that holds the run, its key and database");
    if (QDir(path).exists())
        return {};
    if (!QDir().mkpath(path))
        return makeError("cannot create the data dir " + str(path));
    // It holds the coordinator's private keys.
    QFile::setPermissions(path, QFile::ReadOwner | QFile::WriteOwner | QFile::ExeOwner);
    return {};
}

QStringList certificateNames(const ListenAddress& listen) {
    QStringList names{QStringLiteral("localhost"), QStringLiteral("127.0.0.1"), QStringLiteral("::1")};
    const QHostAddress& a = listen.address;
    if (a == QHostAddress::AnyIPv4 || a == QHostAddress::AnyIPv6 || a == QHostAddress::Any)
        names << QHostInfo::localHostName();
    else if (!names.contains(a.toString()))
        names << a.toString();
    names.removeAll(QString());
    names.removeDuplicates();
    return names;
}

// The checks of the options that need no state: the listen address (returned), plain HTTP only on
// loopback, the operator's certificate and key together, the dataset's spec.
Result<ListenAddress> checkOptions(const CoordinatorOptions& options) {
    Result<ListenAddress> listen = parseListenAddress(options.listen);
    if (!listen)
        return listen.error();
    if (options.insecureLoopback && (!options.tlsCert.isEmpty() || !options.tlsKey.isEmpty()))
        return makeError("--insecure-loopback and --tls-cert/--tls-key contradict each other: choose one");
    if (options.insecureLoopback && !listen->address.isLoopback())
        return makeError(
            "refusing plain HTTP on " + str(listen->address.toString()) +
            ": --insecure-loopback only serves a loopback address (127.0.0.1, ::1, localhost). "
            "Drop --insecure-loopback to serve HTTPS (a certificate is made when none is given)");
    if (options.tlsCert.isEmpty() != options.tlsKey.isEmpty())
        return makeError("--tls-cert and --tls-key go together: give both, or neither for a self-signed "
                         "certificate in the data dir");

    if (!options.dataset.isEmpty())
        if (Result<DatasetSpec> d = DatasetSpec::parse(options.dataset); !d)
            return d.error();
    return listen;
}

// The operator's certificate and key (--tls-cert, --tls-key); none when not given.
Result<std::optional<TlsCertificate>> loadGivenCertificate(const CoordinatorOptions& options) {
    if (options.tlsCert.isEmpty())
        return std::optional<TlsCertificate>();
    Result<TlsCertificate> loaded = TlsCertificate::load(options.tlsCert, options.tlsKey);
    if (!loaded)
        return makeError("the TLS certificate: " + loaded.message());
    return std::optional<TlsCertificate>(std::move(*loaded));
}

} // namespace

Result<ListenAddress> parseListenAddress(const QString& text) {
    const qsizetype colon = text.lastIndexOf(u':');
    const QString usage = QStringLiteral(" (expected HOST:PORT, e.g. 0.0.0.0:8443 or [::1]:8443)");
    if (colon <= 0)
        return makeError("--listen " + str(text) + ": no port" + str(usage));
    QString host = text.left(colon);
    bool portOk = false;
    const uint port = text.mid(colon + 1).toUInt(&portOk);
    if (!portOk || port > 65535)
        return makeError("--listen " + str(text) + ": bad port" + str(usage));
    if (host.startsWith(u'[') && host.endsWith(u']'))
        host = host.mid(1, host.size() - 2);
    else if (host.contains(u':'))
        return makeError("--listen " + str(text) + ": an IPv6 address goes in brackets" + str(usage));
    ListenAddress out;
    out.port = quint16(port);
    if (host.compare(u"localhost", Qt::CaseInsensitive) == 0)
        out.address = QHostAddress(QHostAddress::LocalHost);
    else if (!out.address.setAddress(host))
        return makeError("--listen " + str(text) + ": '" + str(host) + "' is not an IP address" + str(usage));
    return out;
}

// Everything the coordinator owns; members are destroyed in reverse order, so the server (and
// with it every handler) goes before what the handlers use, and the preparation (its writer thread
// joined) before the run and database it records into.
struct Coordinator::Parts {
    std::unique_ptr<QLockFile> lock; // first: released after everything else is closed
    std::unique_ptr<Database> db;
    std::optional<Identity> key;
    std::optional<CoordinatorRun> run;
    std::unique_ptr<RunPreparation> preparation; // shards written, checkpoints read; kept once done
    CoordinatorOptions options;
    std::function<void(const Status&)> prepared;
    Metrics metrics;
    std::unique_ptr<AdmissionService> admission;
    std::unique_ptr<AdmissionApi> admissionApi;
    std::unique_ptr<ShardApi> shardApi;
    std::unique_ptr<StatusApi> statusApi;
    std::unique_ptr<CreditsApi> creditsApi;
    std::unique_ptr<SwarmApi> swarmApi;
    OperatorPage operatorPage;
    std::unique_ptr<SessionApi> sessionApi;
    std::unique_ptr<Trainer> trainer;
    std::unique_ptr<http::HttpServer> server;
    QTimer purgeTimer;
    bool stopping = false;
    bool serving = false; // serve() succeeded: the data plane runs, every route answers
    QString scheme;
    ListenAddress listen;

    // Every route counts its requests for /metrics. What needs the run's published weights
    // (admission, shards, sessions) answers 503 while they are written or read.
    enum class Needs { Nothing, Weights };
    void route(const QByteArray& method, const QString& pattern,
               std::function<HttpResponse(const HttpRequest&)> h, Needs needs = Needs::Nothing) {
        server->route(method, pattern, [this, pattern, needs, h = std::move(h)](const HttpRequest& r) {
            metrics.countRequest(pattern);
            if (needs == Needs::Weights && !serving)
                return preparation->unavailable();
            return h(r);
        });
    }
    // The steps of Coordinator::start, in its order.
    Status lockDataDir(const QDir& dataDir);
    Status loadKey(const QDir& dataDir);
    Status openDatabase();
    Status openRun();
    void createApis();
    void createServer(const std::optional<TlsCertificate>& tls);
    // Starts the preparation (RunPreparation), then listens: the API answers while it runs.
    Status listenWhilePreparing();
    // Purges spent nonces and expired sessions every kPurgeInterval.
    void startPurging();
    void addRoutes();
    // The part that needs every stage's checkpoint: the data plane and the sessions.
    Status serve(PreparedRun ready);
    void prepareDone();
};

Coordinator::Coordinator()
    : m_parts(std::make_unique<Parts>()) {}

Coordinator::~Coordinator() = default;

Result<std::unique_ptr<Coordinator>> Coordinator::start(const CoordinatorOptions& options) {
    // Checks that need no state come first: a refused start leaves nothing behind.
    Result<ListenAddress> listen = checkOptions(options);
    if (!listen)
        return listen.error();
    // The operator's certificate and key are checked before the data dir is made.
    Result<std::optional<TlsCertificate>> given = loadGivenCertificate(options);
    if (!given)
        return given.error();

    if (Status s = createDataDir(options.dataDir); !s)
        return s.error();
    const QDir dataDir(options.dataDir);
    std::unique_ptr<Coordinator> c(new Coordinator);
    Parts& p = *c->m_parts;
    p.listen = *listen;
    p.options = options;
    if (Status s = p.lockDataDir(dataDir); !s)
        return s.error();
    if (Status s = p.loadKey(dataDir); !s)
        return s.error();

    std::optional<TlsCertificate> tls;
    if (!options.insecureLoopback) {
        c->m_tlsCertPath = *given ? options.tlsCert : dataDir.filePath(QStringLiteral("tls.crt"));
        Result<TlsCertificate> loaded =
            *given
                ? Result<TlsCertificate>(std::move(**given))
                : TlsCertificate::loadOrCreate(c->m_tlsCertPath, dataDir.filePath(QStringLiteral("tls.key")),
                                               certificateNames(*listen));
        if (!loaded)
            return makeError("the TLS certificate: " + loaded.message());
        c->m_tlsFingerprint = loaded->sha256Fingerprint();
        tls = std::move(*loaded);
    }

    if (Status s = p.openDatabase(); !s)
        return s.error();
    if (Status s = p.openRun(); !s)
        return s.error();
    p.createApis();
    p.createServer(tls);
    if (Status s = p.listenWhilePreparing(); !s)
        return s.error();
    p.startPurging();
    return c;
}

Status Coordinator::Parts::lockDataDir(const QDir& dataDir) {
    // One coordinator per data dir: two would write the same shards, checkpoints and database. A
    // lock left by a process that died is taken over (QLockFile checks its pid); age alone never
    // makes a lock stale (a run holds it for months).
    lock = std::make_unique<QLockFile>(dataDir.filePath(QStringLiteral("coordinator.lock")));
    lock->setStaleLockTime(0);
    if (lock->tryLock(0))
        return {};
    qint64 pid = 0;
    QString host, app;
    lock->getLockInfo(&pid, &host, &app);
    if (lock->error() == QLockFile::LockFailedError)
        return makeError("another tessera-coordinator (pid " + std::to_string(pid) + " on " + str(host) +
                         ") is using the data dir " + str(dataDir.absolutePath()) +
                         ": stop it first, or give this one another --data-dir");
    return makeError("cannot lock the data dir " + str(dataDir.absolutePath()) +
                     " (coordinator.lock): check that it is writable");
}

Status Coordinator::Parts::loadKey(const QDir& dataDir) {
    Result<Identity> loaded = Identity::loadOrCreate(dataDir.filePath(QStringLiteral("coordinator.key")));
    if (!loaded)
        return makeError("the coordinator key: " + loaded.message());
    key = std::move(*loaded);
    return {};
}

Status Coordinator::Parts::openDatabase() {
    Result<std::unique_ptr<Database>> opened = Database::open(options.dbUrl, options.dataDir);
    if (!opened)
        return opened.error();
    db = std::move(*opened);
    if (Result<int> migrated = db->migrate(); !migrated)
        return makeError(str(db->displayName()) + ": " + migrated.message());
    // Times stored by an earlier process stay in the past, even if the system clock has stepped back.
    Result<qint64> stored = db->latestStoredTimeMs();
    if (!stored)
        return makeError(str(db->displayName()) + ": " + stored.message());
    WallClock::holdAtLeast(*stored);
    if (const qint64 behind = *stored - QDateTime::currentMSecsSinceEpoch(); behind > 1000)
        qWarning(
            "coordinator: the system clock reads %lld s before the latest time stored; the coordinator's "
            "clock goes on from the stored time",
            static_cast<long long>(behind / 1000));
    return {};
}

Status Coordinator::Parts::openRun() {
    Result<CoordinatorRun> opened = CoordinatorRun::openOrCreate(
        options.dataDir, *db, options.model,
        ModelOverrides{options.stages, options.codec, options.momentBits}, options.dataset);
    if (!opened)
        return opened.error();
    run = std::move(*opened);
    return {};
}

void Coordinator::Parts::createApis() {
    const gpu::ModelConfig& model = run->config();
    AdmissionSettings admissionSettings;
    admissionSettings.minimumClientVersion =
        std::max(options.minClientVersion, protocol::kOldestCompatibleClient);
    admissionSettings.reputation = options.training.reputation;
    admissionSettings.nonceSecret = ChallengeNonce::secretFrom(*key);
    AssignmentSettings assignment;
    assignment.maxNodesTotal = options.maxNodes;
    assignment.maxNodesPerStage = options.maxNodesPerStage;
    assignment.waitlistRetryAfter = options.waitlistRetryAfter;
    admission =
        std::make_unique<AdmissionService>(*db, AssignmentPolicy(model, assignment), admissionSettings);
    admissionApi = std::make_unique<AdmissionApi>(*admission, *db, metrics, options.maxAdmissionsPerAddress);
    shardApi = std::make_unique<ShardApi>(*db, run->shardDir(), model.stages);
    statusApi = std::make_unique<StatusApi>(
        *db, metrics,
        StatusApiSettings{model, key->publicKeyBase64(), admissionSettings.minimumClientVersion.toString(),
                          nowMs()});
    creditsApi = std::make_unique<CreditsApi>(*db, key->publicKeyBase64());
    swarmApi = std::make_unique<SwarmApi>(*db, SwarmApiSettings{model.stages});
}

void Coordinator::Parts::createServer(const std::optional<TlsCertificate>& tls) {
    http::HttpServerConfig serverConfig;
    if (options.maxConnections)
        serverConfig.maxConnections = *options.maxConnections;
    if (options.requestTimeout) {
        serverConfig.headerTimeout = *options.requestTimeout;
        serverConfig.bodyTimeout = *options.requestTimeout;
    }
    if (options.maxConnectionsPerAddress)
        serverConfig.maxConnectionsPerAddress = *options.maxConnectionsPerAddress;
    if (options.maxBytesInFlight)
        serverConfig.maxBytesInFlight = *options.maxBytesInFlight;
    server = std::make_unique<http::HttpServer>(serverConfig);
    if (tls)
        server->useTls(*tls);
    scheme = tls ? QStringLiteral("https") : QStringLiteral("http");
    addRoutes();
}

Status Coordinator::Parts::listenWhilePreparing() {
    // The coordinator answers at once; a new run's weights are written meanwhile and every run's
    // checkpoints read and verified (minutes for a large model), then it serves.
    preparation = std::make_unique<RunPreparation>(*run, *db, *key, run->needsInitialShards());
    RunPreparation* preparing = preparation.get();
    statusApi->setPreparation([preparing] { return preparing->progressJson(); });
    QObject::connect(preparing, &RunPreparation::finished, [this] { prepareDone(); });
    if (Status s = server->listen(listen.address, listen.port); !s)
        return makeError("cannot listen on " + str(options.listen) + ": " + s.message());
    return {};
}

void Coordinator::Parts::startPurging() {
    Database& database = *db;
    purgeTimer.setInterval(kPurgeInterval);
    QObject::connect(&purgeTimer, &QTimer::timeout, [&database] {
        const qint64 now = nowMs();
        if (Result<int> n = NonceStore(database).purge(now); !n)
            qWarning("coordinator: purging nonces failed: %s", n.message().c_str());
        if (Result<int> n = SessionStore(database).purge(now); !n)
            qWarning("coordinator: purging sessions failed: %s", n.message().c_str());
    });
    purgeTimer.start();
}

void Coordinator::Parts::addRoutes() {
    StatusApi& status = *statusApi;
    AdmissionApi& admit = *admissionApi;
    ShardApi& shards = *shardApi;
    CreditsApi& credits = *creditsApi;
    SwarmApi& swarm = *swarmApi;
    const OperatorPage& page = operatorPage;
    route("GET", QStringLiteral("/"), [&page](const HttpRequest& r) { return page.page(r); });
    route("GET", QStringLiteral("/operator.js"), [&page](const HttpRequest& r) { return page.script(r); });
    route("GET", QStringLiteral("/operator.css"), [&page](const HttpRequest& r) { return page.style(r); });
    route("GET", QStringLiteral("/v1/info"), [&status](const HttpRequest& r) { return status.info(r); });
    route("GET", QStringLiteral("/v1/status"), [&status](const HttpRequest& r) { return status.status(r); });
    route("GET", QStringLiteral("/v1/loss"), [&status](const HttpRequest& r) { return status.loss(r); });
    route("GET", QStringLiteral("/v1/nodes"), [&swarm](const HttpRequest& r) { return swarm.nodes(r); });
    route("GET", QStringLiteral("/v1/leaderboard"),
          [&swarm](const HttpRequest& r) { return swarm.leaderboard(r); });
    route("GET", QStringLiteral("/metrics"), [&status](const HttpRequest& r) { return status.metrics(r); });
    route(
        "POST", QStringLiteral("/v1/admission/challenge"),
        [&admit](const HttpRequest& r) { return admit.challenge(r); }, Needs::Weights);
    route(
        "POST", QStringLiteral("/v1/admission"), [&admit](const HttpRequest& r) { return admit.admit(r); },
        Needs::Weights);
    route(
        "GET", QStringLiteral("/v1/shards/{stage}/manifest"),
        [&shards](const HttpRequest& r) { return shards.manifest(r); }, Needs::Weights);
    route(
        "GET", QStringLiteral("/v1/shards/{stage}/{version}/{file}"),
        [&shards](const HttpRequest& r) { return shards.file(r); }, Needs::Weights);
    route("GET", QStringLiteral("/v1/nodes/{node_id}/credits"),
          [&credits](const HttpRequest& r) { return credits.credits(r); });
    // The WebSocket upgrade is handed over once the run serves (serve()); until then, and for a plain
    // GET, the request comes here.
    route(
        "GET", QStringLiteral("/v1/session"),
        [](const HttpRequest&) {
            return HttpResponse::error(426,
                                       QStringLiteral("/v1/session is a WebSocket: send Upgrade: websocket"));
        },
        Needs::Weights);
}

Status Coordinator::Parts::serve(PreparedRun ready) {
    const gpu::ModelConfig& model = run->config();
    SessionSettings session;
    session.heartbeatTimeout = options.heartbeatTimeout;
    session.maxBinaryBytes =
        largestNodeMessage(model, qint64(options.training.loop.batch) * options.training.loop.seq);
    sessionApi = std::make_unique<SessionApi>(*db, metrics, session);
    sessionApi->setByteBudget(&server->byteBudget());
    // Before the sweep below: the trainer reads which nodes the previous process left online.
    Result<std::unique_ptr<Trainer>> created =
        Trainer::create(*db, *key, model, run->shardDir(), options.training, *sessionApi, std::move(ready));
    if (!created)
        return created.error();
    trainer = std::move(*created);
    // Nodes left online by a previous process have no socket here any more.
    sessionApi->sweep();
    Trainer* training = trainer.get();
    statusApi->setPreparation(nullptr);
    statusApi->setTrainingStatus([training] { return training->status(); });
    swarmApi->setLive([training](const QString& node) { return training->live(node); });
    server->setUpgradeHandler(QStringLiteral("/v1/session"), sessionApi->upgradeHandler());
    serving = true;
    return {};
}

// The preparation has ended (on this thread): serve, or say why not. A stop meanwhile has its own ending.
void Coordinator::Parts::prepareDone() {
    if (stopping)
        return;
    Status outcome = preparation->outcome();
    if (preparation->state() == RunPreparation::State::Done)
        outcome = serve(preparation->takePrepared());
    if (prepared)
        prepared(outcome);
}

void Coordinator::onPrepared(std::function<void(const Status&)> prepared) {
    m_parts->prepared = std::move(prepared);
}

Coordinator::State Coordinator::state() const {
    return m_parts->serving ? State::Serving : State::Preparing;
}

void Coordinator::stop(std::function<void()> done) {
    Parts& p = *m_parts;
    if (p.stopping)
        return;
    p.stopping = true;
    p.purgeTimer.stop();
    p.server->close();
    if (p.trainer)
        p.trainer->stop();
    if (p.sessionApi)
        p.sessionApi->closeAll(QStringLiteral("the coordinator is shutting down"));
    // A run being prepared stops writing within a block; nothing is recorded and the next start
    // prepares it again.
    if (p.preparation)
        p.preparation->cancel();
    auto* poll = new QTimer;
    const qint64 deadline = nowMs() + std::chrono::milliseconds(kStopGrace).count();
    poll->setInterval(20);
    QObject::connect(poll, &QTimer::timeout, [poll, deadline, &p, done = std::move(done)] {
        const bool closing = p.sessionApi && p.sessionApi->closing() && nowMs() < deadline;
        if (closing || (p.preparation && p.preparation->active()))
            return;
        poll->stop();
        poll->deleteLater();
        p.db->close();
        done();
    });
    poll->start();
}

quint16 Coordinator::port() const {
    return m_parts->server->port();
}

QString Coordinator::url() const {
    const QHostAddress& a = m_parts->listen.address;
    QString host = a == QHostAddress::AnyIPv4 || a == QHostAddress::Any ? QStringLiteral("127.0.0.1")
                   : a == QHostAddress::AnyIPv6                         ? QStringLiteral("::1")
                                                                        : a.toString();
    if (host.contains(u':'))
        host = u'[' + host + u']';
    return QStringLiteral("%1://%2:%3").arg(m_parts->scheme, host).arg(port());
}

QString Coordinator::coordinatorKey() const {
    return m_parts->key->publicKeyBase64();
}

const gpu::ModelConfig& Coordinator::model() const {
    return m_parts->run->config();
}

QString Coordinator::dataset() const {
    return m_parts->run->dataset();
}

bool Coordinator::runCreated() const {
    return m_parts->preparation->newRun();
}

QString Coordinator::databaseName() const {
    return m_parts->db->displayName();
}

} // namespace tessera::coordinator
