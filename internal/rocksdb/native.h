// What stateutil asks of RocksDB beyond its C API (native.cc).
//
// The SST file writer for the files stateutil builds itself (conversion,
// rescaling) is RocksDB's SstFileWriter with settings the C API cannot
// make: the written pages stay in the page cache, the file's CRC32C is
// computed while it is written, so nothing is read back to checksum it,
// and the file is not synced on its own, because ingesting it into a
// database syncs it.
//
// Databases opened only to be read (snapshots' subtasks, Flink's native
// RocksDB state) are opened here too, so that their iterators are this
// file's and move pairs to Go a batch per call.
#ifndef STATEUTIL_NATIVE_H
#define STATEUTIL_NATIVE_H

#include <stddef.h>
#include <stdint.h>

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
typedef struct su_iter su_iter;
// su_sst_copy moves up to max pairs from it to w, advancing it; it returns
// how many, or -1 with *err set.
int su_sst_copy(su_sst* w, su_iter* it, int max, char** err);
// su_sst_put_batch puts the pairs of buf[0:n), laid out as su_iter_fill
// lays them out; it returns how many, or -1 with *err set.
int su_sst_put_batch(su_sst* w, const char* buf, size_t n, char** err);
// su_sst_finish completes the file and reports its size and CRC32C.
int su_sst_finish(su_sst* w, uint64_t* size, uint32_t* crc, char** err);
void su_sst_destroy(su_sst* w);

// su_sst_linkable reports (1 or 0; -1 with *err set when the file cannot
// be read) whether the SST file at path can be ingested into another
// database as it is: written by an SST file writer, holding only puts,
// with a global sequence number of 0 that ingestion never rewrites.
int su_sst_linkable(const char* path, char** err);

typedef struct su_db su_db;

// su_db_open_read_only opens the database at dir read-only with all its
// column families. list_merge sets Flink's list-state merge operator
// (operands joined by ',', named as Flink names it).
su_db* su_db_open_read_only(const char* dir, int list_merge, char** err);
// su_db_close frees the column-family handles, then the database.
void su_db_close(su_db* d);
// su_db_cf_count and su_db_cf_name list the column families; the names
// live as long as d.
int su_db_cf_count(su_db* d);
const char* su_db_cf_name(su_db* d, int cf, size_t* len);

// su_db_live_files lists column family cf's SST files into a buffer it
// allocates (*out, *len bytes; free it): per file its name, smallest and
// largest key, each as a 4-byte length (native byte order) and the bytes.
// It returns the number of files, or -1 when the memtables hold entries
// too (then the files are not all of the column family).
int su_db_live_files(su_db* d, int cf, char** out, size_t* len);

// su_db_approximate_sizes estimates the file bytes of n key ranges of
// column family cf; range i is [keys[offs[2i]:offs[2i+1]],
// keys[offs[2i+1]:offs[2i+2]]).
int su_db_approximate_sizes(su_db* d, int cf, const char* keys,
                            const size_t* offs, int n, uint64_t* sizes,
                            char** err);

// su_iter_new iterates column family cf from lower (has_lower) to before
// upper (has_upper), positioned at its first pair; the bounds are copied.
// Scans do not fill the block cache; verify checks every block read.
su_iter* su_iter_new(su_db* d, int cf, const char* lower, size_t lower_len,
                     int has_lower, const char* upper, size_t upper_len,
                     int has_upper, int verify);
// su_iter_fill copies pairs from it into buf, each as a 4-byte key length,
// a 4-byte value length (native byte order), the key and the value,
// advancing it, until it is exhausted or the next pair does not fit in cap
// bytes. It returns the bytes used; when not even the first pair fits, 0
// with *need set to its size.
size_t su_iter_fill(su_iter* it, char* buf, size_t cap, size_t* need);
// su_iter_status is 0, or -1 with *err set when the iterator failed.
int su_iter_status(su_iter* it, char** err);
void su_iter_destroy(su_iter* it);

// su_crc32c extends crc over p[0:n) as the file checksum does; portable
// takes the table-driven code even on a CPU with the instruction.
uint32_t su_crc32c(uint32_t crc, const char* p, size_t n, int portable);

#ifdef __cplusplus
}
#endif

#endif
