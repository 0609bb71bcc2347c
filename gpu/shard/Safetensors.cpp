// SPDX-License-Identifier: Apache-2.0
#include "shard/Safetensors.h"

#include "base/Json.h"

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace tessera::gpu {

namespace {

struct DtypeEntry {
    std::string_view name;
    std::size_t size;
};

// The safetensors dtypes of whole bytes (F4 and F6 pack several elements per byte: unsupported).
constexpr DtypeEntry kDtypes[] = {{"BOOL", 1},    {"U8", 1},  {"I8", 1},  {"F8_E5M2", 1}, {"F8_E4M3", 1},
                                  {"F8_E8M0", 1}, {"I16", 2}, {"U16", 2}, {"F16", 2},     {"BF16", 2},
                                  {"I32", 4},     {"U32", 4}, {"F32", 4}, {"C64", 8},     {"F64", 8},
                                  {"I64", 8},     {"U64", 8}};

std::string inQuotes(std::string_view name) {
    std::string out = "'";
    out.append(name).append("'"); // not "'" + ...: GCC 12 warns falsely (-Wrestrict, bug 105329)
    return out;
}

std::string shapeText(const std::vector<std::int64_t>& shape) {
    std::string out = "[";
    for (std::size_t i = 0; i < shape.size(); ++i) {
        if (i)
            out += ',';
        out += std::to_string(shape[i]);
    }
    return out + "]";
}

Status checkHeaderLength(std::uint64_t length, std::uint64_t fileSize) {
    if (fileSize < 8)
        return makeError("file is " + std::to_string(fileSize) +
                         " bytes, too short to hold a safetensors header length");
    if (length < 2)
        return makeError("safetensors header length " + std::to_string(length) +
                         " is too small (at least 2)");
    if (length > kSafetensorsMaxHeader)
        return makeError("safetensors header length " + std::to_string(length) + " exceeds the limit of " +
                         std::to_string(kSafetensorsMaxHeader) + " bytes");
    if (length > fileSize - 8)
        return makeError("safetensors header length " + std::to_string(length) +
                         " runs past the end of the file (" + std::to_string(fileSize) + " bytes)");
    return {};
}

std::uint64_t readLittleEndian64(const unsigned char* p) {
    std::uint64_t v = 0;
    for (int i = 7; i >= 0; --i)
        v = v << 8 | p[i];
    return v;
}

// One tensor's entry of the header, checked on its own (the layout is checked across all).
Result<TensorInfo> parseTensor(const std::string& name, const JsonValue& entry) {
    const auto bad = [&](const std::string& why) {
        return makeError("tensor " + inQuotes(name) + ": " + why);
    };
    if (name.empty())
        return makeError("tensor name is empty");
    if (!entry.isObject())
        return bad("entry is " + std::string(entry.typeName()) + ", not an object");
    if (Status s = rejectUnknownFields(entry, {"dtype", "shape", "data_offsets"}); !s)
        return bad(s.message());
    TensorInfo info;
    info.name = name;
    Result<std::string> dtype = requireString(entry, "dtype");
    if (!dtype)
        return bad(dtype.message());
    const std::optional<std::size_t> elementSize = safetensorsDtypeSize(*dtype);
    if (!elementSize)
        return bad("unknown dtype " + inQuotes(*dtype));
    info.dtype = *dtype;

    Result<const JsonValue*> shape = requireArray(entry, "shape");
    if (!shape)
        return bad(shape.message());
    bool empty = false;
    for (const JsonValue& dim : (*shape)->asArray()) {
        if (!dim.isInt() || dim.asInt() < 0)
            return bad("shape entries must be non-negative integers");
        info.shape.push_back(dim.asInt());
        empty = empty || dim.asInt() == 0;
    }
    std::uint64_t count = 1;
    for (std::int64_t dim : info.shape) {
        if (!empty && __builtin_mul_overflow(count, static_cast<std::uint64_t>(dim), &count))
            return bad("element count of shape " + shapeText(info.shape) + " overflows 64 bits");
    }
    if (empty)
        count = 0;
    std::uint64_t bytes = 0;
    if (__builtin_mul_overflow(count, static_cast<std::uint64_t>(*elementSize), &bytes))
        return bad("byte size of shape " + shapeText(info.shape) + " overflows 64 bits");

    Result<const JsonValue*> offsets = requireArray(entry, "data_offsets");
    if (!offsets)
        return bad(offsets.message());
    const JsonValue::Array& pair = (*offsets)->asArray();
    if (pair.size() != 2 || !pair[0].isInt() || !pair[1].isInt() || pair[0].asInt() < 0 ||
        pair[1].asInt() < 0)
        return bad("data_offsets must be two non-negative integers [begin, end]");
    info.begin = static_cast<std::uint64_t>(pair[0].asInt());
    info.end = static_cast<std::uint64_t>(pair[1].asInt());
    if (info.begin > info.end)
        return bad("data_offsets begin " + std::to_string(info.begin) + " is after end " +
                   std::to_string(info.end));
    if (info.end - info.begin != bytes)
        return bad("data_offsets span " + std::to_string(info.end - info.begin) + " bytes, but shape " +
                   shapeText(info.shape) + " of " + info.dtype + " needs " + std::to_string(bytes));
    return info;
}

} // namespace

std::optional<std::size_t> safetensorsDtypeSize(std::string_view dtype) {
    for (const DtypeEntry& e : kDtypes) {
        if (e.name == dtype)
            return e.size;
    }
    return std::nullopt;
}

std::string_view safetensorsDtypeName(Dtype dtype) {
    switch (dtype) {
    case Dtype::F32:
        return "F32";
    case Dtype::BF16:
        return "BF16";
    case Dtype::F16:
        return "F16";
    case Dtype::I8:
        return "I8";
    }
    return "?";
}

std::optional<Dtype> dtypeFromSafetensors(std::string_view name) {
    for (Dtype d : {Dtype::F32, Dtype::BF16, Dtype::F16, Dtype::I8}) {
        if (safetensorsDtypeName(d) == name)
            return d;
    }
    return std::nullopt;
}

Result<SafetensorsFile> SafetensorsFile::fromHeader(std::string_view header, std::uint64_t headerLength,
                                                    std::uint64_t fileSize) {
    if (const std::size_t valid = validUtf8Prefix(header); valid != header.size())
        return makeError("safetensors header is not valid UTF-8 (at header byte " + std::to_string(valid) +
                         ")");
    // A real header holds about ten values per tensor; this bounds memory for hostile ones.
    const JsonLimits limits{.maxDepth = 8, .maxBytes = kSafetensorsMaxHeader, .maxValues = 8'000'000};
    Result<JsonValue> root = parseJson(header, limits);
    if (!root)
        return makeError("safetensors header is not valid JSON: " + root.message());
    if (!root->isObject())
        return makeError("safetensors header is " + std::string(root->typeName()) + ", not a JSON object");
    if (header.front() != '{')
        return makeError("safetensors header must start with '{' (only trailing padding is allowed)");

    SafetensorsFile file;
    file.m_headerLength = headerLength;
    file.m_dataStart = 8 + headerLength;
    file.m_dataSize = fileSize - file.m_dataStart;
    for (const auto& [name, entry] : root->asObject()) {
        if (name == "__metadata__") {
            if (!entry.isObject())
                return makeError("safetensors __metadata__ is " + std::string(entry.typeName()) +
                                 ", not an object");
            for (const auto& [key, value] : entry.asObject()) {
                if (!value.isString())
                    return makeError("safetensors metadata value for " + inQuotes(key) + " is " +
                                     std::string(value.typeName()) + ", not a string");
                file.m_metadata.emplace_back(key, value.asString());
            }
            continue;
        }
        Result<TensorInfo> tensor = parseTensor(name, entry);
        if (!tensor)
            return tensor.error();
        file.m_tensors.push_back(std::move(tensor).value());
    }

    // The data buffer must be exactly the tensors, back to back: no holes where data could
    // hide, no overlaps, no trailing bytes.
    std::stable_sort(file.m_tensors.begin(), file.m_tensors.end(),
                     [](const TensorInfo& a, const TensorInfo& b) {
                         return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
                     });
    std::uint64_t cursor = 0;
    const TensorInfo* previous = nullptr;
    for (const TensorInfo& t : file.m_tensors) {
        if (t.begin < cursor)
            return makeError("tensors " + inQuotes(previous->name) + " and " + inQuotes(t.name) +
                             " overlap in the data buffer");
        if (t.begin > cursor)
            return makeError("hole of " + std::to_string(t.begin - cursor) + " bytes before tensor " +
                             inQuotes(t.name) + " (data offset " + std::to_string(cursor) + ")");
        cursor = t.end;
        previous = &t;
    }
    if (cursor > file.m_dataSize)
        return makeError("the tensors need " + std::to_string(cursor) + " data bytes but the file holds " +
                         std::to_string(file.m_dataSize) + " (truncated?)");
    if (cursor < file.m_dataSize)
        return makeError(std::to_string(file.m_dataSize - cursor) + " trailing bytes after the last tensor");
    for (std::size_t i = 0; i < file.m_tensors.size(); ++i)
        file.m_index.emplace(file.m_tensors[i].name, i);
    return file;
}

Result<SafetensorsFile> SafetensorsFile::parse(std::span<const std::byte> bytes) {
    const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
    const std::uint64_t length = bytes.size() >= 8 ? readLittleEndian64(p) : 0;
    if (Status s = checkHeaderLength(length, bytes.size()); !s)
        return makeError(s.message());
    Result<SafetensorsFile> file =
        fromHeader(std::string_view(reinterpret_cast<const char*>(p) + 8, length), length, bytes.size());
    if (!file)
        return file;
    file->m_data = std::make_shared<const std::vector<std::byte>>(bytes.begin() + 8 + length, bytes.end());
    return file;
}

Result<SafetensorsFile> SafetensorsFile::open(const std::filesystem::path& path) {
    const auto fail = [&](const std::string& why) { return makeError(path.string() + ": " + why); };
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return fail(std::strerror(errno));
    std::shared_ptr<const int> handle(new int(fd), [](const int* f) {
        ::close(*f);
        delete f;
    });
    struct stat st {};
    if (::fstat(fd, &st) != 0)
        return fail(std::strerror(errno));
    if (!S_ISREG(st.st_mode))
        return fail("not a regular file");
    const auto fileSize = static_cast<std::uint64_t>(st.st_size);
    unsigned char prefix[8] = {};
    if (fileSize >= 8 && ::pread(fd, prefix, 8, 0) != 8)
        return fail("cannot read the header length");
    const std::uint64_t length = fileSize >= 8 ? readLittleEndian64(prefix) : 0;
    if (Status s = checkHeaderLength(length, fileSize); !s)
        return fail(s.message());
    std::string header(length, '\0');
    for (std::uint64_t done = 0; done < length;) {
        const ssize_t n = ::pread(fd, header.data() + done, length - done, static_cast<off_t>(8 + done));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return fail("cannot read the header");
        done += static_cast<std::uint64_t>(n);
    }
    Result<SafetensorsFile> file = fromHeader(header, length, fileSize);
    if (!file)
        return fail(file.message());
    file->m_fd = std::move(handle);
    return file;
}

const TensorInfo* SafetensorsFile::find(std::string_view name) const {
    const auto it = m_index.find(name);
    return it == m_index.end() ? nullptr : &m_tensors[it->second];
}

Result<std::vector<std::byte>> SafetensorsFile::read(const TensorInfo& tensor) const {
    if (tensor.end < tensor.begin || tensor.end > m_dataSize)
        return makeError("tensor " + inQuotes(tensor.name) + " is not in this file");
    std::vector<std::byte> out(tensor.byteSize());
    if (Status s = read(tensor, out); !s)
        return makeError(s.message());
    return out;
}

Status SafetensorsFile::read(const TensorInfo& tensor, std::span<std::byte> out) const {
    if (out.size() != tensor.byteSize())
        return makeError("tensor " + inQuotes(tensor.name) + " is " + std::to_string(tensor.byteSize()) +
                         " bytes, the buffer " + std::to_string(out.size()));
    return readRange(tensor, 0, out);
}

Status SafetensorsFile::readRange(const TensorInfo& tensor, std::uint64_t offset,
                                  std::span<std::byte> out) const {
    if (tensor.end < tensor.begin || tensor.end > m_dataSize)
        return makeError("tensor " + inQuotes(tensor.name) + " is not in this file");
    if (offset > tensor.byteSize() || out.size() > tensor.byteSize() - offset)
        return makeError("bytes [" + std::to_string(offset) + ", " + std::to_string(offset + out.size()) +
                         ") are not in tensor " + inQuotes(tensor.name) + " of " +
                         std::to_string(tensor.byteSize()) + " bytes");
    const std::uint64_t from = tensor.begin + offset;
    if (m_data) {
        std::copy_n(m_data->begin() + static_cast<std::ptrdiff_t>(from), out.size(), out.begin());
        return {};
    }
    if (!m_fd)
        return makeError("no file open");
    for (std::size_t done = 0; done < out.size();) {
        const ssize_t n = ::pread(*m_fd, out.data() + done, out.size() - done,
                                  static_cast<off_t>(m_dataStart + from + done));
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return makeError("cannot read tensor " + inQuotes(tensor.name) + ": " + std::strerror(errno));
        if (n == 0)
            return makeError("file ended inside tensor " + inQuotes(tensor.name) +
                             " (changed since it was opened?)");
        done += static_cast<std::size_t>(n);
    }
    return {};
}

} // namespace tessera::gpu
