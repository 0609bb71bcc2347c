#pragma once
// CRC32C (Castagnoli, reflected, polynomial 0x82F63B78): the checksum of tensor frame payloads.

#include <QByteArrayView>
#include <QtGlobal>

namespace tessera {

// Table-driven, one byte at a time: fast enough next to the network, and no CPU feature checks.
// crc32c("123456789") == 0xE3069283.
quint32 crc32c(QByteArrayView data);

} // namespace tessera
