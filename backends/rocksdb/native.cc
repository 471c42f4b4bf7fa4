#include "native.h"

#include <rocksdb/version.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include <rocksdb/env.h>
#include <rocksdb/file_checksum.h>
#include <rocksdb/file_system.h>
#include <rocksdb/options.h>
#include <rocksdb/sst_file_reader.h>
#include <rocksdb/sst_file_writer.h>
#include <rocksdb/table.h>

#if defined(__x86_64__)
#include <nmmintrin.h>
#endif

namespace {

// Debian's portable RocksDB computes CRC32C without the CPU's instruction,
// at a fraction of the disk's speed; this one uses it where there is one.
uint32_t crc_table[256];

void init_crc_table() {
  for (uint32_t i = 0; i < 256; i++) {
    uint32_t c = i;
    for (int k = 0; k < 8; k++) c = c & 1 ? (c >> 1) ^ 0x82F63B78u : c >> 1;
    crc_table[i] = c;
  }
}

uint32_t crc32c_portable(uint32_t crc, const unsigned char* p, size_t n) {
  crc = ~crc;
  for (; n > 0; n--, p++) crc = crc_table[(crc ^ *p) & 0xff] ^ (crc >> 8);
  return ~crc;
}

#if defined(__x86_64__)
// One crc32 instruction waits for the one before it; three independent
// streams keep the unit busy, and the streams' CRCs are then joined by
// shifting them over the bytes that follow (stripe_shift).
constexpr size_t kStripe = 1024;

// stripe_shift[k][b] is the register (b << 8k) after kStripe zero bytes:
// shifting is linear, so four lookups shift any register.
uint32_t stripe_shift[4][256];

__attribute__((target("sse4.2"))) uint64_t crc_zeros(uint64_t c, size_t n) {
  for (; n >= 8; n -= 8) c = _mm_crc32_u64(c, 0);
  return c;
}

__attribute__((target("sse4.2"))) void init_stripe_shift() {
  for (int k = 0; k < 4; k++) {
    for (uint32_t b = 0; b < 256; b++) {
      stripe_shift[k][b] = (uint32_t)crc_zeros(uint64_t(b) << (8 * k), kStripe);
    }
  }
}

uint32_t shift_stripe(uint32_t c) {
  return stripe_shift[0][c & 0xff] ^ stripe_shift[1][(c >> 8) & 0xff] ^
         stripe_shift[2][(c >> 16) & 0xff] ^ stripe_shift[3][c >> 24];
}

__attribute__((target("sse4.2"))) uint32_t crc32c_sse42(uint32_t crc, const unsigned char* p, size_t n) {
  uint64_t c = ~crc;
  for (; n >= 3 * kStripe; n -= 3 * kStripe, p += 3 * kStripe) {
    uint64_t c1 = 0, c2 = 0;
    for (size_t i = 0; i < kStripe; i += 8) {
      uint64_t v0, v1, v2;
      std::memcpy(&v0, p + i, 8);
      std::memcpy(&v1, p + kStripe + i, 8);
      std::memcpy(&v2, p + 2 * kStripe + i, 8);
      c = _mm_crc32_u64(c, v0);
      c1 = _mm_crc32_u64(c1, v1);
      c2 = _mm_crc32_u64(c2, v2);
    }
    c = shift_stripe(shift_stripe(uint32_t(c)) ^ uint32_t(c1)) ^ uint32_t(c2);
  }
  for (; n >= 8; n -= 8, p += 8) {
    uint64_t v;
    std::memcpy(&v, p, 8);
    c = _mm_crc32_u64(c, v);
  }
  uint32_t c32 = (uint32_t)c;
  for (; n > 0; n--, p++) c32 = _mm_crc32_u8(c32, *p);
  return ~c32;
}
#endif

using crc_fn = uint32_t (*)(uint32_t, const unsigned char*, size_t);

crc_fn pick_crc() {
  init_crc_table();
#if defined(__x86_64__)
  if (__builtin_cpu_supports("sse4.2")) {
    init_stripe_shift();
    return crc32c_sse42;
  }
#endif
  return crc32c_portable;
}

const crc_fn crc32c = pick_crc();

// FileCrc32c is RocksDB's standard file checksum (CRC32C, 4 bytes
// big-endian, the same name), computed with crc32c above.
class FileCrc32c : public rocksdb::FileChecksumGenerator {
 public:
  void Update(const char* data, size_t n) override {
    crc_ = crc32c(crc_, reinterpret_cast<const unsigned char*>(data), n);
  }
  void Finalize() override {
    sum_.resize(4);
    for (int i = 0; i < 4; i++) sum_[i] = char(crc_ >> (24 - 8 * i));
  }
  std::string GetChecksum() const override { return sum_; }
  const char* Name() const override { return rocksdb::kStandardDbFileChecksumFuncName; }

 private:
  uint32_t crc_ = 0;
  std::string sum_;
};

class FileCrc32cFactory : public rocksdb::FileChecksumGenFactory {
 public:
  std::unique_ptr<rocksdb::FileChecksumGenerator> CreateFileChecksumGenerator(
      const rocksdb::FileChecksumGenContext&) override {
    return std::unique_ptr<rocksdb::FileChecksumGenerator>(new FileCrc32c());
  }
  const char* Name() const override { return "stateutil.FileCrc32c"; }
};

// UnsyncedFile leaves the file's durability to its ingestion, which
// syncs every file it links into a database: SstFileWriter's own sync on
// Finish made each file wait for the disk in the middle of the work.
// Write-back still starts as the file grows (RangeSync, bytes_per_sync).
class UnsyncedFile : public rocksdb::FSWritableFileOwnerWrapper {
 public:
  using FSWritableFileOwnerWrapper::FSWritableFileOwnerWrapper;
  rocksdb::IOStatus Sync(const rocksdb::IOOptions&, rocksdb::IODebugContext*) override {
    return rocksdb::IOStatus::OK();
  }
  rocksdb::IOStatus Fsync(const rocksdb::IOOptions&, rocksdb::IODebugContext*) override {
    return rocksdb::IOStatus::OK();
  }
};

class IngestedFileSystem : public rocksdb::FileSystemWrapper {
 public:
  IngestedFileSystem() : FileSystemWrapper(rocksdb::FileSystem::Default()) {}
  const char* Name() const override { return "stateutil.IngestedFileSystem"; }
  rocksdb::IOStatus NewWritableFile(const std::string& path, const rocksdb::FileOptions& opts,
                                    std::unique_ptr<rocksdb::FSWritableFile>* out,
                                    rocksdb::IODebugContext* dbg) override {
    std::unique_ptr<rocksdb::FSWritableFile> f;
    rocksdb::IOStatus s = target()->NewWritableFile(path, opts, &f, dbg);
    if (s.ok()) out->reset(new UnsyncedFile(std::move(f)));
    return s;
  }
};

rocksdb::Env* ingested_env() {
  static std::unique_ptr<rocksdb::Env> env =
      rocksdb::NewCompositeEnv(std::make_shared<IngestedFileSystem>());
  return env.get();
}

}  // namespace

extern "C" uint32_t su_crc32c(uint32_t crc, const char* p, size_t n,
                              int portable) {
  if (portable) {
    return crc32c_portable(crc, reinterpret_cast<const unsigned char*>(p), n);
  }
  return crc32c(crc, reinterpret_cast<const unsigned char*>(p), n);
}

struct su_sst {
  rocksdb::SstFileWriter* w;
};

static int fail(const rocksdb::Status& s, char** err) {
  *err = strdup(s.ToString().c_str());
  return -1;
}

extern "C" su_sst* su_sst_open(const char* path, int lz4, size_t block_size,
                               int checksum, char** err) {
  rocksdb::Options opts;
  opts.compression = lz4 ? rocksdb::kLZ4Compression : rocksdb::kNoCompression;
  opts.file_checksum_gen_factory = std::make_shared<FileCrc32cFactory>();
  opts.env = ingested_env();
  rocksdb::BlockBasedTableOptions table;
  table.block_size = block_size;
  table.checksum = rocksdb::ChecksumType(checksum);
  opts.table_factory.reset(rocksdb::NewBlockBasedTableFactory(table));
  // Written pages go to disk as the file grows, not all in the final
  // fsync, so the disk works while the CPU builds the next blocks.
  rocksdb::EnvOptions env;
  env.bytes_per_sync = 1 << 20;
  auto* w = new rocksdb::SstFileWriter(env, opts, nullptr,
                                       /*invalidate_page_cache=*/false);
  rocksdb::Status s = w->Open(path);
  if (!s.ok()) {
    delete w;
    fail(s, err);
    return nullptr;
  }
  return new su_sst{w};
}

extern "C" int su_sst_put(su_sst* w, const char* key, size_t klen,
                          const char* val, size_t vlen, char** err) {
  rocksdb::Status s =
      w->w->Put(rocksdb::Slice(key, klen), rocksdb::Slice(val, vlen));
  return s.ok() ? 0 : fail(s, err);
}

extern "C" int su_sst_put_records(su_sst* w, const char* buf,
                                  const intptr_t* recs, size_t n, char** err) {
  for (size_t i = 0; i < n; i++, recs += 3) {
    const char* key = buf + recs[0];
    rocksdb::Status s = w->w->Put(rocksdb::Slice(key, size_t(recs[1])),
                                  rocksdb::Slice(key + recs[1], size_t(recs[2])));
    if (!s.ok()) {
      return fail(s, err);
    }
  }
  return 0;
}

extern "C" int su_sst_copy(su_sst* w, rocksdb_iterator_t* it, int max,
                           char** err) {
  int n = 0;
  for (; n < max && rocksdb_iter_valid(it); n++) {
    size_t kl, vl;
    const char* k = rocksdb_iter_key(it, &kl);
    const char* v = rocksdb_iter_value(it, &vl);
    if (su_sst_put(w, k, kl, v, vl, err) != 0) {
      return -1;
    }
    rocksdb_iter_next(it);
  }
  return n;
}

extern "C" size_t su_iter_fill(rocksdb_iterator_t* it, char* buf, size_t cap,
                               size_t* need) {
  size_t used = 0;
  *need = 0;
  while (rocksdb_iter_valid(it)) {
    size_t kl, vl;
    const char* k = rocksdb_iter_key(it, &kl);
    const char* v = rocksdb_iter_value(it, &vl);
    size_t n = 8 + kl + vl;
    if (cap - used < n) {
      if (used == 0) *need = n;
      break;
    }
    uint32_t lens[2] = {uint32_t(kl), uint32_t(vl)};
    std::memcpy(buf + used, lens, 8);
    std::memcpy(buf + used + 8, k, kl);
    std::memcpy(buf + used + 8 + kl, v, vl);
    used += n;
    rocksdb_iter_next(it);
  }
  return used;
}

extern "C" int su_sst_finish(su_sst* w, uint64_t* size, uint32_t* crc,
                             char** err) {
  rocksdb::ExternalSstFileInfo info;
  rocksdb::Status s = w->w->Finish(&info);
  if (!s.ok()) {
    return fail(s, err);
  }
  // RocksDB's CRC32C file checksum is the 4-byte big-endian value.
  const std::string& sum = info.file_checksum;
  if (info.file_checksum_func_name != rocksdb::kStandardDbFileChecksumFuncName || sum.size() != 4) {
    *err = strdup("SST writer computed no CRC32C file checksum");
    return -1;
  }
  *crc = (uint32_t)(uint8_t)sum[0] << 24 | (uint32_t)(uint8_t)sum[1] << 16 |
         (uint32_t)(uint8_t)sum[2] << 8 | (uint32_t)(uint8_t)sum[3];
  *size = info.file_size;
  return 0;
}

extern "C" void su_sst_destroy(su_sst* w) {
  delete w->w;
  delete w;
}

extern "C" int su_sst_linkable(const char* path, char** err) {
  rocksdb::Options opts;
  rocksdb::SstFileReader r(opts);
  rocksdb::Status s = r.Open(path);
  if (!s.ok()) {
    return fail(s, err);
  }
  auto props = r.GetTableProperties();
  if (props->num_deletions != 0 || props->num_merge_operands != 0 ||
      props->num_range_deletions != 0) {
    return 0;
  }
  const auto& user = props->user_collected_properties;
  if (user.find("rocksdb.external_sst_file.version") == user.end()) {
    return 0;
  }
  auto seqno = user.find("rocksdb.external_sst_file.global_seqno");
  if (seqno == user.end()) {
    return 1;
  }
  // A fixed64, little-endian: ingestion rewrites it unless it is 0.
  const std::string& v = seqno->second;
  if (v.size() != 8) {
    return 0;
  }
  for (char c : v) {
    if (c != 0) return 0;
  }
  return 1;
}

extern "C" void su_rocksdb_version(int* major, int* minor, int* patch) {
  *major = ROCKSDB_MAJOR;
  *minor = ROCKSDB_MINOR;
  *patch = ROCKSDB_PATCH;
}
