#include "native.h"

#include <rocksdb/version.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <rocksdb/db.h>
#include <rocksdb/env.h>
#include <rocksdb/file_checksum.h>
#include <rocksdb/file_system.h>
#include <rocksdb/merge_operator.h>
#include <rocksdb/metadata.h>
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

// ListAppend is Flink's list-state merge operator (FRocksDB's
// StringAppendTESTOperator): operands joined by ','.
class ListAppend : public rocksdb::AssociativeMergeOperator {
 public:
  bool Merge(const rocksdb::Slice&, const rocksdb::Slice* existing, const rocksdb::Slice& value,
             std::string* out, rocksdb::Logger*) const override {
    out->clear();
    if (existing != nullptr) {
      out->assign(existing->data(), existing->size());
      out->push_back(',');
    }
    out->append(value.data(), value.size());
    return true;
  }
  const char* Name() const override { return "stringappendtest"; }
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

struct su_db {
  rocksdb::DB* db = nullptr;
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  std::vector<std::string> names;
};

static void fail_with(const char* what, const rocksdb::Status& s, char** err) {
  *err = strdup((std::string(what) + ": " + s.ToString()).c_str());
}

extern "C" su_db* su_db_open_read_only(const char* dir, int list_merge, char** err) {
  rocksdb::Options opts;
  opts.info_log_level = rocksdb::INFO_LEVEL;
  opts.keep_log_file_num = 2;
  opts.max_open_files = 256;
  // Tables open on first read, one at a time: a point read touches a few.
  opts.max_file_opening_threads = 1;
  opts.skip_stats_update_on_db_open = true;
  auto* d = new su_db;
  rocksdb::Status s = rocksdb::DB::ListColumnFamilies(opts, dir, &d->names);
  if (!s.ok()) {
    delete d;
    fail_with("list column families", s, err);
    return nullptr;
  }
  rocksdb::ColumnFamilyOptions cf_opts(opts);
  if (list_merge) cf_opts.merge_operator = std::make_shared<ListAppend>();
  std::vector<rocksdb::ColumnFamilyDescriptor> cfs;
  for (const auto& n : d->names) cfs.emplace_back(n, cf_opts);
  s = rocksdb::DB::OpenForReadOnly(opts, dir, cfs, &d->handles, &d->db);
  if (!s.ok()) {
    delete d;
    fail_with("open", s, err);
    return nullptr;
  }
  return d;
}

extern "C" void su_db_close(su_db* d) {
  for (auto* h : d->handles) d->db->DestroyColumnFamilyHandle(h);
  delete d->db;
  delete d;
}

extern "C" int su_db_cf_count(su_db* d) { return int(d->names.size()); }

extern "C" const char* su_db_cf_name(su_db* d, int cf, size_t* len) {
  *len = d->names[cf].size();
  return d->names[cf].data();
}

static void append_part(std::string* out, const std::string& s) {
  uint32_t n = uint32_t(s.size());
  out->append(reinterpret_cast<const char*>(&n), 4);
  out->append(s);
}

extern "C" int su_db_live_files(su_db* d, int cf, char** out, size_t* len) {
  *out = nullptr;
  *len = 0;
  for (const char* p : {"rocksdb.num-entries-active-mem-table", "rocksdb.num-entries-imm-mem-tables"}) {
    std::string v;
    if (!d->db->GetProperty(d->handles[cf], p, &v) || v != "0") return -1;
  }
  std::vector<rocksdb::LiveFileMetaData> files;
  d->db->GetLiveFilesMetaData(&files);
  std::string buf;
  int n = 0;
  for (const auto& f : files) {
    if (f.column_family_name != d->names[cf]) continue;
    append_part(&buf, f.name);
    append_part(&buf, f.smallestkey);
    append_part(&buf, f.largestkey);
    n++;
  }
  *out = static_cast<char*>(malloc(buf.size() + 1));
  std::memcpy(*out, buf.data(), buf.size());
  *len = buf.size();
  return n;
}

extern "C" int su_db_approximate_sizes(su_db* d, int cf, const char* keys, const size_t* offs, int n,
                                       uint64_t* sizes, char** err) {
  std::vector<rocksdb::Range> ranges(n);
  for (int i = 0; i < n; i++) {
    ranges[i] = rocksdb::Range(rocksdb::Slice(keys + offs[2 * i], offs[2 * i + 1] - offs[2 * i]),
                               rocksdb::Slice(keys + offs[2 * i + 1], offs[2 * i + 2] - offs[2 * i + 1]));
  }
  rocksdb::SizeApproximationOptions o;
  o.include_files = true;
  o.include_memtables = false;
  rocksdb::Status s = d->db->GetApproximateSizes(o, d->handles[cf], ranges.data(), n, sizes);
  return s.ok() ? 0 : fail(s, err);
}

struct su_iter {
  rocksdb::ReadOptions ro;
  std::string lower, upper;
  rocksdb::Slice lower_bound, upper_bound;  // what ro points to
  std::unique_ptr<rocksdb::Iterator> it;
};

extern "C" su_iter* su_iter_new(su_db* d, int cf, const char* lower, size_t lower_len, int has_lower,
                                const char* upper, size_t upper_len, int has_upper, int verify) {
  auto* i = new su_iter;
  i->ro.verify_checksums = verify != 0;
  i->ro.fill_cache = false;
  if (has_lower) {
    i->lower.assign(lower, lower_len);
    i->lower_bound = rocksdb::Slice(i->lower);
    i->ro.iterate_lower_bound = &i->lower_bound;
  }
  if (has_upper) {
    i->upper.assign(upper, upper_len);
    i->upper_bound = rocksdb::Slice(i->upper);
    i->ro.iterate_upper_bound = &i->upper_bound;
  }
  i->it.reset(d->db->NewIterator(i->ro, d->handles[cf]));
  if (has_lower) {
    i->it->Seek(i->lower_bound);
  } else {
    i->it->SeekToFirst();
  }
  return i;
}

extern "C" size_t su_iter_fill(su_iter* i, char* buf, size_t cap, size_t* need) {
  rocksdb::Iterator* it = i->it.get();
  size_t used = 0;
  *need = 0;
  for (; it->Valid(); it->Next()) {
    rocksdb::Slice k = it->key(), v = it->value();
    size_t n = 8 + k.size() + v.size();
    if (cap - used < n) {
      if (used == 0) *need = n;
      break;
    }
    uint32_t lens[2] = {uint32_t(k.size()), uint32_t(v.size())};
    std::memcpy(buf + used, lens, 8);
    std::memcpy(buf + used + 8, k.data(), k.size());
    std::memcpy(buf + used + 8 + k.size(), v.data(), v.size());
    used += n;
  }
  return used;
}

extern "C" int su_iter_status(su_iter* i, char** err) {
  rocksdb::Status s = i->it->status();
  return s.ok() ? 0 : fail(s, err);
}

extern "C" void su_iter_destroy(su_iter* i) {
  i->it.reset();  // before the bounds it points to
  delete i;
}

extern "C" int su_sst_copy(su_sst* w, su_iter* i, int max, char** err) {
  rocksdb::Iterator* it = i->it.get();
  int n = 0;
  for (; n < max && it->Valid(); n++) {
    rocksdb::Status s = w->w->Put(it->key(), it->value());
    if (!s.ok()) return fail(s, err);
    it->Next();
  }
  return n;
}

extern "C" int su_sst_put_batch(su_sst* w, const char* buf, size_t n, char** err) {
  int count = 0;
  for (size_t p = 0; p < n; count++) {
    uint32_t lens[2];
    std::memcpy(lens, buf + p, 8);
    const char* k = buf + p + 8;
    rocksdb::Status s = w->w->Put(rocksdb::Slice(k, lens[0]), rocksdb::Slice(k + lens[0], lens[1]));
    if (!s.ok()) return fail(s, err);
    p += 8 + size_t(lens[0]) + lens[1];
  }
  return count;
}

extern "C" void su_rocksdb_version(int* major, int* minor, int* patch) {
  *major = ROCKSDB_MAJOR;
  *minor = ROCKSDB_MINOR;
  *patch = ROCKSDB_PATCH;
}
