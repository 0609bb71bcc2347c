// SPDX-License-Identifier: Apache-2.0
// SafetensorsFile: a stage shard as downloaded from the coordinator (the only way shard bytes from
// the network become tensors). A file that parses is its header and tensors back to back, nothing
// more, and every tensor reads in full.
#include "FuzzCheck.h"
#include "shard/Safetensors.h"

using namespace tessera;
using namespace tessera::gpu;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const Result<SafetensorsFile> file =
        SafetensorsFile::parse({reinterpret_cast<const std::byte*>(data), size});
    tessera::fuzz::verdict("file", file);
    if (!file)
        return 0;
    FUZZ_CHECK(file->fileSize() == size);
    FUZZ_CHECK(file->headerLength() >= 2 && 8 + file->headerLength() <= size);
    std::uint64_t cursor = 0;
    for (const TensorInfo& t : file->tensors()) {
        FUZZ_CHECK(!t.name.empty() && t.begin == cursor && t.end >= t.begin);
        cursor = t.end;
        const std::optional<std::size_t> element = safetensorsDtypeSize(t.dtype);
        FUZZ_CHECK(element);
        std::uint64_t count = 1;
        for (std::int64_t dim : t.shape) {
            FUZZ_CHECK(dim >= 0);
            count *= std::uint64_t(dim);
        }
        FUZZ_CHECK(count * *element == t.byteSize());
        FUZZ_CHECK(file->find(t.name) == &t);
        const Result<std::vector<std::byte>> bytes = file->read(t);
        FUZZ_CHECK(bytes && bytes->size() == t.byteSize());
        if (const std::optional<Dtype> dtype = dtypeFromSafetensors(t.dtype))
            FUZZ_CHECK(safetensorsDtypeName(*dtype) == t.dtype);
    }
    FUZZ_CHECK(8 + file->headerLength() + cursor == size);
    return 0;
}
