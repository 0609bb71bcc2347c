// SPDX-License-Identifier: Apache-2.0
// The project's structure as tests that can fail: the layer rules (read from every #include of the
// tree), no wire name of a message, task kind, control command, error or refusal kind outside
// core/protocol (the names are asked of the protocol itself, so a new one is covered the day it is
// added), no function of product code over 80 lines (FunctionLengths; data tables exempt by name)
// and no source file without its SPDX licence line (Apache-2.0). Each detector is first shown a sample that breaks
// its rule, so that a detector that has gone blind fails too.
#include "FunctionLengths.h"
#include "base/Result.h"
#include "protocol/ControlMessages.h"
#include "protocol/Refusal.h"
#include "protocol/SessionMessages.h"

#include <QTest>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;
using namespace tessera;

namespace {

const fs::path kRoot = TESSERA_SOURCE_DIR;
// A function a reader takes in at once: from its signature to its closing brace.
constexpr int kMaxFunctionLines = 80;
// Data tables written as a function returning them (every migration's SQL): long by nature, one
// entry after another, not steps to follow.
const std::set<std::string> kDataTables{"migrations"};

bool isSource(const fs::path& p) {
    static const std::set<std::string> extensions{".h", ".hpp", ".cpp", ".c", ".cu"};
    return extensions.count(p.extension().string()) > 0;
}

std::vector<fs::path> sources(const std::vector<std::string>& dirs) {
    std::vector<fs::path> out;
    for (const std::string& d : dirs)
        for (const auto& e : fs::recursive_directory_iterator(kRoot / d))
            if (e.is_regular_file() && isSource(e.path()))
                out.push_back(fs::relative(e.path(), kRoot));
    std::sort(out.begin(), out.end());
    return out;
}

std::string read(const fs::path& relative) {
    std::ifstream in(kRoot / relative);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

bool startsWith(const std::string& s, const std::string& prefix) {
    return s.compare(0, prefix.size(), prefix) == 0;
}

const std::string kSpdx = "// SPDX-License-Identifier: Apache-2.0\n";

// A source file says its licence on its first line.
bool saysItsLicence(const std::string& text) {
    return startsWith(text, kSpdx);
}

// "path:line name: N lines" for each function of product code over kMaxFunctionLines.
std::vector<std::string> overLong(const std::string& path, const std::string& text) {
    std::vector<std::string> out;
    for (const structure::FunctionSpan& f : structure::functionSpans(text))
        if (f.lines > kMaxFunctionLines && kDataTables.count(f.name) == 0)
            out.push_back(path + ":" + std::to_string(f.firstLine) + " " + f.name + ": " +
                          std::to_string(f.lines) + " lines");
    return out;
}

// --- layers ------------------------------------------------------------------------------------

// The module a file of the tree belongs to ("base", "core/control", "gpu/model", "ui", ...).
std::string moduleOfFile(const std::string& path) {
    static const std::vector<std::string> modules{"base",
                                                  "core/control",
                                                  "core/node/ledger",
                                                  "core/node",
                                                  "core/coordinator",
                                                  "core/protocol",
                                                  "core/common",
                                                  "core/manager",
                                                  "gpu/device",
                                                  "gpu/model",
                                                  "gpu/codec",
                                                  "gpu/shard",
                                                  "gpu/train",
                                                  "gpu/data",
                                                  "gpu/engine",
                                                  "gpu/cuda",
                                                  "gpu/tools",
                                                  "ui",
                                                  "app"};
    if (path == "core/node/NodeFiles.h" || path == "core/node/NodeFiles.cpp")
        return "core/node/files";
    for (const std::string& m : modules)
        if (startsWith(path, m + "/"))
            return m;
    return "?";
}

// What an #include "x" names: a file of the tree (as a path from the root), or "" for a file of the
// including folder or one outside the tree.
std::string resolve(const std::string& name) {
    for (const char* root : {"", "core/", "gpu/", "ui/"}) {
        const fs::path candidate = fs::path(root) / name;
        if (fs::exists(kRoot / candidate))
            return candidate.generic_string();
    }
    return "";
}

struct Include {
    std::string file;
    std::string name; // as written, <...> or "..."
    bool angled = false;
};

std::vector<Include> includesOf(const std::string& file, const std::string& text) {
    static const std::regex include(R"(^\s*#\s*include\s*([<"])([^>"]+)[>"])");
    std::vector<Include> out;
    std::istringstream lines(text);
    for (std::string line; std::getline(lines, line);) {
        std::smatch m;
        if (std::regex_search(line, m, include))
            out.push_back({file, m[2].str(), m[1].str() == "<"});
    }
    return out;
}

// gpu/'s folders from the bottom up: a folder may include its own rank and below, never above.
int gpuRank(const std::string& module) {
    static const std::map<std::string, int> ranks{
        {"base", 0},      {"gpu/device", 1}, {"gpu/cuda", 1}, {"gpu/model", 1},  {"gpu/codec", 2},
        {"gpu/shard", 2}, {"gpu/train", 3},  {"gpu/data", 3}, {"gpu/engine", 4}, {"gpu/tools", 5}};
    const auto it = ranks.find(module);
    return it == ranks.end() ? -1 : it->second;
}

// The rule an include breaks, or "".
std::string violation(const Include& inc) {
    const std::string from = moduleOfFile(inc.file);
    const bool inGpu = startsWith(from, "gpu/");
    if (inc.angled) {
        const bool torch =
            startsWith(inc.name, "torch/") || startsWith(inc.name, "ATen/") || startsWith(inc.name, "c10/");
        if (torch && !inGpu)
            return "torch outside gpu/";
        const bool qt = inc.name.size() > 1 && inc.name[0] == 'Q' && std::isupper(unsigned(inc.name[1]));
        if (qt && (inGpu || from == "base"))
            return from == "base" ? "Qt inside base/" : "Qt inside gpu/";
        return "";
    }
    const std::string target = resolve(inc.name);
    if (target.empty())
        return "";
    const std::string to = moduleOfFile(target);
    const auto is = [](const std::string& module, const char* prefix) { return startsWith(module, prefix); };
    if (is(from, "core/node") && is(to, "core/coordinator"))
        return "node -> coordinator";
    if (is(from, "core/coordinator") && is(to, "core/node"))
        return "coordinator -> node";
    if ((is(from, "core/manager") || from == "ui") && is(to, "core/coordinator"))
        return "manager -> coordinator";
    if (is(from, "core/manager") && is(to, "core/node") && !(to == "core/node/ledger" || to == "core/node/files"))
        return "manager -> the node's engine, session or shard (only its local side: ledger, files)";
    if ((from == "core/node/ledger" || from == "core/node/files") && is(to, "core/node") &&
        !(to == "core/node/ledger" || to == "core/node/files"))
        return "the node's local side -> the node's engine, session or shard";
    if (from == "core/control" && !(to == "core/control" || to == "core/protocol" || to == "core/common" || to == "base"))
        return "control -> " + to + " (the control socket stands on protocol, common and base only)";
    if (from == "core/protocol" && !(to == "core/protocol" || to == "core/common" || to == "base"))
        return "protocol -> " + to + " (protocol stands on common and base only)";
    if (from == "core/common" && !(to == "core/common" || to == "base"))
        return "common -> " + to;
    if (from == "base" && to != "base")
        return "base -> " + to + " (base stands on nothing of the project)";
    if (inGpu && !(startsWith(to, "gpu/") || to == "base"))
        return "gpu -> " + to;
    if (inGpu && gpuRank(to) > gpuRank(from))
        return "upward in gpu/: " + from + " -> " + to;
    return "";
}

// --- wire names --------------------------------------------------------------------------------

std::vector<std::string> wireNames() {
    std::vector<std::string> names;
    for (int t = 0; t < protocol::kMessageTypes; ++t)
        names.push_back(protocol::messageTypeName(protocol::MessageType(t)).toStdString());
    for (auto k : {protocol::TaskKind::Probe, protocol::TaskKind::Forward,
                   protocol::TaskKind::ForwardBackward, protocol::TaskKind::Backward})
        names.push_back(protocol::taskKindName(k).toStdString());
    for (const QString& c : protocol::controlCommandNames())
        names.push_back(c.toStdString());
    for (auto k : {ErrorKind::InvalidInput, ErrorKind::Unsupported, ErrorKind::MissingGraph})
        names.push_back(protocol::errorKindName(k).toStdString());
    for (auto k : {protocol::RefusalKind::ClientTooOld, protocol::RefusalKind::NoStageFits,
                   protocol::RefusalKind::CoordinatorKeyChanged})
        names.push_back(protocol::refusalKindName(k).toStdString());
    return names;
}

// A line that spells a wire name as code that matches or writes it: a name with '_' or '-' in any
// literal (they are the protocol's own words); a shorter one where code compares with it, pairs it
// with a "type", "kind" or "command" key, or hands it to a command — the shapes every
// string-matched message had. A short name used as a JSON key (value(u"error")) is a field's.
bool spellsWireName(const std::string& line, const std::string& name) {
    const std::string code = line.substr(0, line.find("//"));
    if (code.find("\"" + name + "\"") == std::string::npos)
        return false;
    if (name.find_first_of("_-") != std::string::npos)
        return true;
    const std::string literal = R"re((u|QStringLiteral\(|QLatin1String\()?")re" + name + "\"";
    const std::regex compared(R"re((==|!=)\s*)re" + literal);
    const std::regex paired(R"re("(type|kind|command)"\)?\s*,\s*)re" + literal);
    const std::regex handed(R"re(\b(call|request|command)\([^;]*)re" + literal);
    return std::regex_search(code, compared) || std::regex_search(code, paired) ||
           std::regex_search(code, handed);
}

} // namespace

class TestStructure final : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void detectorsSeeBrokenRules() {
        // Samples that break each rule: a detector that let them through would pass anything.
        QCOMPARE(violation({"core/node/Node.cpp", "coordinator/store/Database.h", false}),
                 std::string("node -> coordinator"));
        QCOMPARE(violation({"core/coordinator/Coordinator.cpp", "node/Node.h", false}),
                 std::string("coordinator -> node"));
        QCOMPARE(violation({"core/manager/Manager.cpp", "coordinator/store/Database.h", false}),
                 std::string("manager -> coordinator"));
        QCOMPARE(violation({"core/node/Node.cpp", "torch/types.h", true}), std::string("torch outside gpu/"));
        QCOMPARE(violation({"gpu/model/StageModel.cpp", "QString", true}), std::string("Qt inside gpu/"));
        QVERIFY(startsWith(violation({"gpu/model/StageModel.cpp", "engine/StageEngine.h", false}),
                           "upward in gpu/"));
        QVERIFY(startsWith(violation({"base/Json.cpp", "engine/StageEngine.h", false}), "base ->"));
        QCOMPARE(violation({"base/Json.cpp", "QString", true}), std::string("Qt inside base/"));
        QCOMPARE(violation({"base/Json.cpp", "torch/types.h", true}), std::string("torch outside gpu/"));
        QVERIFY(startsWith(violation({"core/control/ControlServer.cpp", "node/Node.h", false}), "control ->"));
        QVERIFY(startsWith(violation({"core/manager/Manager.cpp", "node/engine/EngineWorker.h", false}),
                           "manager -> the node's"));
        QCOMPARE(violation({"core/manager/NodeSupervisor.cpp", "control/ControlConnection.h", false}), std::string());
        QCOMPARE(violation({"gpu/model/StageModel.cpp", "base/Json.h", false}), std::string());
        QVERIFY(
            startsWith(violation({"core/protocol/TaskFrame.cpp", "node/NodeFiles.h", false}), "protocol ->"));
        QVERIFY(violation({"core/node/ledger/LocalLedger.cpp", "node/engine/EngineWorker.h", false}) != "");
        QCOMPARE(violation({"core/node/Node.cpp", "protocol/TaskFrame.h", false}), std::string());
        // The string-matched messages of the issue-6 code.
        QVERIFY(spellsWireName(R"(    if (type == u"ready") {)", "ready"));
        QVERIFY(spellsWireName(R"(QJsonObject{{QStringLiteral("type"), QStringLiteral("step")}})", "step"));
        QVERIFY(spellsWireName(R"(        command(QStringLiteral("status"));)", "status"));
        QVERIFY(spellsWireName(R"(    answer.insert(x, QStringLiteral("task_result"));)", "task_result"));
        QVERIFY(spellsWireName(
            R"(    Result<QJsonObject> r = ControlClient::call(dir, QStringLiteral("stop"));)", "stop"));
        QVERIFY(!spellsWireName(R"(    s.insert(QStringLiteral("step"), m_state.step);)", "step"));
        QVERIFY(!spellsWireName(R"(    if (reply->contains(u"error")) { err << command; })", "error"));
        QVERIFY(!spellsWireName(R"(    // "task_result" in a comment)", "task_result"));
    }

    void layersHold() {
        std::vector<std::string> broken;
        for (const fs::path& file : sources({"base", "core", "gpu", "ui", "app"}))
            for (const Include& inc : includesOf(file.generic_string(), read(file)))
                if (const std::string why = violation(inc); !why.empty())
                    broken.push_back(file.generic_string() + ": #include " + inc.name + " (" + why + ")");
        for (const std::string& b : broken)
            qWarning("%s", b.c_str());
        QVERIFY2(broken.empty(), "layer rules broken: see the warnings above");
    }

    void wireNamesLiveInProtocolOnly() {
        const std::vector<std::string> names = wireNames();
        QVERIFY(names.size() >= 30);
        std::vector<std::string> found;
        for (const fs::path& file : sources({"base", "core", "gpu", "ui", "app"})) {
            if (startsWith(file.generic_string(), "core/protocol/"))
                continue;
            std::istringstream lines(read(file));
            int number = 0;
            for (std::string line; std::getline(lines, line);) {
                ++number;
                for (const std::string& name : names)
                    if (spellsWireName(line, name))
                        found.push_back(file.generic_string() + ":" + std::to_string(number) + ": \"" + name +
                                        "\"");
            }
        }
        for (const std::string& f : found)
            qWarning("%s", f.c_str());
        QVERIFY2(found.empty(), "wire names spelled outside core/protocol: see the warnings above");
    }

    void functionsFitOneScreen() {
        // The detector first, on samples of what it must count and what it must not be fooled by.
        const auto lengths = [](const std::string& source) {
            std::map<std::string, int> out;
            for (const structure::FunctionSpan& f : structure::functionSpans(source))
                out[f.name] = f.lines;
            return out;
        };
        const auto body = [](int lines) {
            std::string text;
            for (int i = 0; i < lines; ++i)
                text += "    x += " + std::to_string(i) + "; // {\n";
            return text;
        };
        // A function of 83 lines (signature, 81 of body, closing brace), in a namespace.
        QCOMPARE(lengths("namespace a {\nint f(int x) {\n" + body(81) + "}\n}\n"),
                 (std::map<std::string, int>{{"f", 83}}));
        // A constructor whose initializer list has braces; a member defined in its class; a lambda
        // (counted toward its function); a signature over two lines with a trailing return type.
        QCOMPARE(lengths("Foo::Foo(int a)\n    : m_a{a}\n    , m_b(1) {\n" + body(3) + "}\n"
                         "class Bar : public Baz {\npublic:\n    int g() const noexcept { return 1; }\n};\n"
                         "auto h(int a,\n       int b) -> std::vector<int> {\n    auto l = [](int) {\n" + body(2) +
                         "    };\n}\n"),
                 (std::map<std::string, int>{{"Foo::Foo", 7}, {"g", 1}, {"h", 7}}));
        // Braces in comments, strings, raw strings and characters, a digit separator, a directive, a
        // table initializer and an operator: none is mistaken for a body or a body's end.
        QCOMPARE(lengths("/* { */ const int k = 1'000'000;\n#define X {\nconst char* t[] = {\"}\", \"{\"};\n"
                         "bool operator==(const A&, const A&) {\n    char c = '}';\n"
                         "    auto r = R\"x({)x\";\n    return c == r[0];\n}\n"),
                 (std::map<std::string, int>{{"operator==", 5}}));
        QCOMPARE(overLong("a.cpp", "void f() {\n" + body(79) + "}\n").size(), 1u);
        QCOMPARE(overLong("a.cpp", "void f() {\n" + body(78) + "}\n").size(), 0u);
        QCOMPARE(overLong("a.cpp", "const std::vector<M>& migrations() {\n" + body(200) + "}\n").size(), 0u);

        std::vector<std::string> long_;
        for (const fs::path& file : sources({"base", "core", "gpu", "ui", "app"}))
            for (const std::string& f : overLong(file.generic_string(), read(file)))
                long_.push_back(f);
        for (const std::string& f : long_)
            qWarning("%s", f.c_str());
        QVERIFY2(long_.empty(), "functions over 80 lines: see the warnings above (split them into named steps)");
    }

    void everySourceSaysItsLicence() {
        // The detector first: a file whose licence line is missing, moved or another licence.
        QVERIFY(saysItsLicence(kSpdx + "#pragma once\n"));
        QVERIFY(!saysItsLicence("#pragma once\n"));
        QVERIFY(!saysItsLicence("#pragma once\n" + kSpdx));
        QVERIFY(!saysItsLicence("// SPDX-License-Identifier: MIT\n"));
        std::vector<std::string> missing;
        for (const fs::path& file : sources({"base", "core", "gpu", "ui", "app", "tests"}))
            if (!saysItsLicence(read(file)))
                missing.push_back(file.generic_string());
        for (const std::string& f : missing)
            qWarning("%s: no \"// SPDX-License-Identifier: Apache-2.0\" on its first line", f.c_str());
        QVERIFY2(missing.empty(), "sources without their licence line: see the warnings above");
    }
};

QTEST_GUILESS_MAIN(TestStructure)
#include "test_structure.moc"
