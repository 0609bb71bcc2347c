// SPDX-License-Identifier: Apache-2.0
// SafetensorsFile enforces every rule of the format (a shard from the network is hostile until
// proven otherwise) and reads back exactly what SafetensorsWriter wrote.
#include "GpuTest.h"
#include "shard/Safetensors.h"
#include "shard/SafetensorsWriter.h"

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>

using namespace tessera::gpu;
namespace fs = std::filesystem;

namespace {

using tessera::test::TempDir;

std::string lengthPrefix(std::uint64_t n) {
    std::string out(8, '\0');
    for (int i = 0; i < 8; ++i)
        out[i] = static_cast<char>(n >> (8 * i));
    return out;
}

// A file made by hand: header length (its real length unless overridden), header, data.
std::string raw(const std::string& header, const std::string& data,
                std::optional<std::uint64_t> length = {}) {
    return lengthPrefix(length.value_or(header.size())) + header + data;
}

std::string errorOf(const std::string& bytes) {
    const auto r = SafetensorsFile::parse(std::as_bytes(std::span(bytes.data(), bytes.size())));
    return r ? std::string("(valid)") : r.message();
}

bool contains(const std::string& s, std::string_view part) {
    return s.find(part) != std::string::npos;
}

#define CHECK_ERROR(bytes, part)                                                                             \
    do {                                                                                                     \
        const std::string tessera_error = errorOf(bytes);                                                    \
        CHECK_MSG(contains(tessera_error, part), tessera_error);                                             \
    } while (0)

std::vector<std::byte> pattern(std::size_t n, int seed) {
    std::vector<std::byte> out(n);
    for (std::size_t i = 0; i < n; ++i)
        out[i] = static_cast<std::byte>((i * 31 + static_cast<std::size_t>(seed) * 7) & 0xFF);
    return out;
}

void writeFile(const fs::path& path, const std::string& bytes) {
    std::ofstream(path, std::ios::binary) << bytes;
}

const std::string kTwoFloats = R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";

} // namespace

TESSERA_TEST(acceptsAMinimalHandMadeFile) {
    CHECK_ERROR(raw(kTwoFloats, std::string(8, 'x')), "(valid)");
    CHECK_ERROR(raw("{}", ""), "(valid)");
    CHECK_ERROR(raw(kTwoFloats + "      ", std::string(8, 'x')), "(valid)"); // trailing padding
}

TESSERA_TEST(rejectsBadHeaderLengths) {
    CHECK_ERROR(raw("{}", "", 100'000'001), "header length 100000001 exceeds the limit of 100000000 bytes");
    CHECK_ERROR(raw("", "", 0), "header length 0 is too small");
    CHECK_ERROR(raw("{", "", 1), "header length 1 is too small");
    CHECK_ERROR(raw(kTwoFloats, std::string(8, 'x'), 5000),
                "header length 5000 runs past the end of the file");
    CHECK_ERROR(std::string("\x02\0\0", 3), "too short to hold a safetensors header length");
}

TESSERA_TEST(rejectsHeadersThatAreNotAJsonObject) {
    CHECK_ERROR(raw("{\"a\xff\":{}}", ""), "safetensors header is not valid UTF-8 (at header byte 3)");
    CHECK_ERROR(raw("{not json}", ""),
                "safetensors header is not valid JSON: JSON: unexpected character 'n'");
    CHECK_ERROR(raw("[1,2]", ""), "safetensors header is an array, not a JSON object");
    CHECK_ERROR(raw("  {}", ""), "must start with '{'");
    CHECK_ERROR(raw(kTwoFloats + std::string("\0\0", 2), std::string(8, 'x')), "not valid JSON");
}

TESSERA_TEST(rejectsBadTensorEntries) {
    const auto entry = [](const std::string& dtype, const std::string& shape, const std::string& offsets) {
        return R"({"t":{"dtype":)" + dtype + R"(,"shape":)" + shape + R"(,"data_offsets":)" + offsets + "}}";
    };
    CHECK_ERROR(raw(entry("\"F128\"", "[1]", "[0,16]"), std::string(16, 'x')),
                "tensor 't': unknown dtype 'F128'");
    CHECK_ERROR(raw(entry("\"F4\"", "[2]", "[0,1]"), "x"), "unknown dtype 'F4'");
    CHECK_ERROR(raw(entry("32", "[1]", "[0,4]"), "xxxx"), "tensor 't': field 'dtype' must be a string");
    CHECK_ERROR(raw(entry("\"F32\"", "[-1]", "[0,0]"), ""),
                "tensor 't': shape entries must be non-negative integers");
    CHECK_ERROR(raw(entry("\"F32\"", "[1.5]", "[0,4]"), "xxxx"),
                "shape entries must be non-negative integers");
    CHECK_ERROR(raw(entry("\"F32\"", "[2]", "[8,0]"), std::string(8, 'x')),
                "tensor 't': data_offsets begin 8 is after end 0");
    CHECK_ERROR(raw(entry("\"F32\"", "[2]", "[0]"), std::string(8, 'x')),
                "data_offsets must be two non-negative integers");
    CHECK_ERROR(raw(entry("\"F32\"", "[2]", "[-8,0]"), std::string(8, 'x')),
                "data_offsets must be two non-negative");
    CHECK_ERROR(raw(entry("\"F32\"", "[3]", "[0,8]"), std::string(8, 'x')),
                "tensor 't': data_offsets span 8 bytes, but shape [3] of F32 needs 12");
    CHECK_ERROR(raw(entry("\"F32\"", "[4294967296,4294967296,2]", "[0,8]"), std::string(8, 'x')),
                "tensor 't': element count of shape [4294967296,4294967296,2] overflows 64 bits");
    CHECK_ERROR(raw(entry("\"F32\"", "[4611686018427387904]", "[0,8]"), std::string(8, 'x')),
                "byte size of shape [4611686018427387904] overflows 64 bits");
    // A zero anywhere makes the count zero, however large the other dimensions.
    CHECK_ERROR(raw(entry("\"F32\"", "[4294967296,4294967296,2,0]", "[0,0]"), ""), "(valid)");
    CHECK_ERROR(raw(R"({"t":{"dtype":"F32","shape":[],"data_offsets":[0,4],"extra":1}})", "xxxx"),
                "tensor 't': unknown field 'extra'");
    CHECK_ERROR(raw(R"({"t":{"dtype":"F32","data_offsets":[0,4]}})", "xxxx"),
                "tensor 't': missing field 'shape'");
    CHECK_ERROR(raw(R"({"t":[1]})", ""), "tensor 't': entry is an array, not an object");
    CHECK_ERROR(raw(R"({"":{"dtype":"F32","shape":[],"data_offsets":[0,4]}})", "xxxx"),
                "tensor name is empty");
}

TESSERA_TEST(rejectsDuplicateNames) {
    CHECK_ERROR(raw(R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},)"
                    R"("a":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}})",
                    "xy"),
                "duplicate key \"a\"");
}

TESSERA_TEST(rejectsBadMetadata) {
    CHECK_ERROR(raw(R"({"__metadata__":{"k":1}})", ""),
                "safetensors metadata value for 'k' is a number, not a string");
    CHECK_ERROR(raw(R"({"__metadata__":["x"]})", ""), "safetensors __metadata__ is an array, not an object");
    CHECK_ERROR(raw(R"({"__metadata__":{"k":"v","w":""}})", ""), "(valid)");
}

TESSERA_TEST(rejectsLayoutsThatAreNotExactlyBackToBack) {
    const std::string overlap = R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                                R"("b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})";
    CHECK_ERROR(raw(overlap, std::string(12, 'x')), "tensors 'a' and 'b' overlap in the data buffer");
    const std::string hole = R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                             R"("b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}})";
    CHECK_ERROR(raw(hole, std::string(12, 'x')), "hole of 4 bytes before tensor 'b' (data offset 4)");
    const std::string late = R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})";
    CHECK_ERROR(raw(late, std::string(8, 'x')), "hole of 4 bytes before tensor 'a'");
    CHECK_ERROR(raw(kTwoFloats, std::string(10, 'x')), "2 trailing bytes after the last tensor");
    CHECK_ERROR(raw("{}", "x"), "1 trailing bytes after the last tensor");
    CHECK_ERROR(raw(kTwoFloats, std::string(5, 'x')),
                "the tensors need 8 data bytes but the file holds 5 (truncated?)");
    // Header order does not matter, only the byte layout.
    const std::string swapped = R"({"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]},)"
                                R"("a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})";
    CHECK_ERROR(raw(swapped, std::string(8, 'x')), "(valid)");
}

TESSERA_TEST(roundTripsDtypesShapesAndMetadata) {
    TempDir dir;
    const fs::path path = dir.path / "stage.safetensors";
    SafetensorsWriter w;
    const auto f32 = pattern(2 * 3 * 4 * 4, 1);
    const auto bf16 = pattern(5 * 2, 2);
    const auto f16 = pattern(3 * 2, 3);
    const auto i8 = pattern(7, 4);
    const auto i64 = pattern(2 * 8, 5);
    const auto scalar = pattern(4, 6);
    const auto flag = pattern(1, 7); // the writer keeps references: data outlives write()
    CHECK(w.add("layers.0.w", Dtype::F32, {2, 3, 4}, f32).ok());
    CHECK(w.add("layers.0.norm", Dtype::BF16, {5}, bf16).ok());
    CHECK(w.add("empty", Dtype::F32, {0, 16}, std::span<const std::byte>()).ok());
    CHECK(w.add("h", Dtype::F16, {3}, f16).ok());
    CHECK(w.add("q", Dtype::I8, {7}, i8).ok());
    CHECK(w.add("steps", "I64", {2}, i64).ok());
    CHECK(w.add("lr", "F32", {}, scalar).ok()); // a scalar: shape []
    CHECK(w.add("flag", "BOOL", {1}, flag).ok());
    CHECK(w.setMetadata("format", "pt").ok());
    CHECK(w.setMetadata("step", "41").ok());
    CHECK(w.setMetadata("step", "42").ok()); // replaces
    const tessera::Status written = w.write(path);
    CHECK_MSG(written.ok(), written.message());
    CHECK(!fs::exists(dir.path / "stage.safetensors.tmp"));

    const auto file = SafetensorsFile::open(path);
    CHECK_MSG(file.ok(), file.message());
    const std::vector<std::string> order = {"layers.0.w", "layers.0.norm", "empty", "h",
                                            "q",          "steps",         "lr",    "flag"};
    CHECK(file->tensors().size() == order.size());
    for (std::size_t i = 0; i < order.size(); ++i)
        CHECK_MSG(file->tensors()[i].name == order[i], i << ": " << file->tensors()[i].name);

    const auto check = [&](const char* name, const char* dtype, std::vector<std::int64_t> shape,
                           const std::vector<std::byte>& data) {
        const TensorInfo* t = file->find(name);
        CHECK_MSG(t != nullptr, name);
        CHECK_MSG(t->dtype == dtype && t->shape == shape, name);
        const auto bytes = file->read(*t);
        CHECK_MSG(bytes.ok(), bytes.message());
        CHECK_MSG(*bytes == data, name);
    };
    check("layers.0.w", "F32", {2, 3, 4}, f32);
    check("layers.0.norm", "BF16", {5}, bf16);
    check("empty", "F32", {0, 16}, {});
    check("h", "F16", {3}, f16);
    check("q", "I8", {7}, i8);
    check("steps", "I64", {2}, i64);
    check("lr", "F32", {}, scalar);
    check("flag", "BOOL", {1}, pattern(1, 7));
    CHECK(file->find("nope") == nullptr);

    using Meta = std::vector<std::pair<std::string, std::string>>;
    CHECK((file->metadata() == Meta{{"format", "pt"}, {"step", "42"}}));

    // Into a caller buffer, which must be the right size.
    std::vector<std::byte> buffer(f32.size());
    CHECK(file->read(*file->find("layers.0.w"), buffer).ok());
    CHECK(buffer == f32);
    std::vector<std::byte> small(3);
    CHECK(contains(file->read(*file->find("layers.0.w"), small).message(), "is 96 bytes, the buffer 3"));
    // A piece of a tensor; a piece that reaches past its end is refused in words.
    std::vector<std::byte> piece(10);
    CHECK(file->readRange(*file->find("layers.0.w"), 86, piece).ok());
    CHECK(std::equal(piece.begin(), piece.end(), f32.begin() + 86));
    CHECK(contains(file->readRange(*file->find("layers.0.w"), 87, piece).message(),
                   "bytes [87, 97) are not in tensor 'layers.0.w' of 96 bytes"));
    CHECK(!file->readRange(*file->find("layers.0.w"), std::uint64_t{1} << 63, piece).ok());

    // The same bytes parsed in memory give the same answer.
    std::ifstream in(path, std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const auto memory = SafetensorsFile::parse(std::as_bytes(std::span(bytes.data(), bytes.size())));
    CHECK_MSG(memory.ok(), memory.message());
    CHECK(*memory->read(*memory->find("steps")) == i64);
    CHECK(memory->readRange(*memory->find("layers.0.w"), 86, piece).ok());
    CHECK(std::equal(piece.begin(), piece.end(), f32.begin() + 86));
    CHECK(memory->fileSize() == bytes.size());
}

TESSERA_TEST(writerPadsTheHeaderToAMultipleOfEight) {
    TempDir dir;
    for (std::string name : {"a", "ab", "abc", "abcd", "abcde", "abcdef", "abcdefg", "abcdefgh"}) {
        SafetensorsWriter w;
        CHECK(w.add(name, Dtype::I8, {1}, pattern(1, 0)).ok());
        const fs::path path = dir.path / (name + ".safetensors");
        CHECK(w.write(path).ok());
        const auto file = SafetensorsFile::open(path);
        CHECK_MSG(file.ok(), file.message());
        CHECK_MSG(file->headerLength() % 8 == 0, name << ": " << file->headerLength());
        CHECK(fs::file_size(path) == 8 + file->headerLength() + 1);
    }
}

TESSERA_TEST(writerRejectsWhatTheReaderWould) {
    SafetensorsWriter w;
    CHECK(w.add("a", Dtype::F32, {2}, pattern(8, 0)).ok());
    CHECK(contains(w.add("a", Dtype::F32, {2}, pattern(8, 0)).message(), "tensor 'a' added twice"));
    CHECK(contains(w.add("b", Dtype::F32, {3}, pattern(8, 0)).message(),
                   "8 bytes do not match its shape and dtype"));
    CHECK(contains(w.add("c", "F128", {1}, pattern(16, 0)).message(), "unknown dtype 'F128'"));
    CHECK(!w.add("", Dtype::F32, {1}, pattern(4, 0)).ok());
    CHECK(!w.add("__metadata__", Dtype::F32, {1}, pattern(4, 0)).ok());
    CHECK(!w.add("bad\xff", Dtype::F32, {1}, pattern(4, 0)).ok());
    CHECK(!w.add("d", Dtype::F32, {-1}, std::span<const std::byte>()).ok());
    CHECK(!w.write("/nonexistent-dir/x.safetensors").ok());
}

TESSERA_TEST(openRejectsTruncatedAndMissingFiles) {
    TempDir dir;
    const fs::path path = dir.path / "t.safetensors";
    SafetensorsWriter w;
    CHECK(w.add("a", Dtype::F32, {64}, pattern(256, 0)).ok());
    CHECK(w.add("b", Dtype::F32, {64}, pattern(256, 1)).ok());
    CHECK(w.write(path).ok());
    fs::resize_file(path, fs::file_size(path) - 300); // in the middle of the data
    const auto truncated = SafetensorsFile::open(path);
    CHECK(!truncated.ok());
    CHECK_MSG(
        contains(truncated.message(), "the tensors need 512 data bytes but the file holds 212 (truncated?)"),
        truncated.message());
    CHECK(contains(truncated.message(), path.string() + ": "));

    fs::resize_file(path, 4);
    CHECK(contains(SafetensorsFile::open(path).message(), "too short"));
    CHECK(contains(SafetensorsFile::open(dir.path / "missing.safetensors").message(), "No such file"));
    CHECK(contains(SafetensorsFile::open(dir.path).message(), "not a regular file"));
    writeFile(path, "garbage garbage garbage");
    CHECK(contains(SafetensorsFile::open(path).message(), "exceeds the limit"));
}

TESSERA_TEST(dtypeNamesMapToOurs) {
    CHECK(safetensorsDtypeName(Dtype::BF16) == "BF16");
    CHECK(dtypeFromSafetensors("F16") == Dtype::F16);
    CHECK(!dtypeFromSafetensors("I64").has_value());
    CHECK(safetensorsDtypeSize("I64") == 8u);
    CHECK(safetensorsDtypeSize("F8_E4M3") == 1u);
    CHECK(!safetensorsDtypeSize("f32").has_value());
}
