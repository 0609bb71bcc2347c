// SPDX-License-Identifier: Apache-2.0
// ByteRange: a Range and If-Range pair against a file's size and strong ETag. The input is the file
// size (8 bytes), whether If-Range is present (1 byte), then "Range\n--\nIf-Range\n--\nETag".
#include "FuzzCheck.h"
#include "RangeCheck.h"

#include <QByteArray>

using namespace tessera::coordinator::http;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    tessera::fuzz::Input in(data, size);
    const quint64 low = in.u32();
    const quint64 high = in.u32();
    // Any non-negative size, small ones most often.
    const qint64 fileSize = qint64(((high & 0x7fffffffu) << 32 | low) >> (high >> 31 ? 0 : 40));
    const bool hasIfRange = in.byte() & 1;
    const std::string_view rangeText = in.part();
    const std::string_view ifRangeText = in.part();
    const std::string_view etagText = in.part();
    const QByteArray rangeHeader(rangeText.data(), qsizetype(rangeText.size()));
    const QByteArray ifRange(ifRangeText.data(), qsizetype(ifRangeText.size()));
    const QByteArray etag(etagText.data(), qsizetype(etagText.size()));

    const ByteRange range = ByteRange::evaluate(rangeHeader, hasIfRange, ifRange, etag, fileSize);
    tessera::fuzz::checkRange(range, fileSize);
    // Without a Range there is nothing else to send but the whole file; an If-Range that is not the
    // exact strong tag sends the whole file too.
    if (rangeHeader.isEmpty() || (hasIfRange && (ifRange.trimmed() != etag || etag.startsWith("W/"))))
        FUZZ_CHECK(range.kind == ByteRange::Kind::Whole);
    return 0;
}
