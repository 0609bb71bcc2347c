// SPDX-License-Identifier: Apache-2.0
#include "shard/SafetensorsWriter.h"

#include "base/Json.h"
#include "base/JsonWriter.h"
#include "shard/AtomicFile.h"
#include "shard/Safetensors.h"

namespace tessera::gpu {

namespace {

bool validName(std::string_view s) {
    return validUtf8Prefix(s) == s.size();
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

Result<std::uint64_t> SafetensorsWriter::checkEntry(std::string_view name, std::string_view dtype,
                                                    const std::vector<std::int64_t>& shape) const {
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
    std::uint64_t bytes = 0;
    if (__builtin_mul_overflow(count, static_cast<std::uint64_t>(*elementSize), &bytes))
        return makeError("tensor " + quoted + ": bad shape");
    return bytes;
}

Status SafetensorsWriter::add(std::string_view name, std::string_view dtype, std::vector<std::int64_t> shape,
                              std::span<const std::byte> data) {
    const Result<std::uint64_t> bytes = checkEntry(name, dtype, shape);
    if (!bytes)
        return bytes.error();
    if (*bytes != data.size()) {
        std::string message = "tensor '";
        message.append(name).append("': ").append(std::to_string(data.size()));
        return makeError(message + " bytes do not match its shape and dtype");
    }
    m_entries.push_back(
        Entry{std::string(name), std::string(dtype), std::move(shape), data, nullptr, data.size(), false});
    return {};
}

Status SafetensorsWriter::declare(std::string_view name, Dtype dtype, std::vector<std::int64_t> shape) {
    const std::string_view dtypeName = safetensorsDtypeName(dtype);
    const Result<std::uint64_t> bytes = checkEntry(name, dtypeName, shape);
    if (!bytes)
        return bytes.error();
    m_entries.push_back(
        Entry{std::string(name), std::string(dtypeName), std::move(shape), {}, nullptr, *bytes, true});
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
        w.value(offset + e.size);
        w.endArray();
        w.endObject();
        offset += e.size;
    }
    w.endObject();
    std::string text = w.str();
    text.resize((text.size() + 7) / 8 * 8, ' ');
    return text;
}

Result<std::string> SafetensorsWriter::fileHead() const {
    const std::string text = header();
    if (text.size() > kSafetensorsMaxHeader)
        return makeError("safetensors header would be " + std::to_string(text.size()) +
                         " bytes, over the limit");
    std::string head(8, '\0');
    for (int i = 0; i < 8; ++i)
        head[i] = static_cast<char>(static_cast<std::uint64_t>(text.size()) >> (8 * i));
    return head + text;
}

std::uint64_t SafetensorsWriter::dataSize() const {
    std::uint64_t total = 0;
    for (const Entry& e : m_entries)
        total += e.size;
    return total;
}

Status SafetensorsWriter::write(const std::filesystem::path& path) const {
    for (const Entry& e : m_entries) {
        if (e.declared)
            return makeError("cannot write " + path.string() + ": tensor '" + e.name +
                             "' was declared without its data");
    }
    const Result<std::string> head = fileHead();
    if (!head)
        return head.error();
    Result<AtomicFile> file = AtomicFile::create(path);
    if (!file)
        return file.error();
    Status s = file->append(*head);
    for (const Entry& e : m_entries) {
        if (s)
            s = file->append(e.data);
    }
    return s ? file->commit() : s;
}

} // namespace tessera::gpu
