// SPDX-License-Identifier: Apache-2.0
#include "base/JsonWriter.h"

#include <charconv>
#include <cmath>
#include <cstdio>

namespace tessera::gpu {

void JsonWriter::separate() {
    if (m_afterKey) {
        m_afterKey = false;
        return;
    }
    if (!m_first.empty()) {
        if (!m_first.back())
            m_out += ',';
        m_first.back() = false;
    }
}

void JsonWriter::beginObject() {
    separate();
    m_out += '{';
    m_first.push_back(true);
}

void JsonWriter::endObject() {
    m_out += '}';
    m_first.pop_back();
}

void JsonWriter::beginArray() {
    separate();
    m_out += '[';
    m_first.push_back(true);
}

void JsonWriter::endArray() {
    m_out += ']';
    m_first.pop_back();
}

void JsonWriter::key(std::string_view name) {
    separate();
    m_out += escape(name);
    m_out += ':';
    m_afterKey = true;
}

void JsonWriter::value(std::string_view text) {
    separate();
    m_out += escape(text);
}

void JsonWriter::value(bool b) {
    separate();
    m_out += b ? "true" : "false";
}

void JsonWriter::value(double number) {
    separate();
    if (!std::isfinite(number)) {
        m_out += "null";
        return;
    }
    char buf[32];
    const auto res = std::to_chars(buf, buf + sizeof buf, number);
    m_out.append(buf, res.ptr);
}

void JsonWriter::value(std::int64_t number) {
    separate();
    m_out += std::to_string(number);
}

void JsonWriter::value(std::uint64_t number) {
    separate();
    m_out += std::to_string(number);
}

void JsonWriter::null() {
    separate();
    m_out += "null";
}

std::string JsonWriter::escape(std::string_view text) {
    std::string out;
    out.reserve(text.size() + 2);
    out += '"';
    for (const char ch : text) {
        const auto c = static_cast<unsigned char>(ch);
        switch (ch) {
        case '"':
            out += "\\\"";
            break;
        case '\\':
            out += "\\\\";
            break;
        case '\n':
            out += "\\n";
            break;
        case '\r':
            out += "\\r";
            break;
        case '\t':
            out += "\\t";
            break;
        default:
            if (c < 0x20) {
                char buf[8];
                std::snprintf(buf, sizeof buf, "\\u%04x", c);
                out += buf;
            } else {
                out += ch;
            }
        }
    }
    out += '"';
    return out;
}

} // namespace tessera::gpu
