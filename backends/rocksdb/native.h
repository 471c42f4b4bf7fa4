// What stateutil asks of RocksDB beyond its C API (native.cc).
//
// The SST file writer for the files stateutil builds itself (conversion,
// rescaling) is RocksDB's SstFileWriter with settings the C API cannot
// make: the written pages stay in the page cache, the file's CRC32C is
// computed while it is written, so nothing is read back to checksum it,
// and the file is not synced on its own, because ingesting it into a
// database syncs it.
#ifndef STATEUTIL_NATIVE_H
#define STATEUTIL_NATIVE_H

#include <stddef.h>
#include <stdint.h>

#include <rocksdb/c.h>

#ifdef __cplusplus
extern "C" {
#endif

// su_rocksdb_version reports the version of the RocksDB headers built
// against.
void su_rocksdb_version(int* major, int* minor, int* patch);

typedef struct su_sst su_sst;

// su_sst_open starts an SST file at path, LZ4-compressed when lz4 is set,
// with the block size and block checksum type (rocksdb::ChecksumType)
// given.
su_sst* su_sst_open(const char* path, int lz4, size_t block_size,
                    int checksum, char** err);
int su_sst_put(su_sst* w, const char* key, size_t klen, const char* val,
               size_t vlen, char** err);
// su_sst_put_records puts n records of buf, in increasing key order, each
// given by three numbers in recs: the key's offset in buf, its length, and
// the length of the value that follows it.
int su_sst_put_records(su_sst* w, const char* buf, const intptr_t* recs,
                       size_t n, char** err);
// su_sst_copy moves up to max pairs from it to w, advancing it; it returns
// how many, or -1 with *err set.
int su_sst_copy(su_sst* w, rocksdb_iterator_t* it, int max, char** err);
// su_sst_finish completes the file and reports its size and CRC32C.
int su_sst_finish(su_sst* w, uint64_t* size, uint32_t* crc, char** err);
void su_sst_destroy(su_sst* w);

// su_sst_linkable reports (1 or 0; -1 with *err set when the file cannot
// be read) whether the SST file at path can be ingested into another
// database as it is: written by an SST file writer, holding only puts,
// with a global sequence number of 0 that ingestion never rewrites.
int su_sst_linkable(const char* path, char** err);

// su_iter_fill copies pairs from it into buf, each as a 4-byte key length,
// a 4-byte value length (native byte order), the key and the value,
// advancing it, until it is exhausted or the next pair does not fit in cap
// bytes. It returns the bytes used; when not even the first pair fits, 0
// with *need set to its size.
size_t su_iter_fill(rocksdb_iterator_t* it, char* buf, size_t cap,
                    size_t* need);

// su_crc32c extends crc over p[0:n) as the file checksum does; portable
// takes the table-driven code even on a CPU with the instruction.
uint32_t su_crc32c(uint32_t crc, const char* p, size_t n, int portable);

#ifdef __cplusplus
}
#endif

#endif
