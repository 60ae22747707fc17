#include <cstring>
#include <type_traits>

#include "mmpt/core/hash.h"
#include "mmpt/plan/planner_state_internal.h"

namespace mmpt::plan::internal {
namespace {

constexpr char kStateMagic[8] = {'M', 'M', 'P', 'T', 'P', 'S', 'T', '1'};
// Version 2 records the settings a state was saved under by name (version 1: their hash), so a
// restore under others says which differ. Version 3: allow_repeat is a setting, and without it
// the carried samples may name a row twice (a draw deferred beside its earlier copy). Version
// 4: the micro-step a state was taken before, and inside a step the stream point after it with
// the step's unconsumed samples, so a state restores under another layout.
constexpr uint32_t kStateVersion = 4;

template <typename T>
void Put(std::string* out, T value) {
  static_assert(std::is_trivially_copyable_v<T>);
  char bytes[sizeof(T)];
  std::memcpy(bytes, &value, sizeof(T));  // little-endian hosts only (checked in store/meta.h)
  out->append(bytes, sizeof(T));
}

void PutString(std::string* out, std::string_view value) {
  Put(out, static_cast<uint32_t>(value.size()));
  out->append(value);
}

// Reads fixed-width values from a byte string, remembering if it ran past the end.
class Reader {
 public:
  explicit Reader(std::string_view bytes) : bytes_(bytes) {}
  template <typename T>
  T Get() {
    T value{};
    if (pos_ + sizeof(T) > bytes_.size()) {
      overrun_ = true;
      return value;
    }
    std::memcpy(&value, bytes_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return value;
  }
  // A string stored as its uint32 length, then its bytes.
  std::string GetString() {
    const uint32_t size = Get<uint32_t>();
    if (overrun_ || size > bytes_.size() - pos_) {
      overrun_ = true;
      return {};
    }
    std::string value(bytes_.substr(pos_, size));
    pos_ += size;
    return value;
  }
  uint64_t GetVarint() {
    uint64_t value = 0;
    for (int shift = 0; shift <= 63; shift += 7) {
      const uint8_t byte = Get<uint8_t>();
      if (overrun_) return 0;
      value |= uint64_t{byte & 0x7fu} << shift;
      if ((byte & 0x80) == 0) return value;
    }
    overrun_ = true;  // more than 10 bytes: not a varint this format writes
    return 0;
  }
  bool overrun() const { return overrun_; }
  size_t remaining() const { return bytes_.size() - pos_; }

 private:
  std::string_view bytes_;
  size_t pos_ = 0;
  bool overrun_ = false;
};

// Cursors, then carried rows ascending as varint deltas and one age byte each (a few bytes per
// sample; their token counts follow from the rows).
void PutPoint(std::string* out, const StreamPoint& point) {
  Put(out, static_cast<uint32_t>(point.cursors.size()));
  for (const SourceCursor& c : point.cursors) {
    Put(out, c.position);
    Put(out, c.epoch);
    Put(out, c.pass);
  }
  Put(out, static_cast<uint64_t>(point.carried_rows.size()));
  uint64_t previous = 0;
  for (uint64_t row : point.carried_rows) {
    uint64_t delta = row - previous;
    previous = row;
    while (delta >= 0x80) {
      out->push_back(static_cast<char>((delta & 0x7f) | 0x80));
      delta >>= 7;
    }
    out->push_back(static_cast<char>(delta));
  }
  out->append(reinterpret_cast<const char*>(point.carried_ages.data()), point.carried_ages.size());
}

Result<StreamPoint> GetPoint(Reader& in) {
  StreamPoint point;
  const uint32_t num_sources = in.Get<uint32_t>();
  // 24 bytes a cursor: a count past the bytes left is corrupt, not an allocation to attempt.
  if (in.overrun() || num_sources > in.remaining() / 24) {
    return Status::Corrupt("planner state: truncated");
  }
  point.cursors.resize(num_sources);
  for (SourceCursor& c : point.cursors) {
    c.position = in.Get<uint64_t>();
    c.epoch = in.Get<uint64_t>();
    c.pass = in.Get<uint64_t>();
  }
  const uint64_t num_carried = in.Get<uint64_t>();
  if (in.overrun() || num_carried > in.remaining() / 2) {  // a byte of row, a byte of age
    return Status::Corrupt("planner state: truncated");
  }
  point.carried_rows.resize(num_carried);
  uint64_t row = 0;
  for (uint64_t& r : point.carried_rows) {
    row += in.GetVarint();
    r = row;
  }
  point.carried_ages.resize(num_carried);
  for (uint8_t& age : point.carried_ages) age = in.Get<uint8_t>();
  if (in.overrun()) return Status::Corrupt("planner state: truncated");
  return point;
}

}  // namespace

std::string EncodeState(const SavedState& state) {
  std::string out(kStateMagic, sizeof(kStateMagic));
  Put(&out, kStateVersion);
  Put(&out, static_cast<uint32_t>(state.settings.size()));
  for (const Setting& setting : state.settings) {
    PutString(&out, setting.name);
    PutString(&out, setting.value);
  }
  Put(&out, state.step);
  Put(&out, state.micro_step);
  PutPoint(&out, state.before);
  if (state.micro_step > 0) PutPoint(&out, *state.rest);
  Put(&out, Hash64(out));
  return out;
}

Result<SavedState> DecodeState(std::string_view bytes) {
  if (bytes.size() < sizeof(kStateMagic) + 8 ||
      std::memcmp(bytes.data(), kStateMagic, sizeof(kStateMagic)) != 0) {
    return Status::Corrupt("planner state: bad magic or too short ({} bytes)", bytes.size());
  }
  uint64_t stored_hash;
  std::memcpy(&stored_hash, bytes.data() + bytes.size() - 8, 8);
  if (Hash64(bytes.substr(0, bytes.size() - 8)) != stored_hash) {
    return Status::Corrupt("planner state: checksum mismatch");
  }
  Reader in(bytes.substr(sizeof(kStateMagic), bytes.size() - sizeof(kStateMagic) - 8));
  if (uint32_t version = in.Get<uint32_t>(); version != kStateVersion) {
    return Status::Corrupt(
        "planner state: format version {}, this build reads {}{}", version, kStateVersion,
        version < kStateVersion
            ? " (saved by an older mmpt: resume with that build, or start the data order again)"
            : "");
  }
  SavedState state;
  const uint32_t num_settings = in.Get<uint32_t>();
  for (uint32_t i = 0; i < num_settings && !in.overrun(); ++i) {
    Setting setting;
    setting.name = in.GetString();
    setting.value = in.GetString();
    state.settings.push_back(std::move(setting));
  }
  state.step = in.Get<uint64_t>();
  state.micro_step = in.Get<uint32_t>();
  if (in.overrun()) return Status::Corrupt("planner state: truncated");
  MMPT_ASSIGN_OR_RETURN(state.before, GetPoint(in));
  if (state.micro_step > 0) {
    MMPT_ASSIGN_OR_RETURN(StreamPoint rest, GetPoint(in));
    state.rest = std::move(rest);
  }
  if (in.remaining() != 0) {
    return Status::Corrupt("planner state: {} bytes past its end", in.remaining());
  }
  return state;
}

}  // namespace mmpt::plan::internal
