// SPDX-License-Identifier: Apache-2.0
#include "shard/SafetensorsWriter.h"

#include "base/Json.h"
#include "base/JsonWriter.h"
#include "shard/Safetensors.h"

#include <cerrno>
#include <cstring>

#include <fcntl.h>
#include <unistd.h>

namespace tessera::gpu {

namespace {

bool validName(std::string_view s) {
    return validUtf8Prefix(s) == s.size();
}

Status writeAll(int fd, const void* data, std::size_t size) {
    const auto* p = static_cast<const char*>(data);
    while (size > 0) {
        const ssize_t n = ::write(fd, p, size);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return makeError(std::strerror(errno));
        p += n;
        size -= static_cast<std::size_t>(n);
    }
    return {};
}

} // namespace

Status SafetensorsWriter::add(std::string_view name, Dtype dtype, std::vector<std::int64_t> shape,
                              std::span<const std::byte> data) {
    return add(name, safetensorsDtypeName(dtype), std::move(shape), data);
}

Status SafetensorsWriter::add(std::string_view name, Dtype dtype, std::vector<std::int64_t> shape,
                              std::vector<std::byte>&& data) {
    return add(name, safetensorsDtypeName(dtype), std::move(shape), std::move(data));
}

Status SafetensorsWriter::add(std::string_view name, std::string_view dtype, std::vector<std::int64_t> shape,
                              std::vector<std::byte>&& data) {
    auto owned = std::make_shared<const std::vector<std::byte>>(std::move(data));
    Status added = add(name, dtype, std::move(shape), std::span<const std::byte>(*owned));
    if (added)
        m_entries.back().owned = std::move(owned);
    return added;
}

Status SafetensorsWriter::add(std::string_view name, std::string_view dtype, std::vector<std::int64_t> shape,
                              std::span<const std::byte> data) {
    std::string quoted = "'";
    quoted.append(name).append("'"); // not "'" + ...: GCC 12 warns falsely (-Wrestrict, bug 105329)
    if (name.empty() || name == "__metadata__" || !validName(name))
        return makeError("tensor name " + quoted + " is empty, reserved or not UTF-8");
    for (const Entry& e : m_entries) {
        if (e.name == name)
            return makeError("tensor " + quoted + " added twice");
    }
    const std::optional<std::size_t> elementSize = safetensorsDtypeSize(dtype);
    if (!elementSize)
        return makeError("tensor " + quoted + ": unknown dtype '" + std::string(dtype) + "'");
    std::uint64_t count = 1;
    for (std::int64_t dim : shape) {
        if (dim < 0 || __builtin_mul_overflow(count, static_cast<std::uint64_t>(dim), &count))
            return makeError("tensor " + quoted + ": bad shape");
    }
    if (count > data.size() / *elementSize || count * *elementSize != data.size())
        return makeError("tensor " + quoted + ": " + std::to_string(data.size()) +
                         " bytes do not match its shape and dtype");
    m_entries.push_back(Entry{std::string(name), std::string(dtype), std::move(shape), data, nullptr});
    return {};
}

Status SafetensorsWriter::setMetadata(std::string_view key, std::string_view value) {
    if (!validName(key) || !validName(value))
        return makeError("metadata key and value must be UTF-8");
    for (auto& [k, v] : m_metadata) {
        if (k == key) {
            v = value;
            return {};
        }
    }
    m_metadata.emplace_back(key, value);
    return {};
}

std::string SafetensorsWriter::header() const {
    JsonWriter w;
    w.beginObject();
    if (!m_metadata.empty()) {
        w.key("__metadata__");
        w.beginObject();
        for (const auto& [k, v] : m_metadata)
            w.field(k, v);
        w.endObject();
    }
    std::uint64_t offset = 0;
    for (const Entry& e : m_entries) {
        w.key(e.name);
        w.beginObject();
        w.field("dtype", e.dtype);
        w.key("shape");
        w.beginArray();
        for (std::int64_t dim : e.shape)
            w.value(dim);
        w.endArray();
        w.key("data_offsets");
        w.beginArray();
        w.value(offset);
        w.value(offset + e.data.size());
        w.endArray();
        w.endObject();
        offset += e.data.size();
    }
    w.endObject();
    std::string text = w.str();
    text.resize((text.size() + 7) / 8 * 8, ' ');
    return text;
}

Status SafetensorsWriter::write(const std::filesystem::path& path) const {
    const std::string text = header();
    if (text.size() > kSafetensorsMaxHeader)
        return makeError("safetensors header would be " + std::to_string(text.size()) +
                         " bytes, over the limit");
    const std::filesystem::path tmp = path.string() + ".tmp";
    const auto fail = [&](const std::string& why) {
        std::error_code ignored;
        std::filesystem::remove(tmp, ignored);
        return makeError("cannot write " + path.string() + ": " + why);
    };
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return fail(std::strerror(errno));
    unsigned char prefix[8];
    for (int i = 0; i < 8; ++i)
        prefix[i] = static_cast<unsigned char>(static_cast<std::uint64_t>(text.size()) >> (8 * i));
    Status s = writeAll(fd, prefix, sizeof prefix);
    if (s)
        s = writeAll(fd, text.data(), text.size());
    for (const Entry& e : m_entries) {
        if (s)
            s = writeAll(fd, e.data.data(), e.data.size());
    }
    // fsync before rename: otherwise a crash can leave the new name on empty or partial data.
    if (s && ::fsync(fd) != 0)
        s = makeError(std::strerror(errno));
    if (::close(fd) != 0 && s)
        s = makeError(std::strerror(errno));
    if (!s)
        return fail(s.message());
    if (::rename(tmp.c_str(), path.c_str()) != 0)
        return fail(std::strerror(errno));
    // Make the rename itself durable.
    const std::filesystem::path dir =
        path.has_parent_path() ? path.parent_path() : std::filesystem::path(".");
    if (const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); dfd >= 0) {
        ::fsync(dfd);
        ::close(dfd);
    }
    return {};
}

} // namespace tessera::gpu
